/*
 * lab.c — the kernel-lab session (see lab.h): from a NAME or FILE to timed dispatches of one
 * kernel with deterministic, checked arguments. A session that must run in a child process
 * (lab.h) is forwarded to isolate.c; this file is what runs there.
 */
#define _GNU_SOURCE
#include "lab/lab.h"
#include "core/env.h"
#include "lab/aggregate.h"
#include "lab/isolate.h"
#include "core/util.h"
#include "store/kernel_cache.h"
#include "store/kernel_dir.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct kp_lab {
    kp_lab_info info;
    const kp_backend_ops *ops;
    kp_device *dev;
    kp_program *program;
    kp_program_meta meta;
    kp_kernel *kernel;
    kp_spec spec;
    kp_buffer *buffers[KP_SPEC_MAX_ARGS];
    int bound;           /* buffers exist and are bound to the kernel */
    kp_lab_child *child; /* the session runs in a child process: every call goes there */
};

const kp_lab_info *kp_lab_get_info(const kp_lab *lab)
{
    return &lab->info;
}

static const char *kp_param_kind_word(kp_param_kind k)
{
    switch (k) {
    case KP_PARAM_GLOBAL:
        return "global buffer";
    case KP_PARAM_CONSTANT:
        return "constant buffer";
    case KP_PARAM_LOCAL:
        return "local memory";
    case KP_PARAM_VALUE:
        return "value";
    case KP_PARAM_STRUCT:
        return "struct";
    case KP_PARAM_UNION:
        return "union";
    default:
        return "argument";
    }
}

void kp_lab_signature(const kp_kernel_meta *k, char *buf, size_t n)
{
    kp_str s = {0};
    kp_str_printf(&s, "%s(", k->name);
    if (k->nparams < 0) kp_str_append(&s, "...");
    for (int i = 0; i < k->nparams; i++) {
        const kp_param *p = &k->params[i];
        if (i) kp_str_append(&s, ", ");
        if (p->type_name[0] && p->name[0])
            kp_str_printf(&s, "%s%s %s", p->kind == KP_PARAM_LOCAL ? "local " : "", p->type_name,
                          p->name);
        else if (p->type_name[0])
            kp_str_append(&s, p->type_name);
        else if (p->size)
            kp_str_printf(&s, "%u-byte %s", p->size, kp_param_kind_word(p->kind));
        else
            kp_str_append(&s, "?");
    }
    kp_str_append(&s, ")");
    snprintf(buf, n, "%s", s.data ? s.data : k->name);
    kp_str_free(&s);
}

/* Normalise a C/OpenCL C/CUDA type spelling to the OpenCL C scalar name ("unsigned int" ->
 * "uint"); returns "" for non-scalar or unknown names. Vector suffixes are dropped ("float4"
 * -> "float"), so a float4* buffer accepts f32 elements. */
static void kp_scalar_base(const char *type, char *out, size_t n)
{
    char t[64];
    kp_strlcpy(t, type, sizeof t);
    /* Drop qualifiers and the pointer star. */
    static const char *const quals[] = {"const ",    "volatile ", "restrict ",   "__restrict__ ",
                                        "__global ", "global ",   "__constant ", "constant ",
                                        "__local ",  "local "};
    int changed = 1;
    while (changed) {
        changed = 0;
        for (size_t i = 0; i < sizeof quals / sizeof quals[0]; i++) {
            size_t ql = strlen(quals[i]);
            if (strncmp(t, quals[i], ql) == 0) {
                memmove(t, t + ql, strlen(t + ql) + 1);
                changed = 1;
            }
        }
    }
    char *star = strchr(t, '*');
    if (star) *star = '\0';
    kp_rstrip(t);
    static const struct {
        const char *from, *to;
    } alias[] = {{"unsigned char", "uchar"},
                 {"unsigned short", "ushort"},
                 {"unsigned int", "uint"},
                 {"unsigned", "uint"},
                 {"unsigned long long", "ulong"},
                 {"unsigned long", "ulong"},
                 {"long long", "long"},
                 {"signed char", "char"},
                 {"int8_t", "char"},
                 {"uint8_t", "uchar"},
                 {"int16_t", "short"},
                 {"uint16_t", "ushort"},
                 {"int32_t", "int"},
                 {"uint32_t", "uint"},
                 {"int64_t", "long"},
                 {"uint64_t", "ulong"},
                 {"size_t", "ulong"}};
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++) {
        if (strcmp(t, alias[i].from) == 0) {
            snprintf(out, n, "%s", alias[i].to);
            return;
        }
    }
    static const char *const scalars[] = {"char", "uchar", "short", "ushort", "int", "uint",
                                          "long", "ulong", "float", "double", "half"};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        size_t l = strlen(scalars[i]);
        if (strncmp(t, scalars[i], l) != 0) continue;
        const char *rest = t + l;
        /* "float" or a vector "float4"; but not "uint" matched by "u"-less prefix games. */
        int ok = !*rest;
        if (!ok && isdigit((unsigned char)*rest)) {
            int w = atoi(rest);
            ok = w == 2 || w == 3 || w == 4 || w == 8 || w == 16;
            while (isdigit((unsigned char)*rest))
                rest++;
            ok = ok && !*rest;
        }
        if (ok) {
            snprintf(out, n, "%s", scalars[i]);
            return;
        }
    }
    out[0] = '\0';
}

