/*
 * cuda_capture.h — the CUDA side of `kprof trace --capture PATTERN[@N|@slowest]` (issue 26):
 * inside a traced program, keep the module images CUPTI hands over, watch the kernel launches
 * through CUPTI's driver-API callbacks, and at the chosen launch write a capture folder
 * (collect/capture.h) with the function's module image, the launch's geometry and attributes,
 * every parameter's bytes, and the device allocations the parameters point into, before and
 * after the launch.
 *
 * Off unless KPROF_CAPTURE is set: then, and only then, it takes CUPTI's one callback
 * subscriber (cuda_inject.c's tracing uses the activity API alone). Used by the injected
 * collector only, never by libkprof's in-process sessions.
 */
#ifndef KP_INJECT_CUDA_CAPTURE_H
#define KP_INJECT_CUDA_CAPTURE_H

#include "base/error.h"

/* Start capturing when the environment asks for it (kp_capture_pattern_env). A bad pattern, a
 * CUPTI that cannot be subscribed to, a driver that lacks a function the capture needs, or
 * `collection` (non-NULL: why kprof's CUDA collection is off, so there is no exit hook either)
 * is said once on stderr (kp_capture_announce) and the program runs on uncaptured. Returns 1
 * when the capture is armed, 0 otherwise. Call once, from InitializeInjection. */
int kp_cuda_capture_start(const kp_error *collection);

/* At the program's exit (the collector's exit hook, kp_cuda_exit): a capture that was asked for and
 * did not happen (the kernel never launched, fewer than N launches, no launch after the @slowest
 * window) is announced as failed, saying why. Makes no CUDA call. */
void kp_cuda_capture_exit(void);

#endif
