/*
 * capture_read.c — the lab's half of a captured kernel launch (capture.h): reading a capture
 * folder's manifest back (strictly: a replay from a wrong manifest would be a wrong answer), an
 * allocation's saved bytes, and the sentence of the replay's output check. Over cJSON, so it is
 * in kprof's own objects, not the injected library's.
 */
#define _GNU_SOURCE
#include "collect/capture.h"

#include "base/json_file.h"
#include "base/util.h"
#include "core/format.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int kp_capture_is_folder(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/capture.json", dir);
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

typedef struct kp_capture_reader {
    const char *file; /* capture.json's path, for messages */
    kp_error *err;
    kprof_status st;
} kp_capture_reader;

static kprof_status kp_capture_bad(kp_capture_reader *r, const char *field, const char *why)
{
    if (r->st == KPROF_OK)
        r->st = kp_error_set(r->err, KPROF_CORRUPT, "%s: '%s' %s (not a capture kprof wrote?)",
                             r->file, field, why);
    return r->st;
}

static const cJSON *kp_capture_field(kp_capture_reader *r, const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) kp_capture_bad(r, key, "is missing");
    return v;
}

static void kp_capture_str(kp_capture_reader *r, const cJSON *obj, const char *key, char *out,
                           size_t n, int optional)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        if (!optional) kp_capture_bad(r, key, "is missing");
        out[0] = '\0';
        return;
    }
    if (!cJSON_IsString(v)) {
        kp_capture_bad(r, key, "is not a string");
        return;
    }
    if (strlen(v->valuestring) >= n) {
        kp_capture_bad(r, key, "is too long");
        return;
    }
    kp_strlcpy(out, v->valuestring, n);
}

/* A whole number in [lo, hi] (doubles hold integers exactly up to 2^53: every size kprof writes).
 */
static int64_t kp_capture_int(kp_capture_reader *r, const cJSON *obj, const char *key, int64_t lo,
                              int64_t hi, int optional, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        if (!optional) kp_capture_bad(r, key, "is missing");
        return dflt;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d >= (double)lo && d <= (double)hi) || d != (double)(int64_t)d) {
        kp_capture_bad(r, key, "is out of range");
        return dflt;
    }
    return (int64_t)d;
}

static void kp_capture_u64x3_read(kp_capture_reader *r, const cJSON *obj, const char *key,
                                  uint64_t out[3], int64_t lo)
{
    const cJSON *v = kp_capture_field(r, obj, key);
    if (!v) return;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 3) {
        kp_capture_bad(r, key, "is not an array of 3 numbers");
        return;
    }
    for (int d = 0; d < 3; d++) {
        const cJSON *e = cJSON_GetArrayItem(v, d);
        double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(x >= (double)lo && x <= 9007199254740992.0) || x != (double)(uint64_t)x) {
            kp_capture_bad(r, key, "holds a value out of range");
            return;
        }
        out[d] = (uint64_t)x;
    }
}

static int kp_capture_hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A file the manifest names: a plain name in the folder, present, of `bytes` bytes (-1: any). */
static void kp_capture_check_file(kp_capture_reader *r, const char *dir, const char *field,
                                  const char *name, int64_t bytes)
{
    if (r->st != KPROF_OK) return;
    if (!name[0] || strchr(name, '/') || name[0] == '.') {
        kp_capture_bad(r, field, "is not a file name in the folder");
        return;
    }
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        r->st =
            kp_error_set(r->err, KPROF_CORRUPT, "%s: names %s, which is missing", r->file, path);
        return;
    }
    if (bytes >= 0 && st.st_size != bytes)
        r->st = kp_error_set(r->err, KPROF_CORRUPT,
                             "%s has %lld bytes where the capture says %lld (the folder was "
                             "changed or cut short)",
                             path, (long long)st.st_size, (long long)bytes);
}

