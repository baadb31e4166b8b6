/*
 * repeat.c — kprof_profile_repeat, Metal.jl's @bprofile: warm-up calls outside the session, then
 * a session in which the workload runs again and again, each call a scope, until the time budget
 * is spent (at least one call); its result carries the distributions (results.c).
 */
#include "base/util.h"
#include "libkprof/libkprof_internal.h"

#include <math.h>
#include <string.h>

#define KP_REPEAT_NAME "iteration"

kprof_status kprof_profile_repeat(kprof_workload_fn fn, void *arg, double budget_s,
                                  const kprof_repeat_options *options, kprof_result **result)
{
    static const char name[] = "kprof_profile_repeat";
    if (result) *result = NULL;
    if (!fn || !result) return kp_libkprof_fail(name, KPROF_INVALID, "fn or result is NULL");
    if (!(budget_s > 0) || !isfinite(budget_s))
        return kp_libkprof_fail(name, KPROF_INVALID,
                                "the budget must be a positive number of seconds");
    kprof_repeat_options o = KPROF_REPEAT_OPTIONS_INIT;
    if (options) {
        if (options->size == 0 || options->size > sizeof o)
            return kp_libkprof_fail(name, KPROF_INVALID,
                                    "options->size must be sizeof(kprof_repeat_options): use "
                                    "KPROF_REPEAT_OPTIONS_INIT");
        memcpy(&o, options, options->size);
    }
    const char *scope = o.name ? o.name : KP_REPEAT_NAME;
    for (unsigned i = 0; i < o.warmup; i++)
        fn(arg);
    kprof_status st = kprof_start(o.session);
    if (st != KPROF_OK) return st; /* kprof_start said why */
    uint64_t budget_ns = budget_s >= 1e9 ? UINT64_MAX : (uint64_t)(budget_s * 1e9);
    uint64_t first = kp_now_ns(), calls = 0;
    do {
        kprof_scope s = kprof_scope_begin(scope);
        fn(arg);
        kprof_scope_end(&s);
        calls++;
    } while (kp_now_ns() - first < budget_ns && (!o.max_iterations || calls < o.max_iterations));
    return kprof_stop(result);
}
