/*
 * cuda_records.h — the pure half of the CUDA collector: CUPTI activity records turned into
 * kp_rec, the names kprof gives copies, fills, waits and CUPTI's own overhead, and API names
 * without their version suffixes.
 *
 * Nothing here calls CUPTI, the writer or the allocator, so unit tests drive it with records
 * they build by hand. String ids (kp_rec.name) are left for the caller, which interns them.
 */
#ifndef KP_INJECT_CUDA_RECORDS_H
#define KP_INJECT_CUDA_RECORDS_H

#include "collect/record.h"

#include <cupti.h>

#include <stddef.h>
#include <stdint.h>

/* The name a user knows an API call by: CUPTI's callback name without the version and
 * per-thread-stream suffixes ("cuMemcpyHtoD_v2_ptds" -> "cuMemcpyHtoD", "cudaMemcpy_v3020" ->
 * "cudaMemcpy"). Writes at most out_n bytes, always terminated; returns the length written. */
size_t kp_cuda_trace_api_name(const char *cupti_name, char *out, size_t out_n);

/* KP_COPY_* for a CUPTI copy kind (CUpti_ActivityMemcpyKind); arrays count as device memory. */
uint32_t kp_cuda_trace_copy_direction(uint32_t copy_kind);

/* "[CUDA memcpy HtoD]", Nsight's names for copies; "[CUDA memcpy]" for kinds it does not know. */
const char *kp_cuda_trace_copy_name(uint32_t copy_kind);

/* "[sync: stream]", "[sync: event]", "[sync: stream wait event]", "[sync: context]". */
const char *kp_cuda_trace_sync_name(uint32_t sync_type);

/* "[CUPTI overhead: buffer flush]" and so on for a CUpti_ActivityOverheadKind. */
const char *kp_cuda_trace_overhead_name(uint32_t overhead_kind);

/* Fill r from a CUPTI record (all but the name ids). 1 when it carries timing; 0 when it
 * carries none (start == end == 0: no failure, an answer): the caller skips it and counts it as
 * dropped. */
int kp_cuda_trace_kernel(const CUpti_ActivityKernel10 *k, kp_rec *r);
int kp_cuda_trace_api(const CUpti_ActivityAPI *a, int driver, kp_rec *r);
int kp_cuda_trace_memcpy(const CUpti_ActivityMemcpy6 *m, kp_rec *r);
int kp_cuda_trace_memset(const CUpti_ActivityMemset4 *m, kp_rec *r);
int kp_cuda_trace_sync(const CUpti_ActivitySynchronization2 *s, kp_rec *r);
int kp_cuda_trace_overhead(const CUpti_ActivityOverhead3 *o, kp_rec *r);

/* The host thread an overhead record names, or 0 when it names none. */
uint32_t kp_cuda_trace_object_thread(CUpti_ActivityObjectKind kind,
                                     const CUpti_ActivityObjectKindId *id);

/* Which device a CUPTI context lives on, learnt from records that carry both (kernels, copies,
 * fills) and used for those that carry only the context (synchronization). */
#define KP_CUDA_TRACE_CONTEXTS 64

typedef struct kp_cuda_trace_contexts {
    uint32_t context[KP_CUDA_TRACE_CONTEXTS]; /* context id + 1; 0 = free */
    uint32_t device[KP_CUDA_TRACE_CONTEXTS];
} kp_cuda_trace_contexts;

void kp_cuda_trace_context_learn(kp_cuda_trace_contexts *t, uint32_t context, uint32_t device);

/* The device, or 0 when the context was never seen with one. */
uint32_t kp_cuda_trace_context_device(const kp_cuda_trace_contexts *t, uint32_t context);

#endif
