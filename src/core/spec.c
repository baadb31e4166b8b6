/*
 * spec.c — parsing of the `--buffers` SPEC, element types and the deterministic fill.
 */
#include "core/spec.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
    const char *c_name;
} kp_types[] = {
#define KP_TYPE_ROW_(e, name, size, cl) {name, size, cl},
    KP_TYPE_LIST(KP_TYPE_ROW_)
#undef KP_TYPE_ROW_
};

size_t kp_type_size(kp_type t)
{
    return (unsigned)t < KP_TYPE_COUNT ? kp_types[t].size : 0;
}

const char *kp_type_name(kp_type t)
{
    return (unsigned)t < KP_TYPE_COUNT ? kp_types[t].name : "?";
}

const char *kp_type_c_name(kp_type t)
{
    return (unsigned)t < KP_TYPE_COUNT ? kp_types[t].c_name : "?";
}

int kp_type_is_float(kp_type t)
{
    return t == KP_TYPE_F32 || t == KP_TYPE_F64;
}

int kp_type_is_signed(kp_type t)
{
    return t == KP_TYPE_I8 || t == KP_TYPE_I16 || t == KP_TYPE_I32 || t == KP_TYPE_I64;
}

int kp_type_parse(const char *name, kp_type *t)
{
    for (int i = 0; i < KP_TYPE_COUNT; i++) {
        if (strcmp(name, kp_types[i].name) == 0) {
            *t = (kp_type)i;
            return 0;
        }
    }
    return -1;
}

uint64_t kp_arg_bytes(const kp_arg_spec *arg)
{
    return arg->kind == KP_ARG_BUFFER ? arg->count * kp_type_size(arg->type) : 0;
}

/* Integer ranges per type, for range checks of scalar values and constants. */
static void kp_type_range(kp_type t, int64_t *lo, uint64_t *hi)
{
    switch (t) {
    case KP_TYPE_I8:
        *lo = INT8_MIN;
        *hi = INT8_MAX;
        break;
    case KP_TYPE_U8:
        *lo = 0;
        *hi = UINT8_MAX;
        break;
    case KP_TYPE_I16:
        *lo = INT16_MIN;
        *hi = INT16_MAX;
        break;
    case KP_TYPE_U16:
        *lo = 0;
        *hi = UINT16_MAX;
        break;
    case KP_TYPE_I32:
        *lo = INT32_MIN;
        *hi = INT32_MAX;
        break;
    case KP_TYPE_U32:
        *lo = 0;
        *hi = UINT32_MAX;
        break;
    case KP_TYPE_I64:
        *lo = INT64_MIN;
        *hi = INT64_MAX;
        break;
    default:
        *lo = 0;
        *hi = UINT64_MAX;
        break;
    }
}

static void kp_store_int(kp_type t, uint64_t bits, unsigned char out[8])
{
    memset(out, 0, 8);
    switch (kp_type_size(t)) {
    case 1: {
        uint8_t v = (uint8_t)bits;
        memcpy(out, &v, 1);
        break;
    }
    case 2: {
        uint16_t v = (uint16_t)bits;
        memcpy(out, &v, 2);
        break;
    }
    case 4: {
        uint32_t v = (uint32_t)bits;
        memcpy(out, &v, 4);
        break;
    }
    default:
        memcpy(out, &bits, 8);
        break;
    }
}

