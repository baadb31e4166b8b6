/*
 * nvml_api.h — the NVML (NVIDIA Management Library) entry points kprof uses to read a GPU's
 * clocks, as one list that generates a table of function pointers filled from
 * libnvidia-ml.so.1 (or the library named by KPROF_NVML_LIBRARY) at run time. NVML comes with
 * the driver, not the toolkit, and its header is often absent: the few types and constants
 * kprof needs are declared here, with NVML's values, so kprof builds without nvml.h.
 */
#ifndef KP_NVML_API_H
#define KP_NVML_API_H

#include "base/error.h"

#include <stddef.h>

typedef int kp_nvml_return;                       /* nvmlReturn_t */
typedef struct kp_nvml_device_st *kp_nvml_device; /* nvmlDevice_t: opaque */

#define KP_NVML_SUCCESS  0 /* NVML_SUCCESS */
#define KP_NVML_CLOCK_SM 1 /* NVML_CLOCK_SM, of nvmlClockType_t */

/* X(name, bit, words) — NVML's clock-event (formerly "throttle") reasons
 * (nvmlClocksEventReason*, nvmlClocksThrottleReason*: the same bits), and how kprof says each;
 * words NULL: not a slowdown, left out of kp_clock_reasons_text. */
#define KP_NVML_CLOCK_REASONS(X)                                                                   \
    X(GPU_IDLE, 0x1ull, NULL)                                                                      \
    X(APPLICATIONS_CLOCKS_SETTING, 0x2ull, NULL)                                                   \
    X(SW_POWER_CAP, 0x4ull, "sw power cap")                                                        \
    X(HW_SLOWDOWN, 0x8ull, "hw slowdown")                                                          \
    X(SYNC_BOOST, 0x10ull, "sync boost")                                                           \
    X(SW_THERMAL_SLOWDOWN, 0x20ull, "sw thermal slowdown")                                         \
    X(HW_THERMAL_SLOWDOWN, 0x40ull, "hw thermal slowdown")                                         \
    X(HW_POWER_BRAKE_SLOWDOWN, 0x80ull, "hw power brake slowdown")                                 \
    X(DISPLAY_CLOCK_SETTING, 0x100ull, "display clock setting")                                    \
    X(BOARD_LIMIT, 0x200ull, "board limit")                                                        \
    X(RELIABILITY, 0x400ull, "reliability")

enum {
#define KP_NVML_REASON_ENUM_(name, bit, words) KP_NVML_REASON_##name = bit,
    KP_NVML_CLOCK_REASONS(KP_NVML_REASON_ENUM_)
#undef KP_NVML_REASON_ENUM_
};

/* X(function, optional, return type, parameters). Optional ones may be missing (NULL in the
 * table): nvmlDeviceGetCurrentClocksEventReasons is the newer name (R535 on) of
 * nvmlDeviceGetCurrentClocksThrottleReasons, which newer libraries may drop; some boards
 * have no applications clocks. */
#define KP_NVML_FUNCTIONS(X)                                                                       \
    X(nvmlInit_v2, 0, kp_nvml_return, (void))                                                      \
    X(nvmlShutdown, 0, kp_nvml_return, (void))                                                     \
    X(nvmlErrorString, 0, const char *, (kp_nvml_return result))                                   \
    X(nvmlDeviceGetHandleByPciBusId_v2, 0, kp_nvml_return,                                         \
      (const char *pci_bus_id, kp_nvml_device *device))                                            \
    X(nvmlDeviceGetClockInfo, 0, kp_nvml_return,                                                   \
      (kp_nvml_device device, int type, unsigned int *mhz))                                        \
    X(nvmlDeviceGetMaxClockInfo, 0, kp_nvml_return,                                                \
      (kp_nvml_device device, int type, unsigned int *mhz))                                        \
    X(nvmlDeviceGetDefaultApplicationsClock, 1, kp_nvml_return,                                    \
      (kp_nvml_device device, int type, unsigned int *mhz))                                        \
    X(nvmlDeviceGetCurrentClocksEventReasons, 1, kp_nvml_return,                                   \
      (kp_nvml_device device, unsigned long long *reasons))                                        \
    X(nvmlDeviceGetCurrentClocksThrottleReasons, 1, kp_nvml_return,                                \
      (kp_nvml_device device, unsigned long long *reasons))

typedef struct kp_nvml_api {
#define KP_NVML_SLOT_(fn, optional, ret, params) ret(*fn) params;
    KP_NVML_FUNCTIONS(KP_NVML_SLOT_)
#undef KP_NVML_SLOT_
} kp_nvml_api;

/* The loaded table; valid after kp_nvml_load() returned KPROF_OK (optional entries may be NULL). */
extern kp_nvml_api kp_nvml;

/* Load the library once (thread-safe; nvmlInit is the caller's). KPROF_OK, or KPROF_UNAVAILABLE
 * with the reason in err ("libnvidia-ml.so.1 not found"). */
kprof_status kp_nvml_load(kp_error *err);

/* "Not Supported (3)": NVML's own text for a result and its number, into buf. */
void kp_nvml_error_text(kp_nvml_return rc, char *buf, size_t n);

#endif
