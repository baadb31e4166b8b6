/*
 * busy.h — how long a device was busy: the union of intervals, kept as it streams in. One
 * definition serves the verdict's timeline (core/verdict.c, which keeps every stretch) and the
 * streaming aggregate (core/aggregate.c, which keeps only the open one), so "GPU busy" means the
 * same thing in every table and verdict: intervals that overlap or touch (a start equal to the
 * previous end) are one stretch, and a stretch counts once however many operations ran in it.
 *
 * Feed intervals in ascending order of start; then the union is exact and takes O(1) memory and
 * O(1) time per interval. An interval starting before the one fed before it is counted in
 * `unordered` and merged as well as the open stretch allows: exact when it overlaps only the open
 * stretch, an over-count when it reaches back into stretches already closed.
 *
 * Header only, no allocation: zero a kp_busy to start. Not thread-safe (one writer).
 */
#ifndef KP_CORE_BUSY_H
#define KP_CORE_BUSY_H

#include <stdint.h>

typedef struct kp_busy {
    int64_t start, end; /* the open (latest) stretch; valid once stretches > 0 */
    int64_t closed_ns;  /* the stretches before it, summed (saturating) */
    uint64_t stretches; /* stretches begun */
    uint64_t unordered; /* intervals that started before the previous one */
    int64_t last_start; /* the previous interval's start */
} kp_busy;

/* What one interval did to the union. */
typedef enum kp_busy_step {
    KP_BUSY_OPENED,   /* began a new stretch (the previous one, if any, is closed for good) */
    KP_BUSY_EXTENDED, /* made the open stretch longer */
    KP_BUSY_INSIDE    /* fell inside the open stretch: the union is unchanged */
} kp_busy_step;

/* a + b for non-negative lengths, saturating at INT64_MAX (times read from files may be
 * anything). */
static inline int64_t kp_busy_add_len_(int64_t a, int64_t b)
{
    return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* end - start >= 0, saturating. */
static inline int64_t kp_busy_len_(int64_t start, int64_t end)
{
    if (end <= start) return 0;
    if (start < 0 && end > INT64_MAX + start) return INT64_MAX;
    return end - start;
}

/* Add [start, end] (an end before its start counts as an instant). */
static inline kp_busy_step kp_busy_add(kp_busy *b, int64_t start, int64_t end)
{
    if (end < start) end = start;
    if (b->stretches && start < b->last_start) b->unordered++;
    b->last_start = start;
    if (!b->stretches || start > b->end) {
        if (b->stretches)
            b->closed_ns = kp_busy_add_len_(b->closed_ns, kp_busy_len_(b->start, b->end));
        b->start = start;
        b->end = end;
        b->stretches++;
        return KP_BUSY_OPENED;
    }
    if (end < b->start) { /* unordered, wholly before the open stretch: counted on its own */
        b->closed_ns = kp_busy_add_len_(b->closed_ns, kp_busy_len_(start, end));
        return KP_BUSY_INSIDE;
    }
    kp_busy_step step = KP_BUSY_INSIDE;
    if (start < b->start) { /* unordered, reaching into the open stretch */
        b->start = start;
        step = KP_BUSY_EXTENDED;
    }
    if (end > b->end) {
        b->end = end;
        step = KP_BUSY_EXTENDED;
    }
    return step;
}

/* The union's length so far, the open stretch included. */
static inline int64_t kp_busy_ns(const kp_busy *b)
{
    return b->stretches ? kp_busy_add_len_(b->closed_ns, kp_busy_len_(b->start, b->end)) : 0;
}

#endif
