/*
 * cmd_notes.c — `kprof notes add|list|search|show|export|import`: the findings log. Parses the
 * subcommand and its options, calls the library and prints. A note is a short text kept in
 * kprof's store (store/notes.h) with the evidence it was made from: `--from` a run.json,
 * sweep.json or bench.json or a run of the history gives it the kernel, device, grid,
 * threadgroup, median and commit, and keeps what else the source said in the note's `data`
 * (analysis/notes.h makes it). Notes travel between stores as one JSON file (`export`,
 * `import`), written through base/outfile; an import checks every note before it adds any.
 */
#include "analysis/notes.h"
#include "base/outfile.h"
#include "base/util.h"
#include "core/format.h"
#include "store/notes.h"
#include "store/store.h"
#include "tools/kprof/cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The options each subcommand takes. */
enum {
    KP_NOTES_OPT_FROM = 1u,
    KP_NOTES_OPT_KERNEL = 2u,
    KP_NOTES_OPT_JSON = 4u,
    KP_NOTES_OPT_FORCE = 8u,
};

typedef struct kp_notes_args {
    const char *sub;    /* "add", "list", ... */
    const char *from;   /* --from */
    const char *kernel; /* --kernel */
    int json, force;
    int npos; /* positional arguments after the subcommand */
    char **pos;
} kp_notes_args;

/* Print text on one line, control characters and stray bytes escaped (a note's text, a device
 * name: whatever a file held cannot move the terminal's cursor). */
static void kp_notes_put(FILE *f, const char *text)
{
    kp_str s = {0};
    kp_str_append_escaped(&s, text ? text : "", text ? strlen(text) : 0);
    fputs(s.data ? s.data : "", f);
    kp_str_free(&s);
}

/* Print a multi-line text, each line indented and escaped as kp_notes_put. */
static void kp_notes_put_lines(FILE *f, const char *indent, const char *text)
{
    const char *p = text;
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        kp_str s = {0};
        kp_str_append_escaped(&s, p, n);
        fprintf(f, "%s%s\n", indent, s.data ? s.data : "");
        kp_str_free(&s);
        if (!nl) break;
        p = nl + 1;
    }
}

/* ---- JSON ------------------------------------------------------------------------------------ */

/* Print a JSON document (analysis/notes.h wrote it, st its outcome) to stdout; free it. */
static int kp_notes_print_json(kp_str *s, kprof_status st, kp_error *err)
{
    int rc = st == KPROF_OK ? 0 : kp_cli_fail(err);
    if (st == KPROF_OK) fputs(s->data ? s->data : "", stdout);
    kp_str_free(s);
    return rc;
}

static int kp_notes_json_list(const kp_note_list *list, const char *query)
{
    kp_str s = {0};
    kp_error err = {0};
    int rc = kp_notes_print_json(&s, kp_notes_list_json(&s, list, query, &err), &err);
    kp_error_clear(&err);
    return rc;
}

static int kp_notes_json_one(const kp_note *n)
{
    kp_str s = {0};
    kp_error err = {0};
    int rc = kp_notes_print_json(&s, kp_note_doc_json(&s, n, &err), &err);
    kp_error_clear(&err);
    return rc;
}

/* ---- for people ---------------------------------------------------------------------------- */

/* "demo_add · grid 4096 · tg 64 · 851 ns · DEVICE": what a note carries, on one line. */
static void kp_notes_put_evidence(FILE *f, const kp_note *n)
{
    const char *sep = "";
    if (n->kernel) {
        kp_notes_put(f, n->kernel);
        sep = " · ";
    }
    if (n->grid) {
        fprintf(f, "%sgrid ", sep);
        kp_notes_put(f, n->grid);
        sep = " · ";
    }
    if (n->tg) {
        fprintf(f, "%stg ", sep);
        kp_notes_put(f, n->tg);
        sep = " · ";
    }
    if (n->has_median) {
        char d[32];
        fprintf(f, "%s%s", sep, kp_format_duration(n->median_ms / 1e3, d, sizeof d));
        sep = " · ";
    }
    if (n->device) {
        fputs(sep, f);
        kp_notes_put(f, n->device);
    }
}

