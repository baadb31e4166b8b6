/*
 * record.c — keep a reported result in the history (record.h).
 */
#define _GNU_SOURCE /* realpath */
#include "tools/kprof/record.h"
#include "base/env.h"
#include "base/git.h"
#include "base/util.h"
#include "store/store.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kp_record_enabled(void)
{
    const char *v = getenv(KP_ENV_HISTORY);
    return !(v && strcmp(v, "0") == 0);
}

/* FNV-1a 64 of the file's bytes as 16 hex digits; "" when it cannot be read. */
static void kp_record_source_hash(const char *path, char *out, size_t n)
{
    out[0] = '\0';
    char *data = NULL;
    size_t len = 0;
    if (!path || !*path || kp_file_read(path, &data, &len, NULL) != KPROF_OK) return;
    snprintf(out, n, "%016llx", (unsigned long long)kp_hash64(KP_HASH_SEED, data, len));
    free(data);
}

void kp_record_result(kp_history_run *r, const kp_device_info *dev, const char *source_path,
                      const double *samples, size_t n, const char *result_json)
{
    if (!kp_record_enabled()) return;
    /* Options are gathered as " -DN=4 -I inc": the history keeps "-DN=4 -I inc". */
    size_t lead = strspn(r->options, " ");
    memmove(r->options, r->options + lead, strlen(r->options + lead) + 1);
    kp_strlcpy(r->device, dev->name, sizeof r->device);
    kp_strlcpy(r->backend, dev->backend, sizeof r->backend);
    kp_store_device_key(dev, r->device_key, sizeof r->device_key);
    kp_strlcpy(r->driver, dev->driver, sizeof r->driver);
    kp_strlcpy(r->kprof_version, KPROF_VERSION_STRING, sizeof r->kprof_version);
    /* The absolute path, so that a row read from another folder still names the file. */
    char abs[PATH_MAX];
    const char *path =
        source_path && *source_path && realpath(source_path, abs) ? abs : source_path;
    kp_strlcpy(r->source_path, path ? path : "", sizeof r->source_path);
    kp_record_source_hash(r->source_path, r->source_hash, sizeof r->source_hash);
    kp_git_state git;
    if (r->source_path[0])
        kp_git_state_of(r->source_path, &git);
    else
        git = (kp_git_state){.commit = "", .dirty = -1};
    kp_strlcpy(r->git_commit, git.commit, sizeof r->git_commit);
    r->git_dirty = git.dirty;
    kp_error err = {0};
    if (kp_history_record(r, samples, n, result_json, NULL, &err) != KPROF_OK) {
        fflush(stdout);
        fprintf(stderr, "kprof: warning: not recorded in the history: %s\n",
                err.message[0] ? err.message : kprof_strerror(err.status));
    }
    kp_error_clear(&err);
}
