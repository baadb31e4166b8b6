/* test_struct_types.c — which parameter type names a kernel source declares as structs, unions or
 * classes (lab/struct_types.h): what `kprof run` refuses to fill from a scalar. */
#include "lab/struct_types.h"
#include "test.h"

static kp_struct_type in(const char *text, const char *type)
{
    return kp_struct_type_in_source(text, strlen(text), type);
}

int main(void)
{
    /* The name alone. */
    CHECK_INT(kp_struct_type_of_name("struct params"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(kp_struct_type_of_name("const struct params"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(kp_struct_type_of_name("union u"), KP_STRUCT_TYPE_UNION);
    CHECK_INT(kp_struct_type_of_name("class c"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(kp_struct_type_of_name("params_t"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(kp_struct_type_of_name("structure"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(kp_struct_type_of_name(NULL), KP_STRUCT_TYPE_NONE);

    /* OpenCL C: typedefs of structs and unions, chains, tags, several declarators. */
    const char *cl = "// struct fake_comment { int x; };\n"
                     "#define MAKE struct from_macro\n"
                     "struct params { float a; int b; };\n"
                     "typedef struct { float a; struct { int x; } inner; } params_t, *params_p;\n"
                     "typedef params_t alias_t;\n"
                     "typedef struct params tagged_t;\n"
                     "union u { float f; uint i; };\n"
                     "typedef union u u_t;\n"
                     "typedef uint myuint;\n"
                     "typedef float4 vec;\n"
                     "typedef myuint chain_t;\n"
                     "enum mode { A, B };\n"
                     "typedef enum mode mode_t;\n"
                     "const char *s = \"struct in_string {\";\n"
                     "__kernel void k(__global float *o, params_t p) { o[0] = p.a; }\n";
    CHECK_INT(in(cl, "params_t"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(in(cl, "alias_t"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(in(cl, "tagged_t"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(in(cl, "struct params"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(in(cl, "u_t"), KP_STRUCT_TYPE_UNION);
    CHECK_INT(in(cl, "params_p"), KP_STRUCT_TYPE_NONE); /* a pointer typedef */
    CHECK_INT(in(cl, "myuint"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cl, "chain_t"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cl, "vec"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cl, "mode_t"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cl, "fake_comment"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cl, "from_macro"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cl, "in_string"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cl, "unknown_t"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cl, ""), KP_STRUCT_TYPE_NONE);

    /* CUDA C++: classes, namespaces, templates, `using`, and what is not a class. */
    const char *cu = "namespace ns { struct P { float a; }; }\n"
                     "template <int N> struct Box { float v[N]; };\n"
                     "template <class T, class U> __global__ void t(T *x, U y) {}\n"
                     "class Obj { public: int x; };\n"
                     "using Alias = ns::P;\n"
                     "using Count = unsigned int;\n"
                     "enum class Mode { A, B };\n"
                     "extern \"C\" __global__ void k(float *o, const Obj c) {}\n";
    CHECK_INT(in(cu, "ns::P"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(in(cu, "Box<4>"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(in(cu, "const Obj"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(in(cu, "Alias"), KP_STRUCT_TYPE_STRUCT);
    CHECK_INT(in(cu, "Count"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cu, "Mode"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cu, "T"), KP_STRUCT_TYPE_NONE); /* a template parameter, not a class */
    CHECK_INT(in(cu, "U"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in(cu, "Obj*"), KP_STRUCT_TYPE_NONE);

    /* Odd input finds less, never fails. */
    CHECK_INT(in("typedef struct {", "x"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in("typedef", "x"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in("struct", "x"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in("using x =", "x"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in("/* unterminated", "x"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in("\"unterminated", "x"), KP_STRUCT_TYPE_NONE);
    CHECK_INT(in("typedef struct s x", "x"), KP_STRUCT_TYPE_STRUCT);
    TEST_DONE();
}
