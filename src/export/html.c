/*
 * html.c — the offline HTML pages (see html.h): the page around its data block, and the trace
 * page's data: the report's and the call tree's JSON (the same writers as `kprof report --json`
 * and `--tree --json`), the tables' slow-row thresholds, kernel duration histograms and the
 * timeline.
 *
 * The report is read on this thread while the call tree, the histograms and the timeline are
 * read on a second one, through a source of their own (SQLite connections are not shared
 * between threads here): the two passes are each about as long as the other on a large trace.
 *
 * The timeline: tracks from the source's threads and queues (a process's host threads, then its
 * streams or queues), its slices read in start order. Up to KP_HTML_SLICES_LIMIT slices they are
 * written as columns (start as deltas, so a long trace's times stay short); a call and the
 * device work it launched point at each other (flow); a kernel's geometry is written once per
 * distinct shape (geoms) and referred to. Past the limit, each (track, depth up to 3) gets
 * KP_HTML_BINS bins over the span, and every bin any slice touches is written with its busy
 * time, its count and the name of the slice that covers most of it.
 */
#define _GNU_SOURCE
#include "export/html.h"

#include "analysis/report.h"
#include "analysis/trace_aggregate.h"
#include "base/json.h"
#include "base/util.h"
#include "core/event.h"
#include "export/calltree.h"
#include "export/report_json.h"
#include "export/report_text.h"
#include "store/event_source.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The page's script and style (cmake/embed.cmake, from src/export/page/). */
extern const char kp_embedded_page_js[];
extern const size_t kp_embedded_page_js_len;
extern const char kp_embedded_page_css[];
extern const size_t kp_embedded_page_css_len;

#define KP_HTML_HIST_KERNELS 8
#define KP_HTML_HIST_BINS    30
#define KP_HTML_MAX_DEPTH    3 /* a decimated track's depths: deeper slices count as this one */

/* ---- the page ------------------------------------------------------------------------------ */

/* JSON text into the data block: '<' as \u003c (it stands only inside strings), so nothing in
 * it can end the script element. */
static void kp_html_put_json(kp_str *o, const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '<') continue;
        kp_str_append_n(o, s + run, i - run);
        kp_str_append(o, "\\u003c");
        run = i + 1;
    }
    kp_str_append_n(o, s + run, n - run);
}

/* A JSON string of text into the data block. */
static void kp_html_put_quoted(kp_str *o, const char *text)
{
    kp_str q = {0};
    kp_json_quote(&q, text ? text : "");
    if (q.failed) o->failed = 1;
    kp_html_put_json(o, q.data ? q.data : "\"\"", q.len);
    kp_str_free(&q);
}

/* Text as HTML (the title): valid UTF-8, markup escaped. */
static void kp_html_put_text(kp_str *o, const char *text)
{
    kp_str u = {0};
    kp_str_append_utf8(&u, text ? text : "", text ? strlen(text) : 0);
    if (u.failed) o->failed = 1;
    kp_str_append_markup(o, u.data ? u.data : "");
    kp_str_free(&u);
}

/* Everything before the data block's members, and its first three: page, producer, title. */
static void kp_html_begin(kp_str *o, const char *page, const char *title)
{
    kp_str_append(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                     "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width\">\n"
                     "<meta name=\"generator\" content=\"kprof " KPROF_VERSION_STRING "\">\n"
                     "<title>");
    kp_html_put_text(o, title);
    kp_str_append(o, "</title>\n<style>\n");
    kp_str_append_n(o, kp_embedded_page_css, kp_embedded_page_css_len);
    kp_str_append(o, "</style>\n</head>\n<body>\n<noscript>This kprof page draws itself with its "
                     "inline script; its numbers are in the kprof-data block of this "
                     "file.</noscript>\n<div id=\"app\"></div>\n"
                     "<script type=\"application/json\" id=\"kprof-data\">{\"page\":\"");
    kp_str_append(o, page);
    kp_str_append(o, "\",\"producer\":\"kprof " KPROF_VERSION_STRING "\",\"title\":");
    kp_html_put_quoted(o, title);
}

/* A member of the data block: ,"key": and the JSON text. */
static void kp_html_member(kp_str *o, const char *key, const char *json, size_t len)
{
    kp_str_append(o, ",\"");
    kp_str_append(o, key);
    kp_str_append(o, "\":");
    if (!json || !len)
        kp_str_append(o, "null");
    else
        kp_html_put_json(o, json, len);
}

static void kp_html_end(kp_str *o)
{
    kp_str_append(o, "}</script>\n<script>\n");
    kp_str_append_n(o, kp_embedded_page_js, kp_embedded_page_js_len);
    kp_str_append(o, "</script>\n</body>\n</html>\n");
}

kprof_status kp_html_json_page(kp_output *out, const char *page, const char *title,
                               const char *json, size_t len, kp_error *err)
{
    kp_str o = {0};
    kp_html_begin(&o, page, title);
    kp_html_member(&o, page, json, len);
    kp_html_end(&o);
    kprof_status st = o.failed ? kp_error_nomem(err) : kp_output_write(out, o.data, o.len, err);
    kp_str_free(&o);
    if (st == KPROF_OK) st = kp_output_commit(out, err);
    return st;
}

/* ---- numbers ------------------------------------------------------------------------------- */

static void kp_put_i64(kp_str *o, int64_t v)
{
    char b[24];
    int i = 24;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        b[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) b[--i] = '-';
    kp_str_append_n(o, b + i, (size_t)(24 - i));
}

static void kp_put_double(kp_str *o, double v)
{
    char b[40];
    kp_json_format_double(v, b, sizeof b);
    kp_str_append(o, b);
}

/* ---- the timeline -------------------------------------------------------------------------- */

/* A track: a host thread (pid, tid) or a device's queue (pid, device, stream). */
typedef struct kp_tl_key {
    int64_t pid, a, b; /* tid, 0 | device, stream */
    int32_t track;
    int opencl; /* a queue of OpenCL's: "queue" on a "device" */
} kp_tl_key;

