/* test_lab_clock.c — the clock readings (lab/clock.c): the throttle reasons in words, and a
 * reading through NVML. Run three ways (tests/CMakeLists.txt):
 *   test_lab_clock fake      KPROF_NVML_LIBRARY = tests/programs/fake_nvml.c's library: the
 *                            numbers it gives, the fallbacks, a device it does not know
 *   test_lab_clock noinit    the same library, its nvmlInit failing: the reason kept
 *   test_lab_clock missing   KPROF_NVML_LIBRARY naming no file: the reason kept
 * (An OpenCL session's reading: test_lab_opencl.c; a real GPU's: lab_sample_cuda.c.) */
#include "lab/lab.h"
#include "test.h"

#include <stdlib.h>

static void test_reasons_text(void)
{
    char buf[256];
    kp_clock_reasons_text(0, buf, sizeof buf);
    CHECK_STR(buf, "");
    kp_clock_reasons_text(0x1 | 0x2, buf, sizeof buf); /* idle, applications clocks: left out */
    CHECK_STR(buf, "");
    kp_clock_reasons_text(0x4 | 0x8, buf, sizeof buf);
    CHECK_STR(buf, "sw power cap, hw slowdown");
    kp_clock_reasons_text(0x1 | 0x20 | 0x40 | 0x80, buf, sizeof buf);
    CHECK_STR(buf, "sw thermal slowdown, hw thermal slowdown, hw power brake slowdown");
    kp_clock_reasons_text(0x10 | 0x100 | 0x200 | 0x400, buf, sizeof buf);
    CHECK_STR(buf, "sync boost, display clock setting, board limit, reliability");
    kp_clock_reasons_text(0x4 | 0x800 | 0x1000, buf, sizeof buf);
    CHECK_STR(buf, "sw power cap, other 0x1800");
    kp_clock_reasons_text(0x1800, buf, sizeof buf);
    CHECK_STR(buf, "other 0x1800");
    /* Cut to the buffer, still a string. */
    char small[8];
    kp_clock_reasons_text(0x4 | 0x8, small, sizeof small);
    CHECK_INT(strlen(small) < sizeof small, 1);
    CHECK_INT(strncmp(small, "sw powe", 7), 0);
}

static void test_no_bus_id(void)
{
    kp_clock_reading r;
    kp_clock_read_pci("", &r);
    CHECK_INT(r.have, 0);
    CHECK_CONTAINS(r.why_not, "no PCI bus id");
}

static void test_fake(void)
{
    kp_clock_reading r;
    kp_clock_read_pci("0000:3B:00.0", &r);
    CHECK_INT(r.have, 1);
    CHECK_NEAR(r.sm_mhz, 1410, 0);
    CHECK_NEAR(r.default_mhz, 1755, 0); /* the applications clock, not the maximum */
    CHECK_INT(r.reasons, 0x5);          /* through nvmlDeviceGetCurrentClocksEventReasons */
    CHECK_STR(r.why_not, "");

    setenv("FAKE_NVML_MODE", "old", 1);
    kp_clock_read_pci("0000:3B:00.0", &r);
    CHECK_INT(r.have, 1);
    CHECK_NEAR(r.default_mhz, 1980, 0); /* no applications clock: the maximum */
    CHECK_INT(r.reasons, 0x8);          /* the old name */
    unsetenv("FAKE_NVML_MODE");

    kp_clock_read_pci("0000:AA:00.0", &r);
    CHECK_INT(r.have, 0);
    CHECK_CONTAINS(r.why_not, "NVML finds no device at PCI bus id 0000:AA:00.0: Not Found (6)");
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    test_reasons_text();
    test_no_bus_id();
    if (strcmp(how, "fake") == 0) {
        test_fake();
    } else if (strcmp(how, "noinit") == 0) {
        setenv("FAKE_NVML_MODE", "noinit", 1);
        kp_clock_reading r;
        kp_clock_read_pci("0000:3B:00.0", &r);
        CHECK_INT(r.have, 0);
        CHECK_STR(r.why_not, "nvmlInit failed: Driver Not Loaded (9)");
        unsetenv("FAKE_NVML_MODE"); /* initialised once: the failure stays */
        kp_clock_read_pci("0000:3B:00.0", &r);
        CHECK_INT(r.have, 0);
        CHECK_STR(r.why_not, "nvmlInit failed: Driver Not Loaded (9)");
    } else if (strcmp(how, "missing") == 0) {
        kp_clock_reading r;
        kp_clock_read_pci("0000:3B:00.0", &r);
        CHECK_INT(r.have, 0);
        CHECK_CONTAINS(r.why_not, "could not be loaded");
        CHECK_CONTAINS(r.why_not, "KPROF_NVML_LIBRARY");
    } else {
        fprintf(stderr, "usage: test_lab_clock fake|noinit|missing\n");
        return 2;
    }
    TEST_DONE();
}
