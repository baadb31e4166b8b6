/* test_session.c — kp_session_program_path (src/collect/session.h): where `kprof trace` finds
 * the program it is to run, as execvp would: a name with a '/' as it is, else the first
 * executable of that name on PATH (folders and files without the execute bit passed over),
 * empty entries the current folder, no PATH "/bin:/usr/bin", "" when none. */
#include "collect/session.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/kprof-test-session-XXXXXX";

/* Make root/rel with the given mode: a file, or a folder when dir. */
static void make(const char *rel, mode_t mode, int dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    if (dir) {
        CHECK_INT(mkdir(path, mode), 0);
        return;
    }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("#!/bin/sh\n", f);
        fclose(f);
    }
    CHECK_INT(chmod(path, mode), 0);
}

/* kp_session_program_path(cmd0) under PATH path (NULL: unset), into a static buffer. */
static const char *find(const char *cmd0, const char *path)
{
    static char out[4096];
    if (path)
        setenv("PATH", path, 1);
    else
        unsetenv("PATH");
    memset(out, 'x', sizeof out);
    kp_session_program_path(cmd0, out, sizeof out);
    return out;
}

int main(void)
{
    if (!mkdtemp(root)) return 1;
    make("a", 0755, 1);
    make("b", 0755, 1);
    make("c", 0755, 1);
    make("a/prog", 0644, 0); /* not executable: passed over */
    make("b/prog", 0755, 1); /* a folder: passed over */
    make("c/prog", 0755, 0); /* the one */
    make("c/other", 0755, 0);
    make("here", 0755, 0); /* in the current folder */
    char *saved = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_INT(chdir(root), 0);

    char a[600], b[600], c[600], want[700];
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(b, sizeof b, "%s/b", root);
    snprintf(c, sizeof c, "%s/c", root);
    char path[2000];
    snprintf(path, sizeof path, "%s:%s:%s", a, b, c);
    snprintf(want, sizeof want, "%s/prog", c);
    CHECK_STR(find("prog", path), want);
    snprintf(want, sizeof want, "%s/other", c);
    CHECK_STR(find("other", path), want);
    CHECK_STR(find("nosuch", path), "");
    CHECK_STR(find("here", path), ""); /* the current folder is not on that PATH */

    /* A name with a '/' is itself, whatever PATH says and whether or not it exists. */
    CHECK_STR(find("./here", path), "./here");
    CHECK_STR(find("sub/nosuch", path), "sub/nosuch");
    CHECK_STR(find("/bin/sh", ""), "/bin/sh");

    /* Empty entries are the current folder: leading, between two ':', trailing, PATH "". */
    snprintf(path, sizeof path, ":%s", a);
    CHECK_STR(find("here", path), "./here");
    snprintf(path, sizeof path, "%s::%s", a, b);
    CHECK_STR(find("here", path), "./here");
    snprintf(path, sizeof path, "%s:", a);
    CHECK_STR(find("here", path), "./here");
    CHECK_STR(find("here", ""), "./here");
    /* The first match wins: the current folder before c. */
    snprintf(path, sizeof path, ":%s", c);
    make("prog", 0755, 0);
    CHECK_STR(find("prog", path), "./prog");

    /* No PATH: /bin:/usr/bin, as execvp. */
    const char *sh = find("sh", NULL);
    CHECK(strcmp(sh, "/bin/sh") == 0 || strcmp(sh, "/usr/bin/sh") == 0);
    CHECK_STR(find("here", NULL), "");

    /* A small buffer: cut, still a string. */
    char small[8];
    setenv("PATH", c, 1);
    kp_session_program_path("prog", small, sizeof small);
    CHECK_INT(strlen(small), sizeof small - 1);

    if (saved) {
        setenv("PATH", saved, 1);
        free(saved);
    }
    CHECK_INT(chdir(cwd), 0);
    static const char *const files[] = {"a/prog", "c/prog", "c/other", "here", "prog"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s", root, files[i]);
        unlink(p);
    }
    static const char *const dirs[] = {"b/prog", "a", "b", "c"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
        rmdir(p);
    }
    rmdir(root);
    TEST_DONE();
}
