/* test_capture.c — a captured launch's folder (collect/capture.h): the pattern, the folder's
 * name, a write and read-back round trip, the manifest checks that keep a wrong replay from
 * starting, a failed write leaving nothing behind, and the output check's sentence. */
#include "collect/capture.h"

#include "base/util.h"
#include "test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_pattern(void)
{
    kp_capture_pattern p;
    kp_error err = {0};
    CHECK_INT(kp_capture_pattern_parse("softmax*", &p, &err), KPROF_OK);
    CHECK_STR(p.glob, "softmax*");
    CHECK_INT(p.select, KP_CAPTURE_FIRST);
    CHECK_INT(p.nth, 1);
    CHECK_INT(p.after, 1);
    CHECK(p.max_bytes == KP_CAPTURE_DEFAULT_MAX_BYTES);
    CHECK_INT(kp_capture_pattern_parse("scale@12", &p, &err), KPROF_OK);
    CHECK_STR(p.glob, "scale");
    CHECK_INT(p.select, KP_CAPTURE_NTH);
    CHECK_INT(p.nth, 12);
    CHECK_INT(kp_capture_pattern_parse("*gemm*@slowest", &p, &err), KPROF_OK);
    CHECK_INT(p.select, KP_CAPTURE_SLOWEST);
    CHECK_STR(p.glob, "*gemm*");
    /* '@' inside the name: the last one selects. */
    CHECK_INT(kp_capture_pattern_parse("a@b@2", &p, &err), KPROF_OK);
    CHECK_STR(p.glob, "a@b");
    const char *bad[] = {
        "", "@3", "k@", "k@0", "k@x", "k@-1", "k@1.5", "k\n@1", "k@99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kp_error e = {0};
        CHECK_INT(kp_capture_pattern_parse(bad[i], &p, &e), KPROF_INVALID);
        CHECK(e.message[0] != '\0');
    }
    kp_capture_pattern_parse("*soft*", &p, &err);
    CHECK(kp_capture_match(&p, "void softmax<float>(float*)", NULL));
    CHECK(kp_capture_match(&p, NULL, "_Z7softmaxPf"));
    CHECK(!kp_capture_match(&p, "gemm", "_Z4gemmv"));
    CHECK(!kp_capture_match(&p, NULL, NULL));
    /* The literal that lets a symbol be passed over without demangling it. */
    kp_capture_pattern_parse("*native::softmax*@2", &p, &err);
    CHECK_STR(p.literal, "softmax");
    CHECK(kp_capture_may_match(&p, "_ZN2at6native7softmaxIfEEvPf"));
    CHECK(!kp_capture_may_match(&p, "_Z4gemmPf"));
    kp_capture_pattern_parse("void *(float const*)", &p, &err);
    CHECK_STR(p.literal, ""); /* keywords and types are not mangled verbatim */
    CHECK(kp_capture_may_match(&p, "_Z4gemmPf"));
    kp_capture_pattern_parse("[abc]xyzzy*", &p, &err);
    CHECK_STR(p.literal, "xyzzy");
    kp_capture_pattern_parse("a\\bcd", &p, &err);
    CHECK_STR(p.literal, "");
    /* Numbers as the demangler spells them, sets read as fnmatch reads them. */
    kp_capture_pattern_parse("*gemm<128ul*", &p, &err);
    CHECK_STR(p.literal, "gemm");
    kp_capture_pattern_parse("[]abcdef]x*", &p, &err);
    CHECK_STR(p.literal, "");
    kp_capture_pattern_parse("[!]qwerty]kernel*", &p, &err);
    CHECK_STR(p.literal, "kernel");
    kp_capture_pattern_parse("*char16_t*", &p, &err);
    CHECK_STR(p.literal, "");
    kp_capture_pattern_parse("tiny", &p, &err);
    CHECK(kp_capture_match(&p, "tiny(float*, int)", "_Z4tinyPfi"));
    CHECK(kp_capture_match(&p, "void ns::tiny<float>(float*)", NULL));
    CHECK(!kp_capture_match(&p, "tiny_not(float*)", NULL));
    CHECK(!kp_capture_match(&p, "void tinyfoo<tiny>(float*)", NULL));
}

