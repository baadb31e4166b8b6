/*
 * chrome.h — a trace file exported as Chrome Trace Event JSON (opens in Perfetto UI and
 * chrome://tracing). See chrome.c for the layout of tracks and flows.
 */
#ifndef KP_EXPORT_CHROME_H
#define KP_EXPORT_CHROME_H

#include "base/error.h"
#include "store/event_source.h"

#include <stdio.h>

/* Write the trace src reads to out: KPROF_OK, CORRUPT naming the trace when it is found damaged
 * while read, NOMEM, or IO when writing failed. */
kprof_status kp_export_chrome(kp_event_source *src, FILE *out, kp_error *err);

#endif
