/*
 * caps.h — what `kprof caps` reports, gathered and written as JSON: every backend with its
 * devices' limits or why it cannot run (kp_caps_collect), a device as the JSON object of
 * `caps --json` (kp_caps_json_device), and the plan of a ceiling measurement in words and as
 * JSON (`caps --measure`, `--dry-run`). The text panels are the CLI's (tools/kprof/cmd_caps.c);
 * the stored ceilings are the store's, so the caller looks them up and passes them in.
 *
 * Nothing here prints; kp_caps_collect touches the backends (probe, device info), the rest is
 * pure.
 */
#ifndef KP_LAB_CAPS_H
#define KP_LAB_CAPS_H

#include "backend/backend.h"
#include "base/json.h"
#include "base/util.h"
#include "lab/ceiling.h"

/* The most devices listed per backend. */
#define KP_CAPS_MAX_DEVICES 64
/* `kprof caps` lists every backend kprof knows (KP_BACKEND_NKNOWN of them), in the registry's
 * order (kp_backend_known_name). */

/* One backend as `kprof caps` shows it. */
typedef struct kp_caps_backend {
    const char *name;
    int built;        /* compiled into this kprof */
    int available;    /* probed and at least one device described */
    char reason[512]; /* why not available, as `kprof caps` prints it; "" when available */
    int ndevices;
    kp_device_info *devices; /* heap (kp_caps_backend_free) */
} kp_caps_backend;

/* Fill b for the backend named name: not built (reason says which headers were missing), its
 * probe failed (its reason), no device described ("no devices found", or out of memory), or
 * available with its devices (at most KP_CAPS_MAX_DEVICES; a device whose info fails is left
 * out). Never fails: what went wrong is in b->reason. */
void kp_caps_collect(kp_caps_backend *b, const char *name);

/* Free b's devices (b itself is the caller's). */
void kp_caps_backend_free(kp_caps_backend *b);

/* Why d has no datasheet peak: its backend's reason, or a general one. */
const char *kp_caps_peak_reason(const kp_device_info *d);

/* "peak_bandwidth_gbs" and "peak_bandwidth_reason" of d (one of the two null). */
void kp_caps_json_peak(kp_json *j, const kp_device_info *d);

/* The device object of `caps --json`: its facts, and its "measured_ceiling" from c (null when
 * c is NULL: not measured). */
void kp_caps_json_device(kp_json *j, const kp_device_info *d, const kp_ceiling *c);

/* What r's plan measures, in one sentence (the stderr line of --measure, and --dry-run's
 * output), ending with seconds (the expected duration; at least 1 s is said). Appends to s. */
void kp_caps_plan_text(kp_str *s, const kp_ceiling_result *r, double seconds);

/* The "plan" object of `caps --measure --json`, its "expected_seconds" = seconds. */
void kp_caps_json_plan(kp_json *j, const kp_ceiling_plan *plan, double seconds);

/* The whole object of `caps --measure --json`: the device, the plan, the datasheet peak and,
 * unless dry_run, what was measured with every point and the store's path. */
void kp_caps_json_measure(kp_json *j, const kp_ceiling_result *r, double seconds, int dry_run,
                          const char *store_path);

#endif
