/*
 * hotspots.h — where a kernel's warps spend their time, by source line (issue 16, `kprof run
 * --source`): the PCs a backend's sampler found (core/pcsample.h) summed per source line, each
 * line with its share of the samples and its stall reasons, most samples first; the session
 * call that samples the lab's kernel; the source lines' text; and the JSON `kprof run` writes.
 * The aggregation is pure, so tests feed it made-up samples.
 *
 * Stall reasons. CUPTI names each "smsp__pcsamp_warps_issue_stalled_<reason>" and counts, as
 * "..._<reason>_not_issued", the samples of that reason at which the warp's scheduler issued
 * nothing that cycle. The not-issued samples are a part of <reason>'s, not more of them (as the
 * latencySamples of CUPTI's older PC sampling records were a part of their samples): a line's
 * samples are the sum over the plain reasons, and its not-issued samples are kept beside them.
 * Reasons are shown by the rest of their name ("long_scoreboard", "math_pipe_throttle",
 * "selected": the warp was the one issuing).
 */
#ifndef KP_LAB_HOTSPOTS_H
#define KP_LAB_HOTSPOTS_H

#include "core/pcsample.h"
#include "base/json.h"
#include "lab/lab.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kp_hotspot_stall {
    const char *reason; /* short name, into kp_hotspots.reasons */
    uint64_t samples;
} kp_hotspot_stall;

/* One source line (or, where the line info has none, one PC). */
typedef struct kp_hotspot {
    char *file;               /* as the line info names it; NULL for a PC without a line */
    uint32_t line;            /* 1-based; 0 for a PC without a line */
    char *function;           /* the kernel's symbol */
    uint64_t pc_offset;       /* the line's hottest PC (the PC itself when it has no line) */
    size_t npcs;              /* PCs sampled on the line */
    uint64_t samples;         /* over its PCs and plain reasons */
    uint64_t not_issued;      /* of samples: the scheduler issued nothing that cycle */
    double share;             /* samples / kp_hotspots.samples */
    kp_hotspot_stall *stalls; /* reasons with samples, most first (ties: the sampler's order) */
    size_t nstalls;
    char *text; /* the source line, trimmed, one line of valid UTF-8; NULL when unknown */
} kp_hotspot;

typedef struct kp_hotspots {
    kp_hotspot *lines; /* most samples first; ties by file, line, function, PC */
    size_t n;
    uint64_t samples;         /* over all lines */
    uint64_t total_samples;   /* the sampler's own count (kp_pc_samples) */
    uint64_t dropped_samples; /* ... of them lost by the hardware */
    int dispatches;
    char note[320]; /* kp_pc_samples.note */
    char **reasons; /* every reason's short name, in the sampler's order (owned) */
    size_t nreasons;
} kp_hotspots;

/* Sum the PCs of s per line: PCs with the same file, line and function make one line; a PC
 * without a line is a line of its own. out is zeroed first. KPROF_OK, or KPROF_NOMEM with err
 * filled (out then holds nothing). Pure. */
kprof_status kp_hotspots_from_samples(const kp_pc_samples *s, kp_hotspots *out, kp_error *err);

/* "long_scoreboard" for CUPTI's "smsp__pcsamp_warps_issue_stalled_long_scoreboard"; other
 * names lose a leading "smsp__pcsamp_" only. Points into name. */
const char *kp_stall_reason_short(const char *name);

/* 1 for a "..._not_issued" reason. */
int kp_stall_reason_not_issued(const char *name);

/* Give each line its source text, read from the file its line info names; a relative name,
 * or one that is not there, is looked for beside the session's source (source_path), and a
 * file whose base name is the source's is the source. Files that cannot be read leave text
 * NULL. Reads at most 16 MiB of a file. */
void kp_hotspots_read_text(kp_hotspots *h, const char *source_path);

/* Sample the session's kernel at launch over `dispatches` dispatches (kp_backend_ops.pc_sample)
 * and sum the PCs per line, with the lines' text. UNAVAILABLE, saying why in one line, where
 * the backend has no sampler (OpenCL: then no dispatch runs) or the sampler cannot run; FAULT
 * and TIMEOUT as kp_lab_measure. out is zeroed first; kp_hotspots_free it in every case. */
kprof_status kp_lab_hotspots(kp_lab *lab, const kp_launch *launch, int dispatches, kp_hotspots *out,
                             kp_error *err);

/* The object `kprof run --source --json` carries under key ("hotspots"): {"available": true,
 * "dispatches", "samples", "sampler_total_samples", "sampler_dropped_samples", "note", "lines":
 * [{"file", "line", "function", "pc_offset", "pcs", "samples", "share", "not_issued", "text",
 * "stalls":
 * [{"reason", "samples"}]}]}; with h NULL: {"available": false, "reason": why}. */
void kp_hotspots_json(kp_json *j, const char *key, const kp_hotspots *h, const char *why);

/* Release everything and zero h; harmless on a zeroed h or NULL. */
void kp_hotspots_free(kp_hotspots *h);

#endif
