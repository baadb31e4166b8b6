/*
 * outfile.c — the files kprof writes for users: checked and opened before the work, written to a
 * temporary beside the target and renamed, or written in place when the target is standard
 * output, a FIFO or a character device (see outfile.h for the rules).
 */
#define _GNU_SOURCE
#include "base/outfile.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporaries now open, for kp_output_unlink_all. A slot is filled and emptied with the
 * catchable signals blocked in this thread, so a handler here never sees half a name. */
#define KP_OUTPUT_SLOTS 16
static char kp_output_tmps[KP_OUTPUT_SLOTS][4200];
static volatile sig_atomic_t kp_output_used[KP_OUTPUT_SLOTS];

static void kp_output_block(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

static void kp_output_unblock(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

void kp_output_unlink_all(void)
{
    for (int i = 0; i < KP_OUTPUT_SLOTS; i++) {
        if (!kp_output_used[i]) continue;
        unlink(kp_output_tmps[i]);
        kp_output_used[i] = 0;
    }
}

const char *kp_output_name(const kp_output *o)
{
    return strcmp(o->path, "-") == 0 ? "standard output" : o->path;
}

/* Follow symbolic links from path to what they finally name (which may not exist: a dangling
 * link names the file to create). Relative targets are taken from the link's folder. */
static kprof_status kp_output_resolve(const char *path, char *out, size_t n, kp_error *err)
{
    char cur[4096];
    if (strlen(path) >= sizeof cur)
        return kp_error_set(err, KPROF_INVALID, "%s: path too long", path);
    kp_strlcpy(cur, path, sizeof cur);
    for (int hops = 0; hops < 40; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) {
            if (strlen(cur) >= n)
                return kp_error_set(err, KPROF_INVALID, "%s: path too long", path);
            kp_strlcpy(out, cur, n);
            return KPROF_OK;
        }
        char target[4096];
        ssize_t len = readlink(cur, target, sizeof target - 1);
        if (len < 0)
            return kp_error_set(err, KPROF_IO, "%s: cannot read the link: %s", cur,
                                strerror(errno));
        target[len] = '\0';
        char next[4096];
        const char *slash = strrchr(cur, '/');
        int w;
        if (target[0] == '/' || !slash)
            w = snprintf(next, sizeof next, "%s", target);
        else
            w = snprintf(next, sizeof next, "%.*s/%s", (int)(slash - cur), cur, target);
        if (w < 0 || (size_t)w >= sizeof next)
            return kp_error_set(err, KPROF_INVALID, "%s: path too long", path);
        memcpy(cur, next, (size_t)w + 1);
    }
    return kp_error_set(err, KPROF_INVALID, "%s: too many levels of symbolic links", path);
}

/* path with its folder made canonical (realpath) and its last component kept: a name for a file
 * that need not exist yet. 0 when the folder cannot be resolved (then nothing can be made
 * there). A symbolic link in the last place is followed first. */
static int kp_output_canonical(const char *path, char *out, size_t n)
{
    char resolved[4096], folder[4096], base[4096], real[PATH_MAX];
    kp_error ignored = {0};
    if (kp_output_resolve(path, resolved, sizeof resolved, &ignored) != KPROF_OK) {
        kp_error_clear(&ignored);
        return 0;
    }
    kp_strlcpy(folder, resolved, sizeof folder);
    kp_strlcpy(base, resolved, sizeof base);
    if (!realpath(dirname(folder), real)) return 0;
    const char *name = basename(base);
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, "/") == 0) return 0;
    int w = snprintf(out, n, "%s/%s", strcmp(real, "/") == 0 ? "" : real, name);
    return w > 0 && (size_t)w < n;
}

int kp_output_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) return 0;
    char ca[4200], cb[4200];
    return kp_output_canonical(a, ca, sizeof ca) && kp_output_canonical(b, cb, sizeof cb) &&
           strcmp(ca, cb) == 0;
}

/* INVALID when the open output (st) is one of the inputs. */
static kprof_status kp_output_not_input(const struct stat *st, const char *shown,
                                        const char *const *inputs, kp_error *err)
{
    for (int i = 0; inputs && inputs[i]; i++) {
        struct stat in;
        if (stat(inputs[i], &in) != 0 || in.st_dev != st->st_dev || in.st_ino != st->st_ino)
            continue;
        if (strcmp(shown, inputs[i]) == 0)
            return kp_error_set(err, KPROF_INVALID,
                                "%s is the input: writing it would destroy what is read; name "
                                "another output",
                                shown);
        return kp_error_set(err, KPROF_INVALID,
                            "%s is the input %s: writing it would destroy what is read; name "
                            "another output",
                            shown, inputs[i]);
    }
    return KPROF_OK;
}

static const char *kp_output_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "is a folder; name a file in it"
           : S_ISBLK(mode)  ? "is a block device; kprof writes regular files, FIFOs and "
                              "character devices"
           : S_ISSOCK(mode) ? "is a socket (for standard output, name '-')"
                            : "is not a regular file";
}

