/*
 * git.c — the commit and dirty flag of the work tree holding a file, by running git (git.h).
 */
#include "core/git.h"
#include "core/util.h"

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

/* Run git with argv (argv[0] "git"), its stdout into out (at most n - 1 bytes kept, the rest
 * read and dropped). 0 when it ran and exited 0; -1 otherwise. */
static int kp_git_run(char *const argv[], char *out, size_t n)
{
    int rc = -1, fds[2] = {-1, -1}, spawned = 0;
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
    if (pipe(fds) != 0) goto done;
    if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0) goto done;
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
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) != 0)
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
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        continue;
    spawned = 0;
    rc = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
done:
    if (spawned) { /* past the deadline */
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            continue;
    }
    if (have_attr) posix_spawnattr_destroy(&attr);
    if (have_actions) posix_spawn_file_actions_destroy(&actions);
    if (fds[0] >= 0) close(fds[0]);
    if (fds[1] >= 0) close(fds[1]);
    free(env);
    return rc;
}

void kp_git_state_of(const char *path, kp_git_state *out)
{
    memset(out, 0, sizeof *out);
    out->dirty = -1;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';

    char head[256];
    char *rev[] = {"git", "-C", dir, "rev-parse", "--verify", "-q", "HEAD", NULL};
    if (kp_git_run(rev, head, sizeof head) != 0) return;
    kp_rstrip(head);
    size_t n = strlen(head);
    if (n != 40 && n != 64) return;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789abcdef", head[i])) return;
    /* Any line of output is a change; only whether there is one matters, so the rest of a
     * long listing is read and dropped. */
    char changes[2];
    char *status[] = {"git", "-C", dir, "status", "--porcelain", "--untracked-files=no", NULL};
    if (kp_git_run(status, changes, sizeof changes) != 0) return;
    snprintf(out->commit, sizeof out->commit, "%s", head);
    out->dirty = changes[0] != '\0';
}
