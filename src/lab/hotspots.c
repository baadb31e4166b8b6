/*
 * hotspots.c — sampled PCs summed per source line (see hotspots.h): the PCs sorted so that those
 * of one line sit together, each run of them summed into a line, the lines sorted by samples;
 * then, apart from the arithmetic, the session call, the lines' text and the JSON.
 */
#define _GNU_SOURCE
#include "lab/hotspots.h"
#include "base/util.h"
#include "lab/lab_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KP_HOTSPOT_TEXT_BYTES 160         /* a line's text is cut here (at a character) */
#define KP_HOTSPOT_FILE_BYTES (16u << 20) /* larger sources are not read for text */

static const char kp_stall_prefix[] = "smsp__pcsamp_warps_issue_stalled_";
static const char kp_sampler_prefix[] = "smsp__pcsamp_";
static const char kp_not_issued_suffix[] = "_not_issued";

const char *kp_stall_reason_short(const char *name)
{
    if (strncmp(name, kp_stall_prefix, sizeof kp_stall_prefix - 1) == 0)
        return name + sizeof kp_stall_prefix - 1;
    if (strncmp(name, kp_sampler_prefix, sizeof kp_sampler_prefix - 1) == 0)
        return name + sizeof kp_sampler_prefix - 1;
    return name;
}

int kp_stall_reason_not_issued(const char *name)
{
    size_t n = strlen(name), m = sizeof kp_not_issued_suffix - 1;
    return n >= m && strcmp(name + n - m, kp_not_issued_suffix) == 0;
}

/* ---- the aggregation ------------------------------------------------------------------------ */

static int kp_hs_has_line(const kp_pc_sample *pc)
{
    return pc->file && pc->line > 0;
}

