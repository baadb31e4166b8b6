/*
 * count_layer.c — a program's own OpenCL layer, for the `kprof trace` tests: it counts the
 * kernel enqueues and clFinish calls that pass through it and prints the counts at exit
 * ("count_layer: clEnqueueNDRangeKernel=N clFinish=M" on stderr). Under `kprof trace` every call
 * must still reach it, whichever way kprof's own collector gets in.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static struct _cl_icd_dispatch count_dispatch;
static const struct _cl_icd_dispatch *count_next;
static unsigned long count_ndrange, count_finish;

static cl_int CL_API_CALL count_clFinish(cl_command_queue queue)
{
    count_finish++;
    return count_next->clFinish(queue);
}

static cl_int CL_API_CALL count_clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel,
                                                       cl_uint dims, const size_t *offset,
                                                       const size_t *global, const size_t *local,
                                                       cl_uint nwait, const cl_event *wait,
                                                       cl_event *event)
{
    count_ndrange++;
    return count_next->clEnqueueNDRangeKernel(queue, kernel, dims, offset, global, local, nwait,
                                              wait, event);
}

static void count_report(void)
{
    fprintf(stderr, "count_layer: clEnqueueNDRangeKernel=%lu clFinish=%lu\n", count_ndrange,
            count_finish);
}

EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetLayerInfo(cl_layer_info name, size_t size, void *value,
                                                      size_t *size_ret)
{
    if (name != CL_LAYER_API_VERSION) return CL_INVALID_VALUE;
    if (value) {
        if (size < sizeof(cl_layer_api_version)) return CL_INVALID_VALUE;
        *(cl_layer_api_version *)value = CL_LAYER_API_VERSION_100;
    }
    if (size_ret) *size_ret = sizeof(cl_layer_api_version);
    return CL_SUCCESS;
}

EXPORT CL_API_ENTRY cl_int CL_API_CALL clInitLayer(cl_uint num_entries,
                                                   const struct _cl_icd_dispatch *target,
                                                   cl_uint *num_entries_ret,
                                                   const struct _cl_icd_dispatch **dispatch_ret)
{
    size_t ours = sizeof count_dispatch / sizeof(void *);
    memcpy(&count_dispatch, target, (num_entries < ours ? num_entries : ours) * sizeof(void *));
    count_next = target;
    count_dispatch.clFinish = count_clFinish;
    count_dispatch.clEnqueueNDRangeKernel = count_clEnqueueNDRangeKernel;
    *num_entries_ret = (cl_uint)ours;
    *dispatch_ret = &count_dispatch;
    atexit(count_report);
    return CL_SUCCESS;
}
