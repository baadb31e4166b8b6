/*
 * test_cuda_parse.c — the CUDA backend's pure parts, no GPU needed: kernel declarations read
 * from source, demangled names, option words, the NVRTC architecture choice, the occupancy
 * arithmetic (checked against NVIDIA's header-only calculator over a sweep) and how CUDA errors
 * are named and sorted into kprof statuses.
 */
#include "runtime/cuda_api.h"
#include "backend/cuda/cuda_parse.h"
#include "backend/cuda/occupancy.h"
#include "core/demangle.h"
#include "tests/unit/test.h"

#include <cuda_occupancy.h>

#include <stdlib.h>

static const char *const source =
    "#include \"scale.h\"\n"
    "#define KERNEL(n) __global__ void n(int *p)\n"
    "/* __global__ void commented(int a) */\n"
    "// __global__ void also_commented(int a)\n"
    "static const char *s = \"__global__ void in_string(int)\";\n"
    "template <int N> __global__ void scale(float *x, unsigned n)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] = x[i] * N;\n"
    "}\n"
    "template __global__ void scale<2>(float *, unsigned);\n"
    "namespace ns {\n"
    "__global__ void twice(float *x, unsigned n);\n"
    "__global__ void twice(float *x, unsigned n) { x[0] = n; }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256, 2)\n"
    "    add(float *__restrict__ out, const float *__restrict__ a, float const *b,\n"
    "        unsigned int n /* count */, float4 v, long long big = 3, int arr[4])\n"
    "{\n"
    "}\n"
    "extern \"C\" {\n"
    "__global__ void none(void) {}\n"
    "__global__ void empty() {}\n"
    "}\n"
    "__global__ void over(float *x) {}\n"
    "__global__ void over(int x) {}\n"
    "__global__ void over2(float *x) {}\n"
    "__global__ void over2(int *x) {}\n"
    "template <typename T> __global__ void tmpl(T *x, T v) {}\n"
    "template __global__ void tmpl<float>(float *, float);\n";

static const kp_cuda_decl *find_named(const kp_cuda_decls *d, const char *name)
{
    for (int i = 0; i < d->count; i++)
        if (strcmp(d->decls[i].name, name) == 0) return &d->decls[i];
    return NULL;
}

