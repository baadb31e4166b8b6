/*
 * session.c — a whole-command trace session (see session.h): injection environment, the folder
 * of record files and its run.txt, the program run with signals passed on, and the ingest's
 * cancellation flag.
 */
#define _GNU_SOURCE
#include "collect/session.h"
#include "base/env.h"
#include "backend/backend.h"
#include "runtime/cupti_path.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* ---- injection ---- */

/* Where `cmake --install` puts libkprof-inject.so, relative to where it puts kprof: "../lib", or
 * "../lib/x86_64-linux-gnu" with Debian's multiarch libdir (CMakeLists.txt sets it). */
#ifndef KPROF_INSTALL_LIBDIR_FROM_BINDIR
#define KPROF_INSTALL_LIBDIR_FROM_BINDIR "../lib"
#endif

/* libkprof-inject.so: $KPROF_INJECT_LIBRARY, else beside the kprof binary (the build tree), else
 * in the installed libdir relative to it, else ../lib. KPROF_OK with its real path in out, or
 * UNAVAILABLE (nothing to inject: one message, whichever way it was looked for). */
static kprof_status kp_inject_path(char out[PATH_MAX], kp_error *err)
{
    const char *env = getenv(KP_ENV_INJECT_LIBRARY);
    char exe[PATH_MAX];
    ssize_t len;
    char *slash;
    if (env && *env) {
        if (realpath(env, out)) return KPROF_OK;
        goto missing;
    }
    len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) goto missing;
    exe[len] = '\0';
    slash = strrchr(exe, '/');
    if (!slash) goto missing;
    *slash = '\0';
    /* Beside the binary, the install's library folder relative to its bindir, ../lib. (The
     * second is "/" then the folder: written as two strings, not one concatenated literal,
     * which clang's -Wstring-concatenation takes for a missing comma.) */
    const char *folders[][2] = {{"", ""}, {"/", KPROF_INSTALL_LIBDIR_FROM_BINDIR}, {"/../lib", ""}};
    for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++) {
        char path[PATH_MAX + sizeof KPROF_INSTALL_LIBDIR_FROM_BINDIR + 32];
        snprintf(path, sizeof path, "%s%s%s/libkprof-inject.so", exe, folders[i][0], folders[i][1]);
        if (kp_path_exists(path) && realpath(path, out)) return KPROF_OK;
    }
missing:
    return kp_error_set(err, KPROF_UNAVAILABLE,
                        "libkprof-inject.so not found beside kprof or "
                        "in " KPROF_INSTALL_LIBDIR_FROM_BINDIR " (set KPROF_INJECT_LIBRARY)");
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

kprof_status kp_session_inject_env(int queue_times, char *note, size_t note_len, kp_error *err)
{
    note[0] = '\0';
    char inject[PATH_MAX];
    kprof_status st = kp_inject_path(inject, err);
    if (st != KPROF_OK) return st;
    const char *prior = getenv("CUDA_INJECTION64_PATH");
    if (prior && *prior && strcmp(prior, inject) != 0)
        return kp_error_set(err, KPROF_UNAVAILABLE,
                            "CUDA_INJECTION64_PATH is already set (%s): another profiler is "
                            "injected; unset it to trace with kprof",
                            prior);

    /* How the OpenCL collector gets in: both ways by default (see opencl_layer.c). */
    const char *intercept = getenv(KP_ENV_OPENCL_INTERCEPT);
    int use_layer = 1, use_preload = 1;
    if (intercept && *intercept && strcmp(intercept, "both") != 0) {
        use_layer = strcmp(intercept, "layer") == 0;
        use_preload = strcmp(intercept, "preload") == 0;
        if (!use_layer && !use_preload)
            return kp_error_set(err, KPROF_INVALID,
                                "KPROF_OPENCL_INTERCEPT=%s: expected layer, preload or both",
                                intercept);
    }
    /* The dynamic linker splits LD_PRELOAD at spaces and colons: such a path cannot go there. */
    if (use_preload && strpbrk(inject, " :")) {
        if (!use_layer)
            return kp_error_set(err, KPROF_INVALID,
                                "KPROF_OPENCL_INTERCEPT=preload: %s has a space or ':' in its "
                                "path, which LD_PRELOAD cannot carry",
                                inject);
        snprintf(note, note_len,
                 "%s has a space or ':' in its path, which LD_PRELOAD cannot carry: OpenCL "
                 "programs are traced through the loader's layers only",
                 inject);
        use_preload = 0;
    }

    setenv("CUDA_INJECTION64_PATH", inject, 1);
    if (queue_times)
        setenv(KP_ENV_CUDA_QUEUE_TIMES, "1", 1);
    else
        unsetenv(KP_ENV_CUDA_QUEUE_TIMES); /* never inherited: it serializes kernels */
    char cupti[PATH_MAX];
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    /* NVTX reaches kprof's NVTX collector (InitializeInjectionNvtx2 in nvtx_inject.c) at the
     * first NVTX call, which records it itself on every machine. */
    if (!nvtx || !*nvtx) setenv("NVTX_INJECTION64_PATH", inject, 1);
    /* No CUPTI here is no failure of the trace: the CUDA collector then finds its own, or says
     * in the trace why it recorded nothing. */
    if (kp_cupti_library_path(cupti, sizeof cupti, NULL) == KPROF_OK &&
        !getenv(KP_ENV_CUPTI_LIBRARY))
        setenv(KP_ENV_CUPTI_LIBRARY, cupti, 1); /* the CUDA collector loads the one kprof found */
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
    return KPROF_OK;
}

