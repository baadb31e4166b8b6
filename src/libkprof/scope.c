/*
 * scope.c — the scopes' hot path (kprof_scope_open_, _close_, _metric_, _work_: what the inline
 * functions of include/kprof.h call while a session records) and the per-thread rings it appends
 * to: made on a thread's first scope, registered for the drain, handed on to the next new thread
 * once theirs has exited and they are empty. See libkprof_internal.h for the way a scope goes.
 *
 * The hot path takes no lock and allocates nothing: a clock read, a thread-local pointer (the
 * initial-exec model: one instruction, no __tls_get_addr call — it costs libkprof.so one pointer
 * of the static TLS surplus that dlopen draws on), four stores and a release store. Its slow
 * paths: the thread's first scope (the ring is made), a full ring (the thread drains it itself),
 * and every half ring a wake-up of the background drain (a condition variable signalled without
 * its mutex: never blocks).
 */
#define _GNU_SOURCE
#include "libkprof/libkprof_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The flag the inline functions of kprof.h read (session.c sets and clears it). */
int kprof_scopes_on_;

static __thread kp_ring *kp_my_ring __attribute__((tls_model("initial-exec")));
/* The thread's last tick: a thread's ticks only ever increase, by at least kp_tick_step. */
static __thread uint64_t kp_my_tick __attribute__((tls_model("initial-exec")));
static uint64_t kp_tick_step = 1;

static _Atomic(kp_ring *) kp_rings;
static pthread_mutex_t kp_rings_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t kp_rings_made; /* under kp_rings_lock */
static _Atomic unsigned kp_rings_entries = KP_RING_DEFAULT_ENTRIES;
static pthread_key_t kp_ring_key;
static pthread_once_t kp_ring_key_once = PTHREAD_ONCE_INIT;

/* The metric keys of kprof_scope_work_ (the model's own: kp_event.metrics). */
static const char kp_key_flops[] = "flops";
static const char kp_key_bytes[] = "bytes";

void kp_scopes_set_tick_rate(double ns_per_tick)
{
    /* Ticks this far apart map at least a nanosecond apart, the map slewing included. */
    double step = ns_per_tick > 0 ? 1.0 / (ns_per_tick * (1.0 - 2 * KP_TICK_MAX_SLEW)) : 1.0;
    __atomic_store_n(&kp_tick_step, step < 1.0 ? 1 : (uint64_t)step + 1, __ATOMIC_RELAXED);
}

/* The tick now, for this thread: strictly after its previous one (see libkprof_internal.h). */
static inline uint64_t kp_thread_tick(void)
{
    uint64_t t = kp_ticks(), next = kp_my_tick + __atomic_load_n(&kp_tick_step, __ATOMIC_RELAXED);
    if (__builtin_expect(t < next, 0)) t = next;
    kp_my_tick = t;
    return t;
}

kp_ring *kp_rings_first(void)
{
    return atomic_load_explicit(&kp_rings, memory_order_acquire);
}

void kp_rings_set_entries(unsigned entries)
{
    unsigned cap = KP_RING_MIN_ENTRIES;
    if (entries == 0) entries = KP_RING_DEFAULT_ENTRIES;
    if (entries > KP_RING_MAX_ENTRIES) entries = KP_RING_MAX_ENTRIES;
    while (cap < entries)
        cap *= 2;
    atomic_store(&kp_rings_entries, cap);
}

/* Its thread ended: the ring waits, with what it still holds, for the drain and a new thread. */
static void kp_ring_thread_exit(void *p)
{
    kp_ring *r = p;
    kp_my_ring = NULL;
    atomic_store(&r->exited, 1);
}

static void kp_ring_key_make(void)
{
    pthread_key_create(&kp_ring_key, kp_ring_thread_exit);
}

/* An exited thread's ring that holds nothing, now this thread's; NULL when there is none. Caller
 * holds kp_rings_lock. */
static kp_ring *kp_ring_reuse_locked(uint32_t tid)
{
    for (kp_ring *r = kp_rings_first(); r; r = atomic_load(&r->next)) {
        if (!atomic_load(&r->exited) || pthread_mutex_trylock(&r->drain_lock) != 0) continue;
        int empty = atomic_load(&r->head) == atomic_load(&r->tail);
        if (empty) {
            r->tid = tid;
            r->npending = 0; /* metrics the last owner's unfinished scopes left */
            atomic_store(&r->exited, 0);
        }
        pthread_mutex_unlock(&r->drain_lock);
        if (empty) return r;
    }
    return NULL;
}

