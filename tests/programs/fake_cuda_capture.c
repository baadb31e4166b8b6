/* fake_cuda_capture.c — a stand-in for libcuda and libcupti in one library (loaded through
 * KPROF_CUDA_LIBRARY and KPROF_CUPTI_LIBRARY) with just the entry points the CUDA capture
 * (src/inject/cuda_capture.c) calls, so its callbacks are driven where no GPU exists
 * (tests/unit/test_cuda_capture_fake.c). Declared from CUDA's and CUPTI's own headers, so a
 * signature that drifts fails to build.
 *
 * "Device memory" is host memory the test registers (fake_cap_alloc: base, size, memory type,
 * managed): cuMemGetAddressRange finds the registration holding an address, cuMemcpyDtoH is a
 * memcpy. Functions are registered with their name, parameter layout and register count
 * (fake_cap_function). cuptiSubscribe keeps the callback for the test (fake_cap_callback).
 * Each event pair's elapsed time comes from a list the test sets (fake_cap_elapsed). A call
 * named by fake_cap_fail returns the code given. fake_cap_calls counts calls by name.
 *
 * Built without sanitizers, as the real libraries are. */
#include <cuda.h>
#include <cupti.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef struct {
    uintptr_t base;
    size_t size;
    unsigned type;
    unsigned managed;
} fake_alloc;

typedef struct {
    CUfunction f;
    const char *name;
    size_t n;
    size_t offset[16], size[16];
    int regs;
} fake_fn;

static fake_alloc allocs[32];
static int nallocs;
static fake_fn fns[16];
static int nfns;
static CUpti_CallbackFunc callback;
static float elapsed[16];
static int nelapsed, next_elapsed;
static char fail_name[64];
static CUresult fail_code;
static struct {
    const char *name;
    int n;
} calls[32];

static void count(const char *name)
{
    for (int i = 0; i < 32; i++) {
        if (!calls[i].name) calls[i].name = name;
        if (calls[i].name == name || strcmp(calls[i].name, name) == 0) {
            calls[i].n++;
            return;
        }
    }
}

static int failing(const char *name)
{
    count(name);
    return fail_name[0] && strcmp(fail_name, name) == 0;
}

/* ---- the test's controls ---- */

FAKE_EXPORT void fake_cap_alloc(void *base, size_t size, unsigned type, unsigned managed)
{
    allocs[nallocs++] = (fake_alloc){(uintptr_t)base, size, type, managed};
}

FAKE_EXPORT void fake_cap_function(CUfunction f, const char *name, size_t n, const size_t *offset,
                                   const size_t *size, int regs)
{
    fake_fn *fn = &fns[nfns++];
    fn->f = f;
    fn->name = name;
    fn->n = n;
    for (size_t i = 0; i < n; i++) {
        fn->offset[i] = offset[i];
        fn->size[i] = size[i];
    }
    fn->regs = regs;
}

FAKE_EXPORT CUpti_CallbackFunc fake_cap_callback(void)
{
    return callback;
}

FAKE_EXPORT void fake_cap_elapsed(const float *ms, int n)
{
    for (int i = 0; i < n && i < 16; i++)
        elapsed[i] = ms[i];
    nelapsed = n;
    next_elapsed = 0;
}

FAKE_EXPORT void fake_cap_fail(const char *name, int code)
{
    strncpy(fail_name, name ? name : "", sizeof fail_name - 1);
    fail_code = (CUresult)code;
}

FAKE_EXPORT int fake_cap_calls(const char *name)
{
    for (int i = 0; i < 32 && calls[i].name; i++)
        if (strcmp(calls[i].name, name) == 0) return calls[i].n;
    return 0;
}

static fake_fn *fn_of(CUfunction f)
{
    for (int i = 0; i < nfns; i++)
        if (fns[i].f == f) return &fns[i];
    return NULL;
}

static fake_alloc *alloc_of(CUdeviceptr p)
{
    for (int i = 0; i < nallocs; i++)
        if (p >= allocs[i].base && p < allocs[i].base + allocs[i].size) return &allocs[i];
    return NULL;
}

/* ---- CUPTI ---- */

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc cb,
                                    void *userdata)
{
    (void)userdata;
    if (failing("cuptiSubscribe")) return (CUptiResult)fail_code;
    callback = cb;
    *subscriber = (CUpti_SubscriberHandle)(uintptr_t)0x5b;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    (void)subscriber;
    count("cuptiUnsubscribe");
    callback = NULL;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    (void)enable;
    (void)subscriber;
    (void)domain;
    (void)cbid;
    return failing("cuptiEnableCallback") ? (CUptiResult)fail_code : CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    *str = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
               ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
               : "CUPTI_ERROR_FAKE";
    return CUPTI_SUCCESS;
}

/* ---- the driver ---- */

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    *pStr = error == CUDA_ERROR_ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "CUDA_ERROR_FAKE";
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    return failing("cuCtxSynchronize") ? fail_code : CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    (void)dev;
    strncpy(name, "Fake H200", (size_t)len - 1);
    name[len - 1] = '\0';
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
    count("cuFuncGetName");
    fake_fn *fn = fn_of(hfunc);
    if (!fn) return CUDA_ERROR_INVALID_HANDLE;
    *name = fn->name;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                    size_t *paramSize)
{
    if (failing("cuFuncGetParamInfo")) return fail_code;
    fake_fn *fn = fn_of(func);
    if (!fn) return CUDA_ERROR_INVALID_HANDLE;
    if (paramIndex >= fn->n) return CUDA_ERROR_INVALID_VALUE;
    *paramOffset = fn->offset[paramIndex];
    *paramSize = fn->size[paramIndex];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                                      size_t *paramSize)
{
    (void)kernel;
    (void)paramIndex;
    (void)paramOffset;
    (void)paramSize;
    count("cuKernelGetParamInfo");
    return CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                      CUdevice dev)
{
    (void)pi;
    (void)attrib;
    (void)kernel;
    (void)dev;
    count("cuKernelGetAttribute");
    return CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    fake_fn *fn = fn_of(hfunc);
    if (!fn) return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *pi = fn->regs;
        break;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *pi = 1024;
        break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        *pi = 0;
        break;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    count("cuMemGetAddressRange");
    fake_alloc *a = alloc_of(dptr);
    if (!a) return CUDA_ERROR_NOT_FOUND;
    *pbase = a->base;
    *psize = a->size;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    fake_alloc *a = alloc_of(ptr);
    if (!a) return CUDA_ERROR_INVALID_VALUE;
    if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        *(unsigned *)data = a->type;
    else if (attribute == CU_POINTER_ATTRIBUTE_IS_MANAGED)
        *(unsigned *)data = a->managed;
    else
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    if (failing("cuMemcpyDtoH")) return fail_code;
    fake_alloc *a = alloc_of(srcDevice);
    if (!a || srcDevice + ByteCount > a->base + a->size) return CUDA_ERROR_INVALID_VALUE;
    memcpy(dstHost, (const void *)srcDevice, ByteCount);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    (void)Flags;
    static int events;
    *phEvent = (CUevent)(uintptr_t)(0xe0 + ++events);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    (void)hEvent;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    (void)hEvent;
    (void)hStream;
    count("cuEventRecord");
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    (void)hEvent;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    (void)hStart;
    (void)hEnd;
    if (next_elapsed >= nelapsed) return CUDA_ERROR_NOT_READY;
    *pMilliseconds = elapsed[next_elapsed++];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
{
    (void)pResDesc;
    return texObject == 77 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject)
{
    (void)pResDesc;
    (void)surfObject;
    return CUDA_ERROR_INVALID_VALUE;
}
