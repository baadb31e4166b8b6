/*
 * trace_job.c — a job's trace rank by rank and device by device, and its stragglers (see
 * trace_job.h). The pass keeps each device operation's interval with its rank and device, and
 * each rank's collective kernels and ranges; finish sorts them to make the unions (exact, as
 * core/busy.h's when fed in order of start) and pairs the ranks' steps.
 */
#include "analysis/trace_job.h"
#include "core/busy.h"
#include "core/host_calls.h"
#include "core/stats.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define KP_JOB_COLLECTIVE_BIT 0x80000000u /* kp_job_op.device: a collective kernel */

/* A device operation: its interval, its rank's slot and its device's slot. */
typedef struct kp_job_op {
    int64_t start, end;
    uint32_t rank;
    uint32_t device; /* | KP_JOB_COLLECTIVE_BIT */
} kp_job_op;

/* A collective kernel or an NVTX range of a rank (rank >= 0). */
typedef struct kp_job_mark {
    int64_t start, end;
    int64_t launch; /* collectives: when the call that launched it started (else start) */
    uint32_t name;
    uint32_t rank; /* its slot */
} kp_job_mark;

/* A host of the job: a boot (processes of one boot share CLOCK_MONOTONIC and GPUs), or a host
 * name where no boot id is known. */
typedef struct kp_job_hostinfo {
    const char *name; /* its processes' host name ("" none said) */
    const char *boot; /* its boot id ("" unknown: then it is the name's) */
    const char *tag;  /* what tells it apart from hosts of its name (kp_job_device.host_tag) */
    char *own;        /* tag, when it was made here */
} kp_job_hostinfo;

/* A hash map of uint64 keys to uint32 values (open addressing, at most half full): lookups a
 * damaged file's numbers cannot make quadratic. */
typedef struct kp_job_map {
    uint64_t *keys;
    uint32_t *values;
    unsigned char *used;
    size_t n, cap;
} kp_job_map;

struct kp_job_state {
    const kp_trace_process *procs;
    size_t nprocs;
    uint32_t *slot_of; /* by index in procs: its rank's slot */
    const char *const *names;
    size_t nnames;
    unsigned char *op_of; /* by string id: kp_collective_op */
    int raw;
    size_t nslots;         /* the ranks and the "-" slot, always last */
    int64_t *first, *last; /* by slot: the events' span */
    unsigned char *has_events;
    /* the last lookups: runs of one process and one device are the rule */
    int have_process;
    int64_t last_process;
    size_t last_index;
    int have_device;
    uint32_t device_host, device_number, device_slot;
    int have_pair;
    uint32_t pair_rank, pair_device; /* the last (rank, device) pair noted */
    size_t capdevices;
    uint32_t *host_of;      /* by index in procs: its host's id, 1 + its index in hosts; 0 none */
    kp_job_hostinfo *hosts; /* the hosts (boots, or names) of the processes, each once */
    kp_job_map device_of;   /* (host id, device number) -> device slot */
    kp_job_map pairs;       /* (rank slot, device slot): the rank's work ran on the device */
    kp_job_op *ops;
    size_t nops, capops;
    kp_job_mark *colls, *ranges;
    size_t ncolls, capcolls, nranges, capranges;
};

/* Room for one more element of size sz in *v (capacity *cap). KPROF_OK, or KPROF_NOMEM. (This
 * file's static helpers fail only for memory and fill no kp_error: the public function that
 * called them fills err once.) */
static kprof_status kp_job_grow(void **v, size_t *cap, size_t n, size_t sz)
{
    if (n < *cap) return KPROF_OK;
    size_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, c * sz);
    if (!p) return KPROF_NOMEM;
    *v = p;
    *cap = c;
    return KPROF_OK;
}

static size_t kp_job_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (size_t)k;
}

/* key's value into *value (*found 1), or *value put as key's (*found 0). KPROF_OK, or
 * KPROF_NOMEM. */
static kprof_status kp_job_map_get_or_put(kp_job_map *m, uint64_t key, uint32_t *value, int *found)
{
    *found = 0;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        uint64_t *keys = malloc(cap * sizeof *keys);
        uint32_t *values = malloc(cap * sizeof *values);
        unsigned char *used = calloc(cap, 1);
        if (!keys || !values || !used) {
            free(keys);
            free(values);
            free(used);
            return KPROF_NOMEM;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->used[i]) continue;
            size_t j = kp_job_hash(m->keys[i]) & (cap - 1);
            while (used[j])
                j = (j + 1) & (cap - 1);
            used[j] = 1;
            keys[j] = m->keys[i];
            values[j] = m->values[i];
        }
        free(m->keys);
        free(m->values);
        free(m->used);
        m->keys = keys;
        m->values = values;
        m->used = used;
        m->cap = cap;
    }
    size_t i = kp_job_hash(key) & (m->cap - 1);
    for (; m->used[i]; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            *value = m->values[i];
            *found = 1;
            return KPROF_OK;
        }
    }
    m->used[i] = 1;
    m->keys[i] = key;
    m->values[i] = *value;
    m->n++;
    return KPROF_OK;
}

static void kp_job_map_free(kp_job_map *m)
{
    free(m->keys);
    free(m->values);
    free(m->used);
    memset(m, 0, sizeof *m);
}

/* A process's pid with its rank's slot, and a process's host with its index: sorted to make
 * the ranks' pid sets and the hosts' ids (a damaged file may hold any number of processes). */
typedef struct kp_job_pid {
    uint32_t slot;
    int64_t pid;
} kp_job_pid;

static int kp_cmp_pid(const void *x, const void *y)
{
    const kp_job_pid *a = x, *b = y;
    if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
    return (a->pid > b->pid) - (a->pid < b->pid);
}

/* A process's host key: its boot id, else its host name. */
typedef struct kp_job_host {
    int by_boot;
    const char *key;
    size_t index;
} kp_job_host;