static int kp_tl_key_cmp(const void *x, const void *y)
{
    const kp_tl_key *p = x, *q = y;
    if (p->pid != q->pid) return p->pid < q->pid ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return 0;
}

typedef struct kp_tl_slice {
    int64_t start, dur, latency; /* ns from t0; latency -1 when unknown */
    uint32_t name;
    int32_t track, flow, geom;
    uint8_t kind, depth;
    uint8_t host; /* on a host thread: nested by depth */
} kp_tl_slice;

/* A pairing row: a call that launched work or a device op, by (process, correlation). */
typedef struct kp_tl_corr {
    int64_t process;
    uint64_t corr;
    int32_t slice;
    int device;
} kp_tl_corr;

static int kp_tl_corr_cmp(const void *x, const void *y)
{
    const kp_tl_corr *p = x, *q = y;
    if (p->process != q->process) return p->process < q->process ? -1 : 1;
    if (p->corr != q->corr) return p->corr < q->corr ? -1 : 1;
    if (p->device != q->device) return p->device - q->device; /* the call first */
    return p->slice - q->slice;                               /* then in start order */
}

/* A bin of a decimated track that some slice touches. */
typedef struct kp_tl_bin {
    int64_t busy, cover; /* ns covered; the longest overlap seen: its slice names the bin */
    uint32_t bin, count, name;
} kp_tl_bin;

/* A decimated track's touched bins (one depth), ascending. Slices come in start order, so the
 * bins a slice touches are the run the touched ones end with (from its first bin on, those
 * touched already are contiguous) plus new ones after it: no bin is ever inserted. */
typedef struct kp_tl_bins {
    kp_tl_bin *b;
    size_t n, cap;
} kp_tl_bins;

/* A host thread's slice held until a later start (decimated timelines: kp_tl_release). */
typedef struct kp_tl_held {
    int64_t start, end;
    uint32_t name;
} kp_tl_held;

/* A track's nesting: the ends of the slices still open on it (the depth is how many), and on a
 * decimated timeline its slices of one start, held. Of slices that start together the longer
 * holds the shorter, so they are placed longest first (a range is stored after what it holds,
 * and comes after it in start order). */
typedef struct kp_tl_lane {
    int64_t *ends;
    uint32_t n, cap;
    kp_tl_held *held;
    size_t nheld, heldcap;
} kp_tl_lane;

/* Distinct geometries: their JSON texts, found through a hash of the text. */
typedef struct kp_tl_geoms {
    kp_str *text;
    size_t n, cap;
    int32_t *slots; /* open addressing, -1 empty; nslots a power of two */
    size_t nslots;
} kp_tl_geoms;

/* The index of geometry text g (taken: freed here when it is known already); -1 out of memory. */
static int32_t kp_tl_geom_index(kp_tl_geoms *gs, kp_str *g)
{
    if (g->failed) return -1;
    if (2 * (gs->n + 1) > gs->nslots) {
        size_t ns = gs->nslots ? 2 * gs->nslots : 64;
        int32_t *slots = malloc(ns * sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < ns; i++)
            slots[i] = -1;
        for (size_t i = 0; i < gs->n; i++) {
            size_t at = kp_hash64(KP_HASH_SEED, gs->text[i].data, gs->text[i].len) & (ns - 1);
            while (slots[at] >= 0)
                at = (at + 1) & (ns - 1);
            slots[at] = (int32_t)i;
        }
        free(gs->slots);
        gs->slots = slots;
        gs->nslots = ns;
    }
    size_t at = kp_hash64(KP_HASH_SEED, g->data, g->len) & (gs->nslots - 1);
    for (; gs->slots[at] >= 0; at = (at + 1) & (gs->nslots - 1)) {
        const kp_str *t = &gs->text[gs->slots[at]];
        if (t->len == g->len && memcmp(t->data, g->data, g->len) == 0) {
            kp_str_free(g);
            return gs->slots[at];
        }
    }
    if (gs->n == gs->cap) {
        size_t cap = gs->cap ? 2 * gs->cap : 16;
        kp_str *t = realloc(gs->text, cap * sizeof *t);
        if (!t) return -1;
        gs->text = t;
        gs->cap = cap;
    }
    gs->text[gs->n] = *g;
    memset(g, 0, sizeof *g);
    gs->slots[at] = (int32_t)gs->n;
    return (int32_t)gs->n++;
}

static void kp_tl_geoms_free(kp_tl_geoms *gs)
{
    for (size_t i = 0; i < gs->n; i++)
        kp_str_free(&gs->text[i]);
    free(gs->text);
    free(gs->slots);
}

/* A kernel's geometry as a JSON object: total threads (grid), threads per group (tg), groups,
 * and what the trace knows of its registers, memory and occupancy. */
static void kp_tl_geom_json(const kp_event *e, kp_str *g)
{
    kp_json j;
    kp_json_init(&j, g, 0);
    kp_json_object_begin(&j, NULL);
    kp_json_array_begin(&j, "grid");
    for (int c = 0; c < 3; c++)
        kp_json_uint(&j, NULL, e->grid[c]);
    kp_json_array_end(&j);
    if (kp_event_runtime_groups(e)) {
        kp_json_null(&j, "tg");
        kp_json_null(&j, "groups");
    } else {
        uint64_t groups[3];
        kp_event_groups(e, groups);
        kp_json_array_begin(&j, "tg");
        for (int c = 0; c < 3; c++)
            kp_json_uint(&j, NULL, e->group[c]);
        kp_json_array_end(&j);
        kp_json_array_begin(&j, "groups");
        for (int c = 0; c < 3; c++)
            kp_json_uint(&j, NULL, groups[c]);
        kp_json_array_end(&j);
    }
    if (e->known & KP_EVENT_HAS_REGISTERS) kp_json_uint(&j, "registers", e->registers);
    if (e->known & KP_EVENT_HAS_SHARED) {
        kp_json_uint(&j, "static_shared_bytes", e->static_shared);
        kp_json_uint(&j, "dynamic_shared_bytes", e->dynamic_shared);
    }
    if (e->known & KP_EVENT_HAS_LOCAL) kp_json_uint(&j, "local_bytes_per_thread", e->local_mem);
    if (e->known & KP_EVENT_HAS_CL_REFLECTION) {
        kp_json_uint(&j, "max_threadgroup_size", e->max_threads_per_group);
        kp_json_uint(&j, "preferred_multiple", e->group_multiple);
        kp_json_uint(&j, "static_local_bytes", e->cl_local_mem);
        kp_json_uint(&j, "private_bytes", e->cl_private_mem);
    } else if (e->known & KP_EVENT_HAS_MAX_THREADS) {
        kp_json_uint(&j, "max_threadgroup_size", e->max_threads_per_group);
    }
    if (e->known & KP_EVENT_HAS_OCCUPANCY) kp_json_double(&j, "occupancy", e->occupancy);
    kp_json_object_end(&j);
}

