/*
 * kernel_cache.c — the on-disk cache of compiled kernels (see kernel_cache.h).
 *
 * The .meta file starts with "kprof-cache 1 <binary bytes> <binary FNV-1a 64, hex>", checked
 * before the binary is handed to a runtime (which trusts the sizes inside it), then holds the
 * program's metadata, one record per line:
 *   kprof-meta 3
 *   kernel <nparams> <symbol> <name, rest of line: may hold spaces>
 *   tg <rule> <x> <y> <z>          (only when the kernel declares a threadgroup rule)
 *   param <kind> <size> <name or -> <type name, rest of line or ->
 */
#define _GNU_SOURCE
#include "lab/kernel_cache.h"
#include "base/env.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *kp_cache_dir(char *buf, size_t n)
{
    const char *dir = getenv(KP_ENV_CACHE_DIR);
    if (dir && *dir) {
        snprintf(buf, n, "%s", dir);
        return buf;
    }
    dir = getenv("XDG_CACHE_HOME");
    if (dir && *dir) {
        snprintf(buf, n, "%s/kprof", dir);
        return buf;
    }
    dir = getenv("HOME");
    if (dir && *dir) {
        snprintf(buf, n, "%s/.cache/kprof", dir);
        return buf;
    }
    return NULL;
}

uint64_t kp_cache_key(const kp_device_info *dev, const kp_source *src)
{
    uint64_t h = kp_hash64_str(KP_HASH_SEED, "kprof-cache-1 " KPROF_VERSION_STRING);
    h = kp_hash64_str(h, dev->backend);
    h = kp_hash64_str(h, dev->name);
    h = kp_hash64_str(h, dev->driver);
    h = kp_hash64_str(h, dev->platform);
    h = kp_hash64_str(h, dev->version);
    h = kp_hash64(h, &src->lang, sizeof src->lang);
    h = kp_hash64_str(h, src->options);
    /* CUDA registers the entry as a name expression, which changes the build; and NVRTC names
     * the source by its path in the binary's line info (what --source maps PCs to), so a copy
     * of the text under another path is another build. */
    h = kp_hash64_str(h, src->lang == KP_LANG_CUDA ? src->entry : "");
    h = kp_hash64_str(h, src->lang == KP_LANG_CUDA ? src->path : "");
    h = kp_hash64(h, &src->includes_hash, sizeof src->includes_hash);
    return kp_hash64(h, src->text, src->len);
}

/* The entry's two paths. KPROF_IO when no cache folder can be named, KPROF_INVALID when a path
 * does not fit (err filled either way). */
static kprof_status kp_cache_paths(const char *backend, uint64_t key, char *bin, char *meta,
                                   size_t n, kp_error *err)
{
    char dir[4096];
    if (!kp_cache_dir(dir, sizeof dir))
        return kp_error_set(err, KPROF_IO,
                            "the kernel cache: no folder can be named (set %s, XDG_CACHE_HOME "
                            "or HOME)",
                            KP_ENV_CACHE_DIR);
    int a = snprintf(bin, n, "%s/%s/%016llx.bin", dir, backend, (unsigned long long)key);
    int b = snprintf(meta, n, "%s/%s/%016llx.meta", dir, backend, (unsigned long long)key);
    if (a < 0 || (size_t)a >= n || b < 0 || (size_t)b >= n)
        return kp_error_set(err, KPROF_INVALID, "the kernel cache: the folder %s is too long", dir);
    return KPROF_OK;
}

char *kp_meta_serialize(const kp_program_meta *meta)
{
    kp_str s = {0};
    kp_str_append(&s, "kprof-meta 3\n");
    for (int i = 0; i < meta->nkernels; i++) {
        const kp_kernel_meta *k = &meta->kernels[i];
        kp_str_printf(&s, "kernel %d %s %s\n", k->nparams, k->symbol, k->name);
        if (k->tg_rule != KP_TG_RULE_NONE)
            kp_str_printf(&s, "tg %d %llu %llu %llu\n", (int)k->tg_rule,
                          (unsigned long long)k->tg_rule_size[0],
                          (unsigned long long)k->tg_rule_size[1],
                          (unsigned long long)k->tg_rule_size[2]);
        for (int j = 0; j < k->nparams && k->params; j++) {
            const kp_param *p = &k->params[j];
            kp_str_printf(&s, "param %d %u %s %s\n", (int)p->kind, p->size,
                          p->name[0] ? p->name : "-", p->type_name[0] ? p->type_name : "-");
        }
    }
    return kp_str_take(&s);
}

