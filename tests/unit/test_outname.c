/* test_outname.c — output name patterns (core/outname): %r, %l, %p, %h, %q{VAR} and %% from a
 * made-up environment, which patterns a name used, and every way a pattern is refused (with the
 * message naming what was wrong and the output left empty). */
#include "base/outname.h"
#include "test.h"

/* The environment: a NULL-terminated list of "NAME=value". */
static const char *lookup(const char *name, void *ctx)
{
    size_t n = strlen(name);
    for (const char *const *v = ctx; *v; v++)
        if (strncmp(*v, name, n) == 0 && (*v)[n] == '=') return *v + n + 1;
    return NULL;
}

static const char *none[] = {NULL};

static char out[4096];
static unsigned used;
static kp_error err;

/* Expand pattern in environment vars with pid 4242 on host "node7". */
static kprof_status expand(const char *pattern, const char *const *vars)
{
    kp_outname_env env = {.get = lookup, .ctx = (void *)vars, .pid = 4242, .host = "node7"};
    kp_error_clear(&err);
    used = 99;
    strcpy(out, "untouched");
    return kp_outname_expand(pattern, &env, out, sizeof out, &used, &err);
}

/* pattern is refused (INVALID, out empty) with a message holding each of the needles. */
static void refused(const char *pattern, const char *const *vars, const char *needle,
                    const char *needle2)
{
    CHECK_INT(expand(pattern, vars), KPROF_INVALID);
    CHECK_STR(out, "");
    CHECK_CONTAINS(err.message, pattern);
    CHECK_CONTAINS(err.message, needle);
    if (needle2) CHECK_CONTAINS(err.message, needle2);
}