/* The kinds' order in the page's `kinds` (the list's order), by kind id; -1 for none. */
static int kp_tl_kind_index(int kind)
{
    int i = 0;
#define KP_TL_KIND_(id, NAME, name, category, flags, what)                                         \
    if (kind == id) return i;                                                                      \
    i++;
    KP_EVENT_KIND_LIST(KP_TL_KIND_)
#undef KP_TL_KIND_
    return -1;
}

/* What the second thread makes: the tree's JSON, the histograms and the timeline. */
typedef struct kp_html_job {
    const char *path, *label;
    kp_str tree, hist, timeline;
    kprof_status st;
    kp_error err;
} kp_html_job;

typedef struct kp_tl {
    kp_event_source *src;
    int64_t t0, span;
    kp_tl_key *hosts, *queues;
    size_t nhosts, nqueues, ntracks;
    int decimated;
    int64_t bin_ns;
    /* raw */
    kp_tl_slice *slices;
    size_t nslices, cap;
    kp_tl_corr *corrs;
    size_t ncorrs, corrcap;
    kp_tl_geoms geoms;
    kp_str metrics; /* "index":{...} members, comma-separated */
    /* decimated: KP_HTML_MAX_DEPTH + 1 per track */
    kp_tl_bins *bins;
    kp_tl_lane *lanes; /* per track */
    uint64_t total;    /* slices seen */
    /* kernels' (name, duration) for the histograms */
    uint32_t *kname;
    int64_t *kdur;
    size_t nk, kcap;
    int nomem;
} kp_tl;

static int32_t kp_tl_track_of(const kp_tl *t, const kp_event *e)
{
    int device = (kp_event_kind_flags(e->kind) & KP_EVENT_F_DEVICE) != 0;
    kp_tl_key k = {.pid = e->pid,
                   .a = device ? (int64_t)e->device : e->tid,
                   .b = device ? (int64_t)e->stream : 0};
    const kp_tl_key *arr = device ? t->queues : t->hosts;
    size_t n = device ? t->nqueues : t->nhosts;
    const kp_tl_key *hit = n ? bsearch(&k, arr, n, sizeof *arr, kp_tl_key_cmp) : NULL;
    return hit ? hit->track : -1;
}

/* The depth of a slice starting at start on track tr (and push its end). */
static int kp_tl_depth(kp_tl *t, int32_t tr, int64_t start, int64_t end)
{
    kp_tl_lane *l = &t->lanes[tr];
    uint32_t n = l->n;
    int64_t *st = l->ends;
    while (n > 0 && st[n - 1] <= start)
        n--;
    /* Slices that overlap without nesting can leave an ended one under an open one: drop those
     * too where the stack is shallow (a deep one is a nest of ranges, which ends in order). */
    if (n <= 64) {
        uint32_t w = 0;
        for (uint32_t i = 0; i < n; i++)
            if (st[i] > start) st[w++] = st[i];
        n = w;
    }
    if (n == l->cap) {
        uint32_t cap = n ? 2 * n : 8;
        int64_t *e = realloc(l->ends, cap * sizeof *e);
        if (!e) {
            t->nomem = 1;
            l->n = n;
            return (int)(n > 255 ? 255 : n);
        }
        l->ends = e;
        l->cap = cap;
    }
    l->ends[n] = end > start ? end : start < INT64_MAX ? start + 1 : start;
    l->n = n + 1;
    return (int)(n > 255 ? 255 : n);
}

/* Bin i's start, saturated (bin_ns * KP_HTML_BINS covers the span, which fits in 64 bits). */
static int64_t kp_tl_bin_start(const kp_tl *t, int64_t i)
{
    return i >= KP_HTML_BINS ? INT64_MAX : i * t->bin_ns;
}

static void kp_tl_bin_add(kp_tl *t, int32_t tr, int depth, uint32_t name, int64_t a, int64_t b)
{
    if (depth > KP_HTML_MAX_DEPTH) depth = KP_HTML_MAX_DEPTH;
    kp_tl_bins *bs = &t->bins[(size_t)tr * (KP_HTML_MAX_DEPTH + 1) + (size_t)depth];
    if (a < 0) a = 0;
    if (b <= a) b = a < INT64_MAX ? a + 1 : a; /* an instant still marks its bin */
    int64_t first = a / t->bin_ns, last = (b - 1) / t->bin_ns;
    if (first >= KP_HTML_BINS) first = KP_HTML_BINS - 1;
    if (last >= KP_HTML_BINS) last = KP_HTML_BINS - 1;
    if (last < first) last = first;
    /* where bin `first` is, or would go (the touched bins are ascending) */
    size_t at = 0, hi_at = bs->n;
    while (at < hi_at) {
        size_t mid = at + (hi_at - at) / 2;
        if (bs->b[mid].bin < (uint32_t)first)
            at = mid + 1;
        else
            hi_at = mid;
    }
    for (int64_t i = first; i <= last; i++, at++) {
        if (at == bs->n || bs->b[at].bin != (uint32_t)i) { /* new: at the end, as a rule */
            if (bs->n == bs->cap) {
                size_t cap = bs->cap ? 2 * bs->cap : 16;
                kp_tl_bin *nb = realloc(bs->b, cap * sizeof *nb);
                if (!nb) {
                    t->nomem = 1;
                    return;
                }
                bs->b = nb;
                bs->cap = cap;
            }
            memmove(bs->b + at + 1, bs->b + at, (bs->n - at) * sizeof *bs->b);
            bs->n++;
            bs->b[at] = (kp_tl_bin){.bin = (uint32_t)i};
        }
        kp_tl_bin *x = &bs->b[at];
        int64_t s0 = kp_tl_bin_start(t, i), s1 = kp_tl_bin_start(t, i + 1);
        int64_t lo = a > s0 ? a : s0, hi = b < s1 ? b : s1;
        int64_t ov = hi > lo ? hi - lo : 1;
        x->busy = x->busy > t->bin_ns - ov ? t->bin_ns : x->busy + ov;
        x->count++;
        if (ov > x->cover) {
            x->cover = ov;
            x->name = name;
        }
    }
}