static void test_parse_kernels(void)
{
    kp_cuda_decls d;
    CHECK_INT(kp_cuda_parse_kernels(source, strlen(source), &d, NULL), KPROF_OK);
    CHECK(find_named(&d, "commented") == NULL);
    CHECK(find_named(&d, "also_commented") == NULL);
    CHECK(find_named(&d, "in_string") == NULL);
    CHECK(find_named(&d, "n") == NULL); /* the macro's body is a preprocessor line */

    const kp_cuda_decl *scale = kp_cuda_decl_find(&d, "scale", 2, NULL);
    CHECK(scale != NULL);
    if (scale) {
        /* The template and its explicit instantiation agree; the one naming them wins. */
        CHECK_STR(scale->params[0].name, "x");
        CHECK_STR(scale->params[0].type_name, "float*");
        CHECK_INT(scale->params[0].pointer, 1);
        CHECK_STR(scale->params[1].name, "n");
        CHECK_STR(scale->params[1].type_name, "unsigned");
        CHECK_INT(scale->params[1].pointer, 0);
    }
    const kp_cuda_decl *twice = kp_cuda_decl_find(&d, "twice", 2, "10");
    CHECK(twice != NULL);
    if (twice) CHECK_STR(twice->params[1].name, "n");
    CHECK(kp_cuda_decl_find(&d, "twice", 3, NULL) == NULL);

    const kp_cuda_decl *add = kp_cuda_decl_find(&d, "add", 7, NULL);
    CHECK(add != NULL);
    if (add) {
        CHECK_STR(add->params[0].name, "out");
        CHECK_STR(add->params[0].type_name, "float*");
        CHECK_STR(add->params[1].name, "a");
        CHECK_STR(add->params[1].type_name, "const float*");
        CHECK_STR(add->params[2].type_name, "const float*");
        CHECK_STR(add->params[3].name, "n");
        CHECK_STR(add->params[3].type_name, "unsigned int");
        CHECK_STR(add->params[4].type_name, "float4");
        CHECK_INT(add->params[4].pointer, 0);
        CHECK_STR(add->params[5].name, "big");
        CHECK_STR(add->params[5].type_name, "long long");
        CHECK_STR(add->params[6].name, "arr");
        CHECK_STR(add->params[6].type_name, "int*");
        CHECK_INT(add->params[6].pointer, 1);
    }
    CHECK(kp_cuda_decl_find(&d, "none", 0, NULL) != NULL);
    CHECK(kp_cuda_decl_find(&d, "empty", 0, NULL) != NULL);
    /* Overloads with one parameter each: only the pointer pattern tells them apart. */
    CHECK(kp_cuda_decl_find(&d, "over", 1, NULL) == NULL);
    const kp_cuda_decl *over = kp_cuda_decl_find(&d, "over", 1, "0");
    CHECK(over != NULL);
    if (over) CHECK_STR(over->params[0].type_name, "int");
    CHECK(kp_cuda_decl_find(&d, "over2", 1, "1") == NULL); /* both pointers: ambiguous */
    /* A template's definition names its parameters; its instantiation does not. */
    const kp_cuda_decl *tmpl = kp_cuda_decl_find(&d, "tmpl", 2, "10");
    CHECK(tmpl != NULL);
    if (tmpl) {
        CHECK_STR(tmpl->params[0].name, "x");
        CHECK_STR(tmpl->params[0].type_name, "T*");
    }
    /* Source order is kept. */
    const kp_cuda_decl *first = find_named(&d, "scale"), *last = find_named(&d, "tmpl");
    CHECK(first && last && first->order < last->order);
    kp_cuda_decls_free(&d);
    CHECK_INT(d.count, 0);

    /* Nothing to find, and odd input, are not errors. */
    CHECK_INT(kp_cuda_parse_kernels("", 0, &d, NULL), KPROF_OK);
    CHECK_INT(d.count, 0);
    kp_cuda_decls_free(&d);
    const char *odd = "__global__ __global__ void ( ) ; __global__ void k(int a, ";
    CHECK_INT(kp_cuda_parse_kernels(odd, strlen(odd), &d, NULL), KPROF_OK);
    kp_cuda_decls_free(&d);
    const char *unterminated = "/* never closed __global__ void k(int a)";
    CHECK_INT(kp_cuda_parse_kernels(unterminated, strlen(unterminated), &d, NULL), KPROF_OK);
    CHECK_INT(d.count, 0);
    kp_cuda_decls_free(&d);
}

static void test_param_lists(void)
{
    kp_cuda_decl_param *p = NULL;
    int n = -1;
    const char *demangled = "float const*, unsigned int, ns::Foo<int, 2>, double* const*";
    CHECK_INT(kp_cuda_parse_param_list(demangled, strlen(demangled), 0, &p, &n, NULL), KPROF_OK);
    CHECK_INT(n, 4);
    if (n == 4) {
        CHECK_STR(p[0].type_name, "const float*");
        CHECK_STR(p[0].name, "");
        CHECK_INT(p[0].pointer, 1);
        CHECK_STR(p[1].type_name, "unsigned int");
        CHECK_STR(p[1].name, "");
        CHECK_STR(p[2].type_name, "ns::Foo<int, 2>");
        CHECK_INT(p[2].pointer, 0);
        CHECK_STR(p[3].type_name, "double**");
        CHECK_INT(p[3].pointer, 1);
    }
    free(p);
    CHECK_INT(kp_cuda_parse_param_list("void", 4, 1, &p, &n, NULL), KPROF_OK);
    CHECK_INT(n, 0);
    CHECK(p == NULL);
    CHECK_INT(kp_cuda_parse_param_list("", 0, 1, &p, &n, NULL), KPROF_OK);
    CHECK_INT(n, 0);
    const char *named = "Foo<int> f, ns::Type, T *p, const int";
    CHECK_INT(kp_cuda_parse_param_list(named, strlen(named), 1, &p, &n, NULL), KPROF_OK);
    CHECK_INT(n, 4);
    if (n == 4) {
        CHECK_STR(p[0].name, "f");
        CHECK_STR(p[0].type_name, "Foo<int>");
        CHECK_STR(p[1].name, "");
        CHECK_STR(p[1].type_name, "ns::Type");
        CHECK_STR(p[2].name, "p");
        CHECK_STR(p[2].type_name, "T*");
        CHECK_STR(p[3].name, "");
        CHECK_STR(p[3].type_name, "const int");
    }
    free(p);
}

