/*
 * nvtx_inject.c — the NVTX collector of `kprof trace`: NVTX ranges and marks, recorded by kprof
 * itself on every machine (with or without CUDA, CUPTI or a GPU), so that forks, ranges left open,
 * ranges ended on another thread and programs without a GPU behave the same everywhere.
 *
 * `kprof trace` names libkprof-inject.so in NVTX_INJECTION64_PATH; each copy of NVTX in the
 * program calls InitializeInjectionNvtx2 at its first use. This file then writes its handlers
 * into the copy's function tables (nvtx_abi.h) and turns every call into records of the writer
 * (collect/writer.h), whose CLOCK_MONOTONIC times are the clock the CUDA collector maps CUPTI's
 * onto:
 *   - push/pop ranges (nvtxRangePush*, nvtxDomainRangePushEx, and their pops) live on a stack per
 *     thread, one per domain in effect: a pop ends the innermost open range of its domain on its
 *     thread. A thread's stack is allocated at its first push and holds KP_NVTX_DEPTH levels;
 *     deeper ranges are counted as dropped. Nothing on the push/pop path allocates or takes a
 *     lock shared with other threads after that (names are interned through a small per-thread
 *     cache in front of the writer's table).
 *   - start/end ranges (nvtxRangeStart*, nvtxDomainRangeStartEx, nvtxRangeEnd, …) may end on any
 *     thread: they wait in one table under a mutex, keyed by the id handed to the program.
 *   - marks (nvtxMark*, nvtxDomainMarkEx) are written at once.
 * A range is one KP_REC_RANGE (start, end, the thread that opened it, name, KP_DOMAIN_NVTX, a
 * unique id), written when it ends; a mark is a KP_REC_MARK. Names are "domain:message" outside
 * the default domain; wide messages are converted to UTF-8. Ranges still open at exit are not
 * recorded: a note counts them.
 *
 * Fork: a child starts fresh — no open range of its parent's, string ids of its own, and its
 * own trace part, started at its first NVTX call.
 */
#define _GNU_SOURCE
#include "inject/nvtx_inject.h"

#include "collect/writer.h"
#include "base/error.h"
#include "base/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KP_EXPORT __attribute__((visibility("default")))

#define KP_NVTX_DEPTH      256  /* push/pop levels held per thread; deeper ones are dropped */
#define KP_NVTX_NAME_MAX   1024 /* bytes of a name built here (wide text, "domain:message") */
#define KP_NVTX_NAME_CACHE 64   /* names remembered per thread; a power of two */
#define KP_NVTX_ID_BLOCK   1024 /* range ids a thread takes from the shared counter at once */

/* The handles NVTX gives back to the program (nvtx_abi.h). Never freed: a program may keep
 * using a handle after nvtxDomainDestroy, and an injection library is never unloaded. */
struct kp_nvtx_domain {
    struct kp_nvtx_domain *next;
    char name[]; /* UTF-8; "" is the default domain's spelling */
};

struct kp_nvtx_string {
    struct kp_nvtx_string *next;
    const kp_nvtx_domain *domain;
    _Atomic uint64_t name_id; /* generation << 32 | string id of its full name in its domain */
    char text[];              /* UTF-8 */
};

/* One open push/pop range. */
typedef struct kp_nvtx_level {
    uint64_t start;
    uint64_t id;
    const kp_nvtx_domain *domain; /* NULL = the default domain */
    uint32_t name;                /* string id */
    int32_t level;                /* 0-based nesting within its domain, what push returned */
} kp_nvtx_level;

/* A thread's state, made at its first push, start or mark and freed when it exits. */
typedef struct kp_nvtx_thread {
    struct kp_nvtx_thread *next; /* every live thread's, for the exit note */
    _Atomic uint32_t depth;      /* levels held in level[]; read by the exit note */
    _Atomic uint32_t overflow;   /* open ranges past KP_NVTX_DEPTH, counted only */
    uint64_t next_id, id_end;    /* this thread's block of range ids */
    struct {
        uint64_t hash;
        uint32_t id;
        uint32_t generation;
    } names[KP_NVTX_NAME_CACHE];
    char text[KP_NVTX_NAME_MAX]; /* a wide message as UTF-8 */
    char full[KP_NVTX_NAME_MAX]; /* "domain:message" */
    kp_nvtx_level level[KP_NVTX_DEPTH];
} kp_nvtx_thread;

/* A start/end range waiting for its end. id 0 marks a free slot. */
typedef struct kp_nvtx_started {
    uint64_t id;
    uint64_t start;
    uint32_t name;
    uint32_t tid;
} kp_nvtx_started;