static void test_env(void)
{
    kp_capture_pattern p;
    kp_error err = {0};
    unsetenv("KPROF_CAPTURE");
    CHECK_INT(kp_capture_pattern_env(&p, &err), 0);
    setenv("KPROF_CAPTURE", "k@2", 1);
    setenv("KPROF_CAPTURE_WINDOW", "2.5", 1);
    setenv("KPROF_CAPTURE_MAX_BYTES", "1M", 1);
    setenv("KPROF_CAPTURE_AFTER", "0", 1);
    CHECK_INT(kp_capture_pattern_env(&p, &err), 1);
    CHECK_INT(p.nth, 2);
    CHECK_NEAR(p.window_s, 2.5, 0);
    CHECK_INT(p.max_bytes, 1 << 20);
    CHECK_INT(p.after, 0);
    setenv("KPROF_CAPTURE_WINDOW", "-1", 1);
    CHECK_INT(kp_capture_pattern_env(&p, &err), -1);
    CHECK_CONTAINS(err.message, "KPROF_CAPTURE_WINDOW");
    unsetenv("KPROF_CAPTURE_WINDOW");
    setenv("KPROF_CAPTURE_MAX_BYTES", "lots", 1);
    CHECK_INT(kp_capture_pattern_env(&p, &err), -1);
    unsetenv("KPROF_CAPTURE_MAX_BYTES");
    unsetenv("KPROF_CAPTURE_AFTER");
    unsetenv("KPROF_CAPTURE");
}

static void test_folder_name(void)
{
    char b[160];
    kp_capture_folder_name("scale", 2, b, sizeof b);
    CHECK_STR(b, "scale@2");
    kp_capture_folder_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, "
                           "float, float, at::native::Epilogue>(float*, const float*, int)",
                           37, b, sizeof b);
    CHECK_STR(b, "cunn_SoftMaxForward@37");
    kp_capture_folder_name("void add_kernel<(int)3>(float*)", 1, b, sizeof b);
    CHECK_STR(b, "add_kernel@1");
    kp_capture_folder_name("ns::k(int)", 1, b, sizeof b);
    CHECK_STR(b, "k@1");
    kp_capture_folder_name(".hidden k", 3, b, sizeof b);
    CHECK(b[0] != '.' && b[0] != '-');
    CHECK(strchr(b, ' ') == NULL && strchr(b, '/') == NULL);
    kp_capture_folder_name("", 1, b, sizeof b);
    CHECK_STR(b, "kernel@1");
    char longname[300];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    kp_capture_folder_name(longname, 9, b, sizeof b);
    CHECK(strlen(b) <= 82);
    kp_capture_folder_name("a/b\\c\x01", 1, b, sizeof b);
    CHECK(strchr(b, '/') == NULL && strchr(b, '\\') == NULL && strchr(b, '\x01') == NULL);
}

static int file_is(const char *path, const void *data, size_t n)
{
    char *got = NULL;
    size_t len = 0;
    kp_error err = {0};
    if (kp_file_read(path, &got, &len, &err) != KPROF_OK) return 0;
    int same = len == n && memcmp(got, data, n) == 0;
    free(got);
    return same;
}

/* A capture like the OpenCL collector's: a value, a mem argument used twice, a local, and a
 * struct of pointers passed by value (CUDA's shape) in one manifest. */
