/*
 * demangle.h — C++ symbol names as people read them ("_Z2tkILi16EEvPf" -> "void tk<16>(float*)"),
 * through the C++ runtime's __cxa_demangle loaded at run time, so libkprof stays C.
 */
#ifndef KP_CORE_DEMANGLE_H
#define KP_CORE_DEMANGLE_H

#include <stddef.h>

/* The demangled form of sym in out; sym itself when it is not a mangled name or no C++ runtime
 * can be loaded. Returns out. Thread-safe. */
char *kp_demangle(const char *sym, char *out, size_t n);

#endif
