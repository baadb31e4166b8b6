/*
 * nvtx_abi.h — the part of NVTX v3's injection interface that kprof's own NVTX handlers
 * (nvtx_inject.c) use, declared here so that libkprof-inject.so builds where the CUDA toolkit's
 * headers are absent. NVTX is header-only: a program carries its own copy, and a tool attaches
 * to each copy through the stable binary interface below (function ids, table layout, the
 * event attributes struct), which NVIDIA only ever extends at the end.
 *
 * Each piece names the nvtx3 header it mirrors (under include/nvtx3/ of the CUDA toolkit or of
 * github.com/NVIDIA/NVTX). tests/unit/test_nvtx_inject.c, built where those headers exist,
 * holds _Static_asserts that every number, size and offset here equals the real one.
 */
#ifndef KP_INJECT_NVTX_ABI_H
#define KP_INJECT_NVTX_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

/* nvToolsExt.h: nvtxRangeId_t; NVTX_NO_PUSH_POP_TRACKING (what push/pop return without a tool). */
typedef uint64_t kp_nvtx_range_id;
#define KP_NVTX_NO_PUSH_POP_TRACKING (-2)

/* nvToolsExt.h: nvtxDomainHandle_t and nvtxStringHandle_t are pointers to structs that only the
 * tool defines (nvtxDomainRegistration_st, nvtxStringRegistration_st): kprof's are in
 * nvtx_inject.c. NULL as a domain is the default domain. */
typedef struct kp_nvtx_domain kp_nvtx_domain;
typedef struct kp_nvtx_string kp_nvtx_string;

/* nvToolsExt.h: nvtxMessageType_t. */
enum {
    KP_NVTX_MESSAGE_UNKNOWN = 0,
    KP_NVTX_MESSAGE_TYPE_ASCII = 1,
    KP_NVTX_MESSAGE_TYPE_UNICODE = 2,    /* wchar_t: UTF-32 on Linux */
    KP_NVTX_MESSAGE_TYPE_REGISTERED = 3, /* a handle from nvtxDomainRegisterString{A,W} */
};

/* nvToolsExt.h: nvtxMessageValue_t. */
typedef union kp_nvtx_message_value {
    const char *ascii;
    const wchar_t *unicode;
    const kp_nvtx_string *registered;
} kp_nvtx_message_value;

/* nvToolsExt.h: nvtxEventAttributes_v2 (nvtxEventAttributes_t). `size` is what the caller's
 * struct holds: fields past it are absent. */
typedef struct kp_nvtx_event_attributes {
    uint16_t version;
    uint16_t size;
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type;
    int32_t reserved0;
    union {
        uint64_t ull_value;
        int64_t ll_value;
        double d_value;
        uint32_t ui_value;
        int32_t i_value;
        float f_value;
    } payload;
    int32_t message_type; /* KP_NVTX_MESSAGE_* */
    kp_nvtx_message_value message;
} kp_nvtx_event_attributes;

/* nvtxDetail/nvtxTypes.h: NvtxCallbackModule. */
enum {
    KP_NVTX_CB_MODULE_CORE = 1,
    KP_NVTX_CB_MODULE_CUDA = 2,
    KP_NVTX_CB_MODULE_OPENCL = 3,
    KP_NVTX_CB_MODULE_CUDART = 4,
    KP_NVTX_CB_MODULE_CORE2 = 5,
    KP_NVTX_CB_MODULE_SYNC = 6,
    KP_NVTX_CB_MODULE_SIZE = 7, /* one past the last module this copy knows */
};

/* nvtxDetail/nvtxTypes.h: NvtxCallbackIdCore (the ones kprof handles). */
enum {
    KP_NVTX_CBID_CORE_MarkEx = 1,
    KP_NVTX_CBID_CORE_MarkA = 2,
    KP_NVTX_CBID_CORE_MarkW = 3,
    KP_NVTX_CBID_CORE_RangeStartEx = 4,
    KP_NVTX_CBID_CORE_RangeStartA = 5,
    KP_NVTX_CBID_CORE_RangeStartW = 6,
    KP_NVTX_CBID_CORE_RangeEnd = 7,
    KP_NVTX_CBID_CORE_RangePushEx = 8,
    KP_NVTX_CBID_CORE_RangePushA = 9,
    KP_NVTX_CBID_CORE_RangePushW = 10,
    KP_NVTX_CBID_CORE_RangePop = 11,
};

/* nvtxDetail/nvtxTypes.h: NvtxCallbackIdCore2 (the ones kprof handles). */
enum {
    KP_NVTX_CBID_CORE2_DomainMarkEx = 1,
    KP_NVTX_CBID_CORE2_DomainRangeStartEx = 2,
    KP_NVTX_CBID_CORE2_DomainRangeEnd = 3,
    KP_NVTX_CBID_CORE2_DomainRangePushEx = 4,
    KP_NVTX_CBID_CORE2_DomainRangePop = 5,
    KP_NVTX_CBID_CORE2_DomainRegisterStringA = 10,
    KP_NVTX_CBID_CORE2_DomainRegisterStringW = 11,
    KP_NVTX_CBID_CORE2_DomainCreateA = 12,
    KP_NVTX_CBID_CORE2_DomainCreateW = 13,
    KP_NVTX_CBID_CORE2_DomainDestroy = 14,
};

/* nvtxDetail/nvtxTypes.h: NvtxExportTableID. */
enum {
    KP_NVTX_ETID_CALLBACKS = 1,
    KP_NVTX_ETID_VERSIONINFO = 3,
};

/* nvtxDetail/nvtxTypes.h: NvtxFunctionPointer, NvtxFunctionTable. A module's table is an array
 * indexed by callback id of pointers to the copy's own function-pointer slots; a tool writes
 * its handler into *table[id]. Entry 0 and the entry at `size` are NULL. */
typedef void (*kp_nvtx_function_pointer)(void);
typedef kp_nvtx_function_pointer **kp_nvtx_function_table;

/* nvtxDetail/nvtxTypes.h: NvtxExportTableCallbacks. */
typedef struct kp_nvtx_export_table_callbacks {
    size_t struct_size;
    int (*GetModuleFunctionTable)(int callback_module, kp_nvtx_function_table *out_table,
                                  unsigned int *out_size);
} kp_nvtx_export_table_callbacks;

/* nvtxDetail/nvtxTypes.h: NvtxExportTableVersionInfo. */
typedef struct kp_nvtx_export_table_version_info {
    size_t struct_size;
    uint32_t version; /* NVTX_VERSION of the program's copy */
    uint32_t reserved0;
    void (*SetInjectionNvtxVersion)(uint32_t version);
} kp_nvtx_export_table_version_info;

/* nvToolsExt.h: NVTX_VERSION, what kprof's handlers implement. */
#define KP_NVTX_VERSION 3

/* nvtxDetail/nvtxTypes.h: NvtxGetExportTableFunc_t, what NVTX hands InitializeInjectionNvtx2. */
typedef const void *(*kp_nvtx_get_export_table_fn)(uint32_t export_table_id);

#endif
