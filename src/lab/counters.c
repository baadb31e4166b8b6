/*
 * counters.c — hardware counters in the lab (see counters.h): the standard set's table, --counters
 * LIST parsed, one replayed dispatch read through the backend's counters op with every name
 * asked for at once (the standard set's alternatives and the user's raw names), the values the
 * readings take, the "counters" JSON, and the device's metric list for `kprof caps --counters`.
 */
#include "lab/counters.h"
#include "base/util.h"
#include "lab/lab_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kp_counter_def {
    const char *key;
    const char *label;
    kp_counter_unit unit;
    double scale;
    const char *metrics[KP_COUNTER_ALTERNATIVES];
} kp_counter_def;

static const kp_counter_def kp_counter_defs[KP_COUNTER_COUNT_] = {
#define KP_COUNTER_DEF_(id, key, label, unit, scale, ...) {key, label, unit, scale, {__VA_ARGS__}},
    KP_COUNTER_LIST(KP_COUNTER_DEF_)
#undef KP_COUNTER_DEF_
};

const char *kp_counter_key(kp_counter_id id)
{
    return id >= 0 && id < KP_COUNTER_COUNT_ ? kp_counter_defs[id].key : "";
}

const char *kp_counter_label(kp_counter_id id)
{
    return id >= 0 && id < KP_COUNTER_COUNT_ ? kp_counter_defs[id].label : "";
}

kp_counter_unit kp_counter_unit_of(kp_counter_id id)
{
    return id >= 0 && id < KP_COUNTER_COUNT_ ? kp_counter_defs[id].unit : KP_COUNTER_UNIT_COUNT;
}

const char *kp_counter_metric(kp_counter_id id, int alternative)
{
    if (id < 0 || id >= KP_COUNTER_COUNT_ || alternative < 0 ||
        alternative >= KP_COUNTER_ALTERNATIVES)
        return NULL;
    return kp_counter_defs[id].metrics[alternative];
}

/* ---- --counters LIST ------------------------------------------------------------------------ */

static int kp_metric_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
}

kprof_status kp_counters_parse_list(const char *list, kp_counters *c, kp_error *err)
{
    if (!list || !*list)
        return kp_error_set(err, KPROF_INVALID,
                            "--counters LIST is empty: give metric names separated by commas "
                            "(ncu's names, e.g. dram__bytes_read.sum)");
    const char *p = list;
    for (int item = 1;; item++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0)
            return kp_error_set(err, KPROF_INVALID,
                                "--counters '%s': item %d is empty (a stray comma?): give metric "
                                "names separated by single commas",
                                list, item);
        if (len >= KP_COUNTER_NAME_MAX)
            return kp_error_set(err, KPROF_INVALID,
                                "--counters: item %d is %zu characters long, more than a metric "
                                "name's %d",
                                item, len, KP_COUNTER_NAME_MAX - 1);
        for (size_t i = 0; i < len; i++)
            if (!kp_metric_char(p[i]))
                return kp_error_set(err, KPROF_INVALID,
                                    "--counters: item %d '%.*s' holds '%c', which no metric name "
                                    "holds (letters, digits, '_' and '.': dram__bytes_read.sum)",
                                    item, (int)len, p, p[i]);
        int seen = 0;
        for (int i = 0; i < c->nraw && !seen; i++)
            seen = strlen(c->raw[i].name) == len && memcmp(c->raw[i].name, p, len) == 0;
        if (!seen) {
            if (c->nraw == KP_COUNTERS_MAX_RAW)
                return kp_error_set(err, KPROF_INVALID, "--counters: more than %d metric names",
                                    KP_COUNTERS_MAX_RAW);
            kp_raw_counter *r = &c->raw[c->nraw++];
            memset(r, 0, sizeof *r);
            memcpy(r->name, p, len);
            r->name[len] = '\0';
        }
        if (!comma) break;
        p = comma + 1;
    }
    return KPROF_OK;
}

/* ---- reading them ---------------------------------------------------------------------------- */

/* The names asked for: every alternative of the standard set, then the raw names not already
 * among them. index_of[i] is where raw name i is in the list. */
typedef struct kp_counter_request {
    size_t n;
    const char **names;
    double *values;
    unsigned char *bad;
    size_t raw_index[KP_COUNTERS_MAX_RAW];
} kp_counter_request;

static size_t kp_request_find(const kp_counter_request *q, const char *name)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->names[i], name) == 0) return i;
    return (size_t)-1;
}

