/*
 * pid_map.h — the process ids the timeline exports write. Viewers take a pid as a 32-bit int
 * (Perfetto's ProcessDescriptor.pid and ThreadDescriptor.pid are int32; its JSON importer and
 * chrome://tracing read "pid" the same way), but a trace's pids are int64: a merged trace's are
 * pid + k·2^22 (store/trace_merge.h), past 2^31 from k = 512, and a damaged file's may be
 * anything.
 *
 * The map holds every pid of a trace (its processes', its host threads' and its device queues'):
 * each pid in [0, INT32_MAX] is written as it is; the others get free ids — in pid order, the
 * first ids from 2^30 up (then from 1) that no kept pid has — so no two pids share one and every
 * id fits. The Chrome export also needs a "process" per (pid, device) for the GPU tracks
 * (gpus != 0): 2^30 + 16·pid + device, as it always was, where every pid was kept and every
 * pair's id fits, is its own (device < 16) and is no pid's; else ids from the sorted (pid,
 * device) list, free in the same way (after the pids' own).
 *
 * Lookups are binary searches over arrays made once (none at all where every pid is kept), and
 * read-only: two threads may share a map.
 */
#ifndef KP_EXPORT_PID_MAP_H
#define KP_EXPORT_PID_MAP_H

#include "base/error.h"
#include "store/event_source.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kp_pid_map {
    int64_t *pids; /* every pid, ascending, each once */
    int32_t *ids;  /* what each is written as; NULL when every one is kept */
    size_t npids;
    int64_t (*gpus)[2]; /* every (pid, device) of a device queue, ascending, each once */
    int32_t *gpu_ids;   /* what each is written as; NULL for 2^30 + 16·pid + device */
    size_t ngpus;
} kp_pid_map;

/* The map of src's pids (and, with gpus, of its (pid, device) pairs). Makes the source's index
 * (kp_event_source_threads). Errors: as kp_event_source_threads', NOMEM. *m holds nothing on
 * failure. */
kprof_status kp_pid_map_make(kp_pid_map *m, kp_event_source *src, int gpus, kp_error *err);

/* The id pid is written as; a pid the map does not hold (none: the map has every pid of the
 * trace) as it is, saturated to int32. */
int64_t kp_pid_map_pid(const kp_pid_map *m, int64_t pid);

/* The id of the GPU process of (pid, device) (a map made with gpus). */
int64_t kp_pid_map_gpu(const kp_pid_map *m, int64_t pid, uint32_t device);

void kp_pid_map_free(kp_pid_map *m); /* a zeroed one is fine; zeroes it */

#endif
