/*
 * scopes_unit.c — every piece of instrumentation include/kprof.h offers, for the test that
 * compiles it with and without -DKPROF_DISABLE (tests/cli/test_inproc.py): disabled, its object
 * file must name no kprof_ symbol at all, defined or referenced, and with -DKPROF_UNIT_MAIN it
 * links without libkprof; enabled, it must reference the flag, the out-of-line halves and the
 * session and result functions. Also compiled as C++ (the RAII scope).
 */
#include <kprof.h>

double instrumented(const double *v, int n);

double instrumented(const double *v, int n)
{
    KPROF_SCOPE("sum");
    KPROF_SCOPE_WORK("work", 2.0 * n, 8.0 * n);
    KPROF_SCOPE_AS(named, "named");
    kprof_scope_metric(&named, "n", n);
    kprof_scope_work(&named, n, n);
    kprof_scope s = kprof_scope_begin("explicit");
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    kprof_scope_end(&s);
    return sum;
}

/* Every other function of the header, once: disabled, none may leave a symbol either (the
 * program then links without -lkprof). Returns the number of answers that are not what the
 * header says a compiled-out kprof answers (0 under KPROF_DISABLE). */
static void workload(void *arg)
{
    (void)arg;
}

int everything(void);

int everything(void)
{
    int wrong = 0;
    wrong += kprof_strerror(KPROF_IO)[0] == 0;
    wrong += kprof_status_name(KPROF_IO)[0] != 'I';
    wrong += kprof_status_exit_code(KPROF_IO) != 1;
    wrong += kprof_version()[0] == 0;
    wrong += kprof_last_error() == NULL;
    kprof_options o = KPROF_OPTIONS_INIT;
    wrong += kprof_start(&o) != KPROF_UNAVAILABLE;
    wrong += kprof_recording() != 0;
    wrong += kprof_intern("x") == NULL;
    kprof_result *r = (kprof_result *)&o; /* must be set to NULL */
    wrong += kprof_stop(&r) != KPROF_INVALID || r != NULL;
    kprof_summary s = KPROF_SUMMARY_INIT;
    wrong += kprof_result_summary(r, &s) != KPROF_INVALID;
    size_t n = 1;
    const kprof_row *rows = (const kprof_row *)&o; /* must be set to NULL */
    wrong += kprof_result_key_averages(r, KPROF_BY_NAME, &rows, &n) != KPROF_INVALID ||
             rows != NULL || n != 0;
    wrong += kprof_row_at(NULL, 3) != NULL;
    n = 1;
    const kprof_node *nodes = (const kprof_node *)&o;
    wrong += kprof_result_tree(r, &nodes, &n) != KPROF_INVALID || nodes != NULL || n != 0;
    wrong += kprof_node_at(NULL, 3) != NULL;
    wrong += kprof_result_events(r, NULL, NULL) != KPROF_INVALID;
    n = 1;
    const kprof_distribution *dists = (const kprof_distribution *)&o;
    wrong += kprof_result_distributions(r, &dists, &n) != KPROF_INVALID || dists != NULL || n != 0;
    wrong += kprof_distribution_at(NULL, 3) != NULL;
    wrong += kprof_result_print(r, KPROF_VIEW_TREE, stdout) != KPROF_INVALID;
    wrong += kprof_result_write(r, KPROF_FORMAT_CHROME, "x.json", 0) != KPROF_INVALID;
    kprof_result_destroy(r);
    kprof_repeat_options ro = KPROF_REPEAT_OPTIONS_INIT;
    r = (kprof_result *)&o;
    wrong += kprof_profile_repeat(workload, NULL, 0.1, &ro, &r) != KPROF_UNAVAILABLE || r != NULL;
    wrong += kprof_kernel_hook("k", NULL, NULL) != KPROF_UNAVAILABLE;
    wrong += kprof_capture_begin("c") != KPROF_UNAVAILABLE;
    wrong += kprof_capture_end() != KPROF_UNAVAILABLE;
    kprof_benchmark_options bo = KPROF_BENCHMARK_OPTIONS_INIT;
    kprof_benchmark_result br = KPROF_BENCHMARK_RESULT_INIT;
    wrong += kprof_benchmark(workload, NULL, &bo, &br) != KPROF_UNAVAILABLE;
    double a[2] = {1, 2};
    kprof_compare_options co = KPROF_COMPARE_OPTIONS_INIT;
    kprof_comparison c = KPROF_COMPARISON_INIT;
    wrong += kprof_compare(a, 2, a, 2, &co, &c) != KPROF_UNAVAILABLE;
    kprof_benchmark_result bb = KPROF_BENCHMARK_RESULT_INIT;
    wrong += kprof_benchmark_compare(workload, NULL, workload, NULL, &bo, &co, &br, &bb, &c) !=
             KPROF_UNAVAILABLE;
    kprof_stop(NULL);
    return wrong;
}

#ifdef KPROF_UNIT_MAIN
int main(void)
{
    double v[3] = {1, 2, 3};
    return instrumented(v, 3) == 6 ? everything() : 100;
}
#endif