/* A kernel's duration, for the histograms: 0, or -1 out of memory. */
static int kp_tl_kernel(kp_tl *t, uint32_t name, int64_t dur)
{
    if (t->nk == t->kcap) {
        size_t cap = t->kcap ? 2 * t->kcap : 1024;
        uint32_t *n = realloc(t->kname, cap * sizeof *n);
        if (n) t->kname = n;
        int64_t *d = n ? realloc(t->kdur, cap * sizeof *d) : NULL;
        if (d) t->kdur = d;
        if (!n || !d) {
            t->nomem = 1;
            return -1;
        }
        t->kcap = cap;
    }
    t->kname[t->nk] = name;
    t->kdur[t->nk++] = dur;
    return 0;
}

/* A decimated track's held slices (all of one start) into its bins, longest first (see
 * kp_tl_lane); slices ending together stay in the order they came. */
static void kp_tl_release(kp_tl *t, int32_t tr)
{
    kp_tl_lane *l = &t->lanes[tr];
    for (size_t i = 1; i < l->nheld; i++) {
        kp_tl_held x = l->held[i];
        size_t k = i;
        for (; k > 0 && l->held[k - 1].end < x.end; k--)
            l->held[k] = l->held[k - 1];
        l->held[k] = x;
    }
    for (size_t i = 0; i < l->nheld; i++) {
        const kp_tl_held *x = &l->held[i];
        t->total++;
        kp_tl_bin_add(t, tr, kp_tl_depth(t, tr, x->start, x->end), x->name, x->start, x->end);
    }
    l->nheld = 0;
}

/* One event onto a decimated timeline: device work into its bins, a host thread's slices held
 * until a later start on the thread (kp_tl_release). */
static void kp_tl_add_decimated(kp_tl *t, const kp_trace_event *ev)
{
    const kp_event *e = &ev->e;
    if (kp_tl_kind_index(e->kind) < 0 || e->kind == KP_EVENT_OVERHEAD) return;
    int32_t tr = kp_tl_track_of(t, e);
    if (tr < 0) return;
    int64_t start = kp_ns_diff(e->start_ns, t->t0), end = kp_ns_diff(e->end_ns, t->t0);
    if ((kp_event_kind_flags(e->kind) & KP_EVENT_F_DEVICE) != 0) {
        if (e->kind == KP_EVENT_KERNEL && kp_tl_kernel(t, e->name, end > start ? end - start : 0))
            return;
        t->total++;
        kp_tl_bin_add(t, tr, 0, e->name, start, end);
        return;
    }
    kp_tl_lane *l = &t->lanes[tr];
    if (l->nheld && l->held[0].start != start) kp_tl_release(t, tr);
    if (l->nheld == l->heldcap) {
        size_t cap = l->heldcap ? 2 * l->heldcap : 4;
        kp_tl_held *h = realloc(l->held, cap * sizeof *h);
        if (!h) {
            t->nomem = 1;
            return;
        }
        l->held = h;
        l->heldcap = cap;
    }
    l->held[l->nheld++] = (kp_tl_held){.start = start, .end = end, .name = e->name};
}

/* One event onto the timeline (not decimated); the host slices' depths come after the pass
 * (kp_tl_depths), when every slice of a start is known. */
