/*
 * hatchet_tree.c — builds one known call tree through core/aggregate.c and writes its Hatchet
 * export (export/hatchet.c) to the file named by argv[1], for tests/cli/test_hatchet.py to load
 * with the real hatchet. Until `kprof export --hatchet` reads traces, this is the export's path
 * from events to file. The timeline (ms), and the tree test_hatchet.py expects from it:
 *
 *   thread 1  train [0,10]
 *               step [1,5]   cudaLaunchKernel [2,2.5] #1   cudaMemcpy [3,4.5] #2
 *               step [5,9]   cudaLaunchKernel [6,6.2] #3
 *   thread 2  "naïve\xff" [0.5,1.5]       (a name that is not all UTF-8)
 *   device    gemm [2.6,4.6] #1 (1e9 flops)   [CUDA memcpy HtoD] [3.1,4.1] #2 (1 MiB)
 *             gemm [9.5,11] #3 (after its range closed)   orphan [12,12.5] #42 (no call)
 *
 * `hatchet_tree --deep OUT.json`: DEEP ranges L0 > L1 > ... nested on one thread, L<i> over
 * [i, 1000 - i] µs: deeper than KP_AGGREGATION_MAX_DEPTH, so the last levels are placed at that
 * depth, beside its last level.
 */
#include "core/aggregate.h"
#include "export/hatchet.h"

#include <stdio.h>
#include <string.h>

enum { TRAIN = 1, STEP, LAUNCH, MEMCPY_CALL, GEMM, HTOD, ORPHAN, NAIVE, NAMES };
enum { DEEP = KP_AGGREGATION_MAX_DEPTH + 6, DEEP_NAME = 100 };
static char deep_names[DEEP][16];

static const char *const names[NAMES] = {"",
                                         "train",
                                         "step",
                                         "cudaLaunchKernel",
                                         "cudaMemcpy",
                                         "gemm",
                                         "[CUDA memcpy HtoD]",
                                         "orphan",
                                         "na\xc3\xafve\xff"};

static const char *name_of(void *ctx, uint32_t id)
{
    (void)ctx;
    if (id >= DEEP_NAME && id < DEEP_NAME + DEEP) return deep_names[id - DEEP_NAME];
    return id < NAMES ? names[id] : NULL;
}

static kp_event ev(kp_event_kind kind, uint32_t name, double start_ms, double end_ms, int64_t tid,
                   uint64_t corr)
{
    kp_event e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.name = name;
    e.start_ns = (int64_t)(start_ms * 1e6 + 0.5);
    e.end_ns = (int64_t)(end_ms * 1e6 + 0.5);
    e.process = 1;
    e.tid = tid;
    if (corr) {
        e.correlation = corr;
        e.known |= KP_EVENT_HAS_CORRELATION;
    }
    return e;
}

/* The deep tree's events, in order of start; returns how many. */
static size_t deep_events(kp_event *v)
{
    for (int i = 0; i < DEEP; i++) {
        snprintf(deep_names[i], sizeof deep_names[i], "L%d", i);
        v[i] = ev(KP_EVENT_RANGE, DEEP_NAME + (uint32_t)i, i / 1000.0, (1000 - i) / 1000.0, 1, 0);
    }
    return DEEP;
}

int main(int argc, char **argv)
{
    int deep = argc == 3 && strcmp(argv[1], "--deep") == 0;
    if (argc != 2 && !deep) {
        fprintf(stderr, "usage: hatchet_tree [--deep] OUT.json\n");
        return 2;
    }
    const char *out = argv[argc - 1];
    kp_event deep_v[DEEP];
    kp_event v[] = {
        /* in order of start */
        ev(KP_EVENT_RANGE, TRAIN, 0, 10, 1, 0),       ev(KP_EVENT_RANGE, NAIVE, 0.5, 1.5, 2, 0),
        ev(KP_EVENT_RANGE, STEP, 1, 5, 1, 0),         ev(KP_EVENT_API, LAUNCH, 2, 2.5, 1, 1),
        ev(KP_EVENT_KERNEL, GEMM, 2.6, 4.6, 0, 1),    ev(KP_EVENT_API, MEMCPY_CALL, 3, 4.5, 1, 2),
        ev(KP_EVENT_MEMCPY, HTOD, 3.1, 4.1, 0, 2),    ev(KP_EVENT_RANGE, STEP, 5, 9, 1, 0),
        ev(KP_EVENT_API, LAUNCH, 6, 6.2, 1, 3),       ev(KP_EVENT_KERNEL, GEMM, 9.5, 11, 0, 3),
        ev(KP_EVENT_KERNEL, ORPHAN, 12, 12.5, 0, 42),
    };
    v[4].metrics.flops = 1e9;
    v[4].known |= KP_EVENT_HAS_FLOPS;
    v[6].bytes = 1 << 20;
    v[6].known |= KP_EVENT_HAS_BYTES;
    const kp_event *events = v;
    size_t n = sizeof v / sizeof v[0];
    if (deep) {
        n = deep_events(deep_v);
        events = deep_v;
    }
    kp_aggregation *a = kp_aggregation_create(name_of, NULL);
    int rc = a ? 0 : 1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = kp_aggregation_add(a, &events[i], NULL) != 0;
    if (rc == 0) rc = kp_aggregation_finish(a, NULL) != 0;
    FILE *f = rc == 0 ? fopen(out, "w") : NULL;
    if (rc == 0 && !f) {
        perror(out);
        rc = 1;
    }
    if (rc == 0) {
        kp_error err = {0};
        if (kp_export_hatchet(a, "hatchet_tree", f, &err) != KPROF_OK) {
            fprintf(stderr, "hatchet_tree: %s\n", err.message);
            kp_error_clear(&err);
            rc = 1;
        }
    }
    if (f && fclose(f) != 0) rc = 1;
    kp_aggregation_destroy(a);
    return rc;
}
