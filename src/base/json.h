/*
 * json.h — a streaming JSON writer. kprof writes JSON (run.json, --json output, exports) but
 * never needs a tree in memory to do it: values go straight to a kp_str.
 *
 * Strings are escaped per RFC 8259 (control characters as \u00XX, well-formed UTF-8 passed
 * through raw, as Perfetto prefers). Bytes that are not well-formed UTF-8 (0xff, cut-off or
 * overlong sequences, surrogates such as ED A0 80) are written as \u00XX of the byte's value,
 * so every document kprof writes is valid UTF-8 whatever bytes the names, commands and paths
 * held. Non-finite doubles are written as null. Nesting is limited to
 * KP_JSON_MAX_DEPTH; deeper calls set `failed`. The limit leaves room for the Hatchet export,
 * whose call tree (core/aggregate.h, at most 64 levels) nests two JSON levels per tree level.
 */
#ifndef KP_BASE_JSON_H
#define KP_BASE_JSON_H

#include "base/util.h"

#include <stdint.h>

#define KP_JSON_MAX_DEPTH 256

typedef struct kp_json {
    kp_str *out;                  /* where text goes (not owned) */
    int pretty;                   /* indent with two spaces per level */
    int depth;                    /* open containers */
    int count[KP_JSON_MAX_DEPTH]; /* values written so far at each level */
    int failed;                   /* misuse (too deep, unbalanced) */
} kp_json;

void kp_json_init(kp_json *j, kp_str *out, int pretty);

/* `key` names the member when the enclosing container is an object; pass NULL inside arrays
 * and for the top-level value. */
void kp_json_object_begin(kp_json *j, const char *key);
void kp_json_object_end(kp_json *j);
void kp_json_array_begin(kp_json *j, const char *key);
void kp_json_array_end(kp_json *j);
void kp_json_string(kp_json *j, const char *key, const char *value); /* NULL writes null */
void kp_json_int(kp_json *j, const char *key, int64_t value);
void kp_json_uint(kp_json *j, const char *key, uint64_t value);
void kp_json_double(kp_json *j, const char *key, double value);
void kp_json_bool(kp_json *j, const char *key, int value);
void kp_json_null(kp_json *j, const char *key);

/* A number that is not always known: value when known is not 0, else null (for a string,
 * kp_json_string with NULL writes null). */
void kp_json_double_or_null(kp_json *j, const char *key, int known, double value);
void kp_json_int_or_null(kp_json *j, const char *key, int known, int64_t value);

/* Append a JSON string literal (quotes included) for text to out (NULL is ""). The one JSON
 * string escaper: the Chrome export quotes its names through it too. */
void kp_json_quote(kp_str *out, const char *text);

/* Shortest decimal that reads back as the same double ("0.1", "1e-07"); non-finite -> "null". */
void kp_json_format_double(double v, char *buf, size_t n);

/* End the document: KPROF_OK when it is complete and balanced; KPROF_NOMEM when the text ran out
 * of memory; KPROF_INVALID when the writer was misused (nested too deep, left unbalanced). Like
 * kp_str's, the failure is kept in a flag and asked once here, so no kp_error is filled: the
 * caller knows what it was writing (kp_error_nomem for the usual case). */
kprof_status kp_json_finish(kp_json *j);

#endif