static void kp_tl_add(kp_tl *t, const kp_trace_event *ev)
{
    const kp_event *e = &ev->e;
    int kind = kp_tl_kind_index(e->kind);
    if (kind < 0 || e->kind == KP_EVENT_OVERHEAD) return; /* the collector's own cost: no track */
    int32_t tr = kp_tl_track_of(t, e);
    if (tr < 0) return;
    int64_t start = kp_ns_diff(e->start_ns, t->t0), end = kp_ns_diff(e->end_ns, t->t0);
    int64_t dur = end > start ? end - start : 0;
    int device = (kp_event_kind_flags(e->kind) & KP_EVENT_F_DEVICE) != 0;
    t->total++;
    if (e->kind == KP_EVENT_KERNEL && kp_tl_kernel(t, e->name, dur) != 0) return;
    if (t->nslices == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        kp_tl_slice *s = realloc(t->slices, cap * sizeof *s);
        if (!s) {
            t->nomem = 1;
            return;
        }
        t->slices = s;
        t->cap = cap;
    }
    int32_t idx = (int32_t)t->nslices;
    kp_tl_slice *s = &t->slices[t->nslices++];
    *s = (kp_tl_slice){.start = start,
                       .dur = dur,
                       .latency = -1,
                       .name = e->name,
                       .track = tr,
                       .flow = -1,
                       .geom = -1,
                       .kind = (uint8_t)kind,
                       .host = !device};
    if (device && (ev->has & KP_TRACE_HAS_LAUNCH))
        s->latency = kp_ns_diff(e->start_ns, ev->launch_start_ns);
    if (e->kind == KP_EVENT_KERNEL && (e->known & KP_EVENT_HAS_GEOMETRY)) {
        kp_str g = {0};
        kp_tl_geom_json(e, &g);
        s->geom = kp_tl_geom_index(&t->geoms, &g);
        kp_str_free(&g);
        if (s->geom < 0) t->nomem = 1;
    }
    int has_corr = (e->known & KP_EVENT_HAS_CORRELATION) != 0;
    if (has_corr && (device || (e->kind == KP_EVENT_API && (ev->has & KP_TRACE_LAUNCHED)))) {
        if (t->ncorrs == t->corrcap) {
            size_t cap = t->corrcap ? 2 * t->corrcap : 4096;
            kp_tl_corr *c = realloc(t->corrs, cap * sizeof *c);
            if (!c) {
                t->nomem = 1;
                return;
            }
            t->corrs = c;
            t->corrcap = cap;
        }
        t->corrs[t->ncorrs++] = (kp_tl_corr){
            .process = e->process, .corr = e->correlation, .slice = idx, .device = device};
    }
    int has_flops = (e->known & KP_EVENT_HAS_FLOPS) != 0;
    int has_mbytes = (e->known & KP_EVENT_HAS_METRIC_BYTES) != 0;
    int has_bytes = (ev->has & KP_TRACE_HAS_BYTES) != 0;
    if (has_flops || has_mbytes || has_bytes || ev->nmetrics) {
        kp_str *m = &t->metrics;
        if (m->len) kp_str_append(m, ",");
        kp_str_append(m, "\"");
        kp_put_i64(m, idx);
        kp_str_append(m, "\":{");
        const char *sep = "";
        if (has_flops) {
            kp_str_append(m, "\"flops\":");
            kp_put_double(m, e->metrics.flops);
            if (dur > 0) {
                kp_str_append(m, ",\"gflop_per_s\":");
                kp_put_double(m, e->metrics.flops / (double)dur);
            }
            sep = ",";
        }
        if (has_mbytes || has_bytes) {
            kp_str_append(m, sep);
            kp_str_append(m, "\"bytes\":");
            kp_put_double(m, has_mbytes ? e->metrics.bytes : (double)e->bytes);
            if (dur > 0) {
                kp_str_append(m, ",\"gb_per_s\":");
                kp_put_double(m, (has_mbytes ? e->metrics.bytes : (double)e->bytes) / (double)dur);
            }
            sep = ",";
        }
        size_t nnames;
        const char *const *texts = kp_event_source_strings(t->src, &nnames);
        for (size_t i = 0; i < ev->nmetrics; i++) {
            uint32_t key = ev->metrics[i].key;
            kp_str_append(m, sep);
            kp_json_quote(m, key < nnames && texts[key] ? texts[key] : "?");
            kp_str_append(m, ":");
            kp_put_double(m, ev->metrics[i].value);
            sep = ",";
        }
        kp_str_append(m, "}");
    }
}

/* The tracks: each process's host threads, then its queues; names as the Chrome export's. */
static void kp_tl_tracks(kp_tl *t, kp_json *j)
{
    int32_t next = 0;
    size_t hi = 0, qi = 0; /* both sorted by pid first: one walk over each */
    kp_json_array_begin(j, "tracks");
    while (hi < t->nhosts || qi < t->nqueues) {
        int64_t pid = hi < t->nhosts && (qi >= t->nqueues || t->hosts[hi].pid <= t->queues[qi].pid)
                          ? t->hosts[hi].pid
                          : t->queues[qi].pid;
        const kp_trace_process *pr = kp_event_source_process_of_pid(t->src, pid);
        char group[700], name[200], rank[32] = "";
        if (pr && pr->rank >= 0) {
            snprintf(group, sizeof group, "rank %d · pid %lld (%s)", pr->rank, (long long)pid,
                     pr->command);
            snprintf(rank, sizeof rank, "rank %d · ", pr->rank);
        } else {
            snprintf(group, sizeof group, "%lld %s", (long long)pid, pr ? pr->command : "");
        }
        for (; hi < t->nhosts && t->hosts[hi].pid == pid; hi++) {
            t->hosts[hi].track = next++;
            snprintf(name, sizeof name, "host thread %lld", (long long)t->hosts[hi].a);
            kp_json_object_begin(j, NULL);
            kp_json_string(j, "name", name);
            kp_json_string(j, "group", group);
            kp_json_string(j, "kind", "thread");
            kp_json_object_end(j);
        }
        for (; qi < t->nqueues && t->queues[qi].pid == pid; qi++) {
            const kp_tl_key *q = &t->queues[qi];
            t->queues[qi].track = next++;
            snprintf(group, sizeof group, "%s%s %lld (pid %lld)", rank,
                     q->opencl ? "device" : "GPU", (long long)q->a, (long long)pid);
            snprintf(name, sizeof name, "%s %lld", q->opencl ? "queue" : "stream", (long long)q->b);
            kp_json_object_begin(j, NULL);
            kp_json_string(j, "name", name);
            kp_json_string(j, "group", group);
            kp_json_string(j, "kind", q->opencl ? "queue" : "stream");
            kp_json_object_end(j);
        }
    }
    kp_json_array_end(j);
    t->ntracks = (size_t)next;
}