static void test_names(void)
{
    char name[256], params[256];
    CHECK_INT(
        kp_cuda_split_demangled("void tk<16>(float*)", name, sizeof name, params, sizeof params),
        1);
    CHECK_STR(name, "tk<16>");
    CHECK_STR(params, "float*");
    CHECK_INT(
        kp_cuda_split_demangled("ns::k2(int, double*)", name, sizeof name, params, sizeof params),
        1);
    CHECK_STR(name, "ns::k2");
    CHECK_STR(params, "int, double*");
    kp_cuda_split_demangled("void tk<16, 4>(float*)", name, sizeof name, NULL, 0);
    CHECK_STR(name, "tk<16, 4>");
    kp_cuda_split_demangled("(anonymous namespace)::k(int)", name, sizeof name, params,
                            sizeof params);
    CHECK_STR(name, "(anonymous namespace)::k");
    kp_cuda_split_demangled("void ns::f<ns::Bar<int> >(void (*)(int))", name, sizeof name, params,
                            sizeof params);
    CHECK_STR(name, "ns::f<ns::Bar<int> >");
    CHECK_STR(params, "void (*)(int)");
    CHECK_INT(kp_cuda_split_demangled("k3()", name, sizeof name, params, sizeof params), 1);
    CHECK_STR(name, "k3");
    CHECK_STR(params, "");
    CHECK_INT(kp_cuda_split_demangled("plain", name, sizeof name, params, sizeof params), 0);
    CHECK_STR(name, "plain");
    CHECK_STR(params, "");

    char base[128];
    kp_cuda_base_name("ns::tk<16>", base, sizeof base);
    CHECK_STR(base, "tk");
    kp_cuda_base_name("&scale<3>", base, sizeof base);
    CHECK_STR(base, "scale");
    kp_cuda_base_name("(anonymous namespace)::k", base, sizeof base);
    CHECK_STR(base, "k");
    kp_cuda_base_name("a::(anonymous namespace)::b::k(float*)", base, sizeof base);
    CHECK_STR(base, "k");
    kp_cuda_base_name("demo_add", base, sizeof base);
    CHECK_STR(base, "demo_add");

    CHECK(kp_cuda_is_identifier("demo_add"));
    CHECK(kp_cuda_is_identifier("_k1"));
    CHECK(!kp_cuda_is_identifier("tk<16>"));
    CHECK(!kp_cuda_is_identifier("ns::k"));
    CHECK(!kp_cuda_is_identifier("1k"));
    CHECK(!kp_cuda_is_identifier(""));
    CHECK(!kp_cuda_is_identifier(NULL));

    /* Through libstdc++'s demangler where the machine has it. */
    char out[256];
    if (kp_demangle("_Z2tkILi16EEvPf", out, sizeof out)) {
        CHECK_STR(out, "void tk<16>(float*)");
        CHECK_INT(kp_demangle("_ZN2ns2k2EiPd", out, sizeof out), 1);
        CHECK_STR(out, "ns::k2(int, double*)");
        CHECK_INT(kp_demangle("_ZN2ns2k2EiPd", out, 4), 0); /* too small */
    }
    CHECK_INT(kp_demangle("demo_add", out, sizeof out), 0);
    CHECK_INT(kp_demangle("_Znotmangled!", out, sizeof out), 0);
}