static void kp_notes_print_row(const kp_note *n)
{
    char when[64];
    kp_note_time(n->at, 0, when, sizeof when);
    printf("#%lld  %s", (long long)n->id, when);
    if (n->kernel || n->grid || n->tg || n->has_median || n->device) {
        fputs("  ", stdout);
        kp_notes_put_evidence(stdout, n);
    }
    fputc('\n', stdout);
    kp_notes_put_lines(stdout, "    ", n->text);
}

static void kp_notes_print_field(const char *name, const char *value)
{
    if (!value) return;
    printf("%-10s ", name);
    kp_notes_put(stdout, value);
    fputc('\n', stdout);
}

static void kp_notes_print_note(const kp_note *n)
{
    char when[64], iso[64];
    kp_note_time(n->at, 0, when, sizeof when);
    kp_note_time(n->at, 1, iso, sizeof iso);
    printf("note %lld  %s (%s)\n", (long long)n->id, when, iso);
    kp_notes_print_field("kernel", n->kernel);
    kp_notes_print_field("device", n->device);
    kp_notes_print_field("grid", n->grid);
    kp_notes_print_field("tg", n->tg);
    if (n->has_median) {
        char d[32];
        printf("%-10s %s\n", "median", kp_format_duration(n->median_ms / 1e3, d, sizeof d));
    }
    kp_notes_print_field("commit", n->git_commit);
    kp_notes_print_field("made from", n->made_from);
    fputc('\n', stdout);
    kp_notes_put_lines(stdout, "    ", n->text);
    kp_str s = {0};
    if (kp_note_data_json(n, &s)) {
        printf("\ndata:\n");
        if (s.data) {
            kp_rstrip(s.data); /* the writer's closing newline */
            kp_notes_put_lines(stdout, "  ", s.data);
        }
    }
    kp_str_free(&s);
}

/* ---- the store ------------------------------------------------------------------------------ */

/* Open the store to read: *s stays NULL (and OK) when there is none yet, or when it is of a
 * schema before notes (1; an empty file is 0) — no notes. */
static kprof_status kp_notes_open_read(kp_store **s, kp_error *err)
{
    kprof_status st = kp_store_open(1, s, err);
    if (st == KPROF_OK && kp_store_version(*s) < 2) {
        kp_store_close(*s);
        *s = NULL;
        return KPROF_OK;
    }
    if (st != KPROF_NOT_FOUND) return st;
    kp_error_clear(err); /* a fresh error, set just now: no store is no notes */
    return KPROF_OK;
}

/* ---- the subcommands ------------------------------------------------------------------------ */

/* TEXT '-': standard input, trailing newlines and spaces dropped. */
static char *kp_notes_read_stdin(void)
{
    kp_str s = {0};
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, stdin)) > 0)
        kp_str_append_n(&s, buf, got);
    if (ferror(stdin) || s.failed) {
        kp_str_free(&s);
        return NULL;
    }
    char *text = kp_str_take(&s);
    if (text) kp_rstrip(text);
    return text;
}

