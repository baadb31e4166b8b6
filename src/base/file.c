/*
 * file.c — whole-file read, atomic write, the input check and mkdir -p (base/file.h).
 */
#include "base/file.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

kprof_status kp_input_check(const char *path, const char *what, kp_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return kp_error_set(err, KPROF_NOT_FOUND, "%s: no such file", path);
        return kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
    }
    if (S_ISREG(st.st_mode)) return KPROF_OK;
    const char *is = S_ISDIR(st.st_mode)    ? "a folder"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a file";
    return kp_error_set(err, KPROF_INVALID, "%s: not a regular file (%s), so not %s", path, is,
                        what ? what : "a file kprof reads");
}

kprof_status kp_file_read(const char *path, char **out, size_t *len, kp_error *err)
{
    *out = NULL;
    if (len) *len = 0;
    kprof_status status = kp_input_check(path, NULL, err);
    if (status != KPROF_OK) return status;
    struct stat st;
    if (stat(path, &st) != 0) return kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
    if ((uint64_t)st.st_size > KP_FILE_READ_MAX)
        return kp_error_set(err, KPROF_INVALID, "%s: %llu bytes, more than kprof reads (%llu)",
                            path, (unsigned long long)st.st_size,
                            (unsigned long long)KP_FILE_READ_MAX);
    /* O_NONBLOCK: a path swapped for a FIFO after the stat cannot block the open. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
    struct stat fst;
    if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
        close(fd);
        return kp_error_set(err, KPROF_INVALID, "%s: not a regular file", path);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
    }
    kp_str s = {0};
    char chunk[65536];
    size_t n;
    while (!s.failed && s.len <= KP_FILE_READ_MAX && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        kp_str_append_n(&s, chunk, n);
    int bad = ferror(f) || s.len > KP_FILE_READ_MAX;
    fclose(f);
    if (bad) {
        kp_str_free(&s);
        return kp_error_set(err, KPROF_IO, "%s: read failed", path);
    }
    size_t total = s.len;
    char *data = kp_str_take(&s);
    if (!data) return kp_error_set(err, KPROF_NOMEM, "%s: out of memory reading the file", path);
    *out = data;
    if (len) *len = total;
    return KPROF_OK;
}

kprof_status kp_file_write_atomic(const char *path, const void *data, size_t len, kp_error *err)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return kp_error_set(err, KPROF_INVALID, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) return kp_error_set(err, KPROF_IO, "cannot write %s: %s", path, strerror(errno));
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return kp_error_set(err, KPROF_IO, "cannot write %s: %s", path, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return kp_error_set(err, KPROF_IO, "cannot write %s: %s", path, strerror(e));
    }
    return KPROF_OK;
}

kprof_status kp_mkdir_p(const char *path, kp_error *err)
{
    char buf[4096];
    if (strlen(path) >= sizeof buf)
        return kp_error_set(err, KPROF_INVALID, "%s: path too long", path);
    kp_strlcpy(buf, path, sizeof buf);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return kp_error_set(err, KPROF_IO, "cannot create folder %s: %s", buf,
                                    strerror(errno));
            if (saved == '\0') break;
            *p = saved;
        }
    }
    if (!kp_path_is_dir(path))
        return kp_error_set(err, KPROF_IO, "cannot create folder %s: a file is in the way", path);
    return KPROF_OK;
}

void kp_dir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
            char p[8192];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}