static void test_options_and_arch(void)
{
    char *copy = NULL;
    const char **argv = NULL;
    int argc = -1;
    CHECK_INT(kp_cuda_split_options(" -DN=4 -Iinc\t --use_fast_math  ", &copy, &argv, &argc, NULL),
              KPROF_OK);
    CHECK_INT(argc, 3);
    if (argc == 3) {
        CHECK_STR(argv[0], "-DN=4");
        CHECK_STR(argv[1], "-Iinc");
        CHECK_STR(argv[2], "--use_fast_math");
    }
    free(copy);
    free(argv);
    CHECK_INT(kp_cuda_split_options("", &copy, &argv, &argc, NULL), KPROF_OK);
    CHECK_INT(argc, 0);
    free(copy);
    free(argv);
    CHECK_INT(kp_cuda_split_options(NULL, &copy, &argv, &argc, NULL), KPROF_OK);
    CHECK_INT(argc, 0);
    free(copy);
    free(argv);

    static const int archs[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
    int n = (int)(sizeof archs / sizeof archs[0]);
    CHECK_INT(kp_cuda_pick_arch(archs, n, 90), 90);
    CHECK_INT(kp_cuda_pick_arch(archs, n, 91), 90);
    CHECK_INT(kp_cuda_pick_arch(archs, n, 122), 121);
    CHECK_INT(kp_cuda_pick_arch(archs, n, 70), -1);
    CHECK_INT(kp_cuda_pick_arch(archs, 0, 90), -1);
}

/* An H200 (sm_90) as the driver reports it. */
static kp_cuda_occ_device h200(void)
{
    kp_cuda_occ_device d = {
        .cc_major = 9,
        .cc_minor = 0,
        .warp_size = 32,
        .max_threads_per_block = 1024,
        .max_threads_per_sm = 2048,
        .max_blocks_per_sm = 32,
        .regs_per_sm = 65536,
        .regs_per_block = 65536,
        .smem_per_sm = 233472,
        .smem_per_block = 49152,
        .smem_per_block_optin = 232448,
        .smem_reserved_per_block = 1024,
    };
    return d;
}

static kp_cuda_occ_kernel kernel(int regs, uint64_t static_smem, uint64_t dyn)
{
    kp_cuda_occ_kernel k = {
        .max_threads = 1024,
        .registers = regs,
        .static_smem = static_smem,
        .max_dynamic_smem = 49152 - static_smem,
    };
    /* As the backend does: raise the limit when the launch needs more. */
    if (dyn > k.max_dynamic_smem) k.max_dynamic_smem = dyn;
    return k;
}

static void test_occupancy(void)
{
    kp_cuda_occ_device d = h200();
    kp_cuda_occ_limits l;
    kp_cuda_occ_kernel k = kernel(64, 0, 0);
    /* REFERENCE.md: 64 registers, 256 threads: 4 blocks per SM, register-limited. */
    kp_cuda_occupancy_limits(&d, &k, 256, 0, &l);
    CHECK_INT(l.blocks_per_sm, 4);
    CHECK_INT(l.registers, 4);
    CHECK_INT(l.warps, 8);
    CHECK_STR(l.limiter, "registers");
    CHECK_NEAR(kp_cuda_occupancy_fraction(l.blocks_per_sm, 256, 32, 2048), 0.5, 1e-12);

    /* 255 registers at 128 threads: two warps' worth per sub-partition. */
    k = kernel(255, 0, 0);
    kp_cuda_occupancy_limits(&d, &k, 128, 0, &l);
    CHECK_INT(l.blocks_per_sm, 2);
    CHECK_STR(l.limiter, "registers");

    /* 100000 bytes of dynamic shared memory: two blocks fit in 228 KiB. */
    k = kernel(16, 0, 100000);
    kp_cuda_occupancy_limits(&d, &k, 256, 100000, &l);
    CHECK_INT(l.shared_memory, 2);
    CHECK_INT(l.blocks_per_sm, 2);
    CHECK_STR(l.limiter, "shared memory");

    /* Full occupancy from two resources at once names the launch shape, not registers. */
    k = kernel(32, 0, 0);
    kp_cuda_occupancy_limits(&d, &k, 1024, 0, &l);
    CHECK_INT(l.blocks_per_sm, 2);
    CHECK_INT(l.registers, 2);
    CHECK_STR(l.limiter, "warps");
    CHECK_NEAR(kp_cuda_occupancy_fraction(2, 1024, 32, 2048), 1.0, 1e-12);

    /* One warp per block: the SM's 32 block slots bind first. */
    k = kernel(16, 0, 0);
    kp_cuda_occupancy_limits(&d, &k, 32, 0, &l);
    CHECK_INT(l.blocks_per_sm, 32);
    CHECK_STR(l.limiter, "blocks");
    CHECK_NEAR(kp_cuda_occupancy_fraction(32, 32, 32, 2048), 0.5, 1e-12);

    /* Blocks that cannot run at all. */
    kp_cuda_occupancy_limits(&d, &k, 2048, 0, &l);
    CHECK_INT(l.blocks_per_sm, 0);
    CHECK_STR(l.limiter, "warps");
    k = kernel(16, 0, 0);
    k.max_dynamic_smem = 49152;
    kp_cuda_occupancy_limits(&d, &k, 64, 60000, &l); /* more than allowed without opt-in */
    CHECK_INT(l.shared_memory, 0);
    CHECK_STR(l.limiter, "shared memory");
    k = kernel(16, 0, 240000);
    kp_cuda_occupancy_limits(&d, &k, 64, 240000, &l); /* beyond the opt-in limit */
    CHECK_INT(l.blocks_per_sm, 0);

    /* The driver's number wins: the limiter is the resource whose limit equals it, else the
     * closest. */
    kp_cuda_occ_limits fake = {.warps = 8, .registers = 4, .shared_memory = 3, .blocks = 32};
    CHECK_STR(kp_cuda_occupancy_limiter(&fake, 3), "shared memory");
    CHECK_STR(kp_cuda_occupancy_limiter(&fake, 4), "registers");
    CHECK_STR(kp_cuda_occupancy_limiter(&fake, 7), "warps");
    CHECK_STR(kp_cuda_occupancy_limiter(&fake, 30), "blocks");
    CHECK_NEAR(kp_cuda_occupancy_fraction(0, 256, 32, 2048), 0, 0);
    CHECK_NEAR(kp_cuda_occupancy_fraction(64, 64, 32, 2048), 1.0, 0);
    /* A 48-thread block takes two warp slots: 16 blocks fill 32 of 64 slots. */
    CHECK_NEAR(kp_cuda_occupancy_fraction(16, 48, 32, 2048), 0.5, 1e-12);
}

/* The arithmetic agrees with NVIDIA's calculator (CUDA 13.0 cuda_occupancy.h) for sm_80, sm_86
 * and sm_90 over registers, block sizes, static and dynamic shared memory. */
static void test_occupancy_against_nvidia(void)
{
    static const struct {
        int major, minor, max_blocks, smem_per_sm, optin;
    } gpus[] = {{8, 0, 32, 167936, 166912}, {8, 6, 16, 102400, 101376}, {9, 0, 32, 233472, 232448}};
    static const int regs[] = {0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 96, 128, 168, 200, 255};
    static const int threads[] = {1, 32, 33, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024};
    static const uint64_t statics[] = {0, 100, 4096, 40000};
    static const uint64_t dyns[] = {0, 1, 1024, 8000, 30000, 60000, 100000, 160000, 220000};
    int checked = 0, disagreements = 0;
    for (size_t g = 0; g < sizeof gpus / sizeof gpus[0]; g++) {
        kp_cuda_occ_device d = h200();
        d.cc_major = gpus[g].major;
        d.cc_minor = gpus[g].minor;
        d.max_blocks_per_sm = gpus[g].max_blocks;
        d.smem_per_sm = (uint64_t)gpus[g].smem_per_sm;
        d.smem_per_block_optin = (uint64_t)gpus[g].optin;
        if (gpus[g].minor == 6) d.max_threads_per_sm = 1536;
        cudaOccDeviceProp prop = {
            .computeMajor = d.cc_major,
            .computeMinor = d.cc_minor,
            .maxThreadsPerBlock = d.max_threads_per_block,
            .maxThreadsPerMultiprocessor = d.max_threads_per_sm,
            .regsPerBlock = d.regs_per_block,
            .regsPerMultiprocessor = d.regs_per_sm,
            .warpSize = d.warp_size,
            .sharedMemPerBlock = d.smem_per_block,
            .sharedMemPerMultiprocessor = d.smem_per_sm,
            .numSms = 132,
            .sharedMemPerBlockOptin = d.smem_per_block_optin,
            .reservedSharedMemPerBlock = d.smem_reserved_per_block,
        };
        cudaOccDeviceState state = {.cacheConfig = CACHE_PREFER_NONE,
                                    .carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT};
        for (size_t r = 0; r < sizeof regs / sizeof regs[0]; r++)
            for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++)
                for (size_t s = 0; s < sizeof statics / sizeof statics[0]; s++)
                    for (size_t y = 0; y < sizeof dyns / sizeof dyns[0]; y++) {
                        kp_cuda_occ_kernel k = kernel(regs[r], statics[s], dyns[y]);
                        if (statics[s] + dyns[y] > d.smem_per_block_optin) continue;
                        cudaOccFuncAttributes fa = {
                            .maxThreadsPerBlock = 1024,
                            .numRegs = regs[r],
                            .sharedSizeBytes = statics[s],
                            .partitionedGCConfig = PARTITIONED_GC_OFF,
                            .shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN,
                            .maxDynamicSharedSizeBytes = k.max_dynamic_smem,
                            .numBlockBarriers = 1,
                        };
                        cudaOccResult res;
                        memset(&res, 0, sizeof res);
                        if (cudaOccMaxActiveBlocksPerMultiprocessor(
                                &res, &prop, &fa, &state, threads[t], dyns[y]) != CUDA_OCC_SUCCESS)
                            continue;
                        kp_cuda_occ_limits l;
                        kp_cuda_occupancy_limits(&d, &k, (uint64_t)threads[t], dyns[y], &l);
                        checked++;
                        if (l.blocks_per_sm != res.activeBlocksPerMultiprocessor ||
                            l.registers != res.blockLimitRegs ||
                            (l.shared_memory != res.blockLimitSharedMem &&
                             !(l.shared_memory == KP_CUDA_OCC_UNLIMITED)) ||
                            l.warps != res.blockLimitWarps) {
                            if (disagreements++ < 10)
                                fprintf(stderr,
                                        "sm_%d%d regs %d threads %d static %llu dyn %llu: "
                                        "kprof %d (w %d r %d s %d) nvidia %d (w %d r %d s %d)\n",
                                        d.cc_major, d.cc_minor, regs[r], threads[t],
                                        (unsigned long long)statics[s], (unsigned long long)dyns[y],
                                        l.blocks_per_sm, l.warps, l.registers, l.shared_memory,
                                        res.activeBlocksPerMultiprocessor, res.blockLimitWarps,
                                        res.blockLimitRegs, res.blockLimitSharedMem);
                        }
                    }
    }
    CHECK(checked > 10000);
    CHECK_INT(disagreements, 0);
}

