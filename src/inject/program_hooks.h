/*
 * program_hooks.h — the program's own kernel hooks (libkprof's kprof_kernel_hook), as kprof's
 * collectors inside it see them: found once by name in the process (kprof_kernel_hooks_ and
 * kprof_kernel_work_, which libkprof exports), so a program that links libkprof gives its
 * kernels their work under `kprof trace` too. Nothing when the program has no libkprof or no
 * hook: then a call costs one load. Thread-safe.
 */
#ifndef KP_INJECT_PROGRAM_HOOKS_H
#define KP_INJECT_PROGRAM_HOOKS_H

enum { KP_PROGRAM_WORK_FLOPS = 1, KP_PROGRAM_WORK_BYTES = 2 }; /* as KPROF_WORK_* */

/* 1 while the program has at least one hook. */
int kp_program_hooks_any(void);

/* The work of one launch of kernel `name` (grid: groups per dimension, block: threads per
 * group): which of *flops and *bytes the program's hook set (KP_PROGRAM_WORK_*), 0 for none. */
int kp_program_hooks_work(const char *name, const unsigned grid[3], const unsigned block[3],
                          double *flops, double *bytes);

#endif
