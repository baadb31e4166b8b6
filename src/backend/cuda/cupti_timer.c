/*
 * cupti_timer.c — kernel durations from CUPTI activity records (see cupti_timer.h).
 *
 * CUPTI hands full buffers to a completion callback (its own thread, or ours during a flush).
 * Kernel records are reduced to (name, start, end) in a fixed ring under a mutex; everything
 * else is ignored. CUPTI asks for buffers whenever one fills or is flushed, possibly on the
 * dispatching thread: a drained buffer is kept for the next request, so steady timing
 * allocates nothing.
 */
#include "backend/cuda/cupti_timer.h"
#include "base/env.h"
#include "base/util.h"
#include "runtime/cupti_api.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_CUPTI_BUFFER_BYTES (4u << 20)
#define KP_CUPTI_RING         65536

typedef struct kp_cupti_kernel {
    char name[128];
    uint64_t start, end;
} kp_cupti_kernel;

static struct {
    pthread_mutex_t lock;
    kp_cupti_kernel ring[KP_CUPTI_RING];
    uint64_t head;    /* records written */
    uint64_t tail;    /* records taken */
    uint64_t dropped; /* lost to a full ring or reported by CUPTI */
} kp_ct = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Atomic(uint8_t *) kp_ct_spare; /* one drained buffer, for the next request */

static void CUPTIAPI kp_ct_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    void *p = atomic_exchange(&kp_ct_spare, NULL);
    if (!p && posix_memalign(&p, 8, KP_CUPTI_BUFFER_BYTES) != 0) p = NULL;
    *buffer = p;
    *size = p ? KP_CUPTI_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI kp_ct_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                    size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&kp_ct.lock);
    while (kp_cupti.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        if (k->start == 0 && k->end == 0) continue;
        if (kp_ct.head - kp_ct.tail >= KP_CUPTI_RING) {
            kp_ct.dropped++;
            continue;
        }
        kp_cupti_kernel *e = &kp_ct.ring[kp_ct.head % KP_CUPTI_RING];
        snprintf(e->name, sizeof e->name, "%s", k->name ? k->name : "");
        e->start = k->start;
        e->end = k->end;
        kp_ct.head++;
    }
    size_t lost = 0;
    if (kp_cupti.cuptiActivityGetNumDroppedRecords(NULL, 0, &lost) == CUPTI_SUCCESS)
        kp_ct.dropped += lost;
    pthread_mutex_unlock(&kp_ct.lock);
    uint8_t *none = NULL;
    if (!atomic_compare_exchange_strong(&kp_ct_spare, &none, buffer)) free(buffer);
}

static pthread_once_t kp_ct_once = PTHREAD_ONCE_INIT;
static int64_t kp_ct_clock_offset; /* CUPTI's clock − kprof's, where CUPTI refused kp_now_ns */
static int kp_ct_status = -1;
static char kp_ct_why[512];
static int kp_ct_kind = -1; /* the kind enabled: 1 concurrent, 0 serial, -1 none */

static void kp_ct_load_once(void)
{
    kp_error why = {0};
    if (kp_cupti_load(&why) != KPROF_OK) {
        kp_strlcpy(kp_ct_why, why.message, sizeof kp_ct_why);
        kp_error_clear(&why);
        return;
    }
    /* Records on kprof's clock, as the CUDA collector has them (inject/cuda_inject.c); else
     * CUPTI's own clock, moved by the distance measured now. */
    if (kp_cupti.cuptiActivityRegisterTimestampCallback(kp_now_ns) != CUPTI_SUCCESS) {
        uint64_t cupti_now = 0;
        if (kp_cupti.cuptiGetTimestamp(&cupti_now) == CUPTI_SUCCESS && cupti_now)
            kp_ct_clock_offset = (int64_t)(cupti_now - kp_now_ns());
    }
    CUptiResult r = kp_cupti.cuptiActivityRegisterCallbacks(kp_ct_request, kp_ct_complete);
    if (r != CUPTI_SUCCESS) {
        snprintf(kp_ct_why, sizeof kp_ct_why, "cuptiActivityRegisterCallbacks: %s",
                 kp_cupti_result_text(r));
        return;
    }
    kp_ct_status = 0;
}

const char *kp_cupti_timer_kind(void)
{
    return kp_ct_kind == 1 ? "concurrent" : "serial";
}

static const CUpti_ActivityKind kp_ct_kinds[2] = {CUPTI_ACTIVITY_KIND_KERNEL,
                                                  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};

void kp_cupti_timer_disable(void)
{
    if (kp_ct_status != 0 || kp_ct_kind < 0) return;
    kp_cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    kp_cupti.cuptiActivityDisable(kp_ct_kinds[kp_ct_kind]);
    kp_ct_kind = -1;
}

kprof_status kp_cupti_timer_enable(int concurrent, kp_error *err)
{
    pthread_once(&kp_ct_once, kp_ct_load_once);
    if (kp_ct_status != 0) return kp_error_set(err, KPROF_UNAVAILABLE, "%s", kp_ct_why);
    const char *forced = getenv(KP_ENV_CUPTI_KIND);
    if (forced && strcmp(forced, "serial") == 0) concurrent = 0;
    if (forced && strcmp(forced, "concurrent") == 0) concurrent = 1;
    if (kp_ct_kind == concurrent) return KPROF_OK;
    kp_cupti_timer_disable();
    CUptiResult r = kp_cupti.cuptiActivityEnable(kp_ct_kinds[concurrent]);
    if (r != CUPTI_SUCCESS)
        return kp_error_set(err, KPROF_UNAVAILABLE, "cuptiActivityEnable(%s kernel records): %s%s",
                            concurrent ? "concurrent" : "serial", kp_cupti_result_text(r),
                            r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                                ? " (another profiler such as Nsight holds CUPTI)"
                                : "");
    kp_ct_kind = concurrent;
    return KPROF_OK;
}
int kp_cupti_timer_take(const char *symbol, double *ns, uint64_t *start, int max, uint64_t *dropped)
{
    if (kp_ct_status != 0) return 0;
    kp_cupti.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    int n = 0;
    pthread_mutex_lock(&kp_ct.lock);
    /* Kernel names are truncated in the ring at 127 bytes; compare that much. */
    size_t cmp = strlen(symbol) < 127 ? strlen(symbol) + 1 : 127;
    for (; kp_ct.tail < kp_ct.head; kp_ct.tail++) {
        const kp_cupti_kernel *e = &kp_ct.ring[kp_ct.tail % KP_CUPTI_RING];
        if (strncmp(e->name, symbol, cmp) != 0) continue;
        if (n >= max) continue;
        if (start) start[n] = e->start - (uint64_t)kp_ct_clock_offset;
        ns[n++] = (double)(e->end - e->start);
    }
    if (dropped) *dropped = kp_ct.dropped;
    kp_ct.dropped = 0;
    pthread_mutex_unlock(&kp_ct.lock);
    return n;
}
