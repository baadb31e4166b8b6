/*
 * chrome.h — a trace file exported as Chrome Trace Event JSON (opens in Perfetto UI and
 * chrome://tracing). See chrome.c for the layout of tracks and flows.
 */
#ifndef KP_EXPORT_CHROME_H
#define KP_EXPORT_CHROME_H

#include "core/error.h"

#include <sqlite3.h>
#include <stdio.h>

kprof_status kp_export_chrome(sqlite3 *db, FILE *out, kp_error *err);

#endif
