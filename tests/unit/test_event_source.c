/*
 * test_event_source.c — reading a trace through store/event_source.h: a trace ingested by the real
 * kp_trace_ingest_dir from record files written here (two processes, known times), read back as
 * meta, processes, notes, strings, tracks and kp_events in both orders, filtered, with the
 * launching call's start; split in id ranges and read on a second thread; metrics (KP_REC_METRIC
 * records: flops, bytes and user keys, on rows still waiting in the ingest's buffer and on rows
 * already in, keys defined late, the records the ingest drops and counts); the row that stands
 * for a pid of several rows, and the hosts' clock uncertainty of a merged trace's hosts table;
 * and a trace cut short, which is CORRUPT naming the file.
 */
#define _GNU_SOURCE
#include "collect/record.h"
#include "collect/session.h"
#include "store/event_source.h"
#include "store/trace_db.h"
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct klog {
    FILE *f;
} klog;

static void rec(klog *k, kp_rec r)
{
    r.magic = KP_REC_MAGIC;
    fwrite(&r, sizeof r, 1, k->f);
}

static void str(klog *k, uint32_t id, const char *text)
{
    size_t len = strlen(text);
    rec(k, (kp_rec){.kind = KP_REC_STRING, .name = id, .bytes = len});
    static const char pad[8];
    fwrite(text, 1, len, k->f);
    fwrite(pad, 1, (8 - len % 8) % 8, k->f);
}

static void open_log(klog *k, const char *dir, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    k->f = fopen(path, "wb");
    CHECK(k->f != NULL);
}

/* Process row 1 (pid 100, cuda, ends cleanly) and row 2 (pid 200, opencl, never closes). */
static void write_records(const char *dir)
{
    klog k;
    open_log(&k, dir, "100-cuda-1.klog");
    str(&k, 1, "prog arg");
    str(&k, 2, "cudaLaunchKernel");
    str(&k, 3, "axpy");
    str(&k, 4, "[CUDA memcpy HtoD]");
    str(&k, 5, "cudaMemcpy");
    str(&k, 6, "step");
    str(&k, 7, "orphan");
    str(&k, 8, "hello");
    rec(&k, (kp_rec){.kind = KP_REC_HEADER, .id = 100, .aux = 1, .start = 100, .name = 1});
    /* The kernel is stored before the call that launched it. */
    rec(&k, (kp_rec){.kind = KP_REC_KERNEL,
                     .name = 3,
                     .tid = 100,
                     .start = 1100,
                     .end = 1200,
                     .correlation = 7,
                     .device = 0,
                     .stream = 3,
                     .grid = {4, 2, 1},
                     .block = {32, 4, 1},
                     .registers = 16,
                     .static_smem = 1024});
    rec(&k, (kp_rec){.kind = KP_REC_API,
                     .name = 2,
                     .tid = 100,
                     .start = 1000,
                     .end = 1030,
                     .correlation = 7,
                     .domain = KP_DOMAIN_CUDA_RUNTIME});
    rec(&k, (kp_rec){.kind = KP_REC_API,
                     .name = 5,
                     .tid = 100,
                     .start = 1250,
                     .end = 1400,
                     .correlation = 8,
                     .domain = KP_DOMAIN_CUDA_RUNTIME});
    rec(&k, (kp_rec){.kind = KP_REC_MEMCPY,
                     .name = 4,
                     .tid = 100,
                     .start = 1300,
                     .end = 1350,
                     .correlation = 8,
                     .bytes = 4096,
                     .aux = KP_COPY_HTOD,
                     .device = 0,
                     .stream = 3});
    rec(&k, (kp_rec){.kind = KP_REC_KERNEL,
                     .name = 7,
                     .tid = 100,
                     .start = 500,
                     .end = 600,
                     .correlation = 99,
                     .device = 1,
                     .stream = 5,
                     .grid = {1, 1, 1},
                     .block = {64, 1, 1}});
    rec(&k, (kp_rec){.kind = KP_REC_RANGE,
                     .name = 6,
                     .tid = 101,
                     .start = 900,
                     .end = 2000,
                     .id = 1,
                     .domain = KP_DOMAIN_NVTX});
    rec(&k, (kp_rec){.kind = KP_REC_NOTE, .name = 8, .start = 150});
    rec(&k, (kp_rec){.kind = KP_REC_END, .start = 3000});
    fclose(k.f);

    open_log(&k, dir, "200-opencl-2.klog");
    str(&k, 1, "ocl");
    str(&k, 2, "clEnqueueNDRangeKernel");
    str(&k, 3, "saxpy");
    str(&k, 4, "hello");
    rec(&k, (kp_rec){.kind = KP_REC_HEADER, .id = 200, .aux = 100, .start = 200, .name = 1});
    /* Correlation 7 again: correlations are numbered per process. */
    rec(&k, (kp_rec){.kind = KP_REC_API,
                     .name = 2,
                     .tid = 200,
                     .start = 1500,
                     .end = 1510,
                     .correlation = 7,
                     .domain = KP_DOMAIN_OPENCL});
    rec(&k, (kp_rec){.kind = KP_REC_KERNEL,
                     .name = 3,
                     .tid = 200,
                     .start = 1600,
                     .end = 1700,
                     .correlation = 7,
                     .domain = KP_DOMAIN_OPENCL,
                     .grid = {1000, 1, 1}});
    rec(&k, (kp_rec){.kind = KP_REC_NOTE, .name = 4, .start = 250}); /* the same text again */
    fclose(k.f);
}