static struct {
    pthread_mutex_t init_lock;     /* attaching copies of NVTX */
    pthread_mutex_t registry_lock; /* domains and registered strings */
    pthread_mutex_t threads_lock;  /* the thread list */
    pthread_mutex_t started_lock;  /* the start/end table */
    int set_up;                    /* the writer, fork handlers and exit note are in place */
    atomic_int recording;          /* the writer runs in this process */
    atomic_int restart;            /* a forked child: start the writer at the next call */
    atomic_uint generation;        /* bumped in a forked child: cached string ids go stale */
    atomic_uint_fast64_t ids;      /* the next free block of range ids (0 is never handed out) */
    pthread_key_t thread_key;      /* frees a thread's state when it exits */
    kp_nvtx_thread *threads;
    uint64_t abandoned; /* ranges left open by threads that exited */
    kp_nvtx_domain *domains;
    kp_nvtx_string *strings;
    kp_nvtx_started *started; /* open addressing, linear probing; capacity a power of two */
    size_t nstarted, started_cap;
} kp_nv = {
    .init_lock = PTHREAD_MUTEX_INITIALIZER,
    .registry_lock = PTHREAD_MUTEX_INITIALIZER,
    .threads_lock = PTHREAD_MUTEX_INITIALIZER,
    .started_lock = PTHREAD_MUTEX_INITIALIZER,
    .generation = 1,
    .ids = 1,
};

static _Thread_local kp_nvtx_thread *kp_nvtx_me;

/* ---- recording, threads, fork ---- */

static void kp_nvtx_exit(void);

/* Whether records go anywhere; in a forked child, the first call starts its own trace part. */
static int kp_nvtx_recording(void)
{
    if (atomic_load_explicit(&kp_nv.restart, memory_order_relaxed) &&
        atomic_exchange(&kp_nv.restart, 0)) {
        int started = kp_writer_start("nvtx", NULL) == KPROF_OK;
        if (started) kp_writer_at_exit(kp_nvtx_exit); /* a fork cleared the parent's */
        atomic_store(&kp_nv.recording, started);
    }
    return atomic_load_explicit(&kp_nv.recording, memory_order_relaxed);
}

static void kp_nvtx_thread_exit(void *p)
{
    kp_nvtx_thread *t = p;
    pthread_mutex_lock(&kp_nv.threads_lock);
    kp_nvtx_thread **link = &kp_nv.threads;
    while (*link && *link != t)
        link = &(*link)->next;
    if (*link) {
        *link = t->next;
        kp_nv.abandoned += atomic_load(&t->depth) + atomic_load(&t->overflow);
    }
    pthread_mutex_unlock(&kp_nv.threads_lock);
    if (kp_nvtx_me == t) kp_nvtx_me = NULL;
    free(t);
}

/* The calling thread's state, made at its first use; NULL only when out of memory. */
static kp_nvtx_thread *kp_nvtx_self(void)
{
    kp_nvtx_thread *t = kp_nvtx_me;
    if (t) return t;
    t = calloc(1, sizeof *t);
    if (!t) return NULL;
    pthread_mutex_lock(&kp_nv.threads_lock);
    t->next = kp_nv.threads;
    kp_nv.threads = t;
    pthread_mutex_unlock(&kp_nv.threads_lock);
    pthread_setspecific(kp_nv.thread_key, t);
    kp_nvtx_me = t;
    return t;
}

static uint64_t kp_nvtx_new_id(kp_nvtx_thread *t)
{
    if (t->next_id == t->id_end) {
        t->next_id = atomic_fetch_add(&kp_nv.ids, KP_NVTX_ID_BLOCK);
        t->id_end = t->next_id + KP_NVTX_ID_BLOCK;
    }
    return t->next_id++;
}

static void kp_nvtx_fork_prepare(void)
{
    pthread_mutex_lock(&kp_nv.init_lock);
    pthread_mutex_lock(&kp_nv.registry_lock);
    pthread_mutex_lock(&kp_nv.threads_lock);
    pthread_mutex_lock(&kp_nv.started_lock);
}

static void kp_nvtx_fork_parent(void)
{
    pthread_mutex_unlock(&kp_nv.started_lock);
    pthread_mutex_unlock(&kp_nv.threads_lock);
    pthread_mutex_unlock(&kp_nv.registry_lock);
    pthread_mutex_unlock(&kp_nv.init_lock);
}