static int kp_hs_u64_cmp(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

/* The order that puts the PCs of one line next to each other (and is total, for stable
 * output). */
static int kp_hs_pc_cmp(const void *pa, const void *pb)
{
    const kp_pc_sample *a = *(const kp_pc_sample *const *)pa;
    const kp_pc_sample *b = *(const kp_pc_sample *const *)pb;
    int la = kp_hs_has_line(a), lb = kp_hs_has_line(b);
    if (la != lb) return lb - la;
    int c;
    if (la) {
        if ((c = strcmp(a->file, b->file)) != 0) return c;
        if (a->line != b->line) return a->line < b->line ? -1 : 1;
    }
    if ((c = strcmp(a->function, b->function)) != 0) return c;
    return kp_hs_u64_cmp(a->pc_offset, b->pc_offset);
}

static int kp_hs_same_line(const kp_pc_sample *a, const kp_pc_sample *b)
{
    int la = kp_hs_has_line(a), lb = kp_hs_has_line(b);
    if (la != lb || strcmp(a->function, b->function) != 0) return 0;
    if (!la) return a->pc_offset == b->pc_offset;
    return a->line == b->line && strcmp(a->file, b->file) == 0;
}

/* Most samples first; ties by file (lines before PCs without one), line, function, PC. */
static int kp_hs_line_cmp(const void *pa, const void *pb)
{
    const kp_hotspot *a = pa, *b = pb;
    if (a->samples != b->samples) return a->samples > b->samples ? -1 : 1;
    if (!a->file != !b->file) return a->file ? -1 : 1;
    int c;
    if (a->file && (c = strcmp(a->file, b->file)) != 0) return c;
    if (a->line != b->line) return a->line < b->line ? -1 : 1;
    if ((c = strcmp(a->function, b->function)) != 0) return c;
    return kp_hs_u64_cmp(a->pc_offset, b->pc_offset);
}

typedef struct kp_hs_count {
    size_t reason;
    uint64_t samples;
} kp_hs_count;

static int kp_hs_count_cmp(const void *pa, const void *pb)
{
    const kp_hs_count *a = pa, *b = pb;
    if (a->samples != b->samples) return a->samples > b->samples ? -1 : 1;
    return a->reason < b->reason ? -1 : a->reason > b->reason;
}

/* One line from the run of PCs pcs[0..n): sums per reason into sums[], its stalls sorted.
 * KPROF_OK, or KPROF_NOMEM (err filled; h holds what was made, for kp_hotspots_free). */
static kprof_status kp_hs_make_line(const kp_pc_samples *s, const kp_pc_sample *const *pcs,
                                    size_t n, const unsigned char *not_issued,
                                    const char *const *short_names, uint64_t *sums, kp_hotspot *h,
                                    kp_error *err)
{
    memset(h, 0, sizeof *h);
    memset(sums, 0, s->nreasons * sizeof *sums);
    uint64_t hottest = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t at_pc = 0;
        for (size_t r = 0; r < s->nreasons; r++) {
            sums[r] += pcs[i]->stalls[r];
            if (!not_issued[r]) at_pc += pcs[i]->stalls[r];
        }
        if (i == 0 || at_pc > hottest) {
            hottest = at_pc;
            h->pc_offset = pcs[i]->pc_offset;
        }
    }
    h->npcs = n;
    size_t nstalls = 0;
    for (size_t r = 0; r < s->nreasons; r++) {
        if (not_issued[r]) {
            h->not_issued += sums[r];
        } else {
            h->samples += sums[r];
            if (sums[r]) nstalls++;
        }
    }
    kp_hs_count *counts = calloc(nstalls ? nstalls : 1, sizeof *counts);
    h->stalls = calloc(nstalls ? nstalls : 1, sizeof *h->stalls);
    h->function = kp_strdup(pcs[0]->function);
    if (kp_hs_has_line(pcs[0])) h->file = kp_strdup(pcs[0]->file);
    if (!counts || !h->stalls || !h->function || (kp_hs_has_line(pcs[0]) && !h->file)) {
        free(counts);
        return kp_error_nomem(err);
    }
    h->line = kp_hs_has_line(pcs[0]) ? pcs[0]->line : 0;
    size_t k = 0;
    for (size_t r = 0; r < s->nreasons; r++)
        if (!not_issued[r] && sums[r]) counts[k++] = (kp_hs_count){r, sums[r]};
    qsort(counts, nstalls, sizeof *counts, kp_hs_count_cmp);
    for (size_t i = 0; i < nstalls; i++)
        h->stalls[i] = (kp_hotspot_stall){short_names[counts[i].reason], counts[i].samples};
    h->nstalls = nstalls;
    free(counts);
    return KPROF_OK;
}

kprof_status kp_hotspots_from_samples(const kp_pc_samples *s, kp_hotspots *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    kprof_status rc = KPROF_NOMEM;
    const kp_pc_sample **pcs = calloc(s->n ? s->n : 1, sizeof *pcs);
    unsigned char *not_issued = calloc(s->nreasons ? s->nreasons : 1, 1);
    uint64_t *sums = calloc(s->nreasons ? s->nreasons : 1, sizeof *sums);
    out->reasons = calloc(s->nreasons ? s->nreasons : 1, sizeof *out->reasons);
    out->lines = calloc(s->n ? s->n : 1, sizeof *out->lines);
    if (!pcs || !not_issued || !sums || !out->reasons || !out->lines) goto done;
    for (size_t r = 0; r < s->nreasons; r++) {
        out->reasons[r] = kp_strdup(kp_stall_reason_short(s->reasons[r]));
        if (!out->reasons[r]) goto done;
        out->nreasons++;
        not_issued[r] = (unsigned char)kp_stall_reason_not_issued(s->reasons[r]);
    }
    for (size_t i = 0; i < s->n; i++)
        pcs[i] = &s->pcs[i];
    qsort(pcs, s->n, sizeof *pcs, kp_hs_pc_cmp);
    for (size_t i = 0; i < s->n;) {
        size_t j = i + 1;
        while (j < s->n && kp_hs_same_line(pcs[i], pcs[j]))
            j++;
        kp_hotspot *h = &out->lines[out->n];
        rc = kp_hs_make_line(s, pcs + i, j - i, not_issued, (const char *const *)out->reasons, sums,
                             h, err);
        out->n++; /* even half made: kp_hotspots_free releases what it holds */
        if (rc != KPROF_OK) goto done;
        rc = KPROF_NOMEM; /* what a later jump to done means */
        /* A PC with no samples under any plain reason is no line. */
        if (h->samples == 0) {
            out->n--;
            free(h->file);
            free(h->function);
            free(h->stalls);
        }
        out->samples += h->samples;
        i = j;
    }
    for (size_t i = 0; i < out->n; i++)
        out->lines[i].share =
            out->samples ? (double)out->lines[i].samples / (double)out->samples : 0.0;
    qsort(out->lines, out->n, sizeof *out->lines, kp_hs_line_cmp);
    out->total_samples = s->total_samples;
    out->dropped_samples = s->dropped_samples;
    out->dispatches = s->dispatches;
    kp_strlcpy(out->note, s->note, sizeof out->note);
    rc = KPROF_OK;
done:
    free(pcs);
    free(not_issued);
    free(sums);
    if (rc == KPROF_NOMEM) kp_error_nomem(err); /* once: the first failure holds err */
    if (rc != KPROF_OK) kp_hotspots_free(out);
    return rc;
}

