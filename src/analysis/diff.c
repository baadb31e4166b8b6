/*
 * diff.c — two traces or two results compared (see diff.h): analysis first, the JSON after; the
 * text is the command's (tools/kprof/cmd_diff.c), from these numbers only.
 */
#include "analysis/diff.h"
#include "base/json.h"
#include "core/judge.h"
#include "core/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const kp_diff_by_name[3] = {"shape", "name", "path"};

void kp_diff_config_default(kp_diff_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->by = KP_DIFF_BY_SHAPE;
    cfg->escape_text = 1;
    cfg->threshold = 0.01;
    cfg->fail_if_slower = -1;
    cfg->min_effect_ns = KP_DIFF_MIN_EFFECT_NS;
    cfg->min_share = KP_DIFF_MIN_SHARE;
    cfg->run_allowance = KP_DIFF_TRACE_RUN_ALLOWANCE;
}

/* ---- what the inputs are ------------------------------------------------------------------- */

/* @0, @-1 (@ then an optional minus and digits) or digits alone: a reference into the history. */
static int kp_diff_is_history_ref(const char *arg)
{
    int64_t id, back;
    return kp_history_parse_ref(arg, &id, &back, NULL) == KPROF_OK;
}

/* Which kind of input arg is: a history reference by its form; a file by its name (.kprof,
 * .json) or else by its first bytes (SQLite's header, or JSON's opening brace). A file that is
 * neither is bad input (CORRUPT, exit 2), named. */
