/*
 * demangle.h — C++ symbol names as people read them ("_Z2tkILi16EEvPf" -> "void tk<16>(float*)"),
 * through the C++ runtime's __cxa_demangle loaded at run time, so libkprof stays C.
 */
#ifndef KP_CORE_DEMANGLE_H
#define KP_CORE_DEMANGLE_H

#include <stddef.h>

/* Whether sym was demangled: 1 with the demangled form in out. Otherwise 0 with sym itself in out
 * (cut to fit), no failure: sym is not a mangled name, no C++ runtime can be loaded, or the
 * demangled form does not fit in n bytes. Thread-safe. */
int kp_demangle(const char *sym, char *out, size_t n);

/* A kernel's name as every report shows it: a mangled C++ name (_Z..., shorter than 4 KiB) of len
 * bytes demangled into out (KP_DEMANGLE_NAME_BYTES fits any), 1; otherwise 0 and out untouched
 * (the name stays as it is). The trace's ingest names kernels with it, and `kprof trace
 * --capture` matches its pattern against the same name. */
#define KP_DEMANGLE_NAME_BYTES 8192
int kp_demangle_name(const char *sym, size_t len, char *out, size_t n);

#endif