static kprof_status kp_request_make(const kp_counters *c, kp_counter_request *q, kp_error *err)
{
    size_t cap = (size_t)KP_COUNTER_COUNT_ * KP_COUNTER_ALTERNATIVES + KP_COUNTERS_MAX_RAW;
    memset(q, 0, sizeof *q);
    q->names = calloc(cap, sizeof *q->names);
    q->values = calloc(cap, sizeof *q->values);
    q->bad = calloc(cap, sizeof *q->bad);
    if (!q->names || !q->values || !q->bad)
        return kp_error_set(err, KPROF_NOMEM, "out of memory asking for counters");
    for (int id = 0; id < KP_COUNTER_COUNT_; id++)
        for (int a = 0; a < KP_COUNTER_ALTERNATIVES; a++) {
            const char *m = kp_counter_defs[id].metrics[a];
            if (m && kp_request_find(q, m) == (size_t)-1) q->names[q->n++] = m;
        }
    for (int i = 0; i < c->nraw; i++) {
        size_t at = kp_request_find(q, c->raw[i].name);
        if (at == (size_t)-1) {
            at = q->n;
            q->names[q->n++] = c->raw[i].name;
        }
        q->raw_index[i] = at;
    }
    for (size_t i = 0; i < q->n; i++)
        q->values[i] = NAN;
    return KPROF_OK;
}

static void kp_request_free(kp_counter_request *q)
{
    free(q->names);
    free(q->values);
    free(q->bad);
}

/* A value the device gave: not flagged, and a number. */
static int kp_request_good(const kp_counter_request *q, size_t i)
{
    return i < q->n && !q->bad[i] && isfinite(q->values[i]);
}

/* why_not from an error: one line (each line break of a message of several becomes ";"). */
static void kp_why_not(char *buf, size_t n, const kp_error *why, kprof_status st)
{
    kp_strlcpy(buf, why->message[0] ? why->message : kprof_strerror(st), n);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ';';
}

/* The statuses that end a run: everything else only means the counters could not be read. */
static int kp_counters_fatal(kprof_status st)
{
    return st == KPROF_FAULT || st == KPROF_TIMEOUT || st == KPROF_NOMEM;
}

kprof_status kp_lab_counters_check(const kp_lab *lab, kp_error *err)
{
    const kp_backend_ops *ops = lab->info.ops;
    if (!ops || !ops->counters)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "the %s backend reads no hardware counters (kprof reads them on CUDA "
                            "devices, through CUPTI); the timings are unaffected",
                            ops ? ops->name : "device's");
    /* Where the session runs, counters are not read (kp_lab_remote: no backend with counters
     * runs its kernels in kprof's own process today). */
    if (!lab->impl->counters)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "counters are not read for a session in a child process (%s)",
                            ops->name);
    return KPROF_OK;
}

/* DRAM traffic read again on its own. The set above needs several passes, and kernel replay
 * restores the buffers between passes: the restore's lines are still dirty in the L2 when the
 * next pass runs, and their write-back counts as the kernel's DRAM writes (on the H200, a triad
 * over 3 x 256 MiB showed 278 MB written for its 268 MB, and a kernel writing 8 MiB 132 MB).
 * The two DRAM metrics alone take one pass, which no restore precedes (the backend empties the
 * L2 first, as ncu does). Where that dispatch cannot be read (a reason that does not end the
 * run), the first reading stands, marked: c->dram_why says why. */
static kprof_status kp_lab_counters_dram(kp_lab *lab, const kp_launch *launch, kp_counters *c,
                                         kp_error *err)
{
    if (!c->v[KP_COUNTER_DRAM_READ].known && !c->v[KP_COUNTER_DRAM_WRITE].known) return KPROF_OK;
    const char *names[2] = {kp_counter_defs[KP_COUNTER_DRAM_READ].metrics[0],
                            kp_counter_defs[KP_COUNTER_DRAM_WRITE].metrics[0]};
    double values[2] = {NAN, NAN};
    unsigned char bad[2] = {0, 0};
    kp_error why = {0};
    kprof_status st = lab->impl->counters(lab, launch, names, 2, values, bad, &why);
    if (st != KPROF_OK) {
        if (kp_counters_fatal(st)) {
            kp_error_move(err, &why);
            return st;
        }
        kp_why_not(c->dram_why, sizeof c->dram_why, &why, st);
        kp_error_clear(&why);
        return KPROF_OK;
    }
    kp_error_clear(&why);
    const kp_counter_id ids[2] = {KP_COUNTER_DRAM_READ, KP_COUNTER_DRAM_WRITE};
    for (int i = 0; i < 2; i++) {
        if (bad[i] || !isfinite(values[i])) {
            if (c->v[ids[i]].known)
                snprintf(c->dram_why, sizeof c->dram_why, "the device gave no value for %s",
                         names[i]);
            continue;
        }
        c->v[ids[i]] = (kp_counter_value){1, values[i] * kp_counter_defs[ids[i]].scale, names[i]};
        for (int r = 0; r < c->nraw; r++) /* the same name asked for raw: the same reading */
            if (strcmp(c->raw[r].name, names[i]) == 0) {
                c->raw[r].known = 1;
                c->raw[r].value = values[i];
            }
    }
    return KPROF_OK;
}