/* The child has only the forking thread, and none of its parent's open ranges: they belong to
 * the parent, which records them. The other threads' states are forgotten (not freed: their
 * threads do not exist here to free them). */
static void kp_nvtx_fork_child(void)
{
    pthread_mutex_init(&kp_nv.init_lock, NULL);
    pthread_mutex_init(&kp_nv.registry_lock, NULL);
    pthread_mutex_init(&kp_nv.threads_lock, NULL);
    pthread_mutex_init(&kp_nv.started_lock, NULL);
    kp_nv.threads = kp_nvtx_me;
    if (kp_nvtx_me) {
        kp_nvtx_me->next = NULL;
        atomic_store(&kp_nvtx_me->depth, 0);
        atomic_store(&kp_nvtx_me->overflow, 0);
    }
    kp_nv.abandoned = 0;
    if (kp_nv.started) memset(kp_nv.started, 0, kp_nv.started_cap * sizeof *kp_nv.started);
    kp_nv.nstarted = 0;
    atomic_fetch_add(&kp_nv.generation, 1);
    if (atomic_load(&kp_nv.recording)) {
        atomic_store(&kp_nv.recording, 0);
        atomic_store(&kp_nv.restart, 1);
    }
}

/* The writer's exit hook: say how many ranges were never closed. */
static void kp_nvtx_exit(void)
{
    uint64_t open = 0;
    pthread_mutex_lock(&kp_nv.threads_lock);
    open += kp_nv.abandoned;
    for (kp_nvtx_thread *t = kp_nv.threads; t; t = t->next)
        open += atomic_load(&t->depth) + atomic_load(&t->overflow);
    pthread_mutex_unlock(&kp_nv.threads_lock);
    pthread_mutex_lock(&kp_nv.started_lock);
    open += kp_nv.nstarted;
    pthread_mutex_unlock(&kp_nv.started_lock);
    if (!open) return;
    char text[200];
    snprintf(text, sizeof text,
             "%llu NVTX range%s still open when the program ended (pushed or started, never "
             "popped or ended); not recorded",
             (unsigned long long)open, open == 1 ? " was" : "s were");
    kp_writer_note(text);
}

/* ---- names ---- */

/* Wide text (UTF-32 on Linux) as UTF-8 in out[n], cut at a character boundary where it does not
 * fit; what is no Unicode scalar value becomes U+FFFD. Returns out. */
static char *kp_nvtx_utf8(const wchar_t *w, char *out, size_t n)
{
    size_t used = 0;
    for (; *w; w++) {
        uint32_t c = (uint32_t)*w;
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
        unsigned char b[4];
        size_t len;
        if (c < 0x80) {
            b[0] = (unsigned char)c;
            len = 1;
        } else if (c < 0x800) {
            b[0] = (unsigned char)(0xC0 | c >> 6);
            b[1] = (unsigned char)(0x80 | (c & 0x3F));
            len = 2;
        } else if (c < 0x10000) {
            b[0] = (unsigned char)(0xE0 | c >> 12);
            b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            b[2] = (unsigned char)(0x80 | (c & 0x3F));
            len = 3;
        } else {
            b[0] = (unsigned char)(0xF0 | c >> 18);
            b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
            b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            b[3] = (unsigned char)(0x80 | (c & 0x3F));
            len = 4;
        }
        if (used + len + 1 > n) break;
        memcpy(out + used, b, len);
        used += len;
    }
    if (n) out[used] = '\0';
    return out;
}

/* "domain:text" in out[n], cut at a UTF-8 character boundary where it does not fit. */
static const char *kp_nvtx_join(const char *domain, const char *text, char *out, size_t n)
{
    int len = snprintf(out, n, "%s:%s", domain, text);
    if (len >= 0 && (size_t)len >= n) {
        /* The last character kept starts at out[lead - 1]: drop it if it was cut short. */
        size_t end = n - 1, lead = end;
        while (lead > 0 && ((unsigned char)out[lead - 1] & 0xC0) == 0x80)
            lead--;
        if (lead > 0) {
            unsigned char c = (unsigned char)out[lead - 1];
            size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (lead - 1 + need > end) out[lead - 1] = '\0';
        }
    }
    return out;
}

/* The string id of a name, through the thread's cache (keyed by the same 64-bit hash that the
 * writer's table is keyed by), so that a name seen before takes no shared lock. */
