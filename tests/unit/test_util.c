/* test_util.c — UTF-8 checks, the escaping of user text in error messages, saturating time
 * arithmetic and the input check (core/util, core/error). */
#include "base/error.h"
#include "base/util.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *escaped(const char *text, size_t n)
{
    kp_str s = {0};
    kp_str_append_escaped(&s, text, n);
    return kp_str_take(&s);
}

static char *replaced(const char *text)
{
    kp_str s = {0};
    kp_str_append_utf8(&s, text, strlen(text));
    return kp_str_take(&s);
}

/* The status list is the tool's exit codes: each 0-5, a regression past the gate 5. */
static void test_status_exit_codes(void)
{
    for (int st = 0; st < KPROF_STATUS_COUNT_; st++) {
        int code = kprof_status_exit_code((kprof_status)st);
        CHECK(code >= 0 && code <= 5);
        CHECK(strcmp(kprof_strerror((kprof_status)st), "unknown status") != 0);
    }
    CHECK_INT(kprof_status_exit_code(KPROF_REGRESSION), 5);
    CHECK_STR(kprof_status_name(KPROF_REGRESSION), "REGRESSION");
    CHECK_INT(kprof_status_exit_code(KPROF_OK), 0);
    CHECK_INT(kprof_status_exit_code(KPROF_CORRUPT), 2);
}