kprof_status kp_lab_counters(kp_lab *lab, const kp_launch *launch, kp_counters *c, kp_error *err)
{
    c->read = 1;
    c->have = 0;
    c->why_not[0] = '\0';
    c->dram_why[0] = '\0';
    for (int id = 0; id < KP_COUNTER_COUNT_; id++)
        c->v[id] = (kp_counter_value){0, 0, kp_counter_defs[id].metrics[0]};
    for (int i = 0; i < c->nraw; i++) {
        c->raw[i].known = 0;
        c->raw[i].value = 0;
    }
    kp_error off = {0};
    if (kp_lab_counters_check(lab, &off) != KPROF_OK) {
        kp_strlcpy(c->why_not, off.message, sizeof c->why_not);
        kp_error_clear(&off);
        return KPROF_OK;
    }
    kp_counter_request q;
    kprof_status st = kp_request_make(c, &q, err);
    if (st != KPROF_OK) {
        kp_request_free(&q);
        return st;
    }
    kp_error why = {0};
    st = lab->impl->counters(lab, launch, q.names, q.n, q.values, q.bad, &why);
    if (st != KPROF_OK) {
        if (kp_counters_fatal(st)) {
            kp_request_free(&q);
            kp_error_move(err, &why); /* the message (and log) move to the caller */
            return st;
        }
        kp_why_not(c->why_not, sizeof c->why_not, &why, st);
        kp_error_clear(&why);
        kp_request_free(&q);
        return KPROF_OK;
    }
    kp_error_clear(&why);
    c->have = 1;
    for (int id = 0; id < KP_COUNTER_COUNT_; id++) {
        const kp_counter_def *d = &kp_counter_defs[id];
        for (int a = 0; a < KP_COUNTER_ALTERNATIVES && d->metrics[a]; a++) {
            size_t at = kp_request_find(&q, d->metrics[a]);
            if (!kp_request_good(&q, at)) continue;
            c->v[id] = (kp_counter_value){1, q.values[at] * d->scale, d->metrics[a]};
            break;
        }
    }
    for (int i = 0; i < c->nraw; i++) {
        size_t at = q.raw_index[i];
        c->raw[i].known = kp_request_good(&q, at);
        c->raw[i].value = c->raw[i].known ? q.values[at] : 0;
    }
    kp_request_free(&q);
    return kp_lab_counters_dram(lab, launch, c, err);
}

/* ---- what follows from them ----------------------------------------------------------------- */

static int kp_known(const kp_counters *c, kp_counter_id id)
{
    return c->have && c->v[id].known;
}

static double kp_value(const kp_counters *c, kp_counter_id id)
{
    return kp_known(c, id) ? c->v[id].value : 0;
}

/* 2 x fma + add + mul of one precision; *known when all three were read. */
static double kp_flops_of(const kp_counters *c, kp_counter_id fma, kp_counter_id add,
                          kp_counter_id mul, int *known)
{
    *known = kp_known(c, fma) && kp_known(c, add) && kp_known(c, mul);
    return 2 * kp_value(c, fma) + kp_value(c, add) + kp_value(c, mul);
}

void kp_counters_flops_of(const kp_counters *c, kp_counters_flops *out)
{
    memset(out, 0, sizeof *out);
    int sp = 0, dp = 0, hp = 0;
    double fp32 = kp_flops_of(c, KP_COUNTER_FFMA, KP_COUNTER_FADD, KP_COUNTER_FMUL, &sp);
    double fp64 = kp_flops_of(c, KP_COUNTER_DFMA, KP_COUNTER_DADD, KP_COUNTER_DMUL, &dp);
    double fp16 = kp_flops_of(c, KP_COUNTER_HFMA, KP_COUNTER_HADD, KP_COUNTER_HMUL, &hp);
    if (!sp) return;
    out->have = 1;
    out->fp32_known = 1;
    out->fp32 = fp32;
    /* A precision partly read is unknown: a count of some of its instructions is no figure. */
    out->fp64_known = dp;
    out->fp64 = dp ? fp64 : 0;
    out->fp16_known = hp;
    out->fp16 = hp ? fp16 : 0;
    out->total = out->fp32 + out->fp64 + out->fp16;
}

