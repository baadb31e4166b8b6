/*
 * inproc_app.c — a program that profiles itself with libkprof, for tests/cli/test_inproc.py. It
 * is built against libkprof.so as a user's program would be. Modes:
 *
 *   inproc_app save OUT          a session: nested scopes on two threads, work metrics, a user
 *                                metric; the result's numbers printed as JSON on stdout, the
 *                                trace saved to OUT.kprof and every export beside it
 *                                (OUT.chrome.json, OUT.pftrace, OUT.hatchet.json, OUT.tree.json,
 *                                OUT.tree.csv)
 *   inproc_app auto N            N "tick" scopes inside a "main" one, and no kprof_start: for
 *                                KPROF=1, which records them and saves the trace at exit
 *   inproc_app threads T N [OUT] T threads x N scopes in one session: prints the scopes the
 *                                result holds and those counted lost (and saves OUT)
 *   inproc_app repeat            kprof_profile_repeat: prints the distributions
 *   inproc_app cuda              asks for the CUDA collector: prints kprof_start's status and
 *                                message
 *   inproc_app cuda-api          the CUDA calls' argument checks, and what they say on a
 *                                machine without CUDA: one "CALL: STATUS: message" line each
 */
#define _GNU_SOURCE
#include <kprof.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __thread volatile double sink; /* per thread: threads share no data here */

static void leaf(int i)
{
    KPROF_SCOPE("leaf");
    for (int k = 0; k < 200; k++)
        sink += k * i;
}

static void layer(int i)
{
    KPROF_SCOPE_WORK("layer", 1e6, 4e6);
    leaf(i);
    leaf(i + 1);
}

static void *thread_main(void *arg)
{
    int steps = *(int *)arg;
    for (int i = 0; i < steps; i++) {
        KPROF_SCOPE_AS(step, "step");
        layer(i);
        kprof_scope_metric(&step, "samples", 64);
    }
    return NULL;
}