static int count_events(kp_event_source *src, const kp_event_filter *f)
{
    kp_event_iter *it = NULL;
    kp_error err = {0};
    CHECK_INT(kp_event_iter_open(src, f, &it, &err), KPROF_OK);
    kp_trace_event ev;
    int n = 0;
    while (it && kp_event_iter_next(it, &ev))
        n++;
    CHECK_INT(kp_event_iter_close(it, &err), KPROF_OK);
    return n;
}

typedef struct half {
    kp_event_iter *it;
    int n;
    int64_t ids;
} half;

static void *read_half(void *p)
{
    half *h = p;
    kp_trace_event ev;
    while (kp_event_iter_next(h->it, &ev)) {
        h->n++;
        h->ids += ev.id;
    }
    return NULL;
}

static void test_reading(const char *path)
{
    kp_event_source *src = NULL;
    kp_error err = {0};
    CHECK_INT(kp_event_source_open(path, &src, &err), KPROF_OK);
    if (!src) return;
    CHECK_STR(kp_event_source_path(src), path);

    const kp_trace_meta *m = kp_event_source_meta(src);
    CHECK_STR(m->command, "prog --flag");
    CHECK_STR(m->collectors, "cuda,opencl");
    CHECK_INT(m->start_ns, 100);
    CHECK_INT(m->end_ns, 5000);
    CHECK_INT(m->exit_status, 3);
    CHECK_INT(m->nnotes, 1); /* each text once */
    if (m->nnotes) CHECK_STR(m->notes[0], "hello");

    size_t n;
    const kp_trace_process *p = kp_event_source_processes(src, &n);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_INT(p[0].pid, 100);
        CHECK_STR(p[0].command, "prog arg");
        CHECK_STR(p[0].collector, "cuda");
        CHECK(p[0].clean_exit && p[0].ended);
        CHECK_INT(p[0].end_ns, 3000);
        CHECK_INT(p[1].pid, 200);
        CHECK_INT(p[1].ppid, 100);
        CHECK(!p[1].clean_exit && !p[1].ended);
        CHECK_INT(p[1].events, 2);
    }

    /* Tracks, sorted. */
    const kp_trace_thread *th;
    CHECK_INT(kp_event_source_threads(src, &th, &n, &err), KPROF_OK);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK(th[0].pid == 100 && th[0].tid == 100);
        CHECK(th[1].pid == 100 && th[1].tid == 101);
        CHECK(th[2].pid == 200 && th[2].tid == 200);
    }
    const kp_trace_queue *qu;
    CHECK_INT(kp_event_source_queues(src, &qu, &n, &err), KPROF_OK);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK(qu[0].pid == 100 && qu[0].device == 0 && qu[0].stream == 3);
        CHECK(qu[1].pid == 100 && qu[1].device == 1 && qu[1].stream == 5);
        CHECK(qu[2].pid == 200 && qu[2].device == 0 && qu[2].stream == 0);
    }

    /* Every event, in storage order, with everything. */
    kp_event_filter all = {.fields = KP_EVENT_FIELD_ALL};
    kp_event_iter *it = NULL;
    CHECK_INT(kp_event_iter_open(src, &all, &it, &err), KPROF_OK);
    kp_trace_event ev;
    int64_t last_id = 0;
    int events = 0, kernels = 0;
    while (it && kp_event_iter_next(it, &ev)) {
        events++;
        CHECK(ev.id > last_id);
        last_id = ev.id;
        const kp_event *e = &ev.e;
        const char *name = kp_event_source_string(src, e->name, NULL);
        CHECK(name != NULL);
        if (!name) continue;
        if (e->kind == KP_EVENT_KERNEL && strcmp(name, "axpy") == 0) {
            kernels++;
            CHECK_INT(e->process, 1);
            CHECK(e->known & KP_EVENT_HAS_GEOMETRY);
            CHECK_INT(e->grid[0], 128); /* 4 groups of 32 threads */
            CHECK_INT(e->grid[1], 8);
            CHECK_INT(e->group[0], 32);
            CHECK_INT(e->registers, 16);
            CHECK(e->known & KP_EVENT_HAS_SHARED);
            CHECK_INT(e->static_shared, 1024);
            CHECK_INT(e->stream, 3);
            CHECK(ev.has & KP_TRACE_HAS_LAUNCH);
            CHECK_INT(ev.launch_start_ns, 1000);
        } else if (e->kind == KP_EVENT_KERNEL && strcmp(name, "saxpy") == 0) {
            kernels++;
            CHECK_INT(e->process, 2);
            CHECK(kp_event_runtime_groups(e)); /* OpenCL chose the work-group size */
            CHECK_INT(e->grid[0], 1000);
            CHECK(!(e->known & (KP_EVENT_HAS_REGISTERS | KP_EVENT_HAS_SHARED)));
            CHECK(ev.has & KP_TRACE_HAS_LAUNCH);
            CHECK_INT(ev.launch_start_ns, 1500); /* its own process's call 7, not row 1's */
        } else if (e->kind == KP_EVENT_KERNEL) {
            kernels++;
            CHECK_STR(name, "orphan");
            CHECK(!(ev.has & KP_TRACE_HAS_LAUNCH));      /* no call of correlation 99 */
            CHECK(!(e->known & KP_EVENT_HAS_REGISTERS)); /* the record gave none */
        } else if (e->kind == KP_EVENT_MEMCPY) {
            CHECK(ev.has & KP_TRACE_HAS_BYTES);
            CHECK_INT(e->bytes, 4096);
            CHECK_INT(e->copy_kind, KP_COPY_HTOD);
            CHECK_INT(ev.launch_start_ns, 1250);
        } else if (e->kind == KP_EVENT_API) {
            CHECK(ev.has & KP_TRACE_HAS_STATUS);
            CHECK(ev.has & KP_TRACE_LAUNCHED);
            CHECK(e->known & KP_EVENT_HAS_CORRELATION);
        } else if (e->kind == KP_EVENT_RANGE) {
            CHECK_STR(name, "step");
            CHECK(ev.has & KP_TRACE_HAS_RANGE_ID);
            CHECK_INT(e->range_id, 1);
            CHECK_INT(e->tid, 101);
        }
    }
    CHECK_INT(kp_event_iter_close(it, &err), KPROF_OK);
    CHECK_INT(events, 8);
    CHECK_INT(kernels, 3);

    /* By start time; only the fields asked for. */
    kp_event_filter by_start = {.order = KP_EVENT_ORDER_START};
    CHECK_INT(kp_event_iter_open(src, &by_start, &it, &err), KPROF_OK);
    int64_t last_start = INT64_MIN;
    while (it && kp_event_iter_next(it, &ev)) {
        CHECK(ev.e.start_ns >= last_start);
        last_start = ev.e.start_ns;
        CHECK(!(ev.e.known & KP_EVENT_HAS_GEOMETRY) && !ev.has);
    }
    CHECK_INT(kp_event_iter_close(it, &err), KPROF_OK);

    /* Filters. */
    CHECK_INT(count_events(src, &(kp_event_filter){.kind_flags = KP_EVENT_F_DEVICE}), 4);
    CHECK_INT(count_events(src, &(kp_event_filter){.kind_flags = KP_EVENT_F_HOST_THREAD}), 4);
    CHECK_INT(count_events(src, &(kp_event_filter){.kinds = 1u << KP_EVENT_RANGE}), 1);
    CHECK_INT(count_events(src, &(kp_event_filter){.kinds = 1u << KP_EVENT_MARK}), 0);
    CHECK_INT(count_events(src, NULL), 8);

    /* Two halves by row id, the second on a thread of its own. */
    int64_t last;
    CHECK_INT(kp_event_source_last_id(src, &last, &err), KPROF_OK);
    CHECK_INT(last, 8);
    half second = {0};
    kp_event_filter upper = {.first_id = last / 2 + 1,
                             .last_id = last,
                             .fields = KP_EVENT_FIELD_ALL,
                             .flags = KP_EVENT_ITER_OWN_CONNECTION};
    CHECK_INT(kp_event_iter_open(src, &upper, &second.it, &err), KPROF_OK);
    pthread_t t;
    int started = second.it && pthread_create(&t, NULL, read_half, &second) == 0;
    CHECK(started);
    int lower = count_events(src, &(kp_event_filter){.first_id = 1, .last_id = last / 2});
    if (started) pthread_join(t, NULL);
    CHECK_INT(kp_event_iter_close(second.it, &err), KPROF_OK);
    CHECK_INT(lower + second.n, 8);
    CHECK_INT(second.ids, 5 + 6 + 7 + 8);

    int64_t first_start, last_end;
    CHECK_INT(kp_event_source_span(src, &first_start, &last_end, &err), KPROF_OK);
    CHECK_INT(first_start, 500);
    CHECK_INT(last_end, 2000);
    kp_event_source_close(src);
    kp_event_source_close(NULL);
    CHECK_INT(kp_event_iter_close(NULL, &err), KPROF_OK);
}

