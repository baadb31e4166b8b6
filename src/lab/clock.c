/*
 * clock.c — the session device's SM clock, read through NVML (see lab.h, kp_lab_clock).
 *
 * A kernel's time depends on the clock the GPU ran at: a card that is power- or heat-capped
 * runs slower, and timings taken then say so without saying why. `kprof bench` reads the
 * clock around its batches of samples and flags those taken below the default clock. NVML
 * needs no CUDA context, so the reading is made in kprof's own process even when the session
 * runs in a child; NVML finds the device by the PCI bus id the CUDA backend reported
 * (kp_device_info.pci_bus_id). NVML is initialised once, on the first reading, and kept for the
 * life of the process (initialising it costs milliseconds; a reading, microseconds).
 */
#define _GNU_SOURCE
#include "lab/lab_internal.h"
#include "base/util.h"
#include "runtime/nvml_api.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct {
    pthread_once_t once;
    int ready;     /* NVML loaded and initialised */
    char why[160]; /* why not */
} kp_clock_nvml = {.once = PTHREAD_ONCE_INIT};

static void kp_clock_nvml_init(void)
{
    kp_error why = {0};
    if (kp_nvml_load(&why) != KPROF_OK) {
        kp_strlcpy(kp_clock_nvml.why, why.message, sizeof kp_clock_nvml.why);
        kp_error_clear(&why);
        return;
    }
    kp_nvml_return rc = kp_nvml.nvmlInit_v2();
    if (rc != KP_NVML_SUCCESS) {
        char text[128];
        kp_nvml_error_text(rc, text, sizeof text);
        snprintf(kp_clock_nvml.why, sizeof kp_clock_nvml.why, "nvmlInit failed: %s", text);
        return;
    }
    kp_clock_nvml.ready = 1;
}

void kp_clock_read_pci(const char *pci_bus_id, kp_clock_reading *out)
{
    memset(out, 0, sizeof *out);
    char text[64];
    if (!pci_bus_id || !*pci_bus_id) {
        kp_strlcpy(out->why_not, "the device has no PCI bus id to find it by in NVML",
                   sizeof out->why_not);
        return;
    }
    pthread_once(&kp_clock_nvml.once, kp_clock_nvml_init);
    if (!kp_clock_nvml.ready) {
        kp_strlcpy(out->why_not, kp_clock_nvml.why, sizeof out->why_not);
        return;
    }
    kp_nvml_device device = NULL;
    kp_nvml_return rc = kp_nvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id, &device);
    if (rc != KP_NVML_SUCCESS) {
        kp_nvml_error_text(rc, text, sizeof text);
        snprintf(out->why_not, sizeof out->why_not, "NVML finds no device at PCI bus id %.32s: %s",
                 pci_bus_id, text);
        return;
    }
    unsigned int sm = 0, normal = 0;
    rc = kp_nvml.nvmlDeviceGetClockInfo(device, KP_NVML_CLOCK_SM, &sm);
    if (rc != KP_NVML_SUCCESS) {
        kp_nvml_error_text(rc, text, sizeof text);
        snprintf(out->why_not, sizeof out->why_not, "nvmlDeviceGetClockInfo (SM clock): %s", text);
        return;
    }
    /* The applications clock is what the GPU runs work at by default; boards without one
     * (or a library without the call) are compared with their maximum. */
    if (!kp_nvml.nvmlDeviceGetDefaultApplicationsClock ||
        kp_nvml.nvmlDeviceGetDefaultApplicationsClock(device, KP_NVML_CLOCK_SM, &normal) !=
            KP_NVML_SUCCESS ||
        normal == 0) {
        normal = 0;
        if (kp_nvml.nvmlDeviceGetMaxClockInfo(device, KP_NVML_CLOCK_SM, &normal) != KP_NVML_SUCCESS)
            normal = 0;
    }
    unsigned long long reasons = 0;
    if (!kp_nvml.nvmlDeviceGetCurrentClocksEventReasons ||
        kp_nvml.nvmlDeviceGetCurrentClocksEventReasons(device, &reasons) != KP_NVML_SUCCESS) {
        reasons = 0;
        if (kp_nvml.nvmlDeviceGetCurrentClocksThrottleReasons &&
            kp_nvml.nvmlDeviceGetCurrentClocksThrottleReasons(device, &reasons) != KP_NVML_SUCCESS)
            reasons = 0;
    }
    out->have = 1;
    out->sm_mhz = sm;
    out->default_mhz = normal;
    out->reasons = reasons;
}

void kp_lab_clock(kp_lab *lab, kp_clock_reading *out)
{
    const kp_device_info *d = &lab->info.device;
    if (!d->pci_bus_id[0]) {
        memset(out, 0, sizeof *out);
        snprintf(out->why_not, sizeof out->why_not,
                 "%s devices: kprof reads no clock (it reads NVIDIA GPUs' through NVML, on the "
                 "cuda backend)",
                 d->backend[0] ? d->backend : "these");
        return;
    }
    kp_clock_read_pci(d->pci_bus_id, out);
}

void kp_clock_reasons_text(uint64_t reasons, char *buf, size_t n)
{
    static const struct {
        uint64_t bit;
        const char *words;
    } known[] = {
#define KP_CLOCK_REASON_ROW_(name, bit, words) {bit, words},
        KP_NVML_CLOCK_REASONS(KP_CLOCK_REASON_ROW_)
#undef KP_CLOCK_REASON_ROW_
    };
    if (n == 0) return;
    buf[0] = '\0';
    size_t used = 0;
    uint64_t other = reasons;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        other &= ~known[i].bit;
        if (!(reasons & known[i].bit) || !known[i].words) continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", known[i].words);
        if (w < 0 || (size_t)w >= n - used) return; /* cut at the end of buf */
        used += (size_t)w;
    }
    if (other)
        snprintf(buf + used, n - used, "%sother 0x%llx", used ? ", " : "",
                 (unsigned long long)other);
}