static int fail(const char *what)
{
    fprintf(stderr, "inproc_app: %s: %s\n", what, kprof_last_error());
    return 1;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static int save_all(kprof_result *r, const char *out)
{
    static const char *const suffix[KPROF_FORMAT_COUNT_] = {
        [KPROF_FORMAT_TRACE] = ".kprof",      [KPROF_FORMAT_CHROME] = ".chrome.json",
        [KPROF_FORMAT_PERFETTO] = ".pftrace", [KPROF_FORMAT_HATCHET] = ".hatchet.json",
        [KPROF_FORMAT_JSON] = ".tree.json",   [KPROF_FORMAT_CSV] = ".tree.csv"};
    for (int f = 0; f < KPROF_FORMAT_COUNT_; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s", out, suffix[f]);
        if (kprof_result_write(r, (kprof_format)f, path, 0) != KPROF_OK)
            return fail("kprof_result_write");
    }
    return 0;
}

static int mode_save(const char *out)
{
    if (kprof_start(NULL) != KPROF_OK) return fail("kprof_start");
    int steps = 5;
    pthread_t t;
    pthread_create(&t, NULL, thread_main, &steps);
    thread_main(&steps);
    pthread_join(t, NULL);
    kprof_result *r = NULL;
    if (kprof_stop(&r) != KPROF_OK) return fail("kprof_stop");
    kprof_summary s = KPROF_SUMMARY_INIT;
    kprof_result_summary(r, &s);
    printf("{\"events\": %llu, \"dropped\": %llu, \"threads\": %u, \"rows\": [", s.events,
           s.dropped, s.threads);
    size_t n = 0;
    const kprof_row *rows = NULL;
    if (kprof_result_key_averages(r, KPROF_BY_PATH, &rows, &n) != KPROF_OK)
        return fail("kprof_result_key_averages");
    for (size_t i = 0; i < n; i++) {
        const kprof_row *row = kprof_row_at(rows, i);
        printf("%s{\"path\": ", i ? ", " : "");
        json_string(row->path);
        printf(", \"calls\": %llu, \"total_s\": %.9g, \"flops\": %.17g, \"bytes\": %.17g, "
               "\"gflops_per_s\": %.17g, \"gb_per_s\": %.17g}",
               row->calls, row->total_s, row->flops, row->bytes, row->gflops_per_s, row->gb_per_s);
    }
    printf("]}\n");
    int rc = save_all(r, out);
    kprof_result_destroy(r);
    return rc;
}

static int mode_auto(int n)
{
    KPROF_SCOPE("main");
    for (int i = 0; i < n; i++) {
        KPROF_SCOPE("tick");
        sink += i;
    }
    printf("recording %d\n", kprof_recording());
    return 0;
}

typedef struct worker {
    pthread_t thread;
    long n;
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    for (long i = 0; i < w->n; i++) {
        KPROF_SCOPE("scope");
        sink += 1;
    }
    return NULL;
}

static int mode_threads(int t, long n, const char *out)
{
    worker *w = calloc((size_t)t, sizeof *w);
    if (!w || kprof_start(NULL) != KPROF_OK) return fail("kprof_start");
    for (int i = 0; i < t; i++) {
        w[i].n = n;
        pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < t; i++)
        pthread_join(w[i].thread, NULL);
    kprof_result *r = NULL;
    if (kprof_stop(&r) != KPROF_OK) return fail("kprof_stop");
    size_t nrows = 0;
    const kprof_row *rows = NULL;
    if (kprof_result_key_averages(r, KPROF_BY_NAME, &rows, &nrows) != KPROF_OK)
        return fail("kprof_result_key_averages");
    kprof_summary s = KPROF_SUMMARY_INIT;
    kprof_result_summary(r, &s);
    printf("{\"calls\": %llu, \"dropped\": %llu, \"threads\": %u}\n",
           nrows ? kprof_row_at(rows, 0)->calls : 0ull, s.dropped, s.threads);
    int rc = out ? save_all(r, out) : 0;
    kprof_result_destroy(r);
    free(w);
    return rc;
}

static void repeat_body(void *arg)
{
    (void)arg;
    layer(1);
}

static int mode_repeat(void)
{
    kprof_repeat_options o = KPROF_REPEAT_OPTIONS_INIT;
    o.max_iterations = 20;
    kprof_result *r = NULL;
    if (kprof_profile_repeat(repeat_body, NULL, 30.0, &o, &r) != KPROF_OK)
        return fail("kprof_profile_repeat");
    kprof_result_print(r, KPROF_VIEW_DISTRIBUTIONS, stdout);
    kprof_result_destroy(r);
    return 0;
}

static int work(void *ctx, const kprof_launch *launch, double *flops, double *bytes)
{
    (void)ctx;
    (void)launch;
    *flops = 1;
    *bytes = 1;
    return KPROF_WORK_FLOPS | KPROF_WORK_BYTES;
}

static void nothing(void *arg)
{
    (void)arg;
}

static void say(const char *call, kprof_status st)
{
    printf("%s: %s: %s\n", call, kprof_status_name(st), st == KPROF_OK ? "" : kprof_last_error());
}

static int mode_cuda_api(void)
{
    say("hook-null-name", kprof_kernel_hook(NULL, work, NULL));
    say("hook-empty-name", kprof_kernel_hook("", work, NULL));
    say("hook", kprof_kernel_hook("saxpy", work, NULL));
    say("hook-again", kprof_kernel_hook("saxpy", work, NULL));
    say("unhook", kprof_kernel_hook("saxpy", NULL, NULL));
    say("unhook-unknown", kprof_kernel_hook("never", NULL, NULL));
    char name[32];
    kprof_status st = KPROF_OK;
    int i = 0;
    for (; i < 300 && st == KPROF_OK; i++) {
        snprintf(name, sizeof name, "k%d", i);
        st = kprof_kernel_hook(name, work, NULL);
    }
    printf("hooks-accepted: %d\n", i - 1);
    say("hook-too-many", st);
    for (int k = 0; k < 300; k++) {
        snprintf(name, sizeof name, "k%d", k);
        kprof_kernel_hook(name, NULL, NULL);
    }
    say("capture-end-unopened", kprof_capture_end());
    say("capture-null", kprof_capture_begin(NULL));
    kprof_benchmark_result r = KPROF_BENCHMARK_RESULT_INIT;
    say("benchmark-null", kprof_benchmark(NULL, NULL, NULL, &r));
    kprof_benchmark_options bad = KPROF_BENCHMARK_OPTIONS_INIT;
    bad.size = 0;
    say("benchmark-bad-size", kprof_benchmark(nothing, NULL, &bad, &r));
    kprof_benchmark_options neg = KPROF_BENCHMARK_OPTIONS_INIT;
    neg.budget_s = -1;
    say("benchmark-bad-budget", kprof_benchmark(nothing, NULL, &neg, &r));
    /* Without CUDA: what each says. */
    say("benchmark", kprof_benchmark(nothing, NULL, NULL, &r));
    say("capture", kprof_capture_begin("region"));
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "save") == 0 && argc > 2) return mode_save(argv[2]);
    if (strcmp(mode, "auto") == 0 && argc > 2) return mode_auto(atoi(argv[2]));
    if (strcmp(mode, "threads") == 0 && argc > 3)
        return mode_threads(atoi(argv[2]), atol(argv[3]), argc > 4 ? argv[4] : NULL);
    if (strcmp(mode, "repeat") == 0) return mode_repeat();
    if (strcmp(mode, "cuda-api") == 0) return mode_cuda_api();
    if (strcmp(mode, "cuda") == 0) {
        kprof_options o = KPROF_OPTIONS_INIT;
        o.collectors = KPROF_COLLECT_CUDA;
        kprof_status st = kprof_start(&o);
        printf("%s: %s\n", kprof_status_name(st), kprof_last_error());
        return 0;
    }
    fprintf(stderr, "usage: inproc_app save OUT | auto N | threads T N [OUT] | repeat | cuda\n");
    return 2;
}
