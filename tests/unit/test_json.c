/* test_json.c — the streaming JSON writer: structure, escaping, numbers; and the CLI's strict
 * reader (src/base/json_file.h): one document and nothing after it, no NUL, no \u0000, a
 * nesting limit said as such. */
#include "base/json.h"
#include "test.h"
#include "src/base/json_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the strict reader says of len bytes: NULL when it reads them, else its message. */
static const char *strict(const char *text, size_t len)
{
    static kp_error err;
    kp_error_clear(&err);
    cJSON *doc = NULL;
    kprof_status st = kp_json_parse_strict("f.json", text, len, "a test file", &doc, &err);
    if (st == KPROF_OK) {
        CHECK(doc != NULL);
        cJSON_Delete(doc);
        return NULL;
    }
    CHECK_INT(st, KPROF_CORRUPT);
    CHECK(doc == NULL);
    return err.message;
}
#define STRICT(lit) strict(lit, sizeof lit - 1)

/* n nested arrays, closed. */
static char *nested(int n)
{
    char *t = malloc(2 * (size_t)n + 1);
    memset(t, '[', (size_t)n);
    memset(t + n, ']', (size_t)n);
    t[2 * n] = '\0';
    return t;
}

static void test_strict_reader(void)
{
    /* What is one document reads, whitespace around it included. */
    CHECK(STRICT("{\"a\": [1, \"x\\\\u0000\"]}") == NULL);  /* an escaped backslash, then text */
    CHECK(STRICT(" \n{\"a\": \"[{\\\"\"}\r\n\t ") == NULL); /* brackets and quotes in a string */
    CHECK(STRICT("[\"\\u00e9\\u0001\"]") == NULL);
    CHECK(STRICT("7") == NULL);
    /* Trailing bytes, a second document, a NUL after the document or inside it. */
    CHECK_STR(STRICT("{\"a\": 1}garbage"),
              "f.json: not JSON: bytes after the document at byte 9 (a file holds one document "
              "and nothing after it but whitespace)");
    CHECK_STR(STRICT("{\"a\": 1}\n{\"a\": 1}\n"),
              "f.json: not one JSON document: a second one begins at byte 10, after the first (a "
              "file holds one)");
    CHECK_STR(STRICT("[1] [2]"),
              "f.json: not one JSON document: a second one begins at byte 5, after the first (a "
              "file holds one)");
    CHECK_STR(STRICT("{\"a\": 1}\n\0"),
              "f.json: not JSON: a NUL byte at byte 10 (JSON text holds none)");
    CHECK_STR(STRICT("{\"a\": \"x\0y\"}"),
              "f.json: not JSON: a NUL byte at byte 9 (JSON text holds none)");
    CHECK_STR(STRICT("{\"a\": \"x\\\0\"}"),
              "f.json: not JSON: a NUL byte at byte 10 (JSON text holds none)");
    /* \u0000 in a string (a value or a key) is refused, not cut. */
    CHECK_STR(STRICT("{\"a\": \"cut\\u0000here\"}"),
              "f.json: a string holds \\u0000 (a NUL character) at byte 11, which kprof does not "
              "keep: its text would be cut there");
    CHECK_CONTAINS(STRICT("{\"k\\u0000\": 1}"), "holds \\u0000");
    /* Not JSON at all, empty, truncated. */
    CHECK_STR(STRICT(""), "f.json: not JSON: empty (expected a test file)");
    CHECK_STR(STRICT(" \n"), "f.json: not JSON: only whitespace (expected a test file)");
    CHECK_CONTAINS(STRICT("{\"a\": "), "f.json: not JSON: cannot parse at byte");
    CHECK_CONTAINS(STRICT("{\"a\": "), "(truncated?) (expected a test file)");
    CHECK_CONTAINS(STRICT("{nope}"), "f.json: not JSON: cannot parse at byte ");
    /* Nesting: the limit reads, one more is said to be too deep, as is cJSON's 1000. */
    char *t = nested(KP_JSON_READ_MAX_DEPTH);
    CHECK(strict(t, strlen(t)) == NULL);
    free(t);
    t = nested(KP_JSON_READ_MAX_DEPTH + 1);
    CHECK_STR(strict(t, strlen(t)),
              "f.json: nested too deeply at byte 201 (limit 200 levels of arrays and objects)");
    free(t);
    t = nested(1000);
    CHECK_CONTAINS(strict(t, strlen(t)), "nested too deeply");
    free(t);
    t = nested(100000);
    CHECK_CONTAINS(strict(t, strlen(t)), "nested too deeply");
    free(t);
    strict("1", 1); /* frees the last message */
}