kprof_status kp_value_parse(kp_type t, const char *text, unsigned char out[8], kp_error *err)
{
    memset(out, 0, 8);
    if (!*text) return kp_error_set(err, KPROF_INVALID, "empty value");
    if (isspace((unsigned char)text[0]))
        return kp_error_set(err, KPROF_INVALID, "'%s' starts with a space", text);
    char *end = NULL;
    errno = 0;
    if (kp_type_is_float(t)) {
        double v = strtod(text, &end);
        if (*end || end == text)
            return kp_error_set(err, KPROF_INVALID, "'%s' is not a number", text);
        if (errno == ERANGE && (v > 1 || v < -1))
            return kp_error_set(err, KPROF_INVALID, "'%s' is out of range for %s", text,
                                kp_type_name(t));
        if (t == KP_TYPE_F32) {
            if (isfinite(v) && fabs(v) > FLT_MAX)
                return kp_error_set(err, KPROF_INVALID, "'%s' is out of range for f32", text);
            float f = (float)v;
            memcpy(out, &f, 4);
        } else {
            memcpy(out, &v, 8);
        }
        return KPROF_OK;
    }
    int64_t lo;
    uint64_t hi;
    kp_type_range(t, &lo, &hi);
    if (kp_type_is_signed(t)) {
        long long v = strtoll(text, &end, 0);
        if (*end || end == text)
            return kp_error_set(err, KPROF_INVALID, "'%s' is not an integer", text);
        if (errno == ERANGE || v < lo || (v > 0 && (uint64_t)v > hi))
            return kp_error_set(err, KPROF_INVALID, "'%s' is out of range for %s", text,
                                kp_type_name(t));
        kp_store_int(t, (uint64_t)v, out);
    } else {
        if (text[0] == '-')
            return kp_error_set(err, KPROF_INVALID, "'%s' is negative but %s is unsigned", text,
                                kp_type_name(t));
        unsigned long long v = strtoull(text, &end, 0);
        if (*end || end == text)
            return kp_error_set(err, KPROF_INVALID, "'%s' is not an integer", text);
        if (errno == ERANGE || v > hi)
            return kp_error_set(err, KPROF_INVALID, "'%s' is out of range for %s", text,
                                kp_type_name(t));
        kp_store_int(t, v, out);
    }
    return KPROF_OK;
}

double kp_value_as_double(kp_type t, const void *base, uint64_t i)
{
    const unsigned char *p = (const unsigned char *)base + i * kp_type_size(t);
    switch (t) {
    case KP_TYPE_F32: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    case KP_TYPE_F64: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    case KP_TYPE_I8: {
        int8_t v;
        memcpy(&v, p, 1);
        return v;
    }
    case KP_TYPE_U8: {
        uint8_t v;
        memcpy(&v, p, 1);
        return v;
    }
    case KP_TYPE_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case KP_TYPE_U16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case KP_TYPE_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case KP_TYPE_U32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case KP_TYPE_I64: {
        int64_t v;
        memcpy(&v, p, 8);
        return (double)v;
    }
    case KP_TYPE_U64: {
        uint64_t v;
        memcpy(&v, p, 8);
        return (double)v;
    }
    default:
        return 0;
    }
}

static kprof_status kp_spec_item(char *item, int pos, kp_arg_spec *a, kp_error *err)
{
    kp_error why = {0};
    memset(a, 0, sizeof *a);
    kp_strlcpy(a->text, item, sizeof a->text);
    if (!*item)
        return kp_error_set(err, KPROF_INVALID,
                            "--buffers item %d is empty (two commas in a row, or a trailing comma)",
                            pos);
    char *eq = strchr(item, '=');
    char *colon = strchr(item, ':');
    if (eq && (!colon || eq < colon)) {
        /* TYPE=VALUE */
        *eq = '\0';
        if (kp_type_parse(item, &a->type) != 0)
            return kp_error_set(err, KPROF_INVALID,
                                "--buffers item %d '%s': unknown type '%s' (types: f32 f64 i8 u8 "
                                "i16 u16 i32 u32 i64 u64)",
                                pos, a->text, item);
        if (kp_value_parse(a->type, eq + 1, a->value, &why) != KPROF_OK)
            return kp_error_set(err, KPROF_INVALID, "--buffers item %d '%s': %s", pos, a->text,
                                why.message);
        a->kind = KP_ARG_SCALAR;
        return KPROF_OK;
    }
    if (!colon)
        return kp_error_set(err, KPROF_INVALID,
                            "--buffers item %d '%s': expected TYPE:COUNT[:FILL], TYPE=VALUE or "
                            "local:BYTES",
                            pos, a->text);
    *colon = '\0';
    char *rest = colon + 1;
    if (strcmp(item, "local") == 0) {
        if (kp_parse_size(rest, &a->local_bytes) != 0 || a->local_bytes == 0)
            return kp_error_set(err, KPROF_INVALID,
                                "--buffers item %d '%s': local memory needs a positive byte count",
                                pos, a->text);
        a->kind = KP_ARG_LOCAL;
        return KPROF_OK;
    }
    if (kp_type_parse(item, &a->type) != 0)
        return kp_error_set(err, KPROF_INVALID,
                            "--buffers item %d '%s': unknown type '%s' (types: f32 f64 i8 u8 i16 "
                            "u16 i32 u32 i64 u64, or local)",
                            pos, a->text, item);
    char *fill = strchr(rest, ':');
    if (fill) *fill++ = '\0';
    if (kp_parse_size(rest, &a->count) != 0)
        return kp_error_set(err, KPROF_INVALID,
                            "--buffers item %d '%s': count '%s' is not a whole number", pos,
                            a->text, rest);
    if (a->count == 0)
        return kp_error_set(err, KPROF_INVALID, "--buffers item %d '%s': count must be at least 1",
                            pos, a->text);
    if (a->count > UINT64_MAX / 8)
        return kp_error_set(err, KPROF_INVALID, "--buffers item %d '%s': count is too large", pos,
                            a->text);
    a->kind = KP_ARG_BUFFER;
    a->fill = KP_FILL_RAND;
    if (!fill) return KPROF_OK;
    if (strcmp(fill, "rand") == 0)
        a->fill = KP_FILL_RAND;
    else if (strcmp(fill, "zero") == 0)
        a->fill = KP_FILL_ZERO;
    else if (strcmp(fill, "iota") == 0)
        a->fill = KP_FILL_IOTA;
    else if (strncmp(fill, "const=", 6) == 0) {
        a->fill = KP_FILL_CONST;
        if (kp_value_parse(a->type, fill + 6, a->value, &why) != KPROF_OK)
            return kp_error_set(err, KPROF_INVALID, "--buffers item %d '%s': fill constant %s", pos,
                                a->text, why.message);
    } else {
        return kp_error_set(err, KPROF_INVALID,
                            "--buffers item %d '%s': unknown fill '%s' (fills: rand zero iota "
                            "const=V)",
                            pos, a->text, fill);
    }
    return KPROF_OK;
}

