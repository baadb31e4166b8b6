/* test_lab_impl.c — the tables a lab session and a backend are known by: both implementations of
 * kp_lab_impl fill every operation a session needs wherever it runs, and only the local one reads
 * counters and PC samples; every backend built in says its API's name and the language it
 * compiles, consistently with its name; kp_backend_api knows the backends not built in too. */
#include "lab/lab_internal.h"
#include "test.h"

static void test_lab_tables(void)
{
    const kp_lab_impl *impls[] = {&kp_lab_local, &kp_lab_remote};
    for (int i = 0; i < 2; i++) {
        const kp_lab_impl *t = impls[i];
        CHECK(t->use_kernel && t->check_launch && t->reflect && t->measure && t->sample);
        CHECK(t->digest && t->finish && t->pid && t->is_void && t->close);
    }
    CHECK_STR(kp_lab_local.where, "here");
    CHECK_STR(kp_lab_remote.where, "child");
    CHECK(kp_lab_local.counters && kp_lab_local.pc_sample);
    CHECK(!kp_lab_remote.counters && !kp_lab_remote.pc_sample);
    CHECK_INT(kp_lab_local.pid(NULL), 0);
    CHECK_INT(kp_lab_local.is_void(NULL), 0);
}

static void test_backend_capabilities(void)
{
    for (int b = 0; kp_backends[b]; b++) {
        const kp_backend_ops *ops = kp_backends[b];
        CHECK(ops->api && ops->api[0]);
        CHECK_STR(kp_lang_backend(ops->source_lang), ops->name);
        CHECK_STR(kp_backend_api(ops->name), ops->api);
    }
    CHECK_STR(kp_backend_api("opencl"), "OpenCL");
    CHECK_STR(kp_backend_api("cuda"), "CUDA"); /* built in or not */
    CHECK_STR(kp_backend_api("metal"), "");
    CHECK_STR(kp_backend_api(NULL), "");
    const kp_backend_ops *cl = kp_backend_find("opencl");
    CHECK(cl != NULL);
    if (cl) {
        CHECK_INT(cl->source_lang, KP_LANG_OPENCL_C);
        CHECK_STR(kp_lang_extension(cl->source_lang), "cl");
    }
    const kp_backend_ops *cu = kp_backend_find("cuda");
    if (cu) {
        CHECK_INT(cu->source_lang, KP_LANG_CUDA);
        CHECK_STR(kp_lang_extension(cu->source_lang), "cu");
    }
}

int main(void)
{
    test_lab_tables();
    test_backend_capabilities();
    TEST_DONE();
}
