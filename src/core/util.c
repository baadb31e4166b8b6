/*
 * util.c — strings, files, hashing and the clock shared across kprof (see util.h).
 */
#define _GNU_SOURCE
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int kp_str_reserve(kp_str *s, size_t extra)
{
    if (s->failed) return -1;
    size_t need = s->len + extra + 1;
    if (need <= s->capacity) return 0;
    size_t cap = s->capacity ? s->capacity : 64;
    while (cap < need) cap *= 2;
    char *p = realloc(s->data, cap);
    if (!p) {
        s->failed = 1;
        return -1;
    }
    s->data = p;
    s->capacity = cap;
    return 0;
}

void kp_str_append_n(kp_str *s, const char *text, size_t n)
{
    if (kp_str_reserve(s, n) != 0) return;
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
    if (n < 0 || kp_str_reserve(s, (size_t)n) != 0) return;
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

kprof_status kp_file_read(const char *path, char **out, size_t *len, kp_error *err)
{
    *out = NULL;
    if (len) *len = 0;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return kp_error_set(err, KPROF_NOT_FOUND, "%s: no such file", path);
        return kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode))
        return kp_error_set(err, KPROF_INVALID, "%s: is a directory, not a file", path);
    if (!S_ISREG(st.st_mode))
        return kp_error_set(err, KPROF_INVALID, "%s: not a regular file (a FIFO or device?)",
                            path);
    if ((uint64_t)st.st_size > KP_FILE_READ_MAX)
        return kp_error_set(err, KPROF_INVALID, "%s: %llu bytes, more than kprof reads (%llu)",
                            path, (unsigned long long)st.st_size,
                            (unsigned long long)KP_FILE_READ_MAX);
    /* O_NONBLOCK: a path swapped for a FIFO after the stat cannot block the open. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
    struct stat fst;
    if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
        close(fd);
        return kp_error_set(err, KPROF_INVALID, "%s: not a regular file", path);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
    }
    kp_str s = {0};
    char chunk[65536];
    size_t n;
    while (!s.failed && s.len <= KP_FILE_READ_MAX && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        kp_str_append_n(&s, chunk, n);
    int bad = ferror(f) || s.len > KP_FILE_READ_MAX;
    fclose(f);
    if (bad) {
        kp_str_free(&s);
        return kp_error_set(err, KPROF_IO, "%s: read failed", path);
    }
    size_t total = s.len;
    char *data = kp_str_take(&s);
    if (!data) return kp_error_set(err, KPROF_NOMEM, "%s: out of memory reading the file", path);
    *out = data;
    if (len) *len = total;
    return KPROF_OK;
}

kprof_status kp_file_write_atomic(const char *path, const void *data, size_t len, kp_error *err)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return kp_error_set(err, KPROF_INVALID, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return kp_error_set(err, KPROF_IO, "cannot write %s: %s", path, strerror(errno));
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return kp_error_set(err, KPROF_IO, "cannot write %s: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return kp_error_set(err, KPROF_IO, "cannot write %s: %s", path, strerror(e));
    }
    return KPROF_OK;
}

kprof_status kp_mkdir_p(const char *path, kp_error *err)
{
    char buf[4096];
    if (strlen(path) >= sizeof buf)
        return kp_error_set(err, KPROF_INVALID, "%s: path too long", path);
    kp_strlcpy(buf, path, sizeof buf);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return kp_error_set(err, KPROF_IO, "cannot create folder %s: %s", buf,
                                    strerror(errno));
            if (saved == '\0') break;
            *p = saved;
        }
    }
    if (!kp_path_is_dir(path))
        return kp_error_set(err, KPROF_IO, "cannot create folder %s: a file is in the way", path);
    return KPROF_OK;
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

int kp_parse_size(const char *text, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)text[0])) return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE) return -1;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1ULL << 10, end++;
    else if (*end == 'M' || *end == 'm') mul = 1ULL << 20, end++;
    else if (*end == 'G' || *end == 'g') mul = 1ULL << 30, end++;
    if (*end || v > UINT64_MAX / mul) return -1;
    *out = v * mul;
    return 0;
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

char *kp_strlcpy(char *dst, const char *src, size_t n)
{
    if (n == 0) return dst;
    size_t len = strlen(src);
    if (len >= n) len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
    return dst;
}

void kp_rstrip(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
}

const char *kp_path_extension(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1)) return "";
    return dot + 1;
}
