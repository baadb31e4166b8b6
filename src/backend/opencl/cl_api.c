/*
 * cl_api.c — fills the OpenCL function table from the ICD loader (see cl_api.h) and names
 * OpenCL error codes.
 */
#include "backend/opencl/cl_api.h"
#include "backend/dynlib.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

kp_cl_api kp_cl;

static pthread_once_t kp_cl_once = PTHREAD_ONCE_INIT;
static int kp_cl_status = -1;
static char kp_cl_why[512];

static void kp_cl_load_once(void)
{
    static const char *const libs[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};
    static const char *const names[] = {
#define KP_CL_NAME_(fn) #fn,
        KP_CL_FUNCTIONS(KP_CL_NAME_)
#undef KP_CL_NAME_
    };
    void *h = kp_dynlib_open(libs, "KPROF_OPENCL_LIBRARY", kp_cl_why, sizeof kp_cl_why);
    if (!h) {
        /* Say what to install, not just what is missing. */
        size_t n = strlen(kp_cl_why);
        snprintf(kp_cl_why + n, sizeof kp_cl_why - n,
                 " (install an OpenCL ICD loader, e.g. Debian's ocl-icd-libopencl1)");
        return;
    }
    if (kp_dynlib_resolve(h, "libOpenCL", names, (void **)&kp_cl, NULL,
                          sizeof names / sizeof names[0], kp_cl_why, sizeof kp_cl_why) != 0)
        return;
    kp_cl_status = 0;
}

int kp_cl_load(char *why, size_t why_n)
{
    pthread_once(&kp_cl_once, kp_cl_load_once);
    if (kp_cl_status != 0) snprintf(why, why_n, "%s", kp_cl_why);
    return kp_cl_status;
}

const char *kp_cl_error_name(cl_int code)
{
    switch (code) {
#define KP_CL_ERR_(c)                                                                              \
    case c:                                                                                        \
        return #c;
        KP_CL_ERR_(CL_SUCCESS)
        KP_CL_ERR_(CL_DEVICE_NOT_FOUND)
        KP_CL_ERR_(CL_DEVICE_NOT_AVAILABLE)
        KP_CL_ERR_(CL_COMPILER_NOT_AVAILABLE)
        KP_CL_ERR_(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        KP_CL_ERR_(CL_OUT_OF_RESOURCES)
        KP_CL_ERR_(CL_OUT_OF_HOST_MEMORY)
        KP_CL_ERR_(CL_PROFILING_INFO_NOT_AVAILABLE)
        KP_CL_ERR_(CL_BUILD_PROGRAM_FAILURE)
        KP_CL_ERR_(CL_INVALID_VALUE)
        KP_CL_ERR_(CL_INVALID_DEVICE)
        KP_CL_ERR_(CL_INVALID_CONTEXT)
        KP_CL_ERR_(CL_INVALID_COMMAND_QUEUE)
        KP_CL_ERR_(CL_INVALID_MEM_OBJECT)
        KP_CL_ERR_(CL_INVALID_BINARY)
        KP_CL_ERR_(CL_INVALID_BUILD_OPTIONS)
        KP_CL_ERR_(CL_INVALID_PROGRAM)
        KP_CL_ERR_(CL_INVALID_PROGRAM_EXECUTABLE)
        KP_CL_ERR_(CL_INVALID_KERNEL_NAME)
        KP_CL_ERR_(CL_INVALID_KERNEL)
        KP_CL_ERR_(CL_INVALID_ARG_INDEX)
        KP_CL_ERR_(CL_INVALID_ARG_VALUE)
        KP_CL_ERR_(CL_INVALID_ARG_SIZE)
        KP_CL_ERR_(CL_INVALID_KERNEL_ARGS)
        KP_CL_ERR_(CL_INVALID_WORK_DIMENSION)
        KP_CL_ERR_(CL_INVALID_WORK_GROUP_SIZE)
        KP_CL_ERR_(CL_INVALID_WORK_ITEM_SIZE)
        KP_CL_ERR_(CL_INVALID_GLOBAL_OFFSET)
        KP_CL_ERR_(CL_INVALID_EVENT)
        KP_CL_ERR_(CL_INVALID_OPERATION)
        KP_CL_ERR_(CL_INVALID_BUFFER_SIZE)
        KP_CL_ERR_(CL_INVALID_GLOBAL_WORK_SIZE)
        KP_CL_ERR_(CL_INVALID_PLATFORM)
        KP_CL_ERR_(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        KP_CL_ERR_(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
#undef KP_CL_ERR_
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default: {
        static _Thread_local char buf[32];
        snprintf(buf, sizeof buf, "CL_ERROR(%d)", (int)code);
        return buf;
    }
    }
}