kprof_status kp_lab_check_spec(const kp_spec *spec, const kp_kernel_meta *k, kp_error *err)
{
    char sig[1024];
    kp_lab_signature(k, sig, sizeof sig);
    if (k->nparams >= 0 && spec->count != k->nparams)
        return kp_error_set(err, KPROF_INVALID,
                            "--buffers has %d item%s but %s takes %d argument%s:\n  %s",
                            spec->count, spec->count == 1 ? "" : "s", k->name, k->nparams,
                            k->nparams == 1 ? "" : "s", sig);
    for (int i = 0; i < spec->count && i < k->nparams; i++) {
        const kp_arg_spec *a = &spec->args[i];
        const kp_param *p = &k->params[i];
        char pname[160];
        if (p->name[0] && p->type_name[0])
            snprintf(pname, sizeof pname, "argument %d '%s' is %s%s", i + 1, p->name,
                     p->kind == KP_PARAM_LOCAL ? "local " : "", p->type_name);
        else if (p->type_name[0])
            snprintf(pname, sizeof pname, "argument %d is %s", i + 1, p->type_name);
        else
            snprintf(pname, sizeof pname, "argument %d is a %s", i + 1,
                     kp_param_kind_word(p->kind));
        if (p->kind == KP_PARAM_STRUCT || p->kind == KP_PARAM_UNION) {
            const char *word = kp_param_kind_word(p->kind);
            return kp_error_set(err, KPROF_INVALID,
                                "argument %d%s%s%s is a %s (%s) passed by value: kprof cannot "
                                "fill %ss yet\n  %s",
                                i + 1, p->name[0] ? " '" : "", p->name, p->name[0] ? "'" : "", word,
                                p->type_name, word, sig);
        }
        if (a->kind == KP_ARG_LOCAL && p->kind != KP_PARAM_LOCAL && p->kind != KP_PARAM_UNKNOWN &&
            p->kind != KP_PARAM_OPAQUE)
            return kp_error_set(err, KPROF_INVALID,
                                "%s but --buffers item %d '%s' is local memory, which this kernel "
                                "does not take as an argument (CUDA kernels get dynamic shared "
                                "memory from --smem BYTES)\n  %s",
                                pname, i + 1, a->text, sig);
        switch (p->kind) {
        case KP_PARAM_UNKNOWN:
            break;
        case KP_PARAM_STRUCT:
        case KP_PARAM_UNION: /* refused above */
            break;
        case KP_PARAM_OPAQUE:
            return kp_error_set(err, KPROF_INVALID,
                                "%s, which kprof cannot bind: it passes buffers, scalars and local "
                                "memory only\n  %s",
                                pname, sig);
        case KP_PARAM_GLOBAL:
        case KP_PARAM_CONSTANT: {
            if (a->kind != KP_ARG_BUFFER)
                return kp_error_set(err, KPROF_INVALID,
                                    "%s (a buffer) but --buffers item %d '%s' is %s; write "
                                    "TYPE:COUNT for it\n  %s",
                                    pname, i + 1, a->text,
                                    a->kind == KP_ARG_SCALAR ? "a scalar" : "local memory", sig);
            char base[32];
            kp_scalar_base(p->type_name, base, sizeof base);
            if (base[0] && strcmp(base, kp_type_c_name(a->type)) != 0 && strcmp(base, "half") != 0)
                return kp_error_set(
                    err, KPROF_INVALID, "%s but --buffers item %d '%s' is a %s (%s) buffer\n  %s",
                    pname, i + 1, a->text, kp_type_name(a->type), kp_type_c_name(a->type), sig);
            break;
        }
        case KP_PARAM_LOCAL:
            if (a->kind != KP_ARG_LOCAL)
                return kp_error_set(err, KPROF_INVALID,
                                    "%s but --buffers item %d '%s' is not local memory; write "
                                    "local:BYTES for it\n  %s",
                                    pname, i + 1, a->text, sig);
            break;
        case KP_PARAM_VALUE: {
            if (a->kind != KP_ARG_SCALAR)
                return kp_error_set(err, KPROF_INVALID,
                                    "%s (passed by value) but --buffers item %d '%s' is %s; write "
                                    "TYPE=VALUE for it\n  %s",
                                    pname, i + 1, a->text,
                                    a->kind == KP_ARG_BUFFER ? "a buffer" : "local memory", sig);
            char base[32];
            kp_scalar_base(p->type_name, base, sizeof base);
            int vector =
                base[0] && strcmp(base, p->type_name) != 0 && p->size > kp_type_size(a->type);
            if ((base[0] && !vector && strcmp(base, kp_type_c_name(a->type)) != 0) ||
                (p->size && p->size != kp_type_size(a->type)))
                return kp_error_set(err, KPROF_INVALID,
                                    "%s (%u bytes) but --buffers item %d '%s' is a %s (%zu "
                                    "bytes)\n  %s",
                                    pname, p->size, i + 1, a->text, kp_type_name(a->type),
                                    kp_type_size(a->type), sig);
            break;
        }
        }
    }
    return KPROF_OK;
}

