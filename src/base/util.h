/*
 * util.h — small pieces the rest of kprof shares: a growable string, a 64-bit content hash, the
 * host monotonic clock, saturating time arithmetic, and UTF-8 validation with the escaping of text
 * for one-line messages.
 */
#ifndef KP_BASE_UTIL_H
#define KP_BASE_UTIL_H

/* The file functions (whole-file read, atomic write, the input check, mkdir -p) are in
 * base/file.h, included here for the callers that have always found them in util.h. */
#include "base/file.h"
#include "kprof.h"

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
/* printf whose %s arguments go through kp_str_append_escaped: the format is kprof's own text
 * (a newline there is meant), an argument is data (a path, a name, an option value) and must not
 * break the line. kp_error_set and the CLI's error printers format with it. */
void kp_str_printf_escaped(kp_str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kp_str_vprintf_escaped(kp_str *s, const char *fmt, va_list ap);
/* Hand the buffer to the caller (never NULL unless failed: an empty string is ""). */
char *kp_str_take(kp_str *s);
void kp_str_free(kp_str *s);

int kp_path_exists(const char *path);

/* This process's command line (/proc/self/cmdline, spaces between its arguments) into out, cut
 * to n bytes; "" when it cannot be read. */
void kp_command_line(char *out, size_t n);
int kp_path_is_dir(const char *path);

/* FNV-1a 64-bit over bytes, chainable through `seed` (start with KP_HASH_SEED). */
#define KP_HASH_SEED 0xcbf29ce484222325ULL
uint64_t kp_hash64(uint64_t seed, const void *data, size_t len);
uint64_t kp_hash64_str(uint64_t seed, const char *text);

/* A whole number with an optional binary K/M/G suffix ("64", "1M" = 1048576); no sign, no
 * spaces. KPROF_OK, or KPROF_INVALID (malformed or above UINT64_MAX) with *out untouched. It
 * fills no kp_error: every caller names the option or field the text came from in its own
 * message, and util.c must not call error.c, which is built on kp_str (a file cycle). */
kprof_status kp_parse_size(const char *text, uint64_t *out);

/* Wait for a dispatch with a deadline, as both backends do: poll(ctx) until it returns non-zero
 * (done or failed: its value is returned) or timeout_s passes (KP_POLL_TIMEOUT), sleeping 20 µs
 * doubling up to 1 ms between polls. */
#define KP_POLL_TIMEOUT 0
int kp_poll_until(int (*poll)(void *ctx), void *ctx, double timeout_s);

/* end - start in nanoseconds, saturated to [INT64_MIN, INT64_MAX] instead of overflowing:
 * times come from files, and a hostile or damaged one may hold any 64-bit value. */
int64_t kp_ns_diff(int64_t end, int64_t start);
/* An event's duration as every table shows it: kp_ns_diff, but 0 where the end precedes the start
 * (a damaged trace; the reports count such events and say so, never print a negative time). */
int64_t kp_ns_span(int64_t end, int64_t start);
/* a + b, saturated the same way (sums of durations or sizes read from files). */
int64_t kp_i64_add_sat(int64_t a, int64_t b);

/* The length (1 to 4) of the well-formed UTF-8 character at p, of at most `left` bytes
 * (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF); 0 when p starts an
 * ill-formed or cut-off sequence. A NUL byte is a character of length 1. */
size_t kp_utf8_char_len(const unsigned char *p, size_t left);

/* Append text (n bytes) to out so that it stays on one line and is valid UTF-8: control
 * characters (C0, DEL, C1) and bytes that are not well-formed UTF-8 come out as `\n`, `\r`,
 * `\t` or `\xNN`; everything else, well-formed multi-byte characters included, unchanged.
 * Used for user-supplied text in error messages. */
void kp_str_append_escaped(kp_str *out, const char *text, size_t n);

/* Append text (n bytes) with every byte that is not well-formed UTF-8 replaced by U+FFFD, for
 * formats with no escape of their own (CSV); everything else unchanged. */
void kp_str_append_utf8(kp_str *out, const char *text, size_t n);

/* Append text as XML/HTML character data or an attribute's value: <, >, & and " as entities,
 * every other byte as it is (the SVG plots' and the HTML page's text). */
void kp_str_append_markup(kp_str *out, const char *text);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t kp_now_ns(void);

/* The Unix time in whole seconds from CLOCK_REALTIME: what a record's "at" holds. Not time(NULL),
 * which glibc reads from a coarse clock that can be a tick behind the second the system reports
 * elsewhere (a note made just after a second began said the second before). */
int64_t kp_unix_now(void);

/* Copy at most n-1 bytes and always NUL-terminate. Returns dst. */
char *kp_strlcpy(char *dst, const char *src, size_t n);
/* A malloc'd copy of text (free it); NULL when text is NULL or memory ran out. */
char *kp_strdup(const char *text);

/* Strip trailing whitespace in place. */
void kp_rstrip(char *s);

/* The text of the file's extension without the dot ("cl"), or "" when none. */
const char *kp_path_extension(const char *path);

#endif
