/*
 * cmd_trace.c — `kprof trace [-o FILE] [--] CMD ARGS…`: run an unmodified program with kprof's
 * collectors injected, then ingest what every process recorded into one SQLite trace file; and
 * `kprof trace --merge DIR -o FILE`, which makes the trace from a folder of records that a
 * failed or interrupted ingest kept. The session itself (environment, signals, the ingest's
 * cancellation) is src/collect/session.c, the ingest src/store/trace_ingest.c; this file
 * parses, checks the output, joins the two and tells the user.
 */
#define _GNU_SOURCE
#include "collect/session.h"
#include "collect/capture.h"
#include "base/env.h"
#include "lab/kernel_dir.h"
#include "core/format.h"
#include "base/job.h"
#include "base/outfile.h"
#include "base/outname.h"
#include "base/util.h"
#include "store/trace_db.h"
#include "tools/kprof/cli.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KP_TRACE_GRACE_S 10.0 /* how long a program may take to end after a passed-on signal */

/* -o's pattern (%r, %l, %p, %h, %q{VAR}, %%: base/outname.h) expanded into path; 0 or the exit
 * code of a failure (told). Under a launcher of several ranks, a name that is the same for
 * every rank gets a note: all but one of them would fail to write it. */
static int kp_trace_output_name(const char *pattern, char *path, size_t n)
{
    char host[256];
    kp_job_host(host, sizeof host);
    kp_outname_env names = {.get = kp_job_getenv, .pid = (long)getpid(), .host = host};
    kp_error err = {0};
    unsigned used;
    if (kp_outname_expand(pattern, &names, path, n, &used, &err) != KPROF_OK)
        return kp_cli_fail(&err);
    kp_job_info job;
    kp_job_read(&job);
    int per_rank = (used & (KP_OUTNAME_RANK | KP_OUTNAME_PID | KP_OUTNAME_VARIABLE)) ||
                   ((used & KP_OUTNAME_HOST) && (used & KP_OUTNAME_LOCAL_RANK));
    if (job.launcher != KP_LAUNCHER_NONE && job.world_size != 1 && !per_rank)
        fprintf(stderr,
                "kprof: note: this is rank %d of a job (%s), and every rank writes %s: name "
                "each rank's trace with %%r (-o 'job-%%r.kprof'), then `kprof merge` them\n",
                job.rank, kp_launcher_name(job.launcher), path);
    return 0;
}

