/*
 * pid_map.c — the process ids the timeline exports write (see pid_map.h).
 */
#include "export/pid_map.h"

#include <stdlib.h>
#include <string.h>

#define KP_PID_MAP_BASE (INT64_C(1) << 30) /* where free ids start, and the GPU ids' base */

static int kp_cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

static int kp_cmp_pair(const void *x, const void *y)
{
    const int64_t *a = x, *b = y;
    if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

/* The index of the first of v[0..n) not below key. */
static size_t kp_lower_bound(const int64_t *v, size_t n, int64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int kp_fits(int64_t pid)
{
    return pid >= 0 && pid <= INT32_MAX;
}

/* Whether a kept pid (one that fits) is id. */
static int kp_kept(const kp_pid_map *m, int64_t id)
{
    size_t i = kp_lower_bound(m->pids, m->npids, id);
    return i < m->npids && m->pids[i] == id;
}

/* The next free id from *next: one no kept pid has, in [1, INT32_MAX], from 2^30 up and then
 * from 1. The caller asks for no more than there are (so none is handed out twice). */
static int32_t kp_free_id(const kp_pid_map *m, int64_t *next)
{
    for (;;) {
        int64_t id = *next;
        *next = id >= INT32_MAX ? 1 : id + 1;
        if (!kp_kept(m, id)) return (int32_t)id;
    }
}

/* The legacy GPU id 2^30 + 16·pid + device, or -1 where it does not fit or is not the pair's
 * own. */
static int64_t kp_legacy_gpu(int64_t pid, int64_t device)
{
    if (pid < 0 || device < 0 || device > 15) return -1;
    if (pid > (INT32_MAX - KP_PID_MAP_BASE - 15) / 16) return -1;
    return KP_PID_MAP_BASE + 16 * pid + device;
}

kprof_status kp_pid_map_make(kp_pid_map *m, kp_event_source *src, int gpus, kp_error *err)
{
    memset(m, 0, sizeof *m);
    const kp_trace_thread *threads;
    const kp_trace_queue *queues;
    size_t nthreads, nqueues, nprocs;
    kprof_status st;
    if ((st = kp_event_source_threads(src, &threads, &nthreads, err)) != KPROF_OK ||
        (st = kp_event_source_queues(src, &queues, &nqueues, err)) != KPROF_OK)
        return st;
    const kp_trace_process *procs = kp_event_source_processes(src, &nprocs);
    size_t total = nprocs + nthreads + nqueues;
    m->pids = malloc((total ? total : 1) * sizeof *m->pids);
    if (!m->pids) goto nomem;
    for (size_t i = 0; i < nprocs; i++)
        m->pids[m->npids++] = procs[i].pid;
    for (size_t i = 0; i < nthreads; i++)
        m->pids[m->npids++] = threads[i].pid;
    for (size_t i = 0; i < nqueues; i++)
        m->pids[m->npids++] = queues[i].pid;
    qsort(m->pids, m->npids, sizeof *m->pids, kp_cmp_i64);
    size_t n = 0, nfit = 0;
    for (size_t i = 0; i < m->npids; i++) {
        if (n && m->pids[n - 1] == m->pids[i]) continue;
        m->pids[n++] = m->pids[i];
        nfit += kp_fits(m->pids[i]);
    }
    m->npids = n;
    /* The queues are sorted by (pid, device, stream): their pairs are already in order. */
    if (gpus) {
        m->gpus = malloc((nqueues ? nqueues : 1) * sizeof *m->gpus);
        if (!m->gpus) goto nomem;
        for (size_t i = 0; i < nqueues; i++) {
            if (m->ngpus && m->gpus[m->ngpus - 1][0] == queues[i].pid &&
                m->gpus[m->ngpus - 1][1] == (int64_t)queues[i].device)
                continue;
            m->gpus[m->ngpus][0] = queues[i].pid;
            m->gpus[m->ngpus][1] = (int64_t)queues[i].device;
            m->ngpus++;
        }
    }
    int legacy = nfit == m->npids;
    for (size_t i = 0; legacy && i < m->ngpus; i++) {
        int64_t id = kp_legacy_gpu(m->gpus[i][0], m->gpus[i][1]);
        legacy = id >= 0 && !kp_kept(m, id);
    }
    if (nfit == m->npids && legacy) return KPROF_OK;
    /* Free ids are looked up among the kept pids: the pids that fit, first. */
    size_t need = (m->npids - nfit) + (legacy ? 0 : m->ngpus);
    if (need > (size_t)INT32_MAX - nfit) {
        kp_pid_map_free(m);
        return kp_error_set(err, KPROF_INVALID,
                            "%s has more processes and GPUs than an export "
                            "can number",
                            kp_event_source_path(src));
    }
    int64_t *order = malloc((m->npids ? m->npids : 1) * sizeof *order);
    m->ids = malloc((m->npids ? m->npids : 1) * sizeof *m->ids);
    if (!order || !m->ids) {
        free(order);
        goto nomem;
    }
    /* order: the kept pids (ascending), then the others (ascending); the map's own arrays stay
     * in pid order. */
    size_t k = 0;
    for (size_t i = 0; i < m->npids; i++)
        if (kp_fits(m->pids[i])) order[k++] = m->pids[i];
    for (size_t i = 0; i < m->npids; i++)
        if (!kp_fits(m->pids[i])) order[k++] = m->pids[i];
    kp_pid_map kept = {.pids = order, .npids = nfit};
    int64_t next = KP_PID_MAP_BASE;
    for (size_t i = 0; i < m->npids; i++)
        m->ids[i] = kp_fits(m->pids[i]) ? (int32_t)m->pids[i] : kp_free_id(&kept, &next);
    if (!legacy) {
        m->gpu_ids = malloc((m->ngpus ? m->ngpus : 1) * sizeof *m->gpu_ids);
        if (!m->gpu_ids) {
            free(order);
            goto nomem;
        }
        for (size_t i = 0; i < m->ngpus; i++)
            m->gpu_ids[i] = kp_free_id(&kept, &next);
    }
    free(order);
    return KPROF_OK;
nomem:
    kp_pid_map_free(m);
    return kp_error_nomem(err);
}

int64_t kp_pid_map_pid(const kp_pid_map *m, int64_t pid)
{
    if (m->ids) {
        size_t i = kp_lower_bound(m->pids, m->npids, pid);
        if (i < m->npids && m->pids[i] == pid) return m->ids[i];
    }
    return pid < 0 ? 0 : pid > INT32_MAX ? INT32_MAX : pid;
}

int64_t kp_pid_map_gpu(const kp_pid_map *m, int64_t pid, uint32_t device)
{
    if (!m->gpu_ids) {
        int64_t id = kp_legacy_gpu(pid, device);
        return id >= 0 ? id : INT32_MAX;
    }
    size_t lo = 0, hi = m->ngpus;
    int64_t key[2] = {pid, (int64_t)device};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (kp_cmp_pair(m->gpus[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->ngpus && kp_cmp_pair(m->gpus[lo], key) == 0 ? m->gpu_ids[lo] : INT32_MAX;
}

void kp_pid_map_free(kp_pid_map *m)
{
    free(m->pids);
    free(m->ids);
    free(m->gpus);
    free(m->gpu_ids);
    memset(m, 0, sizeof *m);
}
