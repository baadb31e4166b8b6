/*
 * cli.h — what the `kprof` subcommands share: the command table entry, error reporting in the
 * `kprof: error: ...` form, exit codes from statuses, and parsers for sizes and geometries.
 */
#ifndef KP_TOOLS_CLI_H
#define KP_TOOLS_CLI_H

#include "base/error.h"
#include "backend/backend.h"

#include <stdint.h>

typedef struct kp_command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the command name */
    int runs_a_command; /* takes a command line after its options (trace): -h/--help past
                           that point are the command's, so the command parses its own */
    /* Its summary and full help are help.c's kp_helps entry of the same name (help.h). */
} kp_command;

/* What a command's run returns to have main print its help and exit 0: for a command that parses
 * its own -h/--help (runs_a_command), without reaching back into main's table. Never an exit
 * code. */
#define KP_CLI_SHOW_HELP (-1000)

extern const kp_command kp_commands[];
const kp_command *kp_command_find(const char *name);

/* Print "kprof: error: MSG" (plus err->log when present) and return the exit
 * code for the status. */
int kp_cli_fail(const kp_error *err);
/* kp_cli_fail of kp_error_nomem: "kprof: out of memory", exit 1. */
int kp_cli_nomem(void);
/* Print "kprof: error: ..." and return 2 (usage). */
int kp_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The compiler options of -D, -I and --options checked as kp_lab_check_options does, before
 * anything runs: 0, or the usage error's exit code (2) with its sentence printed. */
int kp_cli_check_compiler_options(const char *cmd, const char *options);

/* SIGINT, SIGTERM and SIGHUP end kprof with exit code 128 + signal after removing every
 * temporary output still open (core/outfile); a signal ignored when kprof started (nohup) stays
 * ignored. main installs it for every command that does not run a program of its own. */
void kp_cli_signals_install(void);

/* Print a command's full help (its help.h text) to stdout; 0. */
int kp_cli_help(const kp_command *c);

/* The stored bandwidth ceiling for dev (kp_store_lookup_ceiling), a lookup: 0 found, -1 none
 * (also when the store cannot be read: the run goes on without it). A damaged
 * store is a warning on stderr, once a process ("kprof: warning: store ... is damaged ...:
 * going on without the bandwidth ceiling"), and -1. */
struct kp_ceiling;
int kp_cli_ceiling(const kp_device_info *dev, struct kp_ceiling *c);

/* Finish: flush stdout and turn a write error into exit code 1. */
int kp_cli_exit(int code);

/* "1048576", "1M", "4096x4096", "16x16x4" -> dims and values. KPROF_OK, or KPROF_INVALID on
 * malformed input, err naming the text (callers that say which option was wrong pass NULL and
 * print their own usage error). */
kprof_status kp_cli_parse_dims(const char *text, uint64_t v[3], int *dims, kp_error *err);
/* "5", "5%", "0.5": a percentage from lo to hi, as a fraction in *out. 0, or the usage error's
 * exit code after printing "OPT 'TEXT': expected a percentage from LO to HI" for cmd. */
int kp_cli_parse_percent(const char *cmd, const char *opt, const char *text, double lo, double hi,
                         double *out);
/* Non-negative decimal number up to 1e12. KPROF_OK, or KPROF_INVALID on malformed input (err
 * as above). */
kprof_status kp_cli_parse_double(const char *text, double *out, kp_error *err);

/* Commands. */
int kp_cmd_caps(int argc, char **argv);
int kp_cmd_isolate(int argc, char **argv);
int kp_cmd_run(int argc, char **argv);
int kp_cmd_sweep(int argc, char **argv);
int kp_cmd_bench(int argc, char **argv);
int kp_cmd_trace(int argc, char **argv);
int kp_cmd_merge(int argc, char **argv);
int kp_cmd_report(int argc, char **argv);
int kp_cmd_export(int argc, char **argv);
int kp_cmd_history(int argc, char **argv);
int kp_cmd_notes(int argc, char **argv);
int kp_cmd_diff(int argc, char **argv);

#endif
