/*
 * scopes.c — what a libkprof scope costs (bench/scopes.py runs it and writes the figures):
 *
 *   bench_scopes off N          ns per scope pair (KPROF_SCOPE open + close) with no session
 *   bench_scopes on N [RING]    ... while a session records (RING: the threads' ring entries; a
 *                               ring as large as N measures the hot path alone, the default one
 *                               includes the slow path of a thread draining its own full ring)
 *   bench_scopes threads T N    T threads x N scopes in one session: every scope must be in the
 *                               result (key averages' calls) or counted as lost (dropped)
 *   bench_scopes count MODE N   N calls of a function with a scope (MODE scoped) or without (plain)
 *                               and no session: run under valgrind --tool=lackey, the difference
 *                               of the two counts / N is the instructions of the off path
 *
 * Built twice: bench_scopes, and bench_scopes_disabled with -DKPROF_DISABLE (its `off` is the
 * compiled-out figure). Times: the best of 5 repeats of the loop, minus the same loop without a
 * scope, divided by N.
 */
#define _GNU_SOURCE
#include <kprof.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

/* The function whose off path bench/scopes.py disassembles, and its bare twin. */
__attribute__((noinline)) void bench_scoped(uint64_t i)
{
    KPROF_SCOPE("bench");
    sink = i;
}

__attribute__((noinline)) void bench_plain(uint64_t i)
{
    sink = i;
}

static double loop_ns(void (*fn)(uint64_t), uint64_t n)
{
    double best = 1e300;
    for (int r = 0; r < 5; r++) {
        uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < n; i++)
            fn(i);
        double t = (double)(now_ns() - t0);
        if (t < best) best = t;
    }
    return best;
}

static int fail(const char *what)
{
    fprintf(stderr, "bench_scopes: %s: %s\n", what, kprof_last_error());
    return 1;
}

static int bench_on(uint64_t n, unsigned ring)
{
    kprof_options o = KPROF_OPTIONS_INIT;
    o.ring_entries = ring;
    double plain = loop_ns(bench_plain, n), best = 1e300;
    for (int r = 0; r < 5; r++) {
        /* A fresh thread each time would get a fresh ring; this one keeps the ring it got in the
         * first session, so the ring size is the first session's. */
        if (kprof_start(&o) != KPROF_OK) return fail("kprof_start");
        uint64_t t0 = now_ns();
        for (uint64_t i = 0; i < n; i++)
            bench_scoped(i);
        double t = (double)(now_ns() - t0);
        if (t < best) best = t;
        kprof_result *res = NULL;
        if (kprof_stop(&res) != KPROF_OK) return fail("kprof_stop");
        kprof_summary s = KPROF_SUMMARY_INIT;
        kprof_result_summary(res, &s);
        if (s.events != n) {
            fprintf(stderr, "bench_scopes: %llu events recorded of %llu\n", s.events,
                    (unsigned long long)n);
            kprof_result_destroy(res);
            return 1;
        }
        kprof_result_destroy(res);
    }
    printf("on: %.2f ns per scope pair (%llu scopes, ring %u, %s clock)\n",
           (best - plain) / (double)n, (unsigned long long)n, ring ? ring : 32768u,
           getenv("KPROF_CLOCK") ? getenv("KPROF_CLOCK") : "default");
    return 0;
}

typedef struct worker {
    pthread_t thread;
    uint64_t n;
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    for (uint64_t i = 0; i < w->n; i++)
        bench_scoped(i);
    return NULL;
}

static int bench_threads(unsigned t, uint64_t n)
{
    worker *w = calloc(t, sizeof *w);
    if (!w || kprof_start(NULL) != KPROF_OK) return fail("kprof_start");
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < t; i++) {
        w[i].n = n;
        pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
    }
    for (unsigned i = 0; i < t; i++)
        pthread_join(w[i].thread, NULL);
    uint64_t t1 = now_ns();
    kprof_result *res = NULL;
    if (kprof_stop(&res) != KPROF_OK) return fail("kprof_stop");
    uint64_t t2 = now_ns();
    size_t nrows = 0;
    const kprof_row *rows = NULL;
    if (kprof_result_key_averages(res, KPROF_BY_NAME, &rows, &nrows) != KPROF_OK)
        return fail("kprof_result_key_averages");
    unsigned long long calls = 0;
    for (size_t i = 0; i < nrows; i++) {
        const kprof_row *row = kprof_row_at(rows, i);
        if (strcmp(row->name, "bench") == 0) calls += row->calls;
    }
    kprof_summary s = KPROF_SUMMARY_INIT;
    kprof_result_summary(res, &s);
    unsigned long long want = (unsigned long long)t * n;
    printf("threads: %u x %llu scopes: %llu in the result, %llu counted lost, %llu missing; "
           "%.2f s recording (%.1f ns of wall time per scope, all threads together), %.2f s "
           "kprof_stop (drain, merge, result)\n",
           t, (unsigned long long)n, calls, s.dropped, want - calls - s.dropped,
           (double)(t1 - t0) / 1e9, (double)(t1 - t0) / (double)want, (double)(t2 - t1) / 1e9);
    kprof_result_destroy(res);
    free(w);
    return calls + s.dropped == want ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "off";
    uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000ull;
    if (strcmp(mode, "off") == 0) {
        double plain = loop_ns(bench_plain, n), scoped = loop_ns(bench_scoped, n);
#ifdef KPROF_DISABLE
        const char *what = "compiled out (KPROF_DISABLE)";
#else
        const char *what = "off (no session)";
#endif
        printf("%s: %.2f ns per scope pair (%llu scopes)\n", what, (scoped - plain) / (double)n,
               (unsigned long long)n);
        return 0;
    }
    if (strcmp(mode, "on") == 0)
        return bench_on(n, argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 0);
    if (strcmp(mode, "threads") == 0 && argc > 3)
        return bench_threads((unsigned)strtoul(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
    if (strcmp(mode, "count") == 0 && argc > 3) {
        void (*fn)(uint64_t) = strcmp(argv[2], "scoped") == 0 ? bench_scoped : bench_plain;
        uint64_t m = strtoull(argv[3], NULL, 10);
        for (uint64_t i = 0; i < m; i++)
            fn(i);
        return 0;
    }
    fprintf(stderr, "usage: bench_scopes off|on N [RING] | threads T N | count scoped|plain N\n");
    return 2;
}