static int kp_cmp_host(const void *x, const void *y)
{
    const kp_job_host *a = x, *b = y;
    if (a->by_boot != b->by_boot) return a->by_boot - b->by_boot;
    int c = strcmp(a->key, b->key);
    if (c) return c;
    return (a->index > b->index) - (a->index < b->index);
}

/* Hosts by name, then boot id: the ones whose names clash lie together. */
static int kp_cmp_host_name(const void *x, const void *y)
{
    const kp_job_hostinfo *a = *(const kp_job_hostinfo *const *)x;
    const kp_job_hostinfo *b = *(const kp_job_hostinfo *const *)y;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->boot, b->boot);
}

#define KP_JOB_BOOT_SHOWN 8 /* characters of a boot id in a label */

/* The hosts' tags: none for a name of one host; where boots share a name, "boot 1a2b3c4d" (the
 * whole id where 8 characters do not tell two apart), and "no boot id" for the name's processes
 * that say no boot; "boot 1a2b3c4d" for a boot without a name. KPROF_OK, or KPROF_NOMEM. */
static kprof_status kp_job_host_tags(kp_job_hostinfo *hosts, size_t n)
{
    kp_job_hostinfo **by_name = malloc((n ? n : 1) * sizeof *by_name);
    if (!by_name) return KPROF_NOMEM;
    for (size_t i = 0; i < n; i++) {
        by_name[i] = &hosts[i];
        hosts[i].tag = "";
    }
    qsort(by_name, n, sizeof *by_name, kp_cmp_host_name);
    kprof_status rc = KPROF_OK;
    for (size_t i = 0; i < n && rc == KPROF_OK;) {
        size_t k = i + 1;
        while (k < n && strcmp(by_name[k]->name, by_name[i]->name) == 0)
            k++;
        int clash = *by_name[i]->name && k - i > 1, whole = 0;
        for (size_t m = i + 1; m < k; m++) /* nameless boots too */
            if (*by_name[m - 1]->boot &&
                strncmp(by_name[m - 1]->boot, by_name[m]->boot, KP_JOB_BOOT_SHOWN) == 0)
                whole = 1;
        for (; i < k; i++) {
            kp_job_hostinfo *h = by_name[i];
            int len = whole ? (int)strlen(h->boot) : KP_JOB_BOOT_SHOWN;
            kp_str tag = {0};
            if ((clash || !*h->name) && *h->boot)
                kp_str_printf(&tag, "boot %.*s", len, h->boot);
            else if (clash)
                h->tag = "no boot id";
            if (tag.failed) {
                kp_str_free(&tag);
                rc = KPROF_NOMEM;
                break;
            }
            if (!tag.data) continue;
            h->own = tag.data;
            h->tag = h->own;
        }
    }
    free(by_name);
    return rc;
}

/* A rank's work on a device: the device's slot and number. */
typedef struct kp_job_pair {
    uint32_t rank, device, number;
} kp_job_pair;

static int kp_cmp_pair_rank(const void *x, const void *y)
{
    const kp_job_pair *a = x, *b = y;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return (a->number > b->number) - (a->number < b->number);
}

