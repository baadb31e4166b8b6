/*
 * session.h — one whole-command trace: the environment that puts kprof's collectors into an
 * unmodified program, the folder their record files go to (with what `kprof trace --merge` needs
 * to finish the job later), running the program with the signals a user or a job scheduler sends
 * to kprof passed on to it, a thread that polls the records while it runs, and the cancellation
 * flag of the ingest into one trace file (store/trace_ingest.h, the layer above, which the
 * caller runs) that a second signal can stop.
 *
 * Signals (kp_session_run): SIGINT, SIGTERM and SIGHUP sent to kprof go on to the program — to
 * its own process group when kprof gave it one (kprof is not in a terminal's foreground: a
 * script, a scheduler, `timeout`), else to the program alone (a terminal's ^C already reached the
 * whole foreground group and is not sent twice). The program then has the grace period to end;
 * after it, or at a second signal, it is killed (SIGKILL). The second signal kprof has had in all
 * also stops the ingest (at once, or as soon as it starts); a first one that comes during the
 * ingest lets it finish. Not thread-safe: one session per process.
 */
#ifndef KP_COLLECT_SESSION_H
#define KP_COLLECT_SESSION_H

#include "base/error.h"
#include "base/job.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Set the environment variables that inject the collectors (CUDA, NVTX, OpenCL) into programs
 * this process starts next. queue_times: CUDA queue times (serialized kernels). `note` receives a
 * sentence for the user when an injection path had to be left out ("" when none). */
kprof_status kp_session_inject_env(int queue_times, char *note, size_t note_len, kp_error *err);

/* A new folder for the record files, under $TMPDIR (else /tmp): dir receives its path. */
kprof_status kp_session_scratch(char *dir, size_t n, kp_error *err);

/* What `kprof trace` knows about the run, for the trace's meta table. */
typedef struct kp_trace_run {
    const char *command;        /* the command line as given */
    uint64_t start_ns;          /* CLOCK_MONOTONIC when the command started */
    uint64_t end_ns;            /* ... and when it ended */
    int exit_status;            /* its exit code, or 128 + signal */
    const char *collectors;     /* e.g. "cuda,opencl" */
    int one_process;            /* every record file is of this one process image (libkprof's
                                   session: its own file and its OpenCL layer's): one process row */
    const char *host, *boot_id; /* where it ran (base/job.h); NULL: not said */
    kp_clock_pair start_clock;  /* (CLOCK_MONOTONIC, CLOCK_REALTIME) when it started ... */
    kp_clock_pair end_clock;    /* ... and when it ended; real_ns 0: not read */
    const char *device;         /* a lab run's device, for meta.device; NULL: not said */
} kp_trace_run;

/* What the ingest needs to know of the run, kept in the folder beside the record files
 * (run.txt) so that `kprof trace --merge DIR` can finish a trace later. The command is written
 * before the program starts, and the end, exit status and collectors once it has ended. */
kprof_status kp_session_save_run(const char *dir, const kp_trace_run *run, kp_error *err);

/* Read it back. command points into buf (of n bytes); host and boot_id into this file's own
 * storage, until the next call. A run whose end was never written (kprof
 * itself was killed) gets end_ns 0 and exit_status -1: the ingest then takes the last record's
 * time. NOT_FOUND (with a clear message) when dir holds no run.txt: not a kprof folder. */
kprof_status kp_session_load_run(const char *dir, kp_trace_run *run, char *buf, size_t n,
                                 kp_error *err);

/* How the program ended, and what kprof was sent meanwhile. */
typedef struct kp_session_outcome {
    int exit_code;      /* the program's exit status, or 128 + the signal that ended it */
    int program_signal; /* that signal (0 when it exited) */
    int signal;         /* the first SIGINT/SIGTERM/SIGHUP kprof received (0: none) */
    int killed;         /* kprof killed the program: grace period over, or a second signal */
    int own_group;      /* the program ran in a process group of its own */
    uint64_t start_ns;  /* CLOCK_MONOTONIC when the program was started ... */
    uint64_t end_ns;    /* ... and when it ended */
} kp_session_outcome;

/* Run argv (PATH searched) and wait for it, passing signals on as described above; grace_s is how
 * long the program may take to end after the first signal. A program that cannot be run is
 * NOT_FOUND (no such file) or INVALID (not executable, ...) and nothing ran; IO when no process
 * could be started, or when a signal came before it started (kp_session_first_signal says
 * which). */
kprof_status kp_session_run(char *const *argv, double grace_s, kp_session_outcome *out,
                            kp_error *err);

/* Catch SIGINT/SIGTERM/SIGHUP from now on (kp_session_run does too): they are counted, and
 * passed on once a program runs. Call before making anything a signal must not leave behind. */
void kp_session_catch_signals(void);

/* Watch for SIGINT/SIGTERM/SIGHUP during the ingest (after kp_session_run, or alone for
 * `--merge`). The flag kp_session_cancel_flag() points at becomes non-zero at the second signal
 * kprof has had in all; the ingest stops when it does (store/trace_ingest.h's cancel). */
void kp_session_watch_ingest(void);
const volatile sig_atomic_t *kp_session_cancel_flag(void);
int kp_session_first_signal(void); /* 0: none yet */

/* The ingest while the program runs: a thread that calls poll(ctx, dir) every
 * KP_SESSION_LIVE_PERIOD_MS (kprof trace: kp_trace_ingest_poll_fn, which ingests what the
 * program's processes have written), at a lower priority than the program's own threads, with
 * the signals above blocked (they are the main thread's to handle), so that little is left to
 * ingest when the program ends. It stops polling at the first poll that is not KPROF_OK, or once
 * the cancellation flag is set. Start it before kp_session_run; stop it after (it waits for the
 * thread: ctx is the caller's again, to finish). NULL when no thread could be started, or when
 * KPROF_TRACE_LIVE is "0": everything is ingested at the end. */
#define KP_SESSION_LIVE_PERIOD_MS 20
typedef kprof_status (*kp_session_poll_fn)(void *ctx, const char *dir);
typedef struct kp_session_live kp_session_live;
kp_session_live *kp_session_live_start(kp_session_poll_fn poll, void *ctx, const char *dir);
void kp_session_live_stop(kp_session_live *live); /* NULL is a no-op */

/* Remove the folder of record files (after an ingest that succeeded). */
void kp_session_remove(const char *dir);

/* The bytes the folder's record files hold (for messages). */
uint64_t kp_session_size(const char *dir);

/* Where the program cmd0 is: itself when it holds a '/', else the first executable (not a
 * folder) of that name on PATH, an empty entry (leading, trailing, between two ':', or PATH "")
 * being the current folder as "./cmd0" and no PATH "/bin:/usr/bin" (as execvp finds it); "" in
 * out (n bytes) when none. */
void kp_session_program_path(const char *cmd0, char *out, size_t n);

/* The default trace output: the first trace_N.kprof (N from 1) that does not exist in the
 * current folder, into out (n bytes). */
void kp_session_default_output(char *out, size_t n);

#endif
