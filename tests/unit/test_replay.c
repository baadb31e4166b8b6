/* test_replay.c — a captured launch as a lab session's arguments (lab/replay.c): the SPEC a capture
 * stands for (one u8 buffer per allocation, then its __local arguments), the check of a capture
 * against the kernel's parameters (count, kind, size) that keeps a wrong replay from starting,
 * every backend built in able to bind one, and '@' allowed in a kernel folder's name but not
 * first. */
#include "lab/kernel_dir.h"
#include "lab/lab_internal.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

/* The axpy of cli.replay: float a, x, y, yin (y again), __local tmp. */
static kp_capture *axpy_capture(void)
{
    kp_capture *c = malloc(sizeof *c);
    kp_error err = {0};
    kp_capture_init(c);
    snprintf(c->api, sizeof c->api, "opencl");
    float a = 2.0f;
    int x = kp_capture_add_alloc(c, 0x1000, 4096, 1, "x", &err);
    int y = kp_capture_add_alloc(c, 0x9000, 4096, 2, "y", &err);
    CHECK_INT(kp_capture_add_value(c, &a, sizeof a, &err), 0);
    CHECK_INT(kp_capture_add_mem(c, x, &err), 1);
    CHECK_INT(kp_capture_add_mem(c, y, &err), 2);
    CHECK_INT(kp_capture_add_mem(c, y, &err), 3);
    CHECK_INT(kp_capture_add_local(c, 256, &err), 4);
    CHECK_INT(err.status, KPROF_OK);
    return c;
}

static kp_param param(kp_param_kind kind, uint32_t size, const char *name)
{
    kp_param p = {.kind = kind, .size = size};
    snprintf(p.name, sizeof p.name, "%s", name);
    return p;
}

static void test_spec(void)
{
    kp_capture *c = axpy_capture();
    kp_spec spec;
    kp_error err = {0};
    CHECK_INT(kp_lab_capture_spec(c, &spec, &err), KPROF_OK);
    CHECK_INT(spec.count, 3); /* x, y (passed twice, one allocation), tmp */
    CHECK_INT(spec.args[0].kind, KP_ARG_BUFFER);
    CHECK_INT(spec.args[0].type, KP_TYPE_U8);
    CHECK_INT(spec.args[0].count, 4096);
    CHECK_INT(kp_arg_bytes(&spec.args[1]), 4096);
    CHECK_INT(spec.args[2].kind, KP_ARG_LOCAL);
    CHECK_INT(spec.args[2].local_bytes, 256);
    CHECK_CONTAINS(spec.args[1].text, "'y'");
    /* More allocations than a session holds buffers: refused, saying the limit. */
    kp_capture *big = malloc(sizeof *big);
    kp_capture_init(big);
    for (int j = 0; j <= KP_SPEC_MAX_ARGS; j++)
        kp_capture_add_alloc(big, 0x1000 * (uint64_t)(j + 1), 16, 0, "b", &err);
    CHECK_INT(kp_lab_capture_spec(big, &spec, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "at most 64");
    kp_lab_capture_free(big);
    kp_lab_capture_free(c);
}

static void test_check_kernel(void)
{
    kp_capture *c = axpy_capture();
    kp_param params[5] = {
        param(KP_PARAM_VALUE, 4, "a"),   param(KP_PARAM_GLOBAL, 8, "x"),
        param(KP_PARAM_GLOBAL, 8, "y"),  param(KP_PARAM_GLOBAL, 8, "yin"),
        param(KP_PARAM_LOCAL, 8, "tmp"),
    };
    kp_kernel_meta k = {.nparams = 5, .params = params};
    snprintf(k.name, sizeof k.name, "axpy");
    kp_error err = {0};
    CHECK_INT(kp_lab_capture_check_kernel(c, &k, &err), KPROF_OK);
    /* A parameter the backend cannot describe is not held against the capture. */
    params[1].kind = KP_PARAM_UNKNOWN;
    CHECK_INT(kp_lab_capture_check_kernel(c, &k, &err), KPROF_OK);
    params[1].kind = KP_PARAM_GLOBAL;
    /* One parameter fewer: the count named. */
    k.nparams = 4;
    CHECK_INT(kp_lab_capture_check_kernel(c, &k, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "5 arguments");
    CHECK_CONTAINS(err.message, "takes 4");
    kp_error_clear(&err);
    k.nparams = 5;
    /* A value where the kernel takes a buffer. */
    params[1].kind = KP_PARAM_VALUE;
    CHECK_INT(kp_lab_capture_check_kernel(c, &k, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "argument 2 of axpy");
    kp_error_clear(&err);
    params[1].kind = KP_PARAM_GLOBAL;
    /* A double where the kernel takes a float. */
    params[0].size = 8;
    CHECK_INT(kp_lab_capture_check_kernel(c, &k, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "takes 8 bytes");
    kp_error_clear(&err);
    params[0].size = 4;
    /* A NULL buffer is 8 zero bytes by value; other bytes there are a buffer not captured. */
    unsigned char handle[8] = {0};
    kp_capture_arg saved = c->args[1];
    c->args[1] =
        (kp_capture_arg){.kind = KP_CAPTURE_VALUE, .size = 8, .bytes = handle, .alloc = -1};
    CHECK_INT(kp_lab_capture_check_kernel(c, &k, &err), KPROF_OK);
    handle[3] = 0x7f;
    CHECK_INT(kp_lab_capture_check_kernel(c, &k, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "did not hold");
    kp_error_clear(&err);
    c->args[1] = saved;
    /* The kernel cannot count its parameters: bind_capture checks what it can. */
    k.nparams = -1;
    CHECK_INT(kp_lab_capture_check_kernel(c, &k, &err), KPROF_OK);
    kp_lab_capture_free(c);

    /* CUDA: pointers are values (relocated through kp_capture_ptr), a struct a value. */
    kp_capture *cu = malloc(sizeof *cu);
    kp_capture_init(cu);
    snprintf(cu->api, sizeof cu->api, "cuda");
    unsigned char ptrs[16] = {0};
    kp_capture_add_value(cu, ptrs, 8, &err);
    kp_capture_add_value(cu, ptrs, 16, &err);
    kp_param cp[2] = {param(KP_PARAM_GLOBAL, 8, "out"), param(KP_PARAM_STRUCT, 16, "p")};
    kp_kernel_meta ck = {.nparams = 2, .params = cp};
    CHECK_INT(kp_lab_capture_check_kernel(cu, &ck, &err), KPROF_OK);
    cp[1].size = 24;
    CHECK_INT(kp_lab_capture_check_kernel(cu, &ck, &err), KPROF_INVALID);
    kp_error_clear(&err);
    kp_lab_capture_free(cu);
}

static void test_backends_bind_captures(void)
{
    for (int b = 0; kp_backends[b]; b++)
        CHECK(kp_backends[b]->bind_capture != NULL);
}

static void test_folder_names(void)
{
    kp_error err = {0};
    CHECK_INT(kp_kernel_name_check("softmax@3", &err), KPROF_OK);
    CHECK_INT(kp_kernel_name_check("a@b@2", &err), KPROF_OK);
    CHECK_INT(kp_kernel_name_check("@3", &err), KPROF_INVALID);
    kp_error_clear(&err);
    CHECK_INT(kp_kernel_name_check("a/@3", &err), KPROF_INVALID);
    kp_error_clear(&err);
    CHECK_INT(kp_lang_from_path("kernel.fatbin"), KP_LANG_CUBIN);
}

int main(void)
{
    test_spec();
    test_check_kernel();
    test_backends_bind_captures();
    test_folder_names();
    TEST_DONE();
}
