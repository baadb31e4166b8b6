/*
 * isolate.c — a kernel-lab session in a child process: kp_lab_remote, the implementation of
 * kp_lab_impl (lab_internal.h) whose every operation is a request to a child, and the child's
 * side, which answers each with kp_lab_local's.
 *
 * On a device whose kernels run inside kprof's own process (PoCL's CPU device runs a kernel as
 * machine code on worker threads of the process that enqueued it), a kernel that writes outside
 * its buffers writes into kprof's memory: kprof died of SIGSEGV, or of glibc's "corrupted
 * double-linked list" abort at some later free, without a word. So such a session runs in a
 * child process and kprof only asks and prints: the child opens the session (device, compile,
 * buffers), checks launches, times dispatches and reads buffers back, each on request through a
 * socket, and at the end releases everything and exits. When the child dies, kprof names the
 * kernel, the signal and the likely cause, computed from the SPEC (a buffer holding fewer
 * elements than the grid has threads), says that the results are void, and ends with exit 4.
 * Nothing measured is reported before the child has exited cleanly (kp_lab_finish): memory a
 * kernel corrupted often fails only when it is released.
 *
 * Why the whole session and not only the dispatches: an OpenCL runtime loaded before fork()
 * does not survive it (PoCL's pthread driver waits for ever on worker threads that do not exist
 * in the child), and a fresh runtime per dispatch would cost a compile or cache load each time.
 * So the child is forked before any runtime is loaded in kprof, and the decision is taken before
 * the device is known, from the backend table (kp_backend_ops.kernels_in_process): an OpenCL
 * GPU's session runs in a child too, which costs it a fork and a few messages; the device's own
 * kp_device_info.kernels_in_process is what the fault message reports.
 *
 * The child is a fork of kprof, not a new program, so the records it sends are kprof's own
 * structs byte for byte, and pointers into kprof's static data (the backend table) stay valid.
 * It dies with kprof (PR_SET_PDEATHSIG), releases and exits when its socket closes, and takes
 * the default action on fatal signals: a sanitizer's handler would report a kernel's SIGSEGV as
 * a bug of kprof's and exit, and kprof could no longer name the signal.
 *
 * Protocol: a request is an op (int32) and its arguments; a reply is a header (status, lengths
 * of message, compiler log and payload) and those bytes. The session's opening is the first
 * reply, unasked. End of file where a reply was due means the child died.
 */
#define _GNU_SOURCE
#include "base/util.h"
#include "lab/lab_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum kp_child_op {
    KP_CHILD_OPEN, /* not a request: the reply the child sends first */
    KP_CHILD_USE_KERNEL,
    KP_CHILD_CHECK_LAUNCH,
    KP_CHILD_REFLECT,
    KP_CHILD_MEASURE,
    KP_CHILD_DIGEST,
    KP_CHILD_SAMPLE,
    KP_CHILD_FINISH,
    KP_CHILD_DEVICE /* not a request: kp_lab_remote_device's only reply */
} kp_child_op;

typedef struct kp_child_header {
    int32_t status;
    uint32_t message_len;
    uint32_t log_len;
    uint64_t payload_len;
} kp_child_header;

/* KP_CHILD_MEASURE's arguments; the reply is the timer, iters samples and, when spans is 1, the
 * warmup + iters dispatches' spans (kp_lab_impl.measure). */
typedef struct kp_child_measure_request {
    kp_launch launch;
    int32_t warmup, iters, spans;
} kp_child_measure_request;

/* KP_CHILD_SAMPLE's arguments; the reply is the timer, n samples, n flush times and, when spans
 * is 1, the spans (n, or 2n cold: kp_lab_impl.sample). */
typedef struct kp_child_sample_request {
    kp_launch launch;
    int32_t n, cold, spans;
} kp_child_sample_request;

/* What a kp_lab_remote_device child sends back. */
typedef struct kp_child_device_reply {
    char backend[16];
    int32_t index;
    kp_device_info info;
} kp_child_device_reply;

struct kp_lab_child {
    pid_t pid;        /* 0 once waited for */
    int fd;           /* the socket to the child; -1 once closed */
    kp_child_op op;   /* the request under way (what the child died doing) */
    kp_launch launch; /* of the last launch checked or measured */
    int have_launch;
    int wedged;            /* a dispatch timed out: the child cannot release its device */
    int dead;              /* the child died: what the session measured is void */
    const kp_spec *spec;   /* the caller's */
    kp_lab_info *info;     /* the caller's, kept current */
    kp_kernel_meta kernel; /* the current kernel: info->kernel points here */
};

/* ---- both sides: whole reads and writes ---- */

/* All n bytes to the socket: KPROF_OK, or KPROF_IO when the other side is gone or the send
 * failed (err filled; callers on either side pass NULL: the parent says what the child's end
 * means, kp_child_died, and the child has no one left to tell). */