static uint32_t kp_nvtx_intern(kp_nvtx_thread *t, const char *text)
{
    uint64_t hash = kp_hash64(KP_HASH_SEED, text, strlen(text)) | 1;
    uint32_t generation = atomic_load_explicit(&kp_nv.generation, memory_order_relaxed);
    size_t slot = (size_t)(hash >> 32) & (KP_NVTX_NAME_CACHE - 1);
    if (t->names[slot].hash == hash && t->names[slot].generation == generation)
        return t->names[slot].id;
    uint32_t id = kp_writer_string(text);
    if (id) {
        t->names[slot].hash = hash;
        t->names[slot].id = id;
        t->names[slot].generation = generation;
    }
    return id;
}

/* The string id of a range's or mark's name: its message (of type KP_NVTX_MESSAGE_*), prefixed
 * with "domain:" outside the default domain; "(unnamed)" when it has none. */
static uint32_t kp_nvtx_name(kp_nvtx_thread *t, const kp_nvtx_domain *d, int type,
                             const void *message)
{
    const char *text = NULL;
    kp_nvtx_string *registered = NULL;
    uint32_t generation = atomic_load_explicit(&kp_nv.generation, memory_order_relaxed);
    switch (type) {
    case KP_NVTX_MESSAGE_TYPE_ASCII:
        text = message;
        break;
    case KP_NVTX_MESSAGE_TYPE_UNICODE:
        if (message) text = kp_nvtx_utf8(message, t->text, sizeof t->text);
        break;
    case KP_NVTX_MESSAGE_TYPE_REGISTERED: {
        registered = (kp_nvtx_string *)(uintptr_t)message;
        if (!registered) break;
        text = registered->text;
        if (registered->domain != d) {
            registered = NULL; /* used outside its domain: named, but not cached */
            break;
        }
        uint64_t cached = atomic_load_explicit(&registered->name_id, memory_order_relaxed);
        if (cached >> 32 == generation && (uint32_t)cached) return (uint32_t)cached;
        break;
    }
    default:
        break;
    }
    if (!text || !*text) text = "(unnamed)";
    if (d && d->name[0]) text = kp_nvtx_join(d->name, text, t->full, sizeof t->full);
    uint32_t id = kp_nvtx_intern(t, text);
    if (registered && id)
        atomic_store_explicit(&registered->name_id, (uint64_t)generation << 32 | id,
                              memory_order_relaxed);
    return id;
}

/* The message of an attributes struct, where the caller's struct is big enough to hold one. */
static int kp_nvtx_message(const kp_nvtx_event_attributes *a, const void **message)
{
    *message = NULL;
    if (!a || a->size < offsetof(kp_nvtx_event_attributes, message) + sizeof a->message)
        return KP_NVTX_MESSAGE_UNKNOWN;
    *message = a->message.ascii;
    return a->message_type;
}

/* ---- ranges and marks ---- */

static void kp_nvtx_emit(uint16_t kind, uint64_t start, uint64_t end, uint32_t name, uint32_t tid,
                         uint64_t id)
{
    kp_rec r = {.kind = kind,
                .domain = KP_DOMAIN_NVTX,
                .start = start,
                .end = end,
                .name = name,
                .tid = tid,
                .id = id};
    kp_writer_emit(&r);
}

/* nvtxRangePush*'s answer, which the handlers return as is: the range's level (0 outermost), or
 * a negative number when nothing could be recorded (NVTX's own convention, not a kprof_status). */
static int kp_nvtx_push(const kp_nvtx_domain *d, int type, const void *message)
{
    kp_nvtx_recording();
    kp_nvtx_thread *t = kp_nvtx_self();
    if (!t) return -1;
    uint32_t depth = atomic_load_explicit(&t->depth, memory_order_relaxed);
    if (depth == KP_NVTX_DEPTH) {
        /* Counted, not recorded; pops take these first, so the levels held stay right. */
        uint32_t overflow = atomic_load_explicit(&t->overflow, memory_order_relaxed) + 1;
        atomic_store_explicit(&t->overflow, overflow, memory_order_relaxed);
        kp_writer_dropped(1);
        return (int)(depth + overflow - 1);
    }
    int32_t level = 0;
    for (uint32_t i = depth; i-- > 0;) {
        if (t->level[i].domain == d) {
            level = t->level[i].level + 1;
            break;
        }
    }
    kp_nvtx_level *l = &t->level[depth];
    l->domain = d;
    l->level = level;
    l->name = kp_nvtx_name(t, d, type, message);
    l->id = kp_nvtx_new_id(t);
    l->start = kp_now_ns(); /* after the name: the range does not hold kprof's own work */
    atomic_store_explicit(&t->depth, depth + 1, memory_order_relaxed);
    return level;
}

