/*
 * counters.h — hardware counters of a kernel in the lab (`kprof run --counters`, and per row or
 * point of `sweep` and `bench`): the standard set kprof reads, by Nsight Compute's metric names,
 * any raw names the user adds (`--counters LIST`), and the measured figures that follow for the
 * readings (core/readings.h: measured GB/s against the ceiling, measured against estimated
 * bytes, arithmetic intensity, the roofline and the bound). Numbers only: the sentences are
 * readings.c's, the panels the CLI's.
 *
 * Where they come from: one more dispatch of the kernel at the run's launch, after the timed
 * dispatches and the buffers' read-back, which the backend replays as many times as the metrics
 * need passes (kp_backend_ops.counters: CUDA's CUPTI Range Profiler, kernel replay). None of its
 * runs is a timing: every figure per second divides a counter by the median of the timed
 * dispatches. The buffers' digests are read before it, so they are what they are without
 * --counters.
 *
 * The standard set (KP_COUNTER_LIST), as ncu names them on Hopper (sm_90) and the architectures
 * before it; where the name differs between architectures the item lists alternatives, all are
 * asked for in the one replayed dispatch, and the first the device evaluates is taken (its name
 * is kept, so a result says which it read):
 *   DRAM bytes read / written        dram__bytes_read.sum, dram__bytes_write.sum
 *   L2 bytes read / written          lts__t_sectors_op_read.sum, lts__t_sectors_op_write.sum,
 *                                    x 32 (an L2 sector is 32 bytes)
 *   L2 / L1 hit rate (%)             lts__t_sector_hit_rate.pct, l1tex__t_sector_hit_rate.pct
 *   achieved occupancy (%)           sm__warps_active.avg.pct_of_peak_sustained_active
 *   SM throughput (% of peak)        sm__throughput.avg.pct_of_peak_sustained_elapsed
 *   FMA, ALU pipe (% of peak)        sm__inst_executed_pipe_{fma,alu}.avg.pct_of_peak_sustained_
 *                                    active
 *   tensor pipe (% of peak)          sm__pipe_tensor_cycles_active, then Hopper's
 *                                    sm__pipe_tensor_op_gmma_cycles_active, then
 *                                    sm__pipe_tensor_op_hmma_cycles_active (Volta..Ampere), each
 *                                    .avg.pct_of_peak_sustained_active, then
 *                                    sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active
 *   warp instructions executed       smsp__inst_executed.sum
 *   FLOPs (SASS thread instructions) smsp__sass_thread_inst_executed_op_{ffma,fadd,fmul,dfma,dadd,
 *                                    dmul,hfma,hadd,hmul}_pred_on.sum: FLOPs = 2 x fma + add + mul
 *                                    per precision (ncu's roofline rule; a packed half2
 *                                    instruction counts once; tensor-core work is not counted,
 *                                    its pipe utilisation shows it)
 * Registers and local (spill) memory per thread are the reflection's, already known.
 *
 * Nothing here prints; kp_lab_counters and kp_counters_list touch the device, the rest is pure.
 */
#ifndef KP_LAB_COUNTERS_H
#define KP_LAB_COUNTERS_H

#include "core/readings.h"
#include "base/json.h"
#include "lab/lab.h"

/* What a counter's value is in. */
typedef enum kp_counter_unit {
    KP_COUNTER_UNIT_BYTES,
    KP_COUNTER_UNIT_PERCENT, /* 0..100 */
    KP_COUNTER_UNIT_COUNT,
} kp_counter_unit;

/* The standard set: X(ID, JSON key, label for people, unit, scale, metric, alternatives...).
 * value = metric's value x scale. At most KP_COUNTER_ALTERNATIVES names per item. */
