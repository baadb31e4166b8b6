/*
 * util.c — strings, files, hashing and the clock shared across kprof (see util.h).
 */
#define _GNU_SOURCE
#include "base/util.h"

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Room for extra more bytes and the NUL: KPROF_OK, or KPROF_NOMEM with `failed` set (kp_str keeps
 * its failure in the flag, checked once at the end, so there is no kp_error to fill here). */
static kprof_status kp_str_reserve(kp_str *s, size_t extra)
{
    if (s->failed) return KPROF_NOMEM;
    size_t need = s->len + extra + 1;
    if (need <= s->capacity) return KPROF_OK;
    size_t cap = s->capacity ? s->capacity : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(s->data, cap);
    if (!p) {
        s->failed = 1;
        return KPROF_NOMEM;
    }
    s->data = p;
    s->capacity = cap;
    return KPROF_OK;
}

void kp_str_append_n(kp_str *s, const char *text, size_t n)
{
    if (kp_str_reserve(s, n) != KPROF_OK) return;
    memcpy(s->data + s->len, text, n);
    s->len += n;
    s->data[s->len] = '\0';
}

void kp_str_append(kp_str *s, const char *text)
{
    kp_str_append_n(s, text, strlen(text));
}

void kp_str_vprintf(kp_str *s, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0 || kp_str_reserve(s, (size_t)n) != KPROF_OK) return;
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
    s->len += (size_t)n;
}

void kp_str_printf(kp_str *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kp_str_vprintf(s, fmt, ap);
    va_end(ap);
}

void kp_str_vprintf_escaped(kp_str *s, const char *fmt, va_list ap)
{
    const char *p = fmt;
    while (*p) {
        const char *pct = strchr(p, '%');
        if (!pct) {
            kp_str_append(s, p);
            return;
        }
        kp_str_append_n(s, p, (size_t)(pct - p));
        /* One conversion: rebuilt into spec with any '*' replaced by its value, so each
         * argument is taken with its own type and printed by the C library. */
        const char *q = pct + 1;
        char spec[48];
        size_t n = 0;
        int prec = -1;
        spec[n++] = '%';
        while (*q && strchr("-+ #0", *q) && n < 8)
            spec[n++] = *q++;
        if (*q == '*') {
            n += (size_t)snprintf(spec + n, 16, "%d", va_arg(ap, int));
            q++;
        } else {
            while (isdigit((unsigned char)*q) && n < 20)
                spec[n++] = *q++;
        }
        size_t width_end = n;
        if (*q == '.') {
            q++;
            if (*q == '*') {
                prec = va_arg(ap, int);
                q++;
            } else {
                prec = 0;
                while (isdigit((unsigned char)*q))
                    prec = prec * 10 + (*q++ - '0');
            }
            if (prec >= 0) n += (size_t)snprintf(spec + n, 16, ".%d", prec);
        }
        char len[3] = "";
        size_t nl = 0;
        while (*q && strchr("hlzjtL", *q) && nl < 2)
            len[nl++] = *q++;
        len[nl] = '\0';
        memcpy(spec + n, len, nl);
        n += nl;
        char conv = *q ? *q++ : '\0';
        spec[n++] = conv;
        spec[n] = '\0';
        p = q;
        int ll = strcmp(len, "ll") == 0, l = strcmp(len, "l") == 0;
        switch (conv) {
        case '%':
            kp_str_append(s, "%");
            break;
        case 's': {
            const char *text = va_arg(ap, const char *);
            if (!text) text = "(null)";
            size_t tl = prec >= 0 ? strnlen(text, (size_t)prec) : strlen(text);
            kp_str esc = {0};
            kp_str_append_escaped(&esc, text, tl);
            /* Flags and width apply to the escaped text; the precision cut the original. */
            char wspec[32];
            snprintf(wspec, sizeof wspec, "%.*ss", (int)width_end, spec);
            kp_str_printf(s, wspec, esc.data ? esc.data : "");
            kp_str_free(&esc);
            break;
        }
        case 'd':
        case 'i':
            if (ll)
                kp_str_printf(s, spec, va_arg(ap, long long));
            else if (l)
                kp_str_printf(s, spec, va_arg(ap, long));
            else if (len[0] == 'z')
                kp_str_printf(s, spec, va_arg(ap, ssize_t));
            else if (len[0] == 'j')
                kp_str_printf(s, spec, va_arg(ap, intmax_t));
            else if (len[0] == 't')
                kp_str_printf(s, spec, va_arg(ap, ptrdiff_t));
            else
                kp_str_printf(s, spec, va_arg(ap, int));
            break;
        case 'u':
        case 'o':
        case 'x':
        case 'X':
            if (ll)
                kp_str_printf(s, spec, va_arg(ap, unsigned long long));
            else if (l)
                kp_str_printf(s, spec, va_arg(ap, unsigned long));
            else if (len[0] == 'z')
                kp_str_printf(s, spec, va_arg(ap, size_t));
            else if (len[0] == 'j')
                kp_str_printf(s, spec, va_arg(ap, uintmax_t));
            else if (len[0] == 't')
                kp_str_printf(s, spec, va_arg(ap, ptrdiff_t));
            else
                kp_str_printf(s, spec, va_arg(ap, unsigned));
            break;
        case 'c':
            kp_str_printf(s, spec, va_arg(ap, int));
            break;
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G':
        case 'a':
        case 'A':
            if (len[0] == 'L')
                kp_str_printf(s, spec, va_arg(ap, long double));
            else
                kp_str_printf(s, spec, va_arg(ap, double));
            break;
        case 'p':
            kp_str_printf(s, spec, va_arg(ap, void *));
            break;
        default:
            kp_str_append(s, spec);
            break; /* unknown: shown as written */
        }
    }
}

