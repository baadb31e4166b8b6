/*
 * cmd_isolate.c — `kprof isolate NAME [--from FILE]`: a scratch kernel folder holding the
 * kernel source, seeded with the demo_add template when no FILE is given.
 */
#include "backend/backend.h"
#include "base/env.h"
#include "base/util.h"
#include "lab/kernel_dir.h"
#include "lab/lab.h"
#include "tools/kprof/cli.h"
#include "tools/kprof/run.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char kp_embedded_demo_add_cl[];
extern const size_t kp_embedded_demo_add_cl_len;
extern const char kp_embedded_demo_add_cu[];
extern const size_t kp_embedded_demo_add_cu_len;

/* The language of the default device: CUDA when auto would pick a CUDA device. */
static const char *kp_isolate_default_lang(void)
{
    const kp_backend_ops *ops = NULL;
    int index = -1;
    kp_error err = {0};
    kprof_status st = kp_backend_choose(NULL, -1, -1, &ops, &index, &err);
    kp_error_clear(&err);
    return st == KPROF_OK ? kp_lang_extension(ops->source_lang) : "cl";
}

int kp_cmd_isolate(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"from", required_argument, NULL, 'f'},
        {"lang", required_argument, NULL, 'l'},
        {"force", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    const char *from = NULL, *lang = NULL;
    int force = 0;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            from = optarg;
            break;
        case 'l':
            lang = optarg;
            break;
        case 'F':
            force = 1;
            break;
        case ':':
            return kp_cli_usage_error("isolate", "%s needs a value", argv[optind - 1]);
        default:
            return kp_cli_usage_error("isolate", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc) return kp_cli_usage_error("isolate", "give the kernel folder's NAME");
    if (optind + 1 < argc)
        return kp_cli_usage_error("isolate", "unexpected argument '%s'", argv[optind + 1]);
    const char *name = argv[optind];
    /* The template follows the default device: a backend name no command takes is refused
     * here as everywhere, not silently ignored. */
    kp_error bad = {0};
    if (kp_backend_env() &&
        kp_backend_name_check(kp_backend_env(), KP_ENV_BACKEND, &bad) != KPROF_OK) {
        int rc = kp_cli_fail(&bad);
        kp_error_clear(&bad);
        return rc;
    }
    if (from && lang)
        return kp_cli_usage_error("isolate", "--lang chooses a template; with --from the file's "
                                             "extension decides");
    if (lang && strcmp(lang, "cl") != 0 && strcmp(lang, "cu") != 0)
        return kp_cli_usage_error("isolate", "--lang '%s': choose cl (OpenCL C) or cu (CUDA)",
                                  lang);

    kp_error err = {0};
    char dir[4096];
    if (kp_kernel_dir(name, dir, sizeof dir, &err) != KPROF_OK) return kp_cli_fail(&err);

    char *data = NULL;
    size_t len = 0;
    const char *ext;
    const char *what;
    /* --from NAME@N: a captured launch's program, made editable (OpenCL source only). */
    kp_lab_capture_target cap;
    int from_capture = 0;
    char cap_file[4200], cap_what[4300];
    if (from && (!kp_path_exists(from) || kp_path_is_dir(from))) {
        from_capture = kp_lab_capture_target_read(from, &cap, &err);
        if (from_capture < 0) return kp_cli_fail(&err);
    }
    if (from_capture && strcmp(cap.code_kind, "opencl-source") != 0) {
        kp_error_set(&err, KPROF_INVALID,
                     "%s holds the program as %s, not as source: kprof cannot make it editable "
                     "(replay it as it is with `kprof bench %s`)",
                     from,
                     strcmp(cap.code_kind, "opencl-binary") == 0 ? "an OpenCL binary"
                                                                 : "CUDA machine code or PTX",
                     from);
        return kp_cli_fail(&err);
    }
    if (from_capture) {
        snprintf(cap_file, sizeof cap_file, "%s/kernel.cl", cap.dir);
        snprintf(cap_what, sizeof cap_what, "the captured launch %s", from);
        if (kp_file_read(cap_file, &data, &len, &err) != KPROF_OK) return kp_cli_fail(&err);
        ext = "cl";
        what = cap_what;
    } else if (from) {
        int l = kp_lang_from_path(from);
        if (l < 0) {
            kp_error_set(&err, KPROF_INVALID,
                         "%s: unknown kernel language (use .cl for OpenCL C, .cu for CUDA, .ptx "
                         "or .cubin)",
                         from);
            return kp_cli_fail(&err);
        }
        if (kp_file_read(from, &data, &len, &err) != KPROF_OK) return kp_cli_fail(&err);
        ext = kp_path_extension(from);
        if (strcmp(ext, "cuh") == 0) ext = "cu";
        what = from;
    } else {
        if (!lang) lang = kp_isolate_default_lang();
        int cu = strcmp(lang, "cu") == 0;
        const char *src = cu ? kp_embedded_demo_add_cu : kp_embedded_demo_add_cl;
        len = cu ? kp_embedded_demo_add_cu_len : kp_embedded_demo_add_cl_len;
        data = malloc(len + 1);
        if (!data) {
            kp_error_nomem(&err);
            return kp_cli_fail(&err);
        }
        memcpy(data, src, len + 1);
        ext = lang;
        what = cu ? "the demo_add template (CUDA C++)" : "the demo_add template (OpenCL C)";
    }

    char path[4200];
    snprintf(path, sizeof path, "%s/kernel.%s", dir, ext);
    if (!force) {
        for (int i = 0; i < KP_LANG_COUNT; i++) {
            char other[4200];
            snprintf(other, sizeof other, "%s/kernel.%s", dir, kp_lang_extension((kp_lang)i));
            if (kp_path_exists(other)) {
                free(data);
                kp_error_set(&err, KPROF_INVALID, "%s already holds %s; use --force to replace it",
                             dir, other);
                return kp_cli_fail(&err);
            }
        }
    }
    /* Results measured on another kernel would pass for this one's: a replaced source takes
     * them along (the same source, written again, keeps them). */
    int same = 0;
    if (force) {
        char *old = NULL;
        size_t old_len = 0;
        kp_error ignore = {0};
        same = kp_file_read(path, &old, &old_len, &ignore) == KPROF_OK && old_len == len &&
               memcmp(old, data, len) == 0;
        free(old);
        kp_error_clear(&ignore);
    }
    kprof_status st = kp_mkdir_p(dir, &err);
    if (st == KPROF_OK) st = kp_file_write_atomic(path, data, len, &err);
    free(data);
    if (st != KPROF_OK) return kp_cli_fail(&err);
    if (force && !same) {
        static const char *const results[] = {"run.json", "sweep.json", "bench.json"};
        for (size_t i = 0; i < sizeof results / sizeof *results; i++) {
            char result[4200];
            snprintf(result, sizeof result, "%s/%s", dir, results[i]);
            if (remove(result) == 0)
                printf("removed %s: it measured the kernel this one replaces\n", result);
        }
    }
    if (force) {
        /* One source per folder: a replaced kernel in another language goes. */
        for (int i = 0; i < KP_LANG_COUNT; i++) {
            if (strcmp(kp_lang_extension((kp_lang)i), ext) == 0) continue;
            char other[4200];
            snprintf(other, sizeof other, "%s/kernel.%s", dir, kp_lang_extension((kp_lang)i));
            remove(other);
        }
    }
    printf("created %s from %s\n", path, what);
    if (from_capture) {
        char g[64], t[64];
        kp_dims_text(cap.launch.grid, cap.launch.dims, g, sizeof g);
        kp_dims_text(cap.launch.tg, cap.launch.dims, t, sizeof t);
        printf("next: kprof bench %s %s   (the edited copy against the original, both on the "
               "program's own arguments)\n",
               from, name);
        printf("  or: kprof run %s --entry %s --grid %s --tg %s --buffers SPEC   (kprof's "
               "own inputs)\n",
               name, cap.symbol, g, t);
    } else if (!from)
        printf("next: kprof run %s --entry demo_add --grid 1048576 --tg 256 \\\n"
               "        --buffers f32:1048576,f32:1048576,f32:1048576,u32=1048576\n",
               name);
    else
        printf("next: kprof run %s --entry KERNEL --grid G --tg T --buffers SPEC\n", name);
    return 0;
}