/* ---- the folder of record files ---- */

kprof_status kp_session_scratch(char *dir, size_t n, kp_error *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, n, "%s/kprof-trace-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return kp_error_set(err, KPROF_IO, "cannot make a folder for the trace's records in %s: %s",
                            tmp && *tmp ? tmp : "/tmp", strerror(errno));
    setenv(KP_ENV_TRACE_DIR, dir, 1);
    return KPROF_OK;
}

#define KP_RUN_FILE "run.txt"

/* run.txt: "key value" lines; the command with %, newline and carriage return escaped as %XX. */
kprof_status kp_session_save_run(const char *dir, const kp_trace_run *run, kp_error *err)
{
    kp_str s = {0};
    kp_str_printf(&s, "kprof-trace-run 1\nstart_ns %llu\n", (unsigned long long)run->start_ns);
    if (run->end_ns)
        kp_str_printf(&s, "end_ns %llu\nexit_status %d\ncollectors %s\n",
                      (unsigned long long)run->end_ns, run->exit_status,
                      run->collectors ? run->collectors : "");
    for (int i = 0; i < 2; i++) {
        const kp_clock_pair *c = i ? &run->end_clock : &run->start_clock;
        if (c->real_ns)
            kp_str_printf(&s, "clock_%s %lld %lld %lld\n", i ? "end" : "start",
                          (long long)c->mono_ns, (long long)c->real_ns,
                          (long long)c->uncertainty_ns);
    }
    /* host and boot id: names without spaces or newlines (gethostname, the kernel's uuid) */
    if (run->host && !strpbrk(run->host, " \r\n")) kp_str_printf(&s, "host %s\n", run->host);
    if (run->boot_id && !strpbrk(run->boot_id, " \r\n"))
        kp_str_printf(&s, "boot_id %s\n", run->boot_id);
    kp_str_append(&s, "command ");
    for (const char *p = run->command ? run->command : ""; *p; p++) {
        if (*p == '%' || *p == '\n' || *p == '\r')
            kp_str_printf(&s, "%%%02X", (unsigned char)*p);
        else
            kp_str_append_n(&s, p, 1);
    }
    kp_str_append(&s, "\n");
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/" KP_RUN_FILE, dir);
    kprof_status st =
        s.failed ? kp_error_nomem(err) : kp_file_write_atomic(path, s.data, s.len, err);
    kp_str_free(&s);
    return st;
}

/* The host and boot id kp_session_load_run read (a CLI reads one run). */
static char kp_loaded_host[256], kp_loaded_boot_id[64];

