/* test_nvtx_inject.c — kprof's own NVTX collector (src/inject/nvtx_inject.c), driven through a
 * real copy of NVTX v3 (the toolkit's header-only nvtx3, attached by NVTX's static-injection
 * hook), and the ABI that nvtx_abi.h copies from it, checked number by number at compile time.
 *
 * Each scenario runs in a forked child that starts with a fresh copy of NVTX (the parent never
 * calls NVTX) and writes a trace part into its own folder, which the parent then reads back. */
#define _GNU_SOURCE
#include <nvToolsExt.h>

#include "collect/reader.h"
#include "inject/nvtx_abi.h"
#include "inject/nvtx_inject.h"
#include "test.h"

#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the copied ABI against the real one ---- */

#define SAME(ours, theirs)                                                                         \
    _Static_assert((long long)(ours) == (long long)(theirs), #ours " != " #theirs)
#define SAME_FIELD(ours, our_field, theirs, their_field)                                           \
    _Static_assert(offsetof(ours, our_field) == offsetof(theirs, their_field) &&                   \
                       sizeof(((ours *)0)->our_field) == sizeof(((theirs *)0)->their_field),       \
                   #ours "." #our_field " differs from " #theirs "." #their_field)

SAME(sizeof(kp_nvtx_range_id), sizeof(nvtxRangeId_t));
SAME(KP_NVTX_NO_PUSH_POP_TRACKING, NVTX_NO_PUSH_POP_TRACKING);
SAME(KP_NVTX_VERSION, NVTX_VERSION);
SAME(KP_NVTX_MESSAGE_UNKNOWN, NVTX_MESSAGE_UNKNOWN);
SAME(KP_NVTX_MESSAGE_TYPE_ASCII, NVTX_MESSAGE_TYPE_ASCII);
SAME(KP_NVTX_MESSAGE_TYPE_UNICODE, NVTX_MESSAGE_TYPE_UNICODE);
SAME(KP_NVTX_MESSAGE_TYPE_REGISTERED, NVTX_MESSAGE_TYPE_REGISTERED);
SAME(sizeof(kp_nvtx_message_value), sizeof(nvtxMessageValue_t));
SAME(sizeof(kp_nvtx_event_attributes), sizeof(nvtxEventAttributes_t));
SAME(sizeof(kp_nvtx_event_attributes), NVTX_EVENT_ATTRIB_STRUCT_SIZE);
SAME_FIELD(kp_nvtx_event_attributes, version, nvtxEventAttributes_t, version);
SAME_FIELD(kp_nvtx_event_attributes, size, nvtxEventAttributes_t, size);
SAME_FIELD(kp_nvtx_event_attributes, category, nvtxEventAttributes_t, category);
SAME_FIELD(kp_nvtx_event_attributes, color_type, nvtxEventAttributes_t, colorType);
SAME_FIELD(kp_nvtx_event_attributes, color, nvtxEventAttributes_t, color);
SAME_FIELD(kp_nvtx_event_attributes, payload_type, nvtxEventAttributes_t, payloadType);
SAME_FIELD(kp_nvtx_event_attributes, reserved0, nvtxEventAttributes_t, reserved0);
SAME_FIELD(kp_nvtx_event_attributes, payload, nvtxEventAttributes_t, payload);
SAME_FIELD(kp_nvtx_event_attributes, message_type, nvtxEventAttributes_t, messageType);
SAME_FIELD(kp_nvtx_event_attributes, message, nvtxEventAttributes_t, message);

SAME(KP_NVTX_CB_MODULE_CORE, NVTX_CB_MODULE_CORE);
SAME(KP_NVTX_CB_MODULE_CUDA, NVTX_CB_MODULE_CUDA);
SAME(KP_NVTX_CB_MODULE_OPENCL, NVTX_CB_MODULE_OPENCL);
SAME(KP_NVTX_CB_MODULE_CUDART, NVTX_CB_MODULE_CUDART);
SAME(KP_NVTX_CB_MODULE_CORE2, NVTX_CB_MODULE_CORE2);
SAME(KP_NVTX_CB_MODULE_SYNC, NVTX_CB_MODULE_SYNC);
SAME(KP_NVTX_CB_MODULE_SIZE, NVTX_CB_MODULE_SIZE);
SAME(sizeof(int), sizeof(NvtxCallbackModule)); /* how GetModuleFunctionTable is declared */

#define SAME_CORE(name) SAME(KP_NVTX_CBID_CORE_##name, NVTX_CBID_CORE_##name)
SAME_CORE(MarkEx);
SAME_CORE(MarkA);
SAME_CORE(MarkW);
SAME_CORE(RangeStartEx);
SAME_CORE(RangeStartA);
SAME_CORE(RangeStartW);
SAME_CORE(RangeEnd);
SAME_CORE(RangePushEx);
SAME_CORE(RangePushA);
SAME_CORE(RangePushW);
SAME_CORE(RangePop);
#define SAME_CORE2(name) SAME(KP_NVTX_CBID_CORE2_##name, NVTX_CBID_CORE2_##name)
SAME_CORE2(DomainMarkEx);
SAME_CORE2(DomainRangeStartEx);
SAME_CORE2(DomainRangeEnd);
SAME_CORE2(DomainRangePushEx);
SAME_CORE2(DomainRangePop);
SAME_CORE2(DomainRegisterStringA);
SAME_CORE2(DomainRegisterStringW);
SAME_CORE2(DomainCreateA);
SAME_CORE2(DomainCreateW);
SAME_CORE2(DomainDestroy);

SAME(KP_NVTX_ETID_CALLBACKS, NVTX_ETID_CALLBACKS);
SAME(KP_NVTX_ETID_VERSIONINFO, NVTX_ETID_VERSIONINFO);
SAME(sizeof(kp_nvtx_function_pointer), sizeof(NvtxFunctionPointer));
SAME(sizeof(kp_nvtx_function_table), sizeof(NvtxFunctionTable));
SAME(sizeof(kp_nvtx_export_table_callbacks), sizeof(NvtxExportTableCallbacks));
SAME_FIELD(kp_nvtx_export_table_callbacks, struct_size, NvtxExportTableCallbacks, struct_size);
SAME_FIELD(kp_nvtx_export_table_callbacks, GetModuleFunctionTable, NvtxExportTableCallbacks,
           GetModuleFunctionTable);
SAME(sizeof(kp_nvtx_export_table_version_info), sizeof(NvtxExportTableVersionInfo));
SAME_FIELD(kp_nvtx_export_table_version_info, struct_size, NvtxExportTableVersionInfo, struct_size);
SAME_FIELD(kp_nvtx_export_table_version_info, version, NvtxExportTableVersionInfo, version);
SAME_FIELD(kp_nvtx_export_table_version_info, SetInjectionNvtxVersion, NvtxExportTableVersionInfo,
           SetInjectionNvtxVersion);

/* The entry point's type is the one NVTX calls (also checked by the assignment below). */
SAME(sizeof(kp_nvtx_get_export_table_fn), sizeof(NvtxGetExportTableFunc_t));

/* NVTX's static-injection hook: this copy of NVTX attaches to the collector linked in here. */
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = InitializeInjectionNvtx2;

/* ---- reading a child's trace part ---- */

typedef struct part {
    kp_klog log;
    int open;
} part;

/* The one .klog file in dir. */
static int read_part(const char *dir, part *p)
{
    DIR *d = opendir(dir);
    char path[4400] = "";
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".klog")) {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            n++;
        }
    }
    if (d) closedir(d);
    p->open = 0;
    if (n != 1) {
        fprintf(stderr, "%d trace parts in %s, expected 1\n", n, dir);
        return -1;
    }
    kp_error err = {0};
    if (kp_klog_open(path, &p->log, &err) != KPROF_OK) return -1;
    p->open = 1;
    return 0;
}

