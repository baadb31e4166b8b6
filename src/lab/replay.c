/*
 * replay.c — a captured kernel launch (collect/capture.h: `kprof trace --capture` wrote it) as a
 * kernel-lab session's arguments: the capture found from the target (NAME@N) or given beside it
 * (a bench's edited side), the SPEC it stands for (one u8 buffer per allocation, so digests and
 * byte estimates work as for any run), the kernel's parameters checked against it, its bytes
 * bound through the backend's bind_capture (every captured device address relocated to the new
 * buffer), and the output check: one dispatch at the captured geometry from the before-states,
 * read back and compared with the captured after-states. The timed dispatches that follow start
 * from the state that dispatch left, as ncu's kernel replay does (lab.h, kp_lab_info.replay).
 */
#define _GNU_SOURCE
#include "base/util.h"
#include "lab/kernel_dir.h"
#include "lab/lab_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kp_lab_capture_free(kp_capture *c)
{
    if (!c) return;
    kp_capture_release(c);
    free(c);
}

/* The folder a NAME@N or a path names: a path (holding '/') as it is, else the kernel folder. */
static kprof_status kp_lab_capture_folder(const char *name, char *dir, size_t n, kp_error *err)
{
    if (strchr(name, '/')) {
        if (strlen(name) >= n) return kp_error_set(err, KPROF_INVALID, "path too long");
        snprintf(dir, n, "%s", name);
        return KPROF_OK;
    }
    return kp_kernel_dir(name, dir, n, err);
}

/* Read dir's capture into a new heap capture. */
static kprof_status kp_lab_capture_read_dir(const char *dir, kp_capture **out, kp_error *err)
{
    *out = NULL;
    kp_capture *c = malloc(sizeof *c);
    if (!c) return kp_error_nomem(err);
    kp_capture_init(c);
    kprof_status st = kp_capture_read(dir, c, err);
    if (st != KPROF_OK) {
        kp_lab_capture_free(c);
        return st;
    }
    *out = c;
    return KPROF_OK;
}

kprof_status kp_lab_capture_load(const kp_lab_options *opts, kp_capture **out, char *dir, size_t n,
                                 kp_error *err)
{
    *out = NULL;
    dir[0] = '\0';
    kprof_status st = KPROF_OK;
    if (opts->capture) {
        st = kp_lab_capture_folder(opts->capture, dir, n, err);
        if (st != KPROF_OK) return st;
        if (!kp_capture_is_folder(dir))
            return kp_error_set(err, KPROF_NOT_FOUND,
                                "%s is not a captured launch (no capture.json: make one with "
                                "`kprof trace --capture`)",
                                dir);
    } else if (opts->target && !opts->source_text && strchr(opts->target, '/')) {
        /* A capture folder named by its path (kprof trace --capture-dir DIR). */
        if (!kp_path_is_dir(opts->target) || !kp_capture_is_folder(opts->target) ||
            strlen(opts->target) >= n)
            return KPROF_OK;
        snprintf(dir, n, "%s", opts->target);
    } else if (opts->target && !opts->source_text &&
               kp_kernel_name_check(opts->target, NULL) == KPROF_OK) {
        if (kp_kernel_dir(opts->target, dir, n, NULL) != KPROF_OK || !kp_capture_is_folder(dir)) {
            dir[0] = '\0';
            return KPROF_OK;
        }
    } else {
        return KPROF_OK;
    }
    if (opts->buffers)
        return kp_error_set(err, KPROF_INVALID,
                            "%s is a captured launch: it brings its own arguments and buffers; "
                            "drop --buffers",
                            opts->capture ? opts->capture : opts->target);
    return kp_lab_capture_read_dir(dir, out, err);
}