kprof_status kp_session_load_run(const char *dir, kp_trace_run *run, char *buf, size_t n,
                                 kp_error *err)
{
    memset(run, 0, sizeof *run);
    run->exit_status = -1;
    run->command = buf;
    run->collectors = "cuda,opencl";
    buf[0] = '\0';
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/" KP_RUN_FILE, dir);
    char *text = NULL;
    size_t len = 0;
    kprof_status st = kp_file_read(path, &text, &len, err);
    if (st == KPROF_NOT_FOUND || (st == KPROF_OK && strncmp(text, "kprof-trace-run ", 16) != 0)) {
        free(text);
        kp_error_clear(err);
        return kp_error_set(err, st == KPROF_OK ? KPROF_INVALID : KPROF_NOT_FOUND,
                            "%s is not a folder of kprof trace records (no %s from kprof trace)",
                            dir, KP_RUN_FILE);
    }
    if (st != KPROF_OK) return st;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned long long v;
        if (sscanf(line, "start_ns %llu", &v) == 1)
            run->start_ns = v;
        else if (sscanf(line, "end_ns %llu", &v) == 1)
            run->end_ns = v;
        else if (strncmp(line, "exit_status ", 12) == 0)
            run->exit_status = atoi(line + 12);
        else if (strncmp(line, "clock_start ", 12) == 0 || strncmp(line, "clock_end ", 10) == 0) {
            long long mono, real, unc;
            kp_clock_pair *c = line[6] == 's' ? &run->start_clock : &run->end_clock;
            if (sscanf(strchr(line, ' ') + 1, "%lld %lld %lld", &mono, &real, &unc) == 3)
                *c = (kp_clock_pair){mono, real, unc};
        } else if (strncmp(line, "host ", 5) == 0) {
            snprintf(kp_loaded_host, sizeof kp_loaded_host, "%s", line + 5);
            run->host = kp_loaded_host;
        } else if (strncmp(line, "boot_id ", 8) == 0) {
            snprintf(kp_loaded_boot_id, sizeof kp_loaded_boot_id, "%s", line + 8);
            run->boot_id = kp_loaded_boot_id;
        } else if (strncmp(line, "command ", 8) == 0) {
            size_t o = 0;
            for (const char *p = line + 8; *p && o + 1 < n; p++) {
                unsigned hex;
                if (*p == '%' && sscanf(p + 1, "%2X", &hex) == 1) {
                    buf[o++] = (char)hex;
                    p += 2;
                } else {
                    buf[o++] = *p;
                }
            }
            buf[o] = '\0';
        }
    }
    free(text);
    return KPROF_OK;
}

void kp_session_remove(const char *dir)
{
    kp_dir_remove(dir);
}

uint64_t kp_session_size(const char *dir)
{
    uint64_t total = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        char p[PATH_MAX + 256];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) total += (uint64_t)st.st_size;
    }
    if (d) closedir(d);
    return total;
}

/* ---- signals ---- */

static const int kp_passed_on[] = {SIGINT, SIGTERM, SIGHUP};

static struct {
    volatile sig_atomic_t first;     /* the first signal kprof received */
    volatile sig_atomic_t count;     /* how many it received */
    volatile sig_atomic_t ingesting; /* the program is gone: signals now concern the ingest */
    volatile sig_atomic_t cancel;    /* stop the ingest */
    volatile sig_atomic_t killed;    /* SIGKILL sent to the program */
    pid_t program;                   /* the program's pid while it runs, else 0 */
    int own_group;                   /* the program leads a process group of its own */
} kp_sig;

/* Pass a signal on to the program: its whole group when it has one of its own, else itself. */
static void kp_pass_on(int sig)
{
    pid_t p = kp_sig.program;
    if (p > 0) kill(kp_sig.own_group ? -p : p, sig);
}

static void kp_on_signal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    int saved = errno;
    kp_sig.count++;
    if (!kp_sig.first) kp_sig.first = sig;
    if (kp_sig.ingesting) {
        if (kp_sig.count >= 2) kp_sig.cancel = 1;
    } else if (kp_sig.count >= 2) {
        kp_sig.killed = 1;
        kp_pass_on(SIGKILL);
    } else if (kp_sig.own_group || !info || info->si_code != SI_KERNEL) {
        /* SI_KERNEL: from the terminal, which sent it to the program too. */
        kp_pass_on(sig);
    }
    errno = saved;
}