int main(void)
{
    /* No pattern: the name as it is, nothing used. */
    CHECK_INT(expand("job.kprof", none), KPROF_OK);
    CHECK_STR(out, "job.kprof");
    CHECK_INT(used, 0);
    CHECK_INT(expand("", none), KPROF_OK);
    CHECK_STR(out, "");

    /* Each pattern from each launcher. */
    const char *ompi[] = {"OMPI_COMM_WORLD_RANK=12", "OMPI_COMM_WORLD_LOCAL_RANK=4", NULL};
    CHECK_INT(expand("job-%r.kprof", ompi), KPROF_OK);
    CHECK_STR(out, "job-12.kprof");
    CHECK_INT(used, KP_OUTNAME_RANK);
    CHECK_INT(expand("out/%r/%l-%r.kprof", ompi), KPROF_OK); /* a / of the pattern's own stays */
    CHECK_STR(out, "out/12/4-12.kprof");
    CHECK_INT(used, KP_OUTNAME_RANK | KP_OUTNAME_LOCAL_RANK);
    const char *torch[] = {"RANK=3",
                           "LOCAL_RANK=1",
                           "TORCHELASTIC_RUN_ID=x",
                           "OMPI_COMM_WORLD_RANK=9",
                           "SLURM_PROCID=8",
                           NULL};
    CHECK_INT(expand("%r.%l", torch), KPROF_OK); /* torchrun is the innermost launcher */
    CHECK_STR(out, "3.1");
    const char *pmi[] = {"PMI_RANK=5", "MPI_LOCALRANKID=2", NULL};
    CHECK_INT(expand("%r.%l", pmi), KPROF_OK);
    CHECK_STR(out, "5.2");
    const char *pmix[] = {"PMIX_RANK=6", NULL};
    CHECK_INT(expand("%r", pmix), KPROF_OK);
    CHECK_STR(out, "6");
    const char *slurm[] = {"SLURM_PROCID=7", "SLURM_LOCALID=0", "SLURM_JOB_ID=991", NULL};
    CHECK_INT(expand("%r.%l", slurm), KPROF_OK);
    CHECK_STR(out, "7.0");
    CHECK_INT(expand("job%q{SLURM_JOB_ID}-%h-%p-100%%.kprof", slurm), KPROF_OK);
    CHECK_STR(out, "job991-node7-4242-100%.kprof");
    CHECK_INT(used, KP_OUTNAME_VARIABLE | KP_OUTNAME_HOST | KP_OUTNAME_PID);
    CHECK_INT(expand("%%r%%", none), KPROF_OK); /* %% is a %, never the start of a pattern */
    CHECK_STR(out, "%r%");
    CHECK_INT(used, 0);
    const char *braces[] = {"A=x}y", NULL}; /* the variable's name ends at the first } */
    CHECK_INT(expand("%q{A}}", braces), KPROF_OK);
    CHECK_STR(out, "x}y}");
    const char *utf8[] = {"USER=jos\xc3\xa9", NULL};
    CHECK_INT(expand("%q{USER}.kprof", utf8), KPROF_OK);
    CHECK_STR(out, "jos\xc3\xa9.kprof");

    /* %r and %l with no launcher, or with its variables not whole numbers. */
    refused("job-%r.kprof", none, "RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID",
            "mpirun");
    const char *bad_rank[] = {"RANK=one", "OMPI_COMM_WORLD_RANK=-1", "SLURM_PROCID=", NULL};
    refused("job-%r.kprof", bad_rank, "no launcher variable gives it", NULL);
    refused("%l", none, "LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID",
            NULL);
    const char *no_local[] = {"OMPI_COMM_WORLD_RANK=1", "SLURM_LOCALID=3", NULL};
    refused("%r-%l", no_local, "looked for OMPI_COMM_WORLD_LOCAL_RANK", NULL);

    /* Unknown and unfinished patterns. */
    refused("job-%x.kprof", none, "unknown pattern %x", "%q{VAR}");
    refused("job-%R.kprof", ompi, "unknown pattern %R", NULL);
    CHECK_INT(expand("job-%\n", none), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "unknown pattern %\\n"); /* escaped in the message */
    CHECK(strchr(err.message, '\n') == NULL);
    refused("job-%", none, "a % at the end", "%%");
    refused("job-%q.kprof", none, "in braces", NULL);
    refused("job-%qHOME", none, "in braces", NULL);
    refused("job-%q{HOME", none, "in braces", NULL);
    refused("job-%q{}", none, "in braces", NULL);
    refused(
        "%q{AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA}",
        none, "too long", NULL);

    /* %q{VAR}: unset or empty. */
    refused("job-%q{SLURM_JOB_ID}.kprof", none, "SLURM_JOB_ID", "not set");
    const char *empty[] = {"SLURM_JOB_ID=", NULL};
    refused("job-%q{SLURM_JOB_ID}.kprof", empty, "SLURM_JOB_ID", "empty");

    /* Values unfit for a file name are refused, never changed. */
    const char *hostile[] = {"SLASH=a/b", "UP=..", "DOT=.", "NL=a\nb", "DEL=a\x7f", NULL};
    refused("%q{SLASH}.kprof", hostile, "\"a/b\"", "'/'");
    refused("x/%q{UP}/y.kprof", hostile, "\"..\"", "names a folder");
    refused("%q{DOT}", hostile, "\".\"", "names a folder");
    refused("%q{NL}.kprof", hostile, "\"a\\nb\"", "control character");
    refused("%q{DEL}.kprof", hostile, "control character", NULL);
    kp_outname_env env = {.get = lookup, .ctx = (void *)none, .pid = 1, .host = "evil/host"};
    kp_error_clear(&err);
    CHECK_INT(kp_outname_expand("%h.kprof", &env, out, sizeof out, NULL, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "the host name is \"evil/host\"");
    kp_error_clear(&err);
    env.host = "";
    CHECK_INT(kp_outname_expand("%h.kprof", &env, out, sizeof out, NULL, &err), KPROF_INVALID);
    CHECK_CONTAINS(err.message, "cannot be read");
    kp_error_clear(&err);
    env.host = NULL;
    CHECK_INT(kp_outname_expand("%h.kprof", &env, out, sizeof out, NULL, &err), KPROF_INVALID);
    kp_error_clear(&err);
    env.host = "ok";
    CHECK_INT(kp_outname_expand("%h.kprof", &env, out, sizeof out, NULL, &err), KPROF_OK);
    CHECK_STR(out, "ok.kprof");

    /* A result that does not fit: refused, never cut short. */
    char small[8];
    CHECK_INT(kp_outname_expand("1234567", &env, small, sizeof small, NULL, &err), KPROF_OK);
    CHECK_STR(small, "1234567");
    CHECK_INT(kp_outname_expand("12345678", &env, small, sizeof small, NULL, &err), KPROF_INVALID);
    CHECK_STR(small, "");
    CHECK_CONTAINS(err.message, "too long");
    kp_error_clear(&err);
    env.pid = 123456;
    CHECK_INT(kp_outname_expand("ab%p", &env, small, sizeof small, NULL, &err), KPROF_INVALID);
    CHECK_STR(small, "");
    kp_error_clear(&err);
    CHECK_INT(kp_outname_expand("a%p", &env, small, sizeof small, NULL, &err), KPROF_OK);
    CHECK_STR(small, "a123456");
    TEST_DONE();
}