kprof_status kp_spec_parse(const char *text, kp_spec *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    if (!text || !*text)
        return kp_error_set(err, KPROF_INVALID,
                            "--buffers is empty: give one item per kernel "
                            "argument, e.g. f32:1048576,f32:1048576");
    size_t len = strlen(text);
    char *copy = malloc(len + 1);
    if (!copy) return kp_error_set(err, KPROF_NOMEM, "out of memory parsing --buffers");
    memcpy(copy, text, len + 1);
    kprof_status st = KPROF_OK;
    char *p = copy;
    int pos = 0;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        pos++;
        if (out->count >= KP_SPEC_MAX_ARGS) {
            st = kp_error_set(err, KPROF_INVALID, "--buffers has more than %d items",
                              KP_SPEC_MAX_ARGS);
            break;
        }
        /* Surrounding spaces are forgiven ("f32:4, f32:4"). */
        while (isspace((unsigned char)*p))
            p++;
        kp_rstrip(p);
        st = kp_spec_item(p, pos, &out->args[out->count], err);
        if (st != KPROF_OK) break;
        out->count++;
        if (!comma) break;
        p = comma + 1;
    }
    free(copy);
    return st;
}

void kp_fill_buffer(void *dst, kp_type t, uint64_t count, kp_fill fill,
                    const unsigned char value[8], unsigned index)
{
    size_t size = kp_type_size(t);
    unsigned char *p = dst;
    if (fill == KP_FILL_ZERO) {
        memset(dst, 0, (size_t)(count * size));
        return;
    }
    if (fill == KP_FILL_CONST) {
        for (uint64_t i = 0; i < count; i++)
            memcpy(p + i * size, value, size);
        return;
    }
    uint64_t state = 0x9E3779B97F4A7C15ULL + index;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t word;
        if (fill == KP_FILL_IOTA) {
            word = i;
        } else {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            word = (uint32_t)(state >> 33);
        }
        unsigned char *e = p + i * size;
        if (t == KP_TYPE_F32) {
            float v = fill == KP_FILL_IOTA ? (float)word : (float)((double)word / 2147483648.0);
            memcpy(e, &v, 4);
        } else if (t == KP_TYPE_F64) {
            double v = fill == KP_FILL_IOTA ? (double)word : (double)word / 2147483648.0;
            memcpy(e, &v, 8);
        } else {
            unsigned char tmp[8];
            kp_store_int(t, word, tmp);
            memcpy(e, tmp, size);
        }
    }
}
