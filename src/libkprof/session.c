/*
 * session.c — the in-process session: kprof_start and kprof_stop, the session KPROF=1 starts at
 * load and saves at exit, the drain that takes the scopes out of the threads' rings into the
 * record writer (a background thread while the session runs, and kprof_stop), the merge of the
 * records into the result's trace, and kprof_last_error. See inproc_internal.h for the whole
 * path and include/kprof.h for what each function promises.
 *
 * Locks: kp_session_lock serialises start and stop (and the exit's stop); a ring's drain_lock
 * makes one drain at a time per ring; the session's map_lock is taken for reading by drains and
 * for writing by the anchors of the tick map. The scopes' hot path takes none of them.
 */
#define _GNU_SOURCE
#include "collect/record.h"
#include "collect/session.h"
#include "collect/writer.h"
#include "base/env.h"
#include "base/job.h"
#include "base/outname.h"
#include "base/util.h"
#include "libkprof/collectors.h"
#include "libkprof/inproc_internal.h"
#include "store/trace_db.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define KP_DRAIN_PERIOD_NS     5000000ll   /* the background drain's wake-up */
#define KP_ANCHOR_EARLY_NS     10000000ll  /* tick map anchors in the first second ... */
#define KP_ANCHOR_PERIOD_NS    100000000ll /* ... and after it */
#define KP_FLUSH_PERIOD_NS     100000000ll /* the writer's buffers reach the file this often */
#define KP_RELEASE_EVERY       1024        /* entries a drain frees the owner at a time */
#define KP_DRAIN_BATCH         256         /* records handed to the writer at once (32 KiB) */
#define KP_COLLECTOR_FILE_NAME "libkprof"  /* <pid>-libkprof-<ns>.klog */
#define KP_SESSION_TRACE       "session.kprof"

int kprof_scopes_on_;
_Atomic(kp_session *) kp_live_session;

static pthread_mutex_t kp_session_lock = PTHREAD_MUTEX_INITIALIZER;
static kp_session *kp_current; /* under kp_session_lock */
static uint32_t kp_sessions;   /* started in this process */
static int kp_keep_records;

/* The background drain's wake-up: global (not the session's), so that an owner thread that
 * signals it while kprof_stop ends the session never touches freed memory. */
static pthread_mutex_t kp_wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t kp_wake;
static pthread_once_t kp_once = PTHREAD_ONCE_INIT;

/* ---- errors ---------------------------------------------------------------------------------- */

static _Thread_local char kp_last_error_text[1664]; /* a kp_error message and a name */

const char *kprof_last_error(void)
{
    return kp_last_error_text;
}

kprof_status kp_inproc_fail(const char *function, kprof_status status, const char *message)
{
    snprintf(kp_last_error_text, sizeof kp_last_error_text, "%s: %s", function,
             message && *message ? message : kprof_strerror(status));
    return status;
}

kprof_status kp_inproc_fail_err(const char *function, kp_error *err)
{
    kprof_status st = err->status == KPROF_OK ? KPROF_IO : err->status;
    kp_inproc_fail(function, st, err->message);
    kp_error_clear(err);
    return st;
}

/* ---- small things ---------------------------------------------------------------------------- */

/* The drain thread's work, one round at a time, under this gate; fork takes it first, so the
 * child is never made while that thread is inside the allocator or the writer (an allocator
 * without fork handlers of its own — ASan's, jemalloc's — would leave its lock held in the
 * child, and the child's first allocation of that size would wait for ever). */
static pthread_mutex_t kp_drain_gate = PTHREAD_MUTEX_INITIALIZER;

static void kp_fork_prepare(void)
{
    pthread_mutex_lock(&kp_drain_gate);
}

static void kp_fork_parent(void)
{
    pthread_mutex_unlock(&kp_drain_gate);
}

static void kp_fork_child_gate(void)
{
    pthread_mutex_init(&kp_drain_gate, NULL);
}

static void kp_register_drain_gate(void)
{
    pthread_atfork(kp_fork_prepare, kp_fork_parent, kp_fork_child_gate);
}

/* kp_wake, on CLOCK_MONOTONIC (the drain thread's deadlines). */
static void kp_wake_init(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&kp_wake, &attr);
    pthread_condattr_destroy(&attr);
}