static void close_part(part *p)
{
    if (p->open) kp_klog_close(&p->log);
    p->open = 0;
}

static const char *text_of(const part *p, uint32_t id, char *buf, size_t n)
{
    size_t len = 0;
    const char *s = kp_klog_string(&p->log, id, &len);
    if (len >= n) len = n - 1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

/* The index-th record of this kind named `name` (-1: any name), or NULL. */
static const kp_rec *find(const part *p, int kind, const char *name, int index)
{
    char buf[2048];
    for (size_t i = 0; i < p->log.nrecords; i++) {
        const kp_rec *r = p->log.records[i];
        if (r->kind != kind) continue;
        if (name && strcmp(text_of(p, r->name, buf, sizeof buf), name) != 0) continue;
        if (index-- == 0) return r;
    }
    return NULL;
}

static int count(const part *p, int kind, const char *name)
{
    int n = 0;
    while (find(p, kind, name, n))
        n++;
    return n;
}

/* Records counted as dropped: in the header's counter (record.h), or DROPPED records. */
static uint64_t dropped(const part *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->log.nrecords; i++) {
        const kp_rec *r = p->log.records[i];
        if (r->kind == KP_REC_DROPPED || r->kind == KP_REC_HEADER) n += r->bytes;
    }
    return n;
}