/* nvtxRangePop's answer, as above: the level of the range closed, or -1 when none was open. */
static int kp_nvtx_pop(const kp_nvtx_domain *d)
{
    uint64_t now = kp_now_ns();
    kp_nvtx_recording();
    kp_nvtx_thread *t = kp_nvtx_me;
    if (!t) return -1; /* nothing was pushed on this thread */
    uint32_t overflow = atomic_load_explicit(&t->overflow, memory_order_relaxed);
    uint32_t depth = atomic_load_explicit(&t->depth, memory_order_relaxed);
    if (overflow) {
        atomic_store_explicit(&t->overflow, overflow - 1, memory_order_relaxed);
        return (int)(depth + overflow - 1);
    }
    uint32_t i = depth;
    while (i > 0 && t->level[i - 1].domain != d)
        i--;
    if (i == 0) return -1; /* no open range of this domain on this thread */
    kp_nvtx_level l = t->level[i - 1];
    if (i < depth) /* a range of another domain opened inside it stays open */
        memmove(&t->level[i - 1], &t->level[i], (depth - i) * sizeof t->level[0]);
    atomic_store_explicit(&t->depth, depth - 1, memory_order_relaxed);
    kp_nvtx_emit(KP_REC_RANGE, l.start, now, l.name, kp_writer_tid(), l.id);
    return l.level;
}

/* Where an id's search starts in the start/end table. */
static size_t kp_nvtx_home(uint64_t id, size_t cap)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

/* Caller holds started_lock. KPROF_OK, or KPROF_NOMEM with err filled (the range is lost: the
 * caller counts it as dropped). */
static kprof_status kp_nvtx_started_put_locked(const kp_nvtx_started *s, kp_error *err)
{
    if ((kp_nv.nstarted + 1) * 2 > kp_nv.started_cap) {
        size_t cap = kp_nv.started_cap ? kp_nv.started_cap * 2 : 256;
        kp_nvtx_started *table = calloc(cap, sizeof *table);
        if (!table) return kp_error_nomem(err);
        for (size_t i = 0; i < kp_nv.started_cap; i++) {
            if (!kp_nv.started[i].id) continue;
            size_t j = kp_nvtx_home(kp_nv.started[i].id, cap);
            while (table[j].id)
                j = (j + 1) & (cap - 1);
            table[j] = kp_nv.started[i];
        }
        free(kp_nv.started);
        kp_nv.started = table;
        kp_nv.started_cap = cap;
    }
    size_t mask = kp_nv.started_cap - 1, j = kp_nvtx_home(s->id, kp_nv.started_cap);
    while (kp_nv.started[j].id)
        j = (j + 1) & mask;
    kp_nv.started[j] = *s;
    kp_nv.nstarted++;
    return 0;
}

/* Take the range with this id out of the table. 1 when found; 0 when not (never started, ended
 * already, or started in a parent process). Caller holds started_lock. */
static int kp_nvtx_started_take_locked(uint64_t id, kp_nvtx_started *out)
{
    if (!id || !kp_nv.started_cap) return 0;
    kp_nvtx_started *t = kp_nv.started;
    size_t mask = kp_nv.started_cap - 1, i = kp_nvtx_home(id, kp_nv.started_cap);
    while (t[i].id && t[i].id != id)
        i = (i + 1) & mask;
    if (!t[i].id) return 0;
    *out = t[i];
    kp_nv.nstarted--;
    /* Backward-shift deletion: move up every later entry that may live in the freed slot. */
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        if (!t[j].id) break;
        size_t home = kp_nvtx_home(t[j].id, kp_nv.started_cap);
        int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        t[i] = t[j];
        i = j;
    }
    t[i].id = 0;
    return 1;
}

static kp_nvtx_range_id kp_nvtx_start(const kp_nvtx_domain *d, int type, const void *message)
{
    kp_nvtx_recording();
    kp_nvtx_thread *t = kp_nvtx_self();
    if (!t) return 0;
    kp_nvtx_started s = {
        .name = kp_nvtx_name(t, d, type, message), .tid = kp_writer_tid(), .id = kp_nvtx_new_id(t)};
    s.start = kp_now_ns();
    pthread_mutex_lock(&kp_nv.started_lock);
    kprof_status rc = kp_nvtx_started_put_locked(&s, NULL);
    pthread_mutex_unlock(&kp_nv.started_lock);
    if (rc != KPROF_OK) {
        kp_writer_dropped(1);
        return 0;
    }
    return s.id;
}

