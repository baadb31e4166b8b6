/*
 * arguments.c — a kernel's arguments in the lab: its signature for messages, a SPEC checked
 * against its parameters (count, buffer or scalar or local memory, element and scalar types,
 * structs and unions passed by value, which kprof cannot fill yet, found from the source and the
 * headers it includes), and the SPEC's buffers filled, written and bound to the kernel.
 */
#define _GNU_SOURCE
#include "lab/lab_internal.h"
#include "base/util.h"
#include "lab/struct_types.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* "a" or "an" before a type's name as it is read aloud: "an i32", "an f32", "a u32". */
static const char *kp_type_article(kp_type t)
{
    const char *name = kp_type_name(t);
    return name[0] == 'i' || name[0] == 'f' ? "an" : "a";
}

/* What to write instead of item a for a parameter whose scalar type is base (OpenCL C
 * spelling, "float"): "; write f32=2 for it" (sep '=') or "; write f32:4096 for it" (sep ':'),
 * the item's own value or count and fill kept. "" when base names no SPEC type. */
static void kp_arg_suggest(const kp_arg_spec *a, const char *base, char sep, char *out, size_t n)
{
    out[0] = '\0';
    kp_type want = KP_TYPE_COUNT;
    for (int t = 0; t < KP_TYPE_COUNT; t++)
        if (base && base[0] && strcmp(base, kp_type_c_name((kp_type)t)) == 0) want = (kp_type)t;
    const char *rest = strchr(a->text, sep);
    if (want == KP_TYPE_COUNT || want == a->type || !rest) return;
    unsigned char value[8];
    if (sep == '=' && kp_value_parse(want, rest + 1, value, NULL) != KPROF_OK) return;
    snprintf(out, n, "; write %s%s for it", kp_type_name(want), rest);
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
            if (base[0] && strcmp(base, kp_type_c_name(a->type)) != 0 &&
                strcmp(base, "half") != 0) {
                char fix[160];
                kp_arg_suggest(a, base, ':', fix, sizeof fix);
                return kp_error_set(err, KPROF_INVALID,
                                    "%s but --buffers item %d '%s' is %s %s (%s) buffer%s\n  %s",
                                    pname, i + 1, a->text, kp_type_article(a->type),
                                    kp_type_name(a->type), kp_type_c_name(a->type), fix, sig);
            }
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
                (p->size && p->size != kp_type_size(a->type))) {
                char fix[160];
                kp_arg_suggest(a, vector ? "" : base, '=', fix, sizeof fix);
                return kp_error_set(err, KPROF_INVALID,
                                    "%s (%u bytes) but --buffers item %d '%s' is %s %s (%zu "
                                    "bytes)%s\n  %s",
                                    pname, p->size, i + 1, a->text, kp_type_article(a->type),
                                    kp_type_name(a->type), kp_type_size(a->type), fix, sig);
            }
            break;
        }
        }
    }
    return KPROF_OK;
}

/* Parameters passed by value whose type is a struct or union become KP_PARAM_STRUCT or
 * KP_PARAM_UNION: backends report only type names, so the name, the source and the headers it
 * includes say which ("struct params", a typedef of one, a C++ class). */
void kp_lab_mark_aggregates(kp_program_meta *meta, const kp_source *src, int is_text)
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
            kp_struct_type what = kp_struct_type_of_name(p->type_name);
            if (!what && is_text)
                what = kp_struct_type_in_source(src->text, src->len, p->type_name);
            if (!what && is_text && !walked) {
                walked = 1;
                kp_lab_walk_source(src, &headers);
            }
            if (!what && headers.len)
                what = kp_struct_type_in_source(headers.data, headers.len, p->type_name);
            if (what) p->kind = what == KP_STRUCT_TYPE_UNION ? KP_PARAM_UNION : KP_PARAM_STRUCT;
        }
    }
    kp_str_free(&headers);
}

/* The SPEC's buffers: filled on the host, written once, and bound to the session's kernel. */
kprof_status kp_lab_bind_buffers(kp_lab *lab, kp_error *err)
{
    kprof_status st = KPROF_OK;
    for (int i = 0; i < lab->spec.count; i++) {
        const kp_arg_spec *a = &lab->spec.args[i];
        if (a->kind != KP_ARG_BUFFER) continue;
        uint64_t bytes = kp_arg_bytes(a);
        lab->info.buffer_bytes += bytes;
        if (lab->info.device.max_alloc && bytes > lab->info.device.max_alloc) {
            char a1[64];
            snprintf(a1, sizeof a1, "%llu", (unsigned long long)bytes);
            return kp_error_set(err, KPROF_NOMEM,
                                "--buffers item %d '%s' needs %s bytes, more than the device's "
                                "largest allocation (%llu bytes)",
                                i + 1, a->text, a1, (unsigned long long)lab->info.device.max_alloc);
        }
        void *host = malloc((size_t)bytes);
        if (!host)
            return kp_error_set(err, KPROF_NOMEM,
                                "--buffers item %d '%s': cannot allocate %llu bytes on the host",
                                i + 1, a->text, (unsigned long long)bytes);
        kp_fill_buffer(host, a->type, a->count, a->fill, a->value, (unsigned)i);
        st = lab->ops->alloc(lab->dev, bytes, &lab->buffers[i], err);
        if (st == KPROF_OK) st = lab->ops->write(lab->buffers[i], host, bytes, err);
        free(host);
        if (st != KPROF_OK) {
            kp_error_append(err, " (--buffers item %d '%s')", i + 1, a->text);
            return st;
        }
    }
    st = lab->ops->bind(lab->kernel, &lab->spec, lab->buffers, err);
    if (st == KPROF_OK) lab->bound = 1;
    return st;
}