#define KP_COUNTER_ALTERNATIVES 4
#define KP_COUNTER_LIST(X)                                                                         \
    X(DRAM_READ, "dram_read_bytes", "DRAM read", KP_COUNTER_UNIT_BYTES, 1, "dram__bytes_read.sum") \
    X(DRAM_WRITE, "dram_write_bytes", "DRAM written", KP_COUNTER_UNIT_BYTES, 1,                    \
      "dram__bytes_write.sum")                                                                     \
    X(L2_READ, "l2_read_bytes", "L2 read", KP_COUNTER_UNIT_BYTES, 32,                              \
      "lts__t_sectors_op_read.sum")                                                                \
    X(L2_WRITE, "l2_write_bytes", "L2 written", KP_COUNTER_UNIT_BYTES, 32,                         \
      "lts__t_sectors_op_write.sum")                                                               \
    X(L2_HIT_RATE, "l2_hit_rate_pct", "L2 hit rate", KP_COUNTER_UNIT_PERCENT, 1,                   \
      "lts__t_sector_hit_rate.pct")                                                                \
    X(L1_HIT_RATE, "l1_hit_rate_pct", "L1 hit rate", KP_COUNTER_UNIT_PERCENT, 1,                   \
      "l1tex__t_sector_hit_rate.pct")                                                              \
    X(OCCUPANCY, "achieved_occupancy_pct", "achieved occupancy", KP_COUNTER_UNIT_PERCENT, 1,       \
      "sm__warps_active.avg.pct_of_peak_sustained_active")                                         \
    X(SM_THROUGHPUT, "sm_throughput_pct", "SM throughput", KP_COUNTER_UNIT_PERCENT, 1,             \
      "sm__throughput.avg.pct_of_peak_sustained_elapsed")                                          \
    X(PIPE_FMA, "pipe_fma_pct", "FMA pipe", KP_COUNTER_UNIT_PERCENT, 1,                            \
      "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active")                               \
    X(PIPE_ALU, "pipe_alu_pct", "ALU pipe", KP_COUNTER_UNIT_PERCENT, 1,                            \
      "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active")                               \
    X(PIPE_TENSOR, "pipe_tensor_pct", "tensor pipe", KP_COUNTER_UNIT_PERCENT, 1,                   \
      "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",                            \
      "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",                    \
      "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",                    \
      "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active")                            \
    X(INSTRUCTIONS, "warp_instructions", "instructions", KP_COUNTER_UNIT_COUNT, 1,                 \
      "smsp__inst_executed.sum")                                                                   \
    X(FFMA, "ffma", "fp32 fma", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")                                       \
    X(FADD, "fadd", "fp32 add", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum")                                       \
    X(FMUL, "fmul", "fp32 mul", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum")                                       \
    X(DFMA, "dfma", "fp64 fma", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum")                                       \
    X(DADD, "dadd", "fp64 add", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum")                                       \
    X(DMUL, "dmul", "fp64 mul", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum")                                       \
    X(HFMA, "hfma", "fp16 fma", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum")                                       \
    X(HADD, "hadd", "fp16 add", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum")                                       \
    X(HMUL, "hmul", "fp16 mul", KP_COUNTER_UNIT_COUNT, 1,                                          \
      "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum")

typedef enum kp_counter_id {
#define KP_COUNTER_ENUM_(id, key, label, unit, scale, ...) KP_COUNTER_##id,
    KP_COUNTER_LIST(KP_COUNTER_ENUM_)
#undef KP_COUNTER_ENUM_
        KP_COUNTER_COUNT_
} kp_counter_id;

/* The item's JSON key ("dram_read_bytes"), label ("DRAM read"), unit, and its i-th metric name
 * (NULL past the last alternative). */
const char *kp_counter_key(kp_counter_id id);
const char *kp_counter_label(kp_counter_id id);
kp_counter_unit kp_counter_unit_of(kp_counter_id id);
const char *kp_counter_metric(kp_counter_id id, int alternative);

/* Raw names a user asks for (--counters LIST), beside the standard set. */
#define KP_COUNTERS_MAX_RAW 32
#define KP_COUNTER_NAME_MAX 128

typedef struct kp_counter_value {
    int known;          /* the device evaluated it: value holds it */
    double value;       /* in the item's unit (scale applied) */
    const char *metric; /* the name it was read from; when !known, the first one asked for */
} kp_counter_value;

typedef struct kp_raw_counter {
    char name[KP_COUNTER_NAME_MAX]; /* as the user gave it */
    int known;                      /* 0: "n/a (not on this device)" */
    double value;                   /* as the device gives it, unscaled */
} kp_raw_counter;

/* One kernel's counters: the request (raw names) and, after kp_lab_counters, the values. */
typedef struct kp_counters {
    int nraw;
    kp_raw_counter raw[KP_COUNTERS_MAX_RAW];
    int read;          /* kp_lab_counters ran: have or why_not says how it went */
    int have;          /* the counters were read (each value's known says which) */
    char why_not[512]; /* !have: why, in one line ("no profiling permission ...") */
    kp_counter_value v[KP_COUNTER_COUNT_];
    /* The DRAM-only pass could not run (a non-fatal reason, in one line; "" when it ran): the
     * DRAM figures are the multi-pass reading's, whose writes include the replay's restores. */
    char dram_why[512];
} kp_counters;

