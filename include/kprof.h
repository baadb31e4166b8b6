/*
 * kprof.h — the public interface of libkprof, the GPU kernel profiler.
 *
 * This header is the specification. Every function says what it takes, who owns what, whether
 * it is thread-safe and what it returns. The library never calls exit() and never prints unless
 * a function says so.
 *
 * What is here today: versioning and the status codes every kprof function and the `kprof`
 * command-line tool share. The kernel lab (caps, isolate, run) is reached through the `kprof`
 * tool; its in-process API will be added here as it stabilises.
 */
#ifndef KPROF_H
#define KPROF_H

#ifdef __cplusplus
extern "C" {
#endif

/* What libkprof.so exports: the functions of this header, and nothing else. */
#if defined(__GNUC__)
#define KPROF_API __attribute__((visibility("default")))
#else
#define KPROF_API
#endif

#define KPROF_VERSION_MAJOR 0
#define KPROF_VERSION_MINOR 1
#define KPROF_VERSION_PATCH 0
#define KPROF_VERSION_STRING "0.1.0"

/*
 * Status codes. One list generates the enum, kprof_strerror() and kprof_status_name().
 * X(NAME, exit code of the kprof tool, text)
 *
 * Exit codes of the `kprof` tool: 0 ok, 1 runtime failure (memory, a real I/O error, a
 * backend error), 2 usage error or bad input (every bad input file: missing, a folder, a FIFO
 * or device, damaged, truncated, foreign, of another format version), 3 backend or device
 * unavailable, 4 kernel fault, compile failure or timeout.
 */
#define KPROF_STATUS_LIST(X)                                                                       \
    X(OK, 0, "success")                                                                            \
    X(INVALID, 2, "invalid argument or input")                                                     \
    X(NOT_FOUND, 2, "not found")                                                                   \
    X(UNAVAILABLE, 3, "backend or device unavailable")                                             \
    X(COMPILE, 4, "kernel compile failure")                                                        \
    X(FAULT, 4, "kernel fault")                                                                    \
    X(TIMEOUT, 4, "kernel timed out")                                                              \
    X(NOMEM, 1, "allocation failure")                                                              \
    X(IO, 1, "input/output error")                                                                 \
    X(CORRUPT, 2, "file corrupt or of the wrong format")                                           \
    X(BACKEND, 1, "backend runtime failure")

typedef enum kprof_status {
#define KPROF_STATUS_ENUM_(name, code, text) KPROF_##name,
    KPROF_STATUS_LIST(KPROF_STATUS_ENUM_)
#undef KPROF_STATUS_ENUM_
        KPROF_STATUS_COUNT_
} kprof_status;

/* Fixed English text for a status ("kernel fault"). Never NULL; unknown values give
 * "unknown status". Thread-safe. */
KPROF_API const char *kprof_strerror(kprof_status status);

/* The enum's name without prefix ("FAULT"). Never NULL. Thread-safe. */
KPROF_API const char *kprof_status_name(kprof_status status);

/* The exit code the `kprof` tool uses for a status (see the list above). */
KPROF_API int kprof_status_exit_code(kprof_status status);

/* The library's version string, e.g. "0.1.0". Static storage. Thread-safe. */
KPROF_API const char *kprof_version(void);

#ifdef __cplusplus
}
#endif
#endif /* KPROF_H */
