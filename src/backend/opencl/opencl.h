/*
 * opencl.h — what the OpenCL backend (opencl.c) offers beyond its function table
 * (kp_backend_opencl, backend/backend.h): pieces with a unit test of their own.
 */
#ifndef KP_BACKEND_OPENCL_H
#define KP_BACKEND_OPENCL_H

/* A build log in which "<kernel>:LINE:" (a runtime that ignored the #line directive kprof puts
 * before the source: NVIDIA's) becomes "PATH:LINE-1:". A new heap string, or NULL when nothing
 * changes (the log names the file already, or path is NULL). */
char *kp_cl_log_name_source(const char *log, const char *path);

#endif