static void kp_nvtx_end(kp_nvtx_range_id id)
{
    uint64_t now = kp_now_ns();
    kp_nvtx_recording();
    kp_nvtx_started s;
    pthread_mutex_lock(&kp_nv.started_lock);
    int found = kp_nvtx_started_take_locked(id, &s);
    pthread_mutex_unlock(&kp_nv.started_lock);
    if (found) kp_nvtx_emit(KP_REC_RANGE, s.start, now, s.name, s.tid, s.id);
}

static void kp_nvtx_mark(const kp_nvtx_domain *d, int type, const void *message)
{
    if (!kp_nvtx_recording()) return;
    kp_nvtx_thread *t = kp_nvtx_self();
    if (!t) return;
    uint32_t name = kp_nvtx_name(t, d, type, message);
    uint64_t now = kp_now_ns();
    kp_nvtx_emit(KP_REC_MARK, now, now, name, kp_writer_tid(), kp_nvtx_new_id(t));
}

/* ---- domains and registered strings ---- */

static kp_nvtx_domain *kp_nvtx_domain_create(const char *name)
{
    if (!name) name = "";
    pthread_mutex_lock(&kp_nv.registry_lock);
    kp_nvtx_domain *d = kp_nv.domains;
    while (d && strcmp(d->name, name) != 0)
        d = d->next;
    if (!d) {
        size_t len = strlen(name);
        d = malloc(sizeof *d + len + 1);
        if (d) {
            memcpy(d->name, name, len + 1);
            d->next = kp_nv.domains;
            kp_nv.domains = d;
        }
    }
    pthread_mutex_unlock(&kp_nv.registry_lock);
    return d;
}

static kp_nvtx_string *kp_nvtx_register(const kp_nvtx_domain *d, const char *text)
{
    if (!text) text = "";
    size_t len = strlen(text);
    kp_nvtx_string *s = malloc(sizeof *s + len + 1);
    if (!s) return NULL;
    s->domain = d;
    atomic_init(&s->name_id, 0);
    memcpy(s->text, text, len + 1);
    pthread_mutex_lock(&kp_nv.registry_lock);
    s->next = kp_nv.strings;
    kp_nv.strings = s;
    pthread_mutex_unlock(&kp_nv.registry_lock);
    return s;
}

/* ---- the handlers NVTX calls (signatures as in nvtxDetail/nvtxTypes.h) ---- */

static void kp_nvtx_MarkEx(const kp_nvtx_event_attributes *a)
{
    const void *message;
    int type = kp_nvtx_message(a, &message);
    kp_nvtx_mark(NULL, type, message);
}

static void kp_nvtx_MarkA(const char *message)
{
    kp_nvtx_mark(NULL, KP_NVTX_MESSAGE_TYPE_ASCII, message);
}

static void kp_nvtx_MarkW(const wchar_t *message)
{
    kp_nvtx_mark(NULL, KP_NVTX_MESSAGE_TYPE_UNICODE, message);
}

static kp_nvtx_range_id kp_nvtx_RangeStartEx(const kp_nvtx_event_attributes *a)
{
    const void *message;
    int type = kp_nvtx_message(a, &message);
    return kp_nvtx_start(NULL, type, message);
}

static kp_nvtx_range_id kp_nvtx_RangeStartA(const char *message)
{
    return kp_nvtx_start(NULL, KP_NVTX_MESSAGE_TYPE_ASCII, message);
}

static kp_nvtx_range_id kp_nvtx_RangeStartW(const wchar_t *message)
{
    return kp_nvtx_start(NULL, KP_NVTX_MESSAGE_TYPE_UNICODE, message);
}

static void kp_nvtx_RangeEnd(kp_nvtx_range_id id)
{
    kp_nvtx_end(id);
}

static int kp_nvtx_RangePushEx(const kp_nvtx_event_attributes *a)
{
    const void *message;
    int type = kp_nvtx_message(a, &message);
    return kp_nvtx_push(NULL, type, message);
}

static int kp_nvtx_RangePushA(const char *message)
{
    return kp_nvtx_push(NULL, KP_NVTX_MESSAGE_TYPE_ASCII, message);
}

static int kp_nvtx_RangePushW(const wchar_t *message)
{
    return kp_nvtx_push(NULL, KP_NVTX_MESSAGE_TYPE_UNICODE, message);
}

static int kp_nvtx_RangePop(void)
{
    return kp_nvtx_pop(NULL);
}

static void kp_nvtx_DomainMarkEx(kp_nvtx_domain *d, const kp_nvtx_event_attributes *a)
{
    const void *message;
    int type = kp_nvtx_message(a, &message);
    kp_nvtx_mark(d, type, message);
}