static int has_note(const part *p, const char *text)
{
    return find(p, KP_REC_NOTE, text, 0) != NULL;
}

/* Whether s is valid UTF-8. */
static int utf8_valid(const unsigned char *s)
{
    while (*s) {
        int n = *s < 0x80             ? 0
                : (*s & 0xE0) == 0xC0 ? 1
                : (*s & 0xF0) == 0xE0 ? 2
                : (*s & 0xF8) == 0xF0 ? 3
                                      : -1;
        if (n < 0) return 0;
        s++;
        for (int i = 0; i < n; i++, s++)
            if ((*s & 0xC0) != 0x80) return 0;
    }
    return 1;
}

/* ---- scenarios (each in its own child) ---- */

static uint32_t tid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* Fails the child with the line. */
#define MUST(cond)                                                                                 \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: in the child: %s\n", __FILE__, __LINE__, #cond);               \
            _exit(10);                                                                             \
        }                                                                                          \
    } while (0)

static nvtxEventAttributes_t attributes(int type)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = type;
    return a;
}

static void *end_range(void *arg)
{
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    return NULL;
}

/* Push/pop with levels, marks, names of every kind, domains, start/end across threads. */
static void scenario_basic(void)
{
    MUST(nvtxRangePushA("outer") == 0);
    MUST(nvtxRangePushA("middle") == 1);
    MUST(nvtxRangePop() == 1);
    nvtxMarkA("m");
    MUST(nvtxRangePop() == 0);
    MUST(nvtxRangePop() < 0); /* nothing open */

    MUST(nvtxRangePushW(L"gr\u00f6\u00dfe \u2713 \U0001F600") == 0);
    MUST(nvtxRangePop() == 0);
    wchar_t bad[] = {L'a', (wchar_t)0xD800, (wchar_t)0x110000, L'b', 0};
    nvtxMarkW(bad);
    wchar_t longw[1200];
    for (int i = 0; i < 1199; i++)
        longw[i] = L'\u6d4b'; /* 3 bytes each: 1023 bytes hold 341 of them */
    longw[1199] = 0;
    nvtxMarkW(longw);

    nvtxEventAttributes_t a = attributes(NVTX_MESSAGE_TYPE_ASCII);
    a.message.ascii = "ex ascii";
    MUST(nvtxRangePushEx(&a) == 0);
    MUST(nvtxRangePop() == 0);
    a.size = 16; /* too small to hold a message */
    nvtxMarkEx(&a);
    nvtxMarkEx(NULL);
    a = attributes(7); /* a message type from the future */
    nvtxMarkEx(&a);

    nvtxDomainHandle_t d = nvtxDomainCreateA("dom");
    MUST(nvtxDomainCreateA("dom") == d);
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "reg");
    a = attributes(NVTX_MESSAGE_TYPE_REGISTERED);
    a.message.registered = s;
    MUST(nvtxRangePushA("outer2") == 0);
    MUST(nvtxDomainRangePushEx(d, &a) == 0); /* a stack of its own */
    MUST(nvtxDomainRangePushEx(d, &a) == 1); /* the cached name */
    MUST(nvtxRangePushA("inner2") == 1);
    MUST(nvtxDomainRangePop(d) == 1); /* from under inner2 */
    MUST(nvtxDomainRangePop(d) == 0);
    MUST(nvtxDomainRangePop(d) < 0);
    MUST(nvtxRangePop() == 1);
    MUST(nvtxRangePop() == 0);
    nvtxDomainMarkEx(NULL, &a); /* the default domain, a string registered elsewhere */
    nvtxDomainHandle_t w = nvtxDomainCreateW(L"w\u00e5");
    nvtxStringHandle_t ws = nvtxDomainRegisterStringW(w, L"\u00df");
    a.message.registered = ws;
    nvtxRangeId_t id = nvtxDomainRangeStartEx(w, &a);
    MUST(id != 0);
    nvtxDomainRangeEnd(w, id);
    /* "dom:" and 1018 x fill 1022 bytes: the "é" after them would be cut in two. */
    char longa[1200];
    memset(longa, 'x', 1018);
    memcpy(longa + 1018, "\xc3\xa9", 2);
    memset(longa + 1020, 'y', sizeof longa - 1021);
    longa[sizeof longa - 1] = '\0';
    a = attributes(NVTX_MESSAGE_TYPE_ASCII);
    a.message.ascii = longa;
    nvtxDomainMarkEx(d, &a);
    nvtxDomainDestroy(d);
    nvtxDomainDestroy(w);

    nvtxRangeId_t async = nvtxRangeStartA("async");
    pthread_t t;
    MUST(pthread_create(&t, NULL, end_range, &async) == 0);
    MUST(pthread_join(t, NULL) == 0);
    nvtxRangeEnd(async); /* once only */
    nvtxRangeEnd(0);
    nvtxRangeEnd(123456789);
    printf("%u\n", tid());
    exit(0);
}