static int kp_notes_cmd_add(const kp_notes_args *a)
{
    if (a->npos < 1) return kp_cli_usage_error("notes", "notes add: give the note's TEXT");
    if (a->npos > 1)
        return kp_cli_usage_error("notes", "notes add: one TEXT (quote it): unexpected '%s'",
                                  a->pos[1]);
    kp_note note = {0}, stored = {0};
    kp_error err = {0};
    kp_store *s = NULL;
    int64_t id = 0;
    int rc = 0;
    kprof_status st = KPROF_OK;
    int from_stdin = strcmp(a->pos[0], "-") == 0;
    note.text = from_stdin ? kp_notes_read_stdin() : strdup(a->pos[0]);
    if (!note.text) {
        if (from_stdin)
            kp_error_set(&err, KPROF_IO, "cannot read the note from standard input");
        else
            kp_error_nomem(&err);
        goto fail;
    }
    if (!*note.text) {
        rc = kp_cli_usage_error("notes", "notes add: the note's text is empty");
        goto done;
    }
    if (a->from)
        st = kp_note_make(a->from, a->kernel, &note, &err);
    else if (a->kernel && !(note.kernel = strdup(a->kernel)))
        st = kp_error_nomem(&err);
    if (st != KPROF_OK) goto fail;
    note.at = kp_unix_now();
    if (kp_store_open(0, &s, &err) != KPROF_OK || kp_notes_add(s, &note, &id, &err) != KPROF_OK)
        goto fail;
    if (kp_notes_get(s, id, &stored, &err) != KPROF_OK) goto fail;
    if (a->json) {
        rc = kp_notes_json_one(&stored);
    } else {
        printf("note %lld added", (long long)stored.id);
        if (stored.kernel || stored.grid || stored.tg || stored.has_median || stored.device) {
            fputs(": ", stdout);
            kp_notes_put_evidence(stdout, &stored);
        }
        if (stored.git_commit) printf(" · commit %.12s", stored.git_commit);
        fputc('\n', stdout);
    }
    goto done;
fail:
    rc = kp_cli_fail(&err);
done:
    kp_error_clear(&err);
    kp_note_clear(&stored);
    kp_note_clear(&note);
    kp_store_close(s);
    return rc;
}

static int kp_notes_cmd_list(const kp_notes_args *a)
{
    if (a->npos > 0)
        return kp_cli_usage_error("notes", "notes list: unexpected '%s' (--kernel NAME filters)",
                                  a->pos[0]);
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note_list list = {0};
    int rc = 0;
    if (kp_notes_open_read(&s, &err) != KPROF_OK ||
        (s && kp_notes_list(s, a->kernel, &list, &err) != KPROF_OK)) {
        rc = kp_cli_fail(&err);
        goto done;
    }
    if (a->json) {
        rc = kp_notes_json_list(&list, NULL);
    } else if (list.n == 0) {
        printf("no notes");
        if (a->kernel) {
            fputs(" of kernel ", stdout);
            kp_notes_put(stdout, a->kernel);
        }
        printf(" (kprof notes add TEXT writes one)\n");
    } else {
        for (size_t i = 0; i < list.n; i++)
            kp_notes_print_row(&list.notes[i]);
    }
done:
    kp_note_list_free(&list);
    kp_store_close(s);
    kp_error_clear(&err);
    return rc;
}

static int kp_notes_cmd_search(const kp_notes_args *a)
{
    if (a->npos < 1) return kp_cli_usage_error("notes", "notes search: give WORDS to look for");
    kp_str query = {0};
    for (int i = 0; i < a->npos; i++)
        kp_str_printf(&query, "%s%s", i ? " " : "", a->pos[i]);
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note_list list = {0};
    int rc = 0;
    if (query.failed) {
        kp_error_nomem(&err);
        goto fail;
    }
    if (!query.data || !*query.data) {
        rc = kp_cli_usage_error("notes", "notes search: give WORDS to look for");
        goto done;
    }
    if (kp_notes_open_read(&s, &err) != KPROF_OK ||
        (s && kp_notes_search(s, query.data, &list, &err) != KPROF_OK))
        goto fail;
    if (a->json) {
        rc = kp_notes_json_list(&list, query.data);
    } else if (list.n == 0) {
        fputs("no note matches: ", stdout);
        kp_notes_put(stdout, query.data);
        fputc('\n', stdout);
    } else {
        for (size_t i = 0; i < list.n; i++)
            kp_notes_print_row(&list.notes[i]);
    }
    goto done;
fail:
    rc = kp_cli_fail(&err);
done:
    kp_note_list_free(&list);
    kp_store_close(s);
    kp_error_clear(&err);
    kp_str_free(&query);
    return rc;
}