static void test_errors(void)
{
    /* Without the driver loaded, names come from kprof's own list. */
    CHECK_STR(kp_cuda_result_name(CUDA_ERROR_ILLEGAL_ADDRESS), "CUDA_ERROR_ILLEGAL_ADDRESS");
    CHECK_STR(kp_cuda_result_name(CUDA_ERROR_NO_DEVICE), "CUDA_ERROR_NO_DEVICE");
    CHECK_STR(kp_cuda_result_name((CUresult)12345), "CUDA_ERROR_UNKNOWN_CODE");
    char text[128];
    kp_cuda_error_text(CUDA_ERROR_MISALIGNED_ADDRESS, text, sizeof text);
    CHECK_STR(text, "CUDA_ERROR_MISALIGNED_ADDRESS (716)");

    CHECK_INT(kp_cuda_result_status(CUDA_SUCCESS), KPROF_OK);
    static const CUresult faults[] = {
        CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_MISALIGNED_ADDRESS,   CUDA_ERROR_ILLEGAL_INSTRUCTION,
        CUDA_ERROR_LAUNCH_FAILED,   CUDA_ERROR_HARDWARE_STACK_ERROR, CUDA_ERROR_ASSERT,
        CUDA_ERROR_INVALID_PC,      CUDA_ERROR_LAUNCH_TIMEOUT};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        CHECK_INT(kp_cuda_result_status(faults[i]), KPROF_FAULT);
    CHECK_INT(kp_cuda_result_status(CUDA_ERROR_INVALID_VALUE), KPROF_INVALID);
    CHECK_INT(kp_cuda_result_status(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES), KPROF_INVALID);
    CHECK_INT(kp_cuda_result_status(CUDA_ERROR_OUT_OF_MEMORY), KPROF_NOMEM);
    CHECK_INT(kp_cuda_result_status(CUDA_ERROR_INVALID_PTX), KPROF_COMPILE);
    CHECK_INT(kp_cuda_result_status(CUDA_ERROR_NO_BINARY_FOR_GPU), KPROF_COMPILE);
    CHECK_INT(kp_cuda_result_status(CUDA_ERROR_NO_DEVICE), KPROF_UNAVAILABLE);
    CHECK_INT(kp_cuda_result_status(CUDA_ERROR_STUB_LIBRARY), KPROF_UNAVAILABLE);
    CHECK_INT(kp_cuda_result_status(CUDA_ERROR_NOT_READY), KPROF_BACKEND);
    CHECK_INT(kp_cuda_result_status((CUresult)12345), KPROF_BACKEND);
}