static void kp_fork_child(void)
{
    /* The child has only the thread that forked: no drain thread, no session to finish (its
     * records are the parent's). It records again if it calls kprof_start. */
    __atomic_store_n(&kprof_scopes_on_, 0, __ATOMIC_SEQ_CST);
    atomic_store(&kp_live_session, NULL);
    kp_current = NULL; /* the parent's, abandoned (its memory is the parent's to free) */
    pthread_mutex_init(&kp_session_lock, NULL);
    pthread_mutex_init(&kp_wake_lock, NULL);
    /* The condition too: the parent's drain thread may have been waiting on it, and a child
     * using the copy would wait for that waiter for ever. */
    kp_wake_init();
    kp_rings_after_fork();
}

static void kp_at_exit(void);

static void kp_init_once(void)
{
    kp_wake_init();
    pthread_atfork(NULL, NULL, kp_fork_child);
    atexit(kp_at_exit); /* a session still running at exit: KPROF=1's saved, others discarded */
}

void kp_session_wake(void)
{
    if (atomic_load_explicit(&kp_live_session, memory_order_relaxed)) pthread_cond_signal(&kp_wake);
}

void kp_session_dropped(uint64_t n)
{
    /* Only from an owner thread's slow path, under no lock: the session may be ending. A drop
     * racing kprof_stop is counted by the next session's count or not at all; the events it
     * stands for would not have been that session's either. */
    kp_session *s = atomic_load(&kp_live_session);
    if (s) atomic_fetch_add(&s->dropped, n);
}

void kp_inproc_keep_records(int keep)
{
    kp_keep_records = keep;
}

/* ---- the tick map ---------------------------------------------------------------------------- */

/* A new anchor when one is due (force: now), measured under the write lock so that no drain
 * converts meanwhile (clock.h). */
static void kp_session_anchor(kp_session *s, int force)
{
    if (s->map.identity) return;
    int64_t now = (int64_t)kp_now_ns();
    int64_t period = now - s->start_ns < 1000000000ll ? KP_ANCHOR_EARLY_NS : KP_ANCHOR_PERIOD_NS;
    if (!force && now - s->last_anchor_ns < period) return;
    pthread_rwlock_wrlock(&s->map_lock);
    kp_tick_map_anchor(&s->map, kp_tick_anchor_now(), (double)period);
    pthread_rwlock_unlock(&s->map_lock);
    s->last_anchor_ns = now;
}

/* ---- the drain ------------------------------------------------------------------------------- */

/* The string id of a name or key pointer in the writer's current file, cached per ring (a
 * thread's names repeat). 0 when memory ran out (the event is then unnamed). */
static uint32_t kp_ring_name(kp_ring *r, const char *text)
{
    if (r->names_used * 2 >= r->names_cap) {
        uint32_t cap = r->names_cap ? r->names_cap * 2 : 64;
        kp_name_slot *t = calloc(cap, sizeof *t);
        if (!t) return kp_writer_string(text);
        for (uint32_t i = 0; i < r->names_cap; i++) {
            if (!r->names[i].ptr) continue;
            uint32_t h = (uint32_t)(((uintptr_t)r->names[i].ptr >> 3) * 2654435761u) & (cap - 1);
            while (t[h].ptr)
                h = (h + 1) & (cap - 1);
            t[h] = r->names[i];
        }
        free(r->names);
        r->names = t;
        r->names_cap = cap;
    }
    uint32_t h = (uint32_t)(((uintptr_t)text >> 3) * 2654435761u) & (r->names_cap - 1);
    while (r->names[h].ptr && r->names[h].ptr != text)
        h = (h + 1) & (r->names_cap - 1);
    if (r->names[h].ptr) return r->names[h].id;
    uint32_t id = kp_writer_string(text);
    r->names[h].ptr = text;
    r->names[h].id = id;
    r->names_used++;
    return id;
}

/* A site's name id: cached in the site itself for the session (its generation in the top half).
 * Several drains may race to fill it: they write the same id. */
static uint32_t kp_site_name(kp_session *s, kprof_scope_site *site)
{
    unsigned long long cached = __atomic_load_n(&site->cache_, __ATOMIC_RELAXED);
    if ((uint32_t)(cached >> 32) == s->gen) return (uint32_t)cached;
    uint32_t id = kp_writer_string(site->name);
    __atomic_store_n(&site->cache_, (unsigned long long)s->gen << 32 | id, __ATOMIC_RELAXED);
    return id;
}

/* Keep a metric until its scope's entry comes. */
static void kp_ring_pending_add(kp_ring *r, kp_session *s, const kp_scope_entry *e)
{
    if (r->npending == r->pending_cap) {
        uint32_t cap = r->pending_cap ? r->pending_cap * 2 : 16;
        kp_scope_entry *p = cap <= KP_PENDING_MAX ? realloc(r->pending, cap * sizeof *p) : NULL;
        if (!p) {
            atomic_fetch_add(&s->dropped, 1);
            return;
        }
        r->pending = p;
        r->pending_cap = cap;
    }
    r->pending[r->npending++] = *e;
}

