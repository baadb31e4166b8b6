/*
 * cupti_timer.h — kernel durations from CUPTI's kernel activity records: the start and end the
 * GPU itself stamps on each kernel, without the launch gaps that CUDA events around a launch
 * include. The CUDA backend uses it as its default clock and falls back to CUDA events when
 * CUPTI cannot be used (absent, another tool such as Nsight Compute already holds it).
 */
#ifndef KP_CUPTI_TIMER_H
#define KP_CUPTI_TIMER_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

/* Enable kernel activity records of one kind: concurrent=1 CONCURRENT_KERNEL, 0 the serialized
 * KERNEL kind (switching kinds as asked; KPROF_CUPTI_KIND=serial|concurrent forces one).
 * KPROF_OK, or KPROF_UNAVAILABLE with the reason in err. Not thread-safe against a concurrent
 * take. */
kprof_status kp_cupti_timer_enable(int concurrent, kp_error *err);

/* Switch the kernel records off (flushed first; harmless when none are on). The next
 * kp_cupti_timer_enable switches them on again, and the next take discards what came before.
 * The hardware counters (counters.c) call it before profiling, so that no kernel record of a
 * replayed dispatch reaches the timer and the timer's records are not on during a profiling
 * session. */
void kp_cupti_timer_disable(void);

/* "serial" or "concurrent": the kind enabled now. */
const char *kp_cupti_timer_kind(void);

/* Flush, then hand over the durations (ns) of the kernels named `symbol` completed since the
 * last call, in completion order: up to max into ns[], and their starts into start[] (may be
 * NULL) on kprof's clock (CLOCK_MONOTONIC, kp_now_ns): the timer gives CUPTI kp_now_ns as its
 * timestamp callback, as `kprof trace`'s CUDA collector does, and where CUPTI refuses it, moves
 * CUPTI's own clock onto kprof's by the offset measured once at load. Returns how many;
 * *dropped receives the records CUPTI reported dropped. Records of other kernels are
 * discarded. */
int kp_cupti_timer_take(const char *symbol, double *ns, uint64_t *start, int max,
                        uint64_t *dropped);

#endif