kprof_status kp_lab_capture_spec(const kp_capture *c, kp_spec *spec, kp_error *err)
{
    memset(spec, 0, sizeof *spec);
    int nlocal = 0;
    for (int i = 0; i < c->nargs; i++)
        nlocal += c->args[i].kind == KP_CAPTURE_LOCAL;
    if (c->nallocs + nlocal > KP_SPEC_MAX_ARGS)
        return kp_error_set(err, KPROF_INVALID,
                            "the capture holds %d allocations and %d local arguments; the lab "
                            "replays at most %d in all",
                            c->nallocs, nlocal, KP_SPEC_MAX_ARGS);
    for (int j = 0; j < c->nallocs; j++) {
        kp_arg_spec *a = &spec->args[spec->count++];
        a->kind = KP_ARG_BUFFER;
        a->type = KP_TYPE_U8;
        a->count = c->allocs[j].bytes;
        a->fill = KP_FILL_ZERO;
        snprintf(a->text, sizeof a->text, "captured '%.40s' (u8:%llu)", c->allocs[j].name,
                 (unsigned long long)c->allocs[j].bytes);
    }
    for (int i = 0; i < c->nargs; i++) {
        if (c->args[i].kind != KP_CAPTURE_LOCAL) continue;
        kp_arg_spec *a = &spec->args[spec->count++];
        a->kind = KP_ARG_LOCAL;
        a->local_bytes = c->args[i].size;
        snprintf(a->text, sizeof a->text, "captured local:%u (argument %d)",
                 (unsigned)c->args[i].size, i + 1);
    }
    return KPROF_OK;
}

static const char *kp_capture_kind_word(int kind)
{
    return kind == KP_CAPTURE_MEM ? "buffer" : kind == KP_CAPTURE_LOCAL ? "local memory" : "value";
}

kprof_status kp_lab_capture_check_kernel(const kp_capture *c, const kp_kernel_meta *k,
                                         kp_error *err)
{
    if (c->nargs > KP_SPEC_MAX_ARGS)
        return kp_error_set(err, KPROF_INVALID,
                            "the capture passes %d arguments; the lab binds at most %d", c->nargs,
                            KP_SPEC_MAX_ARGS);
    if (k->nparams < 0) return KPROF_OK; /* the backend cannot count them: bind_capture checks */
    if (k->nparams != c->nargs)
        return kp_error_set(err, KPROF_INVALID,
                            "the capture passes %d argument%s but %s takes %d: the kernel is not "
                            "the one captured (capture.json damaged, or the code changed?)",
                            c->nargs, c->nargs == 1 ? "" : "s", k->name, k->nparams);
    for (int i = 0; i < c->nargs && k->params; i++) {
        const kp_capture_arg *a = &c->args[i];
        const kp_param *p = &k->params[i];
        int want = -1; /* the kind the parameter needs, -1: any */
        if (p->kind == KP_PARAM_GLOBAL || p->kind == KP_PARAM_CONSTANT)
            want = strcmp(c->api, "opencl") == 0 ? KP_CAPTURE_MEM : KP_CAPTURE_VALUE;
        else if (p->kind == KP_PARAM_LOCAL)
            want = KP_CAPTURE_LOCAL;
        else if (p->kind == KP_PARAM_VALUE || p->kind == KP_PARAM_STRUCT ||
                 p->kind == KP_PARAM_UNION)
            want = KP_CAPTURE_VALUE;
        /* OpenCL: a buffer parameter given by value is a NULL cl_mem (8 zero bytes) — or a
         * buffer the capture could not hold (a sub-buffer, an SVM pointer), which cannot be
         * bound again. */
        if (want == KP_CAPTURE_MEM && a->kind == KP_CAPTURE_VALUE) {
            int zero = a->size == 8 && a->bytes;
            for (uint32_t b = 0; zero && b < a->size; b++)
                zero = a->bytes[b] == 0;
            if (!zero)
                return kp_error_set(err, KPROF_INVALID,
                                    "argument %d of %s (%s) is a buffer the capture did not hold "
                                    "(its not-captured.txt says why): the launch cannot be "
                                    "replayed",
                                    i + 1, k->name, p->name[0] ? p->name : "unnamed");
            continue;
        }
        /* CUDA may capture a whole-pointer argument as a buffer too. */
        if (want == KP_CAPTURE_VALUE && a->kind == KP_CAPTURE_MEM && strcmp(c->api, "cuda") == 0 &&
            (p->kind == KP_PARAM_GLOBAL || p->kind == KP_PARAM_CONSTANT))
            want = -1;
        if (want >= 0 && a->kind != want)
            return kp_error_set(err, KPROF_INVALID,
                                "argument %d of %s is %s (%s), but the capture passes %s", i + 1,
                                k->name, p->name[0] ? p->name : "unnamed",
                                kp_capture_kind_word(want), kp_capture_kind_word(a->kind));
        uint32_t size = a->kind == KP_CAPTURE_MEM ? 8 : a->size;
        if (a->kind != KP_CAPTURE_LOCAL && p->size && a->kind == KP_CAPTURE_VALUE &&
            p->size != size)
            return kp_error_set(err, KPROF_INVALID,
                                "argument %d of %s (%s) takes %u bytes, but the capture passes %u",
                                i + 1, k->name, p->name[0] ? p->name : "unnamed", (unsigned)p->size,
                                (unsigned)size);
    }
    return KPROF_OK;
}