static kprof_status kp_child_write(int fd, const void *data, size_t n, kp_error *err)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return kp_error_set(err, KPROF_IO, "the socket to the session's process: %s",
                                w < 0 ? strerror(errno) : "nothing sent");
        p += w;
        n -= (size_t)w;
    }
    return KPROF_OK;
}

/* All n bytes from the socket: KPROF_OK, or KPROF_IO at end of file or on an error (err filled,
 * as above). */
static kprof_status kp_child_read(int fd, void *data, size_t n, kp_error *err)
{
    char *p = data;
    while (n > 0) {
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return kp_error_set(err, KPROF_IO, "the socket to the session's process: %s",
                                r < 0 ? strerror(errno) : "closed");
        p += r;
        n -= (size_t)r;
    }
    return KPROF_OK;
}

/* ---- the child ---- */

typedef struct kp_child_part {
    const void *data;
    size_t len;
} kp_child_part;

/* One reply: err's status and text, and on success the parts as the payload. KPROF_OK, or
 * KPROF_IO when kprof's end is gone. */
static kprof_status kp_child_reply(int fd, const kp_error *err, const kp_child_part *parts,
                                   int nparts)
{
    kp_child_header h = {.status = err->status};
    if (err->status != KPROF_OK) {
        h.message_len = (uint32_t)strlen(err->message);
        h.log_len = err->log ? (uint32_t)strlen(err->log) : 0;
        nparts = 0;
    }
    for (int i = 0; i < nparts; i++)
        h.payload_len += parts[i].len;
    kprof_status st = kp_child_write(fd, &h, sizeof h, NULL);
    if (st == KPROF_OK) st = kp_child_write(fd, err->message, h.message_len, NULL);
    if (st == KPROF_OK && h.log_len) st = kp_child_write(fd, err->log, h.log_len, NULL);
    for (int i = 0; i < nparts && st == KPROF_OK; i++)
        if (parts[i].len) st = kp_child_write(fd, parts[i].data, parts[i].len, NULL);
    return st;
}

static kprof_status kp_child_reply_kernel(int fd, const kp_error *err, const kp_lab_info *info,
                                          const kp_kernel_meta *k)
{
    size_t nparams = k && k->nparams > 0 && k->params ? (size_t)k->nparams : 0;
    kp_child_part parts[3] = {
        {info, info ? sizeof *info : 0},
        {k, k ? sizeof *k : 0},
        {k ? k->params : NULL, nparams * sizeof(kp_param)},
    };
    return kp_child_reply(fd, err, parts, 3);
}