void kp_session_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = kp_on_signal;
    sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: a signal wakes the waits below */
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof kp_passed_on / sizeof *kp_passed_on; i++)
        sigaddset(&sa.sa_mask, kp_passed_on[i]);
    for (size_t i = 0; i < sizeof kp_passed_on / sizeof *kp_passed_on; i++)
        sigaction(kp_passed_on[i], &sa, NULL);
}

void kp_session_watch_ingest(void)
{
    kp_sig.program = 0;
    kp_sig.ingesting = 1;
    if (kp_sig.count >= 2) kp_sig.cancel = 1;
    kp_session_catch_signals();
}

const volatile sig_atomic_t *kp_session_cancel_flag(void)
{
    return &kp_sig.cancel;
}

int kp_session_first_signal(void)
{
    return kp_sig.first;
}

/* Whether this process is in its terminal's foreground process group: then the program must stay
 * in it, or it would stop (SIGTTIN/SIGTTOU) the moment it touched the terminal. */
static int kp_in_terminal_foreground(void)
{
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (tty < 0) return 0;
    pid_t fg = tcgetpgrp(tty);
    close(tty);
    return fg > 0 && fg == getpgrp();
}

static void kp_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL); /* a signal ends it early: that is what the loop wants */
}

kprof_status kp_session_run(char *const *argv, double grace_s, kp_session_outcome *out,
                            kp_error *err)
{
    memset(out, 0, sizeof *out);
    if (kp_sig.first)
        return kp_error_set(err, KPROF_IO, "interrupted (signal %d) before %s started",
                            (int)kp_sig.first, argv[0]);
    kp_sig.own_group = !kp_in_terminal_foreground();
    out->own_group = kp_sig.own_group;
    pid_t parent = getpid();

    /* Signals stay blocked across the fork, so the child never runs kprof's handler. */
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof kp_passed_on / sizeof *kp_passed_on; i++)
        sigaddset(&block, kp_passed_on[i]);
    sigprocmask(SIG_BLOCK, &block, &old);
    kp_session_catch_signals();
    /* Like time(1): ^\ is the program's business. */
    struct sigaction ign, old_quit;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;

    /* The child says through this pipe why exec failed; it closes unread when exec succeeds. */
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
        int e = errno;
        sigprocmask(SIG_SETMASK, &old, NULL);
        return kp_error_set(err, KPROF_IO, "cannot start %s: %s", argv[0], strerror(e));
    }
    fflush(NULL);
    out->start_ns = kp_now_ns();
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(exec_pipe[0]);
        close(exec_pipe[1]);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return kp_error_set(err, KPROF_IO, "cannot start %s: fork failed: %s", argv[0],
                            strerror(e));
    }
    if (child == 0) {
        for (size_t i = 0; i < sizeof kp_passed_on / sizeof *kp_passed_on; i++)
            signal(kp_passed_on[i], SIG_DFL);
        if (kp_sig.own_group) setpgid(0, 0);
        /* kprof killed outright (SIGKILL) cannot pass anything on: the program is told then. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(128 + SIGTERM);
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(exec_pipe[0]);
        execvp(argv[0], argv);
        int e = errno;
        if (write(exec_pipe[1], &e, sizeof e) != (ssize_t)sizeof e) _exit(127);
        _exit(e == ENOENT ? 127 : 126);
    }
    close(exec_pipe[1]);
    int exec_errno = 0;
    ssize_t got;
    while ((got = read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
    }
    close(exec_pipe[0]);
    if (got == (ssize_t)sizeof exec_errno) { /* nothing ran: no program, no trace */
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        return kp_error_set(err, exec_errno == ENOENT ? KPROF_NOT_FOUND : KPROF_INVALID,
                            "cannot run %s: %s", argv[0], strerror(exec_errno));
    }
    if (kp_sig.own_group) setpgid(child, child); /* either side may get there first */
    kp_sig.program = child;
    if (kp_sig.first) kp_pass_on(kp_sig.first); /* it came while the program was being started */
    sigaction(SIGQUIT, &ign, &old_quit);
    sigprocmask(SIG_SETMASK, &old, NULL);

    int status = 0;
    uint64_t deadline = 0;
    for (;;) {
        pid_t r = waitpid(child, &status, deadline ? WNOHANG : 0);
        if (r == child) break;
        if (r < 0 && errno != EINTR) {
            status = 0;
            break;
        }
        if (kp_sig.first && !deadline)
            deadline = kp_now_ns() + (uint64_t)(grace_s > 0 ? grace_s * 1e9 : 0);
        if (deadline && !kp_sig.killed && kp_now_ns() >= deadline) {
            kp_sig.killed = 1;
            kp_pass_on(SIGKILL);
        }
        if (deadline) kp_sleep_ms(10);
    }
    out->end_ns = kp_now_ns();
    kp_sig.program = 0;
    /* What is left of the program's group (its children) goes with it when kprof was asked to
     * stop. */
    if (kp_sig.first && kp_sig.own_group) kill(-child, kp_sig.killed ? SIGKILL : SIGTERM);
    kp_sig.ingesting = 1;
    sigaction(SIGQUIT, &old_quit, NULL);
    out->program_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    out->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + out->program_signal;
    out->signal = kp_sig.first;
    out->killed = kp_sig.killed;
    return KPROF_OK;
}

