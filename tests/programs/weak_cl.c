/*
 * weak_cl.c — a program that uses OpenCL only if it is there: it references clFinish weakly and
 * links no loader. Alone it prints "no OpenCL"; under `kprof trace` the LD_PRELOADed collector
 * defines clFinish, finds no loader behind it, and the call must fail cleanly (it prints
 * "clFinish=<code>") instead of crashing.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>

extern CL_API_ENTRY cl_int CL_API_CALL clFinish(cl_command_queue queue) __attribute__((weak));

int main(void)
{
    if (!clFinish) {
        puts("no OpenCL");
        return 0;
    }
    printf("clFinish=%d\n", (int)clFinish(NULL));
    return 0;
}
