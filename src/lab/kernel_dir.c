/*
 * kernel_dir.c — naming and finding kprof's scratch kernel folders (see kernel_dir.h).
 */
#include "lab/kernel_dir.h"
#include "base/env.h"
#include "core/device.h"
#include "base/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *kp_home_dir(char *buf, size_t n)
{
    const char *home = getenv(KP_ENV_HOME);
    snprintf(buf, n, "%s", home && *home ? home : ".kprof");
    return buf;
}

kprof_status kp_kernel_name_check(const char *name, kp_error *err)
{
    if (!name || !*name) return kp_error_set(err, KPROF_INVALID, "kernel name is empty");
    if (strlen(name) > 100)
        return kp_error_set(err, KPROF_INVALID,
                            "kernel name '%.40s...' is longer than 100 "
                            "characters",
                            name);
    if (name[0] == '.' || name[0] == '-')
        return kp_error_set(err, KPROF_INVALID,
                            "kernel name '%s' may not start with '%c' (it would be hidden, "
                            "escape the folder, or read as an option)",
                            name, name[0]);
    for (const char *p = name; *p; p++) {
        /* '@' names a captured launch's folder (softmax@3: collect/capture.h). */
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.' &&
            !(*p == '@' && p != name))
            return kp_error_set(err, KPROF_INVALID,
                                "kernel name '%s' has '%c': use letters, digits, '_', '-', '.' "
                                "and '@' (not first) only, so it stays inside the kernels folder",
                                name, *p);
    }
    return KPROF_OK;
}

kprof_status kp_kernel_dir(const char *name, char *buf, size_t n, kp_error *err)
{
    kprof_status st = kp_kernel_name_check(name, err);
    if (st != KPROF_OK) return st;
    char home[4096];
    int w = snprintf(buf, n, "%s/kernels/%s", kp_home_dir(home, sizeof home), name);
    if (w < 0 || (size_t)w >= n) return kp_error_set(err, KPROF_INVALID, "path too long");
    return KPROF_OK;
}

kprof_status kp_kernel_dir_source(const char *dir, const char *prefer_backend, char *buf, size_t n,
                                  kp_error *err)
{
    /* Every language's extension, and a captured CUDA launch's fatbin (loaded as a cubin). */
    char found[KP_LANG_COUNT + 1][4200];
    int nfound = 0;
    for (int i = 0; i <= KP_LANG_COUNT; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/kernel.%s", dir,
                 i < KP_LANG_COUNT ? kp_lang_extension((kp_lang)i) : "fatbin");
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            snprintf(found[nfound++], sizeof found[0], "%s", path);
    }
    if (nfound == 0)
        return kp_error_set(err, KPROF_NOT_FOUND,
                            "%s holds no kernel source (kernel.cl, kernel.cu, kernel.ptx, "
                            "kernel.cubin or kernel.fatbin)",
                            dir);
    int pick = nfound == 1 ? 0 : -1;
    if (pick < 0 && prefer_backend && strcmp(prefer_backend, "auto") != 0) {
        for (int i = 0; i < nfound; i++) {
            int lang = kp_lang_from_path(found[i]);
            if (lang >= 0 && strcmp(kp_lang_backend((kp_lang)lang), prefer_backend) == 0) {
                pick = i;
                break;
            }
        }
    }
    if (pick < 0)
        return kp_error_set(err, KPROF_INVALID,
                            "%s holds several kernel sources (%s, %s%s): name one as FILE or "
                            "choose with --backend",
                            dir, found[0], found[1], nfound > 2 ? ", ..." : "");
    if (strlen(found[pick]) >= n) return kp_error_set(err, KPROF_INVALID, "path too long");
    snprintf(buf, n, "%s", found[pick]);
    return KPROF_OK;
}