/* The note a reading of DRAM bytes carries when the DRAM-only pass could not run ("DRAM writes
 * include the replay's restores (the DRAM-only pass could not run: WHY)"), into buf; "" when it
 * needs none. Returns buf. */
const char *kp_counters_dram_note(const kp_counters *c, char *buf, size_t n);

/* Parse --counters LIST: comma-separated metric names (letters, digits, '_' and '.'), at most
 * KP_COUNTERS_MAX_RAW, each shorter than KP_COUNTER_NAME_MAX, appended to c->raw (a name given
 * twice is kept once). INVALID naming the item for an empty item ("a,,b", a trailing comma, an
 * empty LIST), a character outside that set, or too many or too long names. Whether the device
 * has a name is known only when the counters are read: an unknown one is not an error. */
kprof_status kp_counters_parse_list(const char *list, kp_counters *c, kp_error *err);

/* Read the counters of one dispatch of the session's kernel at launch (see above): the standard
 * set and c->raw. When they cannot be read — the backend has no counters op (OpenCL), the
 * backend says UNAVAILABLE (no profiling permission, another profiler holds the counters, the
 * profiler library is missing) or fails to set them up — c->have is 0 with the reason in
 * c->why_not and the call returns OK: the caller says so in one line and goes on with the
 * timing. It returns an error only for what ends the run: the kernel faulted or timed out
 * (FAULT, TIMEOUT, as a dispatch would), or memory ran out. Sets c->read. */
kprof_status kp_lab_counters(kp_lab *lab, const kp_launch *launch, kp_counters *c, kp_error *err);

/* Whether the session's backend can read counters at all (it has the op, and the session runs
 * where counters are read: in this process): OK, or UNAVAILABLE with the reason kp_lab_counters
 * would give (err may be NULL). OK does not promise the device lets them be read (permission,
 * another profiler). */
kprof_status kp_lab_counters_check(const kp_lab *lab, kp_error *err);

/* FLOPs of the dispatch, from the SASS counters: fp32, fp64 and fp16 (each 2 x fma + add + mul)
 * and the sum of those known. A precision is known when all three of its counters were read
 * (one partly read is unknown, never a partial count); unknown ones hold 0 and print n/a (JSON
 * null). have = fp32_known: without FP32 there are no FLOPs at all. */
typedef struct kp_counters_flops {
    int have;
    int fp32_known, fp64_known, fp16_known;
    double fp32, fp64, fp16, total;
} kp_counters_flops;
void kp_counters_flops_of(const kp_counters *c, kp_counters_flops *out);

/* The busiest of the FMA, ALU and tensor pipes (KP_COUNTER_PIPE_*), or -1 when none is known. */
int kp_counters_top_pipe(const kp_counters *c);

/* What the counters give the readings (core/readings.h), at the timed dispatches' median and the
 * device's measured FLOP peak (GFLOP/s, 0 when none): fills in->measured. c without counters
 * (!c->have) leaves it zero. */
void kp_counters_apply(const kp_counters *c, double peak_gflops, kp_readings_input *in);

/* The "counters" member of a result's JSON: {"available": false, "reason": ...} when they could
 * not be read; else every standard value under "values" (null where the device has none) and
 * the metric each was read from under "metrics", the raw names asked for under "raw",
 * "dram_note" (kp_counters_dram_note, null when none), and the derived figures (from r,
 * computed by kp_readings_compute after kp_counters_apply) under "derived". */
void kp_counters_json(kp_json *j, const char *key, const kp_counters *c,
                      const kp_readings_input *in, const kp_readings *r);

/* The metric names the device of a backend offers (`kprof caps --counters`), on the device
 * kp_backend_choose picks from backend and device (any language), one fn call each. info
 * receives the device. When the device has no counters to list (its backend has no
 * counter_list op, or the op fails short of a fault) that is an answer, not a failure: the call
 * returns OK and sets why_not (its status UNAVAILABLE or the op's, its message the reason on one
 * line); why_not is left as given (clear) when the names were listed. A failure (err) means no
 * device could be chosen or opened, or the op faulted. */
kprof_status kp_counters_list(const char *backend, int device, kp_device_info *info,
                              void (*fn)(const char *name, const char *what, void *ctx), void *ctx,
                              kp_error *why_not, kp_error *err);

#endif