/* The launching call of each device operation, whatever order calls and operations are stored
 * in: the earliest call of the same process and correlation, or none. */
enum { CALLS = 600 };

static uint32_t lcg(uint32_t *state)
{
    *state = *state * 1103515245u + 12345u;
    return *state >> 8;
}

static void test_launches_in_any_order(const char *dir)
{
    char records[600], path[600];
    snprintf(records, sizeof records, "%s/shuffled", dir);
    snprintf(path, sizeof path, "%s/shuffled.kprof", dir);
    mkdir(records, 0700);
    klog k;
    open_log(&k, records, "300-cuda-1.klog");
    str(&k, 1, "app");
    str(&k, 2, "cuLaunchKernel");
    str(&k, 3, "k");
    rec(&k, (kp_rec){.kind = KP_REC_HEADER, .id = 300, .start = 1, .name = 1});
    static int64_t earliest[CALLS]; /* by correlation - 1; 0 = no call */
    uint32_t seed = 7, order[CALLS];
    for (int i = 0; i < CALLS; i++)
        order[i] = (uint32_t)i;
    for (int i = CALLS - 1; i > 0; i--) { /* shuffled */
        uint32_t j = lcg(&seed) % (uint32_t)(i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    /* Calls for 5 of every 6 correlations, some twice (the earlier start counts). */
    for (int i = 0; i < CALLS; i++) {
        uint32_t corr = order[i] + 1;
        if (corr % 6 == 0) continue;
        int times = corr % 7 == 0 ? 2 : 1;
        for (int t = 0; t < times; t++) {
            int64_t start = 1000 + (int64_t)(lcg(&seed) % 100000);
            if (!earliest[corr - 1] || start < earliest[corr - 1]) earliest[corr - 1] = start;
            rec(&k, (kp_rec){.kind = KP_REC_API,
                             .name = 2,
                             .tid = 300,
                             .start = (uint64_t)start,
                             .end = (uint64_t)start + 5,
                             .correlation = corr,
                             .domain = KP_DOMAIN_CUDA_DRIVER});
        }
    }
    /* A kernel of every correlation, in another order. */
    for (int i = 0; i < CALLS; i++) {
        uint32_t corr = (uint32_t)((i * 7919) % CALLS) + 1;
        uint64_t start = 200000 + lcg(&seed) % 100000;
        rec(&k, (kp_rec){.kind = KP_REC_KERNEL,
                         .name = 3,
                         .tid = 300,
                         .start = start,
                         .end = start + 10,
                         .correlation = corr,
                         .grid = {1, 1, 1},
                         .block = {32, 1, 1}});
    }
    fclose(k.f);
    kp_trace_run run = {.command = "app", .start_ns = 1, .end_ns = 400000};
    kp_trace_summary sum;
    kp_error err = {0};
    CHECK_INT(kp_trace_ingest_dir(path, records, &run, NULL, &sum, &err), KPROF_OK);
    kp_event_source *src = NULL;
    CHECK_INT(kp_event_source_open(path, &src, &err), KPROF_OK);
    for (int pass = 0; src && pass < 2; pass++) {
        kp_event_filter f = {.kinds = 1u << KP_EVENT_KERNEL,
                             .order = pass ? KP_EVENT_ORDER_START : KP_EVENT_ORDER_STORAGE,
                             .fields = KP_EVENT_FIELD_LAUNCH};
        kp_event_iter *it = NULL;
        CHECK_INT(kp_event_iter_open(src, &f, &it, &err), KPROF_OK);
        kp_trace_event ev;
        int n = 0, wrong = 0;
        while (it && kp_event_iter_next(it, &ev)) {
            uint64_t corr = ev.e.correlation;
            int64_t want = corr >= 1 && corr <= CALLS ? earliest[corr - 1] : -1;
            int has = (ev.has & KP_TRACE_HAS_LAUNCH) != 0;
            if (has != (want > 0) || (has && ev.launch_start_ns != want)) wrong++;
            n++;
        }
        CHECK_INT(kp_event_iter_close(it, &err), KPROF_OK);
        CHECK_INT(n, CALLS);
        CHECK_INT(wrong, 0);
    }
    kp_event_source_close(src);
    kp_error_clear(&err); /* main removes the folder */
}

/* A metric record (record.h) of value v and key string id key, for an event of kind. */
static void metric(klog *k, uint32_t key, double v, int kind)
{
    kp_rec r = {.kind = KP_REC_METRIC, .name = key, .aux = (uint32_t)kind};
    memcpy(&r.bytes, &v, sizeof v);
    rec(k, r);
}

enum { METRIC_KERNELS = 40 }; /* more than a batch of rows (32): some are in when metrics come */

/* A poll for kp_session_live_start that counts its calls. */
typedef struct kp_live_poll_ctx {
    kp_trace_ingest *ingest;
    atomic_int polls;
} kp_live_poll_ctx;

static kprof_status kp_live_poll_counting(void *ctx, const char *dir)
{
    kp_live_poll_ctx *c = ctx;
    kprof_status st = kp_trace_ingest_poll_fn(c->ingest, dir);
    atomic_fetch_add(&c->polls, 1);
    return st;
}

/* Metrics through the real ingest, read back through the source. */
static void test_metrics(const char *dir)
{
    char records[600], path[600], file[700];
    snprintf(records, sizeof records, "%s/metrics", dir);
    snprintf(path, sizeof path, "%s/metrics.kprof", dir);
    mkdir(records, 0700);
    klog k;
    open_log(&k, records, "400-cuda-1.klog");
    snprintf(file, sizeof file, "%s/400-cuda-1.klog", records);
    rec(&k, (kp_rec){.kind = KP_REC_HEADER, .id = 400, .start = 1, .name = 1});
    str(&k, 1, "app");
    str(&k, 2, "k");
    str(&k, 3, "flops");
    str(&k, 4, "bytes");
    str(&k, 5, "tiles");
    str(&k, 6, "step");
    metric(&k, 3, 1, KP_EVENT_KERNEL); /* no event before it: dropped */
    /* Kernels i = 0..39: flops 1000 i, bytes 10 i, tiles i, each 100 ns. Kernel 5 says its flops
     * twice (the last counts) and its tiles twice (the last counts); kernel 6 has a NaN and a
     * negative flops (dropped) and a negative user value (kept). */
    for (int i = 0; i < METRIC_KERNELS; i++) {
        uint64_t start = 1000 + 1000 * (uint64_t)i;
        rec(&k, (kp_rec){.kind = KP_REC_KERNEL,
                         .name = 2,
                         .tid = 400,
                         .start = start,
                         .end = start + 100,
                         .correlation = (uint64_t)i + 1,
                         .grid = {1, 1, 1},
                         .block = {32, 1, 1}});
        if (i == 5) metric(&k, 3, 1, KP_EVENT_KERNEL);
        if (i == 6) {
            metric(&k, 3, NAN, KP_EVENT_KERNEL);
            metric(&k, 3, -1, KP_EVENT_KERNEL);
            metric(&k, 5, -2.5, KP_EVENT_KERNEL);
            continue;
        }
        metric(&k, 3, 1000.0 * i, KP_EVENT_KERNEL);
        metric(&k, 4, 10.0 * i, KP_EVENT_KERNEL);
        if (i == 5) metric(&k, 5, 99, KP_EVENT_KERNEL);
        metric(&k, 5, i, KP_EVENT_KERNEL);
    }
    metric(&k, 3, 7, KP_EVENT_RANGE); /* the event before it is a kernel: dropped */
    /* A range whose metrics come after a string definition (a key named for the first time),
     * and one key defined only at the end of the file. */
    rec(&k, (kp_rec){.kind = KP_REC_RANGE,
                     .name = 6,
                     .tid = 400,
                     .start = 500,
                     .end = 60500,
                     .id = 1,
                     .domain = KP_DOMAIN_NVTX});
    str(&k, 7, "ratio");
    metric(&k, 7, 0.5, KP_EVENT_RANGE);
    metric(&k, 3, 6e6, KP_EVENT_RANGE);
    metric(&k, 9, 42, KP_EVENT_RANGE);
    metric(&k, 10, 1, KP_EVENT_RANGE); /* a key never defined: dropped */
    /* The mark for a live ingest falls between this kernel and its metrics: they come after its
     * row is in. */
    rec(&k, (kp_rec){.kind = KP_REC_KERNEL,
                     .name = 2,
                     .tid = 400,
                     .start = 70000,
                     .end = 70400,
                     .correlation = 99,
                     .grid = {1, 1, 1},
                     .block = {32, 1, 1}});
    fflush(k.f);
    uint64_t mark = (uint64_t)ftell(k.f);
    metric(&k, 3, 8e5, KP_EVENT_KERNEL);
    metric(&k, 5, 3, KP_EVENT_KERNEL);
    rec(&k, (kp_rec){.kind = KP_REC_NOTE, .name = 1, .start = 80000});
    metric(&k, 3, 1, KP_EVENT_KERNEL); /* after a note: no event before it, dropped */
    str(&k, 9, "late");
    rec(&k, (kp_rec){.kind = KP_REC_END, .start = 90000});
    fclose(k.f);
    /* The header's mark (record.h: `submitted`), as a writer keeps it while it runs. */
    FILE *f = fopen(file, "r+b");
    CHECK(f != NULL);
    if (f) {
        kp_rec h;
        CHECK(fread(&h, sizeof h, 1, f) == 1);
        h.submitted = mark;
        fseek(f, 0, SEEK_SET);
        fwrite(&h, sizeof h, 1, f);
        fclose(f);
    }

    kp_error err = {0};
    kp_trace_ingest *m = NULL;
    CHECK_INT(kp_trace_ingest_open(path, NULL, &m, &err), KPROF_OK);
    if (!m) return;
    CHECK_INT(kp_trace_ingest_poll(m, records), KPROF_OK);
    CHECK_INT(kp_trace_ingest_events(m), METRIC_KERNELS + 2); /* up to the mark */
    /* The live thread (collect/session.h) polls through its callback, as kprof trace wires it:
     * polling again adds nothing past the mark. */
    unsetenv("KPROF_TRACE_LIVE");
    kp_live_poll_ctx live_ctx = {.ingest = m};
    kp_session_live *live = kp_session_live_start(kp_live_poll_counting, &live_ctx, records);
    CHECK(live != NULL);
    for (int i = 0; live && i < 400 && atomic_load(&live_ctx.polls) < 2; i++)
        usleep(5000);
    kp_session_live_stop(live);
    CHECK(atomic_load(&live_ctx.polls) >= 2);
    CHECK_INT(kp_trace_ingest_events(m), METRIC_KERNELS + 2);
    kp_trace_run run = {.command = "app", .start_ns = 1, .end_ns = 100000};
    kp_trace_summary sum;
    CHECK_INT(kp_trace_ingest_finish(m, records, &run, &sum, &err), KPROF_OK);
    CHECK_INT(sum.events, METRIC_KERNELS + 2);
    CHECK_INT(sum.metrics_orphaned, 3);
    CHECK_INT(sum.metrics_invalid, 3);
    CHECK_CONTAINS(sum.notes, "metric records dropped: 3 with no event of the kind they name");

    kp_event_source *src = NULL;
    CHECK_INT(kp_event_source_open(path, &src, &err), KPROF_OK);
    if (!src) return;
    CHECK(kp_event_source_has_metrics(src));
    const kp_trace_meta *meta = kp_event_source_meta(src);
    CHECK_INT(meta->nnotes, 2); /* the note record's, and the ingest's of the metrics dropped */
    if (meta->nnotes == 2) CHECK_CONTAINS(meta->notes[1], "metric records dropped");
    kp_event_filter f_all = {.fields = KP_EVENT_FIELD_METRICS};
    kp_event_iter *it = NULL;
    CHECK_INT(kp_event_iter_open(src, &f_all, &it, &err), KPROF_OK);
    kp_trace_event ev;
    int kernels = 0, ranges = 0, wrong = 0;
    int64_t late_kernel = 0;
    while (it && kp_event_iter_next(it, &ev)) {
        const kp_event *e = &ev.e;
        CHECK_INT(ev.id, 0); /* not asked for, though the user metrics needed it */
        if (e->kind == KP_EVENT_RANGE) {
            ranges++;
            CHECK((e->known & KP_EVENT_HAS_FLOPS) && e->metrics.flops == 6e6);
            CHECK(!(e->known & KP_EVENT_HAS_METRIC_BYTES));
            CHECK_INT(ev.nmetrics, 2);
            if (ev.nmetrics == 2) {
                CHECK_STR(kp_event_source_string(src, ev.metrics[0].key, NULL), "ratio");
                CHECK(ev.metrics[0].value == 0.5);
                CHECK_STR(kp_event_source_string(src, ev.metrics[1].key, NULL), "late");
                CHECK(ev.metrics[1].value == 42);
            }
            continue;
        }
        if (e->correlation == 99) { /* its metrics came after its row was in */
            late_kernel++;
            CHECK((e->known & KP_EVENT_HAS_FLOPS) && e->metrics.flops == 8e5);
            CHECK_INT(ev.nmetrics, 1);
            if (ev.nmetrics) CHECK(ev.metrics[0].value == 3);
            continue;
        }
        int i = (int)e->correlation - 1;
        kernels++;
        if (i == 6) {
            wrong += (e->known & (KP_EVENT_HAS_FLOPS | KP_EVENT_HAS_METRIC_BYTES)) != 0;
            wrong += ev.nmetrics != 1 || ev.metrics[0].value != -2.5;
            continue;
        }
        wrong += !(e->known & KP_EVENT_HAS_FLOPS) || e->metrics.flops != 1000.0 * i;
        wrong += !(e->known & KP_EVENT_HAS_METRIC_BYTES) || e->metrics.bytes != 10.0 * i;
        wrong += ev.nmetrics != 1 || ev.metrics[0].value != i; /* kernel 5: 5, not 99 */
    }
    CHECK_INT(kp_event_iter_close(it, &err), KPROF_OK);
    CHECK_INT(kernels, METRIC_KERNELS);
    CHECK_INT(ranges, 1);
    CHECK_INT(late_kernel, 1);
    CHECK_INT(wrong, 0);
    /* One event's, by its row: kernel 10 is row 11 (the range went in after the kernels). */
    const kp_trace_metric *um = NULL;
    size_t n = 0;
    CHECK_INT(kp_event_source_metrics(src, 11, &um, &n, &err), KPROF_OK);
    CHECK(n == 1 && um && um[0].value == 10);
    CHECK_INT(kp_event_source_metrics(src, 1000, &um, &n, &err), KPROF_OK);
    CHECK(n == 0 && !um);
    /* Not asked for: nothing. */
    CHECK_INT(kp_event_iter_open(src, &(kp_event_filter){0}, &it, &err), KPROF_OK);
    while (it && kp_event_iter_next(it, &ev))
        CHECK(!(ev.e.known & (KP_EVENT_HAS_FLOPS | KP_EVENT_HAS_METRIC_BYTES)) && !ev.nmetrics);
    CHECK_INT(kp_event_iter_close(it, &err), KPROF_OK);
    kp_event_source_close(src);
    kp_error_clear(&err);
}

/* A trace without metrics says so, and reads none whatever a reader asks. */
static void test_no_metrics(const char *path)
{
    kp_event_source *src = NULL;
    kp_error err = {0};
    CHECK_INT(kp_event_source_open(path, &src, &err), KPROF_OK);
    if (!src) return;
    CHECK(!kp_event_source_has_metrics(src));
    kp_event_iter *it = NULL;
    CHECK_INT(
        kp_event_iter_open(src, &(kp_event_filter){.fields = KP_EVENT_FIELD_METRICS}, &it, &err),
        KPROF_OK);
    kp_trace_event ev;
    int n = 0;
    while (it && kp_event_iter_next(it, &ev)) {
        n++;
        CHECK(!(ev.e.known & (KP_EVENT_HAS_FLOPS | KP_EVENT_HAS_METRIC_BYTES)) && !ev.nmetrics);
    }
    CHECK_INT(kp_event_iter_close(it, &err), KPROF_OK);
    CHECK_INT(n, 8);
    kp_event_source_close(src);
}

/* A trace cut short: CORRUPT, naming the file, whether opening or reading finds it. */
static void test_damaged(const char *path, const char *dir)
{
    char cut[600];
    snprintf(cut, sizeof cut, "%s/cut.kprof", dir);
    FILE *in = fopen(path, "rb"), *out = fopen(cut, "wb");
    CHECK(in && out);
    if (!in || !out) return;
    char buf[65536];
    size_t got = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, got / 2, out);
    fclose(in);
    fclose(out);
    kp_event_source *src = NULL;
    kp_error err = {0};
    kprof_status st = kp_event_source_open(cut, &src, &err);
    if (st == KPROF_OK) {
        kp_event_iter *it = NULL;
        st = kp_event_iter_open(src, &(kp_event_filter){.fields = KP_EVENT_FIELD_ALL}, &it, &err);
        kp_trace_event ev;
        while (st == KPROF_OK && kp_event_iter_next(it, &ev)) {
        }
        if (st == KPROF_OK) st = kp_event_iter_close(it, &err);
    }
    CHECK_INT(st, KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, cut);
    CHECK_CONTAINS(err.message, "damaged or truncated");
    kp_event_source_close(src);
    kp_error_clear(&err);
    unlink(cut);
}

/* path with sql run on it, as copy. */
static void edited_copy(const char *path, const char *copy, const char *sql)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", path, copy);
    CHECK_INT(system(cmd), 0);
    sqlite3 *db = NULL;
    CHECK_INT(sqlite3_open(copy, &db), SQLITE_OK);
    char *msg = NULL;
    CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, &msg), SQLITE_OK);
    if (msg) fprintf(stderr, "%s\n", msg);
    sqlite3_free(msg);
    sqlite3_close(db);
}

