/*
 * cuda_parse.h — the text work of the CUDA backend, kept apart from the driver so unit tests
 * run it anywhere: kernel declarations read from CUDA C++ source (`__global__ void k(...)`,
 * with extern "C", templates, attributes and comments), parameter lists (from source or from a
 * demangled symbol), the name a user types for a demangled kernel ("void tk<16>(float*)" ->
 * "tk<16>"), compiler options split into words, and the NVRTC architecture choice.
 *
 * The parser is a careful tokenizer, not a C++ front end: it never fails on odd input, it just
 * finds fewer kernels, and the backend then falls back to what the driver reports.
 */
#ifndef KP_CUDA_PARSE_H
#define KP_CUDA_PARSE_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kp_cuda_decl_param {
    char name[64];      /* "a", or "" when the declaration names none */
    char type_name[64]; /* "const float*", "unsigned int", "T*" */
    int pointer;        /* a pointer (or array, which decays to one) */
} kp_cuda_decl_param;

typedef struct kp_cuda_decl {
    char name[128]; /* unqualified identifier: "demo_add", "tk" */
    int nparams;
    kp_cuda_decl_param *params; /* heap */
    int named;                  /* how many parameters carry a name */
    int order;                  /* position in the source (0 = first __global__) */
} kp_cuda_decl;

typedef struct kp_cuda_decls {
    int count;
    kp_cuda_decl *decls; /* heap */
} kp_cuda_decls;

/* Find every `__global__` function declared or defined in text[0..len). KPROF_OK (maybe with
 * none found), or KPROF_NOMEM with err filled and out empty. kp_cuda_decls_free() releases. */
kprof_status kp_cuda_parse_kernels(const char *text, size_t len, kp_cuda_decls *out, kp_error *err);
void kp_cuda_decls_free(kp_cuda_decls *d);

/* The declaration of kernel `base_name` taking `nparams` parameters. `pointers` ("101": which
 * parameters are pointers), when not NULL, tells overloads apart. NULL when there is none or
 * the choice is ambiguous; a forward declaration and its definition count as one (the one that
 * names its parameters wins). */
const kp_cuda_decl *kp_cuda_decl_find(const kp_cuda_decls *d, const char *base_name, int nparams,
                                      const char *pointers);

/* Parse a parameter list without its parentheses: "const float *__restrict__ a, int n = 4".
 * `named` says declarations may name parameters (source); demangled lists never do. *params is
 * heap (NULL for an empty list or "void"). KPROF_OK, or KPROF_NOMEM with err filled. */
kprof_status kp_cuda_parse_param_list(const char *text, size_t len, int named,
                                      kp_cuda_decl_param **params, int *nparams, kp_error *err);

/* A plain C identifier ("demo_add"), as opposed to a C++ name expression ("tk<16>", "ns::k"). */
int kp_cuda_is_identifier(const char *s);

/* Split a demangled function ("void ns::tk<16>(float*, int)") into what a user types for it
 * ("ns::tk<16>": no return type, no parameters) and its parameter text ("float*, int"). Either
 * output may be NULL. 1, or 0 when the text is no function signature (name = the whole; an
 * answer, not a failure). */
int kp_cuda_split_demangled(const char *demangled, char *name, size_t name_n, char *params,
                            size_t params_n);

/* The unqualified identifier of a kernel name: "ns::tk<16>" -> "tk", "&k" -> "k". */
void kp_cuda_base_name(const char *name, char *out, size_t n);

/* Split user compiler options on blanks. *copy and *argv are heap (free both); *argc words.
 * KPROF_OK, or KPROF_NOMEM with err filled. */
kprof_status kp_cuda_split_options(const char *options, char **copy, const char ***argv, int *argc,
                                   kp_error *err);

/* The architecture to compile for: `want` (e.g. 90) when NVRTC lists it, else the highest
 * listed one below it; -1 when every listed one is newer. */
int kp_cuda_pick_arch(const int *archs, int n, int want);

/* Is this a whole CUDA binary image? An ELF64 cubin whose program and section tables, and every
 * section with contents, lie inside len bytes; or a fatbin whose header and payload do. The
 * driver trusts those sizes and would read past a truncated file. KPROF_OK, or KPROF_INVALID
 * saying what is wrong in err (may be NULL). */
kprof_status kp_cuda_image_check(const unsigned char *p, size_t len, kp_error *err);

/* A kernel's compile-time threadgroup rule, as its PTX or cubin records it. The driver API
 * folds it into one number, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, with the register limit,
 * so it cannot say whether a kernel *requires* a shape (.reqntid) or merely caps the thread
 * count (.maxntid, which __launch_bounds__(N) compiles to), nor the shape itself. */
enum {
    KP_CUDA_NTID_NONE = 0,     /* no directive: any block the driver's maximum allows */
    KP_CUDA_NTID_REQUIRED = 1, /* .reqntid X, Y, Z (cubin: EIATTR_REQNTID) */
    KP_CUDA_NTID_MAX = 2       /* .maxntid X, Y, Z (cubin: EIATTR_MAX_THREADS) */
};

/* The rule of entry `symbol` in PTX text[0..len): KP_CUDA_NTID_*; size[] gets X, Y, Z (missing
 * extents are 1). NONE when the entry or its directive is not there. When both directives are
 * given, .reqntid wins (it is the stricter). */
int kp_cuda_ptx_ntid(const char *text, size_t len, const char *symbol, uint64_t size[3]);

/* The same from a cubin (64-bit little-endian ELF): the EIATTR_REQNTID or EIATTR_MAX_THREADS
 * record in section .nv.info.<symbol>. NONE for a fatbin, a damaged image or no record. */
int kp_cuda_cubin_ntid(const unsigned char *p, size_t len, const char *symbol, uint64_t size[3]);

#endif