/* Many start/end ranges open at once, ended out of order (the table grows and shrinks). */
static void scenario_many(void)
{
    enum { N = 3000 };
    static nvtxRangeId_t ids[N];
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", i);
        ids[i] = nvtxRangeStartA(name);
        MUST(ids[i] != 0);
    }
    for (int i = 0; i < N; i += 2)
        nvtxRangeEnd(ids[i]);
    for (int i = N - 1; i > 0; i -= 2)
        nvtxRangeEnd(ids[i]);
    exit(0);
}

/* Deeper than a thread's stack holds: counted, levels still right. */
static void scenario_deep(void)
{
    enum { DEPTH = 300 };
    for (int i = 0; i < DEPTH; i++)
        MUST(nvtxRangePushA(i % 2 ? "odd" : "even") == i);
    for (int i = DEPTH - 1; i >= 0; i--)
        MUST(nvtxRangePop() == i);
    exit(0);
}

static void *pusher(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        if (nvtxRangePushA("t") != 0 || nvtxRangePushA("u") != 1) return (void *)1;
        if (nvtxRangePop() != 1 || nvtxRangePop() != 0) return (void *)1;
    }
    return NULL;
}

/* Threads pushing at once: every range recorded, each on its own thread. */
static void scenario_threads(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        MUST(pthread_create(&t[i], NULL, pusher, NULL) == 0);
    for (int i = 0; i < 4; i++) {
        void *rc = NULL;
        MUST(pthread_join(t[i], &rc) == 0 && rc == NULL);
    }
    exit(0);
}

