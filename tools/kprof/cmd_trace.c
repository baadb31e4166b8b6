/*
 * cmd_trace.c — `kprof trace [-o FILE] [--] CMD ARGS…`: run an unmodified program with kprof's
 * collectors injected (CUDA through CUDA_INJECTION64_PATH and CUPTI, NVTX through
 * NVTX_INJECTION64_PATH, OpenCL through OPENCL_LAYERS), then merge what every process recorded
 * into one SQLite trace file.
 */
#define _GNU_SOURCE
#include "backend/backend.h"
#include "core/util.h"
#include "store/trace_db.h"
#include "tools/kprof/cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* libkprof-inject.so: $KPROF_INJECT_LIBRARY, else beside the kprof binary, else ../lib. */
static int kp_trace_inject_path(char out[PATH_MAX])
{
    const char *env = getenv("KPROF_INJECT_LIBRARY");
    if (env && *env) {
        if (!realpath(env, out)) return -1;
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return -1;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return -1;
    *slash = '\0';
    const char *candidates[] = {"%s/libkprof-inject.so", "%s/../lib/libkprof-inject.so"};
    for (size_t i = 0; i < 2; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, candidates[i], exe);
        if (kp_path_exists(path) && realpath(path, out)) return 0;
    }
    return -1;
}

/* The first free trace_N.kprof in the current folder. */
static void kp_trace_default_name(char *out, size_t n)
{
    for (int i = 1; i < 100000; i++) {
        snprintf(out, n, "trace_%d.kprof", i);
        if (!kp_path_exists(out)) return;
    }
}