/* NAME|FILE -> source path (+ kernel folder). */
static kprof_status kp_lab_resolve(const kp_lab_options *opts, kp_lab_info *info, kp_error *err)
{
    const char *t = opts->target;
    if (!t || !*t) return kp_error_set(err, KPROF_INVALID, "no kernel given (NAME or FILE)");
    struct stat st;
    int looks_like_file = strchr(t, '/') != NULL || kp_lang_from_path(t) >= 0;
    if (stat(t, &st) == 0 && S_ISREG(st.st_mode)) {
        if (strlen(t) >= sizeof info->source_path)
            return kp_error_set(err, KPROF_INVALID, "path too long");
        snprintf(info->source_path, sizeof info->source_path, "%s", t);
        return KPROF_OK;
    }
    if (stat(t, &st) == 0 && !S_ISDIR(st.st_mode))
        return kp_error_set(err, KPROF_INVALID, "%s: not a regular file (a FIFO or device?)", t);
    if (looks_like_file) return kp_error_set(err, KPROF_NOT_FOUND, "%s: no such file", t);
    kprof_status s = kp_kernel_dir(t, info->kernel_dir, sizeof info->kernel_dir, err);
    if (s != KPROF_OK) return s;
    if (!kp_path_is_dir(info->kernel_dir))
        return kp_error_set(err, KPROF_NOT_FOUND,
                            "no kernel folder %s and no file '%s' (create the folder with `kprof "
                            "isolate %s`)",
                            info->kernel_dir, t, t);
    const char *prefer = opts->backend ? opts->backend : kp_backend_env();
    return kp_kernel_dir_source(info->kernel_dir, prefer, info->source_path,
                                sizeof info->source_path, err);
}

static int kp_lab_write_file(const char *dir, const char *stem, const char *ext, const void *data,
                             size_t len)
{
    if (!data) return 0;
    char path[4600];
    snprintf(path, sizeof path, "%s/%s.%s", dir, stem, ext);
    return kp_file_write_atomic(path, data, len, NULL) == KPROF_OK ? 0 : -1;
}

/* Source, options and log (and what the build produced) into dir/stem.*; -1 when any of it
 * could not be written. */
static int kp_lab_dump(const char *dir, const char *stem, const kp_source *src,
                       const kp_build_output *out, const char *log)
{
    if (kp_mkdir_p(dir, NULL) != KPROF_OK) return -1;
    const char *opts = out && out->options ? out->options : src->options;
    int rc = kp_lab_write_file(dir, stem, kp_lang_extension(src->lang), src->text, src->len);
    rc |= kp_lab_write_file(dir, stem, "options", opts, strlen(opts));
    if (log) rc |= kp_lab_write_file(dir, stem, "log", log, strlen(log));
    if (out && out->binary)
        rc |= kp_lab_write_file(dir, stem, out->binary_ext ? out->binary_ext : "bin", out->binary,
                                out->binary_len);
    if (out && out->ptx && src->lang != KP_LANG_PTX)
        rc |= kp_lab_write_file(dir, stem, "ptx", out->ptx, strlen(out->ptx));
    return rc;
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
static uint64_t kp_lab_walk_source(const kp_source *src, kp_str *bodies)
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
static uint64_t kp_lab_includes_hash(const kp_source *src)
{
    return kp_lab_walk_source(src, NULL);
}

/* Parameters passed by value whose type is a struct or union become KP_PARAM_STRUCT or
 * KP_PARAM_UNION: backends report only type names, so the name, the source and the headers it
 * includes say which ("struct params", a typedef of one, a C++ class). */
static void kp_lab_mark_aggregates(kp_program_meta *meta, const kp_source *src, int is_text)
{
    kp_str headers = {0};
    int walked = 0;
    for (int i = 0; i < meta->nkernels; i++) {
        kp_kernel_meta *k = &meta->kernels[i];
        for (int j = 0; j < k->nparams && k->params; j++) {
            kp_param *p = &k->params[j];
            char base[32];
            if (p->kind != KP_PARAM_VALUE || !p->type_name[0]) continue;
            kp_scalar_base(p->type_name, base, sizeof base);
            if (base[0]) continue; /* a scalar or vector kprof knows */
            kp_aggregate what = kp_aggregate_of_name(p->type_name);
            if (!what && is_text) what = kp_aggregate_in_source(src->text, src->len, p->type_name);
            if (!what && is_text && !walked) {
                walked = 1;
                kp_lab_walk_source(src, &headers);
            }
            if (!what && headers.len)
                what = kp_aggregate_in_source(headers.data, headers.len, p->type_name);
            if (what) p->kind = what == KP_AGGREGATE_UNION ? KP_PARAM_UNION : KP_PARAM_STRUCT;
        }
    }
    kp_str_free(&headers);
}

/* Compile through the cache; dumps with KPROF_DUMP_DIR; keeps failures in a folder. */
static kprof_status kp_lab_compile(kp_lab *lab, const kp_source *src, kp_error *err)
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
        else if (kp_cache_dir(cache, sizeof cache))
            snprintf(dir, sizeof dir, "%s/failed/%s", cache, stem);
        else
            dir[0] = '\0';
        if (dir[0] && kp_lab_dump(dir, stem, src, NULL, err && err->log ? err->log : "") == 0)
            kp_error_append(err, "\nsource, options and log kept in %s/", dir);
        else
            kp_error_append(err, "\n(could not keep source, options and log in %s)",
                            dir[0] ? dir : "a folder: no cache folder can be named");
        return st;
    }
    if (st != KPROF_OK) return st;
    lab->meta = out.meta;
    memset(&out.meta, 0, sizeof out.meta);
    if (dump && kp_lab_dump(dump, stem, src, &out, out.log ? out.log : "") != 0)
        snprintf(lab->info.warning, sizeof lab->info.warning,
                 "KPROF_DUMP_DIR=%s: could not write every dump file", dump);
    else
        kp_cache_put(lab->ops->name, key, out.binary, out.binary_len, &lab->meta);
    kp_build_output_free(&out);
    lab->info.compile_ms = (double)(kp_now_ns() - t0) / 1e6;
    return KPROF_OK;
}

