/* test_outfile.c — the output-file rules (core/outfile): temporaries beside the target and
 * renamed at commit, refusals (a folder, an input, an existing file without force), links
 * followed, direct writes to FIFOs and devices, abort and the signal-safe clean-up, and a
 * writer that writes by name (SQLite). */
#define _GNU_SOURCE
#include "base/outfile.h"
#include "base/util.h"
#include "test.h"

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/kprof-outfile-XXXXXX";

static const char *at(const char *name)
{
    static char buf[8][256];
    static int i;
    i = (i + 1) % 8;
    snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
    return buf[i];
}

static char *slurp(const char *path)
{
    char *data = NULL;
    if (kp_file_read(path, &data, NULL, NULL) != KPROF_OK) return NULL;
    return data;
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* Files in dir whose name holds ".tmp." */
static int temporaries(void)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    kp_error err = {0};
    kp_output o;

    /* A new file: nothing at the target until commit. */
    CHECK_INT(kp_output_open(&o, at("a.json"), 0, NULL, &err), KPROF_OK);
    CHECK(!o.direct);
    CHECK_STR(o.path, at("a.json"));
    CHECK(o.tmp[0] && access(o.tmp, F_OK) == 0);
    CHECK(access(at("a.json"), F_OK) != 0);
    CHECK_INT(kp_output_write(&o, "hello", 5, &err), KPROF_OK);
    FILE *f = kp_output_stream(&o);
    CHECK(f != NULL);
    fputs(" world", f);
    CHECK_INT(kp_output_commit(&o, &err), KPROF_OK);
    char *text = slurp(at("a.json"));
    CHECK_STR(text, "hello world");
    free(text);
    CHECK_INT(temporaries(), 0);
    kp_output_abort(&o); /* after commit: a no-op */
    CHECK(access(at("a.json"), F_OK) == 0);

    /* An existing file needs force; force replaces it and keeps its permissions. */
    chmod(at("a.json"), 0640);
    CHECK_INT(kp_output_open(&o, at("a.json"), 0, NULL, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "exists; use --force to replace it");
    kp_error_clear(&err);
    kp_output_abort(&o); /* after a failed open: a no-op */
    CHECK_INT(kp_output_write_file(at("a.json"), KP_OUTPUT_FORCE, NULL, "new", 3, &err), KPROF_OK);
    text = slurp(at("a.json"));
    CHECK_STR(text, "new");
    free(text);
    struct stat st;
    CHECK(stat(at("a.json"), &st) == 0 && (st.st_mode & 0777) == 0640);

    /* Abort removes the temporary and leaves the target as it was. */
    CHECK_INT(kp_output_open(&o, at("a.json"), KP_OUTPUT_FORCE, NULL, &err), KPROF_OK);
    CHECK_INT(kp_output_write(&o, "partial", 7, &err), KPROF_OK);
    kp_output_abort(&o);
    kp_output_abort(&o); /* idempotent */
    CHECK_INT(temporaries(), 0);
    text = slurp(at("a.json"));
    CHECK_STR(text, "new");
    free(text);

    /* kp_output_unlink_all (the signal handlers' clean-up) removes every open temporary. */
    kp_output o2;
    CHECK_INT(kp_output_open(&o, at("b.json"), 0, NULL, &err), KPROF_OK);
    CHECK_INT(kp_output_open(&o2, at("c.json"), 0, NULL, &err), KPROF_OK);
    CHECK_INT(temporaries(), 2);
    kp_output_unlink_all();
    CHECK_INT(temporaries(), 0);
    kp_output_abort(&o);
    kp_output_abort(&o2);

    /* An output that is an input, by any name (a link, a hard link), is refused. */
    const char *inputs[] = {at("in.kprof"), NULL};
    put(at("in.kprof"), "trace");
    CHECK(symlink("in.kprof", at("in-link.json")) == 0);
    CHECK(link(at("in.kprof"), at("in-hard.json")) == 0);
    const char *same[] = {at("in.kprof"), at("in-link.json"), at("in-hard.json")};
    for (int i = 0; i < 3; i++) {
        CHECK_INT(kp_output_open(&o, same[i], KP_OUTPUT_FORCE, inputs, &err), KPROF_INVALID);
        CHECK_CONTAINS(err.message, "is the input");
        kp_error_clear(&err);
    }
    text = slurp(at("in.kprof"));
    CHECK_STR(text, "trace");
    free(text);

    /* A folder is refused; a missing folder is named. */
    CHECK_INT(kp_output_open(&o, dir, KP_OUTPUT_FORCE, NULL, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "is a folder");
    kp_error_clear(&err);
    CHECK_INT(kp_output_open(&o, at("none/x.json"), 0, NULL, &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "its folder does not exist");
    kp_error_clear(&err);
    /* An output that cannot be written is IO whatever the cause (exit 1): a path through a
     * regular file, a file system that makes no files; a loop of links is refused. */
    put(at("plain"), "x");
    CHECK_INT(kp_output_open(&o, at("plain/x.json"), 0, NULL, &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "a part of its folder is a file");
    kp_error_clear(&err);
    CHECK_INT(kp_output_open(&o, "/proc/kprof-no-such-output.json", 0, NULL, &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "cannot write /proc/kprof-no-such-output.json");
    kp_error_clear(&err);

    /* A link is followed: the target is written, the link stays; a dangling link names the
     * file to create. */
    put(at("real.json"), "old");
    CHECK(symlink("real.json", at("link.json")) == 0);
    CHECK_INT(kp_output_open(&o, at("link.json"), 0, NULL, &err), KPROF_INVALID);
    kp_error_clear(&err);
    CHECK_INT(kp_output_write_file(at("link.json"), KP_OUTPUT_FORCE, NULL, "via", 3, &err),
              KPROF_OK);
    CHECK(lstat(at("link.json"), &st) == 0 && S_ISLNK(st.st_mode));
    text = slurp(at("real.json"));
    CHECK_STR(text, "via");
    free(text);
    CHECK(symlink("made.json", at("dangling.json")) == 0);
    CHECK_INT(kp_output_open(&o, at("dangling.json"), 0, NULL, &err), KPROF_OK);
    CHECK_STR(o.path, at("made.json"));
    CHECK_INT(kp_output_commit(&o, &err), KPROF_OK);
    CHECK(lstat(at("dangling.json"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(access(at("made.json"), F_OK) == 0);

    /* Devices and FIFOs are written in place (a link to one too); SEEKABLE refuses them. */
    CHECK(symlink("/dev/null", at("null.json")) == 0);
    CHECK_INT(kp_output_open(&o, at("null.json"), 0, NULL, &err), KPROF_OK);
    CHECK(o.direct && o.tmp[0] == '\0');
    CHECK_INT(kp_output_write(&o, "x", 1, &err), KPROF_OK);
    CHECK_INT(kp_output_commit(&o, &err), KPROF_OK);
    CHECK(lstat(at("null.json"), &st) == 0 && S_ISLNK(st.st_mode));
    CHECK_INT(kp_output_open(&o, "/dev/full", 0, NULL, &err), KPROF_OK);
    f = kp_output_stream(&o);
    CHECK(f != NULL);
    for (int i = 0; f && i < 100000; i++)
        fputs("0123456789", f);
    CHECK_INT(kp_output_commit(&o, &err), KPROF_IO);
    CHECK_CONTAINS(err.message, "cannot write /dev/full: No space left on device");
    kp_error_clear(&err);
    CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
    CHECK(mkfifo(at("p.fifo"), 0600) == 0);
    int reader = open(at("p.fifo"), O_RDONLY | O_NONBLOCK); /* so the writer's open returns */
    CHECK(reader >= 0);
    CHECK_INT(kp_output_open(&o, at("p.fifo"), KP_OUTPUT_FORCE, NULL, &err), KPROF_OK);
    CHECK(o.direct);
    CHECK_INT(kp_output_write(&o, "fifo", 4, &err), KPROF_OK);
    CHECK_INT(kp_output_commit(&o, &err), KPROF_OK);
    char got[8] = "";
    CHECK_INT(read(reader, got, sizeof got - 1), 4);
    CHECK_STR(got, "fifo");
    close(reader);
    CHECK(lstat(at("p.fifo"), &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK_INT(kp_output_open(&o, at("p.fifo"), KP_OUTPUT_SEEKABLE, NULL, &err), KPROF_INVALID);
    kp_error_clear(&err);
    CHECK_INT(kp_output_open(&o, "-", KP_OUTPUT_SEEKABLE, NULL, &err), KPROF_INVALID);
    kp_error_clear(&err);
    CHECK_INT(kp_output_open(&o, "-", 0, NULL, &err), KPROF_OK);
    CHECK(o.direct && strcmp(kp_output_name(&o), "standard output") == 0);
    kp_output_abort(&o);

    /* Something that appears at a new target while it is written is not replaced. */
    CHECK_INT(kp_output_open(&o, at("race.json"), 0, NULL, &err), KPROF_OK);
    put(at("race.json"), "theirs");
    CHECK_INT(kp_output_commit(&o, &err), KPROF_IO);
    kp_error_clear(&err);
    text = slurp(at("race.json"));
    CHECK_STR(text, "theirs");
    free(text);
    CHECK_INT(temporaries(), 0);

    /* A writer that writes by name: SQLite opens the (empty) temporary as a new database. */
    CHECK_INT(kp_output_open(&o, at("db.kprof"), KP_OUTPUT_SEEKABLE, NULL, &err), KPROF_OK);
    kp_output_close_fd(&o);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open_v2(o.tmp, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (42);", NULL, NULL, NULL) ==
          SQLITE_OK);
    CHECK(sqlite3_close(db) == SQLITE_OK);
    CHECK_INT(kp_output_commit(&o, &err), KPROF_OK);
    CHECK(sqlite3_open_v2(at("db.kprof"), &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    sqlite3_stmt *q = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT x FROM t", -1, &q, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == 42);
    sqlite3_finalize(q);
    sqlite3_close(db);

    /* A zeroed, never opened output: abort is harmless, commit says so. */
    kp_output zero = {0};
    kp_output_abort(&zero);
    CHECK_INT(kp_output_commit(&zero, &err), KPROF_INVALID);
    kp_error_clear(&err);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    TEST_DONE();
}
