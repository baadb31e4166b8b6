/*
 * drain.c — the drain of one ring: a thread's scope entries turned into the record format `kprof
 * trace` uses (collect/record.h) and handed to the record writer (collect/writer.h), with the
 * live session it writes into and the background drain's wake-up. scope.c calls it (an owner
 * whose ring is full drains it itself; half full, it wakes the drain thread), session.c calls it
 * (the drain thread, kprof_stop); it calls neither. See libkprof_internal.h for a scope's path.
 */
#include "collect/record.h"
#include "collect/writer.h"
#include "libkprof/libkprof_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KP_RELEASE_EVERY 1024 /* entries a drain frees the owner at a time */
#define KP_DRAIN_BATCH   256  /* records handed to the writer at once (32 KiB) */

_Atomic(kp_session *) kp_live_session;

/* The background drain's wake-up: global (not the session's), so that an owner thread that
 * signals it while kprof_stop ends the session never touches freed memory. */
pthread_mutex_t kp_wake_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t kp_wake;

/* kp_wake, on CLOCK_MONOTONIC (the drain thread's deadlines). */
void kp_wake_init(void)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&kp_wake, &attr);
    pthread_condattr_destroy(&attr);
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

/* ---- the drain ---- */

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