/* What the user should know once the trace is written. */
static void kp_trace_tell(const kp_trace_summary *sum, const char *path)
{
    fprintf(stderr,
            "kprof: %llu events (%llu on the device) from %d process%s, %llu records dropped, "
            "in %s\n",
            (unsigned long long)sum->events, (unsigned long long)sum->device_events, sum->processes,
            sum->processes == 1 ? "" : "es", (unsigned long long)sum->dropped, path);
    for (const char *p = sum->notes, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
        fprintf(stderr, "kprof: note: %.*s\n", (int)(nl - p), p);
    if (sum->unclean)
        fprintf(stderr,
                "kprof: %d process%s ended without closing its record (crashed or killed): the "
                "trace holds what it recorded up to then%s\n",
                sum->unclean, sum->unclean == 1 ? "" : "es",
                sum->truncated_parts ? ", and a cut-off last record was dropped" : "");
    if (sum->device_events == 0)
        fprintf(stderr,
                "kprof: no GPU activity was captured. Likely reasons: the program ran no CUDA "
                "or OpenCL work; it ended before its first kernel; it loads a GPU runtime kprof "
                "cannot inject into (a statically linked OpenCL ICD, a CUDA runtime without the "
                "driver's injection); or another profiler (Nsight Systems, Nsight Compute, a "
                "debugger) already holds CUPTI.\n");
    if (sum->lost_writes || sum->unrecorded)
        fprintf(stderr,
                "kprof: warning: the folder for the trace's records filled up or could not be "
                "written (%s): %llu records were lost%s and the trace is incomplete; point "
                "TMPDIR at a folder with room\n",
                sum->write_errno ? strerror(sum->write_errno) : "write failed",
                (unsigned long long)sum->lost_writes,
                sum->unrecorded ? ", with everything some processes did" : "");
    uint64_t other = sum->dropped - sum->lost_writes;
    if (other)
        fprintf(stderr,
                "kprof: %llu records were dropped (buffers full, or device work never seen to "
                "complete): reports count them in their header\n",
                (unsigned long long)other);
}

/* The ingest failed or was stopped: the records stay where they are, and the user is told how to
 * make the trace from them. */
static void kp_trace_kept(const char *dir)
{
    char size[32];
    fprintf(stderr,
            "kprof: the recording is kept in %s (%s): `kprof trace --merge %s -o FILE` makes the "
            "trace from it, `rm -r %s` discards it\n",
            dir, kp_format_bytes(kp_session_size(dir), size, sizeof size), dir, dir);
}

/* Ingest dir into the output (finishing `live`, the ingest begun while the program ran, when
 * there is one); 0 or the exit code of a failure (told). */
static int kp_trace_finish(const char *dir, const kp_trace_run *run, kp_trace_ingest *live,
                           kp_output *out, kp_trace_summary *sum)
{
    kp_error err = {0};
    kp_session_watch_ingest();
    memset(sum, 0, sizeof *sum);
    kprof_status st =
        live ? kp_trace_ingest_finish(live, dir, run, sum, &err)
             : kp_trace_ingest_dir(out->tmp, dir, run, kp_session_cancel_flag(), sum, &err);
    int committing = st == KPROF_OK;
    if (st == KPROF_OK) st = kp_output_commit(out, &err);
    if (st == KPROF_OK) return 0;
    kp_output_abort(out);
    int code = kp_cli_fail(&err);
    /* The target was free when kprof began: another process wrote it meanwhile (another rank of
     * a job writing the same name, most often). What this one recorded is not lost. */
    if (committing && !out->replaces && kp_path_exists(out->path))
        fprintf(stderr,
                "kprof: another process wrote %s while this one ran (another rank of a job, "
                "with the same -o?); it is left as it is. Name each rank's trace with %%r "
                "(-o 'job-%%r.kprof')\n",
                out->path);
    kp_trace_kept(dir);
    return code;
}

/* 2 (said) when the output is the program being traced or a file its command line names (an
 * argument, or the value of an --option=VALUE one), whether it exists yet or not: the trace
 * would replace what the program runs or reads. --force does not change it. */
static int kp_trace_output_not_command(const char *path, char *const *cmd)
{
    char program[4096];
    kp_session_program_path(cmd[0], program, sizeof program);
    if (program[0] && kp_output_same_file(path, program))
        return kp_cli_usage_error("trace",
                                  "-o %s is the program being traced (%s): writing the "
                                  "trace would replace it; name another output",
                                  path, cmd[0]);
    for (int i = 1; cmd[i]; i++) {
        const char *arg = cmd[i], *eq = arg[0] == '-' ? strchr(arg, '=') : NULL;
        if (kp_output_same_file(path, arg) || (eq && eq[1] && kp_output_same_file(path, eq + 1)))
            return kp_cli_usage_error("trace",
                                      "-o %s is named on the traced command line (argument %d, "
                                      "'%s'): the program may read or write it; name another "
                                      "output",
                                      path, i,
                                      eq && !kp_output_same_file(path, arg) ? eq + 1 : arg);
    }
    return 0;
}

static int kp_trace_ingest_only(const char *dir, kp_output *out)
{
    kp_error err = {0};
    kp_trace_run run;
    char command[8192];
    if (!kp_path_is_dir(dir)) {
        kp_error_set(&err, kp_path_exists(dir) ? KPROF_INVALID : KPROF_NOT_FOUND,
                     "--merge %s: not a folder of kprof trace records", dir);
        kp_output_abort(out);
        return kp_cli_fail(&err);
    }
    if (kp_session_load_run(dir, &run, command, sizeof command, &err) != KPROF_OK) {
        kp_output_abort(out);
        return kp_cli_fail(&err);
    }
    kp_trace_summary sum;
    int code = kp_trace_finish(dir, &run, NULL, out, &sum);
    if (code) return code;
    kp_session_remove(dir);
    kp_trace_tell(&sum, out->path);
    int sig = kp_session_first_signal();
    return sig ? 128 + sig : 0;
}

/* --capture's settings, handed to the collectors through the environment (base/env.h). */
typedef struct kp_trace_capture {
    const char *pattern, *dir, *window, *max_bytes;
    int no_after;
} kp_trace_capture;

/* Check --capture's settings and set the environment the collectors read; the kernels folder is
 * made (and made absolute: the program may change its folder) before anything runs, so an
 * unwritable one is found now. 0 or the exit code of a failure (told). */
static int kp_trace_capture_env(const kp_trace_capture *c, int force)
{
    kp_error err = {0};
    kp_capture_pattern p;
    if (!c->pattern) {
        if (c->dir || c->window || c->max_bytes || c->no_after)
            return kp_cli_usage_error("trace", "--capture-dir, --capture-window, "
                                               "--capture-max-bytes and --capture-no-after go "
                                               "with --capture PATTERN");
        return 0;
    }
    if (kp_capture_pattern_parse(c->pattern, &p, &err) != KPROF_OK)
        return kp_cli_usage_error("trace", "%s", err.message);
    if (c->window) {
        double w = 0;
        if (kp_cli_parse_double(c->window, &w, NULL) != KPROF_OK || !(w > 0) || w > 1e6)
            return kp_cli_usage_error("trace", "--capture-window %s: expected seconds above 0",
                                      c->window);
        if (p.select != KP_CAPTURE_SLOWEST)
            return kp_cli_usage_error("trace", "--capture-window is the window of @slowest: "
                                               "write --capture 'PATTERN@slowest'");
    }
    uint64_t max = 0;
    if (c->max_bytes && (kp_parse_size(c->max_bytes, &max) != KPROF_OK || max == 0))
        return kp_cli_usage_error("trace",
                                  "--capture-max-bytes %s: expected a size in bytes (4G, 512M, "
                                  "1048576)",
                                  c->max_bytes);
    char dir[4096], home[4096];
    if (c->dir)
        kp_strlcpy(dir, c->dir, sizeof dir);
    else
        snprintf(dir, sizeof dir, "%s/kernels", kp_home_dir(home, sizeof home));
    if (kp_path_exists(dir) && !kp_path_is_dir(dir))
        return kp_cli_usage_error("trace", "--capture-dir %s is not a folder", dir);
    if (kp_mkdir_p(dir, &err) != KPROF_OK) return kp_cli_fail(&err);
    char abs[4096];
    if (!realpath(dir, abs)) kp_strlcpy(abs, dir, sizeof abs);
    if (access(abs, W_OK | X_OK) != 0) {
        kp_error_set(&err, KPROF_IO, "--capture-dir %s cannot be written: %s", abs,
                     strerror(errno));
        return kp_cli_fail(&err);
    }
    setenv(KP_ENV_CAPTURE, c->pattern, 1);
    setenv(KP_ENV_CAPTURE_DIR, abs, 1);
    if (c->window) setenv(KP_ENV_CAPTURE_WINDOW, c->window, 1);
    if (c->max_bytes) setenv(KP_ENV_CAPTURE_MAX_BYTES, c->max_bytes, 1);
    if (c->no_after) setenv(KP_ENV_CAPTURE_AFTER, "0", 1);
    if (force) setenv(KP_ENV_CAPTURE_FORCE, "1", 1);
    return 0;
}

int kp_cmd_trace(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"queue-times", no_argument, NULL, 'Q'},
        {"merge", required_argument, NULL, 'm'},
        {"grace", required_argument, NULL, 'g'},
        {"capture", required_argument, NULL, 'C'},
        {"capture-dir", required_argument, NULL, 'D'},
        {"capture-window", required_argument, NULL, 'W'},
        {"capture-max-bytes", required_argument, NULL, 'B'},
        {"capture-no-after", no_argument, NULL, 'A'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL, *merge = NULL;
    int force = 0, queue_times = 0;
    double grace = KP_TRACE_GRACE_S;
    kp_trace_capture capture = {0};
    opterr = 0;
    optind = 1;
    int c;
    /* "+": stop at the command, so its own options stay its own. */
    while ((c = getopt_long(argc, argv, "+:o:fh", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            return KP_CLI_SHOW_HELP;
        case 'o':
            output = optarg;
            break;
        case 'f':
            force = 1;
            break;
        case 'Q':
            queue_times = 1;
            break;
        case 'm':
            merge = optarg;
            break;
        case 'g':
            if (kp_cli_parse_double(optarg, &grace, NULL) != KPROF_OK || grace > 86400)
                return kp_cli_usage_error("trace", "--grace %s: expected seconds (0 to 86400)",
                                          optarg);
            break;
        case 'C':
            capture.pattern = optarg;
            break;
        case 'D':
            capture.dir = optarg;
            break;
        case 'W':
            capture.window = optarg;
            break;
        case 'B':
            capture.max_bytes = optarg;
            break;
        case 'A':
            capture.no_after = 1;
            break;
        case ':':
            return kp_cli_usage_error("trace", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("trace", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (merge && optind < argc)
        return kp_cli_usage_error("trace", "--merge makes a trace from recorded files: no command");
    if (merge && capture.pattern)
        return kp_cli_usage_error("trace", "--capture captures from a running program: not with "
                                           "--merge");
    if (!merge && optind >= argc)
        return kp_cli_usage_error("trace", "give the command to trace: kprof trace -- CMD ARGS...");
    char **cmd = argv + optind;

    char path[4096];
    if (output) { /* expanded before any other check: the checks are the expanded name's */
        int code = kp_trace_output_name(output, path, sizeof path);
        if (code) return code;
    } else {
        kp_session_default_output(path, sizeof path);
    }
    if (strcmp(kp_path_extension(path), "kprof") != 0)
        fprintf(stderr, "kprof: note: trace files are named *.kprof by convention\n");

    if (!merge) {
        int code = kp_trace_output_not_command(path, cmd);
        if (!code) code = kp_trace_capture_env(&capture, force);
        if (code) return code;
    }

    kp_error err = {0};
    kp_output out = {0};
    kp_session_catch_signals(); /* from here on a signal never leaves the temporary behind */
    /* The output is checked and its temporary made now, before anything runs: an output kprof
     * cannot write is found before the program ran, not after. SQLite writes it by name. */
    if (kp_output_open(&out, path, (force ? KP_OUTPUT_FORCE : 0) | KP_OUTPUT_SEEKABLE, NULL,
                       &err) != KPROF_OK)
        return kp_cli_fail(&err);
    kp_output_close_fd(&out);
    if (merge) return kp_trace_ingest_only(merge, &out);

    char note[4352];
    char dir[4096];
    if (kp_session_inject_env(queue_times, note, sizeof note, &err) != KPROF_OK ||
        kp_session_scratch(dir, sizeof dir, &err) != KPROF_OK) {
        kp_output_abort(&out);
        return kp_cli_fail(&err);
    }
    if (note[0]) fprintf(stderr, "kprof: note: %s\n", note);
    if (kp_session_first_signal()) { /* before the program even started */
        kp_output_abort(&out);
        kp_session_remove(dir);
        return 128 + kp_session_first_signal();
    }

    kp_str cmdline = {0};
    for (int i = 0; cmd[i]; i++)
        kp_str_printf(&cmdline, "%s%s", i ? " " : "", cmd[i]);
    char host[256], boot_id[64];
    kp_job_host(host, sizeof host);
    kp_job_boot_id(boot_id, sizeof boot_id);
    kp_trace_run run = {
        .command = cmdline.data ? cmdline.data : cmd[0],
        .start_ns = kp_now_ns(),
        .exit_status = -1,
        .collectors = "cuda,opencl",
        .host = host[0] ? host : NULL,
        .boot_id = boot_id[0] ? boot_id : NULL,
        .start_clock = kp_clock_pair_now(),
    };
    kp_session_outcome how;
    kp_trace_ingest *ingest = NULL;
    kp_session_live *live = NULL;
    kprof_status st = kp_session_save_run(dir, &run, &err);
    /* The trace is made while the program runs; what is left is ingested once it has ended. */
    if (st == KPROF_OK) st = kp_trace_ingest_open(out.tmp, kp_session_cancel_flag(), &ingest, &err);
    if (st == KPROF_OK) live = kp_session_live_start(kp_trace_ingest_poll_fn, ingest, dir);
    if (st == KPROF_OK) st = kp_session_run(cmd, grace, &how, &err);
    kp_session_live_stop(live);
    if (st != KPROF_OK) {
        kp_trace_ingest_abort(ingest);
        kp_output_abort(&out);
        kp_session_remove(dir);
        kp_str_free(&cmdline);
        int code = kp_cli_fail(&err), sig = kp_session_first_signal();
        return sig ? 128 + sig : code;
    }
    run.start_ns = how.start_ns;
    run.end_ns = how.end_ns;
    run.exit_status = how.exit_code;
    run.end_clock = kp_clock_pair_now();
    if (kp_session_save_run(dir, &run, &err) != KPROF_OK) { /* --merge would guess the end */
        kp_cli_fail(&err);
        kp_error_clear(&err);
    }

    if (how.signal)
        fprintf(stderr, "kprof: received signal %d (%s): %s\n", how.signal, strsignal(how.signal),
                how.killed ? "the program was killed (it had not ended within the grace period, "
                             "or a second signal came)"
                           : "passed on to the program, which has ended");
    if (how.program_signal && !how.killed)
        fprintf(stderr, "kprof: the program was killed by signal %d (%s)\n", how.program_signal,
                strsignal(how.program_signal));

    kp_trace_summary sum;
    uint64_t ingest_start = kp_now_ns(), live_events = kp_trace_ingest_events(ingest);
    int code = kp_trace_finish(dir, &run, ingest, &out, &sum);
    kp_str_free(&cmdline);
    const char *times = getenv(KP_ENV_TRACE_TIMES);
    if (times && strcmp(times, "1") == 0) /* for benchmarks: where the wall time went */
        fprintf(stderr,
                "kprof: times: program %.3f s, after it until the merge %.3f s, merge %.3f s "
                "(%llu events merged while the program ran, %llu after)\n",
                (double)(how.end_ns - how.start_ns) * 1e-9,
                (double)(ingest_start - how.end_ns) * 1e-9,
                (double)(kp_now_ns() - ingest_start) * 1e-9, (unsigned long long)live_events,
                (unsigned long long)(sum.events - live_events));
    if (code) {
        int sig = kp_session_first_signal();
        return sig ? 128 + sig : code;
    }
    kp_session_remove(dir);
    kp_trace_tell(&sum, out.path);
    int sig = kp_session_first_signal();
    if (sig) return 128 + sig;
    if (capture.pattern && sum.captured == 0) {
        /* The collectors said on stderr why a capture failed; a pattern that met no launch is
         * said here. The trace is written either way. */
        if (!sum.capture_failed)
            fprintf(stderr,
                    "kprof: error: --capture '%s': no kernel launch matched, nothing was "
                    "captured (`kprof report %s` lists the kernels the program launched)\n",
                    capture.pattern, out.path);
        return how.exit_code ? how.exit_code : 2;
    }
    return how.exit_code;
}
