/*
 * cuda_collector.h — the CUDA collector (cuda_inject.c) used in-process: libkprof's session
 * (src/libkprof/) starts and stops it instead of the CUDA driver (CUDA_INJECTION64_PATH) and the
 * process's exit, with the same CUPTI activity kinds, clock and record conversion as `kprof trace`.
 * Records go to the record writer, which the session starts before and stops after.
 *
 * Two additions serve the library: a kernel hook, asked for the work (flops, bytes) of every
 * kernel as its record is converted, whose answer travels as KP_REC_METRIC records right after
 * the kernel's; and a sink that sees every converted record (kprof_benchmark times the device
 * work of a callback with it).
 *
 * Threads: start, stop and flush are serialised among themselves (one lock); hooks and sinks are
 * called on the thread that converts records (the collector's own, or the one calling
 * kp_cuda_collector_flush), with the collector's conversion lock held: they must not call CUDA,
 * CUPTI or the collector, and must be quick.
 */
#ifndef KP_INJECT_CUDA_COLLECTOR_H
#define KP_INJECT_CUDA_COLLECTOR_H

#include "base/error.h"
#include "collect/record.h"

#include <stddef.h>
#include <stdint.h>

/* The work a kernel launch did, as the hook computes it: set *flops and/or *bytes and return
 * which (KP_CUDA_HOOK_FLOPS | KP_CUDA_HOOK_BYTES), or 0 for none. name: the kernel's name as
 * CUDA has it (mangled for C++ kernels); grid: blocks per dimension; block: threads per block. */
enum { KP_CUDA_HOOK_FLOPS = 1, KP_CUDA_HOOK_BYTES = 2 };
typedef int (*kp_cuda_kernel_hook)(void *ctx, const char *name, const uint32_t grid[3],
                                   const uint32_t block[3], double *flops, double *bytes);

/* Every converted record, with its name's text (NULL when it has none). */
typedef void (*kp_cuda_record_sink)(void *ctx, const kp_rec *r, const char *name);

/* Turn CUDA collection on in this process: CUPTI loaded, its callbacks registered, the kinds
 * enabled, the flush thread started. KPROF_OK, or KPROF_UNAVAILABLE with a sentence in err:
 * CUPTI cannot be loaded,
 * another profiler holds CUPTI (Nsight Systems, Nsight Compute, a debugger: kprof's collection
 * stays off, and says so), or the collector already runs (`kprof trace` injected it into this
 * program). */
kprof_status kp_cuda_collector_start(kp_error *err);

/* Turn it off again: the last records forced out of CUPTI and converted, the kinds disabled,
 * the flush thread stopped, the cached string ids forgotten (the writer's next file defines its
 * strings anew). A no-op when not started in-process. */
void kp_cuda_collector_stop(void);

/* 1 while started in-process. */
int kp_cuda_collector_running(void);

/* Convert everything CUPTI has completed now, on the calling thread (forced: records still in
 * flight are cut off there — call after synchronizing the device). */
void kp_cuda_collector_flush(int forced);

/* Now on the clock of the records the sink sees: CUPTI's timestamp (cuptiGetTimestamp, the
 * timebase of its activity records), moved as the records are when CUPTI refused kprof's clock.
 * A device operation launched after this reading starts after it; one waited for before it
 * started before it. 0 when the collector is not running in-process or CUPTI cannot say. */
uint64_t kp_cuda_collector_now(void);

/* Set (or clear, with NULL) the kernel hook and the record sink. Either may be changed while the
 * collector runs; the change applies to records converted after it. */
void kp_cuda_collector_set_hook(kp_cuda_kernel_hook hook, void *ctx);
void kp_cuda_collector_set_sink(kp_cuda_record_sink sink, void *ctx);

/* 1: records go to the sink alone, not to the writer (kprof_benchmark's own collector beside a
 * session that records no CUDA). Set before start. */
void kp_cuda_collector_set_sink_only(int on);

#endif