static kp_nvtx_range_id kp_nvtx_DomainRangeStartEx(kp_nvtx_domain *d,
                                                   const kp_nvtx_event_attributes *a)
{
    const void *message;
    int type = kp_nvtx_message(a, &message);
    return kp_nvtx_start(d, type, message);
}

static void kp_nvtx_DomainRangeEnd(kp_nvtx_domain *d, kp_nvtx_range_id id)
{
    (void)d; /* ids are unique across domains */
    kp_nvtx_end(id);
}

static int kp_nvtx_DomainRangePushEx(kp_nvtx_domain *d, const kp_nvtx_event_attributes *a)
{
    const void *message;
    int type = kp_nvtx_message(a, &message);
    return kp_nvtx_push(d, type, message);
}

static int kp_nvtx_DomainRangePop(kp_nvtx_domain *d)
{
    return kp_nvtx_pop(d);
}

static kp_nvtx_string *kp_nvtx_DomainRegisterStringA(kp_nvtx_domain *d, const char *text)
{
    return kp_nvtx_register(d, text);
}

static kp_nvtx_string *kp_nvtx_DomainRegisterStringW(kp_nvtx_domain *d, const wchar_t *text)
{
    char utf8[KP_NVTX_NAME_MAX];
    return kp_nvtx_register(d, text ? kp_nvtx_utf8(text, utf8, sizeof utf8) : NULL);
}

static kp_nvtx_domain *kp_nvtx_DomainCreateA(const char *name)
{
    return kp_nvtx_domain_create(name);
}

static kp_nvtx_domain *kp_nvtx_DomainCreateW(const wchar_t *name)
{
    char utf8[KP_NVTX_NAME_MAX];
    return kp_nvtx_domain_create(name ? kp_nvtx_utf8(name, utf8, sizeof utf8) : NULL);
}

/* Handles stay valid (see kp_nvtx_domain): creating the same name again gives the same one. */
static void kp_nvtx_DomainDestroy(kp_nvtx_domain *d)
{
    (void)d;
}

/* ---- attaching to a copy of NVTX ---- */

#define KP_NVTX_HANDLER(module, name)                                                              \
    {                                                                                              \
        KP_NVTX_CB_MODULE_##module, KP_NVTX_CBID_##module##_##name,                                \
            (kp_nvtx_function_pointer)kp_nvtx_##name                                               \
    }

static const struct {
    int module;
    unsigned id;
    kp_nvtx_function_pointer fn;
} kp_nvtx_handlers[] = {
    KP_NVTX_HANDLER(CORE, MarkEx),
    KP_NVTX_HANDLER(CORE, MarkA),
    KP_NVTX_HANDLER(CORE, MarkW),
    KP_NVTX_HANDLER(CORE, RangeStartEx),
    KP_NVTX_HANDLER(CORE, RangeStartA),
    KP_NVTX_HANDLER(CORE, RangeStartW),
    KP_NVTX_HANDLER(CORE, RangeEnd),
    KP_NVTX_HANDLER(CORE, RangePushEx),
    KP_NVTX_HANDLER(CORE, RangePushA),
    KP_NVTX_HANDLER(CORE, RangePushW),
    KP_NVTX_HANDLER(CORE, RangePop),
    KP_NVTX_HANDLER(CORE2, DomainMarkEx),
    KP_NVTX_HANDLER(CORE2, DomainRangeStartEx),
    KP_NVTX_HANDLER(CORE2, DomainRangeEnd),
    KP_NVTX_HANDLER(CORE2, DomainRangePushEx),
    KP_NVTX_HANDLER(CORE2, DomainRangePop),
    KP_NVTX_HANDLER(CORE2, DomainRegisterStringA),
    KP_NVTX_HANDLER(CORE2, DomainRegisterStringW),
    KP_NVTX_HANDLER(CORE2, DomainCreateA),
    KP_NVTX_HANDLER(CORE2, DomainCreateW),
    KP_NVTX_HANDLER(CORE2, DomainDestroy),
};

static const kp_nvtx_export_table_callbacks *kp_nvtx_callbacks(kp_nvtx_get_export_table_fn get)
{
    const kp_nvtx_export_table_callbacks *cb = get ? get(KP_NVTX_ETID_CALLBACKS) : NULL;
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable) return NULL;
    return cb;
}

/* Write kprof's handlers into a copy's tables: 1 when at least the core table took them, else 0
 * (InitializeInjectionNvtx2's answer to NVTX). */
