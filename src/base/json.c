/*
 * json.c — the streaming JSON writer (see json.h).
 */
#include "base/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kp_json_init(kp_json *j, kp_str *out, int pretty)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->pretty = pretty;
}

void kp_json_quote(kp_str *out, const char *text)
{
    static const char hex[] = "0123456789abcdef";
    kp_str_append(out, "\"");
    const unsigned char *p = (const unsigned char *)(text ? text : "");
    const unsigned char *run = p;
    while (*p) {
        const char *esc = NULL;
        char u[7];
        size_t len = 1;
        switch (*p) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        default:
            if (*p < 0x20) {
                esc = u;
            } else if (*p >= 0x80) {
                /* Well-formed UTF-8 passes through; a byte that is not (0xff, a cut-off or
                 * overlong sequence, a surrogate) is written as the code point of its value,
                 * \u00XX, so the output is valid UTF-8 and the byte can still be told. The
                 * strings end at their NUL, so the check never reads past it. */
                len = kp_utf8_char_len(p, 4);
                if (len == 0) {
                    esc = u;
                    len = 1;
                }
            }
            if (esc == u) {
                u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0';
                u[4] = hex[*p >> 4], u[5] = hex[*p & 15], u[6] = '\0';
            }
        }
        if (esc) {
            kp_str_append_n(out, (const char *)run, (size_t)(p - run));
            kp_str_append(out, esc);
            run = p + 1;
        }
        p += len;
    }
    kp_str_append_n(out, (const char *)run, (size_t)(p - run));
    kp_str_append(out, "\"");
}

static void kp_json_newline(kp_json *j)
{
    if (!j->pretty) return;
    kp_str_append(j->out, "\n");
    for (int i = 0; i < j->depth; i++)
        kp_str_append(j->out, "  ");
}

/* Separator, indentation and key before a value. */
static void kp_json_prefix(kp_json *j, const char *key)
{
    if (j->depth > 0) {
        if (j->count[j->depth - 1]++ > 0) kp_str_append(j->out, ",");
        kp_json_newline(j);
    }
    if (key) {
        kp_json_quote(j->out, key);
        kp_str_append(j->out, j->pretty ? ": " : ":");
    }
}

static void kp_json_open(kp_json *j, const char *key, const char *bracket)
{
    kp_json_prefix(j, key);
    kp_str_append(j->out, bracket);
    if (j->depth >= KP_JSON_MAX_DEPTH) {
        j->failed = 1;
        return;
    }
    j->count[j->depth++] = 0;
}

static void kp_json_close(kp_json *j, const char *bracket)
{
    if (j->depth <= 0) {
        j->failed = 1;
        return;
    }
    int had = j->count[j->depth - 1];
    j->depth--;
    if (had) kp_json_newline(j);
    kp_str_append(j->out, bracket);
}

void kp_json_object_begin(kp_json *j, const char *key)
{
    kp_json_open(j, key, "{");
}

void kp_json_object_end(kp_json *j)
{
    kp_json_close(j, "}");
}

void kp_json_array_begin(kp_json *j, const char *key)
{
    kp_json_open(j, key, "[");
}

void kp_json_array_end(kp_json *j)
{
    kp_json_close(j, "]");
}

void kp_json_string(kp_json *j, const char *key, const char *value)
{
    kp_json_prefix(j, key);
    if (value)
        kp_json_quote(j->out, value);
    else
        kp_str_append(j->out, "null");
}

void kp_json_int(kp_json *j, const char *key, int64_t value)
{
    kp_json_prefix(j, key);
    kp_str_printf(j->out, "%" PRId64, value);
}

void kp_json_uint(kp_json *j, const char *key, uint64_t value)
{
    kp_json_prefix(j, key);
    kp_str_printf(j->out, "%" PRIu64, value);
}

void kp_json_format_double(double v, char *buf, size_t n)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "null");
        return;
    }
    if (fabs(v) < 9007199254740992.0 && v == (double)(long long)v) {
        snprintf(buf, n, "%.0f", v);
        if (strcmp(buf, "-0") == 0) snprintf(buf, n, "-0.0");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    /* "%g" may give "1e+20"; that is valid JSON. An integral value stays integral ("3"). */
}

void kp_json_double(kp_json *j, const char *key, double value)
{
    char buf[40];
    kp_json_format_double(value, buf, sizeof buf);
    kp_json_prefix(j, key);
    kp_str_append(j->out, buf);
}

void kp_json_bool(kp_json *j, const char *key, int value)
{
    kp_json_prefix(j, key);
    kp_str_append(j->out, value ? "true" : "false");
}

void kp_json_null(kp_json *j, const char *key)
{
    kp_json_prefix(j, key);
    kp_str_append(j->out, "null");
}

void kp_json_double_or_null(kp_json *j, const char *key, int known, double value)
{
    if (known)
        kp_json_double(j, key, value);
    else
        kp_json_null(j, key);
}

void kp_json_int_or_null(kp_json *j, const char *key, int known, int64_t value)
{
    if (known)
        kp_json_int(j, key, value);
    else
        kp_json_null(j, key);
}

kprof_status kp_json_finish(kp_json *j)
{
    if (j->pretty) kp_str_append(j->out, "\n");
    if (j->out->failed) return KPROF_NOMEM;
    return j->failed || j->depth != 0 ? KPROF_INVALID : KPROF_OK;
}
