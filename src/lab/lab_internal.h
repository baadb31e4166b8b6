/*
 * lab_internal.h — what the files of the kernel lab share, and nothing outside src/lab includes:
 * the session (struct kp_lab) and the functions one file of the session calls in another.
 * lab.c is the session (open, measure, digest, finish, close); compile.c compiles through the
 * cache; arguments.c checks a SPEC against the kernel's parameters and binds it; launch.c checks
 * and reflects a launch. A session that runs in a child process (isolate.c) is a kp_lab whose
 * calls all go there.
 */
#ifndef KP_LAB_INTERNAL_H
#define KP_LAB_INTERNAL_H

#include "lab/isolate.h"
#include "lab/lab.h"

struct kp_lab {
    kp_lab_info info;
    const kp_backend_ops *ops;
    kp_device *dev;
    kp_program *program;
    kp_program_meta meta;
    kp_kernel *kernel;
    kp_spec spec;
    kp_buffer *buffers[KP_SPEC_MAX_ARGS];
    int bound;           /* buffers exist and are bound to the kernel */
    kp_lab_child *child; /* the session runs in a child process: every call goes there */
};

/* ---- compile.c ----------------------------------------------------------------------------- */

/* Compile the session's source through the cache into lab->program and lab->meta; dumps with
 * KPROF_DUMP_DIR; keeps the source, options and log of a failed compile in a folder. */
kprof_status kp_lab_compile(kp_lab *lab, const kp_source *src, kp_error *err);

/* A hash of the files the source includes, so an edited header misses the compile cache. */
uint64_t kp_lab_includes_hash(const kp_source *src);

/* Walk every file the source includes that kprof can find (beside the source, or in an -I
 * folder of the options); the bodies go to `bodies` when it is not NULL. 0 when none was found,
 * else their hash. */
uint64_t kp_lab_walk_source(const kp_source *src, kp_str *bodies);

/* ---- arguments.c --------------------------------------------------------------------------- */

/* Parameters passed by value whose type is a struct or union become KP_PARAM_STRUCT or
 * KP_PARAM_UNION (is_text: the source is text kprof may read for their declarations). */
void kp_lab_mark_aggregates(kp_program_meta *meta, const kp_source *src, int is_text);

/* Allocate, fill and write the SPEC's buffers and bind them to lab->kernel. On failure the
 * buffers made so far stay in lab->buffers for kp_lab_close. */
kprof_status kp_lab_bind_buffers(kp_lab *lab, kp_error *err);

#endif