kprof_status kp_meta_parse(const char *text, kp_program_meta *meta, kp_error *err)
{
    memset(meta, 0, sizeof *meta);
    if (strncmp(text, "kprof-meta 3\n", 13) != 0)
        return kp_error_set(err, KPROF_CORRUPT,
                            "kernel metadata: no \"kprof-meta 3\" line first (another version, "
                            "or damaged)");
    int cap = 0, lineno = 1;
    const char *line = text + 13;
    kp_kernel_meta *cur = NULL;
    int nparam = 0;
    while (*line) {
        const char *eol = strchr(line, '\n');
        if (!eol) goto fail; /* every record ends with a newline: a cut file is damaged */
        char buf[2048];
        size_t len = (size_t)(eol - line);
        if (len >= sizeof buf) goto fail;
        memcpy(buf, line, len);
        buf[len] = '\0';
        line = eol + 1;
        lineno++;
        if (strncmp(buf, "kernel ", 7) == 0) {
            if (cur && nparam != cur->nparams && cur->nparams >= 0) goto fail;
            if (meta->nkernels == cap) {
                cap = cap ? cap * 2 : 8;
                kp_kernel_meta *k = realloc(meta->kernels, (size_t)cap * sizeof *k);
                if (!k) goto nomem;
                meta->kernels = k;
            }
            cur = &meta->kernels[meta->nkernels++];
            memset(cur, 0, sizeof *cur);
            int consumed = 0;
            if (sscanf(buf, "kernel %d %1023s %n", &cur->nparams, cur->symbol, &consumed) != 2 ||
                consumed == 0 || !buf[consumed])
                goto fail;
            kp_strlcpy(cur->name, buf + consumed, sizeof cur->name);
            if (cur->nparams > KP_SPEC_MAX_ARGS * 16) goto fail;
            if (cur->nparams > 0) {
                cur->params = calloc((size_t)cur->nparams, sizeof *cur->params);
                if (!cur->params) goto nomem;
            }
            nparam = 0;
        } else if (strncmp(buf, "tg ", 3) == 0) {
            if (!cur || nparam != 0 || cur->tg_rule != KP_TG_RULE_NONE) goto fail;
            int rule = 0, consumed = 0;
            unsigned long long v[3];
            if (sscanf(buf, "tg %d %llu %llu %llu%n", &rule, &v[0], &v[1], &v[2], &consumed) != 4 ||
                buf[consumed] || rule <= KP_TG_RULE_NONE || rule > KP_TG_RULE_MAX)
                goto fail;
            for (int d = 0; d < 3; d++) {
                if (v[d] == 0 || v[d] > (1ULL << 32)) goto fail;
                cur->tg_rule_size[d] = v[d];
            }
            cur->tg_rule = (kp_tg_rule)rule;
        } else if (strncmp(buf, "param ", 6) == 0) {
            if (!cur || nparam >= cur->nparams) goto fail;
            kp_param *p = &cur->params[nparam];
            int kind = 0, consumed = 0;
            unsigned size = 0;
            if (sscanf(buf, "param %d %u %63s %n", &kind, &size, p->name, &consumed) != 3 ||
                consumed == 0)
                goto fail;
            if (kind < KP_PARAM_UNKNOWN || kind > KP_PARAM_OPAQUE) goto fail;
            p->kind = (kp_param_kind)kind;
            p->size = size;
            kp_strlcpy(p->type_name, buf + consumed, sizeof p->type_name);
            if (strcmp(p->name, "-") == 0) p->name[0] = '\0';
            if (strcmp(p->type_name, "-") == 0) p->type_name[0] = '\0';
            nparam++;
        } else {
            goto fail;
        }
    }
    if (cur && cur->nparams >= 0 && nparam != cur->nparams) goto fail;
    return KPROF_OK;
nomem:
    kp_program_meta_free(meta);
    return kp_error_nomem(err);
fail:
    kp_program_meta_free(meta);
    return kp_error_set(err, KPROF_CORRUPT, "kernel metadata: line %d is damaged", lineno);
}

int kp_cache_get(const char *backend, uint64_t key, unsigned char **binary, size_t *len,
                 kp_program_meta *meta)
{
    char bin_path[4200], meta_path[4200];
    *binary = NULL;
    *len = 0;
    memset(meta, 0, sizeof *meta);
    if (kp_cache_paths(backend, key, bin_path, meta_path, sizeof bin_path, NULL) != KPROF_OK)
        return -1;
    char *text = NULL, *bin = NULL;
    size_t n = 0;
    if (kp_file_read(meta_path, &text, NULL, NULL) != KPROF_OK) return -1;
    unsigned long long want_len = 0, want_hash = 0;
    int consumed = 0;
    int bad = sscanf(text, "kprof-cache 1 %llu %llx\n%n", &want_len, &want_hash, &consumed) != 2 ||
              consumed == 0 || kp_meta_parse(text + consumed, meta, NULL) != KPROF_OK;
    free(text);
    if (bad) return -1;
    if (kp_file_read(bin_path, &bin, &n, NULL) != KPROF_OK || n == 0 || n != want_len ||
        kp_hash64(KP_HASH_SEED, bin, n) != want_hash) {
        free(bin);
        kp_program_meta_free(meta);
        return -1;
    }
    *binary = (unsigned char *)bin;
    *len = n;
    return 0;
}

kprof_status kp_cache_put(const char *backend, uint64_t key, const unsigned char *binary,
                          size_t len, const kp_program_meta *meta, kp_error *err)
{
    char bin_path[4200], meta_path[4200], dir[4096];
    if (!binary || len == 0)
        return kp_error_set(err, KPROF_INVALID, "the kernel cache: no binary to keep");
    kprof_status st = kp_cache_paths(backend, key, bin_path, meta_path, sizeof bin_path, err);
    if (st != KPROF_OK) return st;
    /* kp_cache_paths named the folder: kp_cache_dir gives it again. */
    kp_cache_dir(dir, sizeof dir);
    size_t dl = strlen(dir);
    snprintf(dir + dl, sizeof dir - dl, "/%s", backend);
    st = kp_mkdir_p(dir, err);
    if (st != KPROF_OK) return st;
    char *body = kp_meta_serialize(meta);
    if (!body) return kp_error_nomem(err);
    kp_str text = {0};
    kp_str_printf(&text, "kprof-cache 1 %zu %016llx\n%s", len,
                  (unsigned long long)kp_hash64(KP_HASH_SEED, binary, len), body);
    free(body);
    if (text.failed) {
        kp_str_free(&text);
        return kp_error_nomem(err);
    }
    /* Binary first, metadata last: a reader that finds the metadata finds a whole binary, and
     * checks its length and hash anyway. */
    st = kp_file_write_atomic(bin_path, binary, len, err);
    if (st == KPROF_OK) st = kp_file_write_atomic(meta_path, text.data, text.len, err);
    kp_str_free(&text);
    return st;
}
