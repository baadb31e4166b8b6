/* test_spec.c — the --buffers SPEC parser, element types and the deterministic fill. */
#include "core/spec.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>

static kprof_status parse(const char *text, kp_spec *s, kp_error *e)
{
    kp_error_clear(e);
    return kp_spec_parse(text, s, e);
}

int main(void)
{
    kp_spec s;
    kp_error e = {0};

    /* Buffers, scalars, local memory, fills, suffixes, spaces. */
    CHECK_INT(parse("f32:1048576,f32:1M:zero, u32=7 ,local:4K,i8:3:iota,f64:2:const=1.5", &s, &e),
              KPROF_OK);
    CHECK_INT(s.count, 6);
    CHECK_INT(s.args[0].kind, KP_ARG_BUFFER);
    CHECK_INT(s.args[0].type, KP_TYPE_F32);
    CHECK_INT(s.args[0].count, 1048576);
    CHECK_INT(s.args[0].fill, KP_FILL_RAND);
    CHECK_INT(s.args[1].count, 1 << 20);
    CHECK_INT(s.args[1].fill, KP_FILL_ZERO);
    CHECK_INT(s.args[2].kind, KP_ARG_SCALAR);
    CHECK_INT(s.args[2].type, KP_TYPE_U32);
    uint32_t u;
    memcpy(&u, s.args[2].value, 4);
    CHECK_INT(u, 7);
    CHECK_INT(s.args[3].kind, KP_ARG_LOCAL);
    CHECK_INT(s.args[3].local_bytes, 4096);
    CHECK_INT(s.args[4].fill, KP_FILL_IOTA);
    CHECK_INT(s.args[5].fill, KP_FILL_CONST);
    double d;
    memcpy(&d, s.args[5].value, 8);
    CHECK_NEAR(d, 1.5, 0);
    CHECK_INT(kp_arg_bytes(&s.args[0]), 4 * 1048576);
    CHECK_INT(kp_arg_bytes(&s.args[2]), 0);
    CHECK_STR(s.args[2].text, "u32=7");

    /* Scalars of every kind; hex; negative; float. */
    CHECK_INT(parse("i64=-5,u64=0xff,f32=-2.5,i8=-128,u16=65535", &s, &e), KPROF_OK);
    int64_t i64;
    memcpy(&i64, s.args[0].value, 8);
    CHECK_INT(i64, -5);
    uint64_t u64;
    memcpy(&u64, s.args[1].value, 8);
    CHECK_INT(u64, 255);
    float f;
    memcpy(&f, s.args[2].value, 4);
    CHECK_NEAR(f, -2.5, 0);

    /* Errors name the item (1-based) and why. */
    CHECK_INT(parse("f32:16,f33:4", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "item 2 'f33:4'");
    CHECK_CONTAINS(e.message, "unknown type 'f33'");
    CHECK_INT(parse("f32:0", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "at least 1");
    CHECK_INT(parse("f32:abc", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "count 'abc'");
    CHECK_INT(parse("f32:4,,f32:4", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "item 2 is empty");
    CHECK_INT(parse("f32:4,", &s, &e), KPROF_INVALID);
    CHECK_INT(parse("u8=256", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "out of range for u8");
    CHECK_INT(parse("u32=-1", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "negative");
    CHECK_INT(parse("i32=1.5", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "not an integer");
    CHECK_INT(parse("f32:4:sparkle", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "unknown fill 'sparkle'");
    CHECK_INT(parse("f32:4:const=x", &s, &e), KPROF_INVALID);
    CHECK_INT(parse("local:0", &s, &e), KPROF_INVALID);
    CHECK_INT(parse("f32", &s, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "expected TYPE:COUNT");
    CHECK_INT(parse("", &s, &e), KPROF_INVALID);
    CHECK_INT(parse("f32:99999999999999999999999", &s, &e), KPROF_INVALID);
    CHECK_INT(parse("f32=1e39", &s, &e), KPROF_INVALID);

    /* The fill is the seed runner's LCG: exact words for buffer index 0 and 1. */
    uint32_t w[3];
    kp_fill_buffer(w, KP_TYPE_U32, 3, KP_FILL_RAND, NULL, 0);
    CHECK_INT(w[0], 376796944u);
    CHECK_INT(w[1], 1430272678u);
    CHECK_INT(w[2], 1508001829u);
    float fl[3];
    kp_fill_buffer(fl, KP_TYPE_F32, 3, KP_FILL_RAND, NULL, 1);
    CHECK_NEAR(fl[0], (float)(1117679911.0 / 2147483648.0), 0);
    CHECK_NEAR(fl[1], (float)(158336759.0 / 2147483648.0), 0);
    /* Same bytes on every call; different buffers differ. */
    float a[64], b[64], c[64];
    kp_fill_buffer(a, KP_TYPE_F32, 64, KP_FILL_RAND, NULL, 2);
    kp_fill_buffer(b, KP_TYPE_F32, 64, KP_FILL_RAND, NULL, 2);
    kp_fill_buffer(c, KP_TYPE_F32, 64, KP_FILL_RAND, NULL, 3);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(a, c, sizeof a) != 0);
    for (int i = 0; i < 64; i++)
        CHECK(a[i] >= 0 && a[i] <= 1);
    /* iota, zero, const. */
    int16_t io[5];
    kp_fill_buffer(io, KP_TYPE_I16, 5, KP_FILL_IOTA, NULL, 0);
    CHECK_INT(io[4], 4);
    double z[3] = {1, 2, 3};
    kp_fill_buffer(z, KP_TYPE_F64, 3, KP_FILL_ZERO, NULL, 0);
    CHECK_NEAR(z[2], 0, 0);
    unsigned char v[8];
    CHECK_INT(kp_value_parse(KP_TYPE_I32, "-9", v, NULL), KPROF_OK);
    int32_t k[4];
    kp_fill_buffer(k, KP_TYPE_I32, 4, KP_FILL_CONST, v, 0);
    CHECK_INT(k[3], -9);
    /* 64-bit integers take the word too, and u8 truncates it. */
    uint64_t big[1];
    kp_fill_buffer(big, KP_TYPE_U64, 1, KP_FILL_RAND, NULL, 0);
    CHECK_INT(big[0], 376796944u);
    uint8_t small[1];
    kp_fill_buffer(small, KP_TYPE_U8, 1, KP_FILL_RAND, NULL, 0);
    CHECK_INT(small[0], 376796944u & 0xff);

    /* Types. */
    kp_type t;
    CHECK_INT(kp_type_parse("u16", &t), 0);
    CHECK_INT(t, KP_TYPE_U16);
    CHECK_INT(kp_type_size(KP_TYPE_F64), 8);
    CHECK_STR(kp_type_c_name(KP_TYPE_U64), "ulong");
    CHECK_INT(kp_type_parse("float", &t), -1);
    kp_error_clear(&e);
    TEST_DONE();
}