void kp_str_printf_escaped(kp_str *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kp_str_vprintf_escaped(s, fmt, ap);
    va_end(ap);
}

char *kp_str_take(kp_str *s)
{
    if (s->failed) {
        kp_str_free(s);
        return NULL;
    }
    char *p = s->data ? s->data : strdup("");
    s->data = NULL;
    s->len = s->capacity = 0;
    return p;
}

void kp_str_free(kp_str *s)
{
    free(s->data);
    s->data = NULL;
    s->len = s->capacity = 0;
    s->failed = 0;
}

int kp_path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int kp_path_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

uint64_t kp_hash64(uint64_t seed, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

uint64_t kp_hash64_str(uint64_t seed, const char *text)
{
    /* The terminating NUL is hashed too, so ("ab","c") and ("a","bc") differ. */
    return kp_hash64(seed, text ? text : "", text ? strlen(text) + 1 : 1);
}

kprof_status kp_parse_size(const char *text, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)text[0])) return KPROF_INVALID;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE) return KPROF_INVALID;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ULL << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1ULL << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1ULL << 30, end++;
    if (*end || v > UINT64_MAX / mul) return KPROF_INVALID;
    *out = v * mul;
    return KPROF_OK;
}

int kp_poll_until(int (*poll)(void *ctx), void *ctx, double timeout_s)
{
    uint64_t start = kp_now_ns();
    long sleep_ns = 20000;
    for (;;) {
        int r = poll(ctx);
        if (r) return r;
        if ((double)(kp_now_ns() - start) / 1e9 > timeout_s) return KP_POLL_TIMEOUT;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000) sleep_ns *= 2;
    }
}

uint64_t kp_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int64_t kp_unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

int64_t kp_ns_diff(int64_t end, int64_t start)
{
    int64_t d;
    if (!__builtin_sub_overflow(end, start, &d)) return d;
    return end < start ? INT64_MIN : INT64_MAX;
}

