/*
 * help.h — kprof's one help text: each command's summary and full help, and the `kprof --help`
 * page. `kprof help CMD`, `kprof CMD --help`, `kprof --help` and the man pages (kprof.1,
 * kprof-CMD.1, written from it at build time by tools/kprof/man.c) all print this text; nothing
 * else holds a command's options.
 */
#ifndef KP_TOOLS_HELP_H
#define KP_TOOLS_HELP_H

#include <stdio.h>

typedef struct kp_help {
    const char *name;    /* the command, as typed: "run" */
    const char *summary; /* one line: `kprof --help`'s list, the man page's NAME */
    const char *usage;   /* the full help `kprof help CMD` and `kprof CMD --help` print: a
                            "usage: ..." block, then blocks separated by blank lines */
} kp_help;

/* Every command's help, in the order `kprof --help` lists them, ended by {NULL, NULL, NULL}. */
extern const kp_help kp_helps[];

/* The help of the command called name, or NULL. */
const kp_help *kp_help_find(const char *name);

/* Print the full help of the command called name (a command of kp_helps) to stdout; 0. What
 * `kprof help CMD` and `kprof CMD --help` print, for a command that parses its own --help
 * (trace) as for main. */
int kp_help_print(const char *name);

/* kprof's description (no version, no final newline; broken over two lines as `kprof --help`
 * prints it after "kprof VERSION — "): kprof.1's NAME, its lines joined. */
extern const char kp_help_tagline[];
/* The "usage: kprof ..." line of `kprof --help` (with its newline). */
extern const char kp_help_synopsis[];
/* The line after the command list: where a command's options are (with its newline). */
extern const char kp_help_more[];
/* "exit codes:" and one entry a code: an entry is "  CODE  TEXT", continued on lines indented
 * further (each with its newline). */
extern const char kp_help_exit_codes[];
/* kprof.1's ENVIRONMENT: "  VARIABLE  TEXT" entries as kp_help_exit_codes's, the variables of
 * docs/reference/environment.md's first table. Not part of `kprof --help`. */
extern const char kp_help_environment[];

/* Write the `kprof --help` page to f: "kprof VERSION — tagline", the synopsis, the commands with
 * their summaries, kp_help_more and the exit codes. */
void kp_help_main(FILE *f, const char *version);

#endif
