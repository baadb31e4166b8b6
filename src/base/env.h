/*
 * env.h — every KPROF_* environment variable, named once: the CLI's defaults, the runtime
 * libraries the dlopen tables load, and the configuration `kprof trace` (collect/session.c)
 * hands to the collectors it injects into a program (src/inject/ and the record writer), which
 * get no other configuration; and libkprof's in-process session. The table of
 * docs/reference/environment.md documents the user-facing ones.
 */
#ifndef KP_BASE_ENV_H
#define KP_BASE_ENV_H

/* Defaults and places. */
#define KP_ENV_BACKEND   "KPROF_BACKEND"   /* opencl | cuda | auto */
#define KP_ENV_DEVICE    "KPROF_DEVICE"    /* device index */
#define KP_ENV_HOME      "KPROF_HOME"      /* where kernel folders live */
#define KP_ENV_CACHE_DIR "KPROF_CACHE_DIR" /* the compile cache */
#define KP_ENV_DUMP_DIR  "KPROF_DUMP_DIR"  /* dump every compiled kernel here */
#define KP_ENV_STORE     "KPROF_STORE"     /* kprof's SQLite store */
#define KP_ENV_HISTORY   "KPROF_HISTORY"   /* "0": run, sweep and bench record no history */
/* Off a terminal, the seconds between progress lines of long work (default 10; 0: none) */
#define KP_ENV_PROGRESS_EVERY "KPROF_PROGRESS_EVERY"
/* `kprof export`: above this many events a trace's Chrome JSON is taken as too large for a
 * browser (default 2000000): -o OUT without a format's extension writes Perfetto, and --chrome
 * warns (tools/kprof/cmd_export.c) */
#define KP_ENV_CHROME_MAX_EVENTS "KPROF_CHROME_MAX_EVENTS"

/* Runtime libraries to load instead of the default (src/backend dlopen tables). */
#define KP_ENV_CUDA_LIBRARY   "KPROF_CUDA_LIBRARY"
#define KP_ENV_NVRTC_LIBRARY  "KPROF_NVRTC_LIBRARY"
#define KP_ENV_CUPTI_LIBRARY  "KPROF_CUPTI_LIBRARY" /* also the one the CUDA collector loads */
#define KP_ENV_OPENCL_LIBRARY "KPROF_OPENCL_LIBRARY"
#define KP_ENV_NVML_LIBRARY   "KPROF_NVML_LIBRARY" /* the lab's clock readings (lab/clock.c) */
#define KP_ENV_CUPTI_KIND     "KPROF_CUPTI_KIND"   /* the lab's CUPTI timer: serial | concurrent */

/* `kprof trace` and the collectors it injects. */
#define KP_ENV_TRACE_DIR        "KPROF_TRACE_DIR"        /* the folder of record files */
#define KP_ENV_CUDA_QUEUE_TIMES "KPROF_CUDA_QUEUE_TIMES" /* "1": queue times (--queue-times) */
#define KP_ENV_OPENCL_INTERCEPT "KPROF_OPENCL_INTERCEPT" /* layer | preload | both (default) */
#define KP_ENV_INJECT_LIBRARY   "KPROF_INJECT_LIBRARY"   /* libkprof-inject.so to inject */
#define KP_ENV_TRACE_TIMES      "KPROF_TRACE_TIMES" /* "1": say where kprof trace's time went */
#define KP_ENV_TRACE_LIVE       "KPROF_TRACE_LIVE"  /* "0": merge only after the program */
/* `kprof trace --capture` (collect/capture.h): the pattern, the kernels folder it writes into,
 * the @slowest window in s, the largest allocation copied, "0": no after-states, "1": replace an
 * existing capture folder (--force) */
#define KP_ENV_CAPTURE           "KPROF_CAPTURE"
#define KP_ENV_CAPTURE_DIR       "KPROF_CAPTURE_DIR"
#define KP_ENV_CAPTURE_WINDOW    "KPROF_CAPTURE_WINDOW"
#define KP_ENV_CAPTURE_MAX_BYTES "KPROF_CAPTURE_MAX_BYTES"
#define KP_ENV_CAPTURE_AFTER     "KPROF_CAPTURE_AFTER"
#define KP_ENV_CAPTURE_FORCE     "KPROF_CAPTURE_FORCE"

/* libkprof's in-process profiler (src/libkprof/). */
#define KP_ENV_AUTOSTART "KPROF"         /* "1": a session from load to exit, saved at exit */
#define KP_ENV_OUTPUT    "KPROF_OUTPUT"  /* where that session's trace goes */
#define KP_ENV_CLOCK     "KPROF_CLOCK"   /* "monotonic": scopes read clock_gettime, not rdtsc */
#define KP_ENV_COLLECT   "KPROF_COLLECT" /* KPROF=1's collectors: scopes,cuda,opencl */

#endif