kprof_status kp_lab_capture_bind_kernel(kp_lab *lab, kp_kernel *kernel, kp_error *err)
{
    const kp_capture *c = lab->capture;
    if (!lab->ops->bind_capture)
        return kp_error_set(err, KPROF_UNAVAILABLE, "the %s backend cannot replay a capture",
                            lab->ops->name);
    if (c->nargs > KP_SPEC_MAX_ARGS)
        return kp_error_set(err, KPROF_INVALID,
                            "the capture passes %d arguments; the lab binds at most %d", c->nargs,
                            KP_SPEC_MAX_ARGS);
    kp_raw_arg args[KP_SPEC_MAX_ARGS];
    kp_raw_ptr *ptrs = NULL;
    if (c->nptrs > 0) {
        ptrs = calloc((size_t)c->nptrs, sizeof *ptrs);
        if (!ptrs) return kp_error_nomem(err);
    }
    for (int i = 0; i < c->nargs; i++) {
        const kp_capture_arg *a = &c->args[i];
        args[i] = (kp_raw_arg){
            .kind = a->kind == KP_CAPTURE_MEM     ? KP_RAW_BUFFER
                    : a->kind == KP_CAPTURE_LOCAL ? KP_RAW_LOCAL
                                                  : KP_RAW_VALUE,
            .size = a->size,
            .bytes = a->bytes,
            .buffer = a->kind == KP_CAPTURE_MEM ? a->alloc : -1,
        };
    }
    for (int p = 0; p < c->nptrs; p++)
        ptrs[p] = (kp_raw_ptr){.arg = c->ptrs[p].arg,
                               .at = c->ptrs[p].at,
                               .buffer = c->ptrs[p].alloc,
                               .offset = c->ptrs[p].offset};
    kp_raw_args raw = {.nargs = c->nargs, .args = args, .nptrs = c->nptrs, .ptrs = ptrs};
    kprof_status st = lab->ops->bind_capture(kernel, &raw, lab->buffers, err);
    free(ptrs);
    return st;
}

/* Write every allocation's before-state. */
static kprof_status kp_lab_capture_restore(kp_lab *lab, kp_error *err)
{
    const kp_capture *c = lab->capture;
    for (int j = 0; j < c->nallocs; j++) {
        void *bytes = NULL;
        kprof_status st = kp_capture_read_state(lab->info.replay_dir, c, j, 0, &bytes, err);
        if (st == KPROF_NOT_FOUND) {
            /* Not copied (the collector said why in not-captured.txt): zeros, and the check
             * cannot be trusted; the sentence says so through the missing lines. */
            kp_error_clear(err);
            bytes = calloc(1, c->allocs[j].bytes ? (size_t)c->allocs[j].bytes : 1);
            if (!bytes) return kp_error_nomem(err);
            if (!lab->info.warning[0])
                snprintf(lab->info.warning, sizeof lab->info.warning,
                         "allocation '%s' of the capture has no before-state: the replay starts "
                         "it from zeros",
                         c->allocs[j].name);
        } else if (st != KPROF_OK) {
            return st;
        }
        st = lab->ops->write(lab->buffers[j], bytes, c->allocs[j].bytes, err);
        free(bytes);
        if (st != KPROF_OK) {
            kp_error_append(err, " (captured allocation '%s')", c->allocs[j].name);
            return st;
        }
    }
    return KPROF_OK;
}