kprof_status kp_lab_use_kernel(kp_lab *lab, const char *entry, kp_error *err)
{
    if (lab->child) return kp_lab_child_use_kernel(lab->child, entry, err);
    kprof_status st = KPROF_OK;
    const kp_kernel_meta *k = NULL;
    if (!entry) {
        if (lab->meta.nkernels > 1) {
            kp_str list = {0};
            for (int i = 0; i < lab->meta.nkernels; i++)
                kp_str_printf(&list, "%s%s", i ? ", " : "", lab->meta.kernels[i].name);
            st =
                kp_error_set(err, KPROF_INVALID, "%s has %d kernels (%s): choose one with --entry",
                             lab->info.source_path, lab->meta.nkernels, list.data ? list.data : "");
            kp_str_free(&list);
            return st;
        }
        k = &lab->meta.kernels[0];
    } else {
        k = kp_program_meta_find(&lab->meta, entry);
    }
    if (!k) {
        kp_str list = {0};
        for (int i = 0; i < lab->meta.nkernels; i++) {
            char sig[1024];
            kp_lab_signature(&lab->meta.kernels[i], sig, sizeof sig);
            kp_str_printf_escaped(&list, "\n  %s", sig);
        }
        st = kp_error_set(err, KPROF_NOT_FOUND,
                          "%s has no kernel '%s'; its kernels:", lab->info.source_path, entry);
        kp_error_append_lines(err, list.data);
        kp_str_free(&list);
        return st;
    }
    st = kp_lab_check_spec(&lab->spec, k, err);
    if (st != KPROF_OK) return st;
    kp_kernel *kernel = NULL;
    st = lab->ops->kernel_create(lab->program, k, &kernel, err);
    if (st != KPROF_OK) return st;
    if (lab->bound) {
        st = lab->ops->bind(kernel, &lab->spec, lab->buffers, err);
        if (st != KPROF_OK) {
            lab->ops->kernel_release(kernel);
            return st;
        }
    }
    lab->ops->kernel_release(lab->kernel);
    lab->kernel = kernel;
    lab->info.kernel = k;
    return KPROF_OK;
}

/* The language of the session's source, or -1 when the target cannot be resolved (the session
 * then opens here, and says why). */
static int kp_lab_language(const kp_lab_options *opts)
{
    if (opts->source_text) return opts->source_lang;
    kp_lab_info *info = calloc(1, sizeof *info);
    if (!info) return -1;
    kp_error scratch = {0};
    int lang = kp_lab_resolve(opts, info, &scratch) == KPROF_OK
                   ? kp_lang_from_path(info->source_path)
                   : -1;
    kp_error_clear(&scratch);
    free(info);
    return lang;
}

kprof_status kp_lab_open(const kp_lab_options *opts, kp_lab **out, kp_error *err)
{
    *out = NULL;
    int lang = kp_lab_language(opts);
    if (lang < 0 || !kp_backend_may_run_in_process(opts->backend, lang))
        return kp_lab_open_here(opts, out, err);
    kp_lab *lab = calloc(1, sizeof *lab);
    if (!lab) return kp_error_set(err, KPROF_NOMEM, "out of memory");
    /* The SPEC is parsed here too: a bad one needs no child, and a fault's message reads it. */
    kprof_status st = kp_spec_parse(opts->buffers, &lab->spec, err);
    if (st == KPROF_OK) st = kp_lab_child_open(opts, &lab->spec, &lab->info, &lab->child, err);
    if (st != KPROF_OK) {
        free(lab);
        return st;
    }
    *out = lab;
    return KPROF_OK;
}

