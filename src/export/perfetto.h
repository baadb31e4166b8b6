/*
 * perfetto.h — a trace file exported as a native Perfetto trace (`.pftrace`: protobuf
 * TracePackets, written without the Perfetto SDK), which Perfetto UI and trace_processor open.
 * See perfetto.c for the tracks, slices, flows and interning.
 */
#ifndef KP_EXPORT_PERFETTO_H
#define KP_EXPORT_PERFETTO_H

#include "base/error.h"
#include "base/outfile.h"
#include "store/event_source.h"

/* Write the trace src reads to out (open; the caller commits or aborts it) in chunks of about a
 * MiB, never the whole trace in memory. CORRUPT (or NOMEM/IO) when reading the trace fails,
 * IO naming the file when writing does, NOMEM when memory is out. */
kprof_status kp_export_perfetto(kp_event_source *src, kp_output *out, kp_error *err);

#endif
