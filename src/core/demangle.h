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

#endif
