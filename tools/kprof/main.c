/*
 * main.c — the `kprof` command: one table of subcommands and their dispatch, `kprof help CMD` and
 * `kprof CMD --help` (the texts are help.c's), `kprof --version`, and the exit-code contract.
 */
#include "tools/kprof/cli.h"
#include "tools/kprof/help.h"
#include "kprof.h"

#include <stdio.h>
#include <string.h>

static int kp_cmd_help(int argc, char **argv);
static int kp_cmd_version(int argc, char **argv);

/* Every command and the function that runs it, in `kprof --help`'s order; its summary and full
 * help are help.c's, under the same name. */
/* clang-format off */
const kp_command kp_commands[] = {
    {"caps", kp_cmd_caps, 0},
    {"isolate", kp_cmd_isolate, 0},
    {"run", kp_cmd_run, 0},
    {"sweep", kp_cmd_sweep, 0},
    {"bench", kp_cmd_bench, 0},
    {"trace", kp_cmd_trace, 1},
    {"merge", kp_cmd_merge, 0},
    {"report", kp_cmd_report, 0},
    {"diff", kp_cmd_diff, 0},
    {"export", kp_cmd_export, 0},
    {"history", kp_cmd_history, 0},
    {"notes", kp_cmd_notes, 0},
    {"help", kp_cmd_help, 0},
    {"version", kp_cmd_version, 0},
    {NULL, NULL, 0},
};
/* clang-format on */

const kp_command *kp_command_find(const char *name)
{
    for (const kp_command *c = kp_commands; c->name; c++)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

static void kp_main_usage(FILE *f)
{
    kp_help_main(f, kprof_version());
}

static int kp_cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        kp_main_usage(stdout);
        return 0;
    }
    const kp_command *c = kp_command_find(argv[1]);
    if (!c) return kp_cli_usage_error(NULL, "no command '%s' (kprof --help lists them)", argv[1]);
    return kp_cli_help(c);
}

static int kp_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("kprof %s\n", kprof_version());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        kp_main_usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        kp_main_usage(stdout);
        return kp_cli_exit(0);
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)
        return kp_cli_exit(kp_cmd_version(0, NULL));
    const kp_command *c = kp_command_find(cmd);
    if (!c) {
        kp_cli_usage_error(NULL, "no command '%s' (kprof --help lists them)", cmd);
        return 2;
    }
    for (int i = 2; i < argc && !c->runs_a_command; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return kp_cli_exit(kp_cli_help(c));
    }
    if (!c->runs_a_command) kp_cli_signals_install(); /* trace handles its own signals */
    int code = c->run(argc - 1, argv + 1);
    return kp_cli_exit(code == KP_CLI_SHOW_HELP ? kp_cli_help(c) : code);
}
