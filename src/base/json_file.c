/*
 * json_file.c — read one JSON document strictly (see json_file.h).
 */
#include "src/base/json_file.h"
#include "base/util.h"
#include "base/json.h" /* KP_JSON_MAX_DEPTH */

#include <stdlib.h>
#include <string.h>

_Static_assert(KP_JSON_READ_MAX_DEPTH + 8 <= KP_JSON_MAX_DEPTH,
               "what is read must fit in kp_json inside a note");
_Static_assert(KP_JSON_READ_MAX_DEPTH < CJSON_NESTING_LIMIT,
               "kprof, not cJSON, says a document is nested too deeply");

/* What cJSON does not refuse, found in one pass over the bytes (strings followed, so that
 * brackets and backslashes inside them are text): a NUL byte, a \u0000 escape, nesting past
 * the limit. */
static kprof_status kp_json_scan(const char *name, const char *text, size_t len, kp_error *err)
{
    int in_string = 0, depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\0')
            return kp_error_set(err, KPROF_CORRUPT,
                                "%s: not JSON: a NUL byte at byte %zu (JSON text holds none)", name,
                                i + 1);
        if (in_string) {
            if (c == '"') {
                in_string = 0;
            } else if (c == '\\' && i + 1 < len) {
                if (text[i + 1] == 'u' && len - i >= 6 && memcmp(text + i + 2, "0000", 4) == 0)
                    return kp_error_set(err, KPROF_CORRUPT,
                                        "%s: a string holds \\u0000 (a NUL character) at byte "
                                        "%zu, which kprof does not keep: its text would be cut "
                                        "there",
                                        name, i + 1);
                if (text[i + 1] != '\0') i++; /* the escaped character (a NUL is found next) */
            }
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > KP_JSON_READ_MAX_DEPTH)
                return kp_error_set(err, KPROF_CORRUPT,
                                    "%s: nested too deeply at byte %zu (limit %d levels of arrays "
                                    "and objects)",
                                    name, i + 1, KP_JSON_READ_MAX_DEPTH);
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return KPROF_OK;
}

static int kp_json_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

kprof_status kp_json_parse_strict(const char *name, const char *text, size_t len,
                                  const char *expected, cJSON **out, kp_error *err)
{
    *out = NULL;
    kprof_status st = kp_json_scan(name, text, len, err);
    if (st != KPROF_OK) return st;
    size_t start = 0;
    while (start < len && kp_json_space(text[start]))
        start++;
    if (start == len)
        return kp_error_set(err, KPROF_CORRUPT, "%s: not JSON: %s (expected %s)", name,
                            len ? "only whitespace" : "empty", expected);
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!doc) {
        const char *at = end; /* where cJSON stopped */
        size_t where = at && at >= text && at <= text + len ? (size_t)(at - text) : len;
        return kp_error_set(
            err, KPROF_CORRUPT, "%s: not JSON: cannot parse at byte %zu%s (expected %s)", name,
            where + 1, where + 1 >= len ? ", where the file ends (truncated?)" : "", expected);
    }
    size_t rest = end && end >= text && end <= text + len ? (size_t)(end - text) : len;
    while (rest < len && kp_json_space(text[rest]))
        rest++;
    if (rest < len) {
        cJSON *second = cJSON_ParseWithLengthOpts(text + rest, len - rest, NULL, 0);
        cJSON_Delete(doc);
        if (second) {
            cJSON_Delete(second);
            return kp_error_set(err, KPROF_CORRUPT,
                                "%s: not one JSON document: a second one begins at byte %zu, "
                                "after the first (a file holds one)",
                                name, rest + 1);
        }
        return kp_error_set(err, KPROF_CORRUPT,
                            "%s: not JSON: bytes after the document at byte %zu (a file holds one "
                            "document and nothing after it but whitespace)",
                            name, rest + 1);
    }
    *out = doc;
    return KPROF_OK;
}

kprof_status kp_json_file_read(const char *path, const char *expected, cJSON **out, kp_error *err)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    kprof_status st = kp_file_read(path, &text, &len, err);
    if (st != KPROF_OK) return st;
    st = kp_json_parse_strict(path, text, len, expected, out, err);
    free(text);
    return st;
}