/* This thread's ring, made or reused: the thread's first scope. NULL when out of memory. */
static __attribute__((noinline)) kp_ring *kp_ring_for_thread(void)
{
    pthread_once(&kp_ring_key_once, kp_ring_key_make);
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    pthread_mutex_lock(&kp_rings_lock);
    kp_ring *r = kp_ring_reuse_locked(tid);
    if (!r) {
        unsigned cap = atomic_load(&kp_rings_entries);
        void *mem = NULL;
        kp_scope_entry *entries = malloc((size_t)cap * sizeof *entries);
        if (entries && posix_memalign(&mem, 64, sizeof(kp_ring)) == 0) {
            r = mem;
            memset(r, 0, sizeof *r);
            r->entries = entries;
            r->mask = cap - 1;
            pthread_mutex_init(&r->drain_lock, NULL);
            r->tid = tid;
            r->index = ++kp_rings_made;
            atomic_store(&r->next, kp_rings_first());
            atomic_store_explicit(&kp_rings, r, memory_order_release);
        } else {
            free(entries);
        }
    }
    pthread_mutex_unlock(&kp_rings_lock);
    if (r) {
        pthread_setspecific(kp_ring_key, r);
        kp_my_ring = r;
    }
    return r;
}

/* The ring looked full: look again, and if it is, drain it here (the slow path: the drain's lock,
 * the writer's). */
static __attribute__((noinline)) void kp_ring_make_room(kp_ring *r, uint64_t head)
{
    r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - r->tail_seen <= r->mask) return;
    pthread_mutex_lock(&r->drain_lock);
    kp_ring_drain_locked(r, atomic_load(&kp_live_session));
    pthread_mutex_unlock(&r->drain_lock);
    r->tail_seen = atomic_load_explicit(&r->tail, memory_order_acquire);
}

static inline void kp_push(const void *what, uint64_t start, uint64_t end, uint32_t kind,
                           uint32_t owner)
{
    kp_ring *r = kp_my_ring;
    if (__builtin_expect(r == NULL, 0)) {
        r = kp_ring_for_thread();
        if (!r) {
            kp_session_dropped(1);
            return;
        }
    }
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (__builtin_expect(head - r->tail_seen > r->mask, 0)) kp_ring_make_room(r, head);
    kp_scope_entry *e = &r->entries[head & r->mask];
    e->what = what;
    e->start = start;
    e->end = end;
    e->kind = kind;
    e->owner = owner;
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    if (__builtin_expect(((head + 1) & (r->mask >> 1)) == 0, 0)) kp_session_wake();
}

static inline int kp_recording(void)
{
    return KPROF_RECORDING_() != 0; /* the inline functions' own test (include/kprof.h) */
}

unsigned long long kprof_scope_open_(void)
{
    return kp_thread_tick() & ~KPROF_SCOPE_NAMED_;
}

void kprof_scope_close_(const void *what, unsigned long long start)
{
    uint64_t end = kp_thread_tick();
    if (!kp_recording()) return;
    kp_push(what, start & ~KPROF_SCOPE_NAMED_, end,
            start & KPROF_SCOPE_NAMED_ ? KP_ENTRY_NAME : KP_ENTRY_SITE, 0);
}

static inline void kp_push_metric(const void *what, unsigned long long start, const char *key,
                                  double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    kp_push(key, start & ~KPROF_SCOPE_NAMED_, bits, KP_ENTRY_METRIC, (uint32_t)(uintptr_t)what);
}

void kprof_scope_metric_(const void *what, unsigned long long start, const char *key, double value)
{
    if (!kp_recording() || !key) return;
    kp_push_metric(what, start, key, value);
}

void kprof_scope_work_(const void *what, unsigned long long start, double flops, double bytes)
{
    if (!kp_recording()) return;
    kp_push_metric(what, start, kp_key_flops, flops);
    kp_push_metric(what, start, kp_key_bytes, bytes);
}

void kp_rings_after_fork(void)
{
    pthread_mutex_init(&kp_rings_lock, NULL);
    for (kp_ring *r = kp_rings_first(); r; r = atomic_load(&r->next)) {
        pthread_mutex_init(&r->drain_lock, NULL);
        atomic_store(&r->tail, atomic_load(&r->head)); /* the parent's scopes: not ours */
        r->tail_seen = atomic_load(&r->head);
        r->npending = 0;
        if (r != kp_my_ring)
            atomic_store(&r->exited, 1); /* threads the child does not have */
        else
            r->tid = (uint32_t)syscall(SYS_gettid);
    }
}
