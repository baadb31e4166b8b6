/*
 * git.c — the commit and dirty flag of the work tree holding a file, by running git (git.h).
 */
#define _GNU_SOURCE /* pipe2 */
#include "base/git.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Variables that would point git at another repository than the file's own. */
static int kp_git_env_dropped(const char *entry)
{
    static const char *const names[] = {
        "GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_OPTIONAL_LOCKS="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(entry, names[i], strlen(names[i])) == 0) return 1;
    return 0;
}

/* Settings given to every git kprof runs, before its own arguments: the repository asked may
 * be anyone's (a kernel in an unpacked archive), and its config must not make kprof run a
 * program of its choosing. core.fsmonitor is a command git runs on status (empty: off, for git
 * before 2.36, where it is a path, as after, where it is also a boolean); the untracked cache
 * and hooks are off too. */
static const char *const kp_git_safe[] = {
    "-c", "core.fsmonitor=", "-c", "core.untrackedCache=false", "-c", "core.hooksPath=/dev/null",
};
#define KP_GIT_NSAFE   (sizeof kp_git_safe / sizeof kp_git_safe[0])
#define KP_GIT_MAXARGS 16

/* Run git with args (NULL-terminated, after "git" and kp_git_safe), its stdout into out (at most
 * n - 1 bytes kept, the rest read and dropped), in a process group of its own, killed whole
 * (with whatever git started) past KP_GIT_TIMEOUT_S. Whether it answered: 1 when it ran and
 * exited 0; 0 otherwise (no git, not a repository, a failure, the deadline), which is no error
 * of kprof's: the file's commit is then unknown. */
static int kp_git_run(const char *const args[], char *out, size_t n)
{
    char *argv[1 + KP_GIT_NSAFE + KP_GIT_MAXARGS + 1];
    size_t na = 0;
    argv[na++] = "git";
    for (size_t i = 0; i < KP_GIT_NSAFE; i++)
        argv[na++] = (char *)kp_git_safe[i];
    for (size_t i = 0; args[i]; i++) {
        if (i == KP_GIT_MAXARGS) return 0;
        argv[na++] = (char *)args[i];
    }
    argv[na] = NULL;
    int answered = 0, fds[2] = {-1, -1}, spawned = 0;
    pid_t pid = -1;
    size_t nenv = 0, len = 0;
    char **env = NULL;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    int have_actions = 0, have_attr = 0;
    out[0] = '\0';
    for (char **e = environ; e && *e; e++)
        nenv++;
    env = calloc(nenv + 2, sizeof *env);
    if (!env) goto done;
    nenv = 0;
    for (char **e = environ; e && *e; e++)
        if (!kp_git_env_dropped(*e)) env[nenv++] = *e;
    env[nenv++] = "GIT_OPTIONAL_LOCKS=0";
    env[nenv] = NULL;
    if (pipe2(fds, O_CLOEXEC) != 0) goto done; /* no other child inherits either end */
    if (posix_spawn_file_actions_init(&actions) != 0) goto done;
    have_actions = 1;
    if (posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1) != 0 ||
        posix_spawn_file_actions_addclose(&actions, fds[1]) != 0 ||
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) != 0)
        goto done;
    if (posix_spawnattr_init(&attr) != 0) goto done;
    have_attr = 1;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGPIPE);
    if (posix_spawnattr_setsigmask(&attr, &none) != 0 ||
        posix_spawnattr_setsigdefault(&attr, &defaults) != 0 ||
        posix_spawnattr_setpgroup(&attr, 0) != 0 ||
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                            POSIX_SPAWN_SETPGROUP) != 0)
        goto done;
    if (posix_spawnp(&pid, "git", &actions, &attr, argv, env) != 0) goto done; /* no git */
    spawned = 1;
    close(fds[1]);
    fds[1] = -1;
    uint64_t deadline = kp_now_ns() + (uint64_t)KP_GIT_TIMEOUT_S * 1000000000ull;
    for (;;) {
        uint64_t now = kp_now_ns();
        if (now >= deadline) goto done; /* killed below */
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int ready = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue; /* the deadline check ends it */
        char buf[4096];
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        size_t keep = (size_t)got;
        if (keep > n - 1 - len) keep = n - 1 - len;
        memcpy(out + len, buf, keep);
        len += keep;
        out[len] = '\0';
    }
    /* Its output is closed; it may still not exit (a child holding on): wait to the deadline. */
    int status = 0;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) break;
        if (got < 0 && errno != EINTR) {
            spawned = 0; /* not ours to wait for any more */
            goto done;
        }
        if (kp_now_ns() >= deadline) goto done; /* killed below */
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    spawned = 0;
    answered = WIFEXITED(status) && WEXITSTATUS(status) == 0;
done:
    if (spawned) { /* past the deadline: git and all it started */
        kill(-pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            continue;
    }
    if (have_attr) posix_spawnattr_destroy(&attr);
    if (have_actions) posix_spawn_file_actions_destroy(&actions);
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    free(env);
    return answered;
}

/* The folder holding the file at path: "." for a bare name, "/" for one in the root. */
static void kp_git_dir_of(const char *path, char *dir, size_t n)
{
    snprintf(dir, n, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
}

/* Whether dir's work tree has a HEAD commit: 1 with it in commit, 0 with commit "". */
static int kp_git_head_in(const char *dir, char *commit, size_t n)
{
    if (n) commit[0] = '\0';
    char head[256];
    const char *rev[] = {"-C", dir, "rev-parse", "--verify", "-q", "HEAD", NULL};
    if (!kp_git_run(rev, head, sizeof head)) return 0;
    kp_rstrip(head);
    size_t len = strlen(head);
    if ((len != 40 && len != 64) || len >= n) return 0;
    for (size_t i = 0; i < len; i++)
        if (!strchr("0123456789abcdef", head[i])) return 0;
    memcpy(commit, head, len + 1);
    return 1;
}

int kp_git_head_of(const char *path, char *commit, size_t n)
{
    char dir[4096];
    kp_git_dir_of(path, dir, sizeof dir);
    return kp_git_head_in(dir, commit, n);
}

void kp_git_state_of(const char *path, kp_git_state *out)
{
    memset(out, 0, sizeof *out);
    out->dirty = -1;
    char dir[4096];
    kp_git_dir_of(path, dir, sizeof dir);

    char head[sizeof out->commit];
    if (!kp_git_head_in(dir, head, sizeof head)) return;
    /* Any line of output is a change; only whether there is one matters, so the rest of a
     * long listing is read and dropped. */
    char changes[2];
    const char *status[] = {"-C", dir, "status", "--porcelain", "--untracked-files=no", NULL};
    if (!kp_git_run(status, changes, sizeof changes)) return;
    memcpy(out->commit, head, sizeof head);
    out->dirty = changes[0] != '\0';
}
