/* test_inproc_off.c — what a scope allocates: nothing when no session records (before any
 * session, and after one, when the thread has a ring), and nothing on the recording hot path once
 * the thread's ring exists. Allocations are counted on the calling thread only (the session's
 * drain thread allocates on its own): through malloc, calloc, realloc, posix_memalign and
 * aligned_alloc interposed on glibc's, or, under AddressSanitizer (which owns malloc), through its
 * allocation hook (__sanitizer_malloc_hook). */
#define _GNU_SOURCE
#include "kprof.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static __thread volatile int counting; /* volatile: GCC assumes malloc reads no user memory */
static __thread volatile long allocations;

#if defined(__SANITIZE_ADDRESS__)
#define KP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KP_ASAN 1
#endif
#endif

#ifdef KP_ASAN
/* The runtime calls it (a weak symbol of its own that a program may define) on every
 * allocation. */
void __sanitizer_malloc_hook(const volatile void *p, size_t n);

void __sanitizer_malloc_hook(const volatile void *p, size_t n)
{
    (void)p, (void)n;
    if (counting) allocations++;
}

static void install(void) {}
#else
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);

void *malloc(size_t n)
{
    if (counting) allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (counting) allocations++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (counting) allocations++;
    return __libc_realloc(p, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (counting) allocations++;
    void *p = __libc_memalign(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
    if (counting) allocations++;
    return __libc_memalign(align, n);
}

static void install(void) {}
#endif

static volatile int sink;

static void scoped(int i)
{
    KPROF_SCOPE("scoped");
    sink = i;
}

static void work_scoped(int i)
{
    KPROF_SCOPE_WORK("work", 2.0 * i, 8.0 * i);
    KPROF_SCOPE_AS(s, "detail");
    kprof_scope_metric(&s, "key", i);
    sink = i;
}

/* Allocations made by n scopes on this thread. */
static long count(int n)
{
    allocations = 0;
    counting = 1;
    for (int i = 0; i < n; i++) {
        scoped(i);
        work_scoped(i);
        kprof_scope s = kprof_scope_begin("explicit");
        kprof_scope_end(&s);
    }
    counting = 0;
    return allocations;
}

int main(void)
{
    install();
    /* The counter counts: a control. */
    counting = 1;
    void *volatile p = malloc(16); /* volatile: the pair is not optimised away */
    counting = 0;
    free(p);
    CHECK_INT(allocations, 1);

    CHECK_INT(count(1000000), 0); /* no session ever */

    kprof_options o = KPROF_OPTIONS_INIT;
    o.ring_entries = 1 << 16;
    CHECK_INT(kprof_start(&o), KPROF_OK);
    allocations = 0;
    counting = 1;
    scoped(0); /* the thread's ring is made here: the counter sees libkprof's allocations */
    counting = 0;
    CHECK(allocations >= 2);
    CHECK_INT(count(4000), 0); /* recording: 20000 entries, well within the ring */
    kprof_result *r = NULL;
    CHECK_INT(kprof_stop(&r), KPROF_OK);
    kprof_result_destroy(r);

    CHECK_INT(count(1000000), 0); /* after a session, with a ring */
    TEST_DONE();
}
