/*
 * compile.c — the lab's compiles through the compile cache (lab/kernel_cache.h): a source,
 * its options, the files it includes and the device make the key; a hit loads the cached binary
 * and its metadata, a miss (or a stale entry) builds with the backend and stores the result.
 * KPROF_DUMP_DIR dumps every compile (source, options, log, binary, PTX) instead of caching it,
 * and a failed compile keeps its source, options and log in a folder the error names. On a CI
 * runner those folders would die with the runner: under GitHub Actions a failure is kept under
 * $RUNNER_TEMP/kprof-compilation-dumps (where KPROF_DUMP_DIR does not say otherwise) and a
 * workflow notice names the folder, for an upload step; under Buildkite the artifact upload
 * command is said.
 */
#define _GNU_SOURCE
#include "lab/lab_internal.h"
#include "base/env.h"
#include "base/util.h"
#include "lab/kernel_cache.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The next word of an option string (words are split at white space), or NULL at its end. */
static const char *kp_lab_option_word(const char **at, size_t *len)
{
    const char *p = *at;
    while (*p && isspace((unsigned char)*p))
        p++;
    if (!*p) return NULL;
    size_t n = 0;
    while (p[n] && !isspace((unsigned char)p[n]))
        n++;
    *at = p + n;
    *len = n;
    return p;
}

kprof_status kp_lab_check_options(const char *options, kp_error *err)
{
    const char *at = options ? options : "", *w;
    size_t n;
    while ((w = kp_lab_option_word(&at, &n)) != NULL) {
        int define = n >= 2 && strncmp(w, "-D", 2) == 0, include = n >= 2 && !strncmp(w, "-I", 2);
        if (!define && !include) continue;
        const char *value = w + 2;
        size_t vlen = n - 2;
        if (!vlen) value = kp_lab_option_word(&at, &vlen); /* "-D NAME", "-I DIR" */
        if (define && !value)
            return kp_error_set(err, KPROF_INVALID,
                                "compiler option -D has no macro name: write -D NAME or "
                                "-D NAME=VALUE (an empty or blank -D never reaches the compiler)");
        if (include && !value)
            return kp_error_set(err, KPROF_INVALID,
                                "compiler option -I has no folder: write -I DIR (an empty or "
                                "blank -I never reaches the compiler)");
        if (define && !(isalpha((unsigned char)value[0]) || value[0] == '_')) {
            char word[256];
            snprintf(word, sizeof word, "%.*s", (int)(vlen < 200 ? vlen : 200), value);
            return kp_error_set(err, KPROF_INVALID,
                                "compiler option -D '%s': a macro name starts with a letter or "
                                "'_' (write -D NAME or -D NAME=VALUE)",
                                word);
        }
    }
    return KPROF_OK;
}

/* dir/stem.ext holding data (nothing when data is NULL): KPROF_OK, or kp_file_write_atomic's
 * status (IO, NOMEM) with err filled. */
static kprof_status kp_lab_write_file(const char *dir, const char *stem, const char *ext,
                                      const void *data, size_t len, kp_error *err)
{
    if (!data) return KPROF_OK;
    char path[4600];
    snprintf(path, sizeof path, "%s/%s.%s", dir, stem, ext);
    return kp_file_write_atomic(path, data, len, err);
}

/* Source, options and log (and what the build produced) into dir/stem.*: KPROF_OK, or the first
 * failure's status (IO, NOMEM) with err filled; every file is tried either way. */
static kprof_status kp_lab_dump(const char *dir, const char *stem, const kp_source *src,
                                const kp_build_output *out, const char *log, kp_error *err)
{
    kprof_status st = kp_mkdir_p(dir, err);
    if (st != KPROF_OK) return st;
    const char *opts = out && out->options ? out->options : src->options;
    const char *bin_ext = out && out->binary_ext ? out->binary_ext : "bin";
    const char *ptx = out && src->lang != KP_LANG_PTX ? out->ptx : NULL;
    kprof_status each[] = {
        kp_lab_write_file(dir, stem, kp_lang_extension(src->lang), src->text, src->len, err),
        kp_lab_write_file(dir, stem, "options", opts, strlen(opts), err),
        kp_lab_write_file(dir, stem, "log", log, log ? strlen(log) : 0, err),
        kp_lab_write_file(dir, stem, bin_ext, out ? out->binary : NULL, out ? out->binary_len : 0,
                          err),
        kp_lab_write_file(dir, stem, "ptx", ptx, ptx ? strlen(ptx) : 0, err),
    };
    for (size_t i = 0; i < sizeof each / sizeof each[0]; i++)
        if (each[i] != KPROF_OK) return each[i];
    return KPROF_OK;
}

