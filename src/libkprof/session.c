/*
 * session.c — the in-process session: kprof_start and kprof_stop, the session KPROF=1 starts at
 * load and saves at exit, the background drain thread (which drains each ring through drain.c)
 * and the merge of the records into the result's trace. See libkprof_internal.h for the whole
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
#include "libkprof/libkprof_internal.h"
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
#define KP_COLLECTOR_FILE_NAME "libkprof"  /* <pid>-libkprof-<ns>.klog */
#define KP_SESSION_TRACE       "session.kprof"

static pthread_mutex_t kp_session_lock = PTHREAD_MUTEX_INITIALIZER;
static kp_session *kp_current; /* under kp_session_lock */
static uint32_t kp_sessions;   /* started in this process */
static int kp_keep_records;

static pthread_once_t kp_once = PTHREAD_ONCE_INIT;

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

void kp_libkprof_keep_records(int keep)
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
    for (size_t i = 0; i < kp_libkprof_collector_count; i++)
        known |= kp_libkprof_collectors[i].bit;
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
    for (size_t i = 0; i < kp_libkprof_collector_count; i++) {
        const kp_libkprof_collector *c = &kp_libkprof_collectors[i];
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
    if ((st = kp_tick_map_init(&s->map, !kp_ticks_tsc, origin, rate, first, err)) != KPROF_OK)
        goto fail;
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
    if (kp_writer_start_in(s->dir, KP_COLLECTOR_FILE_NAME, 0, NULL) != KPROF_OK) {
        st = kp_error_set(err, KPROF_IO, "cannot write the session's records in %s: %s", s->dir,
                          strerror(errno));
        goto fail;
    }
    writing = 1;
    /* Registered after the writer's own fork handlers, so that fork waits for the drain round
     * (which takes the writer's locks) before the writer's handlers take those locks. */
    static pthread_once_t gate_once = PTHREAD_ONCE_INIT;
    pthread_once(&gate_once, kp_register_drain_gate);
    for (; started < kp_libkprof_collector_count; started++) {
        const kp_libkprof_collector *c = &kp_libkprof_collectors[started];
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
        const kp_libkprof_collector *c = &kp_libkprof_collectors[started];
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
    return st == KPROF_OK ? st : kp_libkprof_fail_err("kprof_start", &err);
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
    for (size_t i = kp_libkprof_collector_count; i-- > 0;) {
        const kp_libkprof_collector *c = &kp_libkprof_collectors[i];
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
    for (size_t i = 0; i < kp_libkprof_collector_count; i++) {
        const kp_libkprof_collector *c = &kp_libkprof_collectors[i];
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
    return st == KPROF_OK ? st : kp_libkprof_fail_err("kprof_stop", &err);
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
    return kp_libkprof_fail("KPROF=1", KPROF_IO, "no free name to save the session's trace to");
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
    kprof_summary sum = KPROF_SUMMARY_INIT;
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
        const char *kept = kp_libkprof_result_keep_trace(r);
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
    if (!found) kp_libkprof_nomem("kprof_intern");
    return found;
}
