/*
 * cli.c — error reporting, exit codes and argument parsers shared by the subcommands.
 */
#define _GNU_SOURCE
#include "tools/kprof/cli.h"
#include "tools/kprof/help.h"
#include "tools/kprof/progress.h"
#include "base/outfile.h"
#include "lab/lab.h"
#include "base/util.h"
#include "store/store.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kp_cli_fail(const kp_error *err)
{
    fflush(stdout);
    fprintf(stderr, "kprof: error: %s\n",
            err->message[0] ? err->message : kprof_strerror(err->status));
    if (err->log && *err->log)
        fprintf(stderr, "--- compiler log ---\n%s\n--- end of log ---\n", err->log);
    return kprof_status_exit_code(err->status);
}

int kp_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    fflush(stdout);
    kp_str s = {0};
    va_list ap;
    va_start(ap, fmt);
    kp_str_vprintf_escaped(&s, fmt, ap); /* an option value with a newline stays on the line */
    va_end(ap);
    fprintf(stderr, "kprof: error: %s\n", s.data ? s.data : "usage error");
    kp_str_free(&s);
    if (cmd) fprintf(stderr, "(kprof %s --help shows the options)\n", cmd);
    return 2;
}

int kp_cli_check_compiler_options(const char *cmd, const char *options)
{
    kp_error err = {0};
    if (kp_lab_check_options(options, &err) == KPROF_OK) return 0;
    int rc = kp_cli_usage_error(cmd, "%s", err.message);
    kp_error_clear(&err);
    return rc;
}

static void kp_cli_on_signal(int sig)
{
    kp_progress_clear_for_signal();
    kp_output_unlink_all();
    _exit(128 + sig);
}

void kp_cli_signals_install(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = kp_cli_on_signal;
        sigfillset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

int kp_cli_help(const kp_command *c)
{
    return kp_help_print(c->name);
}

int kp_cli_exit(int code)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "kprof: error: writing to standard output failed\n");
        return code ? code : 1;
    }
    return code;
}

kprof_status kp_cli_parse_double(const char *text, double *out, kp_error *err)
{
    errno = 0;
    char *end = NULL;
    double v = text && *text ? strtod(text, &end) : -1;
    if (!text || !*text || errno || *end || end == text || !(v >= 0) || v > 1e12)
        return kp_error_set(err, KPROF_INVALID, "'%s': expected a number from 0 to 1e12",
                            text ? text : "");
    *out = v;
    return KPROF_OK;
}

kprof_status kp_cli_parse_dims(const char *text, uint64_t v[3], int *dims, kp_error *err)
{
    v[0] = v[1] = v[2] = 1;
    *dims = 0;
    char buf[128];
    if (!text || strlen(text) >= sizeof buf) goto bad;
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, "x", &save); tok; tok = strtok_r(NULL, "x", &save)) {
        if (*dims >= 3) goto bad;
        if (kp_parse_size(tok, &v[*dims]) != 0 || v[*dims] == 0) goto bad;
        (*dims)++;
    }
    /* Reject "x16", "16x", "16xx16": strtok would hide the empty parts. */
    if (*dims == 0 || text[0] == 'x' || text[strlen(text) - 1] == 'x' || strstr(text, "xx"))
        goto bad;
    return KPROF_OK;
bad:
    return kp_error_set(err, KPROF_INVALID, "'%s': expected N, NxM or NxMxK (sizes from 1)",
                        text ? text : "");
}

int kp_cli_parse_percent(const char *cmd, const char *opt, const char *text, double lo, double hi,
                         double *out)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", text);
    size_t n = strlen(buf);
    if (n && buf[n - 1] == '%') buf[n - 1] = '\0';
    double v = 0;
    if (kp_cli_parse_double(buf, &v, NULL) != KPROF_OK || v < lo || v > hi)
        return kp_cli_usage_error(cmd, "%s '%s': expected a percentage from %g to %g", opt, text,
                                  lo, hi);
    *out = v / 100;
    return 0;
}

int kp_cli_ceiling(const kp_device_info *dev, kp_ceiling *c)
{
    static int warned;
    kp_error err = {0};
    kprof_status st = kp_store_lookup_ceiling(dev, c, &err);
    int rc = st == KPROF_OK ? 0 : -1;
    /* Damage is said here (nothing else reads the ceilings); a store that is a folder or cannot
     * be opened is said where the run is recorded, once. */
    if (st == KPROF_CORRUPT) {
        if (!warned)
            fprintf(stderr, "kprof: warning: %s: going on without the bandwidth ceiling\n",
                    err.message[0] ? err.message : "the store cannot be read");
        warned = 1;
    }
    kp_error_clear(&err);
    /* A lookup: found or not (a store that cannot be read has no ceiling to give either). */
    return rc == 0 ? 0 : -1;
}

int kp_cli_nomem(void)
{
    kp_error err = {0};
    kp_error_nomem(&err);
    return kp_cli_fail(&err);
}
