/*
 * writer.h — the record writer inside an injected collector (libkprof-inject.so): per-thread
 * buffers of kp_rec (each with its own mutex, which other threads take only to flush it), flushed
 * to this process's file when full, when older than 100 ms, at thread exit, at process exit and —
 * as far as it safely can — when the program crashes. A write that fails (the folder is full) is
 * cut off again so the file stays readable; its records are counted as lost, together with the
 * first failure's errno, in the file's header record through a shared mapping (see record.h),
 * which needs no room on the disk and survives any end of the process. Fork-safe: a forked child
 * discards its parent's unflushed records and, if it records anything itself, writes its own file.
 * Nothing here allocates on the emit path once a thread's buffer exists.
 *
 * Two users, each with its own copy of this file: the injected collectors, configured by the
 * environment `kprof trace` sets (KPROF_TRACE_DIR: where the files go), which record until the
 * process ends; and libkprof's in-process session (src/libkprof/), which starts the writer in a
 * folder of its own, stops it at kprof_stop (every buffer flushed, the end record written, the
 * file closed, so the merge reads it whole) and starts it again for the next session. Each start
 * writes <dir>/<pid>-<collector>-<start ns>.klog.
 */
#ifndef KP_COLLECT_WRITER_H
#define KP_COLLECT_WRITER_H

#include "base/error.h"
#include "collect/record.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Start recording in this process under the collector's name ("cuda", "opencl"), in
 * $KPROF_TRACE_DIR, with the process hooks below. Idempotent and thread-safe. KPROF_OK when
 * recording; INVALID when KPROF_TRACE_DIR is unset (the process is not traced); IO, as
 * kp_writer_start_in, when the file cannot be made. err may be NULL. */
kprof_status kp_writer_start(const char *collector, kp_error *err);

/* Flags of kp_writer_start_in. PROCESS_HOOKS: the writer owns the process's end — it flushes and
 * writes the end record at exit (atexit) and from a crash handler in front of SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL and SIGABRT (the injected collectors; an in-process session, which ends with
 * kp_writer_stop, installs neither). */
#define KP_WRITER_PROCESS_HOOKS 1u

/* Start recording in folder dir (which must exist). Idempotent while recording; after
 * kp_writer_stop it starts a new file, the previous one's string ids forgotten (the new file
 * defines its strings again) and any record that missed the previous end discarded.
 * Thread-safe. KPROF_OK; INVALID when dir is NULL or ""; IO when the file cannot be made or its
 * head not written ("cannot write a record file in DIR: why", errno left as the failure's).
 * err may be NULL. */
kprof_status kp_writer_start_in(const char *dir, const char *collector, unsigned flags,
                                kp_error *err);

/* End the file: the losses no mapping counted, the end record, every thread's buffer flushed
 * (waiting for threads appending), the file closed; kp_writer_active() is 0 afterwards. The
 * caller makes sure no thread emits meanwhile (an emit that races it may be lost). */
void kp_writer_stop(void);

/* 1 while recording in this process (0 in a forked child until it starts again). */
int kp_writer_active(void);

/* The id of a string, emitting its definition the first time. 0 for NULL. Thread-safe. */
uint32_t kp_writer_string(const char *text);

/* Append a record (the magic is set here). Thread-safe, not lock-free: the calling thread's own
 * buffer has a mutex, taken on every append and contended only by the flush-all, exit and crash
 * paths; a full buffer is written under the file's write lock, which appends from other
 * threads then wait on only if their buffers are full too. No allocation once the thread's
 * buffer exists. */
void kp_writer_emit(kp_rec *r);

/* Append n records as one piece, nothing of another thread between them (an event and its
 * KP_REC_METRIC records). As kp_writer_emit otherwise. */
void kp_writer_emit_n(kp_rec *r, size_t n);

/* A KP_REC_NOTE with this text (e.g. another profiler holds CUPTI). */
void kp_writer_note(const char *text);

/* Count records lost before they reached the writer. Async-signal-safe once the writer started
 * (the count goes to the file's header through a shared mapping, not through a record). */
void kp_writer_dropped(uint64_t n);

/* The program reached a synchronisation point (clFinish, a blocking read): write the calling
 * thread's buffer now, so that a program that aborts right after it loses nothing it completed,
 * and put the crash handler back in front of SIGABRT if a runtime replaced it since. */
void kp_writer_checkpoint(void);

/* Flush the calling thread's buffer. */
void kp_writer_flush(void);

/* Flush every thread's buffer that is not being appended to right now (try-lock): for a
 * collector's own flush thread, whose records other threads' buffers may hold. */
void kp_writer_flush_all(void);

/* Run fn at process exit before the final flush, in the process that registered it only: a fork
 * clears both lists, and a collector that starts again in the child registers again. The CUDA
 * collector flushes CUPTI here. Up to four functions, run
 * last registered first. They must not block: runtimes may already be half torn down (their
 * own exit handlers can run before these). */
void kp_writer_at_exit(void (*fn)(void));

/* Run fn from the writer's crash handler (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), before it
 * flushes, in the process that registered it only (as above): a collector pushes out what it still
 * holds (the CUDA collector's last CUPTI records). fn must be async-signal-safe in spirit: no
 * locks it could already hold, and a bounded wait. Up to four functions. */
void kp_writer_at_crash(void (*fn)(void));

/* The kernel thread id, as records carry it (their times are kp_now_ns(), CLOCK_MONOTONIC). */
uint32_t kp_writer_tid(void);

#endif
