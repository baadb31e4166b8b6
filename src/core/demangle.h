/*
 * demangle.h — C++ symbol names as people read them ("_Z2tkILi16EEvPf" -> "void tk<16>(float*)"),
 * through the C++ runtime's __cxa_demangle loaded at run time, so libkprof stays C.
 */
#ifndef KP_CORE_DEMANGLE_H
#define KP_CORE_DEMANGLE_H

#include <stddef.h>

/* The demangled form of sym in out: 0. Otherwise sym itself (cut to fit) and -1: sym is not a
 * mangled name, no C++ runtime can be loaded, or the demangled form does not fit in n bytes.
 * Thread-safe. */
int kp_demangle(const char *sym, char *out, size_t n);

#endif