static void put(unsigned char *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* kp_cuda_image_check as 0 or -1, its message in *why (cleared first). */
static int image_check(kp_error *why, const unsigned char *p, size_t len)
{
    kp_error_clear(why);
    return kp_cuda_image_check(p, len, why) == KPROF_OK ? 0 : -1;
}

static void test_image_check(void)
{
    /* A minimal ELF64 image: header, one section with 16 bytes of contents at 0x40, the
     * section table (two 64-byte entries) at 0x50. */
    unsigned char elf[0x50 + 128];
    memset(elf, 0, sizeof elf);
    memcpy(elf,
           "\x7f"
           "ELF",
           4);
    elf[4] = 2, elf[5] = 1;
    put(elf + 0x28, 0x50, 8); /* e_shoff */
    put(elf + 0x3A, 64, 2);   /* e_shentsize */
    put(elf + 0x3C, 2, 2);    /* e_shnum */
    unsigned char *sh1 = elf + 0x50 + 64;
    put(sh1 + 4, 1, 4);       /* SHT_PROGBITS */
    put(sh1 + 0x18, 0x40, 8); /* offset */
    put(sh1 + 0x20, 16, 8);   /* size */
    kp_error why = {0};
    CHECK_INT(image_check(&why, elf, sizeof elf), 0);
    CHECK_INT(image_check(&why, elf, sizeof elf - 1), -1);
    CHECK_CONTAINS(why.message, "header tables end past");
    put(sh1 + 0x20, 1u << 20, 8); /* a section bigger than the file */
    CHECK_INT(image_check(&why, elf, sizeof elf), -1);
    CHECK_CONTAINS(why.message, "section 1 ends past");
    put(sh1 + 4, 8, 4); /* but NOBITS takes no file space */
    CHECK_INT(image_check(&why, elf, sizeof elf), 0);
    put(elf + 0x28, UINT64_MAX - 10, 8); /* an offset that would wrap */
    CHECK_INT(image_check(&why, elf, sizeof elf), -1);
    CHECK_INT(image_check(&why,
                          (const unsigned char *)"hello, world, this is not a cubin at all, no"
                                                 " header here, just text ....",
                          70),
              -1);
    CHECK_CONTAINS(why.message, "not a cubin");
    unsigned char fat[64];
    memset(fat, 0, sizeof fat);
    put(fat, 0xBA55ED50u, 4);
    put(fat + 6, 16, 2);
    put(fat + 8, 48, 8);
    CHECK_INT(image_check(&why, fat, sizeof fat), 0);
    CHECK_INT(image_check(&why, fat, sizeof fat - 1), -1);
}

/* Compile-time block rules: PTX as NVRTC writes it for __launch_bounds__(64) (and by hand for
 * .reqntid), and a cubin's .nv.info records as ptxas 13.0 writes them (EIFMT_SVAL 0x04,
 * EIATTR_MAX_THREADS 0x05, EIATTR_REQNTID 0x10, each with three 32-bit extents). */
static void test_ntid(void)
{
    static const char ptx[] =
        "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_90\n"
        ".address_size 64\n\n"
        "\t// .globl\tlb\n"
        ".visible .entry lb(\n\t.param .u64 lb_param_0,\n\t.param .u32 lb_param_2\n)\n"
        ".maxntid 64, 1, 1\n{\n\tmov.u32 \t%r4, %ntid.x;\n\tret;\n}\n"
        "/* .entry rq() .reqntid 1, 1, 1 { } (a comment, not an entry) */\n"
        ".visible .entry rq(\n\t.param .u64 rq_param_0\n)\n"
        ".reqntid 32, 2 // x, y\n.minnctapersm 2\n{\n\tret;\n}\n"
        ".visible .entry plain(\n\t.param .u64 plain_param_0\n)\n{\n\tret;\n}\n"
        ".visible .entry lb_longer(\n)\n.reqntid 7\n{\n\tret;\n}\n"
        ".entry both()\n.maxntid 256\n.reqntid 128\n{\n}\n"
        ".entry bad()\n.maxntid 0, 1, 1\n{\n}\n";
    uint64_t v[3];
    CHECK_INT(kp_cuda_ptx_ntid(ptx, strlen(ptx), "lb", v), KP_CUDA_NTID_MAX);
    CHECK(v[0] == 64 && v[1] == 1 && v[2] == 1);
    CHECK_INT(kp_cuda_ptx_ntid(ptx, strlen(ptx), "rq", v), KP_CUDA_NTID_REQUIRED);
    CHECK(v[0] == 32 && v[1] == 2 && v[2] == 1);
    CHECK_INT(kp_cuda_ptx_ntid(ptx, strlen(ptx), "plain", v), KP_CUDA_NTID_NONE);
    CHECK(v[0] == 1 && v[1] == 1 && v[2] == 1);
    CHECK_INT(kp_cuda_ptx_ntid(ptx, strlen(ptx), "lb_longer", v), KP_CUDA_NTID_REQUIRED);
    CHECK_INT(v[0], 7);
    CHECK_INT(kp_cuda_ptx_ntid(ptx, strlen(ptx), "both", v), KP_CUDA_NTID_REQUIRED);
    CHECK_INT(v[0], 128);
    CHECK_INT(kp_cuda_ptx_ntid(ptx, strlen(ptx), "bad", v), KP_CUDA_NTID_NONE);
    CHECK_INT(kp_cuda_ptx_ntid(ptx, strlen(ptx), "missing", v), KP_CUDA_NTID_NONE);
    CHECK_INT(kp_cuda_ptx_ntid(ptx, 40, "lb", v), KP_CUDA_NTID_NONE); /* cut before it */
    CHECK_INT(kp_cuda_ptx_ntid("/* unterminated .entry lb() .maxntid 4 {", 40, "lb", v),
              KP_CUDA_NTID_NONE);

    /* A cubin: header, .shstrtab, .nv.info.lb with an HVAL record, a MAX_THREADS record and
     * (second image) a REQNTID one. */
    unsigned char elf[0x200];
    memset(elf, 0, sizeof elf);
    memcpy(elf,
           "\x7f"
           "ELF",
           4);
    elf[4] = 2, elf[5] = 1;
    static const char names[] = "\0.shstrtab\0.nv.info.lb\0.nv.info.l\0";
    memcpy(elf + 0x40, names, sizeof names);
    const unsigned char info[] = {0x04, 0x37, 0x04, 0x00, 0x82, 0x00, 0x00, 0x00, /* SVAL */
                                  0x03, 0x1b, 0xff, 0x00,                         /* HVAL */
                                  0x04, 0x05, 0x0c, 0x00, 0x40, 0,    0,    0,
                                  1,    0,    0,    0,    1,    0,    0,    0};
    memcpy(elf + 0x80, info, sizeof info);
    put(elf + 0x28, 0x100, 8); /* e_shoff */
    put(elf + 0x3A, 64, 2);
    put(elf + 0x3C, 4, 2);
    put(elf + 0x3E, 1, 2); /* e_shstrndx */
    unsigned char *sh = elf + 0x100 + 64;
    put(sh, 1, 4), put(sh + 4, 3, 4), put(sh + 0x18, 0x40, 8), put(sh + 0x20, sizeof names, 8);
    sh += 64;
    put(sh, 11, 4), put(sh + 4, 0x70000000, 4), put(sh + 0x18, 0x80, 8);
    put(sh + 0x20, sizeof info, 8);
    sh += 64; /* ".nv.info.l": a prefix of the wanted name, never taken for it */
    put(sh, 23, 4), put(sh + 4, 0x70000000, 4), put(sh + 0x18, 0x80, 8);
    put(sh + 0x20, sizeof info, 8);
    CHECK_INT(kp_cuda_cubin_ntid(elf, 0x100 + 4 * 64, "lb", v), KP_CUDA_NTID_MAX);
    CHECK(v[0] == 64 && v[1] == 1 && v[2] == 1);
    CHECK_INT(kp_cuda_cubin_ntid(elf, 0x100 + 4 * 64, "plain", v), KP_CUDA_NTID_NONE);
    elf[0x80 + 13] = 0x10; /* EIATTR_REQNTID */
    elf[0x80 + 20] = 2;    /* 64 x 2 x 1 */
    CHECK_INT(kp_cuda_cubin_ntid(elf, 0x100 + 4 * 64, "lb", v), KP_CUDA_NTID_REQUIRED);
    CHECK(v[0] == 64 && v[1] == 2 && v[2] == 1);
    /* A record whose size runs past the section is not read. */
    put(sh - 64 + 0x20, sizeof info - 4, 8);
    CHECK_INT(kp_cuda_cubin_ntid(elf, 0x100 + 4 * 64, "lb", v), KP_CUDA_NTID_NONE);
    /* A cut image is refused before anything is read. */
    CHECK_INT(kp_cuda_cubin_ntid(elf, 0x100 + 2 * 64, "lb", v), KP_CUDA_NTID_NONE);
    CHECK_INT(kp_cuda_cubin_ntid((const unsigned char *)ptx, sizeof ptx, "lb", v),
              KP_CUDA_NTID_NONE);
}

int main(void)
{
    test_ntid();
    test_image_check();
    test_parse_kernels();
    test_param_lists();
    test_names();
    test_options_and_arch();
    test_occupancy();
    test_occupancy_against_nvidia();
    test_errors();
    TEST_DONE();
}