/* In the child, before anything else: die with kprof, and let fatal signals kill. */
static void kp_child_start(pid_t parent)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1); /* kprof ended before prctl took */
    static const int defaults[] = {SIGSEGV, SIGBUS,  SIGFPE, SIGILL, SIGABRT,
                                   SIGINT,  SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
        signal(defaults[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The child's whole life: open, answer requests until FINISH or end of file, release, exit. */
static void kp_child_serve(int fd, const kp_lab_options *opts)
{
    kp_lab *lab = NULL;
    kp_error err = {0};
    kprof_status st = kp_lab_local_open(opts, &lab, &err);
    const kp_lab_info *info = st == KPROF_OK ? &lab->info : NULL;
    int ok = kp_child_reply_kernel(fd, &err, info, info ? info->kernel : NULL) == KPROF_OK;
    int wedged = 0;
    while (ok && st == KPROF_OK) {
        int32_t op = 0;
        if (kp_child_read(fd, &op, sizeof op, NULL) != KPROF_OK || op == KP_CHILD_FINISH) break;
        kp_error_clear(&err);
        if (op == KP_CHILD_USE_KERNEL) {
            uint32_t len = 0;
            char entry[1024];
            if (kp_child_read(fd, &len, sizeof len, NULL) != KPROF_OK || len >= sizeof entry ||
                kp_child_read(fd, entry, len, NULL) != KPROF_OK)
                break;
            entry[len] = '\0';
            kp_lab_local.use_kernel(lab, len ? entry : NULL, &err);
            info = &lab->info;
            ok = kp_child_reply_kernel(fd, &err, info, info->kernel) == KPROF_OK;
        } else if (op == KP_CHILD_CHECK_LAUNCH || op == KP_CHILD_REFLECT) {
            kp_launch launch;
            kp_reflection refl;
            memset(&refl, 0, sizeof refl);
            if (kp_child_read(fd, &launch, sizeof launch, NULL) != KPROF_OK) break;
            if (op == KP_CHILD_CHECK_LAUNCH)
                kp_lab_local.check_launch(lab, &launch, &refl, &err);
            else
                kp_lab_local.reflect(lab, &launch, &refl, &err);
            kp_child_part part = {&refl, sizeof refl};
            ok = kp_child_reply(fd, &err, &part, 1) == KPROF_OK;
        } else if (op == KP_CHILD_MEASURE) {
            kp_child_measure_request rq;
            if (kp_child_read(fd, &rq, sizeof rq, NULL) != KPROF_OK || rq.iters < 1 ||
                rq.warmup < 0)
                break;
            size_t nspans = rq.spans ? (size_t)rq.warmup + (size_t)rq.iters : 0;
            double *samples = calloc((size_t)rq.iters, sizeof *samples);
            kp_dispatch_span *spans = nspans ? calloc(nspans, sizeof *spans) : NULL;
            if (!samples || (nspans && !spans))
                kp_error_set(&err, KPROF_NOMEM, "out of memory for %d samples", (int)rq.iters);
            else if (kp_lab_local.measure(lab, &rq.launch, rq.warmup, rq.iters, samples, spans,
                                          &err) == KPROF_TIMEOUT)
                wedged = 1;
            info = &lab->info;
            kp_child_part parts[3] = {{info->timer, sizeof info->timer},
                                      {samples, (size_t)rq.iters * sizeof *samples},
                                      {spans, spans ? nspans * sizeof *spans : 0}};
            ok = kp_child_reply(fd, &err, parts, 3) == KPROF_OK;
            free(samples);
            free(spans);
        } else if (op == KP_CHILD_SAMPLE) {
            kp_child_sample_request rq;
            if (kp_child_read(fd, &rq, sizeof rq, NULL) != KPROF_OK || rq.n < 1) break;
            size_t nspans = rq.spans ? (size_t)rq.n * (rq.cold ? 2 : 1) : 0;
            double *samples = calloc((size_t)rq.n * 2, sizeof *samples);
            kp_dispatch_span *spans = nspans ? calloc(nspans, sizeof *spans) : NULL;
            if (!samples || (nspans && !spans))
                kp_error_set(&err, KPROF_NOMEM, "out of memory for %d samples", (int)rq.n);
            else if (kp_lab_local.sample(lab, &rq.launch, rq.n, rq.cold, samples, samples + rq.n,
                                         spans, &err) == KPROF_TIMEOUT)
                wedged = 1;
            info = &lab->info;
            kp_child_part parts[3] = {{info->timer, sizeof info->timer},
                                      {samples, (size_t)rq.n * 2 * sizeof *samples},
                                      {spans, spans ? nspans * sizeof *spans : 0}};
            ok = kp_child_reply(fd, &err, parts, 3) == KPROF_OK;
            free(samples);
            free(spans);
        } else if (op == KP_CHILD_DIGEST) {
            int32_t max = 0, n = 0;
            if (kp_child_read(fd, &max, sizeof max, NULL) != KPROF_OK || max < 0 ||
                max > KP_SPEC_MAX_ARGS)
                break;
            kp_buffer_digest digests[KP_SPEC_MAX_ARGS];
            int got = 0;
            kp_lab_local.digest(lab, digests, max, &got, &err);
            n = got;
            kp_child_part parts[2] = {{&n, sizeof n}, {digests, (size_t)n * sizeof *digests}};
            ok = kp_child_reply(fd, &err, parts, 2) == KPROF_OK;
        } else {
            break;
        }
    }
    kp_error_clear(&err);
    /* A kernel still running would hold the release (and the runtime's exit handlers) for
     * ever: leave at once. */
    if (wedged) _exit(0);
    if (lab) kp_lab_local.close(lab);
    close(fd);
    exit(0); /* exit, not _exit: the runtime's exit handlers run, and may find what a kernel
                corrupted; so do a sanitizer's leak check */
}

/* Fork a child that runs serve(fd, arg) and never returns; *fd is kprof's end of the socket. */
static kprof_status kp_child_fork(void (*serve)(int fd, const void *arg), const void *arg,
                                  pid_t *pid, int *fd, kp_error *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return kp_error_set(err, KPROF_BACKEND,
                            "cannot make the socket to the child process that runs the session: "
                            "%s",
                            strerror(errno));
    fflush(NULL); /* what stdio holds for kprof must not be written twice */
    pid_t parent = getpid();
    pid_t p = fork();
    if (p < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return kp_error_set(err, KPROF_BACKEND,
                            "cannot start the child process that runs the session: %s",
                            strerror(e));
    }
    if (p == 0) {
        close(sv[0]);
        kp_child_start(parent);
        serve(sv[1], arg);
        _exit(1); /* not reached */
    }
    close(sv[1]);
    *pid = p;
    *fd = sv[0];
    return KPROF_OK;
}

static void kp_child_serve_lab(int fd, const void *arg)
{
    kp_child_serve(fd, arg);
}

/* ---- kprof's side ---- */

static void kp_lab_child_close(kp_lab_child *c);

static const char *kp_child_signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"}, {SIGABRT, "SIGABRT"},
                 {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"}, {SIGKILL, "SIGKILL"},
                 {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"}, {SIGTRAP, "SIGTRAP"},
                 {SIGSYS, "SIGSYS"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig) return names[i].name;
    return NULL;
}

/* Wait for the child; "died of SIGSEGV (Segmentation fault)" or "exited with status 1" in how.
 * Returns 1 when it exited with status 0. */
static int kp_child_wait(kp_lab_child *c, char *how, size_t n)
{
    int status = 0;
    pid_t r;
    do {
        r = waitpid(c->pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    c->pid = 0;
    if (r < 0) {
        snprintf(how, n, "ended (it could not be waited for: %s)", strerror(errno));
        return 0;
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *name = kp_child_signal_name(sig);
        if (name)
            snprintf(how, n, "died of %s (%s)", name, strsignal(sig));
        else
            snprintf(how, n, "died of signal %d (%s)", sig, strsignal(sig));
        return 0;
    }
    snprintf(how, n, "exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* The likely cause of a fault, from the SPEC and the launch: the buffers that hold fewer
 * elements than the grid has threads. */
static void kp_child_cause(const kp_lab_child *c, kp_str *s)
{
    if (c->info->replay) { /* a capture's buffers are bytes: the grid says nothing of them */
        kp_str_append(s, "likely cause: the replayed kernel went outside the captured "
                         "allocations (a pointer kept inside device memory is not relocated: "
                         "see the capture's not-captured.txt), or a grid or tg other than the "
                         "captured one took it past them");
        return;
    }
    uint64_t threads = 1;
    for (int d = 0; d < c->launch.dims; d++)
        threads *= c->launch.grid[d];
    int n = 0;
    for (int i = 0; c->have_launch && i < c->spec->count; i++) {
        const kp_arg_spec *a = &c->spec->args[i];
        if (a->kind != KP_ARG_BUFFER || a->count >= threads) continue;
        const char *name =
            c->kernel.nparams > i && c->kernel.params ? c->kernel.params[i].name : "";
        kp_str_printf_escaped(s,
                              "%sargument %d%s%s%s (%s) holds fewer elements than the %llu "
                              "threads of the grid",
                              n++ ? "; " : "likely cause: ", i + 1, name[0] ? " '" : "", name,
                              name[0] ? "'" : "", a->text, (unsigned long long)threads);
    }
    if (n == 0)
        kp_str_append(s, "likely cause: an index past the end of a buffer (every buffer holds at "
                         "least as many elements as the grid has threads: look at how the kernel "
                         "computes its indices)");
}

/* The child ended as `how` says, doing c->op: FAULT (or BACKEND before any kernel ran). */
static kprof_status kp_child_fault(kp_lab_child *c, const char *how, kp_error *err)
{
    c->dead = 1;
    const char *kernel = c->info->kernel ? c->kernel.name : NULL;
    const kp_device_info *dev = &c->info->device;
    kp_str s = {0};
    kprof_status st = KPROF_FAULT;
    kp_str grid = {0};
    for (int d = 0; c->have_launch && d < c->launch.dims; d++)
        kp_str_printf(&grid, "%s%llu", d ? "x" : "grid ", (unsigned long long)c->launch.grid[d]);
    for (int d = 0; c->have_launch && d < c->launch.dims; d++)
        kp_str_printf(&grid, "%s%llu", d ? "x" : ", tg ", (unsigned long long)c->launch.tg[d]);
    const char *at = grid.data ? grid.data : "";
    switch (c->op) {
    case KP_CHILD_MEASURE:
    case KP_CHILD_SAMPLE:
        kp_str_printf_escaped(&s,
                              "kernel %s faulted: the process running it %s during its "
                              "dispatches (%s); ",
                              kernel, how, at);
        kp_child_cause(c, &s);
        break;
    case KP_CHILD_DIGEST:
    case KP_CHILD_FINISH:
        kp_str_printf_escaped(&s,
                              "kernel %s corrupted memory, it seems: the process that ran it "
                              "(%s) %s %s; ",
                              kernel, at, how,
                              c->op == KP_CHILD_DIGEST ? "reading its buffers back"
                                                       : "releasing the device after the run");
        kp_child_cause(c, &s);
        break;
    case KP_CHILD_DEVICE:
        st = KPROF_BACKEND;
        kp_str_printf_escaped(&s, "the process choosing the device %s, in the device's runtime",
                              how);
        break;
    case KP_CHILD_OPEN:
        if (c->info->replay) {
            /* A replay's opening ends with one dispatch of the captured launch (its output
             * check): a crash there is most likely the kernel's. */
            const kp_launch *l = &c->info->replay_launch;
            kp_str_printf_escaped(&s,
                                  "the replay of %s faulted: the process opening it (device, "
                                  "compile, buffers, then one dispatch at the captured grid ",
                                  c->info->replay_dir);
            for (int d = 0; d < l->dims; d++)
                kp_str_printf(&s, "%s%llu", d ? "x" : "", (unsigned long long)l->grid[d]);
            kp_str_append(&s, ", tg ");
            for (int d = 0; d < l->dims; d++)
                kp_str_printf(&s, "%s%llu", d ? "x" : "", (unsigned long long)l->tg[d]);
            kp_str_printf_escaped(&s, ") %s; ", how);
            kp_child_cause(c, &s);
            break;
        }
        /* fall through */
    default:
        st = KPROF_BACKEND;
        if (kernel)
            kp_str_printf_escaped(&s,
                                  "the process holding the session of kernel %s %s before "
                                  "the kernel ran, in the device's runtime",
                                  kernel, how);
        else
            kp_str_printf_escaped(&s,
                                  "the process opening the session (device, compile, "
                                  "buffers) %s, in the device's runtime",
                                  how);
        break;
    }
    kp_str_free(&grid);
    if (st == KPROF_FAULT && dev->kernels_in_process)
        kp_str_printf_escaped(&s,
                              ". %s runs kernels inside kprof's own process, so kprof ran "
                              "them in a child process",
                              dev->name);
    if (st == KPROF_FAULT) kp_str_append(&s, ". Results of this run are void");
    kp_error_set(err, st, "%s", "");
    kp_error_append_lines(err, s.data ? s.data : how);
    kp_str_free(&s);
    return err ? err->status : st;
}

/* The socket closed where an answer was due: the child died. */
static kprof_status kp_child_died(kp_lab_child *c, kp_error *err)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    char how[160];
    kp_child_wait(c, how, sizeof how);
    return kp_child_fault(c, how, err);
}

/* Keep the child's error unless one is already held (the first failure wins). */
static void kp_child_take_error(kp_error *err, kprof_status status, const char *message, char *log)
{
    if (!err || err->status != KPROF_OK) {
        free(log);
        return;
    }
    err->status = status;
    kp_strlcpy(err->message, message, sizeof err->message);
    kp_error_take_log(err, log);
}

/* Send a request (KP_CHILD_OPEN and KP_CHILD_DEVICE: none, only read the first reply) and read
 * its reply. The
 * payload is heap in *payload (free it), or NULL. */
static kprof_status kp_child_call(kp_lab_child *c, kp_child_op op, const void *args, size_t n,
                                  void **payload, size_t *payload_len, kp_error *err)
{
    *payload = NULL;
    *payload_len = 0;
    if (c->dead || c->fd < 0)
        return kp_error_set(err, KPROF_FAULT,
                            "the session's process has ended: nothing more runs in it");
    c->op = op;
    int32_t op32 = (int32_t)op;
    int request = op != KP_CHILD_OPEN && op != KP_CHILD_DEVICE;
    if (request && (kp_child_write(c->fd, &op32, sizeof op32, NULL) != KPROF_OK ||
                    (n && kp_child_write(c->fd, args, n, NULL) != KPROF_OK)))
        return kp_child_died(c, err);
    kp_child_header h;
    if (kp_child_read(c->fd, &h, sizeof h, NULL) != KPROF_OK) return kp_child_died(c, err);
    char *message = malloc((size_t)h.message_len + 1);
    char *log = h.log_len ? malloc((size_t)h.log_len + 1) : NULL;
    void *body = h.payload_len ? malloc((size_t)h.payload_len) : NULL;
    if (!message || (h.log_len && !log) || (h.payload_len && !body)) {
        free(message);
        free(log);
        free(body);
        return kp_error_set(err, KPROF_NOMEM, "out of memory reading the session's answer");
    }
    if (kp_child_read(c->fd, message, h.message_len, NULL) != KPROF_OK ||
        (log && kp_child_read(c->fd, log, h.log_len, NULL) != KPROF_OK) ||
        (body && kp_child_read(c->fd, body, (size_t)h.payload_len, NULL) != KPROF_OK)) {
        free(message);
        free(log);
        free(body);
        return kp_child_died(c, err);
    }
    message[h.message_len] = '\0';
    if (log) log[h.log_len] = '\0';
    if (h.status != KPROF_OK) {
        kp_child_take_error(err, (kprof_status)h.status, message, log);
        free(message);
        free(body);
        return (kprof_status)h.status;
    }
    free(message);
    free(log);
    *payload = body;
    *payload_len = (size_t)h.payload_len;
    return KPROF_OK;
}

static kprof_status kp_child_short(kp_error *err)
{
    return kp_error_set(err, KPROF_BACKEND,
                        "the session's process sent an answer of the wrong size");
}

/* Take the session's info and its kernel from a reply (kp_child_reply_kernel). */
static kprof_status kp_child_take_kernel(kp_lab_child *c, const char *p, size_t n, kp_error *err)
{
    size_t head = sizeof(kp_lab_info) + sizeof(kp_kernel_meta);
    if (n < head) return kp_child_short(err);
    kp_kernel_meta k;
    memcpy(&k, p + sizeof(kp_lab_info), sizeof k);
    size_t nparams = k.nparams > 0 && k.params ? (size_t)k.nparams : 0;
    if (n != head + nparams * sizeof(kp_param)) return kp_child_short(err);
    kp_param *params = NULL;
    if (nparams) {
        params = malloc(nparams * sizeof *params);
        if (!params) return kp_error_nomem(err);
        memcpy(params, p + head, nparams * sizeof *params);
    }
    memcpy(c->info, p, sizeof *c->info);
    free(c->kernel.params);
    c->kernel = k;
    c->kernel.params = params;
    c->info->kernel = &c->kernel; /* the child's pointers mean nothing here */
    c->info->spec = c->spec;
    return KPROF_OK;
}

static kprof_status kp_lab_child_open(const kp_lab_options *opts, const kp_spec *spec,
                                      kp_lab_info *info, kp_lab_child **out, kp_error *err)
{
    *out = NULL;
    kp_lab_child *c = calloc(1, sizeof *c);
    if (!c) return kp_error_nomem(err);
    c->fd = -1;
    c->spec = spec;
    c->info = info;
    void *p = NULL;
    size_t n = 0;
    kprof_status st = kp_child_fork(kp_child_serve_lab, opts, &c->pid, &c->fd, err);
    if (st == KPROF_OK) st = kp_child_call(c, KP_CHILD_OPEN, NULL, 0, &p, &n, err);
    if (st == KPROF_OK) st = kp_child_take_kernel(c, p, n, err);
    free(p);
    if (st != KPROF_OK) {
        kp_lab_child_close(c);
        return st;
    }
    *out = c;
    return KPROF_OK;
}

static kprof_status kp_lab_child_use_kernel(kp_lab_child *c, const char *entry, kp_error *err)
{
    size_t len = entry ? strlen(entry) : 0;
    if (len >= 1024) return kp_error_set(err, KPROF_INVALID, "--entry is too long");
    char args[sizeof(uint32_t) + 1024];
    uint32_t len32 = (uint32_t)len;
    memcpy(args, &len32, sizeof len32);
    if (len) memcpy(args + sizeof len32, entry, len);
    void *p = NULL;
    size_t n = 0;
    kprof_status st = kp_child_call(c, KP_CHILD_USE_KERNEL, args, sizeof len32 + len, &p, &n, err);
    if (st == KPROF_OK) st = kp_child_take_kernel(c, p, n, err);
    free(p);
    return st;
}

/* CHECK_LAUNCH or REFLECT: a launch out, a reflection back. */
static kprof_status kp_lab_child_launch_call(kp_lab_child *c, kp_child_op op,
                                             const kp_launch *launch, kp_reflection *refl,
                                             kp_error *err)
{
    void *p = NULL;
    size_t n = 0;
    kprof_status st = kp_child_call(c, op, launch, sizeof *launch, &p, &n, err);
    if (st == KPROF_OK && n != sizeof *refl) st = kp_child_short(err);
    if (st == KPROF_OK) memcpy(refl, p, sizeof *refl);
    free(p);
    return st;
}

static kprof_status kp_lab_child_check_launch(kp_lab_child *c, const kp_launch *launch,
                                              kp_reflection *refl, kp_error *err)
{
    c->launch = *launch;
    c->have_launch = 1;
    return kp_lab_child_launch_call(c, KP_CHILD_CHECK_LAUNCH, launch, refl, err);
}

static kprof_status kp_lab_child_reflect(kp_lab_child *c, const kp_launch *launch,
                                         kp_reflection *refl, kp_error *err)
{
    return kp_lab_child_launch_call(c, KP_CHILD_REFLECT, launch, refl, err);
}

static kprof_status kp_lab_child_measure(kp_lab_child *c, const kp_launch *launch, int warmup,
                                         int iters, double *samples_ms, kp_dispatch_span *spans,
                                         kp_error *err)
{
    c->launch = *launch;
    c->have_launch = 1;
    kp_child_measure_request rq = {
        .launch = *launch, .warmup = warmup, .iters = iters, .spans = spans != NULL};
    void *p = NULL;
    size_t n = 0;
    kprof_status st = kp_child_call(c, KP_CHILD_MEASURE, &rq, sizeof rq, &p, &n, err);
    if (st == KPROF_TIMEOUT) c->wedged = 1;
    size_t timer = sizeof c->info->timer, each = (size_t)iters * sizeof *samples_ms;
    size_t span_bytes = spans ? ((size_t)warmup + (size_t)iters) * sizeof *spans : 0;
    if (st == KPROF_OK && n != timer + each + span_bytes) st = kp_child_short(err);
    if (st == KPROF_OK) {
        memcpy(c->info->timer, p, timer);
        c->info->timer[timer - 1] = '\0';
        memcpy(samples_ms, (const char *)p + timer, each);
        if (spans) memcpy(spans, (const char *)p + timer + each, span_bytes);
    }
    free(p);
    return st;
}

static kprof_status kp_lab_child_sample(kp_lab_child *c, const kp_launch *launch, int n, int cold,
                                        double *samples_ms, double *flush_ms,
                                        kp_dispatch_span *spans, kp_error *err)
{
    c->launch = *launch;
    c->have_launch = 1;
    kp_child_sample_request rq = {.launch = *launch, .n = n, .cold = cold, .spans = spans != NULL};
    void *p = NULL;
    size_t len = 0;
    kprof_status st = kp_child_call(c, KP_CHILD_SAMPLE, &rq, sizeof rq, &p, &len, err);
    if (st == KPROF_TIMEOUT) c->wedged = 1;
    size_t timer = sizeof c->info->timer, each = (size_t)n * sizeof *samples_ms;
    size_t span_bytes = spans ? (size_t)n * (cold ? 2 : 1) * sizeof *spans : 0;
    if (st == KPROF_OK && len != timer + 2 * each + span_bytes) st = kp_child_short(err);
    if (st == KPROF_OK) {
        memcpy(c->info->timer, p, timer);
        c->info->timer[timer - 1] = '\0';
        memcpy(samples_ms, (const char *)p + timer, each);
        if (flush_ms) memcpy(flush_ms, (const char *)p + timer + each, each);
        if (spans) memcpy(spans, (const char *)p + timer + 2 * each, span_bytes);
    }
    free(p);
    return st;
}

static kprof_status kp_lab_child_digest(kp_lab_child *c, kp_buffer_digest *out, int max, int *count,
                                        kp_error *err)
{
    *count = 0;
    int32_t max32 = max < 0 ? 0 : max > KP_SPEC_MAX_ARGS ? KP_SPEC_MAX_ARGS : max;
    void *p = NULL;
    size_t n = 0;
    kprof_status st = kp_child_call(c, KP_CHILD_DIGEST, &max32, sizeof max32, &p, &n, err);
    int32_t got = 0;
    if (st == KPROF_OK && n >= sizeof got) memcpy(&got, p, sizeof got);
    if (st == KPROF_OK &&
        (n < sizeof got || got < 0 || got > max32 || n != sizeof got + (size_t)got * sizeof *out))
        st = kp_child_short(err);
    if (st == KPROF_OK) {
        memcpy(out, (const char *)p + sizeof got, (size_t)got * sizeof *out);
        *count = got;
    }
    free(p);
    return st;
}

static kprof_status kp_lab_child_finish(kp_lab_child *c, kp_error *err)
{
    if (c->dead || c->fd < 0)
        return kp_error_set(err, KPROF_FAULT,
                            "the session's process has ended: nothing more runs in it");
    c->op = KP_CHILD_FINISH;
    int32_t op = KP_CHILD_FINISH;
    char extra;
    /* The child answers FINISH by releasing everything and exiting: the end of file is the
     * answer, its exit status the verdict. */
    if (kp_child_write(c->fd, &op, sizeof op, NULL) == KPROF_OK)
        kp_child_read(c->fd, &extra, 1, NULL);
    close(c->fd);
    c->fd = -1;
    char how[160];
    if (kp_child_wait(c, how, sizeof how)) return KPROF_OK;
    return kp_child_fault(c, how, err);
}

static int kp_lab_child_pid(const kp_lab_child *c)
{
    return c ? (int)c->pid : 0;
}

static int kp_lab_child_void(const kp_lab_child *c)
{
    return c && c->dead;
}

static void kp_lab_child_close(kp_lab_child *c)
{
    if (!c) return;
    if (c->fd >= 0) close(c->fd); /* the child sees the end of file, releases and exits */
    if (c->pid > 0) {
        if (c->wedged) kill(c->pid, SIGKILL);
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    free(c->kernel.params);
    free(c);
}

/* ---- kp_lab_remote: the session's table over the child ---- */

static kprof_status kp_remote_use_kernel(kp_lab *lab, const char *entry, kp_error *err)
{
    return kp_lab_child_use_kernel(lab->child, entry, err);
}

static kprof_status kp_remote_check_launch(kp_lab *lab, const kp_launch *launch,
                                           kp_reflection *refl, kp_error *err)
{
    return kp_lab_child_check_launch(lab->child, launch, refl, err);
}

static kprof_status kp_remote_reflect(kp_lab *lab, const kp_launch *launch, kp_reflection *refl,
                                      kp_error *err)
{
    return kp_lab_child_reflect(lab->child, launch, refl, err);
}

static kprof_status kp_remote_measure(kp_lab *lab, const kp_launch *launch, int warmup, int iters,
                                      double *samples_ms, kp_dispatch_span *spans, kp_error *err)
{
    return kp_lab_child_measure(lab->child, launch, warmup, iters, samples_ms, spans, err);
}

static kprof_status kp_remote_sample(kp_lab *lab, const kp_launch *launch, int n, int cold,
                                     double *samples_ms, double *flush_ms, kp_dispatch_span *spans,
                                     kp_error *err)
{
    return kp_lab_child_sample(lab->child, launch, n, cold, samples_ms, flush_ms, spans, err);
}

static kprof_status kp_remote_digest(kp_lab *lab, kp_buffer_digest *out, int max, int *n,
                                     kp_error *err)
{
    return kp_lab_child_digest(lab->child, out, max, n, err);
}

static kprof_status kp_remote_finish(kp_lab *lab, kp_error *err)
{
    return kp_lab_child_finish(lab->child, err);
}

static int kp_remote_pid(const kp_lab *lab)
{
    return kp_lab_child_pid(lab->child);
}

static int kp_remote_is_void(const kp_lab *lab)
{
    return kp_lab_child_void(lab->child);
}

static void kp_remote_close(kp_lab *lab)
{
    kp_lab_child_close(lab->child);
    free(lab);
}

/* No counters and no PC samples: no backend that has them runs its kernels in kprof's own
 * process today (counters.c and hotspots.c say so when asked). */
const kp_lab_impl kp_lab_remote = {
    .where = "child",
    .use_kernel = kp_remote_use_kernel,
    .check_launch = kp_remote_check_launch,
    .reflect = kp_remote_reflect,
    .measure = kp_remote_measure,
    .sample = kp_remote_sample,
    .digest = kp_remote_digest,
    .counters = NULL,
    .pc_sample = NULL,
    .finish = kp_remote_finish,
    .pid = kp_remote_pid,
    .is_void = kp_remote_is_void,
    .close = kp_remote_close,
};

kprof_status kp_lab_remote_open(const kp_lab_options *opts, kp_lab **out, kp_error *err)
{
    *out = NULL;
    kp_lab *lab = calloc(1, sizeof *lab);
    if (!lab) return kp_error_nomem(err);
    lab->impl = &kp_lab_remote;
    /* The SPEC is parsed here too: a bad one needs no child, and a fault's message reads it. A
     * captured launch stands for its own SPEC (replay.c); the child reads the capture again. */
    kp_capture *capture = NULL;
    char dir[4096];
    kprof_status st = kp_lab_capture_load(opts, &capture, dir, sizeof dir, err);
    if (st == KPROF_OK)
        st = capture ? kp_lab_capture_spec(capture, &lab->spec, err)
                     : kp_spec_parse(opts->buffers, &lab->spec, err);
    if (st == KPROF_OK && capture) { /* what a fault while opening is told by (kp_child_fault) */
        lab->info.replay = 1;
        kp_strlcpy(lab->info.replay_dir, dir, sizeof lab->info.replay_dir);
        kp_lab_capture_launch(capture, &lab->info.replay_launch);
    }
    kp_lab_capture_free(capture);
    if (st == KPROF_OK) st = kp_lab_child_open(opts, &lab->spec, &lab->info, &lab->child, err);
    if (st != KPROF_OK) {
        free(lab);
        return st;
    }
    *out = lab;
    return KPROF_OK;
}

/* ---- the device choice in a child ---- */

typedef struct kp_child_device_args {
    const char *backend;
    int device, lang;
} kp_child_device_args;

static void kp_child_serve_device(int fd, const void *arg)
{
    const kp_child_device_args *a = arg;
    kp_child_device_reply *r = calloc(1, sizeof *r);
    kp_error err = {0};
    const kp_backend_ops *ops = NULL;
    int index = -1;
    if (!r) {
        kp_error_nomem(&err);
    } else if (kp_backend_choose(a->backend, a->device, a->lang, &ops, &index, &err) == KPROF_OK &&
               ops->device_info(index, &r->info, &err) == KPROF_OK) {
        kp_strlcpy(r->backend, ops->name, sizeof r->backend);
        r->index = index;
    }
    kp_child_part part = {r, sizeof *r};
    kp_child_reply(fd, &err, &part, 1);
    kp_error_clear(&err);
    free(r);
    close(fd);
    exit(0);
}

kprof_status kp_lab_remote_device(const char *backend, int device, int lang,
                                  const kp_backend_ops **ops, int *index, kp_device_info *info,
                                  kp_error *err)
{
    *ops = NULL;
    *index = -1;
    kp_lab_info scratch; /* kp_child_died reads the device and kernel from it */
    memset(&scratch, 0, sizeof scratch);
    kp_lab_child c = {.fd = -1, .info = &scratch};
    kp_child_device_args a = {.backend = backend, .device = device, .lang = lang};
    void *p = NULL;
    size_t n = 0;
    kprof_status st = kp_child_fork(kp_child_serve_device, &a, &c.pid, &c.fd, err);
    if (st == KPROF_OK) st = kp_child_call(&c, KP_CHILD_DEVICE, NULL, 0, &p, &n, err);
    if (st == KPROF_OK && n != sizeof(kp_child_device_reply)) st = kp_child_short(err);
    if (st == KPROF_OK) {
        const kp_child_device_reply *r = p;
        *ops = kp_backend_find(r->backend);
        *index = r->index;
        memcpy(info, &r->info, sizeof *info);
        if (!*ops) st = kp_child_short(err);
    }
    free(p);
    if (c.fd >= 0) close(c.fd);
    if (c.pid > 0)
        while (waitpid(c.pid, NULL, 0) < 0 && errno == EINTR) {
        }
    return st;
}