static kp_capture *sample_capture(void)
{
    kp_capture *c = malloc(sizeof *c);
    kp_capture_init(c);
    kp_error err = {0};
    snprintf(c->api, sizeof c->api, "opencl");
    snprintf(c->kernel, sizeof c->kernel, "scale");
    snprintf(c->symbol, sizeof c->symbol, "scale");
    c->launch = 2;
    c->select = KP_CAPTURE_NTH;
    snprintf(c->code_kind, sizeof c->code_kind, "opencl-source");
    snprintf(c->code_file, sizeof c->code_file, "kernel.cl");
    snprintf(c->build_options, sizeof c->build_options, "-DN=4");
    c->dims = 2;
    c->grid[0] = 64;
    c->grid[1] = 4;
    c->tg[0] = 16;
    c->tg[1] = 2;
    c->held_ns = 1234567;
    c->registers = 12;
    float a = 2.5f;
    CHECK_INT(kp_capture_add_value(c, &a, sizeof a, &err), 0);
    int j = kp_capture_add_alloc(c, 0, 1024, 1, "x", &err);
    CHECK_INT(j, 0);
    CHECK_INT(kp_capture_add_mem(c, j, &err), 1);
    CHECK_INT(kp_capture_add_mem(c, j, &err), 2);
    CHECK_INT(kp_capture_add_local(c, 256, &err), 3);
    uint64_t ptrs[2] = {0x7f0000001000ull, 0x7f0000002010ull};
    CHECK_INT(kp_capture_add_value(c, ptrs, sizeof ptrs, &err), 4);
    int j1 = kp_capture_add_alloc(c, 0x7f0000001000ull, 64, 4, NULL, &err);
    int j2 = kp_capture_add_alloc(c, 0x7f0000002000ull, 64, 4, NULL, &err);
    CHECK_INT(kp_capture_add_alloc(c, 0x7f0000001000ull, 64, 4, NULL, &err), j1);
    kp_capture_add_ptr(c, 4, 0, (uint32_t)j1, 0, &err);
    kp_capture_add_ptr(c, 4, 8, (uint32_t)j2, 0x10, &err);
    kp_capture_missing(c, "an image argument (%d) is not captured", 5);
    return c;
}

/* Past the list's room, its last line counts the rest. */
static void test_missing_count(void)
{
    kp_capture *c = malloc(sizeof *c);
    kp_capture_init(c);
    for (int i = 0; i < KP_CAPTURE_MAX_MISSING + 10; i++)
        kp_capture_missing(c, "thing %d", i);
    CHECK_INT(c->nmissing, KP_CAPTURE_MAX_MISSING);
    CHECK_STR(c->missing[KP_CAPTURE_MAX_MISSING - 2], "thing 62");
    CHECK_STR(c->missing[KP_CAPTURE_MAX_MISSING - 1], "... and 11 more things were not captured");
    kp_capture_release(c);
    free(c);
}

static void write_blobs(kp_capture_out *o, const kp_capture *c, unsigned char fill)
{
    kp_error err = {0};
    CHECK_INT(kp_capture_out_blob(o, "kernel.cl", "kernel void scale() {}\n", 23, &err), KPROF_OK);
    for (int j = 0; j < c->nallocs; j++) {
        unsigned char *b = malloc(c->allocs[j].bytes);
        memset(b, fill + j, c->allocs[j].bytes);
        CHECK_INT(kp_capture_out_blob(o, c->allocs[j].before, b, c->allocs[j].bytes, &err),
                  KPROF_OK);
        b[0] ^= 1;
        CHECK_INT(kp_capture_out_blob(o, c->allocs[j].after, b, c->allocs[j].bytes, &err),
                  KPROF_OK);
        free(b);
    }
}

