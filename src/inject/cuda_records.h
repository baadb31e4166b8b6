/*
 * cuda_records.h — the pure half of the CUDA collector: CUPTI activity records turned into
 * kp_rec, the names kprof gives copies, fills, waits and CUPTI's own overhead, API names without
 * their version suffixes, and the table that pairs NVTX range starts with their ends.
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

/* The range or mark name: "domain:name", or name alone in the default domain (domain NULL or
 * empty). A NULL name reads "(unnamed)". Always terminated; returns out. */
char *kp_cuda_trace_marker_name(const char *domain, const char *name, char *out, size_t out_n);

/* Fill r from a CUPTI record (all but the name ids). 0 when it carries timing; -1 when it
 * carries none (start == end == 0): the caller skips it and counts it as dropped. */
int kp_cuda_trace_kernel(const CUpti_ActivityKernel10 *k, kp_rec *r);
int kp_cuda_trace_api(const CUpti_ActivityAPI *a, int driver, kp_rec *r);
int kp_cuda_trace_memcpy(const CUpti_ActivityMemcpy6 *m, kp_rec *r);
int kp_cuda_trace_memset(const CUpti_ActivityMemset4 *m, kp_rec *r);
int kp_cuda_trace_sync(const CUpti_ActivitySynchronization2 *s, kp_rec *r);
int kp_cuda_trace_overhead(const CUpti_ActivityOverhead3 *o, kp_rec *r);

/* The host thread a marker or overhead record names, or 0 when it names none. */
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

/* NVTX ranges still open: CUPTI reports a range as a start marker (name, time, thread) and,
 * later and possibly in another buffer, an end marker that carries only the id. Open addressing
 * with linear probing and backward-shift deletion, fixed size, no allocation. Not thread-safe:
 * the caller holds its own lock. Zero-initialise before use. */
#define KP_NVTX_SLOTS    4096 /* a power of two */
#define KP_NVTX_MAX_OPEN (KP_NVTX_SLOTS / 4 * 3)

typedef struct kp_nvtx_open {
    uint64_t id;    /* CUPTI's marker id */
    uint64_t start; /* ns */
    uint32_t name;  /* string id, interned when the start arrived */
    uint32_t tid;   /* the thread that opened it */
    uint32_t used;  /* 1 = slot holds a range */
    uint32_t reserved;
} kp_nvtx_open;

typedef struct kp_nvtx_table {
    kp_nvtx_open slot[KP_NVTX_SLOTS];
    uint32_t count;
} kp_nvtx_table;

/* Remember an open range. 0 when added; 1 when it replaced an open range with the same id (that
 * range's end was lost); -1 when the table is full (the range is lost). */
int kp_nvtx_open_range(kp_nvtx_table *t, uint64_t id, uint64_t start, uint32_t name, uint32_t tid);

/* Take the open range with this id into *out. 1 when found (and removed); 0 when not. */
int kp_nvtx_close_range(kp_nvtx_table *t, uint64_t id, kp_nvtx_open *out);

#endif