const char *kp_counters_dram_note(const kp_counters *c, char *buf, size_t n)
{
    if (n) buf[0] = '\0';
    if (c && c->have && c->dram_why[0] &&
        (kp_known(c, KP_COUNTER_DRAM_READ) || kp_known(c, KP_COUNTER_DRAM_WRITE)))
        snprintf(buf, n,
                 "DRAM writes include the replay's restores (the DRAM-only pass could not run: "
                 "%s)",
                 c->dram_why);
    return buf;
}

int kp_counters_top_pipe(const kp_counters *c)
{
    static const kp_counter_id pipes[] = {KP_COUNTER_PIPE_FMA, KP_COUNTER_PIPE_ALU,
                                          KP_COUNTER_PIPE_TENSOR};
    int top = -1;
    for (size_t i = 0; i < sizeof pipes / sizeof pipes[0]; i++)
        if (kp_known(c, pipes[i]) && (top < 0 || c->v[pipes[i]].value > c->v[top].value))
            top = (int)pipes[i];
    return top;
}

void kp_counters_apply(const kp_counters *c, double peak_gflops, kp_readings_input *in)
{
    kp_readings_measured *m = &in->measured;
    memset(m, 0, sizeof *m);
    if (!c || !c->have) return;
    m->peak_gflops = peak_gflops > 0 ? peak_gflops : 0;
    if (kp_known(c, KP_COUNTER_DRAM_READ) && kp_known(c, KP_COUNTER_DRAM_WRITE)) {
        m->have_dram = 1;
        m->dram_read_bytes = c->v[KP_COUNTER_DRAM_READ].value;
        m->dram_write_bytes = c->v[KP_COUNTER_DRAM_WRITE].value;
    }
    kp_counters_flops f;
    kp_counters_flops_of(c, &f);
    m->have_flops = f.have;
    m->flops = f.total;
    if (kp_known(c, KP_COUNTER_SM_THROUGHPUT)) {
        m->have_sm_throughput = 1;
        m->sm_throughput_pct = c->v[KP_COUNTER_SM_THROUGHPUT].value;
    }
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void kp_json_maybe(kp_json *j, const char *key, int have, double v)
{
    if (have)
        kp_json_double(j, key, v);
    else
        kp_json_null(j, key);
}

void kp_counters_json(kp_json *j, const char *key, const kp_counters *c,
                      const kp_readings_input *in, const kp_readings *r)
{
    kp_json_object_begin(j, key);
    kp_json_bool(j, "available", c->have);
    if (!c->have) {
        kp_json_string(j, "reason", c->why_not[0] ? c->why_not : "the counters were not read");
        kp_json_object_end(j);
        return;
    }
    kp_json_null(j, "reason");
    kp_json_string(j, "source",
                   "one replayed dispatch after the timed ones (kernel replay); "
                   "rates use the timed dispatches' median");
    char note[700];
    kp_counters_dram_note(c, note, sizeof note);
    kp_json_string(j, "dram_note", note[0] ? note : NULL);
    kp_json_object_begin(j, "values");
    for (int id = 0; id < KP_COUNTER_COUNT_; id++)
        kp_json_maybe(j, kp_counter_defs[id].key, c->v[id].known, c->v[id].value);
    kp_json_object_end(j);
    kp_json_object_begin(j, "metrics");
    for (int id = 0; id < KP_COUNTER_COUNT_; id++)
        kp_json_string(j, kp_counter_defs[id].key, c->v[id].metric);
    kp_json_object_end(j);
    kp_json_array_begin(j, "raw");
    for (int i = 0; i < c->nraw; i++) {
        kp_json_object_begin(j, NULL);
        kp_json_string(j, "name", c->raw[i].name);
        kp_json_bool(j, "available", c->raw[i].known);
        kp_json_maybe(j, "value", c->raw[i].known, c->raw[i].value);
        if (!c->raw[i].known) kp_json_string(j, "note", "not on this device");
        kp_json_object_end(j);
    }
    kp_json_array_end(j);

    const kp_readings_measured *m = &in->measured;
    kp_counters_flops f;
    kp_counters_flops_of(c, &f);
    int top = kp_counters_top_pipe(c);
    kp_json_object_begin(j, "derived");
    kp_json_maybe(j, "dram_bytes", r->measured || r->dram_cold, r->dram_bytes);
    kp_json_bool(j, "dram_cold_l2_only", r->dram_cold);
    kp_json_string(j, "dram_cold_l2_note",
                   r->dram_cold ? "DRAM bytes as from a cold L2, as ncu reads them; the timed "
                                  "dispatches ran with a warm L2 and the data fits in the cache: "
                                  "no measured GB/s, bandwidth reading or memory bound"
                                : NULL);
    kp_json_maybe(j, "measured_gb_per_s", r->measured, r->measured_gbps);
    kp_json_maybe(j, "ceiling_gb_per_s", in->ceiling_gbs > 0, in->ceiling_gbs);
    kp_json_maybe(j, "ceiling_percent", r->measured && in->ceiling_gbs > 0,
                  100 * r->measured_fraction);
    kp_json_uint(j, "estimated_bytes", in->bytes);
    kp_json_string(j, "estimated_from", in->bytes_assumed ? "buffers" : "--bytes");
    kp_json_maybe(j, "measured_over_estimated", r->traffic != KP_TRAFFIC_UNKNOWN, r->bytes_ratio);
    kp_json_string(j, "traffic",
                   r->traffic == KP_TRAFFIC_MATCHES ? "matches"
                   : r->traffic == KP_TRAFFIC_MORE  ? "more"
                   : r->traffic == KP_TRAFFIC_LESS  ? "less"
                                                    : NULL);
    kp_json_maybe(j, "flops", f.have, f.total);
    kp_json_maybe(j, "flops_fp32", f.fp32_known, f.fp32);
    kp_json_maybe(j, "flops_fp64", f.fp64_known, f.fp64);
    kp_json_maybe(j, "flops_fp16", f.fp16_known, f.fp16);
    kp_json_maybe(j, "gflop_per_s", m->have_flops, r->gflops);
    kp_json_maybe(j, "arithmetic_intensity", r->have_intensity, r->intensity);
    kp_json_maybe(j, "peak_gflop_per_s", m->peak_gflops > 0, m->peak_gflops);
    kp_json_maybe(j, "peak_percent", m->have_flops && m->peak_gflops > 0, 100 * r->flop_fraction);
    kp_json_maybe(j, "ridge_flop_per_byte", r->have_ridge, r->ridge);
    kp_json_maybe(j, "attainable_gflop_per_s", r->have_intensity && r->have_ridge,
                  r->attainable_gflops);
    kp_json_maybe(j, "compute_roof_percent", r->compute_known, 100 * r->compute_fraction);
    kp_json_string(j, "bound", kp_bound_name(r->bound));
    kp_json_string(j, "top_pipe", top < 0 ? NULL : kp_counter_defs[top].key);
    kp_json_object_end(j);
    kp_json_object_end(j);
}

/* ---- the device's list ------------------------------------------------------------------------
 */

kprof_status kp_counters_list(const char *backend, int device, kp_device_info *info,
                              void (*fn)(const char *name, const char *what, void *ctx), void *ctx,
                              kp_error *why_not, kp_error *err)
{
    const kp_backend_ops *ops = NULL;
    int index = -1;
    kprof_status st = kp_backend_choose(backend, device, -1, &ops, &index, err);
    if (st == KPROF_OK) st = ops->device_info(index, info, err);
    if (st != KPROF_OK) return st;
    if (!ops->counter_list) {
        kp_error_set(why_not, KPROF_UNAVAILABLE,
                     "the %s backend reads no hardware counters (kprof reads them on CUDA devices, "
                     "through CUPTI)",
                     ops->name);
        return KPROF_OK;
    }
    kp_device *dev = NULL;
    st = ops->open(index, &dev, err);
    if (st != KPROF_OK) return st;
    kp_error why = {0};
    st = ops->counter_list(dev, fn, ctx, &why);
    ops->close(dev);
    if (st == KPROF_OK || kp_counters_fatal(st)) {
        kp_error_move(st != KPROF_OK ? err : NULL, &why);
        return st;
    }
    char line[512];
    kp_why_not(line, sizeof line, &why, st);
    kp_error_clear(&why);
    kp_error_set(why_not, st, "%s", line);
    return KPROF_OK;
}
