/* test_cache_meta.c — the compile cache's metadata text round-trips and rejects damage; the
 * cache stores and finds entries in $KPROF_CACHE_DIR. */
#define _GNU_SOURCE
#include "lab/kernel_cache.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    kp_param params[2] = {
        {.kind = KP_PARAM_GLOBAL, .size = 8, .name = "out", .type_name = "float*"},
        {.kind = KP_PARAM_VALUE, .size = 4, .name = "", .type_name = "unsigned int"},
    };
    kp_kernel_meta kernels[2] = {
        {.name = "demo_add", .symbol = "demo_add", .nparams = 2, .params = params},
        {.name = "tk<16, 4>",
         .symbol = "_Z2tkILi16ELi4EEvPf",
         .nparams = -1,
         .params = NULL,
         .tg_rule = KP_TG_RULE_REQUIRED,
         .tg_rule_size = {32, 2, 1}},
    };
    kp_program_meta meta = {.nkernels = 2, .kernels = kernels};
    char *text = kp_meta_serialize(&meta);
    CHECK(text != NULL);
    kp_program_meta back;
    CHECK_INT(kp_meta_parse(text, &back, NULL), KPROF_OK);
    CHECK_INT(back.nkernels, 2);
    CHECK_STR(back.kernels[0].name, "demo_add");
    CHECK_INT(back.kernels[0].nparams, 2);
    CHECK_INT(back.kernels[0].params[0].kind, KP_PARAM_GLOBAL);
    CHECK_STR(back.kernels[0].params[0].type_name, "float*");
    CHECK_STR(back.kernels[0].params[1].name, "");
    CHECK_STR(back.kernels[0].params[1].type_name, "unsigned int");
    CHECK_INT(back.kernels[0].params[1].size, 4);
    CHECK_STR(back.kernels[1].symbol, "_Z2tkILi16ELi4EEvPf");
    CHECK_STR(back.kernels[1].name, "tk<16, 4>");
    CHECK_INT(back.kernels[1].nparams, -1);
    /* The compile-time threadgroup rule (CUDA's .reqntid/.maxntid) survives the cache. */
    CHECK_INT(back.kernels[0].tg_rule, KP_TG_RULE_NONE);
    CHECK_INT(back.kernels[1].tg_rule, KP_TG_RULE_REQUIRED);
    CHECK_INT(back.kernels[1].tg_rule_size[0], 32);
    CHECK_INT(back.kernels[1].tg_rule_size[1], 2);
    CHECK_INT(back.kernels[1].tg_rule_size[2], 1);
    const kp_kernel_meta *found = kp_program_meta_find(&back, "tk<16, 4>");
    CHECK(found == &back.kernels[1]);
    CHECK(kp_program_meta_find(&back, "nope") == NULL);
    kp_program_meta_free(&back);

    /* Damage: cut short, wrong header, too few params, unknown record. */
    size_t len = strlen(text);
    char *cut = strndup(text, len - 3);
    CHECK_INT(kp_meta_parse(cut, &back, NULL), KPROF_CORRUPT);
    CHECK_INT(kp_meta_parse("kprof-meta 1\n", &back, NULL), KPROF_CORRUPT);
    /* before threadgroup rules */
    CHECK_INT(kp_meta_parse("kprof-meta 2\n", &back, NULL), KPROF_CORRUPT);
    CHECK_INT(kp_meta_parse("kprof-meta 3\nkernel 2 k k\nparam 1 8 a float*\n", &back, NULL),
              KPROF_CORRUPT);
    CHECK_INT(kp_meta_parse("kprof-meta 3\nbogus\n", &back, NULL), KPROF_CORRUPT);
    CHECK_INT(kp_meta_parse("kprof-meta 3\nkernel 1 k k\nparam 9 8 a float*\n", &back, NULL),
              KPROF_CORRUPT);
    /* no kernel */
    CHECK_INT(kp_meta_parse("kprof-meta 3\ntg 1 64 1 1\n", &back, NULL), KPROF_CORRUPT);
    /* rule */
    CHECK_INT(kp_meta_parse("kprof-meta 3\nkernel 0 k k\ntg 3 64 1 1\n", &back, NULL),
              KPROF_CORRUPT);
    /* zero */
    CHECK_INT(kp_meta_parse("kprof-meta 3\nkernel 0 k k\ntg 1 64 0 1\n", &back, NULL),
              KPROF_CORRUPT);
    /* cut */
    CHECK_INT(kp_meta_parse("kprof-meta 3\nkernel 0 k k\ntg 1 64 1\n", &back, NULL), KPROF_CORRUPT);
    CHECK_INT(kp_meta_parse("kprof-meta 3\nkernel 0 k k\ntg 2 64 1 1\n", &back, NULL), KPROF_OK);
    CHECK_INT(back.kernels[0].tg_rule, KP_TG_RULE_MAX);
    kp_program_meta_free(&back);
    CHECK_INT(kp_meta_parse("kprof-meta 3\n", &back, NULL), KPROF_OK);
    CHECK_INT(back.nkernels, 0);
    free(cut);
    /* What was wrong, and on which line. */
    kp_error err = {0};
    CHECK_INT(kp_meta_parse("kprof-meta 2\n", &back, &err), KPROF_CORRUPT);
    CHECK_CONTAINS(err.message, "kprof-meta 3");
    kp_error_clear(&err);
    CHECK_INT(kp_meta_parse("kprof-meta 3\nkernel 0 k k\nbogus\n", &back, &err), KPROF_CORRUPT);
    CHECK_STR(err.message, "kernel metadata: line 3 is damaged");
    CHECK_INT(back.nkernels, 0); /* left empty */
    kp_error_clear(&err);

    /* Store and find an entry. */
    char dir[] = "/tmp/kprof-cache-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("KPROF_CACHE_DIR", dir, 1);
    unsigned char bin[5] = {1, 2, 3, 4, 5};
    CHECK_INT(kp_cache_put("opencl", 0x1234, bin, 5, &meta, NULL), KPROF_OK);
    CHECK_INT(kp_cache_put("opencl", 0x1234, bin, 0, &meta, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "no binary");
    kp_error_clear(&err);
    unsigned char *got = NULL;
    size_t n = 0;
    CHECK_INT(kp_cache_get("opencl", 0x1234, &got, &n, &back), 0);
    CHECK_INT(n, 5);
    CHECK(got && memcmp(got, bin, 5) == 0);
    CHECK_INT(back.nkernels, 2);
    free(got);
    kp_program_meta_free(&back);
    CHECK_INT(kp_cache_get("opencl", 0x9999, &got, &n, &back), -1);
    CHECK_INT(kp_cache_get("cuda", 0x1234, &got, &n, &back), -1);
    /* A cache folder that is a file: the entry cannot be written (IO), and is then a miss. */
    char file[300];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    setenv("KPROF_CACHE_DIR", file, 1);
    CHECK_INT(kp_cache_put("opencl", 0x1234, bin, 5, &meta, &err), KPROF_IO);
    CHECK(err.message[0] != '\0');
    kp_error_clear(&err);
    CHECK_INT(kp_cache_get("opencl", 0x1234, &got, &n, &back), -1);
    /* No folder can be named at all. */
    const char *home = getenv("HOME");
    char *home_copy = home ? strdup(home) : NULL;
    unsetenv("KPROF_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    CHECK_INT(kp_cache_put("opencl", 0x1234, bin, 5, &meta, &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "no folder can be named");
    kp_error_clear(&err);
    if (home_copy) setenv("HOME", home_copy, 1);
    free(home_copy);

    /* The key changes with source, options and device. */
    kp_device_info dev = {.backend = "opencl", .name = "d"};
    kp_source src = {.path = "k.cl", .text = "abc", .len = 3, .options = "", .entry = ""};
    uint64_t k1 = kp_cache_key(&dev, &src);
    src.options = "-DX=1";
    uint64_t k2 = kp_cache_key(&dev, &src);
    src.options = "";
    src.text = "abd";
    uint64_t k3 = kp_cache_key(&dev, &src);
    src.text = "abc";
    snprintf(dev.name, sizeof dev.name, "e");
    uint64_t k4 = kp_cache_key(&dev, &src);
    CHECK(k1 != k2 && k1 != k3 && k1 != k4);
    snprintf(dev.name, sizeof dev.name, "d");
    CHECK(kp_cache_key(&dev, &src) == k1);
    /* The path: not for OpenCL; for CUDA, whose binary's line info names it (--source). */
    src.path = "copy/k.cl";
    CHECK(kp_cache_key(&dev, &src) == k1);
    src.lang = KP_LANG_CUDA;
    src.path = "k.cu";
    uint64_t c1 = kp_cache_key(&dev, &src);
    src.path = "kernels/k/k.cu";
    CHECK(kp_cache_key(&dev, &src) != c1);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
    free(text);
    TEST_DONE();
}
