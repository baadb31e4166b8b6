/*
 * outname.h — an output name with per-process parts, so that the ranks of a job started as
 * `mpirun -n 16 kprof trace -o 'job-%r.kprof' -- prog` each write a file of their own (the
 * patterns Nsight Systems and Open MPI users know):
 *
 *   %r       the rank (kp_job_read_from: RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK,
 *            SLURM_PROCID; the first launcher that applies, as job.h says)
 *   %l       the local rank, the process's index on its node (LOCAL_RANK,
 *            OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID)
 *   %p       the pid given (kprof's own)
 *   %h       the host name given
 *   %q{VAR}  the value of the environment variable VAR
 *   %%       a literal %
 *
 * Every % must start one of these. A value is inserted as it is, so it must be fit for a file
 * name: a value that holds '/' (it would name another folder), a control character, or is "."
 * or "..", is refused rather than changed. A name without % is returned unchanged.
 *
 * Pure: the environment is read through the lookup given, nothing else is read or allocated.
 */
#ifndef KP_BASE_OUTNAME_H
#define KP_BASE_OUTNAME_H

#include "base/error.h"

#include <stddef.h>

/* What a name's expansion may draw on. */
typedef struct kp_outname_env {
    const char *(*get)(const char *name, void *ctx); /* a variable's value or NULL (getenv) */
    void *ctx;                                       /* passed to get */
    long pid;                                        /* %p */
    const char *host;                                /* %h; NULL or "" when unknown */
    const char *what; /* what the name came from, as messages begin ("KPROF_OUTPUT="); NULL:
                         `kprof trace`'s "-o " (its messages then say how to run under mpirun) */
} kp_outname_env;

/* Which patterns a name used (kp_outname_expand's *used). */
#define KP_OUTNAME_RANK       1u
#define KP_OUTNAME_LOCAL_RANK 2u
#define KP_OUTNAME_PID        4u
#define KP_OUTNAME_HOST       8u
#define KP_OUTNAME_VARIABLE   16u

/* Expand pattern into out (n bytes, NUL-terminated). used (may be NULL) receives the
 * KP_OUTNAME_* bits of the patterns it held. KPROF_OK, or KPROF_INVALID (a usage error, exit 2)
 * with err naming the pattern and what was wrong: an unknown or unfinished pattern (a % at the
 * end, %q without {VAR}); %r or %l where no launcher variable gives it (the message names the
 * variables looked for); %q{VAR} with VAR unset or empty; %h with no host name; a value unfit
 * for a file name (above); a result that does not fit in n. out is "" on failure. */
kprof_status kp_outname_expand(const char *pattern, const kp_outname_env *env, char *out, size_t n,
                               unsigned *used, kp_error *err);

#endif
