/* test_cl_log.c — an OpenCL build log that cites the runtime's name for the source ("<kernel>",
 * NVIDIA's, which ignores the #line directive kprof puts first) names the user's file and line. */
#include "backend/opencl/opencl.h"
#include "test.h"

#include <stdlib.h>

int main(void)
{
    char *out = kp_cl_log_name_source("<kernel>:2:47: error: use of undeclared identifier 'y'\n"
                                      "<kernel>:10:1: note: here\nno position <kernel>: x",
                                      "/k/bad.cl");
    CHECK_STR(out, "/k/bad.cl:1:47: error: use of undeclared identifier 'y'\n"
                   "/k/bad.cl:9:1: note: here\nno position <kernel>: x");
    free(out);
    /* A log that names the file already (the runtime honoured #line): nothing to do. */
    CHECK(kp_cl_log_name_source("/k/bad.cl:1:47: error", "/k/bad.cl") == NULL);
    CHECK(kp_cl_log_name_source("<kernel>:2:1: error", NULL) == NULL);
    TEST_DONE();
}
