/*
 * capture.c — the collectors' half of a captured kernel launch (capture.h): the pattern and its
 * environment, the folder's name, building a kp_capture, writing its folder (temporary, then
 * renamed whole) and saying what became of it. Shared with libkprof-inject.so, so it needs
 * nothing but base/: the manifest goes through the streaming JSON writer. capture_read.c reads
 * the folder back for the lab.
 */
#define _GNU_SOURCE
#include "collect/capture.h"

#include "base/env.h"
#include "base/json.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the pattern --------------------------------------------------------------------------- */

static void kp_capture_literal(kp_capture_pattern *p);

kprof_status kp_capture_pattern_parse(const char *text, kp_capture_pattern *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    out->select = KP_CAPTURE_FIRST;
    out->nth = 1;
    out->window_s = KP_CAPTURE_DEFAULT_WINDOW_S;
    out->max_bytes = KP_CAPTURE_DEFAULT_MAX_BYTES;
    out->after = 1;
    if (!text || !*text)
        return kp_error_set(err, KPROF_INVALID,
                            "--capture needs a kernel-name pattern (PATTERN[@N|@slowest])");
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return kp_error_set(err, KPROF_INVALID, "--capture '%s' holds a control character",
                                text);
    const char *at = strrchr(text, '@');
    size_t glen = at ? (size_t)(at - text) : strlen(text);
    if (glen == 0)
        return kp_error_set(err, KPROF_INVALID,
                            "--capture '%s' has no kernel-name pattern before '@' (write "
                            "PATTERN[@N|@slowest], e.g. 'softmax*@3')",
                            text);
    if (glen >= sizeof out->glob)
        return kp_error_set(err, KPROF_INVALID, "--capture pattern is longer than %zu bytes",
                            sizeof out->glob - 1);
    memcpy(out->glob, text, glen);
    out->glob[glen] = '\0';
    kp_capture_literal(out);
    if (!at) return KPROF_OK;
    const char *sel = at + 1;
    if (strcmp(sel, "slowest") == 0) {
        out->select = KP_CAPTURE_SLOWEST;
        return KPROF_OK;
    }
    uint64_t n = 0;
    int digits = *sel != '\0';
    for (const char *p = sel; *p; p++) {
        if (*p < '0' || *p > '9' || n > (UINT64_MAX - 9) / 10) {
            digits = 0;
            break;
        }
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (!digits || n == 0)
        return kp_error_set(err, KPROF_INVALID,
                            "--capture '%s': after '@' comes N (the N-th launch, 1 for the first) "
                            "or 'slowest', not '%s'",
                            text, sel);
    out->select = KP_CAPTURE_NTH;
    out->nth = n;
    return KPROF_OK;
}

static int kp_capture_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* kp_capture_pattern.literal: runs inside [...] sets or after '\\' are not literal text. */
static void kp_capture_literal(kp_capture_pattern *p)
{
    static const char *const words[] = {
        "void", "float", "double", "int", "char", "unsigned", "long", "short", "bool", "const",
        "signed", "volatile", "anonymous", "namespace", "operator", "true", "false", "struct",
        /* mangled otherwise than spelled: lambdas, std:: and
           its abbreviations (Sa Sb Ss Si So Sd) */
        "lambda", "auto", "decltype", "std", "string", "allocator", "basic_string", "istream",
        "ostream", "iostream", "char_traits", "wchar_t", "char8_t", "char16_t", "char32_t",
        "__int128", "_Float16", "nullptr", "unnamed", "__bf16"};
    const char *g = p->glob;
    size_t best = 0, i = 0, n = strlen(g);
    p->literal[0] = '\0';
    while (i < n) {
        if (g[i] == '[') { /* a set, read as fnmatch reads it: no literal text inside */
            size_t j = i + 1;
            if (j < n && (g[j] == '!' || g[j] == '^')) j++;
            if (j < n && g[j] == ']') j++; /* a leading ']' belongs to the set */
            while (j < n && g[j] != ']')
                j++;
            i = j < n ? j + 1 : n;
            continue;
        }
        if (g[i] == '\\') { /* an escaped character: not part of a whole run */
            i += 2;
            while (i < n && kp_capture_ident(g[i]))
                i++;
            continue;
        }
        if (!kp_capture_ident(g[i])) {
            i++;
            continue;
        }
        size_t start = i;
        while (i < n && kp_capture_ident(g[i]))
            i++;
        size_t len = i - start;
        /* Identifiers never start with a digit: "128ul" is a number the demangler spelled
         * ("Lm128E" in the symbol), not text the symbol holds. */
        if (g[start] >= '0' && g[start] <= '9') continue;
        /* A run touching a set or escape on either side is cut there: not whole. */
        int keyword = 0;
        for (size_t w = 0; w < sizeof words / sizeof *words; w++)
            keyword |= strlen(words[w]) == len && strncmp(words[w], g + start, len) == 0;
        if (!keyword && len >= 3 && len > best && len < sizeof p->literal) {
            best = len;
            memcpy(p->literal, g + start, len);
            p->literal[len] = '\0';
        }
    }
}

int kp_capture_may_match(const kp_capture_pattern *p, const char *symbol)
{
    return !p->literal[0] || !symbol || strstr(symbol, p->literal) != NULL;
}

int kp_capture_pattern_env(kp_capture_pattern *out, kp_error *err)
{
    const char *pat = getenv(KP_ENV_CAPTURE);
    if (!pat || !*pat) return 0;
    if (kp_capture_pattern_parse(pat, out, err) != KPROF_OK) return -1;
    const char *w = getenv(KP_ENV_CAPTURE_WINDOW);
    if (w && *w) {
        char *end = NULL;
        double v = strtod(w, &end);
        if (!end || *end || !(v > 0) || v > 1e6) {
            kp_error_set(err, KPROF_INVALID, "%s '%s' is not a number of seconds above 0",
                         KP_ENV_CAPTURE_WINDOW, w);
            return -1;
        }
        out->window_s = v;
    }
    const char *m = getenv(KP_ENV_CAPTURE_MAX_BYTES);
    if (m && *m) {
        uint64_t v = 0;
        if (kp_parse_size(m, &v) != KPROF_OK || v == 0) {
            kp_error_set(err, KPROF_INVALID, "%s '%s' is not a size in bytes (4G, 512M, 1048576)",
                         KP_ENV_CAPTURE_MAX_BYTES, m);
            return -1;
        }
        out->max_bytes = v;
    }
    const char *a = getenv(KP_ENV_CAPTURE_AFTER);
    if (a && strcmp(a, "0") == 0) out->after = 0;
    return 1;
}

/* The base of a demangled C++ name: the identifier right before the parameter list, without its
 * namespaces and template arguments. Plain C names are returned as they are. */
static void kp_capture_base_name(const char *kernel, const char **start, size_t *len)
{
    size_t n = strlen(kernel);
    /* The parameter list: the parenthesised group the name ends with (a "(anonymous
     * namespace)" earlier in it is part of the scope, not the parameters). */
    size_t end = n;
    while (end > 0 && kernel[end - 1] == ' ')
        end--;
    if (end >= 6 && strncmp(kernel + end - 6, " const", 6) == 0) end -= 6;
    if (end > 0 && kernel[end - 1] == ')') {
        int depth = 0;
        size_t i = end;
        while (i > 0) {
            char c = kernel[--i];
            if (c == ')')
                depth++;
            else if (c == '(' && --depth == 0)
                break;
        }
        if (depth == 0 && i > 0) end = i;
    }
    /* Drop template arguments ending right before it. */
    size_t e = end;
    while (e > 0 && kernel[e - 1] == ' ')
        e--;
    if (e > 0 && kernel[e - 1] == '>') {
        int d = 0;
        while (e > 0) {
            char c = kernel[--e];
            if (c == '>')
                d++;
            else if (c == '<' && --d == 0)
                break;
        }
    }
    /* Back to the start of the identifier: after the last "::" or space at depth 0. */
    size_t s = e;
    while (s > 0) {
        char c = kernel[s - 1];
        if (c == ':' || c == ' ' || c == '*' || c == '&') break;
        s--;
    }
    if (s == e) { /* nothing usable: the whole text */
        *start = kernel;
        *len = n;
        return;
    }
    *start = kernel + s;
    *len = e - s;
}

int kp_capture_match(const kp_capture_pattern *p, const char *name, const char *symbol)
{
    if (name && fnmatch(p->glob, name, 0) == 0) return 1;
    if (symbol && fnmatch(p->glob, symbol, 0) == 0) return 1;
    /* The base name alone ("tiny" for "tiny(float*, int)", as the folder is named). */
    if (name) {
        const char *base = NULL;
        size_t len = 0;
        kp_capture_base_name(name, &base, &len);
        char b[512];
        if (len < sizeof b && len != strlen(name)) {
            memcpy(b, base, len);
            b[len] = '\0';
            if (fnmatch(p->glob, b, 0) == 0) return 1;
        }
    }
    return 0;
}

void kp_capture_folder_name(const char *kernel, uint64_t launch, char *buf, size_t n)
{
    const char *base = NULL;
    size_t len = 0;
    kp_capture_base_name(kernel ? kernel : "", &base, &len);
    char name[96];
    size_t o = 0;
    for (size_t i = 0; i < len && o < 80; i++) {
        unsigned char c = (unsigned char)base[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '.' || c == '-';
        name[o++] = ok ? (char)c : '_';
    }
    name[o] = '\0';
    if (o == 0) snprintf(name, sizeof name, "kernel");
    if (name[0] == '.' || name[0] == '-') name[0] = '_';
    snprintf(buf, n, "%s@%llu", name, (unsigned long long)launch);
}

/* ---- building a capture -------------------------------------------------------------------- */

void kp_capture_init(kp_capture *c)
{
    memset(c, 0, sizeof *c);
    c->registers = c->static_smem = c->local_bytes = c->max_threads = c->const_bytes = -1;
    c->after = 1;
    c->dims = 1;
    for (int d = 0; d < 3; d++)
        c->grid[d] = c->tg[d] = 1;
}

void kp_capture_release(kp_capture *c)
{
    if (!c) return;
    for (int i = 0; i < c->nargs; i++) {
        free(c->args[i].bytes);
        c->args[i].bytes = NULL;
    }
    c->nargs = 0;
}

void kp_capture_missing(kp_capture *c, const char *fmt, ...)
{
    /* The last line is kept for the count of those that did not fit. */
    if (c->nmissing >= KP_CAPTURE_MAX_MISSING - 1) {
        c->missing_more++;
        snprintf(c->missing[KP_CAPTURE_MAX_MISSING - 1], sizeof c->missing[0],
                 "... and %d more things were not captured", c->missing_more);
        c->nmissing = KP_CAPTURE_MAX_MISSING;
        return;
    }
    char *line = c->missing[c->nmissing++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof c->missing[0], fmt, ap);
    va_end(ap);
}

static int kp_capture_arg_slot(kp_capture *c, kp_error *err)
{
    if (c->nargs >= KP_CAPTURE_MAX_ARGS) {
        kp_error_set(err, KPROF_INVALID, "the kernel has more than %d arguments",
                     KP_CAPTURE_MAX_ARGS);
        return -1;
    }
    kp_capture_arg *a = &c->args[c->nargs];
    memset(a, 0, sizeof *a);
    a->alloc = -1;
    return c->nargs++;
}

int kp_capture_add_value(kp_capture *c, const void *bytes, uint32_t size, kp_error *err)
{
    if (size > KP_CAPTURE_MAX_ARG_SIZE) {
        kp_error_set(err, KPROF_INVALID, "argument %d has %u bytes, more than %d", c->nargs,
                     (unsigned)size, KP_CAPTURE_MAX_ARG_SIZE);
        return -1;
    }
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy) {
        kp_error_nomem(err);
        return -1;
    }
    int i = kp_capture_arg_slot(c, err);
    if (i < 0) {
        free(copy);
        return -1;
    }
    if (size) memcpy(copy, bytes, size);
    c->args[i].kind = KP_CAPTURE_VALUE;
    c->args[i].size = size;
    c->args[i].bytes = copy;
    return i;
}

int kp_capture_add_mem(kp_capture *c, int alloc, kp_error *err)
{
    int i = kp_capture_arg_slot(c, err);
    if (i < 0) return -1;
    c->args[i].kind = KP_CAPTURE_MEM;
    c->args[i].size = 8;
    c->args[i].alloc = alloc;
    return i;
}

int kp_capture_add_local(kp_capture *c, uint32_t size, kp_error *err)
{
    int i = kp_capture_arg_slot(c, err);
    if (i < 0) return -1;
    c->args[i].kind = KP_CAPTURE_LOCAL;
    c->args[i].size = size;
    return i;
}

int kp_capture_add_alloc(kp_capture *c, uint64_t address, uint64_t bytes, int arg, const char *name,
                         kp_error *err)
{
    if (address != 0)
        for (int j = 0; j < c->nallocs; j++)
            if (c->allocs[j].address == address) return j;
    if (c->nallocs >= KP_CAPTURE_MAX_ALLOCS) {
        kp_error_set(err, KPROF_INVALID, "the launch uses more than %d allocations",
                     KP_CAPTURE_MAX_ALLOCS);
        return -1;
    }
    int j = c->nallocs++;
    kp_capture_alloc *a = &c->allocs[j];
    memset(a, 0, sizeof *a);
    a->bytes = bytes;
    a->address = address;
    a->arg = arg;
    if (name && *name)
        kp_strlcpy(a->name, name, sizeof a->name);
    else
        snprintf(a->name, sizeof a->name, "arg%d", arg);
    snprintf(a->before, sizeof a->before, "alloc-%d.before", j);
    snprintf(a->after, sizeof a->after, "alloc-%d.after", j);
    return j;
}

int kp_capture_add_ptr(kp_capture *c, uint32_t arg, uint32_t at, uint32_t alloc, uint64_t offset,
                       kp_error *err)
{
    if (c->nptrs >= KP_CAPTURE_MAX_POINTERS) {
        kp_error_set(err, KPROF_INVALID, "the launch passes more than %d device pointers",
                     KP_CAPTURE_MAX_POINTERS);
        return -1;
    }
    kp_capture_ptr *p = &c->ptrs[c->nptrs];
    p->arg = arg;
    p->at = at;
    p->alloc = alloc;
    p->offset = offset;
    return c->nptrs++;
}

/* ---- writing the folder -------------------------------------------------------------------- */

struct kp_capture_out {
    char tmp[4096];   /* the temporary folder */
    char final[4096]; /* where it goes */
};

static kprof_status kp_capture_io(kp_error *err, const char *what, const char *path, int e)
{
    return kp_error_set(err, KPROF_IO, "capture: cannot %s %s: %s", what, path, strerror(e));
}

kprof_status kp_capture_out_open(const char *kernels_dir, const char *folder, kp_capture_out **out,
                                 kp_error *err)
{
    *out = NULL;
    kprof_status st = kp_mkdir_p(kernels_dir, err);
    if (st != KPROF_OK) return st;
    kp_capture_out *o = calloc(1, sizeof *o);
    if (!o) return kp_error_nomem(err);
    int a = snprintf(o->final, sizeof o->final, "%s/%s", kernels_dir, folder);
    /* Unique however many collectors of this process, or a killed run's leftovers, share it. */
    int b = snprintf(o->tmp, sizeof o->tmp, "%s/.%s.tmp-%ld-XXXXXX", kernels_dir, folder,
                     (long)getpid());
    if (a < 0 || b < 0 || (size_t)a >= sizeof o->final || (size_t)b >= sizeof o->tmp) {
        free(o);
        return kp_error_set(err, KPROF_INVALID, "capture: the folder's path is too long");
    }
    if (!mkdtemp(o->tmp)) {
        int e = errno;
        kp_capture_io(err, "make the folder", o->tmp, e);
        free(o);
        return KPROF_IO;
    }
    *out = o;
    return KPROF_OK;
}

kprof_status kp_capture_out_blob(kp_capture_out *o, const char *file, const void *data, size_t len,
                                 kp_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", o->tmp, file);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return kp_capture_io(err, "write", path, errno);
    const unsigned char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left > (1u << 30) ? (1u << 30) : left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            close(fd);
            return kp_capture_io(err, "write", path, e);
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0) return kp_capture_io(err, "write", path, errno);
    return KPROF_OK;
}