void kp_ring_drain_locked(kp_ring *r, kp_session *s)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    if (tail == head) return;
    if (!s) { /* no session: what the ring holds is no one's */
        atomic_store_explicit(&r->tail, head, memory_order_release);
        return;
    }
    if (r->gen != s->gen) { /* names and metrics of an earlier session's file */
        r->gen = s->gen;
        if (r->names) memset(r->names, 0, r->names_cap * sizeof *r->names);
        r->names_used = 0;
        r->npending = 0;
    }
    /* Records go to the writer a batch at a time (a scope and its metrics never split): one
     * append, one lock, one clock read of the writer's per batch rather than per scope. */
    if (!r->batch) {
        r->batch = malloc(KP_DRAIN_BATCH * sizeof *r->batch);
        r->batch_cap = r->batch ? KP_DRAIN_BATCH : 0;
    }
    kp_rec spare[1 + KP_SCOPE_MAX_METRICS]; /* when the batch could not be had */
    kp_rec *recs = r->batch ? r->batch : spare;
    size_t cap = r->batch ? r->batch_cap : sizeof spare / sizeof spare[0], used = 0;
    pthread_rwlock_rdlock(&s->map_lock);
    while (tail != head) {
        kp_scope_entry e = r->entries[tail & r->mask];
        tail++;
        if (tail % KP_RELEASE_EVERY == 0)
            atomic_store_explicit(&r->tail, tail, memory_order_release);
        if (e.start < s->t0_ticks) continue; /* begun before this session */
        if (e.kind == KP_ENTRY_METRIC) {
            kp_ring_pending_add(r, s, &e);
            continue;
        }
        if (cap - used < 1 + KP_SCOPE_MAX_METRICS && cap - used < 1 + (size_t)r->npending) {
            kp_writer_emit_n(recs, used);
            used = 0;
        }
        kp_rec *range = &recs[used];
        memset(range, 0, sizeof *range);
        range->kind = KP_REC_RANGE;
        range->domain = KP_DOMAIN_SCOPE;
        range->tid = r->tid;
        range->name = e.kind == KP_ENTRY_SITE ? kp_site_name(s, (kprof_scope_site *)e.what)
                                              : kp_ring_name(r, (const char *)e.what);
        range->start = (uint64_t)kp_tick_map_ns(&s->map, e.start);
        range->end = (uint64_t)kp_tick_map_ns(&s->map, e.end);
        if (range->end < range->start) range->end = range->start;
        range->id = (uint64_t)r->index << 32 | ++r->seq;
        size_t n = used + 1;
        uint32_t owner = (uint32_t)(uintptr_t)e.what;
        uint32_t kept = 0;
        for (uint32_t i = 0; i < r->npending; i++) { /* its metrics, in the order given */
            const kp_scope_entry *m = &r->pending[i];
            if (m->start != e.start || m->owner != owner) {
                r->pending[kept++] = *m;
                continue;
            }
            if (n - used == 1 + KP_SCOPE_MAX_METRICS) {
                atomic_fetch_add(&s->dropped, 1);
                continue;
            }
            kp_rec *metric = &recs[n++];
            memset(metric, 0, sizeof *metric);
            metric->kind = KP_REC_METRIC;
            metric->name = kp_ring_name(r, (const char *)m->what);
            metric->bytes = m->end;
            metric->aux = KP_REC_RANGE;
            metric->tid = r->tid;
            metric->start = range->start;
        }
        r->npending = kept;
        used = n;
    }
    pthread_rwlock_unlock(&s->map_lock);
    kp_writer_emit_n(recs, used);
    atomic_store_explicit(&r->tail, tail, memory_order_release);
}

/* Drain every ring: waiting for each (the end), or skipping those being drained (their owner
 * drains them itself). */
static void kp_drain_all(kp_session *s, int wait)
{
    for (kp_ring *r = kp_rings_first(); r; r = atomic_load(&r->next)) {
        if (atomic_load_explicit(&r->head, memory_order_acquire) ==
            atomic_load_explicit(&r->tail, memory_order_relaxed))
            continue;
        if (wait)
            pthread_mutex_lock(&r->drain_lock);
        else if (pthread_mutex_trylock(&r->drain_lock) != 0)
            continue;
        kp_ring_drain_locked(r, s);
        pthread_mutex_unlock(&r->drain_lock);
    }
}

