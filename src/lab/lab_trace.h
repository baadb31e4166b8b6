/*
 * lab_trace.h — a lab session's dispatches (lab.h's kp_lab_log) as a trace's records: one record
 * file (collect/record.h), written through the collectors' writer (collect/writer.h), that the
 * store's ingest (store/trace_ingest.h, the layer above: the caller runs it) makes a .kprof of,
 * as it makes one of `kprof trace`'s folders and of a libkprof session's. So `kprof run --trace`
 * and `kprof bench --trace` are reported, exported and compared as every trace is.
 *
 * Each logged dispatch becomes one KERNEL record: the kernel's name (a cold sample's cache flush
 * the backend's flush kernel's), start and end on CLOCK_MONOTONIC as the log has them (end −
 * start is the sample to the nanosecond), the device, stream 1 (the session's one queue or
 * stream), this thread, the launch as threadgroups and threads per group, registers, static and
 * dynamic shared (local) memory and private memory per thread where the reflection knows them;
 * then its metrics: "iteration" (the tag's: timed dispatches 0, 1, ..., warm-ups negative, a
 * flush its sample's), "occupancy" where the reflection has it, and the log's "flops" and
 * "bytes" where known. An OpenCL kernel also gets its KERNEL_INFO record (local and private
 * memory, largest work-group, preferred multiple), once per name.
 */
#ifndef KP_LAB_TRACE_H
#define KP_LAB_TRACE_H

#include "lab/lab.h"

/* The collector name the lab's records go under (the trace's processes.collector and its
 * meta.collectors). */
#define KP_LAB_COLLECTOR "lab"

/* Write log's dispatches, on device (the session's kp_lab_info.device), as one record file in
 * the folder dir (which must exist). IO when the file cannot be written (naming it); INVALID
 * when the writer is already recording in this process (a libkprof session). */
kprof_status kp_lab_trace_records(const kp_lab_log *log, const kp_device_info *device,
                                  const char *dir, kp_error *err);

#endif