void kp_capture_out_abort(kp_capture_out *o)
{
    if (!o) return;
    kp_dir_remove(o->tmp);
    free(o);
}

static const char *const kp_capture_select_names[] = {"first", "N", "slowest"};
static const char *const kp_capture_kind_names[] = {"value", "mem", "local"};

static void kp_capture_hex(kp_str *s, const unsigned char *b, uint32_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (uint32_t i = 0; i < n; i++) {
        char two[3] = {digits[b[i] >> 4], digits[b[i] & 15], 0};
        kp_str_append(s, two);
    }
}

static void kp_capture_u64x3(kp_json *j, const char *key, const uint64_t v[3])
{
    kp_json_array_begin(j, key);
    for (int d = 0; d < 3; d++)
        kp_json_uint(j, NULL, v[d]);
    kp_json_array_end(j);
}

static void kp_capture_attr(kp_json *j, const char *key, int64_t v)
{
    kp_json_int_or_null(j, key, v >= 0, v);
}

/* The manifest's text (capture.h). */
static kprof_status kp_capture_manifest(const kp_capture *c, kp_str *out)
{
    kp_json j;
    kp_json_init(&j, out, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_int(&j, "kprof_capture", 1);
    kp_json_string(&j, "api", c->api);
    kp_json_string(&j, "kernel", c->kernel);
    kp_json_string(&j, "symbol", c->symbol);
    kp_json_uint(&j, "launch", c->launch);
    int sel = c->select >= 0 && c->select <= 2 ? c->select : 0;
    kp_json_string(&j, "selector", kp_capture_select_names[sel]);
    kp_json_string(&j, "device", c->device);
    kp_json_string(&j, "command", c->command);
    kp_json_int(&j, "pid", c->pid);
    kp_json_string(&j, "captured_at", c->captured_at);
    kp_json_int(&j, "held_ns", c->held_ns);
    kp_json_object_begin(&j, "code");
    kp_json_string(&j, "kind", c->code_kind);
    kp_json_string(&j, "file", c->code_file);
    kp_json_string(&j, "build_options", c->build_options);
    kp_json_object_end(&j);
    kp_json_object_begin(&j, "geometry");
    kp_json_int(&j, "dims", c->dims);
    kp_capture_u64x3(&j, "grid", c->grid);
    kp_capture_u64x3(&j, "tg", c->tg);
    kp_capture_u64x3(&j, "offset", c->offset);
    kp_json_uint(&j, "dynamic_smem", c->dynamic_smem);
    kp_json_object_end(&j);
    kp_json_object_begin(&j, "attributes");
    kp_capture_attr(&j, "registers", c->registers);
    kp_capture_attr(&j, "static_smem", c->static_smem);
    kp_capture_attr(&j, "local_bytes", c->local_bytes);
    kp_capture_attr(&j, "max_threads", c->max_threads);
    kp_capture_attr(&j, "const_bytes", c->const_bytes);
    kp_json_object_end(&j);
    kp_json_int(&j, "after", c->after ? 1 : 0);
    kp_json_array_begin(&j, "args");
    kp_str hex = {0};
    for (int i = 0; i < c->nargs; i++) {
        const kp_capture_arg *a = &c->args[i];
        kp_json_object_begin(&j, NULL);
        kp_json_int(&j, "index", i);
        kp_json_uint(&j, "size", a->size);
        int k = a->kind >= 0 && a->kind <= 2 ? a->kind : 0;
        kp_json_string(&j, "kind", kp_capture_kind_names[k]);
        if (a->kind == KP_CAPTURE_VALUE) {
            hex.len = 0;
            if (hex.data) hex.data[0] = '\0';
            kp_capture_hex(&hex, a->bytes, a->size);
            kp_json_string(&j, "hex", hex.data ? hex.data : "");
        }
        if (a->kind == KP_CAPTURE_MEM) kp_json_int(&j, "alloc", a->alloc);
        kp_json_object_end(&j);
    }
    int failed = hex.failed;
    kp_str_free(&hex);
    kp_json_array_end(&j);
    kp_json_array_begin(&j, "allocs");
    for (int i = 0; i < c->nallocs; i++) {
        const kp_capture_alloc *a = &c->allocs[i];
        kp_json_object_begin(&j, NULL);
        kp_json_int(&j, "id", i);
        kp_json_uint(&j, "bytes", a->bytes);
        kp_json_uint(&j, "address", a->address);
        kp_json_int(&j, "arg", a->arg);
        kp_json_string(&j, "name", a->name);
        kp_json_string(&j, "before", a->before[0] ? a->before : NULL);
        /* No after-state was copied (--capture-no-after): no file is named. */
        kp_json_string(&j, "after", c->after && a->after[0] ? a->after : NULL);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_array_begin(&j, "pointers");
    for (int i = 0; i < c->nptrs; i++) {
        const kp_capture_ptr *p = &c->ptrs[i];
        kp_json_object_begin(&j, NULL);
        kp_json_uint(&j, "arg", p->arg);
        kp_json_uint(&j, "at", p->at);
        kp_json_uint(&j, "alloc", p->alloc);
        kp_json_uint(&j, "offset", p->offset);
        kp_json_object_end(&j);
    }
    kp_json_array_end(&j);
    kp_json_array_begin(&j, "not_captured");
    for (int i = 0; i < c->nmissing; i++)
        kp_json_string(&j, NULL, c->missing[i]);
    kp_json_array_end(&j);
    if (c->select == KP_CAPTURE_SLOWEST) {
        kp_json_object_begin(&j, "slowest");
        kp_json_double(&j, "window_s", c->window_s);
        kp_json_uint(&j, "launches", c->window_launches);
        kp_json_int(&j, "slowest_ns", c->slowest_ns);
        kp_json_uint(&j, "slowest_launch", c->slowest_launch);
        kp_json_object_end(&j);
    }
    kp_json_object_end(&j);
    kprof_status st = kp_json_finish(&j);
    if (st == KPROF_OK && failed) st = KPROF_NOMEM;
    if (st == KPROF_OK) kp_str_append(out, "\n");
    return out->failed ? KPROF_NOMEM : st;
}

kprof_status kp_capture_out_commit(kp_capture_out *o, const kp_capture *c, int replace, char *path,
                                   size_t n, kp_error *err)
{
    const kp_capture *m = c;
    kp_capture *stamped = NULL;
    if (!c->captured_at[0]) {
        stamped = malloc(sizeof *stamped);
        if (!stamped) {
            kp_capture_out_abort(o);
            return kp_error_nomem(err);
        }
        memcpy(stamped, c, sizeof *stamped);
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamped->captured_at, sizeof stamped->captured_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
        m = stamped;
    }
    kp_str missing = {0}, manifest = {0};
    for (int i = 0; i < m->nmissing; i++)
        kp_str_printf(&missing, "%s\n", m->missing[i]);
    kprof_status st = kp_capture_manifest(m, &manifest);
    free(stamped);
    if (st == KPROF_OK && missing.failed) st = KPROF_NOMEM;
    if (st != KPROF_OK) st = kp_error_nomem(err);
    if (st == KPROF_OK)
        st = kp_capture_out_blob(o, "not-captured.txt", missing.data ? missing.data : "",
                                 missing.len, err);
    if (st == KPROF_OK)
        st = kp_capture_out_blob(o, "capture.json", manifest.data, manifest.len, err);
    kp_str_free(&missing);
    kp_str_free(&manifest);
    /* An existing capture is replaced only whole: moved aside, the new one renamed into place,
     * and only then removed (moved back if the rename fails). A symbolic link or anything else
     * that is not a real folder is never replaced (nor followed). */
    struct stat old_st;
    char old[4200] = "";
    if (st == KPROF_OK && lstat(o->final, &old_st) == 0) {
        if (!replace) {
            st = kp_error_set(err, KPROF_INVALID,
                              "capture: %s exists (kprof trace --force replaces it)", o->final);
        } else if (!S_ISDIR(old_st.st_mode)) {
            st = kp_error_set(err, KPROF_INVALID, "capture: %s exists and is not a folder",
                              o->final);
        } else {
            snprintf(old, sizeof old, "%s.old", o->tmp);
            if (rename(o->final, old) != 0) {
                st = kp_capture_io(err, "move aside the earlier capture", o->final, errno);
                old[0] = '\0';
            }
        }
    }
    if (st == KPROF_OK && rename(o->tmp, o->final) != 0) {
        st = kp_capture_io(err, "rename the capture folder to", o->final, errno);
        if (old[0] && rename(old, o->final) == 0) old[0] = '\0'; /* the earlier one is back */
    }
    if (st == KPROF_OK && old[0]) kp_dir_remove(old);
    if (st != KPROF_OK) {
        kp_capture_out_abort(o);
        return st;
    }
    if (path) kp_strlcpy(path, o->final, n);
    free(o);
    return KPROF_OK;
}

/* ---- what became of it --------------------------------------------------------------------- */

void kp_capture_announce(const kp_capture *c, const char *path, const kp_error *failure)
{
    char folder[160];
    kp_capture_folder_name(c->kernel[0] ? c->kernel : c->symbol, c->launch, folder, sizeof folder);
    kp_str line = {0};
    if (path) {
        kp_str_printf_escaped(&line,
                              "kprof: captured %s (launch %llu of %s) in %s; the program was "
                              "held %.1f ms; replay it with `kprof bench %s`\n",
                              folder, (unsigned long long)c->launch, c->kernel, path,
                              (double)c->held_ns / 1e6, folder);
        for (int i = 0; i < c->nmissing; i++)
            kp_str_printf_escaped(&line, "kprof: capture %s: not captured: %s\n", folder,
                                  c->missing[i]);
    } else {
        kp_str_printf_escaped(&line, "kprof: error: capture of %s failed: %s\n", folder,
                              failure && failure->message[0] ? failure->message
                                                             : "unknown failure");
    }
    if (line.data) {
        ssize_t w = write(2, line.data, line.len);
        (void)w;
    }
    kp_str_free(&line);
    const char *dir = getenv(KP_ENV_TRACE_DIR);
    if (!dir || !*dir) return;
    char log[4200];
    snprintf(log, sizeof log, "%s/%s", dir, KP_CAPTURE_LOG_FILE);
    kp_str rec = {0};
    /* Tabs and newlines inside the fields would break the line: the fields are escaped. */
    kp_str_printf_escaped(&rec, "%s\t%s\t%llu\t%lld\t", path ? path : folder, c->kernel,
                          (unsigned long long)c->launch, (long long)c->held_ns);
    if (path)
        kp_str_append(&rec, "ok");
    else
        kp_str_printf_escaped(&rec, "failed: %s",
                              failure && failure->message[0] ? failure->message
                                                             : "unknown failure");
    kp_str_printf(&rec, "\t%d\n", c->nmissing);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd >= 0 && rec.data) {
        ssize_t w = write(fd, rec.data, rec.len);
        (void)w;
    }
    if (fd >= 0) close(fd);
    kp_str_free(&rec);
}