#define KP_CI_DUMPS "kprof-compilation-dumps"

static int kp_env_true(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "true") == 0;
}

/* Under GitHub Actions with RUNNER_TEMP: $RUNNER_TEMP/kprof-compilation-dumps in buf, 1; else 0. */
static int kp_ci_dump_base(char *buf, size_t n)
{
    const char *temp = getenv("RUNNER_TEMP");
    if (!kp_env_true("GITHUB_ACTIONS") || !temp || !*temp) return 0;
    int w = snprintf(buf, n, "%s/%s", temp, KP_CI_DUMPS);
    return w > 0 && (size_t)w < n;
}

/* Tell a CI runner where dumps were written, once per folder and process, on stderr (both
 * runners read their commands from either stream): GitHub Actions a workflow notice (its message
 * escaped as workflow commands need: %, CR, LF), Buildkite the upload command (the folder quoted
 * for the shell). */
static void kp_ci_announce(const char *what, const char *folder)
{
    static char said[4400];
    if (strcmp(said, folder) == 0) return;
    if (kp_env_true("GITHUB_ACTIONS")) {
        fprintf(stderr, "::notice title=kprof::%s kept in ", what);
        for (const char *c = folder; *c; c++) {
            if (*c == '%')
                fputs("%25", stderr);
            else if (*c == '\r')
                fputs("%0D", stderr);
            else if (*c == '\n')
                fputs("%0A", stderr);
            else
                fputc(*c, stderr);
        }
        fputs(" (upload it with actions/upload-artifact in a step with if: always())\n", stderr);
    } else if (kp_env_true("BUILDKITE")) {
        fputs("kprof: on Buildkite, keep them as artifacts: buildkite-agent artifact upload '",
              stderr);
        for (const char *c = folder; *c; c++) {
            if (*c == '\'')
                fputs("'\\''", stderr);
            else if (*c == '\n')
                fputs("'$'\\n''", stderr);
            else
                fputc(*c, stderr);
        }
        fputs("/**/*'\n", stderr);
    } else {
        return;
    }
    fflush(stderr);
    kp_strlcpy(said, folder, sizeof said);
}

static void kp_lab_stem(const kp_source *src, uint64_t key, char *buf, size_t n)
{
    const char *base = strrchr(src->path, '/');
    base = base ? base + 1 : src->path;
    char name[128];
    kp_strlcpy(name, base, sizeof name);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
    snprintf(buf, n, "%s-%016llx", name, (unsigned long long)key);
}

/* The folders an include is looked up in: the including file's own, then each -I. */
typedef struct kp_include_walk {
    char dirs[16][1024];
    int ndirs;
    char seen[64][1600];
    int nseen;
    uint64_t hash;
    kp_str *bodies; /* when not NULL, every file found is appended here too */
} kp_include_walk;

static void kp_lab_dirname(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

static void kp_lab_walk_includes(kp_include_walk *w, const char *own_dir, const char *text,
                                 int depth)
{
    if (depth > 8) return;
    for (const char *line = text; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != '#') continue;
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "include", 7) != 0) continue;
        p += 7;
        while (*p == ' ' || *p == '\t')
            p++;
        char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
        if (!close) continue;
        const char *name = p + 1, *end = strchr(name, close);
        const char *eol = strchr(name, '\n');
        if (!end || (eol && end > eol) || end == name || end - name >= 512) continue;
        for (int d = -1; d < w->ndirs; d++) {
            char path[1600];
            snprintf(path, sizeof path, "%s/%.*s", d < 0 ? own_dir : w->dirs[d], (int)(end - name),
                     name);
            struct stat st;
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
            int seen = 0;
            for (int i = 0; i < w->nseen; i++)
                seen |= strcmp(w->seen[i], path) == 0;
            if (seen || w->nseen >= 64) break;
            snprintf(w->seen[w->nseen++], sizeof w->seen[0], "%s", path);
            char *body = NULL;
            size_t len = 0;
            if (kp_file_read(path, &body, &len, NULL) != KPROF_OK) break;
            w->hash = kp_hash64_str(w->hash, path);
            w->hash = kp_hash64(w->hash, body, len);
            if (w->bodies) {
                kp_str_append_n(w->bodies, body, len);
                kp_str_append(w->bodies, "\n");
            }
            char dir[1600];
            kp_lab_dirname(path, dir, sizeof dir);
            kp_lab_walk_includes(w, dir, body, depth + 1);
            free(body);
            break;
        }
    }
}

