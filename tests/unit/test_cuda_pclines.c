/* test_cuda_pclines.c — PCs to source lines through a cubin's line table, as `kprof run --source`
 * maps sampled PCs (kp_cuda_pc_lines: CUPTI's cuptiGetSassToSourceCorrelation), with no GPU: a
 * kernel compiled by NVRTC the way kprof compiles it (-lineinfo, the source's path as the
 * program's name) must place the PCs of its loop on the loop's line and name the source file;
 * PCs past the function's end place nowhere; without -lineinfo nothing is placed and the note
 * says so. Skipped (77) where NVRTC or libcupti cannot be loaded. */
#include "backend/cuda/cuda_internal.h"
#include "core/pcsample.h"
#include "runtime/cuda_api.h"
#include "runtime/cupti_pcsampling_api.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SKIP 77

/* Line 7 is the loop body: nearly every instruction of the loop belongs to it. */
static const char kernel[] =
    "extern \"C\" __global__ void hot(float *out, const float *in,\n"
    "                                unsigned n, unsigned iters)\n"
    "{\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i >= n) return;\n"
    "    float acc = in[i];\n"
    "    for (unsigned k = 0; k < iters; k++) acc = acc * 1.000001f + 0.5f;\n"
    "    out[i] = acc;\n"
    "}\n";

static const char *const reasons[] = {"smsp__pcsamp_warps_issue_stalled_wait"};

/* NVRTC's cubin of the kernel for sm_90, named `path`; NULL with why[] when NVRTC cannot. */
static char *compile(const char *path, int lineinfo, size_t *len, char *why, size_t why_n)
{
    nvrtcProgram prog = NULL;
    char *cubin = NULL;
    if (kp_nvrtc.nvrtcCreateProgram(&prog, kernel, path, 0, NULL, NULL) != NVRTC_SUCCESS) {
        snprintf(why, why_n, "nvrtcCreateProgram failed");
        return NULL;
    }
    const char *opts[] = {"-arch=sm_90", "-lineinfo"};
    nvrtcResult rc = kp_nvrtc.nvrtcCompileProgram(prog, lineinfo ? 2 : 1, opts);
    if (rc == NVRTC_SUCCESS && kp_nvrtc.nvrtcGetCUBINSize(prog, len) == NVRTC_SUCCESS && *len > 0 &&
        (cubin = malloc(*len)) != NULL && kp_nvrtc.nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS) {
        free(cubin);
        cubin = NULL;
    }
    if (!cubin) snprintf(why, why_n, "NVRTC could not compile for sm_90 (%d)", (int)rc);
    kp_nvrtc.nvrtcDestroyProgram(&prog);
    return cubin;
}

int main(void)
{
    char why[512];
    kp_error load = {0};
    if (kp_cuda_nvrtc_load(&load) != KPROF_OK) {
        printf("SKIPPED: NVRTC: %s\n", load.message);
        return SKIP;
    }
    if (kp_cupti_pcsampling_load(&load) != KPROF_OK) {
        printf("SKIPPED: CUPTI: %s\n", load.message);
        return SKIP;
    }
    const char *path = "/kprof-test/kernels/hot/hot.cu";
    size_t len = 0;
    char *cubin = compile(path, 1, &len, why, sizeof why);
    if (!cubin) {
        printf("SKIPPED: %s\n", why);
        return SKIP;
    }
    /* Every instruction slot of the first 4 KiB (SASS instructions are 16 bytes on sm_90). */
    kp_pc_samples s = {0};
    CHECK_INT(kp_pc_samples_set_reasons(&s, reasons, 1, NULL), 0);
    for (uint64_t pc = 0; pc < 4096; pc += 16)
        CHECK(kp_pc_samples_at(&s, "hot", pc) != NULL);
    kp_cuda_pc_lines(cubin, len, &s);
    CHECK_STR(s.note, "");
    size_t placed = 0, on_loop = 0, past_end = 0;
    int lines_in_range = 1, file_named = 1, contiguous = 1;
    for (size_t i = 0; i < s.n; i++) {
        const kp_pc_sample *pc = &s.pcs[i];
        if (!pc->file) {
            past_end++;
            continue;
        }
        if (past_end) contiguous = 0; /* a placed PC after an unplaced one */
        placed++;
        if (pc->line < 1 || pc->line > 9) lines_in_range = 0;
        if (strcmp(pc->file, path) != 0) {
            file_named = 0;
            fprintf(stderr, "PC 0x%llx: file %s\n", (unsigned long long)pc->pc_offset, pc->file);
        }
        if (pc->line == 7) on_loop++;
    }
    CHECK(placed >= 8);
    CHECK(lines_in_range);
    CHECK(file_named);
    CHECK(on_loop >= 4);
    CHECK(on_loop * 2 >= placed); /* the loop's line holds most of the code */
    CHECK(past_end > 0);          /* the function ends well before 4 KiB */
    CHECK(contiguous);
    kp_pc_samples_free(&s);
    free(cubin);

    /* Without -lineinfo there is no line table: nothing placed, and the note says why. */
    cubin = compile(path, 0, &len, why, sizeof why);
    CHECK(cubin != NULL);
    if (cubin) {
        CHECK_INT(kp_pc_samples_set_reasons(&s, reasons, 1, NULL), 0);
        for (uint64_t pc = 0; pc < 256; pc += 16)
            CHECK(kp_pc_samples_at(&s, "hot", pc) != NULL);
        kp_cuda_pc_lines(cubin, len, &s);
        for (size_t i = 0; i < s.n; i++)
            CHECK(s.pcs[i].file == NULL && s.pcs[i].line == 0);
        CHECK_CONTAINS(s.note, "-lineinfo");
        kp_pc_samples_free(&s);
        free(cubin);
    }
    TEST_DONE();
}