/* One dispatch at the captured geometry, then every allocation read back and compared with its
 * after-state. */
static kprof_status kp_lab_capture_verify(kp_lab *lab, kp_error *err)
{
    const kp_capture *c = lab->capture;
    kp_capture_check *k = &lab->info.replay_check;
    memset(k, 0, sizeof *k);
    k->worst = -1;
    double ns = 0;
    kprof_status st = lab->ops->dispatch(lab->kernel, &lab->info.replay_launch, &ns, NULL, err);
    if (st != KPROF_OK) {
        kp_error_append(err, " (the replay's output check, at the captured geometry)");
        return st;
    }
    if (c->after) {
        k->have = 1;
        for (int j = 0; j < c->nallocs && st == KPROF_OK; j++) {
            uint64_t n = c->allocs[j].bytes;
            void *want = NULL, *got = malloc(n ? (size_t)n : 1);
            if (!got) return kp_error_nomem(err);
            st = kp_capture_read_state(lab->info.replay_dir, c, j, 1, &want, err);
            if (st == KPROF_NOT_FOUND) { /* this one was not copied: not compared */
                kp_error_clear(err);
                free(got);
                st = KPROF_OK;
                continue;
            }
            if (st == KPROF_OK) st = lab->ops->read(lab->buffers[j], got, n, err);
            if (st == KPROF_OK) {
                uint64_t d = kp_capture_diff_bytes(got, want, n);
                k->bytes += n;
                k->differing += d;
                if (d > k->worst_bytes) {
                    k->worst_bytes = d;
                    k->worst = j;
                }
            }
            free(want);
            free(got);
        }
        if (st != KPROF_OK) return st;
    }
    if (k->worst >= 0)
        kp_strlcpy(lab->info.replay_worst, c->allocs[k->worst].name, sizeof lab->info.replay_worst);
    kp_capture_check_text(c, k, lab->info.replay_text, sizeof lab->info.replay_text);
    return KPROF_OK;
}

kprof_status kp_lab_capture_bind(kp_lab *lab, kp_error *err)
{
    const kp_capture *c = lab->capture;
    kprof_status st = KPROF_OK;
    for (int j = 0; j < c->nallocs; j++) {
        uint64_t bytes = c->allocs[j].bytes ? c->allocs[j].bytes : 1;
        lab->info.buffer_bytes += c->allocs[j].bytes;
        st = lab->ops->alloc(lab->dev, bytes, &lab->buffers[j], err);
        if (st != KPROF_OK) {
            kp_error_append(err, " (captured allocation '%s', %llu bytes)", c->allocs[j].name,
                            (unsigned long long)c->allocs[j].bytes);
            return st;
        }
    }
    st = kp_lab_capture_restore(lab, err);
    if (st == KPROF_OK) st = kp_lab_capture_bind_kernel(lab, lab->kernel, err);
    if (st != KPROF_OK) return st;
    lab->bound = 1;
    return kp_lab_capture_verify(lab, err);
}

int kp_lab_is_program_binary(const char *source_path)
{
    size_t n = strlen(source_path);
    static const char tail[] = "/program.bin";
    return n >= sizeof tail - 1 && strcmp(source_path + n - (sizeof tail - 1), tail) == 0;
}

int kp_lab_source_lang(const char *source_path)
{
    return kp_lab_is_program_binary(source_path) ? KP_LANG_OPENCL_C
                                                 : kp_lang_from_path(source_path);
}