static void *push_and_leave(void *arg)
{
    (void)arg;
    return nvtxRangePushA("left open by a thread") == 0 ? NULL : (void *)1;
}

/* A forked child starts fresh; ranges left open are counted at exit, a finished thread's too. */
static void scenario_fork_and_open(const char *child_dir)
{
    MUST(nvtxRangePushA("parent") == 0);
    nvtxRangeId_t started = nvtxRangeStartA("started in parent");
    MUST(started != 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("KPROF_TRACE_DIR", child_dir, 1); /* a part of its own, elsewhere */
        MUST(nvtxRangePushA("child") == 0);
        MUST(nvtxRangePop() == 0);
        nvtxRangeEnd(started); /* the parent's: not the child's to end */
        MUST(nvtxRangePop() < 0);
        exit(0);
    }
    int status = 0;
    MUST(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    MUST(nvtxRangePushA("left open") == 1);
    pthread_t t;
    void *rc = NULL;
    MUST(pthread_create(&t, NULL, push_and_leave, NULL) == 0);
    MUST(pthread_join(t, &rc) == 0 && rc == NULL);
    exit(0); /* "parent", "left open" and the thread's pushed, one started: 4 open */
}

/* Runs fn in a child tracing into dir; 0 when it exited 0. Its stdout goes to out[] if given. */
static int run(void (*fn)(void), const char *dir, char *out, size_t out_n)
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 1);
        if (dir)
            setenv("KPROF_TRACE_DIR", dir, 1);
        else
            unsetenv("KPROF_TRACE_DIR");
        unsetenv("NVTX_INJECTION64_PATH"); /* the static hook, not a library */
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t used = 0;
    ssize_t n;
    char sink[256];
    while ((n = read(fds[0], out ? out + used : sink, out ? out_n - 1 - used : sizeof sink)) > 0)
        if (out) used += (size_t)n;
    if (out) out[used] = '\0';
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static char fork_child_dir[64];

static void scenario_fork(void)
{
    scenario_fork_and_open(fork_child_dir);
}

static void scenario_untraced(void)
{
    /* No KPROF_TRACE_DIR: the collector declines and NVTX stays a no-op. */
    MUST(nvtxRangePushA("x") == NVTX_NO_PUSH_POP_TRACKING);
    exit(0);
}

