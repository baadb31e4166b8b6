/*
 * chrome.c — a trace as Chrome Trace Event JSON (the object form), which Perfetto and
 * chrome://tracing open: a process per traced process with its host threads (API calls, NVTX
 * ranges as slices, marks as instants), a process per (traced process, GPU) with one track per
 * stream or queue, and a flow arrow from each API call to the device work it launched (v2 flows:
 * bind_id with flow_out on the call, flow_in on the kernel). Times are microseconds from the
 * trace's start. Written straight to a file, so a million events need little memory.
 *
 * A process with a rank in a distributed job (base/job.h) says it first: "rank 1 · pid 4242
 * (python train.py)", its GPUs "rank 1 · GPU 1 (pid 4242)" and their streams "rank 1 · GPU 1 ·
 * stream 7"; a process without a rank keeps "4242 python train.py", "GPU 1 (pid 4242)" and
 * "stream 7". An OpenCL device, which may be a CPU, is a "device" and its queues "queue 1" (as
 * in the Perfetto export and the report).
 *
 * Pids are written through export/pid_map.h, so every one fits the 32 bits viewers read: a
 * trace's own where they fit, and the GPU "processes" 2^30 + 16·pid + device where that fits and
 * is clear of the pids (else ids of their own, free of every pid).
 */
#define _GNU_SOURCE
#include "export/chrome.h"
#include "core/event.h"
#include "base/json.h"
#include "base/util.h"
#include "export/pid_map.h"
#include "store/event_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

/* Flow ids: the process row and the correlation, below 2^53 so JavaScript keeps them exact. */
static uint64_t kp_flow_id(int64_t process, int64_t corr)
{
    return ((uint64_t)process << 30) + ((uint64_t)corr & ((1u << 30) - 1));
}

/* The events go through a buffer of our own, without printf or stdio's per-call work: the
 * export writes millions of numbers. With a FILE it drains there every KP_OUT_CHUNK bytes;
 * without one it grows and keeps everything (the second half of a threaded export). */
#define KP_OUT_CHUNK (1u << 20)

typedef struct kp_out {
    FILE *f;
    char *buf;
    size_t len, cap;
    int failed; /* out of memory */
} kp_out;

static void kp_out_drain(kp_out *o)
{
    if (o->f && o->len) fwrite_unlocked(o->buf, 1, o->len, o->f);
    if (o->f) o->len = 0;
}

/* Room for n more bytes; 0 when there is none (memory is out, and the output is marked failed). */
static int kp_out_room(kp_out *o, size_t n)
{
    if (o->len + n <= o->cap) return 1;
    kp_out_drain(o);
    if (o->len + n <= o->cap) return 1;
    size_t cap = o->cap ? o->cap : KP_OUT_CHUNK;
    while (cap < o->len + n)
        cap *= 2;
    char *b = realloc(o->buf, cap);
    if (!b) {
        o->failed = 1;
        return 0;
    }
    o->buf = b;
    o->cap = cap;
    return 1;
}

