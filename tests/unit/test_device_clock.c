/* test_device_clock.c — a device clock mapped onto the host's (core/clock_offset.h's
 * kp_device_clock: the rule of `kprof trace`'s OpenCL layer and the lab's OpenCL backend) and a
 * dispatch's span (backend.h), on synthetic numbers: the first operation lines its QUEUED up with
 * the start of its enqueue call; a later one whose QUEUED would fall before its call began moves
 * the offset later, one whose QUEUED would fall after the call returned moves it earlier, each by
 * the least amount; START stands in for a QUEUED the device does not give; offsets wrap (a device
 * clock ahead of the host's); stamps keep their distances, so a duration is the device's; a span
 * lasts exactly its duration, rounded to the nanosecond. */
#include "backend/backend.h"
#include "core/clock_offset.h"
#include "test.h"

#include <stdint.h>

/* The device counts from its own zero: host = device + 5 s, and drifts +20 ppm. */
static uint64_t device_at(uint64_t host_ns, uint64_t host0)
{
    uint64_t since = host_ns - host0;
    return (host0 - 5000000000ull) + since + since / 50000;
}

static void test_offset_rule(void)
{
    kp_device_clock c = {0};
    const uint64_t host0 = 100000000000ull; /* 100 s */
    /* The first enqueue is slow (40 us): the device stamps QUEUED 30 us into it. */
    uint64_t enq = host0, ret = host0 + 40000, queued = device_at(host0 + 30000, host0);
    uint64_t start = queued + 5000, end = start + 12345;
    kp_device_clock_observe(&c, enq, ret, queued, start);
    CHECK_INT(c.have, 1);
    CHECK_INT(kp_device_clock_map(&c, queued), enq); /* QUEUED at the call's start */
    CHECK_INT(kp_device_clock_map(&c, end) - kp_device_clock_map(&c, start), 12345);
    uint64_t first = c.offset;

    /* A later, fast call (2 us) whose QUEUED lies inside it under the offset: nothing moves. */
    enq = host0 + 1000000;
    queued = enq + 1000 - first; /* 1 us into the call, as mapped */
    kp_device_clock_observe(&c, enq, enq + 2000, queued, queued + 100);
    CHECK_INT(c.offset, first);

    /* One whose QUEUED would fall before its call began: the offset moves later, just so. */
    enq = host0 + 2000000;
    queued = enq - 300 - first; /* 300 ns before the call, as mapped */
    kp_device_clock_observe(&c, enq, enq + 2000, queued, queued + 100);
    CHECK_INT(c.offset - first, 300);
    CHECK_INT(kp_device_clock_map(&c, queued), enq);
    uint64_t later = c.offset;

    /* One whose QUEUED would fall after its call returned: earlier, to the return, no more. */
    enq = host0 + 3000000;
    queued = enq + 2500 - later; /* 500 ns after a 2 us call returned */
    kp_device_clock_observe(&c, enq, enq + 2000, queued, queued + 100);
    CHECK_INT(later - c.offset, 500);
    CHECK_INT(kp_device_clock_map(&c, queued), enq + 2000);

    /* No QUEUED: START is the anchor (it cannot come before the call began). */
    kp_device_clock s = {0};
    kp_device_clock_observe(&s, 7000, 9000, 0, 123);
    CHECK_INT(kp_device_clock_map(&s, 123), 7000);
    kp_device_clock_observe(&s, 20000, 21000, 0, 123 + 12000); /* START would be 1 us early */
    CHECK_INT(kp_device_clock_map(&s, 123 + 12000), 20000);
    CHECK_INT(kp_device_clock_map(&s, 0), 0); /* a stamp not given stays not given */
}

/* A device clock ahead of the host's: the offset is negative, held modulo 2^64. */
static void test_wraps(void)
{
    kp_device_clock c = {0};
    uint64_t device = 0xFFFFFFFF00000000ull, host = 5000000000ull;
    kp_device_clock_observe(&c, host, host + 1000, device, device + 10);
    CHECK_INT(kp_device_clock_map(&c, device), host);
    CHECK_INT(kp_device_clock_map(&c, device + 777777) - host, 777777);
}

static void test_span(void)
{
    kp_dispatch_span s = kp_dispatch_span_at(1000, 18372.0);
    CHECK_INT(s.start_ns, 1000);
    CHECK_INT(s.end_ns - s.start_ns, 18372);
    s = kp_dispatch_span_at(1000, 2047.5); /* CUDA events' fractions: to the nearest ns */
    CHECK_INT(s.end_ns - s.start_ns, 2048);
    s = kp_dispatch_span_at(1000, 2047.4);
    CHECK_INT(s.end_ns - s.start_ns, 2047);
    /* A sample in ms, as the lab keeps it, comes back to the span's duration exactly. */
    for (int64_t ns = 1; ns < 100000000; ns = ns * 3 + 7) {
        double ms = (double)ns / 1e6;
        CHECK_INT(kp_dispatch_span_at(0, ms * 1e6).end_ns, ns);
    }
}

int main(void)
{
    test_offset_rule();
    test_wraps();
    test_span();
    TEST_DONE();
}