static void check_basic(const char *dir)
{
    char out[64] = "";
    CHECK_INT(run(scenario_basic, dir, out, sizeof out), 0);
    uint32_t main_tid = (uint32_t)strtoul(out, NULL, 10);
    part p;
    if (read_part(dir, &p) != 0) {
        CHECK(0);
        return;
    }
    const kp_rec *outer = find(&p, KP_REC_RANGE, "outer", 0);
    const kp_rec *middle = find(&p, KP_REC_RANGE, "middle", 0);
    const kp_rec *m = find(&p, KP_REC_MARK, "m", 0);
    CHECK(outer && middle && m);
    if (outer && middle && m) {
        CHECK(outer->start <= middle->start && middle->end <= m->start && m->end <= outer->end);
        CHECK(middle->start <= middle->end);
        CHECK_INT(outer->tid, main_tid);
        CHECK_INT(outer->domain, KP_DOMAIN_NVTX);
        CHECK_INT(m->start, m->end);
        CHECK(outer->id != middle->id && outer->id && middle->id && m->id);
    }
    CHECK_INT(count(&p, KP_REC_RANGE,
                    "gr\xc3\xb6\xc3\x9f"
                    "e \xe2\x9c\x93 \xf0\x9f\x98\x80"),
              1);
    CHECK_INT(count(&p, KP_REC_MARK,
                    "a\xef\xbf\xbd\xef\xbf\xbd"
                    "b"),
              1); /* U+FFFD twice */
    char expect[1100] = "";
    for (int i = 0; i < 341; i++)
        strcat(expect, "\xe6\xb5\x8b");
    CHECK_INT(count(&p, KP_REC_MARK, expect), 1);
    CHECK_INT(count(&p, KP_REC_RANGE, "ex ascii"), 1);
    CHECK_INT(count(&p, KP_REC_MARK, "(unnamed)"), 3);
    CHECK_INT(count(&p, KP_REC_RANGE, "dom:reg"), 2);
    CHECK_INT(count(&p, KP_REC_RANGE, "outer2"), 1);
    CHECK_INT(count(&p, KP_REC_RANGE, "inner2"), 1);
    const kp_rec *inner2 = find(&p, KP_REC_RANGE, "inner2", 0);
    const kp_rec *reg0 = find(&p, KP_REC_RANGE, "dom:reg", 0);
    const kp_rec *reg1 = find(&p, KP_REC_RANGE, "dom:reg", 1);
    if (inner2 && reg0 && reg1) {
        /* The inner domain range was popped first, from under inner2, which outlived it. */
        CHECK(reg0->start > reg1->start && reg0->end <= reg1->end);
        CHECK(inner2->start > reg0->start && reg0->end <= inner2->end);
    }
    CHECK_INT(count(&p, KP_REC_MARK, "reg"), 1); /* registered in dom, marked in the default */
    CHECK_INT(count(&p, KP_REC_RANGE, "w\xc3\xa5:\xc3\x9f"), 1);
    const kp_rec *cut;
    int cut_found = 0;
    for (int i = 0; (cut = find(&p, KP_REC_MARK, NULL, i)) != NULL; i++) {
        char buf[2048];
        text_of(&p, cut->name, buf, sizeof buf);
        if (strncmp(buf, "dom:xxx", 7) != 0) continue;
        cut_found = 1;
        CHECK_INT(strlen(buf), 1022); /* "dom:" and the x: half an é is no character */
        CHECK(utf8_valid((const unsigned char *)buf));
        CHECK_INT(buf[1021], 'x');
    }
    CHECK(cut_found);
    const kp_rec *async = find(&p, KP_REC_RANGE, "async", 0);
    CHECK_INT(count(&p, KP_REC_RANGE, "async"), 1);
    if (async) CHECK_INT(async->tid, main_tid); /* the thread that started it */
    /* m, the two wide ones, three unnamed, reg, the long one. */
    CHECK_INT(count(&p, KP_REC_MARK, NULL), 8);
    CHECK_INT(count(&p, KP_REC_NOTE, NULL), 0); /* nothing left open, nothing to say */
    CHECK_INT(dropped(&p), 0);
    close_part(&p);
}

static void check_many(const char *dir)
{
    CHECK_INT(run(scenario_many, dir, NULL, 0), 0);
    part p;
    if (read_part(dir, &p) != 0) {
        CHECK(0);
        return;
    }
    CHECK_INT(count(&p, KP_REC_RANGE, NULL), 3000);
    /* Each name once, ended in the order the test ended them. */
    char name[32];
    for (int i = 0; i < 3000; i += 499) {
        snprintf(name, sizeof name, "r%d", i);
        CHECK_INT(count(&p, KP_REC_RANGE, name), 1);
    }
    const kp_rec *r0 = find(&p, KP_REC_RANGE, "r0", 0), *r1 = find(&p, KP_REC_RANGE, "r1", 0);
    const kp_rec *r2998 = find(&p, KP_REC_RANGE, "r2998", 0);
    if (r0 && r1 && r2998) {
        CHECK(r0->start < r1->start);
        CHECK(r2998->end < r1->end);
    }
    CHECK_INT(dropped(&p), 0);
    close_part(&p);
}

