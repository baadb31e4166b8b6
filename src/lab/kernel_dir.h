/*
 * kernel_dir.h — the scratch kernel folders of `kprof isolate`: <home>/kernels/<NAME>/, where
 * <home> is $KPROF_HOME or ./.kprof. A folder holds the kernel source (kernel.cl, kernel.cu,
 * kernel.ptx or kernel.cubin) and, after runs, run.json and sweep.json. A folder NAME@N is a
 * captured launch (collect/capture.h: kernel.fatbin possible), which the lab replays.
 */
#ifndef KP_LAB_KERNEL_DIR_H
#define KP_LAB_KERNEL_DIR_H

#include "base/error.h"

#include <stddef.h>

/* $KPROF_HOME or ".kprof". Returns buf. */
char *kp_home_dir(char *buf, size_t n);

/* INVALID with the reason when NAME could escape the folder or is unusable as a file name. */
kprof_status kp_kernel_name_check(const char *name, kp_error *err);

/* <home>/kernels/<name>. Checks the name. */
kprof_status kp_kernel_dir(const char *name, char *buf, size_t n, kp_error *err);

/* The kernel source in a folder. With several, `prefer_backend` ("opencl"/"cuda"/NULL)
 * chooses; otherwise INVALID naming them. NOT_FOUND when there is none. */
kprof_status kp_kernel_dir_source(const char *dir, const char *prefer_backend, char *buf, size_t n,
                                  kp_error *err);

#endif
