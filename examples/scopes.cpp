// scopes.cpp — libkprof in a C++ program: KPROF_SCOPE is an RAII object (kprof::scope, header
// only), so a scope ends however its block is left — here by an exception — and
// kprof_profile_repeat runs a workload for a time budget and gives its distributions.
//
//   c++ scopes.cpp -lkprof -o scopes_cpp && ./scopes_cpp
#include <kprof.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

static double work(std::vector<double> &v)
{
    KPROF_SCOPE_AS(scope, "work");
    double sum = 0;
    for (double &x : v)
        sum += x = x * 1.0001 + 1;
    scope.work(2.0 * v.size(), 2.0 * sizeof(double) * v.size());
    return sum;
}

static void may_throw(int i)
{
    KPROF_SCOPE("may_throw");
    if (i % 2) throw std::runtime_error("odd");
}

static void step(void *arg)
{
    std::vector<double> &v = *static_cast<std::vector<double> *>(arg);
    KPROF_SCOPE("step");
    work(v);
    for (int i = 0; i < 4; i++) {
        try {
            may_throw(i);
        } catch (const std::exception &) {
        }
    }
}

int main()
{
    std::vector<double> v(100000, 1.0);
    kprof_repeat_options options = KPROF_REPEAT_OPTIONS_INIT;
    options.max_iterations = 50;
    kprof_result *result = nullptr;
    if (kprof_profile_repeat(step, &v, 0.2, &options, &result) != KPROF_OK) {
        std::fprintf(stderr, "%s\n", kprof_last_error());
        return 1;
    }
    kprof_result_print(result, KPROF_VIEW_DISTRIBUTIONS, stdout);
    kprof_result_print(result, KPROF_VIEW_TREE, stdout);
    kprof_result_destroy(result);
    return 0;
}
