/*
 * git.h — which commit a file's source is at: the HEAD commit of the git work tree holding the
 * file, and whether that work tree has changes to tracked files, so that a measured result can
 * say what code it measured (kprof's history records both).
 *
 * It runs git itself (`git -C DIR rev-parse HEAD`, then `git -C DIR status --porcelain
 * --untracked-files=no`), found on PATH, with stderr and stdin on /dev/null, GIT_DIR,
 * GIT_WORK_TREE and GIT_INDEX_FILE taken out of its environment (the file's own folder decides
 * the repository), GIT_OPTIONAL_LOCKS=0 (a status never rewrites the index under the user), the
 * default signal dispositions and an empty signal mask (a sweep blocks signals in kprof), and a
 * deadline: a git that has not answered within KP_GIT_TIMEOUT_S is killed and counts as none.
 */
#ifndef KP_BASE_GIT_H
#define KP_BASE_GIT_H

#include <stddef.h>

#define KP_GIT_TIMEOUT_S 10

typedef struct kp_git_state {
    char commit[65]; /* HEAD's full hash (40 hex digits; 64 in a SHA-256 repository), or "" */
    int dirty;       /* 1: tracked files differ from HEAD (staged or not); 0: clean; -1: no work
                        tree (no git, not in a repository, no commit yet, git failed) */
} kp_git_state;

/* The state of the work tree holding the file at path (a regular file; its folder is asked).
 * Never fails: commit "" and dirty -1 where there is nothing to say. */
void kp_git_state_of(const char *path, kp_git_state *out);
/* HEAD's full hash of the work tree holding the file at path (its folder is asked), into commit
 * (n: at least 65 for a SHA-256 repository). Whether there is one: 1 with the hash in commit, or
 * 0 with commit "" (no git, not in a work tree, no commit yet, git failed or ran past
 * KP_GIT_TIMEOUT_S), which is no failure: the commit is then unknown. git runs as for
 * kp_git_state_of: without the caller's GIT_DIR and GIT_WORK_TREE, with the repository's fsmonitor
 * and hooks off, killed at the deadline. */
int kp_git_head_of(const char *path, char *commit, size_t n);

#endif
