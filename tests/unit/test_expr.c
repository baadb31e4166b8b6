/* test_expr.c — the axis arithmetic of `kprof bench`: evaluation, errors, substitution. */
#include "core/expr.h"
#include "test.h"

#include <stdlib.h>

static double eval(const char *text, const kp_vars *vars)
{
    double v = -12345;
    kp_error why = {0};
    if (kp_expr_eval(text, vars, &v, &why) != KPROF_OK) {
        fprintf(stderr, "eval '%s' failed: %s\n", text, why.message);
        kp_test_failures++;
    }
    return v;
}

static int fails(const char *text, const kp_vars *vars, const char *why_part)
{
    double v;
    kp_error why = {0};
    if (kp_expr_eval(text, vars, &v, &why) == KPROF_OK) return 0;
    if (why.status != KPROF_INVALID) return 0;
    if (why_part && !strstr(why.message, why_part)) {
        fprintf(stderr, "'%s': message '%s' lacks '%s'\n", text, why.message, why_part);
        return 0;
    }
    return 1;
}

static char *subst(const char *text, const kp_vars *vars)
{
    kp_str s = {0};
    kp_error why = {0};
    if (kp_expr_substitute(text, vars, &s, &why) != KPROF_OK) {
        fprintf(stderr, "substitute '%s' failed: %s\n", text, why.message);
        kp_test_failures++;
        kp_str_free(&s);
        return strdup("");
    }
    return kp_str_take(&s);
}

int main(void)
{
    kp_vars vars = {.n = 3};
    snprintf(vars.v[0].name, sizeof vars.v[0].name, "N");
    vars.v[0].value = 4194304, vars.v[0].numeric = 1;
    snprintf(vars.v[1].name, sizeof vars.v[1].name, "TG");
    vars.v[1].value = 256, vars.v[1].numeric = 1;
    snprintf(vars.v[2].name, sizeof vars.v[2].name, "T");
    snprintf(vars.v[2].text, sizeof vars.v[2].text, "f64");

    CHECK_NEAR(eval("1+2*3", NULL), 7, 0);
    CHECK_NEAR(eval("(1+2)*3", NULL), 9, 0);
    CHECK_NEAR(eval("2^3^2", NULL), 512, 0); /* right-associative */
    CHECK_NEAR(eval("-2^2", NULL), 4, 0);    /* unary minus binds tighter, as documented */
    CHECK_NEAR(eval("1M", NULL), 1048576, 0);
    CHECK_NEAR(eval("4K/2", NULL), 2048, 0);
    CHECK_NEAR(eval("1e6", NULL), 1e6, 0);
    CHECK_NEAR(eval("7 % 4", NULL), 3, 0);
    CHECK_NEAR(eval(" 12 * N ", &vars), 12.0 * 4194304, 0);
    CHECK_NEAR(eval("2*N/TG", &vars), 32768, 0);

    CHECK(fails("1/0", NULL, "division by zero"));
    CHECK(fails("M", &vars, "unknown name 'M'"));
    CHECK(fails("T*2", &vars, "not a number"));
    CHECK(fails("(1+2", NULL, "expected ')'"));
    CHECK(fails("1+", NULL, "ends too soon"));
    CHECK(fails("3 4", NULL, "unexpected text"));
    CHECK(fails("0x10", NULL, "bad number"));
    CHECK(fails("12abc", NULL, "bad number"));
    CHECK(fails("", NULL, NULL));
    CHECK(fails("((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1", NULL,
                "nested too deep"));

    char *s = subst("f32:N,f32:N,u32=N", &vars);
    CHECK_STR(s, "f32:4194304,f32:4194304,u32=4194304");
    free(s);
    s = subst("T:{N/4},u8:1M,i32=TGX", &vars); /* 1M keeps its M; TGX is not TG */
    CHECK_STR(s, "f64:1048576,u8:1M,i32=TGX");
    free(s);
    s = subst("{T}:{N*1.5}", &vars);
    CHECK_STR(s, "f64:6291456");
    free(s);
    s = subst("{N/3}", &vars);
    CHECK_STR(s, "1398101.3333333333");
    free(s);
    kp_str bad = {0};
    kp_error why = {0};
    CHECK(kp_expr_substitute("f32:{N", &vars, &bad, &why) == KPROF_INVALID);
    CHECK(strstr(why.message, "without '}'") != NULL);
    kp_error_clear(&why);
    CHECK(kp_expr_substitute("f32:{Q}", &vars, &bad, &why) == KPROF_INVALID);
    CHECK(strstr(why.message, "unknown name 'Q'") != NULL);
    kp_str_free(&bad);

    CHECK(kp_expr_is_name("N"));
    CHECK(kp_expr_is_name("_tile2"));
    CHECK(!kp_expr_is_name("2N"));
    CHECK(!kp_expr_is_name("a-b"));
    CHECK(!kp_expr_is_name(""));
    return kp_test_failures != 0;
}