kprof_status kp_lab_capture_load_binary(kp_lab *lab, const char *binary, size_t len, kp_error *err)
{
    const kp_capture *c = lab->capture;
    if (strcmp(c->api, "opencl") != 0 || strcmp(lab->ops->name, "opencl") != 0)
        return kp_error_set(err, KPROF_INVALID,
                            "%s: an OpenCL program binary is replayed on an OpenCL device only",
                            lab->info.source_path);
    uint64_t t0 = kp_now_ns();
    kprof_status st =
        lab->ops->load(lab->dev, (const unsigned char *)binary, len, &lab->program, err);
    if (st != KPROF_OK) {
        kp_error_append(err, " (%s: the program's binary, for the device it was captured on)",
                        lab->info.source_path);
        return st;
    }
    lab->info.compile_ms = (double)(kp_now_ns() - t0) / 1e6;
    lab->meta.kernels = calloc(1, sizeof *lab->meta.kernels);
    if (!lab->meta.kernels) return kp_error_nomem(err);
    lab->meta.nkernels = 1;
    kp_kernel_meta *k = &lab->meta.kernels[0];
    kp_strlcpy(k->name, c->symbol, sizeof k->name);
    kp_strlcpy(k->symbol, c->symbol, sizeof k->symbol);
    k->nparams = -1;
    return KPROF_OK;
}

int kp_lab_capture_device(const kp_capture *c, const char *backend)
{
    const char *name = backend && *backend && strcmp(backend, "auto") != 0 ? backend : c->api;
    const kp_backend_ops *ops = kp_backend_find(name);
    if (!ops || !c->device[0]) return -1;
    kp_error err = {0};
    int found = -1;
    if (ops->probe(&err) == KPROF_OK) {
        int n = ops->device_count();
        for (int i = 0; i < n && found < 0; i++) {
            kp_device_info info;
            if (ops->device_info(i, &info, &err) == KPROF_OK && strcmp(info.name, c->device) == 0)
                found = i;
            kp_error_clear(&err);
        }
    }
    kp_error_clear(&err);
    return found;
}

int kp_lab_capture_launch(const kp_capture *c, kp_launch *l)
{
    memset(l, 0, sizeof *l);
    l->dims = c->dims >= 1 && c->dims <= 3 ? c->dims : 1;
    int chosen = 0;
    for (int d = 0; d < 3; d++) {
        l->grid[d] = d < l->dims && c->grid[d] ? c->grid[d] : 1;
        l->tg[d] = d < l->dims ? c->tg[d] : 1;
        chosen |= d < l->dims && c->tg[d] == 0;
    }
    if (chosen) { /* the largest power of two up to 256 threads in all that divides the grid */
        uint64_t room = 256;
        for (int d = 0; d < l->dims; d++) {
            uint64_t t = 1;
            while (t * 2 <= room && l->grid[d] % (t * 2) == 0)
                t *= 2;
            l->tg[d] = t;
            room /= t;
        }
    }
    /* OpenCL's __local arguments are in the SPEC (kp_lab_capture_spec), not --smem. */
    l->dyn_local = strcmp(c->api, "opencl") == 0 ? 0 : c->dynamic_smem;
    return chosen;
}

int kp_lab_capture_target_read(const char *target, kp_lab_capture_target *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    kp_lab_options opts = {.target = target};
    kp_capture *c = NULL;
    if (kp_lab_capture_load(&opts, &c, out->dir, sizeof out->dir, err) != KPROF_OK) return -1;
    if (!c) return 0;
    kp_lab_capture_launch(c, &out->launch);
    kp_strlcpy(out->api, c->api, sizeof out->api);
    kp_strlcpy(out->kernel, c->kernel, sizeof out->kernel);
    kp_strlcpy(out->symbol, c->symbol, sizeof out->symbol);
    kp_strlcpy(out->code_kind, c->code_kind, sizeof out->code_kind);
    kp_lab_capture_free(c);
    return 1;
}