static void *kp_drainer_main(void *arg)
{
    kp_session *s = arg;
    pthread_mutex_lock(&kp_wake_lock);
    s->drainer_ready = 1;
    pthread_cond_broadcast(&kp_wake); /* kp_session_start waits for it */
    while (!s->stopping) {
        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_nsec += KP_DRAIN_PERIOD_NS;
        if (deadline.tv_nsec >= 1000000000l) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000l;
        }
        pthread_cond_timedwait(&kp_wake, &kp_wake_lock, &deadline);
        if (s->stopping) break;
        pthread_mutex_unlock(&kp_wake_lock);
        pthread_mutex_lock(&kp_drain_gate);
        kp_session_anchor(s, 0);
        kp_drain_all(s, 0);
        int64_t now = (int64_t)kp_now_ns();
        if (now - s->last_flush_ns >= KP_FLUSH_PERIOD_NS) { /* a crash keeps what came before */
            kp_writer_flush_all();
            s->last_flush_ns = now;
        }
        pthread_mutex_unlock(&kp_drain_gate);
        pthread_mutex_lock(&kp_wake_lock);
    }
    pthread_mutex_unlock(&kp_wake_lock);
    return NULL;
}

/* ---- start ----------------------------------------------------------------------------------- */

static void kp_session_free(kp_session *s)
{
    if (!s) return;
    kp_tick_map_free(&s->map);
    pthread_rwlock_destroy(&s->map_lock);
    free(s);
}

/* Check the options and take their values (fields past options->size keep their defaults). */
static kprof_status kp_options_read(const kprof_options *o, kprof_options *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->size = sizeof *out;
    if (!o) return KPROF_OK;
    if (o->size == 0 || o->size > sizeof *o)
        return kp_error_set(err, KPROF_INVALID,
                            "options->size is %u; set it to sizeof(kprof_options) (%zu), e.g. with "
                            "KPROF_OPTIONS_INIT",
                            o->size, sizeof *o);
    memcpy(out, o, o->size);
    out->size = sizeof *out;
    unsigned known = 0;
    for (size_t i = 0; i < kp_inproc_collector_count; i++)
        known |= kp_inproc_collectors[i].bit;
    if (out->collectors & ~known)
        return kp_error_set(err, KPROF_INVALID,
                            "options->collectors has bits no collector has (0x%x; the collectors "
                            "are KPROF_COLLECT_SCOPES, _CUDA, _OPENCL and _NVTX)",
                            out->collectors & ~known);
    out->collectors |= KPROF_COLLECT_SCOPES; /* the scopes always record */
    return KPROF_OK;
}

/* The scratch folder: a new one under options' folder, $TMPDIR or /tmp. */
static kprof_status kp_scratch_make(const char *base, char *dir, size_t n, kp_error *err)
{
    if (!base || !*base) base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    int w = snprintf(dir, n, "%s/kprof-%ld-XXXXXX", base, (long)getpid());
    kprof_status st = KPROF_OK;
    if (w < 0 || (size_t)w >= n)
        st = kp_error_set(err, KPROF_INVALID, "the scratch folder's name is too long (%s)", base);
    else if (!mkdtemp(dir))
        st = kp_error_set(err, KPROF_IO, "cannot make a scratch folder in %s: %s", base,
                          strerror(errno));
    if (st != KPROF_OK) dir[0] = '\0'; /* nothing of ours to remove */
    return st;
}

