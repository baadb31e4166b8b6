/*
 * reader.h — reading one process's record file (.klog) back: the records in order and its
 * strings by id. A file cut short by a crash reads up to its last whole record.
 */
#ifndef KP_COLLECT_READER_H
#define KP_COLLECT_READER_H

#include "collect/record.h"
#include "base/error.h"

#include <stddef.h>

typedef struct kp_klog {
    const unsigned char *data; /* the file, mapped */
    size_t size;
    size_t valid;           /* bytes up to the last whole record */
    const kp_rec **records; /* in file order (STRING records excluded) */
    size_t nrecords;
    const char **strings; /* by id; NULL where undefined */
    uint32_t nstrings;    /* ids 1..nstrings-1 */
    size_t *string_lens;
    int truncated; /* the file ended inside a record or held garbage */
} kp_klog;

/* Read the record file at path into out: KPROF_OK; IO when it cannot be opened, mapped or read;
 * INVALID when it is not a regular file; NOMEM. */
kprof_status kp_klog_open(const char *path, kp_klog *out, kp_error *err);
void kp_klog_close(kp_klog *log);

/* The text of a string id ("" when unknown); its length in *len. Not NUL-terminated. */
const char *kp_klog_string(const kp_klog *log, uint32_t id, size_t *len);

#endif