static int kp_cmp_pair_device(const void *x, const void *y)
{
    const kp_job_pair *a = x, *b = y;
    if (a->device != b->device) return a->device < b->device ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* end - start, 0 when end is not after start (times from a file may be anything). */
static int64_t kp_job_len(int64_t end, int64_t start)
{
    int64_t d = kp_ns_diff(end, start);
    return d > 0 ? d : 0;
}

static int kp_cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

kprof_status kp_trace_job_applies(kp_event_source *src, int *applies, kp_error *err)
{
    *applies = 0;
    size_t nprocs;
    const kp_trace_process *procs = kp_event_source_processes(src, &nprocs);
    int first_rank = -1;
    for (size_t i = 0; i < nprocs; i++) {
        if (procs[i].rank < 0) continue;
        if (first_rank >= 0 && procs[i].rank != first_rank) {
            *applies = 1;
            return KPROF_OK;
        }
        first_rank = procs[i].rank;
    }
    if (first_rank < 0) return KPROF_OK; /* no launcher's process: not a job */
    const kp_trace_queue *queues;
    size_t nqueues;
    kprof_status st = kp_event_source_queues(src, &queues, &nqueues, err);
    if (st != KPROF_OK) return st;
    /* A device is (host, number), the host the boot of the queue's pid (its name where no boot
     * is known): kp_job_device_slot's key. */
    const char *first_host = NULL;
    uint32_t first_device = 0;
    for (size_t q = 0; q < nqueues; q++) {
        const kp_trace_process *p = kp_event_source_process_of_pid(src, queues[q].pid);
        const char *host = !p ? "" : *p->boot_id ? p->boot_id : p->host;
        if (!first_host) {
            first_host = host;
            first_device = queues[q].device;
        } else if (queues[q].device != first_device || strcmp(host, first_host) != 0) {
            *applies = 1;
            break;
        }
    }
    return KPROF_OK;
}

kprof_status kp_trace_job_begin(kp_trace_job *j, const kp_trace_process *procs, size_t nprocs,
                                const char *const *names, size_t nnames, int raw, kp_error *err)
{
    memset(j, 0, sizeof *j);
    j->launcher = "";
    j->stragglers.last_rank = -1;
    kp_job_state *s = calloc(1, sizeof *s);
    if (!s) return kp_error_nomem(err);
    j->state_ = s;
    s->procs = procs;
    s->nprocs = nprocs;
    s->names = names;
    s->nnames = nnames;
    s->raw = raw;
    /* The ranks, ascending, then "-". */
    int *ranks = calloc(nprocs ? nprocs : 1, sizeof *ranks);
    size_t nranked = 0;
    if (!ranks) goto nomem;
    for (size_t i = 0; i < nprocs; i++)
        if (procs[i].rank >= 0) ranks[nranked++] = procs[i].rank;
    qsort(ranks, nranked, sizeof *ranks, kp_cmp_int);
    size_t distinct = 0;
    for (size_t i = 0; i < nranked; i++)
        if (!distinct || ranks[distinct - 1] != ranks[i]) ranks[distinct++] = ranks[i];
    j->nranked = distinct;
    s->nslots = distinct + 1;
    j->ranks = calloc(s->nslots, sizeof *j->ranks);
    s->slot_of = calloc(nprocs ? nprocs : 1, sizeof *s->slot_of);
    s->first = calloc(s->nslots, sizeof *s->first);
    s->last = calloc(s->nslots, sizeof *s->last);
    s->has_events = calloc(s->nslots, 1);
    s->op_of = calloc(nnames ? nnames : 1, 1);
    if (!j->ranks || !s->slot_of || !s->first || !s->last || !s->has_events || !s->op_of)
        goto nomem;
    for (size_t i = 0; i < s->nslots; i++) {
        j->ranks[i].rank = i < distinct ? ranks[i] : -1;
        j->ranks[i].local_rank = -2; /* not yet said */
        j->ranks[i].host = "";
        j->ranks[i].boot_id = "";
        j->ranks[i].host_tag = "";
    }
    free(ranks);
    ranks = NULL;
    /* Each process into its rank: pids, local rank, host, span. */
    kp_job_pid *pids = calloc(nprocs ? nprocs : 1, sizeof *pids);
    kp_job_host *hosts = calloc(nprocs ? nprocs : 1, sizeof *hosts);
    s->host_of = calloc(nprocs ? nprocs : 1, sizeof *s->host_of);
    s->hosts = calloc(nprocs ? nprocs : 1, sizeof *s->hosts);
    size_t nhosts = 0;
    if (!pids || !hosts || !s->host_of || !s->hosts) {
        free(pids);
        free(hosts);
        goto nomem;
    }
    for (size_t i = 0; i < nprocs; i++) {
        const kp_trace_process *p = &procs[i];
        size_t slot = distinct; /* "-" */
        if (p->rank >= 0) {
            size_t lo = 0, hi = distinct;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (j->ranks[mid].rank < p->rank)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            slot = lo;
            if (!*j->launcher && p->launcher && *p->launcher) j->launcher = p->launcher;
        }
        s->slot_of[i] = (uint32_t)slot;
        kp_job_rank *r = &j->ranks[slot];
        pids[i] = (kp_job_pid){(uint32_t)slot, p->pid};
        r->npids++; /* for now: the processes */
        if (r->local_rank == -2)
            r->local_rank = p->local_rank;
        else if (r->local_rank != p->local_rank)
            r->local_rank = -1;
        if (p->start_ns > 0 && (!r->start_ns || p->start_ns < r->start_ns))
            r->start_ns = p->start_ns;
        if (p->ended && p->end_ns > r->end_ns) r->end_ns = p->end_ns;
        if (p->boot_id && *p->boot_id)
            hosts[nhosts++] = (kp_job_host){1, p->boot_id, i};
        else if (p->host && *p->host)
            hosts[nhosts++] = (kp_job_host){0, p->host, i};
    }
    /* Each rank's pids, each once, ascending. */
    qsort(pids, nprocs, sizeof *pids, kp_cmp_pid);
    for (size_t i = 0; i < s->nslots; i++) {
        kp_job_rank *r = &j->ranks[i];
        if (r->npids && !(r->pids = malloc(r->npids * sizeof *r->pids))) {
            free(pids);
            free(hosts);
            goto nomem;
        }
        r->npids = 0;
    }
    for (size_t i = 0; i < nprocs; i++) {
        kp_job_rank *r = &j->ranks[pids[i].slot];
        if (!r->npids || r->pids[r->npids - 1] != pids[i].pid) r->pids[r->npids++] = pids[i].pid;
    }
    free(pids);
    /* The hosts (boots; names where no boot is known), each once; every process's host by its
     * id; the name of a boot its first process's that says one. */
    qsort(hosts, nhosts, sizeof *hosts, kp_cmp_host);
    for (size_t i = 0; i < nhosts; i++) {
        const kp_trace_process *p = &procs[hosts[i].index];
        const char *name = p->host ? p->host : "";
        if (!i || hosts[i].by_boot != hosts[i - 1].by_boot ||
            strcmp(hosts[i].key, hosts[i - 1].key) != 0)
            s->hosts[j->nhosts++] =
                (kp_job_hostinfo){.name = name, .boot = hosts[i].by_boot ? hosts[i].key : ""};
        else if (!*s->hosts[j->nhosts - 1].name)
            s->hosts[j->nhosts - 1].name = name;
        s->host_of[hosts[i].index] = (uint32_t)j->nhosts;
    }
    free(hosts);
    if (kp_job_host_tags(s->hosts, j->nhosts) != KPROF_OK) goto nomem;
    /* Each rank's host: its first process's that is known. */
    for (size_t i = 0; i < nprocs; i++) {
        kp_job_rank *r = &j->ranks[s->slot_of[i]];
        uint32_t h = s->host_of[i];
        if (!*r->host && !*r->boot_id && h) {
            r->host = s->hosts[h - 1].name;
            r->boot_id = s->hosts[h - 1].boot;
            r->host_tag = s->hosts[h - 1].tag;
        }
    }
    for (size_t i = 0; i < s->nslots; i++)
        if (j->ranks[i].local_rank == -2) j->ranks[i].local_rank = -1;
    j->nranks = s->nslots;
    for (size_t id = 0; id < nnames; id++)
        s->op_of[id] = (unsigned char)kp_collective_classify(names[id]);
    return KPROF_OK;
nomem:
    free(ranks);
    kp_trace_job_free(j);
    return kp_error_nomem(err);
}

/* The index in procs of process row `process`, or nprocs. */
static size_t kp_job_process_index(kp_job_state *s, int64_t process)
{
    if (s->have_process && s->last_process == process) return s->last_index;
    size_t lo = 0, hi = s->nprocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->procs[mid].id < process)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t index = lo < s->nprocs && s->procs[lo].id == process ? lo : s->nprocs;
    s->have_process = 1;
    s->last_process = process;
    s->last_index = index;
    return index;
}