kprof_status kp_diff_input_of(const char *arg, kp_diff_input *kind, kp_error *err)
{
    if (kp_diff_is_history_ref(arg)) {
        *kind = KP_DIFF_HISTORY;
        return KPROF_OK;
    }
    kprof_status st = kp_input_check(arg, "a trace or a bench result", err);
    if (st != KPROF_OK) return st;
    const char *ext = kp_path_extension(arg);
    if (strcmp(ext, "kprof") == 0) {
        *kind = KP_DIFF_TRACE;
        return KPROF_OK;
    }
    if (strcmp(ext, "json") == 0) {
        *kind = KP_DIFF_BENCH;
        return KPROF_OK;
    }
    unsigned char head[64];
    size_t got = 0;
    FILE *f = fopen(arg, "rb");
    if (!f) return kp_error_set(err, KPROF_IO, "%s: cannot open", arg);
    got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got >= 16 && memcmp(head, "SQLite format 3", 16) == 0) {
        *kind = KP_DIFF_TRACE;
        return KPROF_OK;
    }
    size_t i = 0;
    if (got >= 3 && memcmp(head, "\xef\xbb\xbf", 3) == 0) i = 3; /* a UTF-8 byte-order mark */
    while (i < got && (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r'))
        i++;
    if (i < got && head[i] == '{') {
        *kind = KP_DIFF_BENCH;
        return KPROF_OK;
    }
    return kp_error_set(err, KPROF_CORRUPT,
                        "%s is neither a kprof trace (an SQLite file, .kprof) nor a `kprof bench` "
                        "result (JSON with \"kind\": \"bench\")",
                        arg);
}

const char *kp_diff_input_name(kp_diff_input k)
{
    switch (k) {
    case KP_DIFF_TRACE:
        return "a trace";
    case KP_DIFF_BENCH:
        return "a bench result";
    case KP_DIFF_HISTORY:
        return "a history run";
    }
    return "?";
}

/* ---- two traces: the numbers ------------------------------------------------------------- */

static const char *const kp_diff_table_key[KP_DIFF_TABLES] = {"device", "host", "ranges"};

static int kp_diff_table_of(kp_event_kind kind)
{
    switch (kind) {
    case KP_EVENT_KERNEL:
    case KP_EVENT_MEMCPY:
    case KP_EVENT_MEMSET:
        return KP_DIFF_DEVICE;
    case KP_EVENT_API:
        return KP_DIFF_HOST;
    case KP_EVENT_RANGE:
        return KP_DIFF_RANGES;
    default:
        return -1;
    }
}

static void kp_diff_trace_free(kp_diff_trace *t)
{
    for (size_t i = 0; i < t->nkeys; i++) {
        free(t->keys[i].name);
        free(t->keys[i].base);
        free(t->keys[i].ns);
        free(t->keys[i].sorted);
    }
    free(t->keys);
    kp_trace_verdicts_free(&t->v); /* before the source: it borrows its names */
    kp_event_source_close(t->src);
    memset(t, 0, sizeof *t);
}

static int kp_diff_key_cmp(const void *x, const void *y)
{
    const kp_diff_key *a = x, *b = y;
    if (a->table != b->table) return a->table < b->table ? -1 : 1;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* A node's row name: its label by name (a shape's label by shape), its path by path. Heap, or
 * NULL when out of memory. */
static char *kp_diff_node_name(const kp_aggregation *agg, uint32_t id, kp_diff_by by)
{
    if (by != KP_DIFF_BY_PATH) {
        char buf[32];
        const char *label = kp_aggregation_name(agg, id, buf, sizeof buf);
        return strdup(label);
    }
    kp_str path = {0};
    kp_aggregation_path(agg, id, &path);
    if (path.failed) {
        kp_str_free(&path);
        return NULL;
    }
    return kp_str_take(&path);
}

/* An instance of a row while loading: where it ran among the trace's instances, and how long. */
typedef struct kp_diff_instance {
    uint64_t seq;
    double ns;
} kp_diff_instance;

static int kp_diff_instance_cmp(const void *x, const void *y)
{
    const kp_diff_instance *a = x, *b = y;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Open a trace and read its rows (every node of its aggregation with instances, merged by
 * (table, kind, name, shape or path), with every instance's duration in the order they ran)
 * and its verdicts. */
static kprof_status kp_diff_trace_load(kp_diff_trace *t, const kp_diff_config *cfg, kp_error *err)
{
    kp_aggregation *agg = NULL;
    kp_trace_instances inst = {0};
    kp_trace_shapes shapes = {0};
    kp_diff_key *nodes = NULL; /* one per node, before merging */
    kp_diff_instance *run = NULL;
    size_t nnodes = 0;
    kprof_status st = kp_event_source_open(t->path, &t->src, err);
    if (st == KPROF_OK && cfg->escape_text)
        st = kp_event_source_escape_text(t->src, err); /* tables */
    if (st == KPROF_OK)
        st = kp_trace_aggregate_instances(t->src, cfg->raw ? KP_TRACE_AGGREGATE_POLLING : 0,
                                          cfg->by == KP_DIFF_BY_SHAPE ? &shapes : NULL, &agg, &inst,
                                          err);
    if (st == KPROF_OK) st = kp_trace_verdicts_read(t->src, cfg->raw, &t->v, err);
    if (st != KPROF_OK) goto done;
    t->events = kp_aggregation_get_totals(agg)->events;
    t->ends_before_start = kp_aggregation_get_totals(agg)->ends_before_start;
    t->gpu_busy_ns = kp_aggregation_get_totals(agg)->gpu_busy_ns;
    size_t count = kp_aggregation_node_count(agg);
    nodes = calloc(count ? count : 1, sizeof *nodes);
    if (!nodes) goto nomem;
    for (uint32_t id = 1; id < count; id++) {
        const kp_aggregation_node *node = kp_aggregation_get_node(agg, id);
        int table = kp_diff_table_of(node->kind);
        if (table < 0 || id >= inst.nnodes || inst.n[id] == 0) continue;
        kp_diff_key *k = &nodes[nnodes];
        k->table = table;
        k->kind = node->kind;
        k->total_ns = node->stats.duration_ns;
        k->n = inst.n[id];
        k->name = kp_diff_node_name(agg, id, cfg->by);
        if (!k->name) goto nomem;
        k->node = id;
        nnodes++;
        const kp_trace_shape *shape = kp_trace_shape_of(&shapes, node->name);
        if (shape) {
            const char *base = kp_event_source_string(t->src, shape->name, NULL);
            k->shape = *shape;
            k->shape.label = NULL;
            k->base = strdup(base ? base : "");
            if (!k->base) goto nomem;
        }
    }
    qsort(nodes, nnodes, sizeof *nodes, kp_diff_key_cmp);
    t->keys = calloc(nnodes ? nnodes : 1, sizeof *t->keys);
    if (!t->keys) goto nomem;
    for (size_t i = 0; i < nnodes;) {
        size_t j = i, n = 0;
        int64_t total = 0;
        for (; j < nnodes && kp_diff_key_cmp(&nodes[i], &nodes[j]) == 0; j++) {
            n += nodes[j].n;
            total = kp_i64_add_sat(total, nodes[j].total_ns);
        }
        kp_diff_key *k = &t->keys[t->nkeys];
        *k = nodes[i];
        k->ns = malloc((n ? n : 1) * sizeof *k->ns);
        k->sorted = malloc((n ? n : 1) * sizeof *k->sorted);
        k->n = 0;
        k->total_ns = total;
        nodes[i].name = NULL; /* the key owns them now */
        nodes[i].base = NULL;
        t->nkeys++;
        free(run);
        run = malloc((n ? n : 1) * sizeof *run);
        if (!k->ns || !k->sorted || !run) goto nomem;
        for (size_t m = i; m < j; m++) {
            uint32_t id = nodes[m].node;
            for (size_t q = 0; q < inst.n[id]; q++)
                run[k->n++] = (kp_diff_instance){inst.seq[id][q], (double)inst.ns[id][q]};
        }
        qsort(run, k->n, sizeof *run, kp_diff_instance_cmp); /* the nodes' instances in turn */
        for (size_t q = 0; q < k->n; q++)
            k->ns[q] = k->sorted[q] = run[q].ns;
        kp_sort_doubles(k->sorted, k->n);
        i = j;
    }
    goto done;
nomem:
    st = kp_error_nomem(err);
done:
    for (size_t i = 0; i < nnodes; i++) {
        free(nodes[i].name);
        free(nodes[i].base);
    }
    free(nodes);
    free(run);
    kp_trace_instances_free(&inst);
    kp_aggregation_destroy(agg); /* before the source and the shapes: they name its nodes */
    kp_trace_shapes_free(&shapes);
    return st;
}

#define KP_DIFF_STATUS_KEY_(NAME, key, text)  key,
#define KP_DIFF_STATUS_TEXT_(NAME, key, text) text,
const char *const kp_diff_status_key[KP_DIFF_STATUS_COUNT] = {
    KP_DIFF_STATUS_LIST(KP_DIFF_STATUS_KEY_)};
const char *const kp_diff_status_text[KP_DIFF_STATUS_COUNT] = {
    KP_DIFF_STATUS_LIST(KP_DIFF_STATUS_TEXT_)};
#undef KP_DIFF_STATUS_KEY_
#undef KP_DIFF_STATUS_TEXT_

static kp_diff_status kp_diff_status_of_verdict(kp_compare_verdict v)
{
    switch (v) {
    case KP_COMPARE_SLOWER:
        return KP_DIFF_SLOWER;
    case KP_COMPARE_FASTER:
        return KP_DIFF_FASTER;
    case KP_COMPARE_SAME:
        return KP_DIFF_SAME;
    default:
        return KP_DIFF_UNSURE;
    }
}

/* The row has a comparison: a ratio with its interval. */
int kp_diff_status_compared(kp_diff_status s)
{
    return s <= KP_DIFF_SMALL;
}

/* A change is something found: slower, faster, or there in one trace only (not-judged rows are
 * none of these: they are never a change). */
int kp_diff_status_is_change(kp_diff_status s)
{
    return s == KP_DIFF_SLOWER || s == KP_DIFF_FASTER || s == KP_DIFF_ONLY_A || s == KP_DIFF_ONLY_B;
}

/* The changes among the counts of each status. */
size_t kp_diff_changes(const size_t counts[KP_DIFF_STATUS_COUNT])
{
    size_t changes = 0;
    for (int s = 0; s < KP_DIFF_STATUS_COUNT; s++)
        if (kp_diff_status_is_change((kp_diff_status)s)) changes += counts[s];
    return changes;
}

double kp_diff_median_ns(const kp_diff_key *k)
{
    return k && k->n ? k->sorted[k->n / 2] : 0; /* stats.h's median: sorted[n/2] */
}

static int kp_diff_row_cmp(const void *x, const void *y)
{
    const kp_diff_row *a = x, *b = y;
    if (a->table != b->table) return a->table < b->table ? -1 : 1;
    int64_t da = a->delta_ns < 0 ? -a->delta_ns : a->delta_ns;
    int64_t db = b->delta_ns < 0 ? -b->delta_ns : b->delta_ns;
    if (da != db) return da > db ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c) return c;
    return (a->kind > b->kind) - (a->kind < b->kind);
}

/* One row present in both traces, judged by kprof's comparison engine (core/judge.h) when both
 * have enough instances: each side's instance durations in the order they ran (one at a time:
 * batch 1), across runs (two traces are two runs of the program), the minimum effect
 * --min-effect-us (the engine's min_effect). A FASTER or SLOWER whose total change is under
 * --min-share of the device time is held back as well (SMALL: the engine's rule for an effect
 * too small to matter, applied to the total). Samples in µs, the unit the words are read in. */
static kprof_status kp_diff_judge(kp_diff_row *row, const kp_diff_config *cfg, int64_t device_ns,
                                  kp_error *err)
{
    const kp_diff_key *a = row->a, *b = row->b;
    if (a->n < KP_DIFF_MIN_INSTANCES || b->n < KP_DIFF_MIN_INSTANCES) {
        row->status = KP_DIFF_TOO_FEW;
        return KPROF_OK;
    }
    if (kp_diff_median_ns(a) <= 0 || kp_diff_median_ns(b) <= 0) {
        row->status = KP_DIFF_NO_VERDICT; /* a ratio to or of nothing */
        return KPROF_OK;
    }
    double *us = malloc((a->n + b->n) * sizeof *us);
    if (!us) return kp_error_nomem(err);
    for (size_t i = 0; i < a->n; i++)
        us[i] = a->ns[i] / 1e3;
    for (size_t i = 0; i < b->n; i++)
        us[a->n + i] = b->ns[i] / 1e3;
    kp_judge_config jc;
    kp_judge_config_default(&jc);
    jc.threshold = cfg->threshold;
    jc.min_effect = cfg->min_effect_ns / 1e3;
    jc.across_runs = 1;
    jc.run_allowance = cfg->run_allowance;
    jc.spread_allowance = 1;
    kp_judge_side sa = {.v = us, .n = a->n, .batch = 1};
    kp_judge_side sb = {.v = us + a->n, .n = b->n, .batch = 1};
    kp_judgement j;
    kprof_status st = kp_judge(&sa, &sb, &jc, &j, err);
    free(us);
    if (st != KPROF_OK) return st;
    row->ratio = j.ratio;
    row->interval_verdict = j.interval_verdict;
    row->reasons = j.reasons;
    row->share = device_ns > 0 ? fabs((double)row->delta_ns) / (double)device_ns : 0;
    kp_compare_verdict v = j.verdict;
    if (j.reasons & KP_JUDGE_SMALL) row->small |= KP_DIFF_SMALL_EFFECT;
    int decided =
        j.interval_verdict == KP_COMPARE_FASTER || j.interval_verdict == KP_COMPARE_SLOWER;
    if (decided && device_ns > 0 && row->share < cfg->min_share) {
        row->small |= KP_DIFF_SMALL_SHARE;
        row->reasons |= KP_JUDGE_SMALL;
        v = KP_COMPARE_UNSURE;
    }
    if (row->reasons & KP_JUDGE_INVALID)
        row->status = KP_DIFF_NO_VERDICT;
    else if (row->small)
        row->status = KP_DIFF_SMALL;
    else
        row->status = kp_diff_status_of_verdict(v);
    if (row->status == KP_DIFF_UNSURE || row->status == KP_DIFF_SMALL) {
        kp_judge_words(&j, &jc, "µs", row->reason, sizeof row->reason);
        if (row->small & KP_DIFF_SMALL_SHARE) {
            size_t len = strlen(row->reason);
            snprintf(row->reason + len, sizeof row->reason - len,
                     "%sthe total changed by %.3g%% of the device time, under the minimum "
                     "share of %g%%",
                     len ? "; " : "", 100 * row->share, 100 * cfg->min_share);
        }
    }
    /* As kprof bench's gate: one run a side must clear 1 + P by the run allowance too. */
    if (row->table == KP_DIFF_DEVICE && cfg->fail_if_slower >= 0 && row->status == KP_DIFF_SLOWER)
        row->gate = kp_compare_verdict_of(&row->ratio, cfg->fail_if_slower + cfg->run_allowance) ==
                    KP_COMPARE_SLOWER;
    return KPROF_OK;
}

static int kp_diff_row_add(kp_diff_traces *d, const kp_diff_key *a, const kp_diff_key *b,
                           const kp_diff_config *cfg)
{
    kp_diff_row *row = &d->rows[d->nrows++];
    memset(row, 0, sizeof *row);
    const kp_diff_key *k = a ? a : b;
    row->table = k->table;
    row->kind = k->kind;
    row->name = k->name;
    row->a = a;
    row->b = b;
    row->delta_ns = kp_ns_diff(b ? b->total_ns : 0, a ? a->total_ns : 0);
    /* Host calls and ranges vary between processes (page cache, lazy loading): listed, judged
     * only when asked. */
    row->judged = row->table == KP_DIFF_DEVICE || cfg->judge_host;
    row->status = !row->judged ? KP_DIFF_NOT_JUDGED
                  : !a         ? KP_DIFF_ONLY_B
                  : !b         ? KP_DIFF_ONLY_A
                               : KP_DIFF_SAME;
    return 0;
}

/* Both traces' rows matched by (table, kind, name), judged, and sorted for showing. */
static kprof_status kp_diff_traces_compute(kp_diff_traces *d, const kp_diff_config *cfg,
                                           kp_error *err)
{
    const kp_diff_trace *A = &d->t[0], *B = &d->t[1];
    d->rows = calloc(A->nkeys + B->nkeys + 1, sizeof *d->rows);
    if (!d->rows) return kp_error_nomem(err);
    size_t i = 0, j = 0;
    while (i < A->nkeys || j < B->nkeys) {
        int c = i == A->nkeys ? 1 : j == B->nkeys ? -1 : kp_diff_key_cmp(&A->keys[i], &B->keys[j]);
        if (c < 0)
            kp_diff_row_add(d, &A->keys[i++], NULL, cfg);
        else if (c > 0)
            kp_diff_row_add(d, NULL, &B->keys[j++], cfg);
        else
            kp_diff_row_add(d, &A->keys[i++], &B->keys[j++], cfg);
    }
    d->device_ns = A->gpu_busy_ns > B->gpu_busy_ns ? A->gpu_busy_ns : B->gpu_busy_ns;
    for (size_t r = 0; r < d->nrows; r++) {
        kp_diff_row *row = &d->rows[r];
        if (row->judged && row->a && row->b) {
            kprof_status st = kp_diff_judge(row, cfg, d->device_ns, err);
            if (st != KPROF_OK) return st;
        }
        d->counts[row->status]++;
        d->gate |= row->gate;
    }
    qsort(d->rows, d->nrows, sizeof *d->rows, kp_diff_row_cmp);
    return KPROF_OK;
}

/* The verdict a row's comparison gives, for --json: "SLOWER", ... or NULL (none). */
static const char *kp_diff_row_verdict(const kp_diff_row *row)
{
    switch (row->status) {
    case KP_DIFF_SLOWER:
    case KP_DIFF_FASTER:
    case KP_DIFF_UNSURE:
    case KP_DIFF_SAME:
        return kp_diff_status_text[row->status];
    default:
        return NULL;
    }
}

/* Why a compared row got no FASTER or SLOWER, in words (the engine's, core/judge.h): "" when it
 * did, or was SAME. */
const char *kp_diff_row_reason(const kp_diff_row *row)
{
    return row->status == KP_DIFF_UNSURE || row->status == KP_DIFF_SMALL ? row->reason : "";
}

/* The reason codes of a row as a JSON array (kp_judge_reason_name's: "small", "modes", ...). */
static void kp_diff_json_reasons(kp_json *j, unsigned reasons)
{
    kp_json_array_begin(j, "reasons");
    for (unsigned bit = 1; bit && bit <= KP_JUDGE_INVALID; bit <<= 1)
        if (reasons & bit) kp_json_string(j, NULL, kp_judge_reason_name(bit));
    kp_json_array_end(j);
}

/* ---- two traces: JSON ------------------------------------------------------------------- */

/* An estimate's interval as [lo, hi]. */
static void kp_diff_json_ci(kp_json *j, const char *key, const kp_estimate *e)
{
    kp_json_array_begin(j, key);
    kp_json_double(j, NULL, e->lo);
    kp_json_double(j, NULL, e->hi);
    kp_json_array_end(j);
}

static void kp_diff_json_side(kp_json *j, const char *key, const kp_diff_key *k)
{
    if (!k) {
        kp_json_null(j, key);
        return;
    }
    kp_json_object_begin(j, key);
    kp_json_uint(j, "count", k->n);
    kp_json_double(j, "total_s", (double)k->total_ns / 1e9);
    kp_json_double(j, "median_s", kp_diff_median_ns(k) / 1e9);
    kp_json_object_end(j);
}

static void kp_diff_json_ratio(kp_json *j, const char *key, double b, double a, int both)
{
    if (both && a > 0)
        kp_json_double(j, key, b / a);
    else
        kp_json_null(j, key);
}

/* A row's launch shape as fields: grid (threads) and tg (threads per group; null when the
 * runtime chose) as [x, y, z], smem_bytes (dynamic shared memory); null what is not known. */
static void kp_diff_json_shape(kp_json *j, const kp_diff_key *k)
{
    const kp_trace_shape *s = &k->shape;
    if (s->known & KP_EVENT_HAS_GEOMETRY) {
        kp_json_array_begin(j, "grid");
        for (int d = 0; d < 3; d++)
            kp_json_uint(j, NULL, s->grid[d]);
        kp_json_array_end(j);
        if (s->group[0]) {
            kp_json_array_begin(j, "tg");
            for (int d = 0; d < 3; d++)
                kp_json_uint(j, NULL, s->group[d]);
            kp_json_array_end(j);
        } else {
            kp_json_null(j, "tg");
        }
    } else {
        kp_json_null(j, "grid");
        kp_json_null(j, "tg");
    }
    if (s->known & KP_EVENT_HAS_SHARED)
        kp_json_uint(j, "smem_bytes", s->dynamic_shared);
    else
        kp_json_null(j, "smem_bytes");
}

static void kp_diff_json_row(kp_json *j, const kp_diff_row *row, const kp_diff_config *cfg)
{
    int both = row->a && row->b;
    const kp_diff_key *k = row->a ? row->a : row->b;
    kp_json_object_begin(j, NULL);
    kp_json_string(j, "name", k->base ? k->base : row->name);
    kp_json_string(j, "kind", kp_event_kind_name(row->kind));
    if (row->table == KP_DIFF_DEVICE && cfg->by == KP_DIFF_BY_SHAPE) {
        kp_json_string(j, "key", row->name);
        kp_diff_json_shape(j, k);
    }
    kp_json_string(j, "status", kp_diff_status_key[row->status]);
    kp_json_bool(j, "changed", kp_diff_status_is_change(row->status));
    kp_json_bool(j, "judged", row->judged);
    const char *verdict = kp_diff_row_verdict(row);
    if (verdict)
        kp_json_string(j, "verdict", verdict);
    else
        kp_json_null(j, "verdict");
    const char *reason = kp_diff_row_reason(row);
    if (reason[0])
        kp_json_string(j, "reason", reason);
    else
        kp_json_null(j, "reason");
    kp_diff_json_reasons(j, reason[0] ? row->reasons : 0);
    kp_diff_json_side(j, "a", row->a);
    kp_diff_json_side(j, "b", row->b);
    kp_json_object_begin(j, "delta");
    kp_json_int(j, "count", (int64_t)(row->b ? row->b->n : 0) - (int64_t)(row->a ? row->a->n : 0));
    kp_json_double(j, "total_s", (double)row->delta_ns / 1e9);
    if (both)
        kp_json_double(j, "median_s",
                       (kp_diff_median_ns(row->b) - kp_diff_median_ns(row->a)) / 1e9);
    else
        kp_json_null(j, "median_s");
    kp_json_object_end(j);
    kp_json_object_begin(j, "ratio");
    kp_diff_json_ratio(j, "total", row->b ? (double)row->b->total_ns : 0,
                       row->a ? (double)row->a->total_ns : 0, both);
    kp_diff_json_ratio(j, "median", kp_diff_median_ns(row->b), kp_diff_median_ns(row->a), both);
    kp_json_object_end(j);
    if (kp_diff_status_compared(row->status)) {
        kp_json_object_begin(j, "comparison");
        kp_json_double(j, "ratio", row->ratio.value);
        kp_diff_json_ci(j, "ci", &row->ratio);
        kp_json_double(j, "level", 0.95);
        kp_json_string(j, "interval_verdict", kp_compare_verdict_name(row->interval_verdict));
        if (verdict)
            kp_json_string(j, "verdict", verdict);
        else
            kp_json_null(j, "verdict");
        kp_json_object_end(j);
    } else {
        kp_json_null(j, "comparison");
    }
    if (row->status == KP_DIFF_TOO_FEW)
        kp_json_string(j, "note", "n too small");
    else if (row->status == KP_DIFF_NO_VERDICT)
        kp_json_string(j, "note", "a median is 0: no ratio");
    else if (row->status == KP_DIFF_SMALL)
        kp_json_string(j, "note", "under the minimum effect");
    else if (row->status == KP_DIFF_NOT_JUDGED)
        kp_json_string(j, "note",
                       "not judged: host-side times vary between processes "
                       "(--judge-host)");
    else
        kp_json_null(j, "note");
    if (cfg->fail_if_slower >= 0) kp_json_bool(j, "fails_gate", row->gate);
    kp_json_object_end(j);
}

static void kp_diff_json_verdict(kp_json *j, const char *key, const kp_verdict_input *in,
                                 const kp_verdict *v, const char *window, int64_t start_ns)
{
    if (!in) {
        kp_json_null(j, key);
        return;
    }
    char sentence[2048];
    kp_verdict_describe(in, v, window, start_ns, sentence, sizeof sentence);
    kp_json_object_begin(j, key);
    kp_json_string(j, "kind", kp_verdict_name(v->kind));
    kp_json_double(j, "duration_s", in->wall_s);
    kp_json_double(j, "gpu_busy_fraction", v->busy_fraction);
    kp_json_string(j, "sentence", sentence);
    kp_json_object_end(j);
}

static void kp_diff_json_trace(kp_json *j, const char *key, const kp_diff_trace *t)
{
    const kp_trace_meta *m = kp_event_source_meta(t->src);
    kp_json_object_begin(j, key);
    kp_json_string(j, "trace", t->path);
    kp_json_string(j, "command", m->command);
    kp_json_double(j, "wall_s", (double)kp_ns_diff(t->v.end_ns, t->v.start_ns) / 1e9);
    kp_json_uint(j, "events", t->events);
    kp_json_object_begin(j, "verdict");
    kp_diff_json_verdict(j, "wall", &t->v.wall_in, &t->v.wall, "the wall", t->v.start_ns);
    kp_diff_json_verdict(j, "active", t->v.has_active ? &t->v.active_in : NULL, &t->v.active,
                         "the active window", t->v.start_ns);
    kp_json_object_end(j);
    kp_json_object_end(j);
}

static void kp_diff_json_summary(kp_json *j, const size_t counts[KP_DIFF_STATUS_COUNT])
{
    kp_json_object_begin(j, "summary");
    for (int s = 0; s < KP_DIFF_STATUS_COUNT; s++)
        kp_json_uint(j, kp_diff_status_key[s], counts[s]);
    kp_json_uint(j, "differences", kp_diff_changes(counts));
    kp_json_object_end(j);
}

static void kp_diff_json_common(kp_json *j, const kp_diff_config *cfg)
{
    kp_json_double(j, "threshold", cfg->threshold);
    if (cfg->fail_if_slower >= 0)
        kp_json_double(j, "fail_if_slower", cfg->fail_if_slower);
    else
        kp_json_null(j, "fail_if_slower");
}

void kp_diff_traces_json(kp_str *out, const kp_diff_traces *d, const kp_diff_config *cfg)
{
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "version", 1);
    kp_json_string(&j, "kind", "trace-diff");
    kp_json_string(&j, "by", kp_diff_by_name[cfg->by]);
    kp_diff_json_common(&j, cfg);
    kp_json_int(&j, "min_instances", KP_DIFF_MIN_INSTANCES);
    kp_json_double(&j, "min_effect_us", cfg->min_effect_ns / 1e3);
    kp_json_double(&j, "min_share", cfg->min_share);
    kp_json_double(&j, "run_allowance", cfg->run_allowance);
    kp_json_double(&j, "device_s", (double)d->device_ns / 1e9);
    kp_json_bool(&j, "judge_host", cfg->judge_host);
    kp_json_bool(&j, "polling_calls", cfg->raw);
    kp_diff_json_trace(&j, "a", &d->t[0]);
    kp_diff_json_trace(&j, "b", &d->t[1]);
    kp_json_object_begin(&j, "verdict_changed");
    const kp_trace_verdicts *va = &d->t[0].v, *vb = &d->t[1].v;
    kp_json_bool(&j, "wall", va->wall.kind != vb->wall.kind);
    kp_json_bool(&j, "active",
                 va->has_active != vb->has_active ||
                     (va->has_active && va->active.kind != vb->active.kind));
    kp_json_object_end(&j);
    for (int table = 0; table < KP_DIFF_TABLES; table++) {
        kp_json_array_begin(&j, kp_diff_table_key[table]);
        for (size_t r = 0; r < d->nrows; r++)
            if (d->rows[r].table == table) kp_diff_json_row(&j, &d->rows[r], cfg);
        kp_json_array_end(&j);
    }
    kp_diff_json_summary(&j, d->counts);
    kp_json_bool(&j, "fails_gate", d->gate);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    kp_str_append(out, "\n");
}

/* A history run and its samples (store/history.h). */
static kprof_status kp_diff_history_load(kp_diff_result *r, kp_error *err)
{
    kprof_status st = kp_history_get(r->arg, &r->run, &r->samples, &r->nsamples, NULL, err);
    if (st != KPROF_OK) return st;
    r->history = 1;
    if (r->nsamples == 0)
        return kp_error_set(err, KPROF_INVALID,
                            "history run %s (%lld) kept no samples: nothing "
                            "to compare",
                            r->arg, (long long)r->run.id);
    return KPROF_OK;
}

static void kp_diff_result_free(kp_diff_result *r)
{
    kp_bench_file_free(r->file);
    free(r->samples);
    memset(r, 0, sizeof *r);
}

const char *kp_diff_result_device(const kp_diff_result *r)
{
    return r->history ? r->run.device : r->file ? r->file->device : "";
}

/* " (src hash 0123456789abcdef)", " (w.cl)" or "": what tells a kernel's version apart. */
static void kp_diff_kernel_origin(char *buf, size_t n, const char *hash, const char *source)
{
    if (hash && hash[0])
        snprintf(buf, n, " (src hash %s)", hash);
    else if (source && source[0])
        snprintf(buf, n, " (%s)", source);
    else
        buf[0] = '\0';
}

/* Whether A and B are results of different kernels, said into d->different: two history runs
 * whose kernels (entries) differ, or two bench results with a point in both whose kernels
 * differ. The kernel is its entry's name: one entry whose source changed (another hash, another
 * file) is the same kernel changed, which is what a diff is for. An entry not recorded (an
 * older bench.json) differs from nothing. */
void kp_diff_results_kernels(kp_diff_results *d)
{
    const kp_diff_result *A = &d->r[0], *B = &d->r[1];
    char oa[1100], ob[1100];
    d->different[0] = '\0';
    if (A->history) {
        if (!A->run.kernel[0] || !B->run.kernel[0] || strcmp(A->run.kernel, B->run.kernel) == 0)
            return;
        kp_diff_kernel_origin(oa, sizeof oa, A->run.source_hash, A->run.target);
        kp_diff_kernel_origin(ob, sizeof ob, B->run.source_hash, B->run.target);
        snprintf(d->different, sizeof d->different, "A is %.255s%.300s, B is %.255s%.300s",
                 A->run.kernel, oa, B->run.kernel, ob);
        return;
    }
    for (int i = 0; i < A->file->npoints; i++) {
        const kp_bench_file_point *pa = &A->file->points[i];
        const kp_bench_file_point *pb = kp_bench_file_find(B->file, pa->point, pa->cold);
        if (!pb || !pa->entry[0] || !pb->entry[0] || strcmp(pa->entry, pb->entry) == 0) continue;
        kp_diff_kernel_origin(oa, sizeof oa, NULL, pa->source);
        kp_diff_kernel_origin(ob, sizeof ob, NULL, pb->source);
        snprintf(d->different, sizeof d->different, "A is %.255s%.300s, B is %.255s%.300s%s%.200s",
                 pa->entry, oa, pb->entry, ob, pa->point[0] ? " at " : "", pa->point);
        return;
    }
}

static kprof_status kp_diff_point_side(kp_diff_point *p, int s, const double *ms, const double *mhz,
                                       size_t n, size_t rounds, kp_error *err)
{
    p->has[s] = 1;
    kprof_status st = kp_bench_side_add(&p->side[s], ms, mhz, n, err);
    p->side[s].rounds = rounds;
    if (st == KPROF_OK) st = kp_bench_summarise(&p->side[s], err);
    return st;
}

/* A bench.json point's side, with its sessions' medians (--repeat) as bench --compare takes
 * them. */
static kprof_status kp_diff_file_side(kp_diff_point *p, int s, const kp_bench_file_point *fp,
                                      kp_error *err)
{
    kprof_status st = kp_diff_point_side(p, s, fp->ms, fp->mhz, fp->n, fp->rounds, err);
    for (int k = 0; k < fp->nruns && k < KP_BENCH_MAX_REPEAT; k++)
        p->side[s].run_median[p->side[s].nruns++] = fp->run_median[k];
    return st;
}

/* Compare a point present in both: kprof bench --compare's comparison (unpaired). */
static kprof_status kp_diff_point_judge(kp_diff_point *p, const kp_diff_config *cfg, kp_error *err)
{
    if (!p->has[0] || !p->has[1]) {
        p->status = p->has[0] ? KP_DIFF_ONLY_A : KP_DIFF_ONLY_B;
        return KPROF_OK;
    }
    if (p->side[0].n < KP_DIFF_MIN_INSTANCES || p->side[1].n < KP_DIFF_MIN_INSTANCES) {
        p->status = KP_DIFF_TOO_FEW;
        return KPROF_OK;
    }
    if (p->side[0].median.value <= 0 || p->side[1].median.value <= 0) {
        p->status = KP_DIFF_NO_VERDICT;
        return KPROF_OK;
    }
    kp_bench_config bc;
    kp_bench_config_default(&bc);
    bc.threshold = cfg->threshold;
    /* kprof bench --compare's comparison: the engine (core/judge.h) over each side's samples in
     * the order taken, their rounds as batches, across runs (unpaired); busy unknown. */
    kp_bench_outcome_init(&p->outcome);
    kprof_status st = kp_bench_compare(&p->side[0], &p->side[1], 0, &bc, &p->outcome, err);
    if (st != KPROF_OK) return st;
    p->status = kp_diff_status_of_verdict(p->outcome.final_verdict);
    if (cfg->fail_if_slower >= 0)
        p->gate = kp_bench_outcome_fails(&p->outcome, cfg->fail_if_slower);
    return KPROF_OK;
}

kprof_status kp_diff_results_compute(kp_diff_results *d, const kp_diff_config *cfg, kp_error *err)
{
    kp_diff_result *A = &d->r[0], *B = &d->r[1];
    int cap = A->history ? 1 : A->file->npoints + B->file->npoints;
    d->points = calloc((size_t)(cap > 0 ? cap : 1), sizeof *d->points);
    if (!d->points) return kp_error_nomem(err);
    kprof_status st = KPROF_OK;
    if (A->history) { /* one point: the two runs */
        kp_diff_point *p = &d->points[d->npoints++];
        snprintf(p->point, sizeof p->point, "%s", B->run.kernel);
        st = kp_diff_point_side(p, 0, A->samples, NULL, A->nsamples, 0, err);
        if (st == KPROF_OK) st = kp_diff_point_side(p, 1, B->samples, NULL, B->nsamples, 0, err);
    } else { /* A's points in A's order, then those only B has */
        for (int i = 0; i < A->file->npoints && st == KPROF_OK; i++) {
            const kp_bench_file_point *pa = &A->file->points[i];
            if (kp_bench_file_find(A->file, pa->point, pa->cold) != pa) continue; /* twice */
            const kp_bench_file_point *pb = kp_bench_file_find(B->file, pa->point, pa->cold);
            kp_diff_point *p = &d->points[d->npoints++];
            kp_strlcpy(p->point, pa->point, sizeof p->point);
            p->cold = pa->cold;
            st = kp_diff_file_side(p, 0, pa, err);
            if (st == KPROF_OK && pb) st = kp_diff_file_side(p, 1, pb, err);
        }
        for (int i = 0; i < B->file->npoints && st == KPROF_OK; i++) {
            const kp_bench_file_point *pb = &B->file->points[i];
            if (kp_bench_file_find(B->file, pb->point, pb->cold) != pb ||
                kp_bench_file_find(A->file, pb->point, pb->cold))
                continue;
            kp_diff_point *p = &d->points[d->npoints++];
            kp_strlcpy(p->point, pb->point, sizeof p->point);
            p->cold = pb->cold;
            st = kp_diff_file_side(p, 1, pb, err);
        }
    }
    for (int i = 0; i < d->npoints && st == KPROF_OK; i++) {
        st = kp_diff_point_judge(&d->points[i], cfg, err);
        d->counts[d->points[i].status]++;
        d->gate |= d->points[i].gate;
    }
    return st;
}

int kp_diff_run_fields(const kp_history_run *a, const kp_history_run *b, kp_diff_run_field *out)
{
    int n = 0;
#define KP_DIFF_FIELD_(name)                                                                       \
    if (strcmp(a->name, b->name) != 0) out[n++] = (kp_diff_run_field){#name, a->name, b->name};
    KP_DIFF_FIELD_(kind)
    KP_DIFF_FIELD_(device)
    KP_DIFF_FIELD_(backend)
    KP_DIFF_FIELD_(driver)
    KP_DIFF_FIELD_(kprof_version)
    KP_DIFF_FIELD_(kernel)
    KP_DIFF_FIELD_(target)
    KP_DIFF_FIELD_(source_hash)
    KP_DIFF_FIELD_(options)
    KP_DIFF_FIELD_(grid)
    KP_DIFF_FIELD_(tg)
    KP_DIFF_FIELD_(buffers)
    KP_DIFF_FIELD_(git_commit)
#undef KP_DIFF_FIELD_
    if (a->git_dirty != b->git_dirty) {
        static const char *const dirty[] = {"no work tree", "clean", "dirty"};
        int da = a->git_dirty < 0 ? 0 : a->git_dirty ? 2 : 1;
        int db = b->git_dirty < 0 ? 0 : b->git_dirty ? 2 : 1;
        out[n++] = (kp_diff_run_field){"git_dirty", dirty[da], dirty[db]};
    }
    return n;
}

static void kp_diff_json_result(kp_json *j, const char *key, const kp_diff_result *r)
{
    kp_json_object_begin(j, key);
    kp_json_string(j, "input", r->history ? "history" : "bench");
    kp_json_string(j, r->history ? "ref" : "path", r->arg);
    kp_json_string(j, "device", kp_diff_result_device(r));
    if (r->history) {
        const kp_history_run *run = &r->run;
        kp_json_int(j, "id", run->id);
        kp_json_string(j, "kind", run->kind);
        kp_json_int(j, "at", run->at);
        kp_json_string(j, "backend", run->backend);
        kp_json_string(j, "driver", run->driver);
        kp_json_string(j, "kprof_version", run->kprof_version);
        kp_json_string(j, "kernel", run->kernel);
        kp_json_string(j, "target", run->target);
        kp_json_string(j, "source_hash", run->source_hash);
        kp_json_string(j, "options", run->options);
        kp_json_string(j, "grid", run->grid);
        kp_json_string(j, "tg", run->tg);
        kp_json_string(j, "buffers", run->buffers);
        kp_json_string(j, "git_commit", run->git_commit);
        if (run->git_dirty < 0)
            kp_json_null(j, "git_dirty");
        else
            kp_json_bool(j, "git_dirty", run->git_dirty);
    } else {
        kp_json_int(j, "points", r->file->npoints);
    }
    kp_json_object_end(j);
}

static void kp_diff_json_point_side(kp_json *j, const char *key, const kp_diff_point *p, int s)
{
    if (!p->has[s]) {
        kp_json_null(j, key);
        return;
    }
    const kp_bench_side *sd = &p->side[s];
    kp_json_object_begin(j, key);
    kp_json_double(j, "median_ms", sd->median.value);
    kp_diff_json_ci(j, "ci_ms", &sd->median);
    kp_json_double(j, "min_ms", sd->stats.min);
    kp_json_uint(j, "samples", sd->n);
    kp_json_object_end(j);
}

void kp_diff_results_json(kp_str *out, const kp_diff_results *d, const kp_diff_config *cfg)
{
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "version", 1);
    kp_json_string(&j, "kind", "result-diff");
    kp_diff_json_common(&j, cfg);
    kp_json_int(&j, "min_samples", KP_DIFF_MIN_INSTANCES);
    kp_diff_json_result(&j, "a", &d->r[0]);
    kp_diff_json_result(&j, "b", &d->r[1]);
    if (d->different[0])
        kp_json_string(&j, "different_kernels", d->different);
    else
        kp_json_null(&j, "different_kernels");
    if (d->r[0].history) {
        kp_diff_run_field f[KP_DIFF_RUN_FIELDS];
        int n = kp_diff_run_fields(&d->r[0].run, &d->r[1].run, f);
        kp_json_object_begin(&j, "differs");
        for (int i = 0; i < n; i++) {
            kp_json_array_begin(&j, f[i].key);
            kp_json_string(&j, NULL, f[i].a);
            kp_json_string(&j, NULL, f[i].b);
            kp_json_array_end(&j);
        }
        kp_json_object_end(&j);
    }
    kp_json_array_begin(&j, "points");
    for (int i = 0; i < d->npoints; i++) {
        const kp_diff_point *p = &d->points[i];
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "point", p->point);
        kp_json_string(&j, "cache", p->cold ? "cold" : "hot");
        kp_json_string(&j, "status", kp_diff_status_key[p->status]);
        kp_json_bool(&j, "changed", kp_diff_status_is_change(p->status));
        int unsure = p->status == KP_DIFF_UNSURE;
        if (unsure && p->outcome.judgement.reason[0])
            kp_json_string(&j, "reason", p->outcome.judgement.reason);
        else
            kp_json_null(&j, "reason");
        kp_diff_json_reasons(&j, unsure ? p->outcome.judgement.reasons : 0);
        kp_diff_json_point_side(&j, "a", p, 0);
        kp_diff_json_point_side(&j, "b", p, 1);
        if (p->status <= KP_DIFF_SAME) {
            const kp_bench_outcome *o = &p->outcome;
            kp_json_object_begin(&j, "comparison");
            kp_json_double(&j, "ratio", o->ratio.value);
            kp_diff_json_ci(&j, "ci", &o->ratio);
            kp_json_bool(&j, "paired", o->paired);
            kp_json_string(&j, "time_verdict", kp_compare_verdict_name(o->verdict));
            if (o->have_cycles) {
                kp_json_double(&j, "cycles_ratio", o->cycles_ratio.value);
                kp_diff_json_ci(&j, "cycles_ci", &o->cycles_ratio);
                kp_json_string(&j, "cycles_verdict", kp_compare_verdict_name(o->cycles_verdict));
            } else {
                kp_json_null(&j, "cycles_ratio");
            }
            kp_json_string(&j, "verdict", kp_compare_verdict_name(o->final_verdict));
            kp_json_object_end(&j);
        } else {
            kp_json_null(&j, "comparison");
        }
        if (cfg->fail_if_slower >= 0) kp_json_bool(&j, "fails_gate", p->gate);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_diff_json_summary(&j, d->counts);
    kp_json_bool(&j, "fails_gate", d->gate);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    kp_str_append(out, "\n");
}

/* ---- loading and freeing --------------------------------------------------------------------
 */

kprof_status kp_diff_traces_load(kp_diff_traces *d, const char *const paths[2],
                                 const kp_diff_config *cfg, kp_error *err)
{
    memset(d, 0, sizeof *d);
    kprof_status st = KPROF_OK;
    for (int s = 0; s < 2 && st == KPROF_OK; s++) {
        d->t[s].path = paths[s];
        st = kp_diff_trace_load(&d->t[s], cfg, err);
    }
    if (st == KPROF_OK) st = kp_diff_traces_compute(d, cfg, err);
    return st;
}

void kp_diff_traces_free(kp_diff_traces *d)
{
    free(d->rows);
    kp_diff_trace_free(&d->t[0]);
    kp_diff_trace_free(&d->t[1]);
    memset(d, 0, sizeof *d);
}

kprof_status kp_diff_results_load(kp_diff_results *d, const char *const args[2], int history,
                                  kp_error *err)
{
    memset(d, 0, sizeof *d);
    kprof_status st = KPROF_OK;
    for (int s = 0; s < 2 && st == KPROF_OK; s++) {
        d->r[s].arg = args[s];
        st = history ? kp_diff_history_load(&d->r[s], err)
                     : kp_bench_file_read(args[s], &d->r[s].file, err);
    }
    return st;
}

void kp_diff_results_free(kp_diff_results *d)
{
    for (int i = 0; i < d->npoints; i++)
        for (int s = 0; s < 2; s++)
            kp_bench_side_free(&d->points[i].side[s]);
    free(d->points);
    kp_diff_result_free(&d->r[0]);
    kp_diff_result_free(&d->r[1]);
    memset(d, 0, sizeof *d);
}
