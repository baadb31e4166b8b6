/* fake_nvml.c — a stand-in for libnvidia-ml.so.1 (loaded through KPROF_NVML_LIBRARY) that knows
 * one GPU, at PCI bus id 0000:3B:00.0, with fixed clocks, so kprof's clock readings are tested
 * where no NVIDIA driver exists. FAKE_NVML_MODE chooses what the board supports:
 *   (unset)  SM clock 1410 MHz, default applications clock 1755, max 1980; clock-event reasons
 *            0x5 (idle + sw power cap) through the new name, 0x8 through the old one
 *   "old"    no applications clock (NOT_SUPPORTED) and no clock-event reasons under the new name
 *            (NOT_SUPPORTED): kprof falls back to the max clock and the old name
 *   "noinit" nvmlInit fails (DRIVER_NOT_LOADED)
 *   "dip"    as unset, but every 8th reading of the SM clock gives 900 MHz (a throttled GPU
 *            now and then), with clock-event reason 0x8 (hw slowdown) throughout
 * Built without sanitizers, as the real library is. */
#include <stdlib.h>
#include <string.h>

typedef int nvml_return;
typedef struct fake_device *nvml_device;

enum { OK = 0, NOT_SUPPORTED = 3, NOT_FOUND = 6, DRIVER_NOT_LOADED = 9 };

static struct fake_device {
    int unused;
} the_gpu;

static int mode(const char *m)
{
    const char *v = getenv("FAKE_NVML_MODE");
    return v && strcmp(v, m) == 0;
}

__attribute__((visibility("default"))) nvml_return nvmlInit_v2(void)
{
    return mode("noinit") ? DRIVER_NOT_LOADED : OK;
}

__attribute__((visibility("default"))) nvml_return nvmlShutdown(void)
{
    return OK;
}

__attribute__((visibility("default"))) const char *nvmlErrorString(nvml_return r)
{
    switch (r) {
    case OK:
        return "Success";
    case NOT_SUPPORTED:
        return "Not Supported";
    case NOT_FOUND:
        return "Not Found";
    case DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    default:
        return "Unknown Error";
    }
}

__attribute__((visibility("default"))) nvml_return
nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvml_device *device)
{
    if (strcmp(bus, "0000:3B:00.0") != 0) return NOT_FOUND;
    *device = &the_gpu;
    return OK;
}

__attribute__((visibility("default"))) nvml_return nvmlDeviceGetClockInfo(nvml_device d, int type,
                                                                          unsigned int *mhz)
{
    if (d != &the_gpu || type != 1) return NOT_SUPPORTED;
    static unsigned calls;
    *mhz = mode("dip") && ++calls % 8 == 0 ? 900 : 1410;
    return OK;
}

__attribute__((visibility("default"))) nvml_return
nvmlDeviceGetMaxClockInfo(nvml_device d, int type, unsigned int *mhz)
{
    if (d != &the_gpu || type != 1) return NOT_SUPPORTED;
    *mhz = 1980;
    return OK;
}

__attribute__((visibility("default"))) nvml_return
nvmlDeviceGetDefaultApplicationsClock(nvml_device d, int type, unsigned int *mhz)
{
    if (d != &the_gpu || type != 1 || mode("old")) return NOT_SUPPORTED;
    *mhz = 1755;
    return OK;
}

__attribute__((visibility("default"))) nvml_return
nvmlDeviceGetCurrentClocksEventReasons(nvml_device d, unsigned long long *reasons)
{
    if (d != &the_gpu || mode("old")) return NOT_SUPPORTED;
    *reasons = mode("dip") ? 0x8 : 0x5;
    return OK;
}

__attribute__((visibility("default"))) nvml_return
nvmlDeviceGetCurrentClocksThrottleReasons(nvml_device d, unsigned long long *reasons)
{
    if (d != &the_gpu) return NOT_SUPPORTED;
    *reasons = 0x8;
    return OK;
}