/* The slot of the device (the process's host, number) into *slot. KPROF_OK, or KPROF_NOMEM. */
static kprof_status kp_job_device_slot(kp_trace_job *j, kp_job_state *s, size_t index,
                                       uint32_t number, uint32_t *slot)
{
    uint32_t host = index < s->nprocs ? s->host_of[index] : 0;
    if (s->have_device && s->device_host == host && s->device_number == number) {
        *slot = s->device_slot;
        return KPROF_OK;
    }
    uint32_t d = (uint32_t)j->ndevices;
    int found;
    if (kp_job_map_get_or_put(&s->device_of, (uint64_t)host << 32 | number, &d, &found) != KPROF_OK)
        return KPROF_NOMEM;
    if (!found) {
        if (kp_job_grow((void **)&j->devices, &s->capdevices, j->ndevices, sizeof *j->devices) !=
            KPROF_OK)
            return KPROF_NOMEM;
        memset(&j->devices[d], 0, sizeof j->devices[d]);
        j->devices[d].host = host ? s->hosts[host - 1].name : "";
        j->devices[d].boot_id = host ? s->hosts[host - 1].boot : "";
        j->devices[d].host_tag = host ? s->hosts[host - 1].tag : "";
        j->devices[d].device = number;
        j->ndevices++;
    }
    s->have_device = 1;
    s->device_host = host;
    s->device_number = number;
    s->device_slot = d;
    *slot = d;
    return KPROF_OK;
}

static kprof_status kp_job_mark_add(kp_job_mark **v, size_t *n, size_t *cap, kp_job_mark m)
{
    if (kp_job_grow((void **)v, cap, *n, sizeof **v) != KPROF_OK) return KPROF_NOMEM;
    (*v)[(*n)++] = m;
    return KPROF_OK;
}

/* kp_trace_job_add without its err: KPROF_OK, or KPROF_NOMEM. */
static kprof_status kp_job_add(kp_trace_job *j, const kp_trace_event *ev, unsigned call_flags)
{
    kp_job_state *s = j->state_;
    const kp_event *e = &ev->e;
    size_t index = kp_job_process_index(s, e->process);
    uint32_t slot = index < s->nprocs ? s->slot_of[index] : (uint32_t)(s->nslots - 1);
    kp_job_rank *r = &j->ranks[slot];
    if (!s->has_events[slot] || e->start_ns < s->first[slot]) s->first[slot] = e->start_ns;
    if (!s->has_events[slot] || e->end_ns > s->last[slot]) s->last[slot] = e->end_ns;
    s->has_events[slot] = 1;
    int64_t d = kp_job_len(e->end_ns, e->start_ns);
    switch (e->kind) {
    case KP_EVENT_API:
        if (s->raw || !(call_flags & KP_HOST_CALL_POLLING))
            r->host_api_ns = kp_i64_add_sat(r->host_api_ns, d);
        return KPROF_OK;
    case KP_EVENT_KERNEL:
    case KP_EVENT_MEMCPY:
    case KP_EVENT_MEMSET: {
        uint32_t dslot;
        if (kp_job_device_slot(j, s, index, e->device, &dslot) != KPROF_OK) return KPROF_NOMEM;
        kp_job_device *dev = &j->devices[dslot];
        kp_collective_op op = e->kind == KP_EVENT_KERNEL && e->name < s->nnames
                                  ? (kp_collective_op)s->op_of[e->name]
                                  : KP_COLLECTIVE_NONE;
        if (e->kind == KP_EVENT_MEMCPY) {
            r->copies++;
            dev->copies++;
        } else if (e->kind == KP_EVENT_MEMSET) {
            r->fills++;
            dev->fills++;
        } else if (op != KP_COLLECTIVE_NONE) {
            r->collectives++;
            dev->collectives++;
        } else {
            r->kernels++;
            dev->kernels++;
        }
        if (!s->have_pair || s->pair_rank != slot || s->pair_device != dslot) {
            uint32_t none = 0;
            int found;
            if (kp_job_map_get_or_put(&s->pairs, (uint64_t)slot << 32 | dslot, &none, &found) !=
                KPROF_OK)
                return KPROF_NOMEM;
            s->have_pair = 1;
            s->pair_rank = slot;
            s->pair_device = dslot;
        }
        if (kp_job_grow((void **)&s->ops, &s->capops, s->nops, sizeof *s->ops) != KPROF_OK)
            return KPROF_NOMEM;
        s->ops[s->nops++] =
            (kp_job_op){e->start_ns, e->end_ns, slot,
                        dslot | (op != KP_COLLECTIVE_NONE ? KP_JOB_COLLECTIVE_BIT : 0)};
        if (op != KP_COLLECTIVE_NONE && slot < j->nranked) {
            int64_t launch = (ev->has & KP_TRACE_HAS_LAUNCH) ? ev->launch_start_ns : e->start_ns;
            return kp_job_mark_add(&s->colls, &s->ncolls, &s->capcolls,
                                   (kp_job_mark){e->start_ns, e->end_ns, launch, e->name, slot});
        }
        return KPROF_OK;
    }
    case KP_EVENT_RANGE:
        if (slot >= j->nranked || !e->name) return KPROF_OK;
        return kp_job_mark_add(&s->ranges, &s->nranges, &s->capranges,
                               (kp_job_mark){e->start_ns, e->end_ns, e->start_ns, e->name, slot});
    default:
        return KPROF_OK;
    }
}

kprof_status kp_trace_job_add(kp_trace_job *j, const kp_trace_event *ev, unsigned call_flags,
                              kp_error *err)
{
    if (kp_job_add(j, ev, call_flags) != KPROF_OK) return kp_error_nomem(err);
    return KPROF_OK;
}

/* ---- finish: the unions ------------------------------------------------------------------- */