/* Start a session; caller holds kp_session_lock. */
static kprof_status kp_session_start_locked(const kprof_options *options, int autostarted,
                                            kp_error *err)
{
    if (kp_current)
        return kp_error_set(err, KPROF_INVALID,
                            "a session is already running%s; kprof_stop it first",
                            kp_current->autostarted ? " (started by KPROF=1)" : "");
    kprof_options o;
    kprof_status st = kp_options_read(options, &o, err);
    if (st != KPROF_OK) return st;
    /* NVTX comes with the device collectors, as under `kprof trace`; implied, it stands aside
     * quietly where it cannot run (a note in the trace says why). */
    unsigned implied = 0;
    if ((o.collectors & (KPROF_COLLECT_CUDA | KPROF_COLLECT_OPENCL)) &&
        !(o.collectors & KPROF_COLLECT_NVTX)) {
        implied = KPROF_COLLECT_NVTX;
        o.collectors |= implied;
    }
    for (size_t i = 0; i < kp_inproc_collector_count; i++) {
        const kp_inproc_collector *c = &kp_inproc_collectors[i];
        const char *why = (o.collectors & c->bit) && c->unavailable ? c->unavailable() : NULL;
        if (why && (c->bit & implied)) {
            o.collectors &= ~c->bit;
            continue;
        }
        if (why)
            return kp_error_set(err, KPROF_UNAVAILABLE, "the %s collector cannot run: %s", c->name,
                                why);
    }
    pthread_once(&kp_once, kp_init_once);
    double rate;
    kp_tick_anchor origin;
    kp_ticks_setup(&rate, &origin);

    size_t started = 0;
    int writing = 0, rc;
    char command[4096];
    kp_trace_run run;
    sigset_t all, old;
    kp_tick_anchor first;
    kp_session *s = calloc(1, sizeof *s);
    if (!s) return kp_error_nomem(err);
    s->collectors = o.collectors;
    s->ring_entries = o.ring_entries;
    s->autostarted = autostarted;
    s->gen = ++kp_sessions;
    pthread_rwlock_init(&s->map_lock, NULL);
    st = kp_scratch_make(o.scratch_dir, s->dir, sizeof s->dir, err);
    if (st != KPROF_OK) goto fail;
    first = kp_tick_anchor_now();
    if (kp_tick_map_init(&s->map, !kp_ticks_tsc, origin, rate, first) != 0) {
        st = kp_error_nomem(err);
        goto fail;
    }
    kp_scopes_set_tick_rate(s->map.identity ? 1.0 : rate);
    s->start_ns = first.ns;
    s->last_anchor_ns = first.ns;
    s->last_flush_ns = first.ns;
    /* As `kprof trace` does: what `kprof trace --merge DIR` needs, should the program end without
     * kprof_stop (_exit, a crash). */
    kp_command_line(command, sizeof command);
    run = (kp_trace_run){.command = command, .start_ns = (uint64_t)first.ns};
    st = kp_session_save_run(s->dir, &run, err);
    if (st != KPROF_OK) goto fail;
    if (kp_writer_start_in(s->dir, KP_COLLECTOR_FILE_NAME, 0) != 0) {
        st = kp_error_set(err, KPROF_IO, "cannot write the session's records in %s: %s", s->dir,
                          strerror(errno));
        goto fail;
    }
    writing = 1;
    /* Registered after the writer's own fork handlers, so that fork waits for the drain round
     * (which takes the writer's locks) before the writer's handlers take those locks. */
    static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
    pthread_once(&gate_once, kp_register_drain_gate);
    for (; started < kp_inproc_collector_count; started++) {
        const kp_inproc_collector *c = &kp_inproc_collectors[started];
        if ((o.collectors & c->bit) && c->start) {
            st = c->start(s, err);
            if (st != KPROF_OK && (c->bit & implied)) { /* recorded as a note; the rest runs */
                kp_writer_note(err->message);
                kp_error_clear(err);
                o.collectors &= ~c->bit;
                s->collectors &= ~c->bit;
                st = KPROF_OK;
                continue;
            }
            if (st != KPROF_OK) goto fail;
        }
    }
    /* The drain thread takes no signal of the program's. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&s->drainer, NULL, kp_drainer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        st = kp_error_set(err, KPROF_NOMEM, "cannot start the session's drain thread: %s",
                          strerror(rc));
        goto fail;
    }
    s->drainer_started = 1;
    pthread_setname_np(s->drainer, "kprof-drain");
    /* kprof_start returns once the thread is running its own code: a thread still starting up
     * may be inside the allocator (a sanitizer's sets up its stack there), and a fork then would
     * leave the child with that lock held (the drain gate covers the thread's rounds only). */
    pthread_mutex_lock(&kp_wake_lock);
    while (!s->drainer_ready)
        pthread_cond_wait(&kp_wake, &kp_wake_lock);
    pthread_mutex_unlock(&kp_wake_lock);
    s->t0_ticks = kp_ticks();
    atomic_store(&kp_live_session, s);
    kp_current = s;
    __atomic_store_n(&kprof_scopes_on_, 1, __ATOMIC_SEQ_CST);
    return KPROF_OK;
fail:
    while (started-- > 0) {
        const kp_inproc_collector *c = &kp_inproc_collectors[started];
        if ((o.collectors & c->bit) && c->stop) c->stop(s);
    }
    if (writing) kp_writer_stop();
    if (s->dir[0]) kp_session_remove(s->dir);
    kp_session_free(s);
    return st;
}

