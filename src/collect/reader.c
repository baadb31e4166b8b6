/*
 * reader.c — a .klog file mapped and indexed (see reader.h).
 */
#define _GNU_SOURCE
#include "collect/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

kprof_status kp_klog_open(const char *path, kp_klog *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        kprof_status failed = kp_error_set(err, KPROF_IO, "%s: %s", path, strerror(errno));
        close(fd);
        return failed;
    }
    if (!S_ISREG(st.st_mode)) { /* bad input, as every input that is not a regular file */
        close(fd);
        return kp_error_set(err, KPROF_INVALID, "%s: not a regular file", path);
    }
    out->size = (size_t)st.st_size;
    if (out->size > 0) {
        void *p = mmap(NULL, out->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return kp_error_set(err, KPROF_IO, "%s: cannot map: %s", path, strerror(errno));
        }
        out->data = p;
    }
    close(fd);
    /* Pass 1: count records and the largest string id. */
    size_t pos = 0, n = 0;
    uint32_t max_id = 0;
    while (pos + sizeof(kp_rec) <= out->size) {
        const kp_rec *r = (const kp_rec *)(out->data + pos);
        if (r->magic != KP_REC_MAGIC || r->kind == 0 || r->kind >= KP_REC_KIND_COUNT) break;
        size_t step = sizeof(kp_rec);
        if (r->kind == KP_REC_STRING) {
            if (r->bytes > out->size) break;
            step += ((size_t)r->bytes + 7) & ~(size_t)7;
            if (pos + step > out->size) break;
            if (r->name > max_id) max_id = r->name;
        } else {
            n++;
        }
        pos += step;
    }
    out->valid = pos;
    out->truncated = pos != out->size;
    out->records = calloc(n ? n : 1, sizeof *out->records);
    out->nstrings = max_id + 1;
    out->strings = calloc(out->nstrings, sizeof *out->strings);
    out->string_lens = calloc(out->nstrings, sizeof *out->string_lens);
    if (!out->records || !out->strings || !out->string_lens) {
        kp_klog_close(out);
        return kp_error_set(err, KPROF_NOMEM, "%s: out of memory", path);
    }
    /* Pass 2: index. */
    for (pos = 0; pos < out->valid;) {
        const kp_rec *r = (const kp_rec *)(out->data + pos);
        size_t step = sizeof(kp_rec);
        if (r->kind == KP_REC_STRING) {
            out->strings[r->name] = (const char *)(out->data + pos + sizeof(kp_rec));
            out->string_lens[r->name] = (size_t)r->bytes;
            step += ((size_t)r->bytes + 7) & ~(size_t)7;
        } else {
            out->records[out->nrecords++] = r;
        }
        pos += step;
    }
    return KPROF_OK;
}

void kp_klog_close(kp_klog *log)
{
    if (!log) return;
    if (log->data) munmap((void *)log->data, log->size);
    free(log->records);
    free(log->strings);
    free(log->string_lens);
    memset(log, 0, sizeof *log);
}

const char *kp_klog_string(const kp_klog *log, uint32_t id, size_t *len)
{
    if (id == 0 || id >= log->nstrings || !log->strings[id]) {
        *len = 0;
        return "";
    }
    *len = log->string_lens[id];
    return log->strings[id];
}