static void test_round_trip(const char *root)
{
    kp_capture *c = sample_capture();
    kp_error err = {0};
    char kernels[4096];
    snprintf(kernels, sizeof kernels, "%s/kernels", root);
    kp_capture_out *o = NULL;
    CHECK_INT(kp_capture_out_open(kernels, "scale@2", &o, &err), KPROF_OK);
    write_blobs(o, c, 7);
    char path[4096];
    CHECK_INT(kp_capture_out_commit(o, c, 0, path, sizeof path, &err), KPROF_OK);
    char want[4200];
    snprintf(want, sizeof want, "%s/scale@2", kernels);
    CHECK_STR(path, want);
    CHECK(kp_capture_is_folder(path));
    char f[4400];
    snprintf(f, sizeof f, "%s/not-captured.txt", path);
    CHECK(file_is(f, "an image argument (5) is not captured\n", 38));

    kp_capture *r = malloc(sizeof *r);
    CHECK_INT(kp_capture_read(path, r, &err), KPROF_OK);
    CHECK_STR(r->api, "opencl");
    CHECK_STR(r->symbol, "scale");
    CHECK_INT(r->launch, 2);
    CHECK_INT(r->select, KP_CAPTURE_NTH);
    CHECK_INT(r->dims, 2);
    CHECK_INT(r->grid[0], 64);
    CHECK_INT(r->grid[1], 4);
    CHECK_INT(r->tg[0], 16);
    CHECK_INT(r->tg[1], 2);
    CHECK_INT(r->held_ns, 1234567);
    CHECK_INT(r->registers, 12);
    CHECK_INT(r->static_smem, -1);
    CHECK_STR(r->build_options, "-DN=4");
    CHECK(r->captured_at[0] != '\0');
    CHECK_INT(r->nargs, 5);
    CHECK_INT(r->args[0].kind, KP_CAPTURE_VALUE);
    CHECK_INT(r->args[0].size, 4);
    float a;
    memcpy(&a, r->args[0].bytes, 4);
    CHECK_NEAR(a, 2.5, 0);
    CHECK_INT(r->args[1].kind, KP_CAPTURE_MEM);
    CHECK_INT(r->args[2].alloc, 0);
    CHECK_INT(r->args[3].kind, KP_CAPTURE_LOCAL);
    CHECK_INT(r->args[3].size, 256);
    CHECK_INT(r->args[4].size, 16);
    CHECK(memcmp(r->args[4].bytes, c->args[4].bytes, 16) == 0);
    CHECK_INT(r->nallocs, 3);
    CHECK_STR(r->allocs[0].name, "x");
    CHECK_STR(r->allocs[1].name, "arg4");
    CHECK(r->allocs[2].address == 0x7f0000002000ull);
    CHECK_INT(r->nptrs, 2);
    CHECK_INT(r->ptrs[1].at, 8);
    CHECK_INT(r->ptrs[1].offset, 0x10);
    CHECK_INT(r->nmissing, 1);
    void *b = NULL;
    CHECK_INT(kp_capture_read_state(path, r, 2, 1, &b, &err), KPROF_OK);
    unsigned char want_b[64];
    memset(want_b, 9, sizeof want_b);
    want_b[0] ^= 1;
    CHECK(b && memcmp(b, want_b, 64) == 0);
    free(b);

    /* The check's sentences. */
    kp_capture_check k = {1, 1152, 0, -1, 0};
    char text[512];
    kp_capture_check_text(r, &k, text, sizeof text);
    CHECK_STR(text, "replay reproduces the program's output: 1.12 KiB identical");
    k.differing = 3;
    k.worst = 0;
    k.worst_bytes = 2;
    kp_capture_check_text(r, &k, text, sizeof text);
    CHECK_CONTAINS(text, "differs from the program's output in 2 bytes of 'x' (3 in all");
    k.have = 0;
    kp_capture_check_text(r, &k, text, sizeof text);
    CHECK_CONTAINS(text, "not checked");
    CHECK_INT(kp_capture_diff_bytes("abcd", "abed", 4), 1);

    /* A second capture of the same launch is refused without replace, and nothing changes. */
    CHECK_INT(kp_capture_out_open(kernels, "scale@2", &o, &err), KPROF_OK);
    write_blobs(o, c, 20);
    kp_error e2 = {0};
    CHECK_INT(kp_capture_out_commit(o, c, 0, path, sizeof path, &e2), KPROF_INVALID);
    CHECK_CONTAINS(e2.message, "--force");
    snprintf(f, sizeof f, "%s/alloc-0.before", want);
    unsigned char seven[1024];
    memset(seven, 7, sizeof seven);
    CHECK(file_is(f, seven, sizeof seven));
    /* ... and replaced with it. */
    CHECK_INT(kp_capture_out_open(kernels, "scale@2", &o, &err), KPROF_OK);
    write_blobs(o, c, 20);
    CHECK_INT(kp_capture_out_commit(o, c, 1, path, sizeof path, &err), KPROF_OK);
    memset(seven, 20, sizeof seven);
    CHECK(file_is(f, seven, sizeof seven));
    /* A symbolic link of the folder's name is never replaced, nor followed. */
    char link[4200], elsewhere[4200];
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", root);
    mkdir(elsewhere, 0777);
    snprintf(link, sizeof link, "%s/k@1", kernels);
    CHECK_INT(symlink(elsewhere, link), 0);
    CHECK_INT(kp_capture_out_open(kernels, "k@1", &o, &err), KPROF_OK);
    write_blobs(o, c, 3);
    kp_error e4 = {0};
    CHECK_INT(kp_capture_out_commit(o, c, 1, path, sizeof path, &e4), KPROF_INVALID);
    CHECK_CONTAINS(e4.message, "not a folder");
    CHECK(kp_path_is_dir(elsewhere));
    unlink(link);
    /* No temporary folder is left anywhere. */
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' | grep -v '^scale@2$')\"", kernels);
    CHECK_INT(system(cmd), 0);

    /* Damaged folders are refused, naming what is wrong. */
    struct {
        const char *from, *to, *says;
    } damage[] = {
        {"\"kprof_capture\": 1", "\"kprof_capture\": 2", "kprof_capture"},
        {"\"api\": \"opencl\"", "\"api\": \"metal\"", "api"},
        {"\"hex\": \"00002040\"", "\"hex\": \"0000204\"", "args.hex"},
        {"\"hex\": \"00002040\"", "\"hex\": \"0000zz40\"", "args.hex"},
        {"\"at\": 8", "\"at\": 12", "pointers.at"},
        {"\"file\": \"kernel.cl\"", "\"file\": \"../kernel.cl\"", "code.file"},
        {"\"bytes\": 1024", "\"bytes\": 1000", "1024 bytes where the capture says 1000"},
        {"\"kind\": \"local\"", "\"kind\": \"texture\"", "args.kind"},
    };
    char manifest[4400];
    snprintf(manifest, sizeof manifest, "%s/capture.json", want);
    char *text0 = NULL;
    size_t len0 = 0;
    CHECK_INT(kp_file_read(manifest, &text0, &len0, &err), KPROF_OK);
    for (size_t i = 0; i < sizeof damage / sizeof *damage; i++) {
        char *at = strstr(text0, damage[i].from);
        CHECK(at != NULL);
        if (!at) continue;
        kp_str s = {0};
        kp_str_append_n(&s, text0, (size_t)(at - text0));
        kp_str_append(&s, damage[i].to);
        kp_str_append(&s, at + strlen(damage[i].from));
        CHECK_INT(kp_file_write_atomic(manifest, s.data, s.len, &err), KPROF_OK);
        kp_str_free(&s);
        kp_capture *d = malloc(sizeof *d);
        kp_error e = {0};
        kprof_status st = kp_capture_read(want, d, &e);
        CHECK_INT(st, KPROF_CORRUPT);
        CHECK_CONTAINS(e.message, damage[i].says);
        kp_capture_release(d);
        free(d);
    }
    CHECK_INT(kp_file_write_atomic(manifest, text0, len0, &err), KPROF_OK);
    free(text0);
    /* An allocation's file cut short is found at read time too. */
    CHECK_INT(truncate(f, 10), 0);
    kp_error e3 = {0};
    kp_capture_release(r); /* kp_capture_read starts from an empty capture */
    CHECK_INT(kp_capture_read(want, r, &e3), KPROF_CORRUPT);
    CHECK_CONTAINS(e3.message, "alloc-0.before");

    kp_capture_release(r);
    free(r);
    kp_capture_release(c);
    free(c);
}