static int kp_cmp_op_rank(const void *x, const void *y)
{
    const kp_job_op *a = x, *b = y;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

static int kp_cmp_op_device(const void *x, const void *y)
{
    const kp_job_op *a = x, *b = y;
    uint32_t da = a->device & ~KP_JOB_COLLECTIVE_BIT, db = b->device & ~KP_JOB_COLLECTIVE_BIT;
    if (da != db) return da < db ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

/* Sort, unless already in order (a check costs one pass; device work is often in order). */
static void kp_job_sort(void *v, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
    for (size_t i = 1; i < n; i++) {
        if (cmp((char *)v + (i - 1) * sz, (char *)v + i * sz) > 0) {
            qsort(v, n, sz, cmp);
            return;
        }
    }
}

static int kp_cmp_device(const void *x, const void *y)
{
    const kp_job_device *a = x, *b = y;
    int c = strcmp(a->host, b->host);
    if (!c) c = strcmp(a->boot_id, b->boot_id);
    if (c) return c;
    return (a->device > b->device) - (a->device < b->device);
}

/* The unions, rank by rank and device by device; the devices in their order, with their
 * ranks' numbers. */
static kprof_status kp_job_unions(kp_trace_job *j, kp_job_state *s)
{
    kp_job_sort(s->ops, s->nops, sizeof *s->ops, kp_cmp_op_rank);
    for (size_t i = 0; i < s->nops;) {
        uint32_t slot = s->ops[i].rank;
        kp_busy all = {0}, coll = {0};
        for (; i < s->nops && s->ops[i].rank == slot; i++) {
            kp_busy_add(&all, s->ops[i].start, s->ops[i].end);
            if (s->ops[i].device & KP_JOB_COLLECTIVE_BIT)
                kp_busy_add(&coll, s->ops[i].start, s->ops[i].end);
        }
        j->ranks[slot].gpu_busy_ns = kp_busy_ns(&all);
        j->ranks[slot].collective_ns = kp_busy_ns(&coll);
    }
    kp_job_sort(s->ops, s->nops, sizeof *s->ops, kp_cmp_op_device);
    for (size_t i = 0; i < s->nops;) {
        uint32_t d = s->ops[i].device & ~KP_JOB_COLLECTIVE_BIT;
        kp_busy all = {0}, coll = {0};
        for (; i < s->nops && (s->ops[i].device & ~KP_JOB_COLLECTIVE_BIT) == d; i++) {
            kp_busy_add(&all, s->ops[i].start, s->ops[i].end);
            if (s->ops[i].device & KP_JOB_COLLECTIVE_BIT)
                kp_busy_add(&coll, s->ops[i].start, s->ops[i].end);
        }
        j->devices[d].gpu_busy_ns = kp_busy_ns(&all);
        j->devices[d].collective_ns = kp_busy_ns(&coll);
    }
    /* Which rank's work ran on which device: each rank's device numbers, each device's ranks
     * (in slot order: ascending ranks, "-" last). */
    kp_job_pair *pairs = malloc((s->pairs.n ? s->pairs.n : 1) * sizeof *pairs);
    if (!pairs) return KPROF_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < s->pairs.cap; i++) {
        if (!s->pairs.used[i]) continue;
        uint32_t rank = (uint32_t)(s->pairs.keys[i] >> 32), device = (uint32_t)s->pairs.keys[i];
        pairs[n++] = (kp_job_pair){rank, device, j->devices[device].device};
    }
    qsort(pairs, n, sizeof *pairs, kp_cmp_pair_rank);
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k < n && pairs[k].rank == pairs[i].rank)
            k++;
        kp_job_rank *r = &j->ranks[pairs[i].rank];
        if (!(r->gpus = malloc((k - i) * sizeof *r->gpus))) goto nomem;
        for (; i < k; i++)
            if (!r->ngpus || r->gpus[r->ngpus - 1] != pairs[i].number)
                r->gpus[r->ngpus++] = pairs[i].number;
    }
    qsort(pairs, n, sizeof *pairs, kp_cmp_pair_device);
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k < n && pairs[k].device == pairs[i].device)
            k++;
        kp_job_device *dev = &j->devices[pairs[i].device];
        if (!(dev->ranks = malloc((k - i) * sizeof *dev->ranks))) goto nomem;
        for (; i < k; i++)
            dev->ranks[dev->nranks++] = j->ranks[pairs[i].rank].rank;
    }
    free(pairs);
    /* The ops' device slots are done with: the devices may move. */
    if (j->ndevices > 1) qsort(j->devices, j->ndevices, sizeof *j->devices, kp_cmp_device);
    return KPROF_OK;
nomem:
    free(pairs);
    return KPROF_NOMEM;
}

/* ---- finish: the stragglers --------------------------------------------------------------- */

#define KP_JOB_OVERLAP_RANKS 64 /* ranks whose step times fit on the stack */

typedef struct kp_job_steps_acc {
    kp_job_step *steps;
    size_t n, cap;
    int64_t *waits; /* n × ranks */
    size_t capwaits;
} kp_job_steps_acc;

