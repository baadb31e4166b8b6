/*
 * json_file.h — the one reader of JSON files kprof reads back (an earlier bench result for
 * `kprof bench --compare` and `kprof diff`, a result a note is made from, a notes export to
 * import), over cJSON.
 *
 * Strict where cJSON is lenient: a file holds one JSON document and nothing after it but
 * whitespace (no trailing bytes, no second document); no NUL byte anywhere (JSON text holds
 * none); no string holding \u0000 (kprof's text is C strings: it would be cut there); at most
 * KP_JSON_READ_MAX_DEPTH nested arrays and objects, said as such rather than "not JSON". Each is
 * CORRUPT (exit 2) with the reason and the byte (1 = the first) where it is.
 */
#ifndef KP_BASE_JSON_FILE_H
#define KP_BASE_JSON_FILE_H

#include "base/error.h"

#include <cjson/cJSON.h>
#include <stddef.h>

/* The deepest nesting read: far deeper than any file kprof writes (a bench.json is 5 levels),
 * below kp_json's KP_JSON_MAX_DEPTH (256) so that what is read can be written back inside a
 * note, and below cJSON's own limit (1000), which it reports as a parse failure. */
#define KP_JSON_READ_MAX_DEPTH 200

/* Parse len bytes of text (the contents of name, for the messages) as one document into *out
 * (cJSON_Delete it). `expected` says what the file should be ("a bench.json from `kprof
 * bench`"), for the message of a file that is not JSON. */
kprof_status kp_json_parse_strict(const char *name, const char *text, size_t len,
                                  const char *expected, cJSON **out, kp_error *err);

/* Read the regular file at path (kp_file_read's checks) and parse it as above. */
kprof_status kp_json_file_read(const char *path, const char *expected, cJSON **out, kp_error *err);

#endif
