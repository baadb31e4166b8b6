/*
 * outname.c — expanding %r, %l, %p, %h, %q{VAR} and %% in an output name: see outname.h.
 */
#include "base/outname.h"
#include "base/job.h"

#include <stdio.h>
#include <string.h>

/* INVALID when value cannot be part of a file name as it is. what names where it came from. */
static kprof_status kp_outname_check_value(const char *label, const char *pattern, const char *what,
                                           const char *value, kp_error *err)
{
    const char *why = NULL;
    if (strchr(value, '/'))
        why = "it holds '/', which would name another folder";
    else if (strcmp(value, ".") == 0 || strcmp(value, "..") == 0)
        why = "it names a folder";
    for (const unsigned char *p = (const unsigned char *)value; !why && *p; p++)
        if (*p < 0x20 || *p == 0x7f) why = "it holds a control character";
    if (!why) return KPROF_OK;
    return kp_error_set(err, KPROF_INVALID,
                        "%s%s: %s is \"%s\": %s, so it cannot be part of a file name", label,
                        pattern, what, value, why);
}

kprof_status kp_outname_expand(const char *pattern, const kp_outname_env *env, char *out, size_t n,
                               unsigned *used, kp_error *err)
{
    const char *label = env->what ? env->what : "-o ";
    unsigned seen = 0;
    size_t len = 0;
    kp_job_info job = {.rank = -1, .local_rank = -1};
    int job_read = 0;
    kprof_status status = KPROF_OK;
    if (n) out[0] = '\0';
    if (used) *used = 0;
    if (!n) return kp_error_set(err, KPROF_INVALID, "%s%s: no room for the name", label, pattern);
    for (const char *p = pattern; *p; p++) {
        char number[32];
        char what[160];
        const char *value = NULL;
        size_t value_len;
        if (*p != '%') {
            value = p;
            value_len = 1;
        } else {
            char c = p[1];
            if (c == '\0') {
                status = kp_error_set(err, KPROF_INVALID,
                                      "%s%s: a %% at the end of the name; write %%%% for a %% "
                                      "in the name",
                                      label, pattern);
                goto fail;
            }
            p++;
            if ((c == 'r' || c == 'l') && !job_read) {
                kp_job_read_from(env->get, env->ctx, &job);
                job_read = 1;
            }
            switch (c) {
            case '%':
                value = "%";
                break;
            case 'r':
                if (job.rank < 0) {
                    status = kp_error_set(err, KPROF_INVALID,
                                          "%s%s: %%r is the process's rank, and no launcher "
                                          "variable gives it (looked for %s, as a whole "
                                          "number)%s",
                                          label, pattern, KP_JOB_RANK_VARS,
                                          env->what ? ""
                                                    : ": run kprof under the launcher, as in "
                                                      "`mpirun -n 4 kprof trace -o "
                                                      "'job-%r.kprof' -- prog`");
                    goto fail;
                }
                snprintf(number, sizeof number, "%d", job.rank);
                value = number;
                seen |= KP_OUTNAME_RANK;
                break;
            case 'l':
                if (job.local_rank < 0) {
                    status = kp_error_set(
                        err, KPROF_INVALID,
                        "%s%s: %%l is the process's local rank, and no launcher variable "
                        "gives it (looked for %s, as a whole number)",
                        label, pattern, kp_launcher_local_rank_var(job.launcher));
                    goto fail;
                }
                snprintf(number, sizeof number, "%d", job.local_rank);
                value = number;
                seen |= KP_OUTNAME_LOCAL_RANK;
                break;
            case 'p':
                snprintf(number, sizeof number, "%ld", env->pid);
                value = number;
                seen |= KP_OUTNAME_PID;
                break;
            case 'h':
                if (!env->host || !env->host[0]) {
                    status = kp_error_set(err, KPROF_INVALID,
                                          "%s%s: %%h is the host name, which cannot be read "
                                          "here",
                                          label, pattern);
                    goto fail;
                }
                value = env->host;
                snprintf(what, sizeof what, "the host name");
                status = kp_outname_check_value(label, pattern, what, value, err);
                if (status != KPROF_OK) goto fail;
                seen |= KP_OUTNAME_HOST;
                break;
            case 'q': {
                const char *brace = p[1] == '{' ? strchr(p + 2, '}') : NULL;
                if (!brace || brace == p + 2) {
                    status = kp_error_set(err, KPROF_INVALID,
                                          "%s%s: %%q takes a variable's name in braces, as in "
                                          "%%q{SLURM_JOB_ID}",
                                          label, pattern);
                    goto fail;
                }
                char name[128];
                size_t name_len = (size_t)(brace - (p + 2));
                if (name_len >= sizeof name) {
                    status = kp_error_set(err, KPROF_INVALID,
                                          "%s%s: the variable's name in %%q{...} is too long",
                                          label, pattern);
                    goto fail;
                }
                memcpy(name, p + 2, name_len);
                name[name_len] = '\0';
                value = env->get(name, env->ctx);
                if (!value || !value[0]) {
                    status = kp_error_set(err, KPROF_INVALID,
                                          "%s%s: %%q{%s} is the variable %s, which is %s", label,
                                          pattern, name, name, value ? "empty" : "not set");
                    goto fail;
                }
                snprintf(what, sizeof what, "%%q{%s}", name);
                status = kp_outname_check_value(label, pattern, what, value, err);
                if (status != KPROF_OK) goto fail;
                seen |= KP_OUTNAME_VARIABLE;
                p = brace;
                break;
            }
            default: {
                char bad[2] = {c, '\0'};
                status = kp_error_set(err, KPROF_INVALID,
                                      "%s%s: unknown pattern %%%s; the patterns are %%r (rank), "
                                      "%%l (local rank), %%p (pid), %%h (host), %%q{VAR} (a "
                                      "variable) and %%%% (a %%)",
                                      label, pattern, bad);
                goto fail;
            }
            }
            value_len = strlen(value);
        }
        if (len + value_len >= n) {
            status = kp_error_set(err, KPROF_INVALID, "%s%s: the name is too long", label, pattern);
            goto fail;
        }
        memcpy(out + len, value, value_len);
        len += value_len;
    }
    out[len] = '\0';
    if (used) *used = seen;
    return KPROF_OK;
fail:
    out[0] = '\0';
    return status;
}