kprof_status kprof_start(const kprof_options *options)
{
    kp_error err = {0};
    pthread_mutex_lock(&kp_session_lock);
    kprof_status st = kp_session_start_locked(options, 0, &err);
    pthread_mutex_unlock(&kp_session_lock);
    return st == KPROF_OK ? st : kp_inproc_fail_err("kprof_start", &err);
}

int kprof_recording(void)
{
    return KPROF_RECORDING_() != 0;
}

/* ---- stop ------------------------------------------------------------------------------------ */

/* End session s (caller holds kp_session_lock and frees s afterwards): stop recording, drain
 * everything, close the records, merge them, and open the result (result NULL: discard). */
static kprof_status kp_session_end(kp_session *s, kprof_result **result, kp_error *err)
{
    __atomic_store_n(&kprof_scopes_on_, 0, __ATOMIC_SEQ_CST);
    int64_t end_ns = (int64_t)kp_now_ns();
    if (s->drainer_started) {
        pthread_mutex_lock(&kp_wake_lock);
        s->stopping = 1;
        pthread_cond_broadcast(&kp_wake);
        pthread_mutex_unlock(&kp_wake_lock);
        pthread_join(s->drainer, NULL);
    }
    /* Owners that find their ring full from now on discard it (see kp_ring_make_room). */
    atomic_store(&kp_live_session, NULL);
    kp_session_anchor(s, 1);
    for (size_t i = kp_inproc_collector_count; i-- > 0;) {
        const kp_inproc_collector *c = &kp_inproc_collectors[i];
        if ((s->collectors & c->bit) && c->stop) c->stop(s);
    }
    kp_drain_all(s, 1);
    kp_writer_dropped(atomic_load(&s->dropped));
    kp_writer_stop();
    if (!result) { /* discarded: nothing to merge */
        kp_session_remove(s->dir);
        return KPROF_OK;
    }

    char trace[PATH_MAX + 64];
    snprintf(trace, sizeof trace, "%s/%s", s->dir, KP_SESSION_TRACE);
    char command[4096];
    kp_command_line(command, sizeof command);
    char collectors[128] = "";
    for (size_t i = 0; i < kp_inproc_collector_count; i++) {
        const kp_inproc_collector *c = &kp_inproc_collectors[i];
        if (s->collectors & c->bit) {
            size_t used = strlen(collectors);
            snprintf(collectors + used, sizeof collectors - used, "%s%s", used ? "," : "", c->name);
        }
    }
    char host[256], boot_id[64];
    kp_job_host(host, sizeof host);
    kp_job_boot_id(boot_id, sizeof boot_id);
    kp_trace_run run = {.command = command,
                        .start_ns = (uint64_t)s->start_ns,
                        .end_ns = (uint64_t)end_ns,
                        .exit_status = -1,
                        .collectors = collectors,
                        .one_process = 1,
                        .host = host[0] ? host : NULL,
                        .boot_id = boot_id[0] ? boot_id : NULL};
    kp_trace_summary summary;
    memset(&summary, 0, sizeof summary);
    kprof_status st = kp_trace_ingest_dir(trace, s->dir, &run, NULL, &summary, err);
    if (st != KPROF_OK) {
        kp_error_append(err, " (the session's records are kept in %s)", s->dir);
        return st;
    }
    if (!kp_keep_records) { /* the records are in the trace now */
        DIR *d = opendir(s->dir);
        struct dirent *de;
        while (d && (de = readdir(d)) != NULL) {
            size_t len = strlen(de->d_name);
            if (len > 5 && strcmp(de->d_name + len - 5, ".klog") == 0) {
                char path[PATH_MAX + 256];
                snprintf(path, sizeof path, "%s/%s", s->dir, de->d_name);
                unlink(path);
            }
        }
        if (d) closedir(d);
    }
    st = kp_result_open(s->dir, trace, summary.dropped, s->start_ns, end_ns, result, err);
    if (st != KPROF_OK) kp_session_remove(s->dir);
    return st;
}

kprof_status kprof_stop(kprof_result **result)
{
    kp_error err = {0};
    if (result) *result = NULL;
    pthread_mutex_lock(&kp_session_lock);
    kp_session *s = kp_current;
    kprof_status st = KPROF_OK;
    if (!s) {
        st = kp_error_set(&err, KPROF_INVALID, "no session is running");
    } else {
        st = kp_session_end(s, result, &err);
        kp_current = NULL;
        kp_session_free(s);
    }
    pthread_mutex_unlock(&kp_session_lock);
    return st == KPROF_OK ? st : kp_inproc_fail_err("kprof_stop", &err);
}

/* ---- KPROF=1 --------------------------------------------------------------------------------- */