/* '-', a FIFO or a character device: open it and write in place. */
static kprof_status kp_output_open_direct(kp_output *o, const char *path, const char *const *inputs,
                                          kp_error *err)
{
    o->direct = 1;
    if (strcmp(path, "-") == 0) {
        kp_strlcpy(o->path, "-", sizeof o->path);
        o->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    } else {
        kp_strlcpy(o->path, path, sizeof o->path);
        /* A FIFO blocks here until a reader opens it, as `> fifo` does in a shell; a signal
         * still ends kprof (nothing temporary exists yet). */
        o->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    }
    if (o->fd < 0)
        return kp_error_set(err, KPROF_IO, "cannot write %s: %s", kp_output_name(o),
                            strerror(errno));
    struct stat st;
    kprof_status status = KPROF_OK;
    if (fstat(o->fd, &st) == 0) status = kp_output_not_input(&st, kp_output_name(o), inputs, err);
    if (status != KPROF_OK) {
        close(o->fd);
        o->fd = -1;
    }
    return status;
}

kprof_status kp_output_open(kp_output *o, const char *path, unsigned flags,
                            const char *const *inputs, kp_error *err)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->slot = -1;
    if (!path || !*path) return kp_error_set(err, KPROF_INVALID, "an output file name is empty");
    int seekable = (flags & KP_OUTPUT_SEEKABLE) != 0;
    struct stat st;
    int exists = stat(path, &st) == 0;
    int dash = strcmp(path, "-") == 0;
    if (dash || (exists && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))) {
        if (seekable)
            return kp_error_set(err, KPROF_INVALID,
                                "%s: this output must be a regular file (it is written by name "
                                "and read back), not %s",
                                dash ? "-" : path,
                                dash                   ? "standard output"
                                : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                       : "a device");
        kprof_status status = kp_output_open_direct(o, path, inputs, err);
        if (status == KPROF_OK) o->active = 1;
        return status;
    }
    if (exists && !S_ISREG(st.st_mode))
        return kp_error_set(err, KPROF_INVALID, "%s %s", path, kp_output_kind(st.st_mode));
    if (!exists && errno != ENOENT) {
        /* A loop of links is refused (exit 2); a path through a regular file (ENOTDIR) cannot
         * be written, as a missing folder cannot: IO (exit 1), the one rule of outfile.h. */
        int e = errno;
        return kp_error_set(err, e == ELOOP ? KPROF_INVALID : KPROF_IO, "cannot write %s: %s", path,
                            e == ENOTDIR ? "a part of its folder is a file" : strerror(e));
    }
    kprof_status status = kp_output_resolve(path, o->path, sizeof o->path, err);
    if (status != KPROF_OK) return status;
    if (exists) {
        status = kp_output_not_input(&st, path, inputs, err);
        if (status != KPROF_OK) return status;
        if (!(flags & KP_OUTPUT_FORCE))
            return kp_error_set(err, KPROF_INVALID, "%s exists; use --force to replace it", path);
        o->replaces = 1;
    }
    /* The temporary beside the target (a rename stays in one file system), made with O_EXCL so
     * that nothing already there is ever truncated or followed. */
    int slot = -1;
    for (int i = 0; i < KP_OUTPUT_SLOTS && slot < 0; i++)
        if (!kp_output_used[i]) slot = i;
    if (slot < 0) return kp_error_set(err, KPROF_NOMEM, "too many outputs open at once");
    sigset_t old;
    int e = 0;
    for (int attempt = 0; attempt < 100 && o->fd < 0; attempt++) {
        int w = attempt ? snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%d", o->path, (long)getpid(),
                                   attempt)
                        : snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld", o->path, (long)getpid());
        if (w < 0 || (size_t)w >= sizeof o->tmp) {
            o->tmp[0] = '\0';
            return kp_error_set(err, KPROF_INVALID, "%s: path too long", path);
        }
        kp_output_block(&old);
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
        e = errno;
        if (o->fd >= 0) {
            memcpy(kp_output_tmps[slot], o->tmp, strlen(o->tmp) + 1);
            kp_output_used[slot] = 1;
            o->slot = slot;
        }
        kp_output_unblock(&old);
        if (o->fd < 0 && e != EEXIST) break;
    }
    if (o->fd < 0) {
        /* ENOENT from a folder that exists: a file system that makes no files (/proc). */
        char folder[4200];
        snprintf(folder, sizeof folder, "%s", o->tmp[0] ? o->tmp : path);
        int missing = (e == ENOENT || e == ENOTDIR) && !kp_path_is_dir(dirname(folder));
        o->tmp[0] = '\0';
        if (missing)
            return kp_error_set(err, KPROF_IO, "cannot write %s: its folder does not exist", path);
        return kp_error_set(err, KPROF_IO, "cannot write %s: %s", path, strerror(e));
    }
    /* A replaced file keeps its permissions. */
    if (o->replaces) fchmod(o->fd, st.st_mode & 07777);
    o->active = 1;
    return KPROF_OK;
}