/* An unwritable kernels folder: a clear IO error, nothing made. */
static void test_unwritable(const char *root)
{
    if (geteuid() == 0) return; /* root writes anywhere: checked in the CLI test with a file */
    char ro[4096];
    snprintf(ro, sizeof ro, "%s/ro", root);
    mkdir(ro, 0555);
    kp_capture_out *o = NULL;
    kp_error err = {0};
    CHECK_INT(kp_capture_out_open(ro, "k@1", &o, &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "cannot make the folder");
    CHECK(o == NULL);
}

/* The kernels "folder" is a file: a clear error, nothing made. */
static void test_not_a_folder(const char *root)
{
    char file[4096];
    snprintf(file, sizeof file, "%s/plainfile", root);
    FILE *f = fopen(file, "w");
    fclose(f);
    kp_capture_out *o = NULL;
    kp_error err = {0};
    CHECK(kp_capture_out_open(file, "k@1", &o, &err) != KPROF_OK);
    CHECK(err.message[0] != '\0');
    CHECK(o == NULL);
}

int main(void)
{
    char root[] = "/tmp/kprof-test-capture-XXXXXX";
    if (!mkdtemp(root)) return 1;
    test_pattern();
    test_env();
    test_folder_name();
    test_missing_count();
    test_round_trip(root);
    test_unwritable(root);
    test_not_a_folder(root);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", root, root);
    if (system(cmd) != 0) return 1;
    return kp_test_failures ? 1 : 0;
}
