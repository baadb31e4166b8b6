/*
 * spec.h — the kernel-argument SPEC of `kprof run --buffers`, its element types and the
 * deterministic fill.
 *
 * A SPEC lists the kernel's arguments in declaration order, comma-separated:
 *   TYPE:COUNT[:FILL]   a buffer of COUNT elements; FILL is rand (default), zero, iota, const=V
 *   TYPE=VALUE          a scalar passed by value
 *   local:BYTES         a local (threadgroup / dynamic shared) memory argument
 * TYPE is one of f32 f64 i8 u8 i16 u16 i32 u32 i64 u64.
 */
#ifndef KP_CORE_SPEC_H
#define KP_CORE_SPEC_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

#define KP_SPEC_MAX_ARGS 64

#define KP_TYPE_LIST(X)                                                                            \
    X(F32, "f32", 4, "float")                                                                      \
    X(F64, "f64", 8, "double")                                                                     \
    X(I8, "i8", 1, "char")                                                                         \
    X(U8, "u8", 1, "uchar")                                                                        \
    X(I16, "i16", 2, "short")                                                                      \
    X(U16, "u16", 2, "ushort")                                                                     \
    X(I32, "i32", 4, "int")                                                                        \
    X(U32, "u32", 4, "uint")                                                                       \
    X(I64, "i64", 8, "long")                                                                       \
    X(U64, "u64", 8, "ulong")

typedef enum kp_type {
#define KP_TYPE_ENUM_(e, name, size, cl) KP_TYPE_##e,
    KP_TYPE_LIST(KP_TYPE_ENUM_)
#undef KP_TYPE_ENUM_
        KP_TYPE_COUNT
} kp_type;

typedef enum kp_arg_kind { KP_ARG_BUFFER, KP_ARG_SCALAR, KP_ARG_LOCAL } kp_arg_kind;
typedef enum kp_fill { KP_FILL_RAND, KP_FILL_ZERO, KP_FILL_IOTA, KP_FILL_CONST } kp_fill;

typedef struct kp_arg_spec {
    kp_arg_kind kind;
    kp_type type;           /* buffer element type or scalar type; unused for local */
    uint64_t count;         /* buffer: elements */
    uint64_t local_bytes;   /* local: bytes */
    kp_fill fill;           /* buffer: how it is filled */
    unsigned char value[8]; /* scalar value or fill constant, in the type's native bytes */
    char text[96];          /* the item as the user wrote it (for messages) */
} kp_arg_spec;

typedef struct kp_spec {
    int count;
    kp_arg_spec args[KP_SPEC_MAX_ARGS];
} kp_spec;

/* Parse a SPEC. On failure, INVALID with a message naming the item (1-based) and why. */
kprof_status kp_spec_parse(const char *text, kp_spec *out, kp_error *err);

/* Bytes of a buffer argument (count * element size); 0 for others. */
uint64_t kp_arg_bytes(const kp_arg_spec *arg);

size_t kp_type_size(kp_type t);
const char *kp_type_name(kp_type t);   /* "f32" */
const char *kp_type_c_name(kp_type t); /* "float" (OpenCL C spelling) */
int kp_type_is_float(kp_type t);
int kp_type_is_signed(kp_type t);
/* Parse "f32" etc.; returns 0 and sets *t, or -1. */
int kp_type_parse(const char *name, kp_type *t);
/* Parse a value of type t into native bytes: KPROF_OK, or KPROF_INVALID with the reason in err
 * (may be NULL). */
kprof_status kp_value_parse(kp_type t, const char *text, unsigned char out[8], kp_error *err);
/* Read element i of a typed array as double (for digests). */
double kp_value_as_double(kp_type t, const void *base, uint64_t i);

/*
 * Deterministic fill of `count` elements of type t at dst. `index` is the argument's position in
 * the SPEC (0-based): it seeds the generator, so every buffer differs and every run and backend
 * sees the same bytes. rand follows the seed runner's LCG:
 *   state = 0x9E3779B97F4A7C15 + index
 *   per element: state = state * 6364136223846793005 + 1442695040888963407
 *                word  = (uint32_t)(state >> 33)
 * floats get word / 2^31 (in [0, 1]: f32 rounds the largest words to 1), integers get word
 * converted to the type.
 */
void kp_fill_buffer(void *dst, kp_type t, uint64_t count, kp_fill fill,
                    const unsigned char value[8], unsigned index);

#endif
