/* test_check_spec.c — a SPEC checked against a kernel's parameters: count, kind and type; a
 * launch's threadgroup checked against the kernel's compile-time rule. */
#include "lab/lab.h"
#include "test.h"

static kprof_status check(const char *spec_text, const kp_kernel_meta *k, kp_error *e)
{
    kp_spec s;
    kp_error_clear(e);
    kprof_status st = kp_spec_parse(spec_text, &s, e);
    if (st != KPROF_OK) return st;
    return kp_lab_check_spec(&s, k, e);
}

static kp_launch launch(int dims, uint64_t x, uint64_t y)
{
    kp_launch l = {.dims = dims, .grid = {4096, 64, 1}, .tg = {x, y, 1}};
    return l;
}

/* reqd_work_group_size / .reqntid / __launch_bounds__ (.maxntid), checked before anything runs. */
static void test_tg_rule(void)
{
    kp_error e = {0};
    kp_reflection none = {.max_tg = 1024};
    kp_launch l = launch(1, 4096, 1);
    CHECK_INT(kp_lab_check_tg_rule(&none, &l, "k", &e), KPROF_OK);
    CHECK_INT(kp_reflection_limit_declared(&none), 0);
    char text[256];
    kp_tg_rule_text(&none, text, sizeof text);
    CHECK_STR(text, "");

    kp_reflection req = {.max_tg = 64,
                         .tg_rule = KP_TG_RULE_REQUIRED,
                         .tg_rule_size = {64, 1, 1},
                         .tg_rule_from = "reqd_work_group_size"};
    l = launch(1, 64, 1);
    CHECK_INT(kp_lab_check_tg_rule(&req, &l, "k", &e), KPROF_OK);
    l = launch(1, 128, 1);
    CHECK_INT(kp_lab_check_tg_rule(&req, &l, "k", &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "tg 128 is not k's required threadgroup size 64 "
                              "(reqd_work_group_size, fixed when it was compiled): use --tg 64");
    kp_error_clear(&e);
    l = launch(1, 32, 1); /* smaller is no better: the size is required, not a maximum */
    CHECK_INT(kp_lab_check_tg_rule(&req, &l, "k", &e), KPROF_INVALID);
    kp_error_clear(&e);
    l = launch(2, 8, 8); /* the same number of threads in another shape */
    CHECK_INT(kp_lab_check_tg_rule(&req, &l, "k", &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "tg 8x8 is not k's required threadgroup size 64x1");
    CHECK_CONTAINS(e.message, "use --tg 64x1");
    kp_error_clear(&e);
    l = launch(2, 64, 1);
    CHECK_INT(kp_lab_check_tg_rule(&req, &l, "k", &e), KPROF_OK);
    CHECK_INT(kp_reflection_limit_declared(&req), 1);
    CHECK_INT(kp_tg_rule_threads(&req), 64);
    kp_tg_rule_text(&req, text, sizeof text);
    CHECK_STR(text, "required group size 64 (reqd_work_group_size)");

    kp_reflection req2 = {.max_tg = 64,
                          .tg_rule = KP_TG_RULE_REQUIRED,
                          .tg_rule_size = {32, 2, 1},
                          .tg_rule_from = ".reqntid"};
    l = launch(1, 64, 1);
    CHECK_INT(kp_lab_check_tg_rule(&req2, &l, "k", &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "tg 64 is not k's required threadgroup size 32x2 (.reqntid");
    CHECK_CONTAINS(e.message, "it needs a 2-D grid and --tg 32x2");
    kp_error_clear(&e);
    kp_tg_rule_text(&req2, text, sizeof text);
    CHECK_STR(text, "required group size 32x2 (.reqntid)");

    kp_reflection max = {.max_tg = 256,
                         .tg_rule = KP_TG_RULE_MAX,
                         .tg_rule_size = {256, 1, 1},
                         .tg_rule_from = "__launch_bounds__ / .maxntid"};
    l = launch(2, 16, 16);
    CHECK_INT(kp_lab_check_tg_rule(&max, &l, "k", &e), KPROF_OK);
    l = launch(1, 128, 1); /* below a maximum is fine */
    CHECK_INT(kp_lab_check_tg_rule(&max, &l, "k", &e), KPROF_OK);
    l = launch(1, 512, 1);
    CHECK_INT(kp_lab_check_tg_rule(&max, &l, "k", &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "tg 512 is above k's maximum threadgroup size 256 "
                              "(__launch_bounds__ / .maxntid");
    kp_error_clear(&e);
    CHECK_INT(kp_reflection_limit_declared(&max), 1);
    kp_tg_rule_text(&max, text, sizeof text);
    CHECK_STR(text, "max 256 (__launch_bounds__ / .maxntid)");
    /* Registers lower the driver's maximum below the declared one: that is register pressure,
     * not the declaration. */
    max.max_tg = 192;
    CHECK_INT(kp_reflection_limit_declared(&max), 0);
}

int main(void)
{
    test_tg_rule();
    kp_param p[5] = {
        {.kind = KP_PARAM_GLOBAL, .size = 8, .name = "out", .type_name = "float*"},
        {.kind = KP_PARAM_CONSTANT, .size = 8, .name = "a", .type_name = "const float4*"},
        {.kind = KP_PARAM_LOCAL, .size = 0, .name = "scratch", .type_name = "int*"},
        {.kind = KP_PARAM_VALUE, .size = 4, .name = "n", .type_name = "uint"},
        {.kind = KP_PARAM_GLOBAL, .size = 8, .name = "s", .type_name = "struct item*"},
    };
    kp_kernel_meta k = {.name = "k", .symbol = "k", .nparams = 5, .params = p};
    kp_error e = {0};

    CHECK_INT(check("f32:8,f32:32,local:64,u32=8,u8:100", &k, &e), KPROF_OK);
    CHECK_INT(check("f32:8,f32:32,local:64,u32=8", &k, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "has 4 items but k takes 5 arguments");
    CHECK_CONTAINS(e.message, "k(float* out, const float4* a, local int* scratch, uint n");
    CHECK_INT(check("i32:8,f32:32,local:64,u32=8,u8:1", &k, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "argument 1 'out' is float* but --buffers item 1 'i32:8' is an i32");
    CHECK_CONTAINS(e.message, "write f32:8 for it");
    CHECK_INT(check("f32:8,f32:32,f32:64,u32=8,u8:1", &k, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "write local:BYTES");
    CHECK_INT(check("f32:8,f32:32,local:64,u64=8,u8:1", &k, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "argument 4 'n' is uint (4 bytes)");
    CHECK_INT(check("f32:8,f32:32,local:64,i32=8,u8:1", &k, &e), KPROF_INVALID);
    CHECK_INT(check("f32:8,f32:32,local:64,u32:8,u8:1", &k, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "TYPE=VALUE");
    CHECK_INT(check("f32=1,f32:32,local:64,u32=8,u8:1", &k, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "write TYPE:COUNT");

    /* CUDA-style spellings and unknown kinds. */
    kp_param q[3] = {
        {.kind = KP_PARAM_GLOBAL,
         .size = 8,
         .name = "x",
         .type_name = "const unsigned int *__restrict__"},
        {.kind = KP_PARAM_VALUE, .size = 8, .name = "n", .type_name = "size_t"},
        {.kind = KP_PARAM_UNKNOWN, .size = 8},
    };
    kp_kernel_meta c = {.name = "c", .symbol = "c", .nparams = 3, .params = q};
    CHECK_INT(check("u32:4,u64=4,f64:9", &c, &e), KPROF_OK);
    CHECK_INT(check("i32:4,u64=4,f64:9", &c, &e), KPROF_INVALID);
    CHECK_INT(check("u32:4,u32=4,f64:9", &c, &e), KPROF_INVALID);

    /* A struct or union passed by value is refused whatever scalar is offered. */
    kp_param sp[3] = {
        {.kind = KP_PARAM_GLOBAL, .size = 8, .name = "out", .type_name = "float*"},
        {.kind = KP_PARAM_STRUCT, .size = 0, .name = "p", .type_name = "struct params"},
        {.kind = KP_PARAM_UNION, .size = 0, .name = "", .type_name = "u_t"},
    };
    kp_kernel_meta st = {.name = "st", .symbol = "st", .nparams = 3, .params = sp};
    const char *offers[] = {"f32:4,f32=1,u32=1", "f32:4,u32=1,u32=1", "f32:4,f64=1,u32=1",
                            "f32:4,u64=1,u32=1", "f32:4,f32:8,u32=1", "f32:4,local:8,u32=1"};
    for (size_t i = 0; i < sizeof offers / sizeof offers[0]; i++) {
        CHECK_INT(check(offers[i], &st, &e), KPROF_INVALID);
        CHECK_CONTAINS(e.message, "argument 2 'p' is a struct (struct params) passed by value: "
                                  "kprof cannot fill structs yet");
        CHECK_CONTAINS(e.message, "st(float* out, struct params p, u_t)");
    }
    sp[1].kind = KP_PARAM_VALUE;
    sp[1].size = 4;
    sp[1].type_name[0] = '\0';
    CHECK_INT(check("f32:4,f32=1,u32=1", &st, &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "argument 3 is a union (u_t) passed by value: kprof cannot fill "
                              "unions yet");

    /* A backend that cannot count parameters checks nothing. */
    kp_kernel_meta u = {.name = "u", .symbol = "u", .nparams = -1, .params = NULL};
    CHECK_INT(check("f32:1,u32=1", &u, &e), KPROF_OK);
    kp_error_clear(&e);
    TEST_DONE();
}