static int64_t uncertainty_of(const char *path)
{
    kp_event_source *src = NULL;
    kp_error err = {0};
    CHECK_INT(kp_event_source_open(path, &src, &err), KPROF_OK);
    int64_t u = src ? kp_event_source_meta(src)->clock_uncertainty_ns : -2;
    kp_event_source_close(src);
    kp_error_clear(&err);
    return u;
}

/* kp_event_source_process_of_pid: a pid's first row with a rank, else its first row; NULL for a
 * pid no row has. The hosts' clock uncertainty: 0 without a hosts table and for one host, the
 * largest of the shifted hosts', -1 when a host's offset is unknown. */
static void test_pids_and_hosts(const char *path, const char *dir)
{
    char copy[600];
    snprintf(copy, sizeof copy, "%s/pids.kprof", dir);
    /* pid 100: row 1 (no rank), then rows 7 (rank 3) and 8 (rank 4), images it exec'd; pid 50:
     * two rows without a rank; pid 300: one row, rank 0. */
    edited_copy(path, copy,
                "INSERT INTO processes (id, pid, command, collector, rank) VALUES"
                " (7, 100, 'python train.py', 'cuda', 3), (8, 100, 'again', 'cuda', 4),"
                " (9, 50, 'first', 'cuda', NULL), (10, 50, 'second', 'cuda', NULL),"
                " (11, 300, 'ranked', 'cuda', 0);");
    kp_event_source *src = NULL;
    kp_error err = {0};
    CHECK_INT(kp_event_source_open(copy, &src, &err), KPROF_OK);
    if (!src) return;
    const kp_trace_process *p = kp_event_source_process_of_pid(src, 100);
    CHECK(p != NULL && p->id == 7 && p->rank == 3);
    p = kp_event_source_process_of_pid(src, 50);
    CHECK(p != NULL && p->id == 9 && p->rank == -1);
    p = kp_event_source_process_of_pid(src, 200);
    CHECK(p != NULL && p->id == 2);
    p = kp_event_source_process_of_pid(src, 300);
    CHECK(p != NULL && p->id == 11 && p->rank == 0);
    CHECK(kp_event_source_process_of_pid(src, 99) == NULL);
    CHECK(kp_event_source_process_of_pid(src, 301) == NULL);
    CHECK(kp_event_source_process_of_pid(src, -1) == NULL);
    CHECK_INT(kp_event_source_meta(src)->clock_uncertainty_ns, 0); /* no hosts table */
    kp_event_source_close(src);
    unlink(copy);

    static const char hosts[] =
        "CREATE TABLE hosts (id INTEGER PRIMARY KEY, host TEXT, boot_id TEXT, offset_ns INTEGER,"
        " uncertainty_ns INTEGER, pairs INTEGER, inputs TEXT);";
    char sql[1000];
    snprintf(sql, sizeof sql, "%s INSERT INTO hosts VALUES (1, 'a', 'ba', 0, 0, 4, 'a.kprof');",
             hosts);
    edited_copy(path, copy, sql); /* one host: nothing shifted */
    CHECK_INT(uncertainty_of(copy), 0);
    unlink(copy);
    snprintf(sql, sizeof sql,
             "%s INSERT INTO hosts VALUES (1, 'a', 'ba', 0, 0, 4, 'a.kprof'),"
             " (2, 'b', 'bb', 123456, 4000, 4, 'b.kprof'), (3, 'c', 'bc', -5, 2500, 4, 'c');",
             hosts);
    edited_copy(path, copy, sql);
    CHECK_INT(uncertainty_of(copy), 4000);
    unlink(copy);
    snprintf(sql, sizeof sql,
             "%s INSERT INTO hosts VALUES (1, 'a', 'ba', 0, 0, 4, 'a.kprof'),"
             " (2, 'b', 'bb', 123456, 4000, 4, 'b.kprof'), (3, NULL, NULL, 0, NULL, 0, 'v1');",
             hosts);
    edited_copy(path, copy, sql); /* a format 1 input: its offset unknown */
    CHECK_INT(uncertainty_of(copy), -1);
    unlink(copy);
    kp_error_clear(&err);
}

int main(void)
{
    char dir[] = "/tmp/kp_test_source_XXXXXX", records[600], path[600], cmd[700];
    if (!mkdtemp(dir)) return 1;
    snprintf(records, sizeof records, "%s/records", dir);
    snprintf(path, sizeof path, "%s/t.kprof", dir);
    mkdir(records, 0700);
    write_records(records);
    kp_trace_run run = {.command = "prog --flag",
                        .start_ns = 100,
                        .end_ns = 5000,
                        .exit_status = 3,
                        .collectors = "cuda,opencl"};
    kp_trace_summary sum;
    kp_error err = {0};
    CHECK_INT(kp_trace_ingest_dir(path, records, &run, NULL, &sum, &err), KPROF_OK);
    CHECK_INT(sum.events, 8);
    CHECK_INT(sum.metrics, 0);
    test_reading(path);
    test_no_metrics(path);
    test_metrics(dir);
    test_damaged(path, dir);
    test_pids_and_hosts(path, dir);
    test_launches_in_any_order(dir);
    kp_error_clear(&err);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    return kp_test_failures ? 1 : 0;
}
