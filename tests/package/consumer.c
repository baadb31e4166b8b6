/*
 * consumer.c — a program outside kprof's tree that uses an installed libkprof, as a user's would:
 * tests/cli/test_package.py builds it with pkg-config (shared and static) and with
 * find_package(kprof CONFIG) (CMakeLists.txt beside it), runs it and compares what it prints.
 */
#include <kprof.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    printf("kprof %s\n", kprof_version());
    printf("%s: %s (exit %d)\n", kprof_status_name(KPROF_FAULT), kprof_strerror(KPROF_FAULT),
           kprof_status_exit_code(KPROF_FAULT));
    /* The header it was compiled with and the library it runs with agree. */
    return strcmp(kprof_version(), KPROF_VERSION_STRING) == 0 ? 0 : 1;
}
