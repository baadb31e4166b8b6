/* test_event.c — the event model's lists (core/event.h): the numbers the record files and traces
 * hold, what the lists derive (record kinds, kind sets, names), the docs' tables against the
 * lists, and launch geometry's one meaning of grid. */
#include "collect/record.h"
#include "core/event.h"
#include "test.h"

#include <stdlib.h>

#ifndef KPROF_SOURCE_DIR
#error "KPROF_SOURCE_DIR: the tree whose docs/formats/trace.md is checked"
#endif

/* The numbers format 1 of the record files and of the trace hold: changing one is a new format. */
static void test_numbers_are_the_format(void)
{
    CHECK_INT(KP_EVENT_API, 3);
    CHECK_INT(KP_EVENT_KERNEL, 4);
    CHECK_INT(KP_EVENT_MEMCPY, 5);
    CHECK_INT(KP_EVENT_MEMSET, 6);
    CHECK_INT(KP_EVENT_SYNC, 7);
    CHECK_INT(KP_EVENT_RANGE, 8);
    CHECK_INT(KP_EVENT_MARK, 9);
    CHECK_INT(KP_EVENT_OVERHEAD, 10);
    /* Record kinds: the event kinds, between the control records, which keep their numbers. */
    CHECK_INT(KP_REC_HEADER, 1);
    CHECK_INT(KP_REC_STRING, 2);
    CHECK_INT(KP_REC_API, KP_EVENT_API);
    CHECK_INT(KP_REC_KERNEL, KP_EVENT_KERNEL);
    CHECK_INT(KP_REC_MEMCPY, KP_EVENT_MEMCPY);
    CHECK_INT(KP_REC_MEMSET, KP_EVENT_MEMSET);
    CHECK_INT(KP_REC_SYNC, KP_EVENT_SYNC);
    CHECK_INT(KP_REC_RANGE, KP_EVENT_RANGE);
    CHECK_INT(KP_REC_MARK, KP_EVENT_MARK);
    CHECK_INT(KP_REC_OVERHEAD, KP_EVENT_OVERHEAD);
    CHECK_INT(KP_REC_DROPPED, 11);
    CHECK_INT(KP_REC_NOTE, 12);
    CHECK_INT(KP_REC_END, 13);
    CHECK_INT(KP_REC_METRIC, 14);
    CHECK_INT(KP_REC_PROCESS, 15);
    CHECK_INT(KP_REC_KERNEL_INFO, 16);
    CHECK_INT(KP_REC_KIND_COUNT, 17);
    CHECK_INT(KP_DOMAIN_NONE, 0);
    CHECK_INT(KP_DOMAIN_CUDA_RUNTIME, 1);
    CHECK_INT(KP_DOMAIN_CUDA_DRIVER, 2);
    CHECK_INT(KP_DOMAIN_OPENCL, 3);
    CHECK_INT(KP_DOMAIN_NVTX, 4);
    CHECK_INT(KP_COPY_UNKNOWN, 0);
    CHECK_INT(KP_COPY_HTOD, 1);
    CHECK_INT(KP_COPY_DTOH, 2);
    CHECK_INT(KP_COPY_DTOD, 3);
    CHECK_INT(KP_COPY_HTOH, 4);
    CHECK_INT(KP_COPY_PEER, 5);
}

static void test_what_the_list_gives(void)
{
    CHECK_STR(kp_event_kind_name(KP_EVENT_KERNEL), "kernel");
    CHECK_STR(kp_event_kind_category(KP_EVENT_RANGE), "nvtx");
    CHECK_STR(kp_event_kind_category(KP_EVENT_MARK), "nvtx");
    CHECK(kp_event_kind_name(0) == NULL);
    CHECK(kp_event_kind_name(KP_REC_DROPPED) == NULL);
    CHECK(kp_event_kind_category(-1) == NULL);
    CHECK_INT(kp_event_kind_flags(42), 0);
    CHECK(!kp_event_kind_valid(KP_REC_STRING));
    CHECK(kp_event_kind_valid(KP_EVENT_OVERHEAD));
    CHECK(kp_event_kind_on_device(KP_EVENT_MEMSET));
    CHECK(!kp_event_kind_on_device(KP_EVENT_SYNC));
    CHECK(kp_event_kind_flags(KP_EVENT_MARK) & KP_EVENT_F_INSTANT);
    char ids[64];
    CHECK_STR(kp_event_kind_ids(KP_EVENT_F_DEVICE, ids, sizeof ids), "4,5,6");
    CHECK_STR(kp_event_kind_ids(KP_EVENT_F_HOST_CALL, ids, sizeof ids), "3,7");
    CHECK_STR(kp_event_kind_ids(KP_EVENT_F_HOST_THREAD, ids, sizeof ids), "3,7,8,9");
    CHECK_STR(kp_event_kind_ids(0, ids, sizeof ids), "");
    CHECK_STR(kp_event_kind_ids(KP_EVENT_F_DEVICE, ids, 4), "4,5"); /* cut short, terminated */
    /* Every kind has a distinct name and a category; numbers are distinct (the switches would
     * not compile otherwise). */
    int seen = 0;
    for (int a = 0; a < 64; a++) {
        if (!kp_event_kind_valid(a)) continue;
        seen++;
        CHECK(kp_event_kind_category(a) != NULL);
        CHECK(kp_event_kind_what(a) != NULL);
        for (int b = a + 1; b < 64; b++)
            if (kp_event_kind_valid(b)) CHECK(strcmp(kp_event_kind_name(a), kp_event_kind_name(b)));
    }
    CHECK_INT(seen, 8);
    CHECK_STR(kp_domain_name(KP_DOMAIN_CUDA_DRIVER), "cuda_driver");
    CHECK_STR(kp_domain_name(KP_DOMAIN_NONE), "");
    CHECK_STR(kp_domain_name(KP_DOMAIN_SCOPE), "scope");
    CHECK(kp_domain_name(6) == NULL);
    CHECK_STR(kp_copy_kind_name(KP_COPY_PEER), "peer");
    CHECK(kp_copy_kind_name(6) == NULL);
}