/* The columns of the raw slices, after the flows are paired. */
static void kp_tl_write_slices(kp_tl *t, kp_str *o)
{
    if (t->ncorrs) qsort(t->corrs, t->ncorrs, sizeof *t->corrs, kp_tl_corr_cmp);
    const kp_tl_corr *p = t->corrs, *end = t->corrs + t->ncorrs;
    while (p < end) {
        const kp_tl_corr *g = p;
        while (g < end && g->process == p->process && g->corr == p->corr)
            g++;
        /* [p, g): the call (device 0) first, then its device work in start order */
        if (!p->device) {
            int32_t call = p->slice;
            for (const kp_tl_corr *d = p + 1; d < g; d++) {
                if (!d->device) continue;
                if (t->slices[call].flow < 0) t->slices[call].flow = d->slice;
                t->slices[d->slice].flow = call;
            }
        }
        p = g;
    }
    static const char *const cols[] = {"track", "kind", "name", "start",  "dur",
                                       "depth", "flow", "geom", "latency"};
    kp_str_append(o, ",\"slices\":{");
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
        kp_str_printf(o, "%s\"%s\":[", c ? "," : "", cols[c]);
        int64_t prev = 0;
        for (size_t i = 0; i < t->nslices; i++) {
            const kp_tl_slice *s = &t->slices[i];
            if (i) kp_str_append_n(o, ",", 1);
            int64_t v = c == 0   ? s->track
                        : c == 1 ? s->kind
                        : c == 2 ? (int64_t)s->name
                        : c == 3 ? s->start - prev
                        : c == 4 ? s->dur
                        : c == 5 ? s->depth
                        : c == 6 ? s->flow
                        : c == 7 ? s->geom
                                 : s->latency;
            prev = s->start;
            kp_put_i64(o, v);
        }
        kp_str_append(o, "]");
    }
    kp_str_append(o, "},\"geoms\":[");
    for (size_t i = 0; i < t->geoms.n; i++) {
        if (i) kp_str_append(o, ",");
        kp_str_append_n(o, t->geoms.text[i].data, t->geoms.text[i].len);
    }
    kp_str_append(o, "],\"metrics\":{");
    if (t->metrics.len) kp_str_append_n(o, t->metrics.data, t->metrics.len);
    kp_str_append(o, "}");
}

static void kp_tl_write_summary(kp_tl *t, kp_str *o)
{
    kp_str_printf(o, ",\"bins\":%d,\"bin_ns\":%lld,\"summary\":[", KP_HTML_BINS,
                  (long long)t->bin_ns);
    int first = 1;
    for (size_t tr = 0; tr < t->ntracks; tr++) {
        for (int d = 0; d <= KP_HTML_MAX_DEPTH; d++) {
            const kp_tl_bins *bs = &t->bins[tr * (KP_HTML_MAX_DEPTH + 1) + (size_t)d];
            if (!bs->n) continue;
            kp_str_printf(o, "%s{\"track\":%zu,\"depth\":%d", first ? "" : ",", tr, d);
            first = 0;
            static const char *const cols[] = {"bin", "busy", "count", "name"};
            for (int c = 0; c < 4; c++) {
                kp_str_printf(o, ",\"%s\":[", cols[c]);
                for (size_t i = 0; i < bs->n; i++) {
                    const kp_tl_bin *x = &bs->b[i];
                    if (i) kp_str_append_n(o, ",", 1);
                    kp_put_i64(o, c == 0   ? (int64_t)x->bin
                                  : c == 1 ? x->busy
                                  : c == 2 ? (int64_t)x->count
                                           : (int64_t)x->name);
                }
                kp_str_append(o, "]");
            }
            kp_str_append(o, "}");
        }
    }
    kp_str_append(o, "]");
}

/* Kernel duration histograms: the KP_HTML_HIST_KERNELS names with the most device time, each in
 * KP_HTML_HIST_BINS log-spaced bins from its shortest to its longest instance. */
