/*
 * isolate.h — a kernel-lab session run in a child process, for devices whose kernels run inside
 * kprof's own process (internal to src/lab; isolate.c says why and how). lab.c and launch.c
 * forward each kp_lab_* call of such a session here; the calls mean what lab.h says they mean.
 */
#ifndef KP_LAB_ISOLATE_H
#define KP_LAB_ISOLATE_H

#include "lab/lab.h"

typedef struct kp_lab_child kp_lab_child; /* the child process and the socket to it */

/* Fork the child and open the session in it (kp_lab_open_here there). info receives the
 * child's kp_lab_info, with info->kernel pointing into the handle and info->spec at `spec` (the
 * caller's copy, which must outlive the handle). On failure nothing is left running. */
kprof_status kp_lab_child_open(const kp_lab_options *opts, const kp_spec *spec, kp_lab_info *info,
                               kp_lab_child **out, kp_error *err);
kprof_status kp_lab_child_use_kernel(kp_lab_child *c, const char *entry, kp_error *err);
kprof_status kp_lab_child_check_launch(kp_lab_child *c, const kp_launch *launch,
                                       kp_reflection *refl, kp_error *err);
kprof_status kp_lab_child_reflect(kp_lab_child *c, const kp_launch *launch, kp_reflection *refl,
                                  kp_error *err);
kprof_status kp_lab_child_measure(kp_lab_child *c, const kp_launch *launch, int warmup, int iters,
                                  double *samples_ms, kp_error *err);
kprof_status kp_lab_child_sample(kp_lab_child *c, const kp_launch *launch, int n, int cold,
                                 double *samples_ms, double *flush_ms, kp_error *err);
kprof_status kp_lab_child_digest(kp_lab_child *c, kp_buffer_digest *out, int max, int *n,
                                 kp_error *err);
/* The child releases everything and exits; OK only when it exited cleanly. */
kprof_status kp_lab_child_finish(kp_lab_child *c, kp_error *err);
/* The child died: everything the session measured is void. */
int kp_lab_child_void(const kp_lab_child *c);

/* The child's process id (0 once it was waited for). */
int kp_lab_child_pid(const kp_lab_child *c);
/* End the child (at once when a dispatch timed out) and wait for it. c may be NULL. */
void kp_lab_child_close(kp_lab_child *c);

/* kp_lab_device's work in a child: choose the device and describe it there. */
kprof_status kp_lab_child_device(const char *backend, int device, int lang,
                                 const kp_backend_ops **ops, int *index, kp_device_info *info,
                                 kp_error *err);

/* lab.c: a session in this process (what the child runs). */
kprof_status kp_lab_open_here(const kp_lab_options *opts, kp_lab **out, kp_error *err);

#endif