kprof_status kp_lab_device(const char *backend, int device, int lang, const kp_backend_ops **ops,
                           int *index, kp_device_info *info, kp_error *err)
{
    if (kp_backend_may_run_in_process(backend, lang))
        return kp_lab_child_device(backend, device, lang, ops, index, info, err);
    kprof_status st = kp_backend_choose(backend, device, lang, ops, index, err);
    return st == KPROF_OK ? (*ops)->device_info(*index, info, err) : st;
}

kprof_status kp_lab_open_here(const kp_lab_options *opts, kp_lab **out, kp_error *err)
{
    *out = NULL;
    char *text = NULL;
    size_t text_len = 0;
    kp_lab *lab = calloc(1, sizeof *lab);
    if (!lab) return kp_error_set(err, KPROF_NOMEM, "out of memory");
    kprof_status st = kp_spec_parse(opts->buffers, &lab->spec, err);
    if (st != KPROF_OK) goto fail;
    lab->info.spec = &lab->spec;
    int lang;
    if (opts->source_text) {
        snprintf(lab->info.source_path, sizeof lab->info.source_path, "%s", opts->source_name);
        lang = opts->source_lang;
        text = malloc(opts->source_len + 1);
        if (!text) {
            st = kp_error_set(err, KPROF_NOMEM, "out of memory");
            goto fail;
        }
        memcpy(text, opts->source_text, opts->source_len);
        text[opts->source_len] = '\0';
        text_len = opts->source_len;
    } else {
        st = kp_lab_resolve(opts, &lab->info, err);
        if (st != KPROF_OK) goto fail;
        lang = kp_lang_from_path(lab->info.source_path);
        if (lang < 0) {
            st = kp_error_set(err, KPROF_INVALID,
                              "%s: unknown kernel language (use .cl for OpenCL C, .cu for CUDA, "
                              ".ptx or .cubin)",
                              lab->info.source_path);
            goto fail;
        }
        st = kp_file_read(lab->info.source_path, &text, &text_len, err);
        if (st != KPROF_OK) goto fail;
    }

    int index = -1;
    st = kp_backend_choose(opts->backend, opts->device, lang, &lab->ops, &index, err);
    if (st != KPROF_OK) goto fail;
    lab->info.ops = lab->ops;
    st = lab->ops->device_info(index, &lab->info.device, err);
    if (st != KPROF_OK) goto fail;
    st = lab->ops->open(index, &lab->dev, err);
    if (st != KPROF_OK) goto fail;

    kp_source src = {
        .path = lab->info.source_path,
        .text = text,
        .len = text_len,
        .lang = (kp_lang)lang,
        .options = opts->options ? opts->options : "",
        .entry = opts->entry ? opts->entry : "",
    };
    /* kprof's own kernels (in memory) include nothing. */
    if (!opts->source_text) src.includes_hash = kp_lab_includes_hash(&src);
    st = kp_lab_compile(lab, &src, err);
    if (st != KPROF_OK) goto fail;
    kp_lab_mark_aggregates(
        &lab->meta, &src, (lang == KP_LANG_OPENCL_C || lang == KP_LANG_CUDA) && !opts->source_text);

    if (lab->meta.nkernels == 0) {
        st = kp_error_set(err, KPROF_NOT_FOUND, "%s defines no kernels", lab->info.source_path);
        goto fail;
    }
    st = kp_lab_use_kernel(lab, opts->entry, err);
    if (st != KPROF_OK) goto fail;

    /* Buffers: filled on the host, written once. */
    for (int i = 0; i < lab->spec.count; i++) {
        const kp_arg_spec *a = &lab->spec.args[i];
        if (a->kind != KP_ARG_BUFFER) continue;
        uint64_t bytes = kp_arg_bytes(a);
        lab->info.buffer_bytes += bytes;
        if (lab->info.device.max_alloc && bytes > lab->info.device.max_alloc) {
            char a1[64];
            snprintf(a1, sizeof a1, "%llu", (unsigned long long)bytes);
            st = kp_error_set(err, KPROF_NOMEM,
                              "--buffers item %d '%s' needs %s bytes, more than the device's "
                              "largest allocation (%llu bytes)",
                              i + 1, a->text, a1, (unsigned long long)lab->info.device.max_alloc);
            goto fail;
        }
        void *host = malloc((size_t)bytes);
        if (!host) {
            st = kp_error_set(err, KPROF_NOMEM,
                              "--buffers item %d '%s': cannot allocate %llu bytes on the host",
                              i + 1, a->text, (unsigned long long)bytes);
            goto fail;
        }
        kp_fill_buffer(host, a->type, a->count, a->fill, a->value, (unsigned)i);
        st = lab->ops->alloc(lab->dev, bytes, &lab->buffers[i], err);
        if (st == KPROF_OK) st = lab->ops->write(lab->buffers[i], host, bytes, err);
        free(host);
        if (st != KPROF_OK) {
            kp_error_append(err, " (--buffers item %d '%s')", i + 1, a->text);
            goto fail;
        }
    }
    st = lab->ops->bind(lab->kernel, &lab->spec, lab->buffers, err);
    if (st != KPROF_OK) goto fail;
    lab->bound = 1;
    free(text);
    *out = lab;
    return KPROF_OK;
fail:
    free(text);
    kp_lab_close(lab);
    return st;
}