kprof_status kp_capture_read(const char *dir, kp_capture *c, kp_error *err)
{
    kp_capture_init(c);
    char file[4200];
    snprintf(file, sizeof file, "%s/capture.json", dir);
    cJSON *root = NULL;
    kprof_status st =
        kp_json_file_read(file, "a capture.json from `kprof trace --capture`", &root, err);
    if (st != KPROF_OK) return st;
    kp_capture_reader r = {file, err, KPROF_OK};
    if (!cJSON_IsObject(root))
        kp_capture_bad(&r, "kprof_capture", "is missing");
    else if (kp_capture_int(&r, root, "kprof_capture", 1, 1, 0, 0) != 1 && r.st == KPROF_OK)
        kp_capture_bad(&r, "kprof_capture", "is not version 1");
    if (r.st != KPROF_OK) goto done;
    kp_capture_str(&r, root, "api", c->api, sizeof c->api, 0);
    if (r.st == KPROF_OK && strcmp(c->api, "cuda") != 0 && strcmp(c->api, "opencl") != 0)
        kp_capture_bad(&r, "api", "is neither cuda nor opencl");
    kp_capture_str(&r, root, "kernel", c->kernel, sizeof c->kernel, 0);
    kp_capture_str(&r, root, "symbol", c->symbol, sizeof c->symbol, 0);
    if (r.st == KPROF_OK && !c->symbol[0]) kp_capture_bad(&r, "symbol", "is empty");
    c->launch = (uint64_t)kp_capture_int(&r, root, "launch", 1, INT64_MAX / 2, 0, 1);
    char sel[16] = "";
    kp_capture_str(&r, root, "selector", sel, sizeof sel, 1);
    c->select = strcmp(sel, "slowest") == 0 ? KP_CAPTURE_SLOWEST
                : strcmp(sel, "N") == 0     ? KP_CAPTURE_NTH
                                            : KP_CAPTURE_FIRST;
    kp_capture_str(&r, root, "device", c->device, sizeof c->device, 1);
    kp_capture_str(&r, root, "command", c->command, sizeof c->command, 1);
    c->pid = kp_capture_int(&r, root, "pid", 0, INT32_MAX, 1, 0);
    kp_capture_str(&r, root, "captured_at", c->captured_at, sizeof c->captured_at, 1);
    c->held_ns = kp_capture_int(&r, root, "held_ns", 0, INT64_MAX / 2, 1, 0);
    c->after = (int)kp_capture_int(&r, root, "after", 0, 1, 1, 1);
    if (r.st != KPROF_OK) goto done;

    const cJSON *code = kp_capture_field(&r, root, "code");
    if (code) {
        kp_capture_str(&r, code, "kind", c->code_kind, sizeof c->code_kind, 0);
        kp_capture_str(&r, code, "file", c->code_file, sizeof c->code_file, 0);
        kp_capture_str(&r, code, "build_options", c->build_options, sizeof c->build_options, 1);
        static const char *const kinds[] = {"cubin", "fatbin", "ptx", "opencl-source",
                                            "opencl-binary"};
        int known = 0;
        for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
            known |= strcmp(c->code_kind, kinds[i]) == 0;
        if (r.st == KPROF_OK && !known) kp_capture_bad(&r, "code.kind", "is not a code kind");
        kp_capture_check_file(&r, dir, "code.file", c->code_file, -1);
    }
    const cJSON *geo = kp_capture_field(&r, root, "geometry");
    if (geo) {
        c->dims = (int)kp_capture_int(&r, geo, "dims", 1, 3, 0, 1);
        kp_capture_u64x3_read(&r, geo, "grid", c->grid, 1);
        kp_capture_u64x3_read(&r, geo, "tg", c->tg, 0);
        kp_capture_u64x3_read(&r, geo, "offset", c->offset, 0);
        c->dynamic_smem = (uint64_t)kp_capture_int(&r, geo, "dynamic_smem", 0, INT32_MAX, 1, 0);
    }
    const cJSON *attr = cJSON_GetObjectItemCaseSensitive(root, "attributes");
    if (cJSON_IsObject(attr)) {
        c->registers = kp_capture_int(&r, attr, "registers", 0, INT32_MAX, 1, -1);
        c->static_smem = kp_capture_int(&r, attr, "static_smem", 0, INT32_MAX, 1, -1);
        c->local_bytes = kp_capture_int(&r, attr, "local_bytes", 0, INT32_MAX, 1, -1);
        c->max_threads = kp_capture_int(&r, attr, "max_threads", 0, INT32_MAX, 1, -1);
        c->const_bytes = kp_capture_int(&r, attr, "const_bytes", 0, INT32_MAX, 1, -1);
    }
    if (r.st != KPROF_OK) goto done;

    const cJSON *allocs = kp_capture_field(&r, root, "allocs");
    if (allocs && !cJSON_IsArray(allocs)) kp_capture_bad(&r, "allocs", "is not an array");
    if (r.st != KPROF_OK) goto done;
    if (cJSON_GetArraySize(allocs) > KP_CAPTURE_MAX_ALLOCS) {
        kp_capture_bad(&r, "allocs", "holds more allocations than kprof captures");
        goto done;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, allocs)
    {
        kp_capture_alloc *a = &c->allocs[c->nallocs];
        a->bytes = (uint64_t)kp_capture_int(&r, e, "bytes", 0, INT64_MAX / 2, 0, 0);
        /* Below 2^63 (INT64_MAX as a double is 2^63 itself, which no int64_t holds). */
        a->address = (uint64_t)kp_capture_int(&r, e, "address", 0, INT64_MAX / 2, 1, 0);
        a->arg = (int)kp_capture_int(&r, e, "arg", -1, KP_CAPTURE_MAX_ARGS, 1, -1);
        kp_capture_str(&r, e, "name", a->name, sizeof a->name, 1);
        kp_capture_str(&r, e, "before", a->before, sizeof a->before, 1);
        kp_capture_str(&r, e, "after", a->after, sizeof a->after, 1);
        if (a->before[0]) kp_capture_check_file(&r, dir, "before", a->before, (int64_t)a->bytes);
        if (a->after[0]) kp_capture_check_file(&r, dir, "after", a->after, (int64_t)a->bytes);
        if (r.st != KPROF_OK) goto done;
        if (!a->name[0]) snprintf(a->name, sizeof a->name, "alloc%d", c->nallocs);
        c->nallocs++;
    }

    const cJSON *args = kp_capture_field(&r, root, "args");
    if (args && !cJSON_IsArray(args)) kp_capture_bad(&r, "args", "is not an array");
    if (r.st != KPROF_OK) goto done;
    if (cJSON_GetArraySize(args) > KP_CAPTURE_MAX_ARGS) {
        kp_capture_bad(&r, "args", "holds more arguments than kprof captures");
        goto done;
    }
    cJSON_ArrayForEach(e, args)
    {
        kp_capture_arg *a = &c->args[c->nargs];
        memset(a, 0, sizeof *a);
        a->alloc = -1;
        a->size = (uint32_t)kp_capture_int(&r, e, "size", 0, KP_CAPTURE_MAX_ARG_SIZE, 0, 0);
        char kind[16] = "";
        kp_capture_str(&r, e, "kind", kind, sizeof kind, 0);
        if (r.st != KPROF_OK) goto done;
        if (strcmp(kind, "value") == 0) {
            a->kind = KP_CAPTURE_VALUE;
            const cJSON *h = cJSON_GetObjectItemCaseSensitive(e, "hex");
            if (!cJSON_IsString(h) || strlen(h->valuestring) != 2 * (size_t)a->size) {
                kp_capture_bad(&r, "args.hex", "is not the argument's size in hex digits");
                goto done;
            }
            a->bytes = malloc(a->size ? a->size : 1);
            if (!a->bytes) {
                r.st = kp_error_nomem(err);
                goto done;
            }
            c->nargs++; /* owned from here: kp_capture_release frees it */
            for (uint32_t i = 0; i < a->size; i++) {
                int hi = kp_capture_hexval(h->valuestring[2 * i]);
                int lo = kp_capture_hexval(h->valuestring[2 * i + 1]);
                if (hi < 0 || lo < 0) {
                    kp_capture_bad(&r, "args.hex", "holds a character that is not a hex digit");
                    goto done;
                }
                a->bytes[i] = (unsigned char)(hi << 4 | lo);
            }
            continue;
        }
        if (strcmp(kind, "mem") == 0) {
            a->kind = KP_CAPTURE_MEM;
            a->alloc = (int)kp_capture_int(&r, e, "alloc", 0, c->nallocs - 1, 0, -1);
        } else if (strcmp(kind, "local") == 0) {
            a->kind = KP_CAPTURE_LOCAL;
        } else {
            kp_capture_bad(&r, "args.kind", "is not value, mem or local");
        }
        if (r.st != KPROF_OK) goto done;
        c->nargs++;
    }

    const cJSON *ptrs = cJSON_GetObjectItemCaseSensitive(root, "pointers");
    if (ptrs && !cJSON_IsArray(ptrs)) kp_capture_bad(&r, "pointers", "is not an array");
    if (r.st != KPROF_OK) goto done;
    if (cJSON_GetArraySize(ptrs) > KP_CAPTURE_MAX_POINTERS) {
        kp_capture_bad(&r, "pointers", "holds more pointers than kprof captures");
        goto done;
    }
    cJSON_ArrayForEach(e, ptrs)
    {
        kp_capture_ptr *p = &c->ptrs[c->nptrs];
        p->arg = (uint32_t)kp_capture_int(&r, e, "arg", 0, c->nargs - 1, 0, 0);
        p->at = (uint32_t)kp_capture_int(&r, e, "at", 0, KP_CAPTURE_MAX_ARG_SIZE, 0, 0);
        p->alloc = (uint32_t)kp_capture_int(&r, e, "alloc", 0, c->nallocs - 1, 0, 0);
        p->offset = (uint64_t)kp_capture_int(&r, e, "offset", 0, INT64_MAX / 2, 0, 0);
        if (r.st != KPROF_OK) goto done;
        const kp_capture_arg *a = &c->args[p->arg];
        if (a->kind != KP_CAPTURE_VALUE || (uint64_t)p->at + 8 > a->size) {
            kp_capture_bad(&r, "pointers.at", "is not an 8-byte word inside a value argument");
            goto done;
        }
        if (p->offset > c->allocs[p->alloc].bytes) {
            kp_capture_bad(&r, "pointers.offset", "lies outside its allocation");
            goto done;
        }
        c->nptrs++;
    }
    const cJSON *miss = cJSON_GetObjectItemCaseSensitive(root, "not_captured");
    if (cJSON_IsArray(miss)) {
        cJSON_ArrayForEach(e, miss)
        {
            if (cJSON_IsString(e) && c->nmissing < KP_CAPTURE_MAX_MISSING)
                kp_strlcpy(c->missing[c->nmissing++], e->valuestring, sizeof c->missing[0]);
        }
    }
    const cJSON *slow = cJSON_GetObjectItemCaseSensitive(root, "slowest");
    if (cJSON_IsObject(slow)) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(slow, "window_s");
        c->window_s = cJSON_IsNumber(w) ? w->valuedouble : 0;
        c->window_launches = (uint64_t)kp_capture_int(&r, slow, "launches", 0, INT64_MAX / 2, 1, 0);
        c->slowest_ns = kp_capture_int(&r, slow, "slowest_ns", 0, INT64_MAX / 2, 1, 0);
        c->slowest_launch =
            (uint64_t)kp_capture_int(&r, slow, "slowest_launch", 0, INT64_MAX / 2, 1, 0);
    }