static void kp_out_bytes(kp_out *o, const char *p, size_t n)
{
    if (!kp_out_room(o, n)) return;
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void kp_put(kp_out *o, const char *s)
{
    kp_out_bytes(o, s, strlen(s));
}

/* A string literal, its length known at compile time. */
#define KP_PUT_LIT(o, lit) kp_out_bytes((o), (lit), sizeof(lit) - 1)

static void kp_put_u64(kp_out *o, uint64_t v)
{
    char b[24];
    int i = 24;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    kp_out_bytes(o, b + i, (size_t)(24 - i));
}

static void kp_put_i64(kp_out *o, int64_t v)
{
    if (v < 0) {
        KP_PUT_LIT(o, "-");
        kp_put_u64(o, (uint64_t)(-(v + 1)) + 1);
    } else {
        kp_put_u64(o, (uint64_t)v);
    }
}

/* ns as µs with three decimals. */
static void kp_put_us(kp_out *o, int64_t ns_signed)
{
    uint64_t ns = (uint64_t)ns_signed;
    if (ns_signed < 0) {
        KP_PUT_LIT(o, "-");
        ns = 0 - ns; /* INT64_MIN too */
    }
    kp_put_u64(o, ns / 1000);
    char frac[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                    (char)('0' + ns % 10)};
    kp_out_bytes(o, frac, sizeof frac);
}

static void kp_quote(FILE *f, const char *text)
{
    kp_str s = {0};
    kp_json_quote(&s, text ? text : "");
    fputs(s.data ? s.data : "\"\"", f);
    kp_str_free(&s);
}

/* Names are JSON-quoted once, with their lengths: every event writes one. */
static const kp_str kp_unknown_name = {.data = "\"?\"", .len = 3};

static int64_t kp_i64_of(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* What an event needs (metrics cost nothing in a trace without them). */
static const unsigned kp_chrome_fields =
    KP_EVENT_FIELD_PID | KP_EVENT_FIELD_STREAM | KP_EVENT_FIELD_QUEUE | KP_EVENT_FIELD_CALL |
    KP_EVENT_FIELD_KERNEL | KP_EVENT_FIELD_PAYLOAD | KP_EVENT_FIELD_LAUNCH | KP_EVENT_FIELD_METRICS;

static void kp_put_double(kp_out *o, double v)
{
    char b[40];
    kp_json_format_double(v, b, sizeof b);
    kp_put(o, b);
}

/* Whether a user metric's key is the name of an argument kprof writes itself: then it goes in as
 * "user:KEY", so no slice has an argument twice. */
static int kp_chrome_own_arg(const char *key)
{
    static const char *const own[] = {"correlation",
                                      "grid",
                                      "block",
                                      "global_size",
                                      "registers",
                                      "shared_bytes",
                                      "max_threadgroup_size",
                                      "preferred_multiple",
                                      "static_local_bytes",
                                      "private_bytes",
                                      "queued_to_start_us",
                                      "submitted_to_start_us",
                                      "launch_to_start_us",
                                      "bytes",
                                      "range_id",
                                      "flops",
                                      "gflop_per_s",
                                      "gb_per_s"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (strcmp(key, own[i]) == 0) return 1;
    return 0;
}

/* Every event the iterator gives, each after ",\n" (the metadata comes first). Whether reading
 * failed, the iterator's close says. */
static void kp_chrome_events(kp_event_iter *it, const kp_pid_map *pids, const kp_str *names,
                             const char *const *texts, size_t nnames, int64_t t0, kp_out *f)
{
    kp_trace_event ev;
    /* The last lookups: runs of one thread and one stream are the rule. */
    int64_t last_pid = 0, last_id = kp_pid_map_pid(pids, 0);
    int64_t last_gpu_pid = 0, last_gpu_id = -1;
    uint32_t last_device = 0;
    while (kp_event_iter_next(it, &ev)) {
        const kp_event *e = &ev.e;
        int kind = e->kind;
        int64_t t_start = kp_ns_diff(e->start_ns, t0);
        int64_t t_dur = kp_ns_diff(e->end_ns, e->start_ns);
        int has_corr = (e->known & KP_EVENT_HAS_CORRELATION) != 0;
        int64_t corr = (int64_t)e->correlation;
        const kp_str *name = e->name > 0 && e->name < nnames && names[e->name].data
                                 ? &names[e->name]
                                 : &kp_unknown_name;
        unsigned flags = kp_event_kind_flags(kind);
        int device_op = (flags & KP_EVENT_F_DEVICE) != 0;
        int instant = (flags & KP_EVENT_F_INSTANT) != 0;
        const char *cat = kp_event_kind_category(kind);
        if (!cat) cat = "other";
        int64_t epid;
        if (device_op) {
            if (last_gpu_id < 0 || e->pid != last_gpu_pid || e->device != last_device) {
                last_gpu_pid = e->pid;
                last_device = e->device;
                last_gpu_id = kp_pid_map_gpu(pids, e->pid, e->device);
            }
            epid = last_gpu_id;
        } else {
            if (e->pid != last_pid) {
                last_pid = e->pid;
                last_id = kp_pid_map_pid(pids, e->pid);
            }
            epid = last_id;
        }
        int64_t etid = device_op ? (int64_t)e->stream : e->tid;
        KP_PUT_LIT(f, ",\n");
        kp_put(f, instant ? "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"" : "{\"ph\":\"X\",\"cat\":\"");
        kp_put(f, cat);
        KP_PUT_LIT(f, "\",\"pid\":");
        kp_put_i64(f, epid);
        KP_PUT_LIT(f, ",\"tid\":");
        kp_put_i64(f, etid);
        KP_PUT_LIT(f, ",\"ts\":");
        kp_put_us(f, t_start);
        if (!instant) {
            KP_PUT_LIT(f, ",\"dur\":");
            kp_put_us(f, t_dur);
        }
        KP_PUT_LIT(f, ",\"name\":");
        kp_out_bytes(f, name->data, name->len);
        if (instant) {
            KP_PUT_LIT(f, "}");
            continue;
        }
        /* Correlations are numbered per collector: a process image is the scope. */
        uint64_t flow = has_corr ? kp_flow_id(e->process, corr) : 0;
        int launched_by = has_corr && device_op; /* the call that launched it is known */
        int has_grid = kind == KP_EVENT_KERNEL && (e->known & KP_EVENT_HAS_GEOMETRY);
        int has_bytes = (ev.has & KP_TRACE_HAS_BYTES) != 0;
        int has_range = kind == KP_EVENT_RANGE && (ev.has & KP_TRACE_HAS_RANGE_ID);
        int has_flops = (e->known & KP_EVENT_HAS_FLOPS) != 0;
        int has_metric_bytes = (e->known & KP_EVENT_HAS_METRIC_BYTES) != 0;
        int has_metrics = has_flops || has_metric_bytes || ev.nmetrics;
        /* Launch latency and queue waits: the start minus when it was queued, submitted and
         * when the call that launched it began. */
        int has_wait[3] = {(e->known & KP_EVENT_HAS_QUEUED) != 0,
                           (e->known & KP_EVENT_HAS_SUBMITTED) != 0,
                           (ev.has & KP_TRACE_HAS_LAUNCH) != 0};
        int64_t wait_from[3] = {e->queued_ns, e->submitted_ns, ev.launch_start_ns};
        int has_waits = device_op && (has_wait[0] || has_wait[1] || has_wait[2]);
        if (launched_by) {
            KP_PUT_LIT(f, ",\"bind_id\":");
            kp_put_u64(f, flow);
            KP_PUT_LIT(f, ",\"flow_in\":true");
        } else if (has_corr && kind == KP_EVENT_API && (ev.has & KP_TRACE_LAUNCHED)) {
            KP_PUT_LIT(f, ",\"bind_id\":");
            kp_put_u64(f, flow);
            KP_PUT_LIT(f, ",\"flow_out\":true");
        }
        /* Only what the event has: an empty args object would cost 10 bytes a million times. */
        if (!launched_by && !has_grid && !has_bytes && !has_range && !has_waits && !has_metrics) {
            KP_PUT_LIT(f, "}");
            continue;
        }
        KP_PUT_LIT(f, ",\"args\":{");
        const char *sep = "";
        /* A call's correlation is in its flow; device work carries it for people to read. */
        if (launched_by) {
            KP_PUT_LIT(f, "\"correlation\":");
            kp_put_i64(f, corr);
            sep = ",";
        }
        if (has_grid && kp_event_runtime_groups(e)) {
            /* No local size: the runtime chose the groups, which no query reveals; the grid
             * holds the work-items. What is not known is null, not a made-up number. */
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"grid\":null,\"block\":null,\"global_size\":[");
            for (int c = 0; c < 3; c++) {
                if (c) KP_PUT_LIT(f, ",");
                kp_put_i64(f, kp_i64_of(e->grid[c]));
            }
            KP_PUT_LIT(f, "]");
            sep = ",";
        } else if (has_grid) {
            static const char *const keys[] = {"\"grid\":[", ",", ",", "],\"block\":[", ",", ","};
            uint64_t groups[3];
            kp_event_groups(e, groups);
            kp_put(f, sep);
            for (int c = 0; c < 6; c++) {
                kp_put(f, keys[c]);
                kp_put_i64(f, c < 3 ? kp_i64_of(groups[c]) : (int64_t)e->group[c - 3]);
            }
            KP_PUT_LIT(f, "]");
            sep = ",";
        }
        if (has_grid && (e->known & KP_EVENT_HAS_REGISTERS)) { /* OpenCL: unknown */
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"registers\":");
            kp_put_i64(f, e->registers);
            sep = ",";
        }
        if (has_grid && (e->known & KP_EVENT_HAS_SHARED)) {
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"shared_bytes\":");
            kp_put_i64(f,
                       kp_i64_add_sat(kp_i64_of(e->static_shared), kp_i64_of(e->dynamic_shared)));
            sep = ",";
        }
        if (has_grid && (e->known & KP_EVENT_HAS_CL_REFLECTION)) {
            /* An OpenCL kernel's reflection on its device, named as `kprof run --json` does. */
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"max_threadgroup_size\":");
            kp_put_i64(f, e->max_threads_per_group);
            KP_PUT_LIT(f, ",\"preferred_multiple\":");
            kp_put_i64(f, e->group_multiple);
            KP_PUT_LIT(f, ",\"static_local_bytes\":");
            kp_put_i64(f, kp_i64_of(e->cl_local_mem));
            KP_PUT_LIT(f, ",\"private_bytes\":");
            kp_put_i64(f, kp_i64_of(e->cl_private_mem));
            sep = ",";
        }
        static const char *const waits[] = {
            "\"queued_to_start_us\":", "\"submitted_to_start_us\":", "\"launch_to_start_us\":"};
        for (int c = 0; has_waits && c < 3; c++) {
            if (!has_wait[c]) continue;
            kp_put(f, sep);
            kp_put(f, waits[c]);
            int64_t ns = kp_ns_diff(e->start_ns, wait_from[c]);
            kp_put_us(f, ns == INT64_MIN ? INT64_MIN + 1 : ns); /* kp_put_us negates */
            sep = ",";
        }
        if (has_metric_bytes) { /* what it moved, by its metric (a copy's size stands aside) */
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"bytes\":");
            kp_put_double(f, e->metrics.bytes);
            sep = ",";
        } else if (has_bytes) {
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"bytes\":");
            kp_put_i64(f, kp_i64_of(e->bytes));
            sep = ",";
        }
        if (has_range) {
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"range_id\":");
            kp_put_i64(f, (int64_t)e->range_id);
            sep = ",";
        }
        /* The metrics, and the rates over the slice's own time (per ns: GFLOP/s and GB/s). */
        if (has_flops) {
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"flops\":");
            kp_put_double(f, e->metrics.flops);
            if (t_dur > 0) {
                KP_PUT_LIT(f, ",\"gflop_per_s\":");
                kp_put_double(f, e->metrics.flops / (double)t_dur);
            }
            sep = ",";
        }
        if (has_metric_bytes && t_dur > 0) {
            kp_put(f, sep);
            KP_PUT_LIT(f, "\"gb_per_s\":");
            kp_put_double(f, e->metrics.bytes / (double)t_dur);
            sep = ",";
        }
        for (size_t i = 0; i < ev.nmetrics; i++) {
            uint32_t key = ev.metrics[i].key;
            const char *text = key < nnames ? texts[key] : NULL;
            kp_put(f, sep);
            if (!text) {
                KP_PUT_LIT(f, "\"?\"");
            } else if (kp_chrome_own_arg(text)) {
                KP_PUT_LIT(f, "\"user:");
                kp_out_bytes(f, names[key].data + 1, names[key].len - 1); /* past its quote */
            } else {
                kp_out_bytes(f, names[key].data, names[key].len);
            }
            KP_PUT_LIT(f, ":");
            kp_put_double(f, ev.metrics[i].value);
            sep = ",";
        }
        KP_PUT_LIT(f, "}}");
    }
}

