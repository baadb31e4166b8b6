/*
 * error.c — status texts generated from KPROF_STATUS_LIST, and the detailed error record.
 */
#include "base/error.h"
#include "base/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *kprof_strerror(kprof_status status)
{
    switch (status) {
#define KP_CASE_(name, code, text)                                                                 \
    case KPROF_##name:                                                                             \
        return text;
        KPROF_STATUS_LIST(KP_CASE_)
#undef KP_CASE_
    default:
        return "unknown status";
    }
}

const char *kprof_status_name(kprof_status status)
{
    switch (status) {
#define KP_CASE_(name, code, text)                                                                 \
    case KPROF_##name:                                                                             \
        return #name;
        KPROF_STATUS_LIST(KP_CASE_)
#undef KP_CASE_
    default:
        return "UNKNOWN";
    }
}

int kprof_status_exit_code(kprof_status status)
{
    switch (status) {
#define KP_CASE_(name, code, text)                                                                 \
    case KPROF_##name:                                                                             \
        return code;
        KPROF_STATUS_LIST(KP_CASE_)
#undef KP_CASE_
    default:
        return 1;
    }
}

const char *kprof_version(void)
{
    return KPROF_VERSION_STRING;
}

kprof_status kp_error_set(kp_error *err, kprof_status status, const char *fmt, ...)
{
    if (!err) return status;
    if (err->status != KPROF_OK) return err->status;
    err->status = status;
    /* Arguments are escaped (kp_str_vprintf_escaped): a path with a newline in it must not
     * split the one-line error. */
    kp_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    kp_str_vprintf_escaped(&s, fmt, ap);
    va_end(ap);
    kp_strlcpy(err->message, s.data ? s.data : "", sizeof err->message);
    kp_str_free(&s);
    return status;
}

void kp_error_take_log(kp_error *err, char *log)
{
    if (!err) {
        free(log);
        return;
    }
    free(err->log);
    err->log = log;
}

void kp_error_append(kp_error *err, const char *fmt, ...)
{
    if (!err) return;
    size_t used = strlen(err->message);
    kp_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    kp_str_vprintf_escaped(&s, fmt, ap);
    va_end(ap);
    kp_strlcpy(err->message + used, s.data ? s.data : "", sizeof err->message - used);
    kp_str_free(&s);
}

void kp_error_append_lines(kp_error *err, const char *text)
{
    if (!err || !text) return;
    size_t used = strlen(err->message);
    kp_strlcpy(err->message + used, text, sizeof err->message - used);
}

void kp_error_clear(kp_error *err)
{
    if (!err) return;
    free(err->log);
    err->log = NULL;
    err->status = KPROF_OK;
    err->message[0] = '\0';
}

kprof_status kp_error_nomem(kp_error *err)
{
    return kp_error_set(err, KPROF_NOMEM, "out of memory");
}

kprof_status kp_error_move(kp_error *dst, kp_error *src)
{
    if (!src) return dst ? dst->status : KPROF_OK;
    if (dst && dst->status == KPROF_OK) {
        *dst = *src;
        *src = (kp_error){0};
    } else {
        kp_error_clear(src);
    }
    return dst ? dst->status : KPROF_OK;
}
