/* test_lab_options.c — compiler options checked before anything runs (issue 23): an empty or
 * blank -D or -I, or one whose value is missing, is refused by kp_lab_check_options and by
 * kp_lab_open before it reads the kernel or starts a session; good options pass unchanged. */
#include "lab/lab.h"
#include "test.h"

static kprof_status check(const char *options, kp_error *e)
{
    kp_error_clear(e);
    return kp_lab_check_options(options, e);
}

int main(void)
{
    kp_error e = {0};
    const char *good[] = {NULL,
                          "",
                          "  ",
                          " -DN=4 -I inc",
                          "-D N -I inc -cl-fast-relaxed-math",
                          "-D_X=",
                          "-Dn=-1 -Iinc",
                          "-cl-std=CL2.0",
                          "\t-DA\t-IB\n"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK_INT(check(good[i], &e), KPROF_OK);
    const char *no_name[] = {" -D", " -D ", "-D\t", " -D  ", "-DN=1 -D"};
    for (size_t i = 0; i < sizeof no_name / sizeof no_name[0]; i++) {
        CHECK_INT(check(no_name[i], &e), KPROF_INVALID);
        CHECK_CONTAINS(e.message, "compiler option -D has no macro name: write -D NAME");
    }
    const char *no_dir[] = {" -I", " -I ", "-DN -I"};
    for (size_t i = 0; i < sizeof no_dir / sizeof no_dir[0]; i++) {
        CHECK_INT(check(no_dir[i], &e), KPROF_INVALID);
        CHECK_CONTAINS(e.message, "compiler option -I has no folder: write -I DIR");
    }
    CHECK_INT(check(" -D -I inc", &e), KPROF_INVALID); /* -D took "-I" for its name */
    CHECK_CONTAINS(e.message, "-D '-I': a macro name starts with a letter or '_'");
    CHECK_INT(check(" -D=3", &e), KPROF_INVALID);
    CHECK_CONTAINS(e.message, "-D '=3'");
    CHECK_INT(check(" -D\x1b[2J", &e), KPROF_INVALID); /* escaped in the message */
    CHECK_CONTAINS(e.message, "-D '\\x1b[2J'");

    /* kp_lab_open refuses them first: the missing kernel is not even looked for. */
    kp_lab_options o = {
        .target = "/nonexistent/k.cl", .buffers = "f32:1", .device = -1, .options = " -D "};
    kp_lab *lab = NULL;
    kp_error_clear(&e);
    CHECK_INT(kp_lab_open(&o, &lab, &e), KPROF_INVALID);
    CHECK(lab == NULL);
    CHECK_CONTAINS(e.message, "-D has no macro name");
    kp_error_clear(&e);
    TEST_DONE();
}
