/* test_dynlib.c — runtime/dynlib: a table whose library or symbol is missing fails with
 * KPROF_UNAVAILABLE and a reason in the kp_error, the same answer on every later call. */
#include "runtime/dynlib.h"
#include "test.h"

#include <stdlib.h>

static void *slot_a, *slot_b;

static kprof_status refuse(kp_error *err)
{
    return kp_error_set(err, KPROF_UNAVAILABLE, "version %d is too new", 99);
}

int main(void)
{
    static const char *const missing_libs[] = {"libkprof-no-such-library.so.7", NULL};
    static const char *const names[] = {"a"};
    static kp_dynlib_table missing = {
        .libname = "libnope",
        .libs = missing_libs,
        .symbols = names,
        .slots = &slot_a,
        .count = 1,
        .hint = " (install it)",
        .lock = PTHREAD_MUTEX_INITIALIZER,
    };
    kp_error err = {0};
    CHECK_INT(kp_dynlib_load_table(&missing, &err), KPROF_UNAVAILABLE);
    CHECK_STR(err.message, "libkprof-no-such-library.so.7 not found (install it)");
    kp_error_clear(&err);
    CHECK_INT(kp_dynlib_load_table(&missing, &err), KPROF_UNAVAILABLE);
    CHECK_STR(err.message, "libkprof-no-such-library.so.7 not found (install it)");
    kp_error_clear(&err);
    CHECK_INT(kp_dynlib_load_table(&missing, NULL), KPROF_UNAVAILABLE);

    /* libc is loaded already: a symbol it lacks, then a check that refuses. */
    static const char *const libc[] = {"libc.so.6", NULL};
    static const char *const lacking[] = {"kprof_no_such_symbol"};
    static kp_dynlib_table no_symbol = {
        .libname = "libc",
        .libs = libc,
        .symbols = lacking,
        .slots = &slot_b,
        .count = 1,
        .lock = PTHREAD_MUTEX_INITIALIZER,
    };
    CHECK_INT(kp_dynlib_load_table(&no_symbol, &err), KPROF_UNAVAILABLE);
    CHECK_STR(err.message, "libc lacks kprof_no_such_symbol (too old?)");
    kp_error_clear(&err);

    static const char *const present[] = {"malloc"};
    static kp_dynlib_table refused = {
        .libname = "libc",
        .libs = libc,
        .symbols = present,
        .slots = &slot_b,
        .count = 1,
        .check = refuse,
        .lock = PTHREAD_MUTEX_INITIALIZER,
    };
    CHECK_INT(kp_dynlib_load_table(&refused, &err), KPROF_UNAVAILABLE);
    CHECK_STR(err.message, "version 99 is too new");
    kp_error_clear(&err);

    static kp_dynlib_table loaded = {
        .libname = "libc",
        .libs = libc,
        .symbols = present,
        .slots = &slot_a,
        .count = 1,
        .lock = PTHREAD_MUTEX_INITIALIZER,
    };
    CHECK_INT(kp_dynlib_load_table(&loaded, &err), KPROF_OK);
    CHECK_INT(err.status, KPROF_OK);
    CHECK(slot_a != NULL);
    TEST_DONE();
}