done:
    cJSON_Delete(root);
    if (r.st != KPROF_OK) kp_capture_release(c);
    return r.st;
}

kprof_status kp_capture_read_state(const char *dir, const kp_capture *c, int j, int after,
                                   void **out, kp_error *err)
{
    *out = NULL;
    const kp_capture_alloc *a = &c->allocs[j];
    const char *name = after ? a->after : a->before;
    if (!name[0])
        return kp_error_set(err, KPROF_NOT_FOUND, "the capture holds no %s-state of '%s'",
                            after ? "after" : "before", a->name);
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return kp_error_set(err, KPROF_IO, "cannot read %s: %s", path, strerror(errno));
    void *buf = malloc(a->bytes ? (size_t)a->bytes : 1);
    if (!buf) {
        fclose(f);
        return kp_error_set(err, KPROF_NOMEM, "cannot allocate %" PRIu64 " bytes to read %s",
                            a->bytes, path);
    }
    size_t got = a->bytes ? fread(buf, 1, (size_t)a->bytes, f) : 0;
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != a->bytes || extra) {
        free(buf);
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s is not the %" PRIu64 " bytes the capture says (the folder was "
                            "changed or cut short)",
                            path, a->bytes);
    }
    *out = buf;
    return KPROF_OK;
}

uint64_t kp_capture_diff_bytes(const void *got, const void *want, uint64_t n)
{
    const unsigned char *a = got, *b = want;
    uint64_t d = 0;
    for (uint64_t i = 0; i < n; i++)
        d += a[i] != b[i];
    return d;
}

void kp_capture_check_text(const kp_capture *c, const kp_capture_check *k, char *buf, size_t n)
{
    char size[32];
    kp_format_bytes(k->bytes, size, sizeof size);
    if (!k->have) {
        snprintf(buf, n, "no after-state was captured: the replay's output is not checked");
    } else if (k->differing == 0) {
        snprintf(buf, n, "replay reproduces the program's output: %s identical", size);
    } else {
        const char *name = k->worst >= 0 && k->worst < c->nallocs ? c->allocs[k->worst].name : "?";
        snprintf(buf, n,
                 "replay differs from the program's output in %llu bytes of '%s' (%llu in all, of "
                 "%s): atomics or non-determinism?",
                 (unsigned long long)k->worst_bytes, name, (unsigned long long)k->differing, size);
    }
}
