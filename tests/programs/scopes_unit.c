/*
 * scopes_unit.c — every piece of instrumentation include/kprof.h offers, for the test that
 * compiles it with and without -DKPROF_DISABLE (tests/cli/test_inproc.py): disabled, its object
 * file must name no kprof_ symbol at all, defined or referenced; enabled, it must reference the
 * flag and the out-of-line halves. Also compiled as C++ (the RAII scope).
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