static int kp_nvtx_install(kp_nvtx_get_export_table_fn get)
{
    const kp_nvtx_export_table_callbacks *cb = kp_nvtx_callbacks(get);
    if (!cb) return 0;
    static const int modules[] = {KP_NVTX_CB_MODULE_CORE, KP_NVTX_CB_MODULE_CORE2};
    int core = 0;
    for (size_t m = 0; m < sizeof modules / sizeof modules[0]; m++) {
        int module = modules[m];
        kp_nvtx_function_table table = NULL;
        unsigned size = 0;
        if (!cb->GetModuleFunctionTable(module, &table, &size) || !table) continue;
        for (size_t i = 0; i < sizeof kp_nvtx_handlers / sizeof kp_nvtx_handlers[0]; i++) {
            if (kp_nvtx_handlers[i].module != module) continue;
            unsigned id = kp_nvtx_handlers[i].id;
            if (id < size && table[id])
                *table[id] = kp_nvtx_handlers[i].fn; /* older copies: fewer */
        }
        core |= module == KP_NVTX_CB_MODULE_CORE;
    }
    const kp_nvtx_export_table_version_info *v = get(KP_NVTX_ETID_VERSIONINFO);
    if (v && v->struct_size >= sizeof *v && v->SetInjectionNvtxVersion)
        v->SetInjectionNvtxVersion(KP_NVTX_VERSION);
    return core;
}

/* Start recording, once per process (a forked child restarts through kp_nvtx_recording).
 * Caller holds init_lock. KPROF_OK; KPROF_IO when the writer cannot make its file, KPROF_BACKEND
 * when no thread key is left (err filled). */
static kprof_status kp_nvtx_start_recording(kp_error *err)
{
    if (kp_nv.set_up) return KPROF_OK;
    kprof_status st = kp_writer_start("nvtx", err);
    if (st != KPROF_OK) return st;
    int rc = pthread_key_create(&kp_nv.thread_key, kp_nvtx_thread_exit);
    if (rc != 0)
        return kp_error_set(err, KPROF_BACKEND, "nvtx: pthread_key_create: %s", strerror(rc));
    /* After the writer's: prepare handlers run last registered first, so ours take our locks
     * before the writer takes its own, the order the handlers take them in. */
    pthread_atfork(kp_nvtx_fork_prepare, kp_nvtx_fork_parent, kp_nvtx_fork_child);
    kp_writer_at_exit(kp_nvtx_exit);
    kp_nv.set_up = 1;
    atomic_store(&kp_nv.recording, 1);
    return KPROF_OK;
}

KP_EXPORT int InitializeInjectionNvtx2(kp_nvtx_get_export_table_fn get_export_table)
{
    int attached = 0;
    pthread_mutex_lock(&kp_nv.init_lock);
    /* NVTX wants 1 or 0; what failed cannot reach anyone from here. */
    if (kp_nvtx_start_recording(NULL) == KPROF_OK) attached = kp_nvtx_install(get_export_table);
    pthread_mutex_unlock(&kp_nv.init_lock);
    return attached;
}

/* ---- libkprof's in-process sessions ----
 *
 * A session that records NVTX (src/libkprof/nvtx.c) names this library in NVTX_INJECTION64_PATH
 * with its folder in KPROF_TRACE_DIR, as `kprof trace` does; these two, found with dlsym, end the
 * session's file at kprof_stop (when the OpenCL layer, which shares this library's writer, does
 * not) and start the next session's in its own folder. */

/* End the file being written: 1 when something was recording, else 0. */
KP_EXPORT int kprof_inject_nvtx_stop(void)
{
    if (!kp_writer_active()) return 0;
    kp_writer_stop();
    return 1;
}

/* Record into folder dir from now on: 0 (also when the writer records already, into the folder
 * the OpenCL layer started it in), -1 when NVTX has not called in yet or the file cannot be made.
 * An entry point libkprof finds with dlsym as int (*)(const char *): its 0/-1 is that ABI, kept
 * so (libkprof says what failed). */
KP_EXPORT int kprof_inject_nvtx_start(const char *dir)
{
    pthread_mutex_lock(&kp_nv.init_lock);
    int set_up = kp_nv.set_up;
    pthread_mutex_unlock(&kp_nv.init_lock);
    if (!set_up) return -1;
    /* A new file defines its strings anew: the ids cached for the last one go stale (the
     * OpenCL layer may have started this file already, so this runs either way). */
    atomic_fetch_add(&kp_nv.generation, 1);
    return kp_writer_start_in(dir, "nvtx", 0, NULL) == KPROF_OK ? 0 : -1;
}