static void kp_trace_cleanup(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.') continue;
            char p[4400];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

/* Add value to the ':'-separated list in environment variable name, first or last. */
static void kp_env_join(const char *name, const char *value, int first)
{
    const char *old = getenv(name);
    const char *sep = old && *old ? ":" : "";
    kp_str s = {0};
    if (first)
        kp_str_printf(&s, "%s%s%s", value, sep, old ? old : "");
    else
        kp_str_printf(&s, "%s%s%s", old ? old : "", sep, value);
    if (s.data) setenv(name, s.data, 1);
    kp_str_free(&s);
}

int kp_cmd_trace(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"force", no_argument, NULL, 'f'},
        {"queue-times", no_argument, NULL, 'Q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    int force = 0, queue_times = 0;
    opterr = 0;
    optind = 1;
    int c;
    /* "+": stop at the command, so its own options stay its own. */
    while ((c = getopt_long(argc, argv, "+:o:fh", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': return kp_cli_help(kp_command_find("trace"));
        case 'o': output = optarg; break;
        case 'f': force = 1; break;
        case 'Q': queue_times = 1; break;
        case ':': return kp_cli_usage_error("trace", "%s needs a value", argv[optind - 1]);
        default: return kp_cli_usage_error("trace", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return kp_cli_usage_error("trace", "give the command to trace: kprof trace -- CMD ARGS...");
    char **cmd = argv + optind;

    kp_error err = {0};
    char out_path[4096];
    if (output) snprintf(out_path, sizeof out_path, "%s", output);
    else kp_trace_default_name(out_path, sizeof out_path);
    if (kp_path_is_dir(out_path))
        return kp_cli_usage_error("trace", "-o %s is a folder; name the trace file", out_path);
    if (kp_path_exists(out_path) && !force)
        return kp_cli_usage_error("trace", "%s exists; use --force to replace it", out_path);
    if (strcmp(kp_path_extension(out_path), "kprof") != 0)
        fprintf(stderr, "kprof: note: trace files are named *.kprof by convention\n");

    char inject[PATH_MAX];
    if (kp_trace_inject_path(inject) != 0) {
        kp_error_set(&err, KPROF_UNAVAILABLE,
                     "libkprof-inject.so not found beside kprof or in ../lib (set "
                     "KPROF_INJECT_LIBRARY)");
        return kp_cli_fail(&err);
    }
    const char *prior = getenv("CUDA_INJECTION64_PATH");
    if (prior && *prior && strcmp(prior, inject) != 0) {
        kp_error_set(&err, KPROF_UNAVAILABLE,
                     "CUDA_INJECTION64_PATH is already set (%s): another profiler is injected; "
                     "unset it to trace with kprof",
                     prior);
        return kp_cli_fail(&err);
    }

    /* How the OpenCL collector gets in: both ways by default (see opencl_layer.c). */
    const char *intercept = getenv("KPROF_OPENCL_INTERCEPT");
    int use_layer = 1, use_preload = 1;
    if (intercept && *intercept && strcmp(intercept, "both") != 0) {
        use_layer = strcmp(intercept, "layer") == 0;
        use_preload = strcmp(intercept, "preload") == 0;
        if (!use_layer && !use_preload)
            return kp_cli_usage_error("trace",
                                      "KPROF_OPENCL_INTERCEPT=%s: expected layer, preload or both",
                                      intercept);
    }
    /* The dynamic linker splits LD_PRELOAD at spaces and colons: such a path cannot go there. */
    if (use_preload && strpbrk(inject, " :")) {
        if (!use_layer)
            return kp_cli_usage_error("trace",
                                      "KPROF_OPENCL_INTERCEPT=preload: %s has a space or ':' in "
                                      "its path, which LD_PRELOAD cannot carry",
                                      inject);
        fprintf(stderr,
                "kprof: note: %s has a space or ':' in its path, which LD_PRELOAD cannot carry: "
                "OpenCL programs are traced through the loader's layers only\n",
                inject);
        use_preload = 0;
    }

    char tmpl[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/kprof-trace-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl)) {
        kp_error_set(&err, KPROF_IO, "cannot make a folder for the trace's parts: %s",
                     strerror(errno));
        return kp_cli_fail(&err);
    }

    /* The collectors' configuration travels in the environment. */
    setenv("KPROF_TRACE_DIR", tmpl, 1);
    setenv("CUDA_INJECTION64_PATH", inject, 1);
    if (queue_times) setenv("KPROF_CUDA_QUEUE_TIMES", "1", 1);
    else unsetenv("KPROF_CUDA_QUEUE_TIMES"); /* never inherited: it serializes kernels */
    char cupti[PATH_MAX];
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    /* NVTX reaches the collector (InitializeInjectionNvtx2 in nvtx_inject.c) at the first NVTX
     * call; it hands NVTX on to CUPTI where CUPTI records it, and records it itself elsewhere. */
    if (!nvtx || !*nvtx) setenv("NVTX_INJECTION64_PATH", inject, 1);
    if (kp_cupti_library_path(cupti, sizeof cupti) == 0 && !getenv("KPROF_CUPTI_LIBRARY"))
        setenv("KPROF_CUPTI_LIBRARY", cupti, 1); /* the collector and NVTX load this one */
    /* Last in the list: the loaders stack each layer over the ones before it, so ours is the
     * outermost, and the LD_PRELOAD wrappers, which call what lies under it, skip none of the
     * program's own layers. */
    if (use_layer) kp_env_join("OPENCL_LAYERS", inject, 0);
    /* Loaders without layer support reach the OpenCL collector through LD_PRELOAD instead
     * (opencl_layer.c). ASan-built programs insist that their runtime is loaded first: let
     * them run. */
    if (use_preload) {
        kp_env_join("LD_PRELOAD", inject, 1);
        const char *asan = getenv("ASAN_OPTIONS");
        if (!asan || !strstr(asan, "verify_asan_link_order"))
            kp_env_join("ASAN_OPTIONS", "verify_asan_link_order=0", 0);
    }

    kp_str cmdline = {0};
    for (int i = 0; cmd[i]; i++) kp_str_printf(&cmdline, "%s%s", i ? " " : "", cmd[i]);

    fflush(NULL);
    uint64_t start = kp_now_ns();
    pid_t child = fork();
    if (child < 0) {
        kp_error_set(&err, KPROF_IO, "fork failed: %s", strerror(errno));
        kp_trace_cleanup(tmpl);
        kp_str_free(&cmdline);
        return kp_cli_fail(&err);
    }
    if (child == 0) {
        execvp(cmd[0], cmd);
        fprintf(stderr, "kprof: error: cannot run %s: %s\n", cmd[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    /* Like time(1): the terminal's ^C goes to the program; kprof waits and still merges. */
    struct sigaction ign, old_int, old_quit;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    uint64_t end = kp_now_ns();
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

    kp_trace_run run = {
        .command = cmdline.data ? cmdline.data : cmd[0],
        .start_ns = start,
        .end_ns = end,
        .exit_status = code,
        .collectors = "cuda,opencl",
    };
    kp_trace_summary sum;
    kprof_status st = kp_trace_db_write(out_path, tmpl, &run, &sum, &err);
    kp_trace_cleanup(tmpl);
    kp_str_free(&cmdline);
    if (st != KPROF_OK) return kp_cli_fail(&err);

    if (WIFSIGNALED(status))
        fprintf(stderr, "kprof: the program was killed by signal %d (%s)\n", WTERMSIG(status),
                strsignal(WTERMSIG(status)));
    fprintf(stderr,
            "kprof: %llu events (%llu on the device) from %d process%s, %llu records dropped, "
            "in %s\n",
            (unsigned long long)sum.events, (unsigned long long)sum.device_events, sum.processes,
            sum.processes == 1 ? "" : "es", (unsigned long long)sum.dropped, out_path);
    if (sum.notes[0]) {
        char *p = sum.notes;
        for (char *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
            fprintf(stderr, "kprof: note: %.*s\n", (int)(nl - p), p);
    }
    if (sum.unclean)
        fprintf(stderr,
                "kprof: %d process%s ended without closing its record (crashed or killed): the "
                "trace holds what it recorded up to then%s\n",
                sum.unclean, sum.unclean == 1 ? "" : "es",
                sum.truncated_parts ? ", and a cut-off last record was dropped" : "");
    if (sum.device_events == 0)
        fprintf(stderr,
                "kprof: no GPU activity was captured. Likely reasons: the program ran no CUDA "
                "or OpenCL work; it ended before its first kernel; it loads a GPU runtime kprof "
                "cannot inject into (a statically linked OpenCL ICD, a CUDA runtime without the "
                "driver's injection); or another profiler (Nsight Systems, Nsight Compute, a "
                "debugger) already holds CUPTI.\n");
    if (sum.dropped)
        fprintf(stderr,
                "kprof: %llu records were dropped (buffers full): reports count them in their "
                "header\n",
                (unsigned long long)sum.dropped);
    return code;
}