/* kprof's own bound on a grid: each dimension fits 32 bits and the whole grid 2^40 threads,
 * so no runtime's index arithmetic wraps (PoCL divides by zero on a 2^32-thread dimension). */
#define KP_GRID_DIM_MAX 4294967295ULL
#define KP_GRID_TOTAL_MAX (1ULL << 40)

uint64_t kp_tg_rule_threads(const kp_reflection *r)
{
    if (r->tg_rule == KP_TG_RULE_NONE) return 0;
    return r->tg_rule_size[0] * r->tg_rule_size[1] * r->tg_rule_size[2];
}

int kp_reflection_limit_declared(const kp_reflection *r)
{
    uint64_t declared = kp_tg_rule_threads(r);
    return declared && r->max_tg >= declared;
}

void kp_tg_shape_text(const uint64_t v[3], int min_dims, char *buf, size_t n)
{
    int dims = 3;
    while (dims > 1 && dims > min_dims && v[dims - 1] == 1)
        dims--;
    if (dims == 1)
        snprintf(buf, n, "%llu", (unsigned long long)v[0]);
    else if (dims == 2)
        snprintf(buf, n, "%llux%llu", (unsigned long long)v[0], (unsigned long long)v[1]);
    else
        snprintf(buf, n, "%llux%llux%llu", (unsigned long long)v[0], (unsigned long long)v[1],
                 (unsigned long long)v[2]);
}

void kp_tg_rule_text(const kp_reflection *r, char *buf, size_t n)
{
    char shape[96];
    kp_tg_shape_text(r->tg_rule_size, 1, shape, sizeof shape);
    const char *from = r->tg_rule_from ? r->tg_rule_from : "its source";
    if (r->tg_rule == KP_TG_RULE_REQUIRED)
        snprintf(buf, n, "required group size %s (%s)", shape, from);
    else if (r->tg_rule == KP_TG_RULE_MAX)
        snprintf(buf, n, "max %llu (%s)", (unsigned long long)kp_tg_rule_threads(r), from);
    else if (n)
        buf[0] = '\0';
}

kprof_status kp_lab_check_tg_rule(const kp_reflection *r, const kp_launch *l, const char *name,
                                  kp_error *err)
{
    uint64_t tg[3] = {1, 1, 1};
    for (int d = 0; d < l->dims && d < 3; d++)
        tg[d] = l->tg[d];
    char have[96], want[96];
    kp_tg_shape_text(tg, l->dims, have, sizeof have);
    const char *from = r->tg_rule_from ? r->tg_rule_from : "its source";
    if (r->tg_rule == KP_TG_RULE_REQUIRED) {
        if (tg[0] == r->tg_rule_size[0] && tg[1] == r->tg_rule_size[1] &&
            tg[2] == r->tg_rule_size[2])
            return KPROF_OK;
        /* What to type: the shape with as many dimensions as the grid, unless the shape needs
         * more (then the grid must have them too). */
        int need = 3;
        while (need > 1 && r->tg_rule_size[need - 1] == 1)
            need--;
        kp_tg_shape_text(r->tg_rule_size, l->dims > need ? l->dims : need, want, sizeof want);
        if (need > l->dims)
            return kp_error_set(err, KPROF_INVALID,
                                "tg %s is not %s's required threadgroup size %s (%s, fixed when "
                                "it was compiled): it needs a %d-D grid and --tg %s",
                                have, name, want, from, need, want);
        return kp_error_set(err, KPROF_INVALID,
                            "tg %s is not %s's required threadgroup size %s (%s, fixed when it "
                            "was compiled): use --tg %s",
                            have, name, want, from, want);
    }
    if (r->tg_rule == KP_TG_RULE_MAX) {
        uint64_t most = kp_tg_rule_threads(r);
        if (tg[0] * tg[1] * tg[2] > most)
            return kp_error_set(err, KPROF_INVALID,
                                "tg %s is above %s's maximum threadgroup size %llu (%s, fixed "
                                "when it was compiled)",
                                have, name, (unsigned long long)most, from);
    }
    return KPROF_OK;
}