/* The upper half of the events, read on a second core through an iterator with a connection of
 * its own, into memory (a temporary file cost a fifth of the export in the kernel's copies:
 * written once, read back, written again). */
typedef struct kp_chrome_half {
    kp_event_iter *it;
    const kp_pid_map *pids;
    int64_t t0;
    const kp_str *names;
    const char *const *texts;
    size_t nnames;
    kp_out out; /* no FILE: it keeps everything */
} kp_chrome_half;

static void *kp_chrome_half_run(void *p)
{
    kp_chrome_half *h = p;
    kp_chrome_events(h->it, h->pids, h->names, h->texts, h->nnames, h->t0, &h->out);
    return NULL;
}

kprof_status kp_export_chrome(kp_event_source *src, FILE *f, kp_error *err)
{
    int64_t t0 = kp_event_source_meta(src)->start_ns;
    kprof_status st = KPROF_OK;
    if (t0 == 0 && (st = kp_event_source_span(src, &t0, NULL, err)) != KPROF_OK) return st;
    /* The tracks first (they also make the source's index of launching calls). */
    const kp_trace_thread *threads;
    const kp_trace_queue *queues;
    size_t nthreads, nqueues;
    if ((st = kp_event_source_threads(src, &threads, &nthreads, err)) != KPROF_OK ||
        (st = kp_event_source_queues(src, &queues, &nqueues, err)) != KPROF_OK)
        return st;
    kp_pid_map pids;
    if ((st = kp_pid_map_make(&pids, src, 1, err)) != KPROF_OK) return st;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"kprof " KPROF_VERSION_STRING
          "\"},\"traceEvents\":[\n",
          f);
    /* Events always follow a process's name record (every event has a process row), so the
     * event writers can start every record with ",\n". */
    int first = 1;