static char *read_doc(void)
{
    const char *path = KPROF_SOURCE_DIR "/docs/formats/trace.md";
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    char *text = calloc(1, 1 << 20);
    size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (text) text[n] = '\0';
    return text;
}

static void doc_says(const char *doc, const char *line)
{
    if (strstr(doc, line)) return;
    fprintf(stderr, "docs/formats/trace.md does not say, as the lists do: %s\n", line);
    kp_test_failures++;
}

/* docs/formats/trace.md's kinds table is the list: its rows, in order, and no others. */
static void test_the_docs_say_what_the_lists_say(void)
{
    char *doc = read_doc();
    CHECK(doc != NULL);
    if (!doc) return;
    const char *table = strstr(doc, "| kinds.id | name | what |\n|---|---|---|\n");
    CHECK(table != NULL);
    if (table) {
        char want[2048] = "";
        size_t used = 0;
#define ROW_(id, NAME, name, category, flags, what)                                                \
    used += (size_t)snprintf(want + used, sizeof want - used, "| %d | %s | %s |\n", id, name, what);
        KP_EVENT_KIND_LIST(ROW_)
#undef ROW_
        const char *rows = strchr(strchr(table, '\n') + 1, '\n') + 1;
        const char *end = strstr(rows, "\n\n");
        size_t len = end ? (size_t)(end - rows) + 1 : strlen(rows);
        if (len != strlen(want) || strncmp(rows, want, len) != 0) {
            fprintf(stderr, "docs/formats/trace.md's kinds table:\n%.*sis not the list's:\n%s",
                    (int)len, rows, want);
            kp_test_failures++;
        }
    }
    /* The domains line and the copy_kind column, as the lists make them. */
    char line[512] = "`domains`: ";
    size_t used = strlen(line);
    const char *sep = "";
#define DOMAIN_(id, NAME, name)                                                                    \
    if (id) {                                                                                      \
        used += (size_t)snprintf(line + used, sizeof line - used, "%s%d `%s`", sep, id, name);     \
        sep = ", ";                                                                                \
    }
    KP_DOMAIN_LIST(DOMAIN_)
#undef DOMAIN_
    doc_says(doc, line);
    snprintf(line, sizeof line, "| `copy_kind` | memcpy | ");
    used = strlen(line);
    sep = "";
#define COPY_(id, NAME, name)                                                                      \
    used += (size_t)snprintf(line + used, sizeof line - used, "%s%d %s", sep, id, name);           \
    sep = ", ";
    KP_COPY_KIND_LIST(COPY_)
#undef COPY_
    snprintf(line + used, sizeof line - used, " |\n");
    doc_says(doc, line);
    free(doc);
}

/* Grid is the total threads per dimension; threadgroup counts come in converted. */
static void test_one_meaning_of_grid(void)
{
    kp_event e;
    memset(&e, 0, sizeof e);
    uint64_t groups[3];
    /* CUDA: 64x32 blocks of 16x16 threads are 1024x512 threads. */
    kp_event_set_groups(&e, (const int64_t[3]){64, 32, 1}, (const int64_t[3]){16, 16, 1});
    CHECK(e.known & KP_EVENT_HAS_GEOMETRY);
    CHECK_INT(e.grid[0], 1024);
    CHECK_INT(e.grid[1], 512);
    CHECK_INT(e.grid[2], 1);
    CHECK_INT(e.group[0], 16);
    CHECK(!kp_event_runtime_groups(&e));
    kp_event_groups(&e, groups);
    CHECK_INT(groups[0], 64);
    CHECK_INT(groups[1], 32);
    CHECK_INT(groups[2], 1);
    /* OpenCL with no local size: the trace's grid already counts work-items; no groups. */
    memset(&e, 0, sizeof e);
    kp_event_set_groups(&e, (const int64_t[3]){4096, 1, 1}, (const int64_t[3]){0, 0, 0});
    CHECK_INT(e.grid[0], 4096);
    CHECK(kp_event_runtime_groups(&e));
    kp_event_groups(&e, groups);
    CHECK_INT(groups[0], 0);
    /* A grid that is not a multiple of its group (OpenCL 2 non-uniform work-groups): the last,
     * partial group counts. */
    e.grid[0] = 1000;
    e.group[0] = 256;
    e.group[1] = e.group[2] = 1;
    kp_event_groups(&e, groups);
    CHECK_INT(groups[0], 4);
    /* Beyond 32 bits: 2^31-1 blocks of 1024 threads. */
    kp_event_set_groups(&e, (const int64_t[3]){2147483647, 1, 1}, (const int64_t[3]){1024, 1, 1});
    CHECK(e.grid[0] == 2147483647ull * 1024);
    /* A damaged trace's negative numbers are no threads, not a huge unsigned count. */
    kp_event_set_groups(&e, (const int64_t[3]){-5, 1, 1}, (const int64_t[3]){32, 1, 1});
    CHECK_INT(e.grid[0], 0);
    kp_event_set_groups(&e, (const int64_t[3]){INT64_MAX, 1, 1}, (const int64_t[3]){1024, 1, 1});
    CHECK(e.grid[0] == UINT64_MAX);
}

int main(void)
{
    test_numbers_are_the_format();
    test_what_the_list_gives();
    test_the_docs_say_what_the_lists_say();
    test_one_meaning_of_grid();
    return kp_test_failures ? 1 : 0;
}
