/*
 * libkprof_internal.h — what the files of libkprof's in-process profiler share (include/kprof.h is
 * its public face): the per-thread rings scopes are recorded into, the session that drains them
 * into the record writer, and the error text kprof_last_error returns.
 *
 * THE PATH OF A SCOPE. kprof_scope_close_ appends one 32-byte entry (what, start and end ticks)
 * to its thread's ring: a single-producer, single-consumer ring the thread owns, published with a
 * release store of `head`, no lock. The session's drain — a background thread while the session
 * runs, and kprof_stop at the end — takes a ring's drain lock, reads the entries up to `head`
 * with an acquire load, turns them into the record format `kprof trace` uses (collect/record.h:
 * a KP_REC_RANGE per scope, then a KP_REC_METRIC per metric, in one piece; times mapped onto
 * CLOCK_MONOTONIC through the session's tick map) and hands them to the record writer
 * (collect/writer.h), then releases the slots with a release store of `tail`. A thread that finds
 * its ring full drains it itself (it takes the same lock: the slow path), so nothing is lost.
 * kprof_stop merges the writer's file into a trace with the merge `kprof trace` uses, and the
 * result reads it back like any trace.
 *
 * ORDER ON A THREAD. The call tree nests a thread's scopes by their times alone, so those must
 * say it unambiguously: a thread's ticks strictly increase, each at least a nanosecond's worth
 * after its last (kp_scopes_set_tick_rate), so an enclosing scope starts before and ends after
 * what it encloses however coarse the counter (a VM's steps by 10 ns) and whichever CPU the
 * thread ran on. It also makes (start, scope) name a scope, which is how a metric finds its scope.
 *
 * Rings outlive sessions (a thread keeps its ring, and the pointer to it, until it exits; then
 * the ring waits for the next new thread): an owner thread never checks whether its ring is
 * still there. Entries that started before the current session are stale (a scope that was open
 * across a kprof_stop and a kprof_start, or one that raced a stop) and are skipped.
 */
#ifndef KP_LIBKPROF_INTERNAL_H
#define KP_LIBKPROF_INTERNAL_H

#include "core/clock.h"
#include "base/error.h"
#include "kprof.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define KP_RING_DEFAULT_ENTRIES 32768u
#define KP_RING_MIN_ENTRIES     64u
#define KP_RING_MAX_ENTRIES     (1u << 26)
#define KP_SCOPE_MAX_METRICS    64   /* metrics one scope carries into the trace (more: dropped) */
#define KP_PENDING_MAX          4096 /* metrics a thread's open scopes hold before their end */

/* What a ring entry is. */
typedef enum kp_entry_kind {
    KP_ENTRY_SITE = 1,  /* a scope: what = its kprof_scope_site */
    KP_ENTRY_NAME = 2,  /* a scope: what = its name (kprof_scope_begin) */
    KP_ENTRY_METRIC = 3 /* a metric of the scope (start, owner): what = the key, end = the
                           double's bits */
} kp_entry_kind;

typedef struct kp_scope_entry {
    const void *what;
    uint64_t start; /* ticks (the scope's, for a metric: with owner, which scope it belongs to) */
    uint64_t end;   /* ticks; a metric's value */
    uint32_t kind;  /* kp_entry_kind */
    uint32_t owner; /* a metric: the low 32 bits of its scope's `what` */
} kp_scope_entry;

_Static_assert(sizeof(kp_scope_entry) == 32, "a ring entry is 32 bytes");

/* A name's or key's pointer and its string id in the writer's current file. */
typedef struct kp_name_slot {
    const void *ptr; /* NULL: empty */
    uint32_t id;
} kp_name_slot;

typedef struct kp_ring {
    /* The owner's line: written by the owner thread alone. */
    _Atomic uint64_t head; /* entries appended (published with release) */
    uint64_t tail_seen;    /* the owner's last look at tail */
    uint64_t mask;         /* capacity - 1 (a power of two) */
    kp_scope_entry *entries;
    /* The consumer's: under drain_lock. */
    _Alignas(64) _Atomic uint64_t tail; /* entries drained (released with release) */
    pthread_mutex_t drain_lock;
    uint32_t tid;        /* the owner's kernel thread id (gettid) */
    uint32_t index;      /* this ring's number: ids are index << 32 | seq */
    uint32_t seq;        /* scopes written from it */
    uint32_t gen;        /* the session its names and pending metrics belong to */
    kp_name_slot *names; /* pointer -> string id, for gen */
    uint32_t names_cap, names_used;
    kp_scope_entry *pending; /* metrics of scopes that have not ended yet */
    uint32_t npending, pending_cap;
    struct kp_rec *batch; /* records on their way to the writer */
    uint32_t batch_cap;
    /* The registry's. */
    _Atomic int exited;             /* its thread has ended: the ring waits for another */
    _Atomic(struct kp_ring *) next; /* every ring, newest first */
} kp_ring;

