/*
 * struct_types.h — which type names a kernel's source declares as structs, unions or classes, read
 * from the text without a compiler. A kernel argument of such a type passed by value cannot be
 * filled from a SPEC (it is not one scalar), and backends report only its name: OpenCL gives the
 * name as written ("struct params", or a typedef's "params_t"), CUDA the declared or mangled one
 * ("params", "ns::P<4>").
 */
#ifndef KP_LAB_STRUCT_TYPES_H
#define KP_LAB_STRUCT_TYPES_H

#include <stddef.h>

/* What `type` (a parameter's type name as a backend spells it) is. */
typedef enum kp_struct_type {
    KP_STRUCT_TYPE_NONE,   /* not a struct, union or class, or the text does not say */
    KP_STRUCT_TYPE_STRUCT, /* struct or class */
    KP_STRUCT_TYPE_UNION
} kp_struct_type;

/* From the name alone: "struct params", "const union u", "class c" (0 for anything else). */
kp_struct_type kp_struct_type_of_name(const char *type);

/* From the name and text[0..len): also a name the text declares with struct/union/class, a
 * typedef of one (through other typedefs and `using`), a template instance ("P<4>") or a
 * qualified name ("ns::P"). Comments, strings and preprocessor lines are skipped; macros are not
 * expanded, so a struct a macro makes is not seen. */
kp_struct_type kp_struct_type_in_source(const char *text, size_t len, const char *type);

#endif