#define KP_SEP() (first ? (first = 0, "") : ",\n")

    /* Names: processes (a pid once, in pid order, by the row that stands for it:
     * kp_event_source_process_of_pid), their threads, GPU tracks. */
    for (size_t i = 0; i < pids.npids; i++) {
        const kp_trace_process *p = kp_event_source_process_of_pid(src, pids.pids[i]);
        if (!p) continue; /* a pid only events name */
        char name[600];
        if (p->rank >= 0)
            snprintf(name, sizeof name, "rank %d · pid %lld (%s)", p->rank, (long long)p->pid,
                     p->command);
        else
            snprintf(name, sizeof name, "%lld %s", (long long)p->pid, p->command);
        fprintf(f, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"args\":{\"name\":",
                KP_SEP(), (long long)kp_pid_map_pid(&pids, p->pid));
        kp_quote(f, name);
        fputs("}}", f);
    }
    for (size_t i = 0; i < nthreads; i++)
        fprintf(f,
                "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,\"args\":{"
                "\"name\":\"host thread %lld\"}}",
                KP_SEP(), (long long)kp_pid_map_pid(&pids, threads[i].pid),
                (long long)threads[i].tid, (long long)threads[i].tid);
    int64_t last_gpu = -1;
    for (size_t i = 0; i < nqueues; i++) {
        int64_t pid = queues[i].pid, dev = queues[i].device, stream = queues[i].stream;
        int64_t gp = kp_pid_map_gpu(&pids, pid, queues[i].device);
        /* A rank's tracks say it first: "rank 1 · GPU 1 · stream 7". */
        /* An OpenCL device (perhaps a CPU) is a "device" and its queue a "queue", as in the
         * Perfetto export and the report. */
        const char *device_word = queues[i].opencl ? "device" : "GPU";
        const char *queue_word = queues[i].opencl ? "queue" : "stream";
        char rank[32] = "", gpu[32] = "";
        const kp_trace_process *p = kp_event_source_process_of_pid(src, pid);
        if (p && p->rank >= 0) {
            snprintf(rank, sizeof rank, "rank %d · ", p->rank);
            snprintf(gpu, sizeof gpu, "%s %lld · ", device_word, (long long)dev);
        }
        if (gp != last_gpu)
            fprintf(f,
                    "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%lld,\"args\":{\"name\":"
                    "\"%s%s %lld (pid %lld)\"}}",
                    KP_SEP(), (long long)gp, rank, device_word, (long long)dev, (long long)pid);
        last_gpu = gp;
        fprintf(f,
                "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%lld,\"tid\":%lld,\"args\":{"
                "\"name\":\"%s%s%s %lld\"}}",
                KP_SEP(), (long long)gp, (long long)stream, rank, gpu, queue_word,
                (long long)stream);
    }