static void kp_tl_write_hist(kp_tl *t, kp_str *o)
{
    size_t nnames;
    const char *const *texts = kp_event_source_strings(t->src, &nnames);
    double *total = calloc(nnames + 1, sizeof *total);
    if (!total) {
        t->nomem = 1;
        return;
    }
    for (size_t i = 0; i < t->nk; i++)
        if (t->kname[i] < nnames) total[t->kname[i]] += (double)t->kdur[i];
    uint32_t top[KP_HTML_HIST_KERNELS];
    int ntop = 0;
    for (uint32_t id = 0; id < nnames; id++) {
        if (total[id] <= 0) continue;
        int at = ntop;
        while (at > 0 && total[top[at - 1]] < total[id])
            at--;
        if (at >= KP_HTML_HIST_KERNELS) continue;
        if (ntop < KP_HTML_HIST_KERNELS) ntop++;
        memmove(top + at + 1, top + at, (size_t)(ntop - 1 - at) * sizeof *top);
        top[at] = id;
    }
    kp_json j;
    kp_json_init(&j, o, 0);
    kp_json_array_begin(&j, NULL);
    for (int k = 0; k < ntop; k++) {
        int64_t lo = INT64_MAX, hi = 0;
        uint64_t n = 0;
        for (size_t i = 0; i < t->nk; i++) {
            if (t->kname[i] != top[k]) continue;
            n++;
            if (t->kdur[i] < lo) lo = t->kdur[i];
            if (t->kdur[i] > hi) hi = t->kdur[i];
        }
        int nb = hi > lo ? KP_HTML_HIST_BINS : 1;
        double edges[KP_HTML_HIST_BINS + 1];
        uint64_t counts[KP_HTML_HIST_BINS] = {0};
        int logs = lo > 0;
        for (int b = 0; b <= nb; b++)
            edges[b] = nb == 1 ? (double)(b ? hi : lo)
                       : logs  ? (double)lo * pow((double)hi / (double)lo, (double)b / nb)
                               : (double)lo + (double)(hi - lo) * b / nb;
        for (size_t i = 0; i < t->nk; i++) {
            if (t->kname[i] != top[k]) continue;
            double x = (double)t->kdur[i];
            int b = 0;
            if (nb > 1)
                b = logs ? (int)(nb * log(x / (double)lo) / log((double)hi / (double)lo))
                         : (int)(nb * (x - (double)lo) / (double)(hi - lo));
            if (b < 0) b = 0;
            if (b >= nb) b = nb - 1;
            counts[b]++;
        }
        kp_json_object_begin(&j, NULL);
        kp_json_string(&j, "name", top[k] < nnames && texts[top[k]] ? texts[top[k]] : "?");
        kp_json_uint(&j, "count", n);
        kp_json_array_begin(&j, "edges_s");
        for (int b = 0; b <= nb; b++)
            kp_json_double(&j, NULL, edges[b] / 1e9);
        kp_json_array_end(&j);
        kp_json_array_begin(&j, "counts");
        for (int b = 0; b < nb; b++)
            kp_json_uint(&j, NULL, counts[b]);
        kp_json_array_end(&j);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    free(total);
}

static void kp_tl_free(kp_tl *t)
{
    free(t->hosts);
    free(t->queues);
    free(t->slices);
    free(t->corrs);
    kp_tl_geoms_free(&t->geoms);
    kp_str_free(&t->metrics);
    if (t->bins)
        for (size_t i = 0; i < t->ntracks * (KP_HTML_MAX_DEPTH + 1); i++)
            free(t->bins[i].b);
    free(t->bins);
    if (t->lanes)
        for (size_t i = 0; i < t->ntracks; i++) {
            free(t->lanes[i].ends);
            free(t->lanes[i].held);
        }
    free(t->lanes);
    free(t->kname);
    free(t->kdur);
}

/* The timeline's tracks and bins made ready for the pass (kp_tl_add), its head written to *head
 * (the object left open). */
static kprof_status kp_tl_begin(kp_tl *t, kp_event_source *src, kp_str *head, kp_error *err)
{
    memset(t, 0, sizeof *t);
    t->src = src;
    int64_t first = 0, last = 0, max_id = 0;
    const kp_trace_thread *threads;
    const kp_trace_queue *queues;
    size_t nthreads, nqueues;
    kprof_status st = kp_event_source_span(src, &first, &last, err);
    if (st == KPROF_OK) st = kp_event_source_last_id(src, &max_id, err);
    if (st == KPROF_OK) st = kp_event_source_threads(src, &threads, &nthreads, err);
    if (st == KPROF_OK) st = kp_event_source_queues(src, &queues, &nqueues, err);
    if (st != KPROF_OK) return st;
    t->t0 = kp_event_source_meta(src)->start_ns;
    if (max_id > 0 && (t->t0 == 0 || first < t->t0)) t->t0 = first; /* events before the start */
    t->span = kp_ns_diff(last, t->t0);
    if (t->span < 1) t->span = 1;
    t->hosts = calloc(nthreads + 1, sizeof *t->hosts);
    t->queues = calloc(nqueues + 1, sizeof *t->queues);
    if (!t->hosts || !t->queues) return kp_error_nomem(err);
    for (size_t i = 0; i < nthreads; i++)
        t->hosts[t->nhosts++] = (kp_tl_key){.pid = threads[i].pid, .a = threads[i].tid};
    for (size_t i = 0; i < nqueues; i++)
        t->queues[t->nqueues++] = (kp_tl_key){.pid = queues[i].pid,
                                              .a = queues[i].device,
                                              .b = queues[i].stream,
                                              .opencl = queues[i].opencl};
    qsort(t->hosts, t->nhosts, sizeof *t->hosts, kp_tl_key_cmp);
    qsort(t->queues, t->nqueues, sizeof *t->queues, kp_tl_key_cmp);
    kp_json j;
    kp_json_init(&j, head, 0);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "t0_ns", t->t0);
    kp_json_int(&j, "span_ns", t->span);
    kp_tl_tracks(t, &j); /* the keys stay sorted: each says its track */
    kp_json_int(&j, "slices_limit", KP_HTML_SLICES_LIMIT);
    /* A row is an event: more rows than the limit, more slices than it (nearly). */
    t->decimated = max_id > KP_HTML_SLICES_LIMIT;
    kp_json_bool(&j, "decimated", t->decimated);
    kp_json_array_begin(&j, "kinds");
#define KP_TL_KIND_NAME_(id, NAME, name, category, flags, what) kp_json_string(&j, NULL, name);
    KP_EVENT_KIND_LIST(KP_TL_KIND_NAME_)
#undef KP_TL_KIND_NAME_
    kp_json_array_end(&j);
    size_t nnames;
    const char *const *texts = kp_event_source_strings(src, &nnames);
    kp_json_array_begin(&j, "names");
    for (size_t i = 0; i < nnames; i++)
        kp_json_string(&j, NULL, texts[i] ? texts[i] : "");
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    if (head->len) head->data[--head->len] = '\0'; /* reopen the object: the rest follows */
    t->bin_ns = t->span / KP_HTML_BINS + (t->span % KP_HTML_BINS != 0);
    if (t->bin_ns < 1) t->bin_ns = 1;
    t->lanes = calloc(t->ntracks + 1, sizeof *t->lanes);
    if (t->decimated) t->bins = calloc((t->ntracks + 1) * (KP_HTML_MAX_DEPTH + 1), sizeof *t->bins);
    if (!t->lanes || (t->decimated && !t->bins) || t->nomem || head->failed || j.failed)
        return kp_error_nomem(err);
    return KPROF_OK;
}

/* The fields the timeline reads besides the aggregate's. */
static unsigned kp_tl_fields(const kp_tl *t)
{
    return KP_EVENT_FIELD_PID | KP_EVENT_FIELD_STREAM |
           (t->decimated ? 0u
                         : KP_EVENT_FIELD_CALL | KP_EVENT_FIELD_KERNEL | KP_EVENT_FIELD_PAYLOAD |
                               KP_EVENT_FIELD_LAUNCH | KP_EVENT_FIELD_METRICS);
}

static void kp_tl_each(void *ctx, const kp_trace_event *ev)
{
    kp_tl *t = ctx;
    if (t->nomem) return;
    if (t->decimated)
        kp_tl_add_decimated(t, ev);
    else
        kp_tl_add(t, ev);
}

/* A host slice in nesting order: by track and start, the longest first (see kp_tl_lane), then
 * as stored. */
typedef struct kp_tl_nest {
    int64_t start, end;
    int32_t track, slice;
} kp_tl_nest;

static int kp_tl_nest_cmp(const void *x, const void *y)
{
    const kp_tl_nest *p = x, *q = y;
    if (p->track != q->track) return p->track < q->track ? -1 : 1;
    if (p->start != q->start) return p->start < q->start ? -1 : 1;
    if (p->end != q->end) return p->end > q->end ? -1 : 1;
    return p->slice - q->slice;
}