/* The first free name of stem + suffix: stem.kprof, stem-1.kprof, ... (its output opened). */
static kprof_status kp_autosave(kprof_result *r, const char *wanted, char *saved, size_t n)
{
    char stem[PATH_MAX];
    const char *ext = ".kprof";
    kp_strlcpy(stem, wanted, sizeof stem);
    size_t len = strlen(stem);
    if (len > 6 && strcmp(stem + len - 6, ".kprof") == 0)
        stem[len - 6] = '\0';
    else
        ext = "";
    for (int i = 0; i < 1000; i++) {
        if (i == 0)
            snprintf(saved, n, "%s%s", stem, ext);
        else
            snprintf(saved, n, "%s-%d%s", stem, i, ext);
        struct stat st;
        if (lstat(saved, &st) == 0) continue; /* taken: never overwritten */
        kprof_status status = kprof_result_write(r, KPROF_FORMAT_TRACE, saved, 0);
        if (status == KPROF_OK) return status;
        if (lstat(saved, &st) != 0) return status; /* not a name taken meanwhile */
    }
    return kp_inproc_fail("KPROF=1", KPROF_IO, "no free name to save the session's trace to");
}

/* The program exits with a session running: KPROF=1's is saved; one the program started and did
 * not stop is discarded, its scratch folder removed (nothing asked for its trace). */
static void kp_at_exit(void)
{
    kp_error err = {0};
    kprof_result *r = NULL;
    pthread_mutex_lock(&kp_session_lock);
    kp_session *s = kp_current;
    int save = s && s->autostarted;
    kprof_status st = s ? kp_session_end(s, save ? &r : NULL, &err) : KPROF_OK;
    kp_current = NULL;
    kp_session_free(s);
    pthread_mutex_unlock(&kp_session_lock);
    if (!save) {
        kp_error_clear(&err);
        return;
    }
    if (st != KPROF_OK) {
        fprintf(stderr, "kprof: error: KPROF=1: %s\n", err.message);
        kp_error_clear(&err);
        return;
    }
    char name[PATH_MAX + 32];
    const char *wanted = getenv(KP_ENV_OUTPUT);
    char fallback[64], expanded[PATH_MAX];
    snprintf(fallback, sizeof fallback, "kprof-%ld.kprof", (long)getpid());
    if (wanted && *wanted) { /* per-rank names: KPROF_OUTPUT='prof-%r.kprof' (base/outname.h) */
        char host[256];
        kp_job_host(host, sizeof host);
        kp_outname_env oenv = {
            .get = kp_job_getenv, .pid = (long)getpid(), .host = host, .what = KP_ENV_OUTPUT "="};
        if (kp_outname_expand(wanted, &oenv, expanded, sizeof expanded, NULL, &err) == KPROF_OK) {
            wanted = expanded;
        } else {
            fprintf(stderr, "kprof: error: KPROF=1: %s; saving as %s instead\n", err.message,
                    fallback);
            kp_error_clear(&err);
            wanted = fallback;
        }
    } else {
        wanted = fallback;
    }
    /* A folder: the trace goes inside it, under the default name. A device, FIFO or socket is
     * refused (a trace is an SQLite file, written to a temporary and renamed; nothing is made
     * beside a device). */
    char inside[PATH_MAX + 80];
    struct stat out_st;
    kprof_status status = KPROF_OK;
    if (stat(wanted, &out_st) == 0 && S_ISDIR(out_st.st_mode)) {
        snprintf(inside, sizeof inside, "%s%s%s", wanted,
                 wanted[strlen(wanted) - 1] == '/' ? "" : "/", fallback);
        wanted = inside;
    } else if (stat(wanted, &out_st) == 0 && !S_ISREG(out_st.st_mode)) {
        status = kp_error_set(&err, KPROF_INVALID,
                              "KPROF_OUTPUT=%s is not a regular file (a device, FIFO or socket): "
                              "a trace is written to a file",
                              wanted);
    }
    kprof_summary sum;
    kprof_result_summary(r, &sum);
    kp_str line = {0};
    if (status == KPROF_OK) status = kp_autosave(r, wanted, name, sizeof name);
    if (status == KPROF_OK) {
        kp_str_printf_escaped(&line, "kprof: saved %llu event%s to %s", sum.events,
                              sum.events == 1 ? "" : "s", name);
        if (sum.dropped) kp_str_printf(&line, " (%llu lost on the way)", sum.dropped);
        if (strcmp(name, wanted) != 0) kp_str_printf(&line, " (the name asked for was taken)");
    } else {
        /* Keep what was recorded: the trace stays in the scratch folder, whole, and says so. */
        const char *kept = kp_inproc_result_keep_trace(r);
        kp_str_printf(&line, "kprof: error: KPROF=1: %s",
                      err.status != KPROF_OK ? err.message : kprof_last_error());
        kp_str_printf_escaped(&line, "; the trace (%llu event%s) is kept as %s", sum.events,
                              sum.events == 1 ? "" : "s", kept);
    }
    fprintf(stderr, "%s\n", line.data ? line.data : "kprof: KPROF=1: out of memory");
    kp_str_free(&line);
    kp_error_clear(&err);
    kprof_result_destroy(r);
}