/* Walk every file the source includes that kprof can find (beside the source, or in an -I
 * folder of the options); the bodies go to `bodies` when it is not NULL. 0 when none was found,
 * else their hash. */
uint64_t kp_lab_walk_source(const kp_source *src, kp_str *bodies)
{
    kp_include_walk *w = calloc(1, sizeof *w);
    if (!w) return 0;
    w->hash = KP_HASH_SEED;
    w->bodies = bodies;
    const char *o = src->options;
    while (o && (o = strstr(o, "-I")) != NULL && w->ndirs < 16) {
        o += 2;
        while (*o == ' ')
            o++;
        size_t n = strcspn(o, " ");
        if (n > 0 && n < sizeof w->dirs[0])
            snprintf(w->dirs[w->ndirs++], sizeof w->dirs[0], "%.*s", (int)n, o);
        o += n;
    }
    char own[1024];
    kp_lab_dirname(src->path, own, sizeof own);
    kp_lab_walk_includes(w, own, src->text, 0);
    uint64_t h = w->nseen ? w->hash : 0;
    free(w);
    return h;
}

/* A hash of the files the source includes, so an edited header misses the compile cache. */
uint64_t kp_lab_includes_hash(const kp_source *src)
{
    return kp_lab_walk_source(src, NULL);
}

/* Compile through the cache; dumps with KPROF_DUMP_DIR; keeps failures in a folder. */
kprof_status kp_lab_compile(kp_lab *lab, const kp_source *src, kp_error *err)
{
    uint64_t key = kp_cache_key(&lab->info.device, src);
    uint64_t t0 = kp_now_ns();
    unsigned char *bin = NULL;
    size_t len = 0;
    const char *dump = getenv(KP_ENV_DUMP_DIR);
    if (dump && !*dump) dump = NULL;
    char stem[256];
    kp_lab_stem(src, key, stem, sizeof stem);

    if (!dump && kp_cache_get(lab->ops->name, key, &bin, &len, &lab->meta) == 0) {
        kp_error scratch = {0};
        kprof_status st = lab->ops->load(lab->dev, bin, len, &lab->program, &scratch);
        free(bin);
        kp_error_clear(&scratch);
        if (st == KPROF_OK) {
            lab->info.cache_hit = 1;
            lab->info.compile_ms = (double)(kp_now_ns() - t0) / 1e6;
            return KPROF_OK;
        }
        /* A stale or foreign entry: rebuild from source. */
        kp_program_meta_free(&lab->meta);
    }

    kp_build_output out = {0};
    kprof_status st = lab->ops->build(lab->dev, src, &lab->program, &out, err);
    if (st != KPROF_OK) kp_build_output_free(&out);
    if (st == KPROF_COMPILE) {
        /* Keep what failed where a bug report can pick it up, and say where. */
        char dir[4400];
        char cache[4096];
        if (dump)
            snprintf(dir, sizeof dir, "%s", dump);
        else if (kp_ci_dump_base(cache, sizeof cache))
            snprintf(dir, sizeof dir, "%s/%s", cache, stem);
        else if (kp_cache_dir(cache, sizeof cache))
            snprintf(dir, sizeof dir, "%s/failed/%s", cache, stem);
        else
            dir[0] = '\0';
        /* err holds the compile failure: a dump that fails too is said by the line below. */
        if (dir[0] &&
            kp_lab_dump(dir, stem, src, NULL, err && err->log ? err->log : "", NULL) == KPROF_OK) {
            kp_error_append(err, "\nsource, options and log kept in %s/", dir);
            kp_ci_announce("a kernel compile failed: its source, options and log are", dir);
        } else
            kp_error_append(err, "\n(could not keep source, options and log in %s)",
                            dir[0] ? dir : "a folder: no cache folder can be named");
        return st;
    }
    if (st != KPROF_OK) return st;
    lab->meta = out.meta;
    memset(&out.meta, 0, sizeof out.meta);
    if (dump && kp_lab_dump(dump, stem, src, &out, out.log ? out.log : "", NULL) != KPROF_OK)
        snprintf(lab->info.warning, sizeof lab->info.warning,
                 "KPROF_DUMP_DIR=%s: could not write every dump file", dump);
    else
        kp_cache_put(lab->ops->name, key, out.binary, out.binary_len, &lab->meta,
                     NULL); /* a cache that cannot be written costs a rebuild, nothing else */
    if (dump)
        kp_ci_announce(
            "KPROF_DUMP_DIR: every compiled kernel's source, options, log and binary are", dump);
    kp_build_output_free(&out);
    lab->info.compile_ms = (double)(kp_now_ns() - t0) / 1e6;
    return KPROF_OK;
}