int main(void)
{
    kp_str s = {0};
    kp_json j;
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kp_json_string(&j, "name", "a\"b\\c\n\t\x01é");
    kp_json_int(&j, "neg", -3);
    kp_json_uint(&j, "big", 18446744073709551615ULL);
    kp_json_double(&j, "x", 0.1);
    kp_json_double(&j, "three", 3.0);
    kp_json_double(&j, "nan", NAN);
    kp_json_double(&j, "inf", INFINITY);
    kp_json_bool(&j, "t", 1);
    kp_json_null(&j, "n");
    kp_json_string(&j, "s", NULL);
    kp_json_array_begin(&j, "a");
    kp_json_int(&j, NULL, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_object_end(&j);
    kp_json_array_begin(&j, NULL);
    kp_json_array_end(&j);
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    CHECK_INT(kp_json_finish(&j), 0);
    CHECK_STR(s.data, "{\"name\":\"a\\\"b\\\\c\\n\\t\\u0001é\",\"neg\":-3,"
                      "\"big\":18446744073709551615,\"x\":0.1,\"three\":3,\"nan\":null,"
                      "\"inf\":null,\"t\":true,\"n\":null,\"s\":null,\"a\":[1,{},[]]}");
    kp_str_free(&s);

    /* A number or null: the value when known, null when not, whatever the value. */
    kp_json_init(&j, &s, 0);
    kp_json_array_begin(&j, NULL);
    kp_json_double_or_null(&j, NULL, 1, 2.5);
    kp_json_double_or_null(&j, NULL, 0, 2.5);
    kp_json_double_or_null(&j, NULL, 1, 0);
    kp_json_int_or_null(&j, NULL, 1, -7);
    kp_json_int_or_null(&j, NULL, 0, -7);
    kp_json_array_end(&j);
    CHECK_INT(kp_json_finish(&j), 0);
    CHECK_STR(s.data, "[2.5,null,0,-7,null]");
    kp_str_free(&s);
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    kp_json_double_or_null(&j, "a", 0, 1);
    kp_json_int_or_null(&j, "b", 1, 3);
    kp_json_object_end(&j);
    CHECK_INT(kp_json_finish(&j), 0);
    CHECK_STR(s.data, "{\"a\":null,\"b\":3}");
    kp_str_free(&s);

    /* Pretty output indents and still balances. */
    kp_json_init(&j, &s, 1);
    kp_json_object_begin(&j, NULL);
    kp_json_array_begin(&j, "v");
    kp_json_double(&j, NULL, 1.25);
    kp_json_array_end(&j);
    kp_json_object_end(&j);
    CHECK_INT(kp_json_finish(&j), 0);
    CHECK_STR(s.data, "{\n  \"v\": [\n    1.25\n  ]\n}\n");
    kp_str_free(&s);

    /* Unbalanced documents are reported. */
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    CHECK_INT(kp_json_finish(&j), KPROF_INVALID);
    kp_str_free(&s);
    kp_json_init(&j, &s, 0);
    kp_json_array_end(&j);
    CHECK_INT(kp_json_finish(&j), KPROF_INVALID);
    kp_str_free(&s);
    /* A text that ran out of memory is NOMEM, not a misuse, even when also unbalanced. */
    kp_json_init(&j, &s, 0);
    kp_json_object_begin(&j, NULL);
    s.failed = 1;
    CHECK_INT(kp_json_finish(&j), KPROF_NOMEM);
    kp_str_free(&s);
    kp_json_init(&j, &s, 0);
    kp_json_int(&j, NULL, 1);
    s.failed = 1;
    CHECK_INT(kp_json_finish(&j), KPROF_NOMEM);
    kp_str_free(&s);

    /* Doubles round-trip in the shortest form. */
    char buf[40];
    double samples[] = {0.1, 1.0 / 3, 1e-7, 123456.789, 5e300, -0.0, 0.4558};
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        kp_json_format_double(samples[i], buf, sizeof buf);
        CHECK(strtod(buf, NULL) == samples[i]);
    }
    kp_json_format_double(0.4558, buf, sizeof buf);
    CHECK_STR(buf, "0.4558");

    /* Bytes that are not well-formed UTF-8 come out as \u00XX of the byte; well-formed
     * characters (2, 3 and 4 bytes, C1 controls too) pass through unchanged. */
    static const struct {
        const char *in, *out;
    } utf8[] = {
        {"\xff", "\"\\u00ff\""},
        {"a\xe2\x82", "\"a\\u00e2\\u0082\""}, /* cut short at the end */
        {"\xe2\x82"
         "A",
         "\"\\u00e2\\u0082A\""},                       /* cut short before ASCII */
        {"\xc0\xaf", "\"\\u00c0\\u00af\""},            /* overlong '/' */
        {"\xe0\x80\xaf", "\"\\u00e0\\u0080\\u00af\""}, /* overlong, 3 bytes */
        {"\xf0\x80\x80\xaf", "\"\\u00f0\\u0080\\u0080\\u00af\""},
        {"\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\""},            /* a surrogate */
        {"\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\""}, /* above U+10FFFF */
        {"\xf8\x88\x80\x80\x80", "\"\\u00f8\\u0088\\u0080\\u0080\\u0080\""},
        {"\x80x", "\"\\u0080x\""}, /* a lone continuation byte */
        {"\x01\x1b\x7f", "\"\\u0001\\u001b\x7f\""},
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc2\x9b\xed\x9f\xbf\xf4\x8f\xbf\xbf",
         "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc2\x9b\xed\x9f\xbf\xf4\x8f\xbf\xbf\""},
    };
    for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++) {
        kp_str q = {0};
        kp_json_quote(&q, utf8[i].in);
        CHECK_STR(q.data, utf8[i].out);
        kp_str_free(&q);
    }
    kp_str q = {0};
    kp_json_quote(&q, NULL);
    CHECK_STR(q.data, "\"\"");
    kp_str_free(&q);
    test_strict_reader();
    TEST_DONE();
}