int64_t kp_ns_span(int64_t end, int64_t start)
{
    return end > start ? kp_ns_diff(end, start) : 0;
}

int64_t kp_i64_add_sat(int64_t a, int64_t b)
{
    int64_t s;
    if (!__builtin_add_overflow(a, b, &s)) return s;
    return a < 0 ? INT64_MIN : INT64_MAX;
}

size_t kp_utf8_char_len(const unsigned char *p, size_t left)
{
    if (left == 0) return 0;
    unsigned c = p[0];
    if (c < 0x80) return 1;
    /* The second byte's range depends on the first (RFC 3629's table): that excludes overlong
     * forms (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and code points above U+10FFFF. */
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (left < n || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    return n;
}

void kp_str_append_escaped(kp_str *out, const char *text, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)text, *end = p + n, *run = p;
    while (p < end) {
        size_t len = kp_utf8_char_len(p, (size_t)(end - p));
        char esc[8];
        if (len == 1 && *p >= 0x20 && *p != 0x7f) {
            p++;
            continue;
        }
        if (len > 1 && !(p[0] == 0xC2 && p[1] < 0xA0)) {
            p += len;
            continue;
        }
        kp_str_append_n(out, (const char *)run, (size_t)(p - run));
        if (len == 2) { /* a C1 control */
            snprintf(esc, sizeof esc, "\\u00%c%c", hex[p[1] >> 4], hex[p[1] & 15]);
        } else if (*p == '\n' || *p == '\r' || *p == '\t') {
            snprintf(esc, sizeof esc, "\\%c", *p == '\n' ? 'n' : *p == '\r' ? 'r' : 't');
            len = 1;
        } else {
            snprintf(esc, sizeof esc, "\\x%c%c", hex[*p >> 4], hex[*p & 15]);
            len = 1;
        }
        kp_str_append(out, esc);
        p += len;
        run = p;
    }
    kp_str_append_n(out, (const char *)run, (size_t)(p - run));
}

void kp_str_append_utf8(kp_str *out, const char *text, size_t n)
{
    const unsigned char *p = (const unsigned char *)text, *end = p + n, *run = p;
    while (p < end) {
        size_t len = kp_utf8_char_len(p, (size_t)(end - p));
        if (len) {
            p += len;
            continue;
        }
        kp_str_append_n(out, (const char *)run, (size_t)(p - run));
        kp_str_append(out, "\xef\xbf\xbd"); /* U+FFFD REPLACEMENT CHARACTER */
        run = ++p;
    }
    kp_str_append_n(out, (const char *)run, (size_t)(p - run));
}

char *kp_strlcpy(char *dst, const char *src, size_t n)
{
    if (n == 0) return dst;
    size_t len = strlen(src);
    if (len >= n) len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return dst;
}

char *kp_strdup(const char *text)
{
    if (!text) return NULL;
    size_t n = strlen(text) + 1;
    char *copy = malloc(n);
    if (copy) memcpy(copy, text, n);
    return copy;
}

void kp_rstrip(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
}

const char *kp_path_extension(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1)) return "";
    return dot + 1;
}

void kp_command_line(char *out, size_t n)
{
    out[0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t len = read(fd, out, n - 1);
    close(fd);
    if (len <= 0) return;
    out[len] = '\0';
    for (ssize_t i = 0; i < len - 1; i++)
        if (out[i] == '\0') out[i] = ' ';
}

void kp_str_append_markup(kp_str *out, const char *text)
{
    const char *run = text;
    for (const char *p = text; *p; p++) {
        const char *ent = *p == '<'   ? "&lt;"
                          : *p == '>' ? "&gt;"
                          : *p == '&' ? "&amp;"
                          : *p == '"' ? "&quot;"
                                      : NULL;
        if (!ent) continue;
        kp_str_append_n(out, run, (size_t)(p - run));
        kp_str_append(out, ent);
        run = p + 1;
    }
    kp_str_append(out, run);
}