kprof_status kp_lab_reflect(kp_lab *lab, const kp_launch *l, kp_reflection *refl, kp_error *err)
{
    if (lab->child) return kp_lab_child_reflect(lab->child, l, refl, err);
    kprof_status st = lab->ops->reflect(lab->kernel, l, refl, err);
    if (st != KPROF_OK) return st;
    refl->dynamic_local = l->dyn_local;
    for (int i = 0; i < lab->spec.count; i++)
        if (lab->spec.args[i].kind == KP_ARG_LOCAL)
            refl->dynamic_local += lab->spec.args[i].local_bytes;
    return KPROF_OK;
}

kprof_status kp_lab_check_launch(kp_lab *lab, const kp_launch *l, kp_reflection *refl,
                                 kp_error *err)
{
    if (lab->child) return kp_lab_child_check_launch(lab->child, l, refl, err);
    const kp_device_info *d = &lab->info.device;
    const char *name = lab->info.kernel->name;
    if (l->dims < 1 || l->dims > 3)
        return kp_error_set(err, KPROF_INVALID, "grid must have 1, 2 or 3 dimensions");
    uint64_t total = 1;
    for (int i = 0; i < l->dims; i++) {
        uint64_t grid = l->grid[i], tg = l->tg[i];
        char axis = "xyz"[i];
        if (grid == 0 || tg == 0)
            return kp_error_set(err, KPROF_INVALID,
                                "grid and tg must be at least 1 in every dimension");
        if (grid > KP_GRID_DIM_MAX)
            return kp_error_set(err, KPROF_INVALID,
                                "grid %llu in dimension %c is above kprof's limit of %llu "
                                "threads per dimension",
                                (unsigned long long)grid, axis, KP_GRID_DIM_MAX);
        if (total > KP_GRID_TOTAL_MAX / grid)
            return kp_error_set(err, KPROF_INVALID,
                                "the grid has more than 2^40 threads, above kprof's limit");
        total *= grid;
        if (d->max_tg_dims[i] && tg > d->max_tg_dims[i])
            return kp_error_set(err, KPROF_INVALID,
                                "tg %llu in dimension %c is above the device's maximum %llu",
                                (unsigned long long)tg, axis,
                                (unsigned long long)d->max_tg_dims[i]);
    }
    /* The kernel's own rule first: a size it was compiled never to take is the real reason,
     * whatever else is wrong with it. */
    kprof_status st = kp_lab_reflect(lab, l, refl, err);
    if (st != KPROF_OK) return st;
    st = kp_lab_check_tg_rule(refl, l, name, err);
    if (st != KPROF_OK) return st;
    for (int i = 0; i < l->dims; i++) {
        uint64_t grid = l->grid[i], tg = l->tg[i];
        uint64_t groups = grid / tg + (grid % tg != 0);
        if (d->uniform_groups && grid % tg != 0)
            return kp_error_set(err, KPROF_INVALID,
                                "grid %llu is not a multiple of tg %llu in dimension %c; %s needs "
                                "whole threadgroups (OpenCL C 1.2 uniform work-groups): use "
                                "--grid %llu and guard the tail in the kernel",
                                (unsigned long long)grid, (unsigned long long)tg, "xyz"[i],
                                d -> backend, (unsigned long long)(groups * tg));
    }
    uint64_t local = 0;
    for (int i = 0; i < lab->spec.count; i++)
        if (lab->spec.args[i].kind == KP_ARG_LOCAL) local += lab->spec.args[i].local_bytes;
    uint64_t threads = kp_launch_tg_threads(l);
    if (refl->max_tg && threads > refl->max_tg)
        return kp_error_set(err, KPROF_INVALID,
                            "tg %llu threads is above %s's maximum threadgroup size %llu "
                            "(kernel reflection%s)",
                            (unsigned long long)threads, name, (unsigned long long)refl->max_tg,
                            kp_reflection_limit_declared(refl) ? ""
                            : refl->max_tg < d->max_tg
                                ? "; register pressure lowers it below the device's"
                                : "");
    /* The backends report static memory alone (OpenCL's is read before any argument is set):
     * the local:BYTES arguments come on top. */
    uint64_t need = refl->static_local + local;
    if (local && d->local_mem && need > d->local_mem)
        return kp_error_set(err, KPROF_INVALID,
                            "local memory: %s needs %llu bytes per threadgroup (its local:BYTES "
                            "arguments, %llu bytes, and its own), above the device's %llu",
                            name, (unsigned long long)need, (unsigned long long)local,
                            (unsigned long long)d->local_mem);
    return KPROF_OK;
}

