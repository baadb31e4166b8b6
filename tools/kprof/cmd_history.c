/*
 * cmd_history.c — `kprof history [KERNEL] [--json] [--limit N]`: the results kprof run, sweep and
 * bench recorded (store/history.h), newest first, as a table for people or JSON for scripts
 * (every column of the store's `runs` but the result JSON, with the samples).
 */
#include "base/util.h"
#include "export/text.h"
#include "store/history.h"
#include "store/store.h"
#include "tools/kprof/cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KP_HISTORY_CELL_MAX 40 /* characters of a name shown in the table before "…" */

typedef struct kp_history_args {
    const char *kernel;
    int json;
    int limit;
} kp_history_args;

static int kp_history_parse(int argc, char **argv, kp_history_args *a)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"limit", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    opterr = 0;
    optind = 1;
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            a->json = 1;
            break;
        case 'n':
            if (kp_parse_size(optarg, &v) != 0 || v < 1 || v > 1000000000)
                return kp_cli_usage_error("history",
                                          "--limit '%s': expected a number of runs, "
                                          "1 or more",
                                          optarg);
            a->limit = (int)v;
            break;
        case ':':
            return kp_cli_usage_error("history", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("history", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc) a->kernel = argv[optind++];
    if (optind < argc)
        return kp_cli_usage_error("history", "unexpected argument '%s': give one KERNEL at most",
                                  argv[optind]);
    return 0;
}

/* ---- the table ---------------------------------------------------------------------------- */

enum {
    KP_COL_ID,
    KP_COL_WHEN,
    KP_COL_KIND,
    KP_COL_KERNEL,
    KP_COL_DEVICE,
    KP_COL_GRID,
    KP_COL_TG,
    KP_COL_MEDIAN,
    KP_COL_SAMPLES,
    KP_COL_COMMIT,
    KP_NCOLS
};

static const char *const kp_history_headers[KP_NCOLS] = {
    "id", "when", "kind", "kernel", "device", "grid", "tg", "median ms", "samples", "commit"};
static const int kp_history_right[KP_NCOLS] = {1, 0, 0, 0, 0, 0, 0, 1, 1, 0};

typedef struct kp_history_row_text {
    char cell[KP_NCOLS][4 * KP_HISTORY_CELL_MAX + 8];
} kp_history_row_text;

typedef struct kp_history_table {
    kp_history_row_text *rows;
    size_t n, cap;
    int width[KP_NCOLS];
    int failed;
} kp_history_table;

/* Characters (not bytes) of UTF-8 text; a byte that starts no character counts as one. */
static int kp_history_chars(const char *s)
{
    int n = 0;
    size_t left = strlen(s);
    const unsigned char *p = (const unsigned char *)s;
    while (left) {
        size_t k = kp_utf8_char_len(p, left);
        if (k == 0) k = 1;
        p += k;
        left -= k;
        n++;
    }
    return n;
}

/* text into a cell, escaped as every text output escapes names (kp_str_append_escaped: control
 * characters and bytes that are not UTF-8 as \n, \xNN), cut to KP_HISTORY_CELL_MAX characters
 * with "…" when longer. */
static void kp_history_cell(char *dst, size_t n, const char *text)
{
    kp_str s = {0};
    kp_str_append_escaped(&s, text, strlen(text));
    const char *t = s.data ? s.data : "";
    const unsigned char *p = (const unsigned char *)t;
    size_t left = strlen(t), bytes = 0;
    int chars = 0;
    while (left && chars < KP_HISTORY_CELL_MAX - 1) {
        size_t k = kp_utf8_char_len(p + bytes, left);
        if (k == 0) k = 1;
        bytes += k;
        left -= k;
        chars++;
    }
    if (left && kp_history_chars(t + bytes) > 1)
        snprintf(dst, n, "%.*s…", (int)bytes, t);
    else
        snprintf(dst, n, "%s", t);
    kp_str_free(&s);
}