static void check_deep(const char *dir)
{
    CHECK_INT(run(scenario_deep, dir, NULL, 0), 0);
    part p;
    if (read_part(dir, &p) != 0) {
        CHECK(0);
        return;
    }
    CHECK_INT(count(&p, KP_REC_RANGE, NULL), 256);
    CHECK_INT(dropped(&p), 44);
    close_part(&p);
}

static void check_threads(const char *dir)
{
    CHECK_INT(run(scenario_threads, dir, NULL, 0), 0);
    part p;
    if (read_part(dir, &p) != 0) {
        CHECK(0);
        return;
    }
    CHECK_INT(count(&p, KP_REC_RANGE, "t"), 8000);
    CHECK_INT(count(&p, KP_REC_RANGE, "u"), 8000);
    /* Four threads; every "u" lies inside a "t" of its own thread (a thread's records keep
     * their order in the file). */
    int bad = 0, threads = 0;
    uint32_t seen[8] = {0};
    for (size_t i = 0; i < p.log.nrecords; i++) {
        const kp_rec *r = p.log.records[i];
        if (r->kind != KP_REC_RANGE) continue;
        int known = 0;
        for (int k = 0; k < threads; k++)
            known |= seen[k] == r->tid;
        if (!known && threads < 8) seen[threads++] = r->tid;
    }
    for (size_t i = 0; i + 1 < p.log.nrecords; i++) {
        const kp_rec *u = p.log.records[i];
        char buf[8];
        if (u->kind != KP_REC_RANGE || strcmp(text_of(&p, u->name, buf, sizeof buf), "u") != 0)
            continue;
        /* Its "t" is the next range of the same thread. */
        size_t k = i + 1;
        while (k < p.log.nrecords &&
               !(p.log.records[k]->kind == KP_REC_RANGE && p.log.records[k]->tid == u->tid))
            k++;
        const kp_rec *t = k < p.log.nrecords ? p.log.records[k] : NULL;
        if (!t || strcmp(text_of(&p, t->name, buf, sizeof buf), "t") != 0 || t->start > u->start ||
            u->end > t->end)
            bad++;
    }
    CHECK_INT(bad, 0);
    CHECK_INT(threads, 4);
    CHECK_INT(dropped(&p), 0);
    close_part(&p);
}

static void check_fork(const char *dir)
{
    CHECK_INT(run(scenario_fork, dir, NULL, 0), 0);
    part p;
    if (read_part(dir, &p) == 0) {
        CHECK_INT(count(&p, KP_REC_RANGE, NULL), 0); /* all still open at exit */
        CHECK(has_note(&p, "4 NVTX ranges were still open when the program ended (pushed or "
                           "started, never popped or ended); not recorded"));
        close_part(&p);
    } else {
        CHECK(0);
    }
    if (read_part(fork_child_dir, &p) == 0) {
        CHECK_INT(count(&p, KP_REC_RANGE, NULL), 1);
        CHECK_INT(count(&p, KP_REC_RANGE, "child"), 1);
        /* No note: the parent's open ranges are not the child's. */
        CHECK(find(&p, KP_REC_NOTE, NULL, 0) == NULL);
        close_part(&p);
    } else {
        CHECK(0);
    }
}

static void clear(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -f %s/*.klog", dir);
    CHECK_INT(system(cmd), 0);
}

int main(void)
{
    char dir[] = "/tmp/kprof-nvtx-test-XXXXXX";
    char child[] = "/tmp/kprof-nvtx-child-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    CHECK(mkdtemp(child) != NULL);
    snprintf(fork_child_dir, sizeof fork_child_dir, "%s", child);

    check_basic(dir);
    clear(dir);
    check_many(dir);
    clear(dir);
    check_deep(dir);
    clear(dir);
    check_threads(dir);
    clear(dir);
    check_fork(dir);
    clear(dir);
    CHECK_INT(run(scenario_untraced, NULL, NULL, 0), 0);

    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", dir, child);
    CHECK_INT(system(cmd), 0);
    TEST_DONE();
}