kprof_status kp_lab_measure(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                            double *samples_ms, kp_error *err)
{
    if (lab->child) return kp_lab_child_measure(lab->child, launch, warmup, iters, samples_ms, err);
    double ns = 0;
    for (int i = 0; i < warmup; i++) {
        kprof_status st = lab->ops->dispatch(lab->kernel, launch, &ns, err);
        if (st != KPROF_OK) return st;
    }
    if (lab->ops->dispatch_batch) {
        kprof_status st = lab->ops->dispatch_batch(lab->kernel, launch, iters, samples_ms,
                                                   lab->info.timer, sizeof lab->info.timer, err);
        if (st != KPROF_OK) return st;
        for (int i = 0; i < iters; i++)
            samples_ms[i] /= 1e6;
        return KPROF_OK;
    }
    snprintf(lab->info.timer, sizeof lab->info.timer, "%s-profiling-events", lab->ops->name);
    for (int i = 0; i < iters; i++) {
        kprof_status st = lab->ops->dispatch(lab->kernel, launch, &ns, err);
        if (st != KPROF_OK) return st;
        samples_ms[i] = ns / 1e6;
    }
    return KPROF_OK;
}

/* The vector width of a pointer parameter's element ("float4*" -> 4, "float*" -> 1); a 3-wide
 * vector takes the room of 4 (OpenCL C). 1 when the type is unknown. */
static uint64_t kp_param_vector_width(const kp_param *p)
{
    const char *t = p->type_name, *star = strchr(t, '*');
    if (!star) return 1;
    const char *end = star;
    while (end > t && end[-1] == ' ')
        end--;
    const char *d = end;
    while (d > t && isdigit((unsigned char)d[-1]))
        d--;
    if (d == end || d == t || !isalpha((unsigned char)d[-1])) return 1;
    int w = atoi(d);
    if (w == 3) return 4;
    return w == 2 || w == 4 || w == 8 || w == 16 ? (uint64_t)w : 1;
}

uint64_t kp_lab_grid_bytes(const kp_lab *lab, const kp_launch *launch, uint64_t *threads)
{
    uint64_t n = 1, total = 0;
    for (int d = 0; d < launch->dims; d++)
        n *= launch->grid[d];
    const kp_kernel_meta *k = lab->info.kernel;
    for (int i = 0; i < lab->spec.count; i++) {
        const kp_arg_spec *a = &lab->spec.args[i];
        if (a->kind != KP_ARG_BUFFER) continue;
        uint64_t width =
            k && k->params && i < k->nparams ? kp_param_vector_width(&k->params[i]) : 1;
        uint64_t per_thread = kp_type_size(a->type) * width;
        uint64_t bytes = kp_arg_bytes(a);
        total += n >= bytes / per_thread ? bytes : n * per_thread;
    }
    if (threads) *threads = n;
    return total;
}

kprof_status kp_lab_digest(kp_lab *lab, kp_buffer_digest *out, int max, int *n, kp_error *err)
{
    if (lab->child) return kp_lab_child_digest(lab->child, out, max, n, err);
    *n = 0;
    for (int i = 0; i < lab->spec.count && *n < max; i++) {
        const kp_arg_spec *a = &lab->spec.args[i];
        if (a->kind != KP_ARG_BUFFER) continue;
        uint64_t bytes = kp_arg_bytes(a);
        void *host = malloc((size_t)bytes);
        if (!host)
            return kp_error_set(err, KPROF_NOMEM, "cannot allocate %llu bytes to read back",
                                (unsigned long long)bytes);
        kprof_status st = lab->ops->read(lab->buffers[i], host, bytes, err);
        if (st != KPROF_OK) {
            free(host);
            return st;
        }
        kp_buffer_digest *d = &out[(*n)++];
        memset(d, 0, sizeof *d);
        d->arg = i;
        const kp_kernel_meta *k = lab->info.kernel;
        if (k->nparams > i && k->params) kp_strlcpy(d->name, k->params[i].name, sizeof d->name);
        d->type = a->type;
        d->count = a->count;
        d->hash = kp_hash64(KP_HASH_SEED, host, (size_t)bytes);
        d->min = INFINITY;
        d->max = -INFINITY;
        for (uint64_t e = 0; e < a->count; e++) {
            double v = kp_value_as_double(a->type, host, e);
            if (e < 4) d->first[d->nfirst++] = v;
            if (!isfinite(v)) {
                d->nonfinite++;
                continue;
            }
            d->sum += v;
            if (v < d->min) d->min = v;
            if (v > d->max) d->max = v;
        }
        if (d->nonfinite == d->count) d->min = d->max = NAN;
        free(host);
    }
    return KPROF_OK;
}

kprof_status kp_lab_finish(kp_lab *lab, kp_error *err)
{
    return lab->child ? kp_lab_child_finish(lab->child, err) : KPROF_OK;
}

int kp_lab_is_void(const kp_lab *lab)
{
    return lab && kp_lab_child_void(lab->child);
}

void kp_lab_close(kp_lab *lab)
{
    if (!lab) return;
    kp_lab_child_close(lab->child);
    if (lab->ops) {
        for (int i = 0; i < KP_SPEC_MAX_ARGS; i++)
            lab->ops->free(lab->buffers[i]);
        lab->ops->kernel_release(lab->kernel);
        lab->ops->program_release(lab->program);
        lab->ops->close(lab->dev);
    }
    kp_program_meta_free(&lab->meta);
    free(lab);
}
