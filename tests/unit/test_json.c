/* test_json.c — the streaming JSON writer: structure, escaping, numbers. */
#include "export/json.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>

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
    CHECK_INT(kp_json_finish(&j), -1);
    kp_str_free(&s);
    kp_json_init(&j, &s, 0);
    kp_json_array_end(&j);
    CHECK_INT(kp_json_finish(&j), -1);
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
    TEST_DONE();
}