/* The raw slices' depths on their host threads. */
static void kp_tl_depths(kp_tl *t)
{
    kp_tl_nest *v = malloc((t->nslices + 1) * sizeof *v);
    if (!v) {
        t->nomem = 1;
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < t->nslices; i++) {
        const kp_tl_slice *s = &t->slices[i];
        if (s->host)
            v[n++] = (kp_tl_nest){.start = s->start,
                                  .end = kp_i64_add_sat(s->start, s->dur),
                                  .track = s->track,
                                  .slice = (int32_t)i};
    }
    if (n) qsort(v, n, sizeof *v, kp_tl_nest_cmp);
    for (size_t i = 0; i < n && !t->nomem; i++)
        t->slices[v[i].slice].depth = (uint8_t)kp_tl_depth(t, v[i].track, v[i].start, v[i].end);
    free(v);
}

/* After the pass: the rest of the timeline into tl (after its head), the histograms into hist. */
static kprof_status kp_tl_finish(kp_tl *t, const kp_str *head, kp_str *tl, kp_str *hist,
                                 kp_error *err)
{
    if (t->decimated)
        for (size_t tr = 0; tr < t->ntracks && !t->nomem; tr++)
            kp_tl_release(t, (int32_t)tr);
    else
        kp_tl_depths(t);
    kp_str_append_n(tl, head->data, head->len);
    kp_str_printf(tl, ",\"events\":%llu", (unsigned long long)t->total);
    if (t->decimated)
        kp_tl_write_summary(t, tl);
    else
        kp_tl_write_slices(t, tl);
    kp_str_append(tl, "}");
    kp_tl_write_hist(t, hist);
    return t->nomem || tl->failed || hist->failed ? kp_error_nomem(err) : KPROF_OK;
}

/* ---- the trace page ------------------------------------------------------------------------ */

static void *kp_html_job_run(void *p)
{
    kp_html_job *job = p;
    kp_event_source *src = NULL;
    kp_aggregation *a = NULL;
    kp_tl t;
    memset(&t, 0, sizeof t);
    kp_str head = {0};
    job->st = kp_event_source_open(job->path, &src, &job->err);
    if (job->st == KPROF_OK) job->st = kp_tl_begin(&t, src, &head, &job->err);
    if (job->st == KPROF_OK)
        job->st = kp_trace_aggregate_each(src, 0, kp_tl_fields(&t), kp_tl_each, &t, &a, &job->err);
    if (job->st == KPROF_OK) {
        kp_calltree_view view = {.trace = job->label,
                                 .command = kp_event_source_meta(src)->command,
                                 .opencl_only = kp_event_source_opencl_only(src)};
        job->st = kp_calltree_render(a, &view, KP_CALLTREE_JSON, &job->tree, &job->err);
    }
    kp_aggregation_destroy(a); /* before the source: it reads the source's names */
    if (job->st == KPROF_OK)
        job->st = kp_tl_finish(&t, &head, &job->timeline, &job->hist, &job->err);
    kp_str_free(&head);
    kp_tl_free(&t);
    kp_event_source_close(src);
    return NULL;
}

/* The slow rows' thresholds of a table, as the text table marks them; null where it marks none. */
static void kp_html_slow(kp_json *j, const char *key, const kp_report_table *l)
{
    double p75, p95;
    kp_report_thresholds(l, &p75, &p95);
    if (!isfinite(p75) || !isfinite(p95)) {
        kp_json_null(j, key);
        return;
    }
    kp_json_object_begin(j, key);
    kp_json_double(j, "p75", p75);
    kp_json_double(j, "p95", p95);
    kp_json_object_end(j);
}

kprof_status kp_html_trace(const char *path, const char *label, FILE *f, kp_error *err)
{
    kp_html_job job;
    memset(&job, 0, sizeof job);
    job.path = path;
    job.label = label ? label : path;
    pthread_t worker;
    int threaded = pthread_create(&worker, NULL, kp_html_job_run, &job) == 0;

    kp_report rep;
    memset(&rep, 0, sizeof rep);
    kp_event_source *src = NULL;
    kp_str report = {0}, slow = {0}, page = {0};
    kprof_status st = kp_event_source_open(path, &src, err);
    if (st == KPROF_OK) st = kp_report_load(&rep, src, job.label, 0, err);
    if (st == KPROF_OK) st = kp_report_write_json(&report, &rep, 0, err);
    if (st == KPROF_OK) {
        kp_json j;
        kp_json_init(&j, &slow, 0);
        kp_json_object_begin(&j, NULL);
        kp_html_slow(&j, "host", &rep.host);
        kp_html_slow(&j, "device", &rep.device);
        kp_html_slow(&j, "nvtx", &rep.nvtx);
        kp_json_object_end(&j);
        if (slow.failed) st = kp_error_nomem(err);
    }
    if (threaded)
        pthread_join(worker, NULL);
    else
        kp_html_job_run(&job);
    if (st == KPROF_OK && job.st != KPROF_OK) {
        st = job.st;
        kp_error_move(err, &job.err);
    }
    if (st == KPROF_OK) {
        char title[4200];
        snprintf(title, sizeof title, "kprof report %s", job.label);
        kp_html_begin(&page, "trace", title);
        kp_html_member(&page, "report", report.data, report.len);
        kp_html_member(&page, "tree", job.tree.data, job.tree.len);
        kp_html_member(&page, "slow", slow.data, slow.len);
        kp_html_member(&page, "hist", job.hist.data, job.hist.len);
        kp_html_member(&page, "timeline", job.timeline.data, job.timeline.len);
        kp_html_end(&page);
        if (page.failed)
            st = kp_error_nomem(err);
        else if (fwrite(page.data, 1, page.len, f) != page.len || fflush(f) != 0)
            st = kp_error_set(err, KPROF_IO, "writing the page failed");
    }
    kp_report_free(&rep);
    kp_error_clear(&job.err);
    kp_str_free(&job.tree);
    kp_str_free(&job.hist);
    kp_str_free(&job.timeline);
    kp_str_free(&report);
    kp_str_free(&slow);
    kp_str_free(&page);
    return st;
}
