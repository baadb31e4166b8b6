/*
 * bench_file.h — a shim: the bench result reader moved to lab/result_file.h (the one reader of
 * the lab's result files). Kept only so that cmd_bench.c builds unchanged; include
 * lab/result_file.h instead.
 */
#ifndef KP_TOOLS_BENCH_FILE_H
#define KP_TOOLS_BENCH_FILE_H

#include "lab/result_file.h"

#endif