static int kp_cmp_mark_name(const void *x, const void *y)
{
    const kp_job_mark *a = x, *b = y;
    if (a->name != b->name) return a->name < b->name ? -1 : 1;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

static int kp_cmp_mark_launch(const void *x, const void *y)
{
    const kp_job_mark *a = x, *b = y;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    if (a->launch != b->launch) return a->launch < b->launch ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

/* Whether some rank was still in the step (at[i] .. end[i]) when the last rank arrived (the
 * latest at): else nobody waited for it. A step whose ranks ran one after another has no wait to
 * measure: the time between their starts is not one rank waiting for another. (Not every rank:
 * a rooted collective's root can finish before a late peer joins, and waits no longer than it
 * ran.) */
static int kp_job_step_overlaps(size_t nranks, const int64_t *at, const int64_t *end)
{
    size_t last = 0;
    for (size_t i = 1; i < nranks; i++)
        if (at[i] > at[last]) last = i;
    for (size_t i = 0; i < nranks; i++)
        if (i != last && end[i] > at[last]) return 1;
    return 0;
}

/* One step: marks[i] points at rank i's m marks (its collectives in the step, in order, or its
 * one range); spans[i], where given, at rank i's range of the step (else the step is its
 * marks). KPROF_OK, *apart 0: added; *apart 1: not added, its ranks never in it at one time
 * (kp_job_step_overlaps); KPROF_NOMEM. */
static kprof_status kp_job_step_add(kp_job_steps_acc *acc, size_t nranks,
                                    const kp_job_mark *const *marks,
                                    const kp_job_mark *const *spans, size_t m, uint64_t index,
                                    const unsigned char *op_of, size_t nnames, int collectives,
                                    int *apart)
{
    *apart = 0;
    int64_t at[KP_JOB_OVERLAP_RANKS], end[KP_JOB_OVERLAP_RANKS];
    int64_t *at_ = nranks <= KP_JOB_OVERLAP_RANKS ? at : malloc(2 * nranks * sizeof *at_);
    if (!at_) return KPROF_NOMEM;
    int64_t *end_ = at_ == at ? end : at_ + nranks;
    for (size_t i = 0; i < nranks; i++) {
        at_[i] = spans ? spans[i]->start : marks[i][0].start;
        end_[i] = spans ? spans[i]->end : marks[i][0].end;
        for (size_t k = 1; !spans && k < m; k++)
            if (marks[i][k].end > end_[i]) end_[i] = marks[i][k].end;
    }
    int overlaps = kp_job_step_overlaps(nranks, at_, end_);
    if (at_ != at) free(at_);
    if (!overlaps) {
        *apart = 1;
        return KPROF_OK;
    }
    if (kp_job_grow((void **)&acc->steps, &acc->cap, acc->n, sizeof *acc->steps) != KPROF_OK)
        return KPROF_NOMEM;
    size_t need = (acc->n + 1) * nranks;
    if (need > acc->capwaits) {
        size_t cap = acc->capwaits ? acc->capwaits : 64;
        while (cap < need)
            cap *= 2;
        int64_t *w = realloc(acc->waits, cap * sizeof *w);
        if (!w) return KPROF_NOMEM;
        acc->waits = w;
        acc->capwaits = cap;
    }
    int64_t *waits = &acc->waits[acc->n * nranks];
    kp_job_step *st = &acc->steps[acc->n++];
    memset(st, 0, sizeof *st);
    memset(waits, 0, nranks * sizeof *waits);
    size_t last = 0;
    for (size_t i = 1; i < nranks; i++)
        if (marks[i][0].start > marks[last][0].start) last = i;
    st->index = index;
    st->name = marks[0][0].name;
    st->op =
        collectives && st->name < nnames ? (kp_collective_op)op_of[st->name] : KP_COLLECTIVE_NONE;
    st->collectives = collectives ? (uint32_t)m : 0;
    st->last_rank = (int)last; /* a slot until the caller maps it */
    st->at_ns = marks[last][0].start;
    for (size_t k = 0; k < m; k++) {
        int64_t latest = marks[0][k].start;
        for (size_t i = 1; i < nranks; i++)
            if (marks[i][k].start > latest) latest = marks[i][k].start;
        for (size_t i = 0; i < nranks; i++) {
            /* A rank waits at a collective from its kernel's start until the last rank's
             * starts, but never longer than its kernel ran: a rooted collective's root
             * (broadcast, reduce, send) can finish before a late peer joins. */
            int64_t wait = kp_ns_diff(latest, marks[i][k].start);
            int64_t ran = kp_job_len(marks[i][k].end, marks[i][k].start);
            if (wait > ran) wait = ran; /* so the waits never exceed the time timed */
            waits[i] = kp_i64_add_sat(waits[i], wait);
            st->timed_ns =
                kp_i64_add_sat(st->timed_ns, kp_job_len(marks[i][k].end, marks[i][k].start));
        }
    }
    double others = 0;
    for (size_t i = 0; i < nranks; i++)
        if (i != last) others += (double)waits[i];
    st->wait_ns = (int64_t)(others / (double)(nranks - 1));
    return KPROF_OK;
}

/* Steps by range: the name on every rank at least twice with the largest total time; its
 * steps timed by the collectives launched in each, or by the ranges themselves where the trace
 * has no collective. Leaves acc empty when no name qualifies. */
static kprof_status kp_job_by_range(kp_trace_job *j, kp_job_state *s, kp_job_steps_acc *acc)
{
    kp_job_stragglers *g = &j->stragglers;
    size_t R = j->nranked;
    if (!s->nranges) return KPROF_OK;
    qsort(s->ranges, s->nranges, sizeof *s->ranges, kp_cmp_mark_name);
    size_t *best_at = calloc(R, sizeof *best_at), *best_count = calloc(R, sizeof *best_count);
    const kp_job_mark **marks = calloc(R, sizeof *marks), **spans = calloc(R, sizeof *spans);
    size_t *next = calloc(R, sizeof *next), *end = calloc(R, sizeof *end);
    kprof_status rc = KPROF_NOMEM;
    int apart;
    if (!best_at || !best_count || !marks || !spans || !next || !end) goto done;
    /* A name's ranges are a run per rank, ascending: the name is on every rank when it has R
     * runs (no per-name pass over all the ranks). */
    uint32_t best = 0;
    int64_t best_total = -1;
    size_t best_first = 0, best_end = 0;
    for (size_t i = 0; i < s->nranges;) {
        uint32_t name = s->ranges[i].name;
        int64_t total = 0;
        size_t first = i, runs = 0;
        int twice = 1;
        while (i < s->nranges && s->ranges[i].name == name) {
            size_t run = i;
            uint32_t r = s->ranges[i].rank;
            for (; i < s->nranges && s->ranges[i].name == name && s->ranges[i].rank == r; i++)
                total = kp_i64_add_sat(total, kp_job_len(s->ranges[i].end, s->ranges[i].start));
            runs++;
            twice &= i - run >= 2;
        }
        if (runs == R && twice && total > best_total) {
            best = name;
            best_total = total;
            best_first = first;
            best_end = i;
        }
    }
    rc = KPROF_OK;
    if (best_total < 0) goto done;
    for (size_t i = best_first; i < best_end; i++) {
        uint32_t r = s->ranges[i].rank;
        if (!best_count[r]) best_at[r] = i;
        best_count[r]++;
    }
    g->steps_by = KP_JOB_STEPS_RANGE;
    g->range = best;
    g->timed_by_collectives = s->ncolls > 0;
    size_t steps = best_count[0], most = best_count[0];
    for (size_t r = 1; r < R; r++) {
        if (best_count[r] < steps) steps = best_count[r];
        if (best_count[r] > most) most = best_count[r];
    }
    g->skipped = most - steps;
    if (!g->timed_by_collectives) {
        for (size_t k = 0; k < steps; k++) {
            for (size_t r = 0; r < R; r++)
                marks[r] = &s->ranges[best_at[r] + k];
            rc = kp_job_step_add(acc, R, marks, NULL, 1, k, s->op_of, s->nnames, 0, &apart);
            if (rc != KPROF_OK) goto done;
            g->apart += apart;
        }
        goto done;
    }
    /* Each rank's collectives in order of launch: rank r's are colls[next[r] .. end[r]). */
    kp_job_sort(s->colls, s->ncolls, sizeof *s->colls, kp_cmp_mark_launch);
    for (size_t i = 0; i < s->ncolls; i++) {
        uint32_t r = s->colls[i].rank;
        if (i == 0 || s->colls[i - 1].rank != r) next[r] = i;
        end[r] = i + 1;
    }
    for (size_t k = 0; k < steps; k++) {
        size_t m = 0;
        int matched = 1;
        for (size_t r = 0; r < R; r++) {
            const kp_job_mark *range = &s->ranges[best_at[r] + k];
            while (next[r] < end[r] && s->colls[next[r]].launch < range->start)
                next[r]++;
            size_t first = next[r];
            while (next[r] < end[r] && s->colls[next[r]].launch <= range->end)
                next[r]++;
            size_t here = next[r] - first;
            marks[r] = &s->colls[first];
            if (r == 0)
                m = here;
            else if (here != m)
                matched = 0;
        }
        for (size_t c = 0; matched && c < m; c++)
            for (size_t r = 1; r < R; r++)
                if (marks[r][c].name != marks[0][c].name) matched = 0;
        if (!matched || m == 0) {
            g->unmatched++;
            continue;
        }
        for (size_t r = 0; r < R; r++)
            spans[r] = &s->ranges[best_at[r] + k];
        rc = kp_job_step_add(acc, R, marks, spans, m, k, s->op_of, s->nnames, 1, &apart);
        if (rc != KPROF_OK) goto done;
        g->apart += apart;
    }
done:
    free(best_at);
    free(best_count);
    free(marks);
    free(spans);
    free(next);
    free(end);
    return rc;
}

/* Steps by collective: the k-th kernel of one name on every rank. */
static kprof_status kp_job_by_collective(kp_trace_job *j, kp_job_state *s, kp_job_steps_acc *acc)
{
    kp_job_stragglers *g = &j->stragglers;
    size_t R = j->nranked;
    if (!s->ncolls) return KPROF_OK;
    g->steps_by = KP_JOB_STEPS_COLLECTIVE;
    g->timed_by_collectives = 1;
    qsort(s->colls, s->ncolls, sizeof *s->colls, kp_cmp_mark_name);
    size_t *count = calloc(R, sizeof *count), *at = calloc(R, sizeof *at);
    const kp_job_mark **marks = calloc(R, sizeof *marks);
    kprof_status rc = KPROF_NOMEM;
    if (!count || !at || !marks) goto done;
    rc = KPROF_OK;
    for (size_t i = 0; i < s->ncolls && rc == KPROF_OK;) {
        /* A run per rank, ascending (see kp_job_by_range): at and count are read only when
         * every rank has one. */
        uint32_t name = s->colls[i].name;
        size_t runs = 0, most = 0, steps = SIZE_MAX;
        while (i < s->ncolls && s->colls[i].name == name) {
            size_t run = i;
            uint32_t r = s->colls[i].rank;
            while (i < s->ncolls && s->colls[i].name == name && s->colls[i].rank == r)
                i++;
            at[r] = run;
            count[r] = i - run;
            runs++;
            if (count[r] > most) most = count[r];
            if (count[r] < steps) steps = count[r];
        }
        if (runs < R) steps = 0;
        g->skipped += most - steps;
        for (size_t k = 0; k < steps && rc == KPROF_OK; k++) {
            for (size_t r = 0; r < R; r++)
                marks[r] = &s->colls[at[r] + k];
            int apart;
            rc = kp_job_step_add(acc, R, marks, NULL, 1, k, s->op_of, s->nnames, 1, &apart);
            g->apart += rc == KPROF_OK && apart;
        }
    }
done:
    free(count);
    free(at);
    free(marks);
    return rc;
}

static int kp_cmp_step(const void *x, const void *y)
{
    const kp_job_step *a = x, *b = y;
    if (a->at_ns != b->at_ns) return a->at_ns < b->at_ns ? -1 : 1;
    if (a->name != b->name) return a->name < b->name ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static kprof_status kp_job_stragglers_find(kp_trace_job *j, kp_job_state *s)
{
    kp_job_stragglers *g = &j->stragglers;
    size_t R = j->nranked;
    if (R < 2) return KPROF_OK;
    kp_job_steps_acc acc = {0};
    if (kp_job_by_range(j, s, &acc) != KPROF_OK) goto nomem;
    /* No range name on every rank, or none of its steps paired up (not: none overlapped; then
     * the ranks ran one after another, and their collectives did too). */
    if (acc.n == 0 && !g->apart) {
        memset(g, 0, sizeof *g);
        g->last_rank = -1;
        if (kp_job_by_collective(j, s, &acc) != KPROF_OK) goto nomem;
    }
    g->steps = acc.steps;
    g->nsteps = acc.n;
    g->waits_ = acc.waits;
    acc.steps = NULL;
    acc.waits = NULL;
    if (!g->nsteps) return KPROF_OK;
    double *waits = malloc(g->nsteps * sizeof *waits);
    if (!waits) return KPROF_NOMEM;
    int ops_seen = 0;
    for (size_t i = 0; i < g->nsteps; i++) {
        kp_job_step *st = &g->steps[i];
        st->waits = &g->waits_[i * R];
        kp_job_rank *last = &j->ranks[st->last_rank];
        last->last_at++;
        st->last_rank = last->rank;
        waits[i] = (double)st->wait_ns;
        if (st->wait_ns > g->wait_max_ns) g->wait_max_ns = st->wait_ns;
        g->timed_total_ns = kp_i64_add_sat(g->timed_total_ns, st->timed_ns);
        for (size_t r = 0; r < R; r++)
            g->wait_total_ns = kp_i64_add_sat(g->wait_total_ns, st->waits[r]);
        if (st->op != KP_COLLECTIVE_NONE) {
            if (!ops_seen)
                g->op = st->op;
            else if (g->op != st->op)
                g->op = KP_COLLECTIVE_OTHER;
            ops_seen = 1;
        }
    }
    kp_sort_doubles(waits, g->nsteps);
    g->wait_median_ns = (int64_t)kp_quantile_sorted(waits, g->nsteps, 0.5);
    free(waits);
    for (size_t r = 0; r < R; r++) {
        if (j->ranks[r].last_at > g->last_count) {
            g->last_count = j->ranks[r].last_at;
            g->last_rank = j->ranks[r].rank;
        }
    }
    qsort(g->steps, g->nsteps, sizeof *g->steps, kp_cmp_step);
    return KPROF_OK;
nomem:
    free(acc.steps);
    free(acc.waits);
    return KPROF_NOMEM;
}

kprof_status kp_trace_job_finish(kp_trace_job *j, kp_error *err)
{
    kp_job_state *s = j->state_;
    if (!s) return kp_error_set(err, KPROF_INVALID, "job: finished before kp_trace_job_begin");
    /* The spans: the processes' lives, stretched to their events. */
    for (size_t i = 0; i < s->nslots; i++) {
        kp_job_rank *r = &j->ranks[i];
        if (!s->has_events[i]) continue;
        if (!r->start_ns || s->first[i] < r->start_ns) r->start_ns = s->first[i];
        if (s->last[i] > r->end_ns) r->end_ns = s->last[i];
    }
    for (size_t i = 0; i < s->nslots; i++)
        if (j->ranks[i].end_ns < j->ranks[i].start_ns) j->ranks[i].end_ns = j->ranks[i].start_ns;
    /* "-" only when some process, or an event of no known process, is in it. */
    size_t dash = s->nslots - 1;
    if (!j->ranks[dash].npids && !s->has_events[dash]) j->nranks = dash;
    if (kp_job_unions(j, s) != KPROF_OK || kp_job_stragglers_find(j, s) != KPROF_OK)
        return kp_error_nomem(err);
    return KPROF_OK;
}

kprof_status kp_trace_job_read(kp_event_source *src, int raw, kp_trace_job *j, kp_error *err)
{
    size_t nprocs, nnames;
    const kp_trace_process *procs = kp_event_source_processes(src, &nprocs);
    const char *const *names = kp_event_source_strings(src, &nnames);
    kprof_status st = kp_trace_job_begin(j, procs, nprocs, names, nnames, raw, err);
    if (st != KPROF_OK) return st;
    unsigned char *flags = calloc(nnames ? nnames : 1, 1);
    kp_event_iter *it = NULL;
    if (!flags) goto nomem;
    for (size_t id = 0; id < nnames; id++)
        flags[id] = names[id] ? (unsigned char)kp_host_call_flags(names[id]) : 0;
    kp_event_filter filter = {.fields = KP_TRACE_JOB_FIELDS};
    if ((st = kp_event_iter_open(src, &filter, &it, err)) != KPROF_OK) goto fail;
    kp_trace_event ev;
    while (kp_event_iter_next(it, &ev))
        if ((st = kp_trace_job_add(j, &ev, ev.e.name < nnames ? flags[ev.e.name] : 0, err)) !=
            KPROF_OK)
            goto fail;
    st = kp_event_iter_close(it, err);
    it = NULL;
    if (st != KPROF_OK) goto fail;
    if ((st = kp_trace_job_finish(j, err)) != KPROF_OK) goto fail;
    free(flags);
    return KPROF_OK;
nomem:
    st = kp_error_nomem(err);
fail:
    kp_event_iter_close(it, NULL);
    free(flags);
    kp_trace_job_free(j);
    return st;
}

void kp_trace_job_free(kp_trace_job *j)
{
    kp_job_state *s = j->state_;
    size_t nslots = s ? s->nslots : j->nranks;
    for (size_t i = 0; j->ranks && i < nslots; i++) {
        free(j->ranks[i].pids);
        free(j->ranks[i].gpus);
    }
    free(j->ranks);
    for (size_t d = 0; d < j->ndevices; d++)
        free(j->devices[d].ranks);
    free(j->devices);
    free(j->stragglers.steps);
    free(j->stragglers.waits_);
    if (s) {
        free(s->slot_of);
        free(s->op_of);
        free(s->first);
        free(s->last);
        free(s->has_events);
        free(s->host_of);
        for (size_t h = 0; s->hosts && h < j->nhosts; h++)
            free(s->hosts[h].own);
        free(s->hosts);
        kp_job_map_free(&s->device_of);
        kp_job_map_free(&s->pairs);
        free(s->ops);
        free(s->colls);
        free(s->ranges);
        free(s);
    }
    memset(j, 0, sizeof *j);
}
