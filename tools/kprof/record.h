/*
 * record.h — what `kprof run`, `kprof sweep` and `kprof bench` do once they have reported a
 * result: keep it in the history (store/history.h), unless KPROF_HISTORY=0. A good measurement
 * never fails for it: a store that cannot be opened or written gets one line on stderr,
 * `kprof: warning: not recorded in the history: WHY`, and the command's exit code stays.
 */
#ifndef KP_TOOLS_RECORD_H
#define KP_TOOLS_RECORD_H

#include "core/device.h"
#include "store/history.h"

/* 1 unless KPROF_HISTORY=0: callers may skip building what only the history needs. */
int kp_record_enabled(void);

/* Record r, whose caller filled kind, kernel, target, options, grid, tg, buffers, median_ms,
 * min_ms and nsamples; this fills the device's columns from dev, kprof's version, the source's
 * path (made absolute), FNV-1a 64 hash and git state from source_path. samples may be NULL
 * (n 0); result_json is the result as --json prints it. */
void kp_record_result(kp_history_run *r, const kp_device_info *dev, const char *source_path,
                      const double *samples, size_t n, const char *result_json);

#endif
