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
    TEST_DONE();
}
