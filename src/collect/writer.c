/*
 * writer.c — per-thread record buffers flushed to this process's trace part (see writer.h).
 *
 * Each thread owns a 64 KiB buffer guarded by its own mutex, which only the exit and crash
 * paths ever contend for. Strings are interned in a small open-addressing table under a global
 * mutex and defined inline, in the buffer of the thread that first used them; the reader
 * resolves ids after reading a whole file, so definitions may follow their uses.
 */
#define _GNU_SOURCE
#include "collect/writer.h"
#include "base/job.h"
#include "base/env.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define KP_TBUF_BYTES   (64 * 1024)
#define KP_FLUSH_AGE_NS 100000000ull
#define KP_STRINGS      8192 /* first size of the string table; it doubles at 3/4 full */

typedef struct kp_tbuf {
    pthread_mutex_t lock;
    struct kp_tbuf *next; /* all buffers, for the exit and crash flush */
    uint64_t first_ns;    /* when the oldest unflushed record was added */
    size_t len;
    int dead; /* its thread has exited; reused by the next new thread */
    unsigned char data[KP_TBUF_BYTES];
} kp_tbuf;

static struct {
    pthread_mutex_t lock;       /* strings, the buffer list, start/restart */
    pthread_mutex_t write_lock; /* the file: one batch at a time, so a failed one can be cut off */
    atomic_int active;
    int fd;
    kp_rec *header;       /* the file's first record, mapped shared: the loss counters */
    unsigned char *retry; /* string definitions of batches that could not be written */
    size_t retry_len, retry_cap;
    uint64_t lost_local; /* lost records when there is no mapping (reported by a record) */
    pid_t pid;           /* the process the writer was started in */
    kp_tbuf *buffers;
    void (*at_exit[4])(void);
    int nat_exit;
    void (*at_crash[4])(void);
    int nat_crash;
    uint32_t next_string;
    struct kp_string_slot {
        uint64_t hash; /* 0: empty */
        uint32_t id;
    } * strings;
    uint32_t nstrings, strings_cap;
    int hooks_installed;     /* the thread-exit key and the fork handlers */
    int exit_hook_installed; /* atexit(kp_writer_exit) */
    int process_hooks;       /* this start asked for KP_WRITER_PROCESS_HOOKS */
} kp_w = {.lock = PTHREAD_MUTEX_INITIALIZER, .write_lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static _Thread_local kp_tbuf *kp_my_buf;
static pthread_key_t kp_buf_key;

static _Thread_local uint32_t kp_my_tid;

uint32_t kp_writer_tid(void)
{
    if (!kp_my_tid) kp_my_tid = (uint32_t)syscall(SYS_gettid);
    return kp_my_tid;
}

int kp_writer_active(void)
{
    /* A forked child's handler clears it, so no getpid() on the emit path. */
    return atomic_load_explicit(&kp_w.active, memory_order_relaxed);
}

/* Write all of n bytes: 0, or the errno of the failure. */
static int kp_write_fully(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 && errno ? errno : ENOSPC;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Cut the file back to len bytes; if even that fails the reader stops at the cut-off record. */
static void kp_truncate(int fd, off_t len)
{
    if (ftruncate(fd, len) != 0) return;
}

/* Records lost before they reached the file: counted in the header's mapping, which reaches the
 * file whatever becomes of the process and needs no room on the disk. */
static void kp_count_dropped(uint64_t n)
{
    if (kp_w.header) __atomic_fetch_add(&kp_w.header->bytes, n, __ATOMIC_RELAXED);
}

/* Records that a failed write lost, and the first failure's errno. */
static void kp_count_lost(uint64_t n, int error)
{
    if (!kp_w.header) {
        __atomic_fetch_add(&kp_w.lost_local, n, __ATOMIC_RELAXED);
        return;
    }
    __atomic_fetch_add(&kp_w.header->queued, n, __ATOMIC_RELAXED);
    int32_t none = 0;
    __atomic_compare_exchange_n(&kp_w.header->status, &none, (int32_t)error, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
}

/* A batch that could not be written: count its records as lost and keep its string definitions
 * to go out before the next batch, so that names used later still resolve. Caller holds
 * write_lock (keep = 1), or is crashing (keep = 0: nothing may be allocated). */
static void kp_batch_lost(const unsigned char *p, size_t n, int error, int keep)
{
    uint64_t records = 0;
    for (size_t pos = 0; pos + sizeof(kp_rec) <= n;) {
        kp_rec r;
        memcpy(&r, p + pos, sizeof r);
        size_t step = sizeof r;
        if (r.kind == KP_REC_STRING) {
            step += ((size_t)r.bytes + 7) & ~(size_t)7;
            if (pos + step > n) break;
            if (keep && kp_w.retry_len + step > kp_w.retry_cap) {
                size_t cap = kp_w.retry_cap ? kp_w.retry_cap * 2 : 4096;
                while (cap < kp_w.retry_len + step)
                    cap *= 2;
                unsigned char *grown = realloc(kp_w.retry, cap);
                if (grown) {
                    kp_w.retry = grown;
                    kp_w.retry_cap = cap;
                }
            }
            if (keep && kp_w.retry_len + step <= kp_w.retry_cap) {
                memcpy(kp_w.retry + kp_w.retry_len, p + pos, step);
                kp_w.retry_len += step;
            }
        } else if (r.kind == KP_REC_DROPPED) {
            records += r.bytes; /* a count that is lost with it */
        } else if (kp_event_kind_valid(r.kind)) {
            records++; /* what would have been an event of the trace */
        }
        pos += step;
    }
    kp_count_lost(records, error);
}

static void kp_arm_crash_handlers(int all);

/* Append a batch to the file. A write that fails (the folder is full) is cut off again, so the
 * file stays a readable sequence of whole records, and what it held is counted as lost.
 * crashing: from the crash handler, which must not wait for the lock or allocate. */
static void kp_write_batch(const unsigned char *p, size_t n, int crashing)
{
    if (kp_w.fd < 0 || n == 0) return;
    int locked = 1;
    if (crashing)
        locked = pthread_mutex_trylock(&kp_w.write_lock) == 0;
    else
        pthread_mutex_lock(&kp_w.write_lock);
    int error = 0;
    off_t before = lseek(kp_w.fd, 0, SEEK_END);
    if (locked && kp_w.retry_len) {
        error = kp_write_fully(kp_w.fd, kp_w.retry, kp_w.retry_len);
        if (!error)
            kp_w.retry_len = 0;
        else if (before >= 0)
            kp_truncate(kp_w.fd, before);
    }
    if (!error) {
        before = lseek(kp_w.fd, 0, SEEK_END);
        error = kp_write_fully(kp_w.fd, p, n);
        if (error && before >= 0) kp_truncate(kp_w.fd, before);
    }
    /* Whole batches up to here: what `kprof trace` may merge while the program runs (only under
     * the lock, so that the mark only grows and never passes a batch still being written). */
    if (!error && locked && before >= 0 && kp_w.header)
        __atomic_store_n(&kp_w.header->submitted, (uint64_t)before + n, __ATOMIC_RELEASE);
    if (error) kp_batch_lost(p, n, error, locked && !crashing);
    if (locked) pthread_mutex_unlock(&kp_w.write_lock);
    if (!crashing && kp_w.process_hooks)
        kp_arm_crash_handlers(0); /* now and then: a runtime may have replaced it */
}

/* Caller holds b->lock. */
static void kp_tbuf_flush_locked(kp_tbuf *b, int crashing)
{
    if (b->len) kp_write_batch(b->data, b->len, crashing);
    b->len = 0;
}

static void kp_thread_exit(void *p)
{
    kp_tbuf *b = p;
    pthread_mutex_lock(&b->lock);
    kp_tbuf_flush_locked(b, 0);
    b->dead = 1;
    pthread_mutex_unlock(&b->lock);
}

/* This thread's buffer, made (or a dead thread's reused) on first use. */
static kp_tbuf *kp_tbuf_get(void)
{
    if (kp_my_buf) return kp_my_buf;
    pthread_mutex_lock(&kp_w.lock);
    kp_tbuf *b = NULL;
    for (kp_tbuf *it = kp_w.buffers; it; it = it->next) {
        if (it->dead) {
            b = it;
            b->dead = 0;
            break;
        }
    }
    if (!b) {
        b = calloc(1, sizeof *b);
        if (b) {
            pthread_mutex_init(&b->lock, NULL);
            b->next = kp_w.buffers;
            kp_w.buffers = b;
        }
    }
    pthread_mutex_unlock(&kp_w.lock);
    if (b) pthread_setspecific(kp_buf_key, b);
    kp_my_buf = b;
    return b;
}

/* Append bytes (a record, or a string record with its text) to this thread's buffer. */
static void kp_append(const void *head, size_t head_len, const void *tail, size_t tail_len,
                      size_t total)
{
    kp_tbuf *b = kp_tbuf_get();
    if (!b) return;
    pthread_mutex_lock(&b->lock);
    uint64_t now = kp_now_ns();
    if (b->len + total > KP_TBUF_BYTES) kp_tbuf_flush_locked(b, 0);
    if (total > KP_TBUF_BYTES) {
        /* Too big for any buffer: straight to the file. */
        unsigned char *tmp = malloc(total);
        if (!tmp) {
            kp_batch_lost(head, head_len, ENOMEM, 0);
        } else {
            memset(tmp, 0, total);
            memcpy(tmp, head, head_len);
            if (tail_len) memcpy(tmp + head_len, tail, tail_len);
            kp_write_batch(tmp, total, 0);
            free(tmp);
        }
    } else {
        if (b->len == 0) b->first_ns = now;
        memset(b->data + b->len, 0, total);
        memcpy(b->data + b->len, head, head_len);
        if (tail_len) memcpy(b->data + b->len + head_len, tail, tail_len);
        b->len += total;
        if (now - b->first_ns > KP_FLUSH_AGE_NS) kp_tbuf_flush_locked(b, 0);
    }
    pthread_mutex_unlock(&b->lock);
}

void kp_writer_emit(kp_rec *r)
{
    if (!kp_writer_active()) return;
    r->magic = KP_REC_MAGIC;
    kp_append(r, sizeof *r, NULL, 0, sizeof *r);
}

void kp_writer_emit_n(kp_rec *r, size_t n)
{
    if (!kp_writer_active() || n == 0) return;
    for (size_t i = 0; i < n; i++)
        r[i].magic = KP_REC_MAGIC;
    kp_append(r, n * sizeof *r, NULL, 0, n * sizeof *r);
}

/* Double the string table, or make its first. Caller holds kp_w.lock. KPROF_NOMEM leaves the
 * table as it was, and no kp_error is filled: the caller carries on without (a string then
 * defined again on every use), on the emit path where nobody could be told. */
static kprof_status kp_strings_grow_locked(void)
{
    uint32_t cap = kp_w.strings_cap ? kp_w.strings_cap * 2 : KP_STRINGS;
    struct kp_string_slot *t = calloc(cap, sizeof *t);
    if (!t) return KPROF_NOMEM;
    for (uint32_t i = 0; i < kp_w.strings_cap; i++) {
        if (!kp_w.strings[i].hash) continue;
        uint32_t s = (uint32_t)(kp_w.strings[i].hash % cap);
        while (t[s].hash)
            s = (s + 1) % cap;
        t[s] = kp_w.strings[i];
    }
    free(kp_w.strings);
    kp_w.strings = t;
    kp_w.strings_cap = cap;
    return KPROF_OK;
}

uint32_t kp_writer_string(const char *text)
{
    if (!text || !kp_writer_active()) return 0;
    size_t len = strlen(text);
    uint64_t h = kp_hash64(KP_HASH_SEED, text, len) | 1; /* 0 marks an empty slot */
    pthread_mutex_lock(&kp_w.lock);
    if (kp_w.nstrings + 1 >= kp_w.strings_cap / 4 * 3) kp_strings_grow_locked();
    uint32_t id;
    int fresh = 1; /* a new id, whose text the file must hold */
    if (kp_w.nstrings + 1 < kp_w.strings_cap / 4 * 3) {
        uint32_t s = (uint32_t)(h % kp_w.strings_cap);
        while (kp_w.strings[s].hash && kp_w.strings[s].hash != h)
            s = (s + 1) % kp_w.strings_cap;
        if (kp_w.strings[s].hash == h) {
            id = kp_w.strings[s].id;
            fresh = 0;
        } else {
            kp_w.strings[s].hash = h;
            kp_w.strings[s].id = id = ++kp_w.next_string;
            kp_w.nstrings++;
        }
    } else {
        id = ++kp_w.next_string; /* no memory for the table: defined again on every use */
    }
    pthread_mutex_unlock(&kp_w.lock);
    if (fresh) {
        kp_rec r = {.magic = KP_REC_MAGIC, .kind = KP_REC_STRING, .name = id, .bytes = len};
        kp_append(&r, sizeof r, text, len, sizeof r + ((len + 7) & ~(size_t)7));
    }
    return id;
}

void kp_writer_note(const char *text)
{
    kp_rec r = {.kind = KP_REC_NOTE, .start = kp_now_ns(), .tid = kp_writer_tid()};
    r.name = kp_writer_string(text);
    kp_writer_emit(&r);
}

void kp_writer_dropped(uint64_t n)
{
    if (!n || !kp_writer_active()) return;
    if (kp_w.header) {
        kp_count_dropped(n);
        return;
    }
    kp_rec r = {.kind = KP_REC_DROPPED, .start = kp_now_ns(), .bytes = n};
    kp_writer_emit(&r);
}

void kp_writer_flush(void)
{
    kp_tbuf *b = kp_my_buf;
    if (!b || !kp_writer_active()) return;
    pthread_mutex_lock(&b->lock);
    kp_tbuf_flush_locked(b, 0);
    pthread_mutex_unlock(&b->lock);
}

/* Flush every buffer: waiting for each (exit), skipping those in use (trylock), or from the
 * crash handler (crashing: skip those in use, wait for nothing, allocate nothing). */
static void kp_flush_all(int trylock, int crashing)
{
    for (kp_tbuf *b = kp_w.buffers; b; b = b->next) {
        if (trylock || crashing) {
            if (pthread_mutex_trylock(&b->lock) != 0) continue;
        } else {
            pthread_mutex_lock(&b->lock);
        }
        kp_tbuf_flush_locked(b, crashing);
        pthread_mutex_unlock(&b->lock);
    }
}

void kp_writer_at_exit(void (*fn)(void))
{
    pthread_mutex_lock(&kp_w.lock);
    if (kp_w.nat_exit < 4) kp_w.at_exit[kp_w.nat_exit++] = fn;
    pthread_mutex_unlock(&kp_w.lock);
}

void kp_writer_at_crash(void (*fn)(void))
{
    pthread_mutex_lock(&kp_w.lock);
    if (kp_w.nat_crash < 4) kp_w.at_crash[kp_w.nat_crash++] = fn;
    pthread_mutex_unlock(&kp_w.lock);
}

void kp_writer_flush_all(void)
{
    if (kp_writer_active()) kp_flush_all(1, 0);
}

/* The file's last records: the losses no mapping counted, and the end. */
static uint64_t kp_writer_close_records(void)
{
    uint64_t lost = __atomic_exchange_n(&kp_w.lost_local, 0, __ATOMIC_RELAXED);
    if (lost) { /* no header mapping to count them in: one last record says how many */
        kp_rec d = {.kind = KP_REC_DROPPED, .start = kp_now_ns(), .bytes = lost};
        kp_writer_emit(&d);
    }
    kp_clock_pair pair = kp_clock_pair_now();
    kp_rec r = {.kind = KP_REC_END,
                .start = (uint64_t)pair.mono_ns,
                .end = (uint64_t)pair.real_ns,
                .bytes = (uint64_t)pair.uncertainty_ns,
                .tid = kp_writer_tid()};
    kp_writer_emit(&r);
    return r.start;
}

static void kp_writer_exit(void)
{
    if (!kp_writer_active() || kp_w.pid != getpid()) return;
    for (int i = kp_w.nat_exit - 1; i >= 0; i--)
        kp_w.at_exit[i]();
    uint64_t end = kp_writer_close_records();
    kp_flush_all(0, 0);
    /* Said in the header too, in case the end record could not be written. */
    if (kp_w.header) __atomic_store_n(&kp_w.header->end, end, __ATOMIC_RELAXED);
}

void kp_writer_stop(void)
{
    if (!kp_writer_active() || kp_w.pid != getpid()) return;
    uint64_t end = kp_writer_close_records();
    pthread_mutex_lock(&kp_w.lock);
    kp_flush_all(0, 0);
    atomic_store(&kp_w.active, 0);
    if (kp_w.header) {
        __atomic_store_n(&kp_w.header->end, end, __ATOMIC_RELAXED);
        munmap(kp_w.header, sizeof *kp_w.header);
        kp_w.header = NULL;
    }
    pthread_mutex_lock(&kp_w.write_lock);
    if (kp_w.fd >= 0) close(kp_w.fd);
    kp_w.fd = -1;
    kp_w.retry_len = 0;
    pthread_mutex_unlock(&kp_w.write_lock);
    pthread_mutex_unlock(&kp_w.lock);
}

/* Crash: flush what can be flushed without waiting on a lock, then die as the program would.
 *
 * Runtimes install crash handlers of their own after ours (PoCL's LLVM does, at the first
 * kernel build) and, when theirs runs, put back what they found and return; for abort() the C
 * library then resets the signal to its default, so ours would never run. kp_writer_checkpoint
 * therefore puts ours back in front of whatever came since, and a second entry in the same crash
 * (a handler that put ours back, a fault that repeats) goes straight to the default action. */
static struct sigaction kp_old_actions[32];
static const int kp_crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static volatile sig_atomic_t kp_crashing;

static void kp_on_crash(int sig)
{
    int saved_errno = errno;
    if (kp_crashing) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    kp_crashing = 1;
    /* Whatever ran before us (the program's handler, the default) handles the signal next. */
    sigaction(sig, &kp_old_actions[sig], NULL);
    if (kp_writer_active() && kp_w.pid == getpid()) {
        for (int i = 0; i < kp_w.nat_crash; i++)
            kp_w.at_crash[i]();
        kp_flush_all(1, 1);
    }
    errno = saved_errno;
    raise(sig);
}

/* Put the crash handler in front of the signals' current handlers: all of them at the start, and
 * SIGABRT again after a runtime replaced it. Only SIGABRT: a fault signal comes back to us when
 * the handler in front returns (the instruction faults again), and some runtimes use SIGSEGV in
 * normal operation, with handlers that need the fault's own context, which must stay in front. */
static void kp_arm_crash_handlers(int all)
{
    for (size_t i = 0; i < sizeof kp_crash_signals / sizeof kp_crash_signals[0]; i++) {
        int sig = kp_crash_signals[i];
        if (!all && sig != SIGABRT) continue;
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) != 0 || cur.sa_handler == kp_on_crash) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = kp_on_crash;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND | SA_NODEFER | SA_ONSTACK;
        kp_old_actions[sig] = cur;
        sigaction(sig, &sa, NULL);
    }
}

void kp_writer_checkpoint(void)
{
    if (!kp_writer_active() || kp_w.pid != getpid()) return;
    kp_writer_flush();
    if (kp_w.process_hooks) kp_arm_crash_handlers(0);
}

static void kp_fork_prepare(void)
{
    pthread_mutex_lock(&kp_w.lock);
    pthread_mutex_lock(&kp_w.write_lock);
}

static void kp_fork_parent(void)
{
    pthread_mutex_unlock(&kp_w.write_lock);
    pthread_mutex_unlock(&kp_w.lock);
}

/* The child's buffers hold its parent's records, which the parent will write: drop them. The
 * child records again (into its own file) only if its collector starts the writer anew. */
static void kp_fork_child(void)
{
    kp_my_tid = 0; /* the forking thread has a new id in the child */
    for (kp_tbuf *b = kp_w.buffers; b; b = b->next) {
        pthread_mutex_init(&b->lock, NULL);
        b->len = 0;
        if (b != kp_my_buf) b->dead = 1;
    }
    if (kp_w.fd >= 0) close(kp_w.fd);
    kp_w.fd = -1;
    if (kp_w.header) munmap(kp_w.header, sizeof *kp_w.header); /* the parent's counters */
    kp_w.header = NULL;
    kp_w.retry_len = 0;
    kp_w.lost_local = 0;
    atomic_store(&kp_w.active, 0);
    pthread_mutex_init(&kp_w.lock, NULL);
    pthread_mutex_init(&kp_w.write_lock, NULL);
    if (kp_w.strings) memset(kp_w.strings, 0, kp_w.strings_cap * sizeof *kp_w.strings);
    kp_w.nstrings = 0;
    kp_w.nat_exit = kp_w.nat_crash = 0; /* the parent's collectors' hooks */
}

kprof_status kp_writer_start(const char *collector, kp_error *err)
{
    if (kp_writer_active() && kp_w.pid == getpid()) return KPROF_OK;
    const char *dir = getenv(KP_ENV_TRACE_DIR);
    if (!dir || !*dir)
        return kp_error_set(err, KPROF_INVALID,
                            KP_ENV_TRACE_DIR " is not set: this process is not under kprof trace");
    return kp_writer_start_in(dir, collector, KP_WRITER_PROCESS_HOOKS, err);
}

/* The record file in dir could not be made or its head not written (errno e): IO, and errno left
 * as e for a caller that words the failure itself. */
static kprof_status kp_writer_start_failed(const char *dir, int e, kp_error *err)
{
    kprof_status st =
        kp_error_set(err, KPROF_IO, "cannot write a record file in %s: %s", dir, strerror(e));
    errno = e;
    return st;
}

/* What a file before this one left behind (a stopped writer started again): its strings' ids,
 * whose definitions the new file must hold again, and records that missed its end. Caller holds
 * kp_w.lock. */
static void kp_writer_forget_locked(void)
{
    if (kp_w.strings) memset(kp_w.strings, 0, kp_w.strings_cap * sizeof *kp_w.strings);
    kp_w.nstrings = 0;
    kp_w.retry_len = 0;
    kp_w.lost_local = 0;
    for (kp_tbuf *b = kp_w.buffers; b; b = b->next) {
        pthread_mutex_lock(&b->lock);
        b->len = 0;
        pthread_mutex_unlock(&b->lock);
    }
}

kprof_status kp_writer_start_in(const char *dir, const char *collector, unsigned flags,
                                kp_error *err)
{
    if (!dir || !*dir) return kp_error_set(err, KPROF_INVALID, "no folder for the record file");
    pthread_mutex_lock(&kp_w.lock);
    if (atomic_load(&kp_w.active) && kp_w.pid == getpid()) {
        pthread_mutex_unlock(&kp_w.lock);
        return KPROF_OK;
    }
    kp_writer_forget_locked();
    char path[4400];
    /* pid and start time: an exec'ed image keeps the pid but is another program. */
    snprintf(path, sizeof path, "%s/%ld-%s-%llu.klog", dir, (long)getpid(), collector,
             (unsigned long long)kp_now_ns());
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        pthread_mutex_unlock(&kp_w.lock);
        return kp_writer_start_failed(dir, e, err);
    }
    /* The header goes first, written here and now, with the command line's string after it: a
     * file that stays empty tells the merge that this process could not record at all. Then
     * where the process stands in a job and its first clock pair (record.h: KP_REC_PROCESS),
     * with the host's and the boot's names. */
    struct {
        kp_rec recs[8];
        char text[2048 + 256 + 64];
    } head;
    memset(&head, 0, sizeof head);
    unsigned char *at = (unsigned char *)&head;
    size_t used = 0;
    uint32_t cmd_id = ++kp_w.next_string, host_id = ++kp_w.next_string,
             boot_id = ++kp_w.next_string;
    kp_rec header = {.magic = KP_REC_MAGIC,
                     .kind = KP_REC_HEADER,
                     .start = kp_now_ns(),
                     .id = (uint64_t)getpid(),
                     .aux = (uint32_t)getppid(),
                     .tid = kp_writer_tid(),
                     .name = cmd_id};
    memcpy(at, &header, sizeof header);
    used += sizeof header;
    char cmd[2048], host[256], boot[64];
    kp_command_line(cmd, sizeof cmd);
    kp_job_host(host, sizeof host);
    kp_job_boot_id(boot, sizeof boot);
    const struct {
        uint32_t id;
        const char *text;
    } strings[3] = {{cmd_id, cmd}, {host_id, host}, {boot_id, boot}};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(strings[i].text);
        kp_rec r = {
            .magic = KP_REC_MAGIC, .kind = KP_REC_STRING, .name = strings[i].id, .bytes = len};
        memcpy(at + used, &r, sizeof r);
        memcpy(at + used + sizeof r, strings[i].text, len);
        used += sizeof r + ((len + 7) & ~(size_t)7);
    }
    kp_job_info job;
    kp_job_read(&job);
    kp_clock_pair pair = kp_clock_pair_now();
    kp_rec proc = {.magic = KP_REC_MAGIC,
                   .kind = KP_REC_PROCESS,
                   .domain = (uint16_t)job.launcher,
                   .grid = {job.rank, job.local_rank, job.world_size},
                   .block = {job.local_world_size, job.node, job.restart},
                   .name = host[0] ? host_id : 0,
                   .id = boot[0] ? boot_id : 0,
                   .start = (uint64_t)pair.mono_ns,
                   .end = (uint64_t)pair.real_ns,
                   .bytes = (uint64_t)pair.uncertainty_ns,
                   .tid = kp_writer_tid()};
    memcpy(at + used, &proc, sizeof proc);
    used += sizeof proc;
    _Static_assert(sizeof head >= 5 * sizeof(kp_rec) + 2048 + 256 + 64, "room for the head");
    int write_errno = kp_write_fully(fd, at, used);
    if (write_errno != 0) {
        kp_truncate(fd, 0); /* an empty file: the merge says this process recorded nothing */
        close(fd);
        pthread_mutex_unlock(&kp_w.lock);
        return kp_writer_start_failed(dir, write_errno, err);
    }
    void *map = mmap(NULL, sizeof(kp_rec), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    kp_w.header = map == MAP_FAILED ? NULL : map;
    if (kp_w.header) /* the head: whole, and mergeable */
        __atomic_store_n(&kp_w.header->submitted, (uint64_t)used, __ATOMIC_RELEASE);
    kp_w.fd = fd;
    kp_w.pid = getpid();
    if (!kp_w.hooks_installed) {
        kp_w.hooks_installed = 1;
        pthread_key_create(&kp_buf_key, kp_thread_exit);
        pthread_atfork(kp_fork_prepare, kp_fork_parent, kp_fork_child);
    }
    kp_w.process_hooks = (flags & KP_WRITER_PROCESS_HOOKS) != 0;
    if (kp_w.process_hooks && !kp_w.exit_hook_installed) {
        kp_w.exit_hook_installed = 1;
        atexit(kp_writer_exit);
    }
    if (kp_w.process_hooks) kp_arm_crash_handlers(1);
    atomic_store(&kp_w.active, 1);
    pthread_mutex_unlock(&kp_w.lock);
    return KPROF_OK;
}
