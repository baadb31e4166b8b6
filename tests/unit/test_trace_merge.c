/* test_trace_merge.c — the clock estimate of `kprof merge` (store/trace_merge.h): a host's
 * REALTIME − MONOTONIC offset is the middle of its pairs' range, known within the worst pair's
 * uncertainty plus half that range; pairs that cannot be one are left out; nothing wraps; the
 * shift between two hosts is the difference of their offsets, known within the sum. */
#include "store/trace_merge.h"
#include "test.h"

#include <stdint.h>

static void test_none(void)
{
    kp_clock_offset o;
    CHECK_INT(kp_clock_offset_estimate(NULL, 0, &o), -1);
    CHECK_INT(o.pairs, 0);
    kp_clock_pair unread[] = {{1000, 0, 5}, {2000, -7, 5}, {3000, 5000, -1}};
    CHECK_INT(kp_clock_offset_estimate(unread, 3, &o), -1); /* real 0 or negative; u < 0 */
    CHECK_INT(o.pairs, 0);
    CHECK_INT(o.offset_ns, 0);
}

static void test_one_pair(void)
{
    kp_clock_pair p = {.mono_ns = 5000000000, .real_ns = 1700000000123456789, .uncertainty_ns = 40};
    kp_clock_offset o;
    CHECK_INT(kp_clock_offset_estimate(&p, 1, &o), 0);
    CHECK_INT(o.pairs, 1);
    CHECK_INT(o.offset_ns, 1700000000123456789 - 5000000000);
    CHECK_INT(o.spread_ns, 0);
    CHECK_INT(o.uncertainty_ns, 40);
}

static void test_spread(void)
{
    /* Three pairs whose offsets are 1000, 1100 and 1201 (a clock slewed during the run): the
     * middle of 1000..1201 (1100, rounded down), within the worst pair's 9 plus half of 201
     * rounded up (101). Every pair lies within that of the estimate. */
    kp_clock_pair p[] = {{100, 1100, 5}, {200, 1300, 9}, {300, 1501, 3}, {400, 0, 1000000}};
    kp_clock_offset o;
    CHECK_INT(kp_clock_offset_estimate(p, 4, &o), 0);
    CHECK_INT(o.pairs, 3); /* the unread one left out, its uncertainty too */
    CHECK_INT(o.spread_ns, 201);
    CHECK_INT(o.offset_ns, 1100);
    CHECK_INT(o.uncertainty_ns, 9 + 101);
    for (int i = 0; i < 3; i++) {
        int64_t d = p[i].real_ns - p[i].mono_ns;
        CHECK(d - o.offset_ns <= o.uncertainty_ns && o.offset_ns - d <= o.uncertainty_ns);
    }
    /* Order does not matter. */
    kp_clock_pair r[] = {p[2], p[0], p[1]};
    kp_clock_offset o2;
    CHECK_INT(kp_clock_offset_estimate(r, 3, &o2), 0);
    CHECK_INT(o2.offset_ns, o.offset_ns);
    CHECK_INT(o2.uncertainty_ns, o.uncertainty_ns);
}

static void test_no_wrap(void)
{
    /* A difference beyond int64 (an edited file) is no pair; a range beyond it saturates. */
    kp_clock_pair bad[] = {{-INT64_MAX, INT64_MAX, 1}, {10, 20, 1}};
    kp_clock_offset o;
    CHECK_INT(kp_clock_offset_estimate(bad, 2, &o), 0);
    CHECK_INT(o.pairs, 1);
    CHECK_INT(o.offset_ns, 10);
    kp_clock_pair far[] = {{INT64_MAX - 1, 1, 0}, {-(INT64_MAX / 2), INT64_MAX / 2, INT64_MAX}};
    CHECK_INT(kp_clock_offset_estimate(far, 2, &o), 0);
    CHECK_INT(o.pairs, 2);
    CHECK_INT(o.spread_ns, INT64_MAX);
    CHECK_INT(o.uncertainty_ns, INT64_MAX);
}

static void test_shift(void)
{
    /* Host B's monotonic clock is 12.345678901 s behind A's, REALTIME the same: B's offset is
     * larger by that, and B's times move forward by it. */
    kp_clock_pair a[] = {{1000000000, 1700000000000000000, 20},
                         {2000000000, 1700000001000000000, 30}};
    kp_clock_pair b[2];
    for (int i = 0; i < 2; i++)
        b[i] = (kp_clock_pair){a[i].mono_ns - 12345678901, a[i].real_ns, a[i].uncertainty_ns};
    kp_clock_offset oa, ob;
    CHECK_INT(kp_clock_offset_estimate(a, 2, &oa), 0);
    CHECK_INT(kp_clock_offset_estimate(b, 2, &ob), 0);
    int64_t u = -1;
    CHECK_INT(kp_clock_offset_shift(&ob, &oa, &u), 12345678901);
    CHECK_INT(u, 60);
    CHECK_INT(kp_clock_offset_shift(&oa, &ob, NULL), -12345678901);
    CHECK_INT(kp_clock_offset_shift(&oa, &oa, &u), 0);
    /* Saturating, not wrapping. */
    kp_clock_offset hi = {.offset_ns = INT64_MAX, .uncertainty_ns = INT64_MAX};
    kp_clock_offset lo = {.offset_ns = INT64_MIN + 1, .uncertainty_ns = 5};
    CHECK_INT(kp_clock_offset_shift(&hi, &lo, &u), INT64_MAX);
    CHECK_INT(u, INT64_MAX);
}

int main(void)
{
    test_none();
    test_one_pair();
    test_spread();
    test_no_wrap();
    test_shift();
    TEST_DONE();
}