static int kp_history_table_add(const kp_history_run *r, const double *samples, size_t n,
                                void *user)
{
    (void)samples;
    (void)n;
    kp_history_table *t = user;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 32;
        kp_history_row_text *rows = realloc(t->rows, cap * sizeof *rows);
        if (!rows) {
            t->failed = 1;
            return 1;
        }
        t->rows = rows;
        t->cap = cap;
    }
    kp_history_row_text *row = &t->rows[t->n++];
    char buf[128];
    snprintf(row->cell[KP_COL_ID], sizeof row->cell[0], "%lld", (long long)r->id);
    time_t at = (time_t)r->at;
    struct tm tm;
    if (localtime_r(&at, &tm) && strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(row->cell[KP_COL_WHEN], sizeof row->cell[0], "%s", buf);
    else
        snprintf(row->cell[KP_COL_WHEN], sizeof row->cell[0], "%lld", (long long)r->at);
    kp_history_cell(row->cell[KP_COL_KIND], sizeof row->cell[0], r->kind);
    kp_history_cell(row->cell[KP_COL_KERNEL], sizeof row->cell[0], r->kernel);
    kp_history_cell(row->cell[KP_COL_DEVICE], sizeof row->cell[0], r->device);
    kp_history_cell(row->cell[KP_COL_GRID], sizeof row->cell[0], r->grid);
    kp_history_cell(row->cell[KP_COL_TG], sizeof row->cell[0], r->tg);
    snprintf(row->cell[KP_COL_MEDIAN], sizeof row->cell[0], "%.5g", r->median_ms);
    snprintf(row->cell[KP_COL_SAMPLES], sizeof row->cell[0], "%lld", (long long)r->nsamples);
    if (r->git_dirty < 0 || !r->git_commit[0])
        snprintf(row->cell[KP_COL_COMMIT], sizeof row->cell[0], "-");
    else
        snprintf(row->cell[KP_COL_COMMIT], sizeof row->cell[0], "%.7s%s", r->git_commit,
                 r->git_dirty ? "*" : "");
    return 0;
}

static void kp_history_print_cell(const char *text, int width, int right, int last)
{
    int pad = width - kp_history_chars(text);
    if (pad < 0) pad = 0;
    if (right)
        printf("%*s%s", pad, "", text);
    else if (last)
        printf("%s", text);
    else
        printf("%s%*s", text, pad, "");
}

static void kp_history_print(kp_history_table *t)
{
    for (int c = 0; c < KP_NCOLS; c++) {
        t->width[c] = kp_history_chars(kp_history_headers[c]);
        for (size_t i = 0; i < t->n; i++) {
            int w = kp_history_chars(t->rows[i].cell[c]);
            if (w > t->width[c]) t->width[c] = w;
        }
    }
    const char *D = kp_text_dim(stdout), *R = kp_text_reset(stdout);
    printf("%s", D);
    for (int c = 0; c < KP_NCOLS; c++) {
        if (c) printf("  ");
        kp_history_print_cell(kp_history_headers[c], t->width[c], kp_history_right[c],
                              c == KP_NCOLS - 1);
    }
    printf("%s\n", R);
    for (size_t i = 0; i < t->n; i++) {
        for (int c = 0; c < KP_NCOLS; c++) {
            if (c) printf("  ");
            kp_history_print_cell(t->rows[i].cell[c], t->width[c], kp_history_right[c],
                                  c == KP_NCOLS - 1);
        }
        printf("\n");
    }
    printf("%snewest first; commit: * the work tree had changes, - the source is in no git work "
           "tree%s\n",
           D, R);
}

int kp_cmd_history(int argc, char **argv)
{
    kp_history_args a;
    int rc = kp_history_parse(argc, argv, &a);
    if (rc != 0) return rc;
    kp_error err = {0};
    kprof_status st;
    if (a.json) {
        kp_str out = {0};
        st = kp_history_json(a.kernel, a.limit, &out, &err);
        if (st == KPROF_OK) fputs(out.data, stdout);
        kp_str_free(&out);
    } else {
        kp_history_table t = {0};
        st = kp_history_each(a.kernel, a.limit, 0, kp_history_table_add, &t, &err);
        if (st == KPROF_OK && t.failed) st = kp_error_nomem(&err);
        if (st == KPROF_OK && t.n == 0) {
            char path[4096];
            kp_store_path(path, sizeof path);
            if (a.kernel) {
                char name[4 * KP_HISTORY_CELL_MAX + 8];
                kp_history_cell(name, sizeof name, a.kernel);
                printf("no run of %s in the history (%s)\n", name, path);
            } else
                printf("no run in the history yet (%s): kprof run, sweep and bench record "
                       "theirs\n",
                       path);
        } else if (st == KPROF_OK) {
            kp_history_print(&t);
        }
        free(t.rows);
    }
    if (st != KPROF_OK) {
        rc = kp_cli_fail(&err);
        kp_error_clear(&err);
        return rc;
    }
    return 0;
}