void kp_hotspots_free(kp_hotspots *h)
{
    if (!h) return;
    for (size_t i = 0; i < h->n; i++) {
        free(h->lines[i].file);
        free(h->lines[i].function);
        free(h->lines[i].stalls);
        free(h->lines[i].text);
    }
    free(h->lines);
    for (size_t r = 0; r < h->nreasons; r++)
        free(h->reasons[r]);
    free(h->reasons);
    memset(h, 0, sizeof *h);
}

/* ---- the lines' text ------------------------------------------------------------------------ */

/* Read a regular file of at most KP_HOTSPOT_FILE_BYTES; NULL otherwise. */
static char *kp_hs_read_source(const char *path, size_t *len)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > KP_HOTSPOT_FILE_BYTES)
        return NULL;
    char *text = NULL;
    kp_error scratch = {0};
    if (kp_file_read(path, &text, len, &scratch) != KPROF_OK) text = NULL;
    kp_error_clear(&scratch);
    return text;
}

static const char *kp_hs_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The file a line's info names, as kprof can read it. */
static char *kp_hs_find_source(const char *file, const char *source_path, size_t *len)
{
    char *text = kp_hs_read_source(file, len);
    if (text || !source_path || !source_path[0]) return text;
    const char *slash = strrchr(source_path, '/');
    if (file[0] != '/' && slash) {
        kp_str beside = {0};
        kp_str_printf(&beside, "%.*s/%s", (int)(slash - source_path), source_path, file);
        if (beside.data) text = kp_hs_read_source(beside.data, len);
        kp_str_free(&beside);
        if (text) return text;
    }
    if (strcmp(kp_hs_base_name(file), kp_hs_base_name(source_path)) == 0)
        return kp_hs_read_source(source_path, len);
    return NULL;
}

/* Line `line` (1-based) of text: trimmed, tabs as spaces, cut at a character near
 * KP_HOTSPOT_TEXT_BYTES (then "…"), escaped into one line of valid UTF-8. NULL when the file
 * has no such line. */
static char *kp_hs_line_text(const char *text, size_t len, uint32_t line)
{
    const char *p = text, *end = text + len;
    for (uint32_t l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return NULL;
        p = nl + 1;
    }
    if (p >= end && line > 1) return NULL;
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        e--;
    size_t n = 0, cut = 0;
    while (p + n < e) {
        size_t c = kp_utf8_char_len((const unsigned char *)p + n, (size_t)(e - p) - n);
        if (c == 0) c = 1; /* a bad byte: kp_str_append_escaped shows it as \xNN */
        if (n + c > KP_HOTSPOT_TEXT_BYTES) {
            cut = 1;
            break;
        }
        n += c;
    }
    kp_str out = {0};
    for (size_t i = 0; i < n;) {
        size_t run = 0;
        while (i + run < n && p[i + run] != '\t')
            run++;
        kp_str_append_escaped(&out, p + i, run);
        i += run;
        if (i < n) {
            kp_str_append(&out, " ");
            i++;
        }
    }
    if (cut) kp_str_append(&out, "…");
    if (!out.data) kp_str_append(&out, "");
    return kp_str_take(&out);
}

