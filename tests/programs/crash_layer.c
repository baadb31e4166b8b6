/*
 * crash_layer.c — an OpenCL layer that kills the process the way memory a kernel corrupted does,
 * at a chosen call: with KPROF_CRASH_AT=clEnqueueReadBuffer the read-back of a buffer aborts,
 * with KPROF_CRASH_AT=clReleaseContext the release of the device does, with
 * KPROF_CRASH_AT=clCreateContext the opening does. For the tests of what `kprof run` says when the
 * process running a session dies after its kernels ran (a crash that comes only at read-back or
 * release must void the run too), which no kernel can cause deterministically.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl_layer.h>

#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static struct _cl_icd_dispatch crash_dispatch;
static const struct _cl_icd_dispatch *crash_next;

static void crash_if(const char *call)
{
    const char *at = getenv("KPROF_CRASH_AT");
    if (at && strcmp(at, call) == 0) abort();
}

static cl_int CL_API_CALL crash_clEnqueueReadBuffer(cl_command_queue q, cl_mem mem, cl_bool block,
                                                    size_t offset, size_t size, void *ptr,
                                                    cl_uint nwait, const cl_event *wait,
                                                    cl_event *event)
{
    crash_if("clEnqueueReadBuffer");
    return crash_next->clEnqueueReadBuffer(q, mem, block, offset, size, ptr, nwait, wait, event);
}

static cl_int CL_API_CALL crash_clReleaseContext(cl_context context)
{
    crash_if("clReleaseContext");
    return crash_next->clReleaseContext(context);
}

static cl_context CL_API_CALL crash_clCreateContext(
    const cl_context_properties *props, cl_uint ndev, const cl_device_id *devs,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *), void *user, cl_int *rc)
{
    crash_if("clCreateContext");
    return crash_next->clCreateContext(props, ndev, devs, notify, user, rc);
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
    size_t ours = sizeof crash_dispatch / sizeof(void *);
    memcpy(&crash_dispatch, target, (num_entries < ours ? num_entries : ours) * sizeof(void *));
    crash_next = target;
    crash_dispatch.clEnqueueReadBuffer = crash_clEnqueueReadBuffer;
    crash_dispatch.clReleaseContext = crash_clReleaseContext;
    crash_dispatch.clCreateContext = crash_clCreateContext;
    *num_entries_ret = (cl_uint)ours;
    *dispatch_ret = &crash_dispatch;
    return CL_SUCCESS;
}