/* A running session. */
typedef struct kp_session {
    unsigned collectors;   /* KPROF_COLLECT_* */
    unsigned ring_entries; /* for rings made during it */
    uint32_t gen;          /* sessions started in this process, this one included */
    char dir[4096];        /* its scratch folder */
    int autostarted;       /* by KPROF=1 */
    uint64_t t0_ticks;     /* entries that started before are not its */
    int64_t start_ns;
    kp_tick_map map; /* ticks -> CLOCK_MONOTONIC, under map_lock (drains read, anchors
                        write) */
    pthread_rwlock_t map_lock;
    int64_t last_anchor_ns;
    int64_t last_flush_ns;    /* the drain thread's */
    _Atomic uint64_t dropped; /* events lost before the writer: no ring, too many metrics */
    /* The background drain. */
    pthread_t drainer;
    int drainer_started;
    int drainer_ready; /* under wake_lock: the thread runs its own code (its start-up is over) */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake;
    int stopping; /* under wake_lock */
} kp_session;

/* WHO CALLS WHOM (one way, bottom first): fail.c (kprof_last_error) <- drain.c (a ring into the
 * writer) <- scope.c (rings, the hot path) <- results.c <- the collectors (cuda.c, opencl.c,
 * nvtx.c) <- collectors.c (their table) <- session.c (start, stop, KPROF=1) <- repeat.c;
 * compare.c beside them, on fail.c alone. */

/* ---- drain.c: a ring into the writer ---- */

/* The session drains write into while it runs; NULL when none (or once kprof_stop took it). An
 * owner draining its own ring reads it under the ring's drain lock. */
extern _Atomic(kp_session *) kp_live_session;

/* The background drain's wake-up: global (not the session's), so that an owner thread that
 * signals it while kprof_stop ends the session never touches freed memory. kp_wake_init makes
 * the condition on CLOCK_MONOTONIC (the drain thread's deadlines); session.c calls it once, and
 * again in a forked child. */
extern pthread_mutex_t kp_wake_lock;
extern pthread_cond_t kp_wake;
void kp_wake_init(void);

/* Drain ring r into session s's writer (s NULL: discard what r holds). Caller holds
 * r->drain_lock. */
void kp_ring_drain_locked(kp_ring *r, kp_session *s);

/* Ask the background drain to run now (an owner's ring is half full). Never blocks. */
void kp_session_wake(void);

/* Count events lost before the writer in the live session, if any. */
void kp_session_dropped(uint64_t n);

/* ---- scope.c: rings ---- */

/* The newest ring (then ->next): every ring ever made, never freed while the process runs. */
kp_ring *kp_rings_first(void);

/* The map's rate (ns per tick), for the spacing of a thread's ticks. */
void kp_scopes_set_tick_rate(double ns_per_tick);

/* Capacity a session asks new rings to have (0: the default). */
void kp_rings_set_entries(unsigned entries);

/* In a forked child: locks made anew, every ring emptied, the other threads' rings free. */
void kp_rings_after_fork(void);

/* ---- errors (fail.c) ---- */

/* Set this thread's kprof_last_error text: "FUNCTION: message". Returns status. */
kprof_status kp_libkprof_fail(const char *function, kprof_status status, const char *message);
/* kp_libkprof_fail of KPROF_NOMEM, "out of memory": what every allocation failure says. */
kprof_status kp_libkprof_nomem(const char *function);

/* The same from a kp_error (its message), which is then cleared. */
kprof_status kp_libkprof_fail_err(const char *function, kp_error *err);

/* The end of a getter that fills a sized struct of the caller's (kprof.h's "Structs that grow"):
 * full, the library's whole struct (n bytes), copied into out as far as out's `size` (its first
 * member, an unsigned) reaches; out's size is kept. */
static inline void kp_sized_copy(void *out, const void *full, size_t n)
{
    unsigned size;
    memcpy(&size, out, sizeof size);
    memcpy(out, full, size < n ? size : n);
    memcpy(out, &size, sizeof size);
}

/* ---- for the tests (session.c; kp_libkprof_result_* results.c) ---- */

/* Keep the session's record files (*.klog) in its scratch folder after kprof_stop, and say
 * where that folder is (the result's folder; kprof_result_destroy removes it). */
void kp_libkprof_keep_records(int keep);
const char *kp_libkprof_result_dir(const kprof_result *result);
/* Make kprof_result_destroy leave the result's trace (and its scratch folder) where it is, for a
 * trace that could not be saved where it was asked for; its path. */
const char *kp_libkprof_result_keep_trace(kprof_result *result);

/* ---- results.c ---- */

/* A result over the trace at `trace` (in folder dir, both removed by kprof_result_destroy),
 * with the merge's summary numbers. */
kprof_status kp_result_open(const char *dir, const char *trace, uint64_t dropped, int64_t start_ns,
                            int64_t end_ns, kprof_result **out, kp_error *err);

#endif
