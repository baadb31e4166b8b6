/*
 * host_calls.h — what a host API call is, by its name: a poll or query that the reports hide
 * unless asked (--raw), a call in which the host waits for the device, a call that puts work on
 * a device. One list each, for every reader of a trace: the report's tables and its verdict's
 * timeline, and the call tree and key averages (export/calltree.h, analysis/trace_aggregate.h),
 * which leave the same polling calls out.
 */
#ifndef KP_CORE_HOST_CALLS_H
#define KP_CORE_HOST_CALLS_H

enum {
    KP_HOST_CALL_POLLING = 1u << 0, /* polling, queries, bookkeeping (CUDA.jl's list, plus
                                       OpenCL's): hidden unless --raw */
    KP_HOST_CALL_SYNC = 1u << 1,    /* the host waits for the device in it, whatever its
                                       arguments (a blocking OpenCL read, write or map is one by
                                       its flag, not its name: its wait record says so, see
                                       kp_timeline_add_wait) */
    KP_HOST_CALL_LAUNCH = 1u << 2   /* puts work on a device: when it succeeds, a kernel, copy or
                                       fill of its correlation follows */
};

/* The KP_HOST_CALL_* flags of a call named `name` (0 for NULL and for a name none applies
 * to). */
unsigned kp_host_call_flags(const char *name);

#endif