/* KPROF=1: a session from load to exit. */
__attribute__((constructor)) static void kp_autostart(void)
{
    const char *v = getenv(KP_ENV_AUTOSTART);
    if (!v || strcmp(v, "1") != 0) return;
    kp_error err = {0};
    /* KPROF_COLLECT=scopes,cuda,opencl: what it records (default: the scopes). */
    kprof_options o = KPROF_OPTIONS_INIT;
    const char *collect = getenv(KP_ENV_COLLECT);
    if (collect && *collect) {
        char list[256];
        kp_strlcpy(list, collect, sizeof list);
        char *save = NULL;
        for (char *w = strtok_r(list, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
            unsigned bit = 0;
#define KP_COLLECT_NAME_(NAME, b, name, what)                                                      \
    if (strcmp(w, name) == 0) bit = KPROF_COLLECT_##NAME;
            KPROF_COLLECTOR_LIST(KP_COLLECT_NAME_)
#undef KP_COLLECT_NAME_
            if (!bit) {
                fprintf(stderr,
                        "kprof: error: KPROF_COLLECT=%s: unknown collector '%s' (scopes, cuda, "
                        "opencl, nvtx): no session started\n",
                        collect, w);
                return;
            }
            o.collectors |= bit;
        }
    }
    pthread_mutex_lock(&kp_session_lock);
    kprof_status st = kp_session_start_locked(&o, 1, &err);
    if (st == KPROF_UNAVAILABLE && (o.collectors & ~KPROF_COLLECT_SCOPES)) {
        /* A collector that cannot run here (CUDA beside another profiler): say why, and record
         * what can be. */
        fprintf(stderr, "kprof: KPROF=1: %s; recording the scopes alone\n", err.message);
        kp_error_clear(&err);
        o.collectors = KPROF_COLLECT_SCOPES;
        st = kp_session_start_locked(&o, 1, &err);
    }
    pthread_mutex_unlock(&kp_session_lock);
    if (st != KPROF_OK) {
        fprintf(stderr, "kprof: error: KPROF=1: cannot start a session: %s\n", err.message);
        kp_error_clear(&err);
    }
}

/* ---- interned names -------------------------------------------------------------------------- */

static pthread_mutex_t kp_intern_lock = PTHREAD_MUTEX_INITIALIZER;
static char **kp_interned; /* open addressing by hash; never freed (the promise) */
static size_t kp_interned_cap, kp_interned_used;

const char *kprof_intern(const char *text)
{
    if (!text) return NULL;
    uint64_t h = kp_hash64_str(KP_HASH_SEED, text);
    const char *found = NULL;
    pthread_mutex_lock(&kp_intern_lock);
    if (kp_interned_used * 2 >= kp_interned_cap) {
        size_t cap = kp_interned_cap ? kp_interned_cap * 2 : 256;
        char **t = calloc(cap, sizeof *t);
        if (t) {
            for (size_t i = 0; i < kp_interned_cap; i++) {
                if (!kp_interned[i]) continue;
                size_t j = kp_hash64_str(KP_HASH_SEED, kp_interned[i]) & (cap - 1);
                while (t[j])
                    j = (j + 1) & (cap - 1);
                t[j] = kp_interned[i];
            }
            free(kp_interned);
            kp_interned = t;
            kp_interned_cap = cap;
        }
    }
    if (kp_interned_used + 1 < kp_interned_cap) {
        size_t j = h & (kp_interned_cap - 1);
        while (kp_interned[j] && strcmp(kp_interned[j], text) != 0)
            j = (j + 1) & (kp_interned_cap - 1);
        if (!kp_interned[j]) {
            kp_interned[j] = strdup(text);
            if (kp_interned[j]) kp_interned_used++;
        }
        found = kp_interned[j];
    }
    pthread_mutex_unlock(&kp_intern_lock);
    if (!found) kp_inproc_fail("kprof_intern", KPROF_NOMEM, "out of memory");
    return found;
}
