/*
 * cl_api.c — fills the OpenCL function table from the ICD loader (see cl_api.h) and names
 * OpenCL error codes.
 */
#include "runtime/cl_api.h"
#include "base/env.h"
#include "runtime/dynlib.h"

#include <stdio.h>
#include <string.h>

kp_cl_api kp_cl;

static const char *const kp_cl_libs[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};
static const char *const kp_cl_names[] = {
#define KP_CL_NAME_(fn) #fn,
    KP_CL_FUNCTIONS(KP_CL_NAME_)
#undef KP_CL_NAME_
};

static kp_dynlib_table kp_cl_table = {
    .libname = "libOpenCL",
    .libs = kp_cl_libs,
    .env = KP_ENV_OPENCL_LIBRARY,
    .symbols = kp_cl_names,
    .slots = (void **)&kp_cl,
    .count = sizeof kp_cl_names / sizeof kp_cl_names[0],
    .hint = " (install an OpenCL ICD loader, e.g. Debian's ocl-icd-libopencl1)",
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

kprof_status kp_cl_load(kp_error *err)
{
    return kp_dynlib_load_table(&kp_cl_table, err);
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