/* kp_parse_size: KPROF_OK with the value, KPROF_INVALID with *out untouched. */
static void test_parse_size(void)
{
    uint64_t v = 7;
    CHECK_INT(kp_parse_size("64", &v), KPROF_OK);
    CHECK(v == 64);
    CHECK_INT(kp_parse_size("1M", &v), KPROF_OK);
    CHECK(v == 1048576);
    CHECK_INT(kp_parse_size("2k", &v), KPROF_OK);
    CHECK(v == 2048);
    CHECK_INT(kp_parse_size("18446744073709551615", &v), KPROF_OK);
    CHECK(v == UINT64_MAX);
    v = 7;
    static const char *const bad[] = {
        "", "-1", " 1", "1 ", "1KB", "x", "18446744073709551616", "17179869184G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(kp_parse_size(bad[i], &v), KPROF_INVALID);
    CHECK_INT(kp_parse_size(NULL, &v), KPROF_INVALID);
    CHECK(v == 7);
}

int main(void)
{
    test_status_exit_codes();
    test_parse_size();
    /* Well-formed UTF-8 characters and their lengths; ill-formed starts are 0. */
    static const struct {
        const char *bytes;
        size_t len;
    } chars[] = {
        {"a", 1},
        {"\xc3\xa9", 2},
        {"\xc2\x80", 2},
        {"\xdf\xbf", 2},
        {"\xe0\xa0\x80", 3},
        {"\xed\x9f\xbf", 3},
        {"\xee\x80\x80", 3},
        {"\xef\xbf\xbf", 3},
        {"\xf0\x90\x80\x80", 4},
        {"\xf4\x8f\xbf\xbf", 4},
        {"\x80", 0},
        {"\xbf", 0},
        {"\xc0\x80", 0},         /* overlong NUL */
        {"\xc1\xbf", 0},         /* overlong */
        {"\xe0\x9f\xbf", 0},     /* overlong, 3 bytes */
        {"\xed\xa0\x80", 0},     /* surrogate U+D800 */
        {"\xed\xbf\xbf", 0},     /* surrogate U+DFFF */
        {"\xf0\x8f\xbf\xbf", 0}, /* overlong, 4 bytes */
        {"\xf4\x90\x80\x80", 0}, /* U+110000 */
        {"\xf5\x80\x80\x80", 0},
        {"\xff", 0},
        {"\xe2\x82", 0}, /* cut short */
        {"\xe2\x82"
         "A",
         0},
        {"\xf0\x9f\x98", 0},
    };
    for (size_t i = 0; i < sizeof chars / sizeof chars[0]; i++) {
        const unsigned char *p = (const unsigned char *)chars[i].bytes;
        if (kp_utf8_char_len(p, strlen(chars[i].bytes)) != chars[i].len)
            fprintf(stderr, "case %zu\n", i);
        CHECK_INT(kp_utf8_char_len(p, strlen(chars[i].bytes)), chars[i].len);
    }
    /* The length limit counts: a 3-byte character with 2 bytes left is cut short. */
    CHECK_INT(kp_utf8_char_len((const unsigned char *)"\xe2\x82\xac", 2), 0);
    CHECK_INT(kp_utf8_char_len((const unsigned char *)"\xe2\x82\xac", 3), 3);

    /* Escaping for one-line messages. */
    char *e = escaped("a\nb\r\tc\x1b[31m\x7f\xff\xc3\xa9\xc2\x9b\\n", 19);
    CHECK_STR(e, "a\\nb\\r\\tc\\x1b[31m\\x7f\\xff\xc3\xa9\\u009b\\n");
    char *twice = escaped(e, strlen(e)); /* escaping again changes nothing */
    CHECK_STR(twice, e);
    free(twice);
    free(e);
    e = escaped("nul\0x", 5);
    CHECK_STR(e, "nul\\x00x");
    free(e);
    e = escaped("\xe2\x82", 2);
    CHECK_STR(e, "\\xe2\\x82");
    free(e);

    /* CSV: U+FFFD per byte that is not UTF-8, everything else unchanged. */
    e = replaced("a\xff"
                 "b\xe2\x82"
                 "c\xed\xa0\x80\xc3\xa9\n");
    CHECK_STR(e, "a\xef\xbf\xbd"
                 "b\xef\xbf\xbd\xef\xbf\xbd"
                 "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                 "\xc3\xa9\n");
    free(e);

    /* printf with escaped %s arguments; the format's own text and other conversions as printf. */
    kp_str s = {0};
    kp_str_printf_escaped(&s, "%s|%5s|%-4s|%.3s|%.*s|%d|%lld|%zu|%u|%x|%5.2f|%c|%%|%llu\nend",
                          "x\ny", "ab", "c", "a\nbcd", 2, "\x1bzz", -7, (long long)INT64_MIN,
                          (size_t)42, 7u, 255u, 3.14159, 'q', (unsigned long long)UINT64_MAX);
    CHECK_STR(s.data, "x\\ny|   ab|c   |a\\nb|\\x1bz|-7|-9223372036854775808|42|7|ff| 3.14|q|%|"
                      "18446744073709551615\nend");
    kp_str_free(&s);
    const char *volatile none = NULL; /* hidden from the compiler's format check */
    kp_str_printf_escaped(&s, "%s", none);
    CHECK_STR(s.data, "(null)");
    kp_str_free(&s);
    kp_str_printf_escaped(&s, "%*d|%-*s|%ld|%g", 4, 5, 3, "a", -3L, 0.5);
    CHECK_STR(s.data, "   5|a  |-3|0.5");
    kp_str_free(&s);

    /* kp_error_set and kp_error_append escape their arguments, not their formats. */
    kp_error err = {0};
    kp_error_set(&err, KPROF_NOT_FOUND, "%s: no such file", "bad\nname\x1b.kprof");
    kp_error_append(&err, "\n(%s)", "more\ttext");
    CHECK_STR(err.message, "bad\\nname\\x1b.kprof: no such file\n(more\\ttext)");
    kp_error_clear(&err);
    /* A list kprof composed itself keeps its line breaks; its arguments were escaped. */
    kp_str_printf_escaped(&s, "\n  %s", "one\ntwo");
    kp_error_set(&err, KPROF_INVALID, "head:");
    kp_error_append_lines(&err, s.data);
    CHECK_STR(err.message, "head:\n  one\\ntwo");
    kp_str_free(&s);
    kp_error_clear(&err);

    /* Saturating nanosecond arithmetic. */
    CHECK(kp_ns_diff(INT64_MAX, INT64_MIN) == INT64_MAX);
    CHECK(kp_ns_diff(INT64_MIN, INT64_MAX) == INT64_MIN);
    CHECK(kp_ns_diff(INT64_MIN, 1) == INT64_MIN);
    CHECK(kp_ns_diff(INT64_MAX, -1) == INT64_MAX);
    CHECK(kp_ns_diff(5, 7) == -2);
    CHECK(kp_ns_diff(0, INT64_MIN) == INT64_MAX);
    CHECK(kp_ns_diff(-1, INT64_MIN) == INT64_MAX);
    CHECK(kp_i64_add_sat(INT64_MAX, 1) == INT64_MAX);
    CHECK(kp_i64_add_sat(INT64_MIN, -1) == INT64_MIN);
    CHECK(kp_i64_add_sat(INT64_MAX, INT64_MIN) == -1);
    CHECK(kp_i64_add_sat(2, 3) == 5);

    /* The input check: a regular file passes; a folder, a FIFO, a device and a missing path
     * are named (a FIFO without blocking). */
    char dir[] = "/tmp/kprof-util-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char file[64], fifo[64], missing[64];
    snprintf(file, sizeof file, "%s/f", dir);
    snprintf(fifo, sizeof fifo, "%s/p", dir);
    snprintf(missing, sizeof missing, "%s/none", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_INT(kp_input_check(file, "a trace", NULL), KPROF_OK);
    CHECK_INT(kp_input_check(missing, "a trace", &err), KPROF_NOT_FOUND);
    CHECK_CONTAINS(err.message, "no such file");
    kp_error_clear(&err);
    CHECK_INT(kp_input_check(fifo, "a trace", &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "not a regular file (a FIFO), so not a trace");
    kp_error_clear(&err);
    CHECK_INT(kp_input_check(dir, NULL, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "(a folder)");
    kp_error_clear(&err);
    CHECK_INT(kp_input_check("/dev/null", NULL, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "(a character device)");
    kp_error_clear(&err);
    char *data = NULL;
    CHECK_INT(kp_file_read(fifo, &data, NULL, &err), KPROF_INVALID);
    kp_error_clear(&err);
    unlink(file);
    unlink(fifo);
    rmdir(dir);
    TEST_DONE();
}
