/*
 * util.h — small pieces the rest of kprof shares: a growable string, whole-file read, atomic
 * file write (temp + rename, so a reader never sees half a file), recursive mkdir, a 64-bit
 * content hash and the host monotonic clock.
 */
#ifndef KP_CORE_UTIL_H
#define KP_CORE_UTIL_H

#include "core/error.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* A growable NUL-terminated string. Zero-initialise; kp_str_free() releases. An allocation
 * failure sets `failed` and later appends do nothing, so callers check once at the end. */
typedef struct kp_str {
    char *data;      /* NUL-terminated, or NULL while empty */
    size_t len;      /* bytes before the NUL */
    size_t capacity; /* bytes allocated */
    int failed;      /* an allocation failed */
} kp_str;

void kp_str_append(kp_str *s, const char *text);
void kp_str_append_n(kp_str *s, const char *text, size_t n);
void kp_str_printf(kp_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kp_str_vprintf(kp_str *s, const char *fmt, va_list ap);
/* Hand the buffer to the caller (never NULL unless failed: an empty string is ""). */
char *kp_str_take(kp_str *s);
void kp_str_free(kp_str *s);

/* Read a whole regular file of at most KP_FILE_READ_MAX bytes. *out is heap, NUL-terminated;
 * *len excludes the NUL. NOT_FOUND when the file does not exist, INVALID when the path is not
 * a regular file or too large, IO on other failures. */
#define KP_FILE_READ_MAX (1ULL << 30)
kprof_status kp_file_read(const char *path, char **out, size_t *len, kp_error *err);

/* Write a whole file atomically: a temporary file beside it, fsync-free rename over the
 * target. On failure nothing is left at `path` that was not there before. */
kprof_status kp_file_write_atomic(const char *path, const void *data, size_t len, kp_error *err);

/* mkdir -p with mode 0777 & ~umask. */
kprof_status kp_mkdir_p(const char *path, kp_error *err);

int kp_path_exists(const char *path);
int kp_path_is_dir(const char *path);

/* FNV-1a 64-bit over bytes, chainable through `seed` (start with KP_HASH_SEED). */
#define KP_HASH_SEED 0xcbf29ce484222325ULL
uint64_t kp_hash64(uint64_t seed, const void *data, size_t len);
uint64_t kp_hash64_str(uint64_t seed, const char *text);

/* A whole number with an optional binary K/M/G suffix ("64", "1M" = 1048576); no sign, no
 * spaces. 0 ok, -1 malformed or above UINT64_MAX. */
int kp_parse_size(const char *text, uint64_t *out);

/* Wait for a dispatch with a deadline, as both backends do: poll(ctx) until it returns non-zero
 * (done or failed: its value is returned) or timeout_s passes (KP_POLL_TIMEOUT), sleeping 20 µs
 * doubling up to 1 ms between polls. */
#define KP_POLL_TIMEOUT 0
int kp_poll_until(int (*poll)(void *ctx), void *ctx, double timeout_s);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t kp_now_ns(void);

/* Copy at most n-1 bytes and always NUL-terminate. Returns dst. */
char *kp_strlcpy(char *dst, const char *src, size_t n);

/* Strip trailing whitespace in place. */
void kp_rstrip(char *s);

/* The text of the file's extension without the dot ("cl"), or "" when none. */
const char *kp_path_extension(const char *path);

#endif