/* ---- the ingest while the program runs ---- */

struct kp_session_live {
    pthread_t thread;
    kp_session_poll_fn poll;
    void *ctx;
    char dir[PATH_MAX];
    atomic_int stop;
};

static void *kp_live_main(void *arg)
{
    kp_session_live *l = arg;
    /* The program comes first: this thread yields to it where cores are few. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    while (!atomic_load(&l->stop)) {
        if (l->poll(l->ctx, l->dir) != KPROF_OK) break; /* finish says why */
        if (kp_sig.cancel) break;
        struct timespec ts = {0, KP_SESSION_LIVE_PERIOD_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

kp_session_live *kp_session_live_start(kp_session_poll_fn poll, void *ctx, const char *dir)
{
    const char *v = getenv(KP_ENV_TRACE_LIVE);
    if (v && strcmp(v, "0") == 0) return NULL;
    kp_session_live *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->poll = poll;
    l->ctx = ctx;
    snprintf(l->dir, sizeof l->dir, "%s", dir);
    /* Started with every signal blocked, which it keeps: a signal for kprof must reach the main
     * thread, whose waits it wakes. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&l->thread, NULL, kp_live_main, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        free(l);
        return NULL;
    }
    return l;
}

void kp_session_live_stop(kp_session_live *live)
{
    if (!live) return;
    atomic_store(&live->stop, 1);
    pthread_join(live->thread, NULL);
    free(live);
}

/* ---- what `kprof trace` runs and writes ----------------------------------------------------- */

void kp_session_program_path(const char *cmd0, char *out, size_t n)
{
    out[0] = '\0';
    if (strchr(cmd0, '/')) {
        kp_strlcpy(out, cmd0, n);
        return;
    }
    const char *dirs = getenv("PATH");
    if (!dirs) dirs = "/bin:/usr/bin";
    for (;;) { /* every entry, the empty one after a trailing ':' (or of PATH="") too */
        const char *end = strchr(dirs, ':');
        size_t len = end ? (size_t)(end - dirs) : strlen(dirs);
        char cand[4096];
        /* An empty entry is ".", whose one character the precision must let through. */
        int w = snprintf(cand, sizeof cand, "%.*s/%s", len ? (int)len : 1, len ? dirs : ".", cmd0);
        if (w > 0 && (size_t)w < sizeof cand && access(cand, X_OK) == 0 && !kp_path_is_dir(cand)) {
            kp_strlcpy(out, cand, n);
            return;
        }
        if (!end) break;
        dirs = end + 1;
    }
}

void kp_session_default_output(char *out, size_t n)
{
    for (int i = 1; i < 100000; i++) {
        snprintf(out, n, "trace_%d.kprof", i);
        if (!kp_path_exists(out)) return;
    }
}