static int kp_notes_cmd_show(const kp_notes_args *a)
{
    if (a->npos != 1)
        return kp_cli_usage_error("notes", "notes show: give one note ID (kprof notes list "
                                           "shows them)");
    const char *text = a->pos[0];
    char *end = NULL;
    errno = 0;
    long long id = strtoll(text, &end, 10);
    if (errno || end == text || *end || id < 1 || text[0] < '0' || text[0] > '9')
        return kp_cli_usage_error("notes",
                                  "notes show: '%s' is not a note ID (a number from "
                                  "kprof notes list)",
                                  text);
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note note = {0};
    int rc = 0;
    if (kp_notes_open_read(&s, &err) != KPROF_OK) goto fail;
    if (!s) {
        kp_error_set(&err, KPROF_NOT_FOUND, "no note %lld (there are no notes yet)", id);
        goto fail;
    }
    if (kp_notes_get(s, id, &note, &err) != KPROF_OK) goto fail;
    if (a->json)
        rc = kp_notes_json_one(&note);
    else
        kp_notes_print_note(&note);
    goto done;
fail:
    rc = kp_cli_fail(&err);
done:
    kp_note_clear(&note);
    kp_store_close(s);
    kp_error_clear(&err);
    return rc;
}

static int kp_notes_cmd_export(const kp_notes_args *a)
{
    if (a->npos != 1)
        return kp_cli_usage_error("notes", "notes export: give one FILE ('-': standard output)");
    const char *path = a->pos[0];
    if (a->json && strcmp(path, "-") == 0)
        return kp_cli_usage_error("notes", "notes export - writes the notes' JSON to standard "
                                           "output: leave --json out");
    char store_path[4096];
    kp_store_path(store_path, sizeof store_path);
    const char *inputs[] = {store_path, NULL};
    kp_output out = {0};
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note_list list = {0};
    kp_str doc = {0};
    int rc = 0;
    if (kp_output_open(&out, path, a->force ? KP_OUTPUT_FORCE : 0, inputs, &err) != KPROF_OK)
        goto fail;
    if (kp_notes_open_read(&s, &err) != KPROF_OK ||
        (s && kp_notes_list(s, NULL, &list, &err) != KPROF_OK))
        goto fail;
    kp_notes_export_json(&doc, &list);
    if (doc.failed) {
        kp_error_nomem(&err);
        goto fail;
    }
    if (kp_output_write(&out, doc.data, doc.len, &err) != KPROF_OK ||
        kp_output_commit(&out, &err) != KPROF_OK)
        goto fail;
    if (a->json) {
        kp_str s2 = {0};
        rc = kp_notes_print_json(&s2, kp_notes_exported_json(&s2, out.path, list.n, &err), &err);
    } else if (strcmp(path, "-") != 0) {
        printf("exported %zu note%s to ", list.n, list.n == 1 ? "" : "s");
        kp_notes_put(stdout, out.path);
        fputc('\n', stdout);
    }
    goto done;
fail:
    kp_output_abort(&out);
    rc = kp_cli_fail(&err);
done:
    kp_str_free(&doc);
    kp_note_list_free(&list);
    kp_store_close(s);
    kp_error_clear(&err);
    return rc;
}

/* notes import FILE: the notes of a `notes export` file added to the store, those it holds
 * already skipped (its optional members are read by kp_notes_import_read). */
static int kp_notes_cmd_import(const kp_notes_args *a)
{
    if (a->npos != 1) return kp_cli_usage_error("notes", "notes import: give one FILE");
    const char *path = a->pos[0];
    kp_error err = {0};
    kp_store *s = NULL;
    kp_note *notes = NULL;
    size_t n = 0, added = 0;
    int rc = 0;
    if (kp_notes_import_read(path, &notes, &n, &err) != KPROF_OK) goto fail;
    if (kp_store_open(0, &s, &err) != KPROF_OK ||
        kp_notes_import(s, notes, n, &added, &err) != KPROF_OK)
        goto fail;
    if (a->json) {
        kp_str out = {0};
        rc = kp_notes_print_json(&out, kp_notes_imported_json(&out, path, n, added, &err), &err);
    } else {
        printf("added %zu note%s from ", added, added == 1 ? "" : "s");
        kp_notes_put(stdout, path);
        if (n > added) printf(" (%zu already present)", n - added);
        fputc('\n', stdout);
    }
    goto done;
fail:
    rc = kp_cli_fail(&err);
done:
    for (size_t i = 0; i < n; i++)
        kp_note_clear(&notes[i]);
    free(notes);
    kp_store_close(s);
    kp_error_clear(&err);
    return rc;
}

