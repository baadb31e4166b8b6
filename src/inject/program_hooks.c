/*
 * program_hooks.c — the program's kernel hooks, found by name (see program_hooks.h).
 */
#define _GNU_SOURCE
#include "inject/program_hooks.h"

#include <dlfcn.h>
#include <pthread.h>

static struct {
    pthread_once_t once;
    const int *count; /* kprof_kernel_hooks_ */
    int (*work)(const char *, const unsigned[3], const unsigned[3], double *, double *);
} kp_ph = {.once = PTHREAD_ONCE_INIT};

static void kp_ph_find(void)
{
    kp_ph.count = (const int *)dlsym(RTLD_DEFAULT, "kprof_kernel_hooks_");
    *(void **)&kp_ph.work = dlsym(RTLD_DEFAULT, "kprof_kernel_work_");
    if (!kp_ph.work) kp_ph.count = NULL;
}

int kp_program_hooks_any(void)
{
    pthread_once(&kp_ph.once, kp_ph_find);
    return kp_ph.count && __atomic_load_n(kp_ph.count, __ATOMIC_RELAXED) > 0;
}

int kp_program_hooks_work(const char *name, const unsigned grid[3], const unsigned block[3],
                          double *flops, double *bytes)
{
    return kp_program_hooks_any() ? kp_ph.work(name, grid, block, flops, bytes) : 0;
}
