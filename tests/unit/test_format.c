/* test_format.c — durations, sizes and decimals as people read them. */
#include "core/format.h"
#include "test.h"

int main(void)
{
    char b[64];
    CHECK_STR(kp_format_duration(1.5e-3, b, sizeof b), "1.5 ms");
    CHECK_STR(kp_format_duration(812e-9, b, sizeof b), "812 ns");
    CHECK_STR(kp_format_duration(3.5e-6, b, sizeof b), "3.5 µs");
    CHECK_STR(kp_format_duration(2.014, b, sizeof b), "2.01 s");
    CHECK_STR(kp_format_duration(0, b, sizeof b), "0 ns");
    /* The lab's times (given in ms): the unit that keeps their digits. */
    CHECK_STR(kp_format_ms(0.0007264, b, sizeof b), "726 ns");
    CHECK_STR(kp_format_ms(0.0123, b, sizeof b), "12.30 µs");
    CHECK_STR(kp_format_ms(1.2345678, b, sizeof b), "1.235 ms");
    CHECK_STR(kp_format_ms(123.456, b, sizeof b), "123.5 ms");
    CHECK_STR(kp_format_ms(2000, b, sizeof b), "2.000 s");
    CHECK_STR(kp_format_ms(0, b, sizeof b), "0 ns");
    CHECK_STR(kp_format_ms(0.0009996, b, sizeof b), "1.000 µs");
    CHECK_STR(kp_format_ms(0.99996, b, sizeof b), "1.000 ms");
    CHECK_STR(kp_format_ms(0.9995, b, sizeof b), "999.5 µs");
    CHECK_STR(kp_format_ms(5e6, b, sizeof b), "5000 s");
    CHECK_STR(kp_format_ms_cell(0.0123, 10, b, sizeof b), "  12.30 µs");
    CHECK_STR(kp_format_ms_cell(1.5, 3, b, sizeof b), "1.500 ms");
    CHECK_STR(kp_format_bytes(256, b, sizeof b), "256 B");
    CHECK_STR(kp_format_bytes(48 * 1024, b, sizeof b), "48 KiB");
    CHECK_STR(kp_format_bytes(1536ULL << 20, b, sizeof b), "1.5 GiB");
    CHECK_STR(kp_format_2dp(1.50, b, sizeof b), "1.5");
    CHECK_STR(kp_format_2dp(2.0, b, sizeof b), "2");
    CHECK_STR(kp_format_2dp(0.125, b, sizeof b), "0.12");
    TEST_DONE();
}