#undef KP_SEP

    /* Events in storage order (the format needs no order), names by id. */
    size_t nnames;
    const char *const *texts = kp_event_source_strings(src, &nnames);
    kp_str *names = calloc(nnames ? nnames : 1, sizeof *names);
    if (!names) {
        kp_pid_map_free(&pids);
        return kp_error_nomem(err);
    }
    for (size_t id = 1; id < nnames; id++)
        if (texts[id]) kp_json_quote(&names[id], texts[id]);
    int64_t max_id = 0;
    kp_event_iter *lower = NULL;
    kp_chrome_half half = {
        .t0 = t0, .pids = &pids, .names = names, .texts = texts, .nnames = nnames};
    pthread_t worker;
    int threaded = 0;
    st = kp_event_source_last_id(src, &max_id, err);
    /* Two halves on two cores when the trace is large: the export is CPU-bound. */
    if (st == KPROF_OK && max_id > 200000) {
        kp_event_filter upper = {.first_id = max_id / 2 + 1,
                                 .last_id = max_id,
                                 .fields = kp_chrome_fields,
                                 .flags = KP_EVENT_ITER_OWN_CONNECTION};
        threaded = kp_event_iter_open(src, &upper, &half.it, NULL) == KPROF_OK &&
                   pthread_create(&worker, NULL, kp_chrome_half_run, &half) == 0;
    }
    kp_event_filter main_part = {
        .first_id = 1, .last_id = threaded ? max_id / 2 : 0, .fields = kp_chrome_fields};
    kp_out main_out = {.f = f};
    if (st == KPROF_OK) st = kp_event_iter_open(src, &main_part, &lower, err);
    if (st == KPROF_OK) {
        kp_chrome_events(lower, &pids, names, texts, nnames, t0, &main_out);
        st = kp_event_iter_close(lower, err);
    }
    kp_out_drain(&main_out);
    if (main_out.failed && st == KPROF_OK) st = kp_error_nomem(err);
    if (threaded) {
        pthread_join(worker, NULL);
        kprof_status half_st = kp_event_iter_close(half.it, err);
        half.it = NULL;
        if (st == KPROF_OK) st = half_st;
        if (half.out.failed && st == KPROF_OK)
            st = kp_error_set(err, KPROF_NOMEM, "out of memory for the export's second half");
        if (st == KPROF_OK && half.out.len) fwrite_unlocked(half.out.buf, 1, half.out.len, f);
    }
    kp_event_iter_close(half.it, NULL); /* opened, but its thread never started */
    free(main_out.buf);
    free(half.out.buf);
    for (size_t i = 0; i < nnames; i++)
        kp_str_free(&names[i]);
    free(names);
    kp_pid_map_free(&pids);
    if (st != KPROF_OK) return st;
    fputs("\n]}\n", f);
    return ferror(f) ? kp_error_set(err, KPROF_IO, "writing the export failed") : KPROF_OK;
}