/* The stream writes through these, so the first write error keeps its errno ("No space left
 * on device") for the message instead of stdio's bare error flag. Their returns are
 * fopencookie's contract (write(2)'s and close(2)'s: -1 on failure), not kprof's status. */
static ssize_t kp_output_cookie_write(void *cookie, const char *buf, size_t n)
{
    kp_output *o = cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(o->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!o->write_errno) o->write_errno = w < 0 ? errno : EIO;
            return -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)n;
}

static int kp_output_cookie_close(void *cookie)
{
    kp_output *o = cookie;
    int rc = o->fd >= 0 ? close(o->fd) : 0;
    o->fd = -1;
    return rc;
}

FILE *kp_output_stream(kp_output *o)
{
    if (!o->stream && o->fd >= 0) {
        cookie_io_functions_t io = {.write = kp_output_cookie_write,
                                    .close = kp_output_cookie_close};
        o->stream = fopencookie(o, "w", io);
        if (o->stream) setvbuf(o->stream, NULL, _IOFBF, 1 << 16);
    }
    return o->stream;
}

kprof_status kp_output_write(kp_output *o, const void *data, size_t len, kp_error *err)
{
    if (o->stream) {
        if (len && fwrite(data, 1, len, o->stream) != len)
            return kp_error_set(err, KPROF_IO, "cannot write %s: %s", kp_output_name(o),
                                strerror(o->write_errno ? o->write_errno : EIO));
        return KPROF_OK;
    }
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(o->fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            o->write_errno = w < 0 ? errno : EIO;
            return kp_error_set(err, KPROF_IO, "cannot write %s: %s", kp_output_name(o),
                                strerror(o->write_errno));
        }
        p += w;
        len -= (size_t)w;
    }
    return KPROF_OK;
}

/* Close the stream or the descriptor; the errno of the first failure, 0 when none. */
static int kp_output_close(kp_output *o)
{
    int e = 0;
    if (o->stream) {
        int bad = fflush(o->stream) != 0 || ferror(o->stream);
        if (fclose(o->stream) != 0 && !bad) e = errno ? errno : EIO;
        if (bad) e = o->write_errno ? o->write_errno : EIO;
        o->stream = NULL;
        o->fd = -1;
    } else if (o->fd >= 0) {
        if (close(o->fd) != 0 && errno != EINTR) e = errno;
        o->fd = -1;
    }
    return e;
}

void kp_output_close_fd(kp_output *o)
{
    kp_output_close(o);
}

static void kp_output_forget_tmp(kp_output *o, int remove)
{
    if (!o->tmp[0]) return;
    sigset_t old;
    kp_output_block(&old);
    if (remove) unlink(o->tmp);
    if (o->slot >= 0) kp_output_used[o->slot] = 0;
    kp_output_unblock(&old);
    o->slot = -1;
    o->tmp[0] = '\0';
}

kprof_status kp_output_commit(kp_output *o, kp_error *err)
{
    if (!o->active) return kp_error_set(err, KPROF_INVALID, "no output is open");
    kprof_status status = KPROF_OK;
    int e = kp_output_close(o);
    if (e)
        status = kp_error_set(err, KPROF_IO, "cannot write %s: %s", kp_output_name(o), strerror(e));
    if (status == KPROF_OK && !o->direct) {
        int rc;
        struct stat st;
        /* The target must still be what was checked at open: replaced only when it was a
         * regular file the user let kprof replace, never created over something new. */
        if (o->replaces) {
            if (lstat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
                errno = EEXIST;
                rc = -1;
            } else {
                rc = rename(o->tmp, o->path);
            }
        } else {
#ifdef RENAME_NOREPLACE
            rc = renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->path, RENAME_NOREPLACE);
            if (rc != 0 && (errno == EINVAL || errno == ENOSYS)) /* not on this file system */
                rc = lstat(o->path, &st) == 0 ? (errno = EEXIST, -1) : rename(o->tmp, o->path);
#else
            rc = lstat(o->path, &st) == 0 ? (errno = EEXIST, -1) : rename(o->tmp, o->path);
#endif
        }
        if (rc != 0)
            status = kp_error_set(err, KPROF_IO, "cannot write %s: %s", o->path,
                                  errno == EEXIST ? "something else appeared there meanwhile"
                                                  : strerror(errno));
        else
            kp_output_forget_tmp(o, 0);
    }
    kp_output_forget_tmp(o, 1); /* after a failure: the temporary goes */
    o->active = 0;
    return status;
}

void kp_output_abort(kp_output *o)
{
    if (!o || !o->active) return;
    kp_output_close(o);
    kp_output_forget_tmp(o, 1);
    o->active = 0;
}

kprof_status kp_output_write_file(const char *path, unsigned flags, const char *const *inputs,
                                  const void *data, size_t len, kp_error *err)
{
    kp_output o;
    kprof_status status = kp_output_open(&o, path, flags, inputs, err);
    if (status != KPROF_OK) return status;
    status = kp_output_write(&o, data, len, err);
    if (status != KPROF_OK) {
        kp_output_abort(&o);
        return status;
    }
    return kp_output_commit(&o, err);
}