/* ---- the command ---------------------------------------------------------------------------- */

typedef struct kp_notes_sub {
    const char *name;
    int (*run)(const kp_notes_args *a);
    unsigned options; /* KP_NOTES_OPT_* it takes */
} kp_notes_sub;

static const kp_notes_sub kp_notes_subs[] = {
    {"add", kp_notes_cmd_add, KP_NOTES_OPT_FROM | KP_NOTES_OPT_KERNEL | KP_NOTES_OPT_JSON},
    {"list", kp_notes_cmd_list, KP_NOTES_OPT_KERNEL | KP_NOTES_OPT_JSON},
    {"search", kp_notes_cmd_search, KP_NOTES_OPT_JSON},
    {"show", kp_notes_cmd_show, KP_NOTES_OPT_JSON},
    {"export", kp_notes_cmd_export, KP_NOTES_OPT_FORCE | KP_NOTES_OPT_JSON},
    {"import", kp_notes_cmd_import, KP_NOTES_OPT_JSON},
    {NULL, NULL, 0},
};

int kp_cmd_notes(int argc, char **argv)
{
    if (argc < 2)
        return kp_cli_usage_error("notes",
                                  "give what to do: add, list, search, show, export or import");
    const kp_notes_sub *sub = NULL;
    for (const kp_notes_sub *s = kp_notes_subs; s->name && !sub; s++)
        if (strcmp(s->name, argv[1]) == 0) sub = s;
    if (!sub)
        return kp_cli_usage_error("notes",
                                  "no notes command '%s' (add, list, search, show, export, "
                                  "import)",
                                  argv[1]);
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"kernel", required_argument, NULL, 'k'},
        {"json", no_argument, NULL, 'j'},
        {"force", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    kp_notes_args a = {.sub = sub->name};
    int sub_argc = argc - 1;
    char **sub_argv = argv + 1;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(sub_argc, sub_argv, ":", longopts, NULL)) != -1) {
        unsigned opt = 0;
        const char *name = "";
        switch (c) {
        case 'f':
            a.from = optarg;
            opt = KP_NOTES_OPT_FROM;
            name = "--from";
            break;
        case 'k':
            a.kernel = optarg;
            opt = KP_NOTES_OPT_KERNEL;
            name = "--kernel";
            break;
        case 'j':
            a.json = 1;
            opt = KP_NOTES_OPT_JSON;
            name = "--json";
            break;
        case 'F':
            a.force = 1;
            opt = KP_NOTES_OPT_FORCE;
            name = "--force";
            break;
        case ':':
            return kp_cli_usage_error("notes", "%s needs a value", sub_argv[optind - 1]);
        default:
            /* A long one is the argument getopt just passed; a short one ("-5%" meant as a
             * TEXT) the character it stopped at. */
            if (strncmp(sub_argv[optind - 1], "--", 2) != 0 && optopt > 0 && optopt < 128)
                return kp_cli_usage_error("notes",
                                          "unknown option '-%c' (a TEXT starting with '-' goes "
                                          "after --)",
                                          optopt);
            return kp_cli_usage_error("notes",
                                      "unknown option '%s' (a TEXT starting with '-' "
                                      "goes after --)",
                                      sub_argv[optind - 1]);
        }
        if (!(sub->options & opt))
            return kp_cli_usage_error("notes", "notes %s takes no %s", sub->name, name);
    }
    if (a.kernel && !*a.kernel) return kp_cli_usage_error("notes", "--kernel needs a name");
    if (a.from && !*a.from) return kp_cli_usage_error("notes", "--from needs a file or run");
    a.npos = sub_argc - optind;
    a.pos = sub_argv + optind;
    return sub->run(&a);
}