void kp_hotspots_read_text(kp_hotspots *h, const char *source_path)
{
    for (size_t i = 0; i < h->n; i++) {
        const kp_hotspot *first = &h->lines[i];
        if (!first->file || first->text) continue;
        size_t len = 0;
        char *text = kp_hs_find_source(first->file, source_path, &len);
        if (!text) continue;
        /* Every line of this file at once: each file is read once. */
        for (size_t j = i; j < h->n; j++) {
            kp_hotspot *l = &h->lines[j];
            if (l->file && !l->text && strcmp(l->file, first->file) == 0)
                l->text = kp_hs_line_text(text, len, l->line);
        }
        free(text);
    }
}

/* ---- the session and JSON ------------------------------------------------------------------- */

kprof_status kp_lab_hotspots(kp_lab *lab, const kp_launch *launch, int dispatches, kp_hotspots *out,
                             kp_error *err)
{
    memset(out, 0, sizeof *out);
    /* A session in a child process is an OpenCL one (lab.h): no backend there samples PCs. */
    if (!lab->impl->pc_sample || !lab->ops || !lab->ops->pc_sample)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "the %s backend has no PC sampler (kprof samples PCs on CUDA "
                            "devices)",
                            lab->info.device.backend[0] ? lab->info.device.backend : "chosen");
    kp_pc_samples samples = {0};
    kprof_status st = lab->impl->pc_sample(lab, launch, dispatches, &samples, err);
    if (st == KPROF_OK) st = kp_hotspots_from_samples(&samples, out, err);
    kp_pc_samples_free(&samples);
    if (st == KPROF_OK) kp_hotspots_read_text(out, lab->info.source_path);
    return st;
}

void kp_hotspots_json(kp_json *j, const char *key, const kp_hotspots *h, const char *why)
{
    kp_json_object_begin(j, key);
    kp_json_bool(j, "available", h != NULL);
    if (!h) {
        kp_json_string(j, "reason", why ? why : "");
        kp_json_object_end(j);
        return;
    }
    kp_json_int(j, "dispatches", h->dispatches);
    kp_json_uint(j, "samples", h->samples);
    kp_json_uint(j, "sampler_total_samples", h->total_samples);
    kp_json_uint(j, "sampler_dropped_samples", h->dropped_samples);
    kp_json_string(j, "note", h->note[0] ? h->note : NULL);
    kp_json_array_begin(j, "lines");
    for (size_t i = 0; i < h->n; i++) {
        const kp_hotspot *l = &h->lines[i];
        kp_json_object_begin(j, NULL);
        kp_json_string(j, "file", l->file);
        if (l->line)
            kp_json_uint(j, "line", l->line);
        else
            kp_json_null(j, "line");
        kp_json_string(j, "function", l->function);
        kp_json_uint(j, "pc_offset", l->pc_offset);
        kp_json_uint(j, "pcs", l->npcs);
        kp_json_uint(j, "samples", l->samples);
        kp_json_double(j, "share", l->share);
        kp_json_uint(j, "not_issued", l->not_issued);
        kp_json_string(j, "text", l->text);
        kp_json_array_begin(j, "stalls");
        for (size_t k = 0; k < l->nstalls; k++) {
            kp_json_object_begin(j, NULL);
            kp_json_string(j, "reason", l->stalls[k].reason);
            kp_json_uint(j, "samples", l->stalls[k].samples);
            kp_json_object_end(j);
        }
        kp_json_array_end(j);
        kp_json_object_end(j);
    }
    kp_json_array_end(j);
    kp_json_object_end(j);
}
