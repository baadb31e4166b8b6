/* test_hotspots.c — sampled PCs summed per source line (lab/hotspots.h) from made-up samples:
 * PCs of one line (file, line, function) add up and PCs of another function or without a line
 * stay apart; "_not_issued" samples are reported beside a line's samples, never added; lines
 * and stall reasons come most first, ties in a fixed order; a PC without plain samples is no
 * line. Also the PC set itself (one entry per PC however often it is named), the lines' text
 * (trimmed, cut, escaped, found beside the source) and the JSON. */
#define _GNU_SOURCE
#include "core/pcsample.h"
#include "base/util.h"
#include "lab/hotspots.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const reasons[] = {
    "smsp__pcsamp_warps_issue_stalled_selected",
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
    "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
    "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
    "smsp__pcsamp_warps_issue_stalled_wait",
};
enum { SELECTED, LONG_SB, LONG_SB_NOT_ISSUED, MATH, WAIT, NREASONS };

/* Add samples (one count per reason, NREASONS of them) at a PC, as a sampler's record would. */
static void add(kp_pc_samples *s, const char *fn, uint64_t pc, const char *file, uint32_t line,
                const uint64_t counts[NREASONS])
{
    kp_pc_sample *p = kp_pc_samples_at(s, fn, pc);
    CHECK(p != NULL);
    if (!p) return;
    if (file && !p->file) {
        p->file = strdup(file);
        p->line = line;
    }
    for (int r = 0; r < NREASONS; r++)
        p->stalls[r] += counts[r];
}

static const kp_hotspot *find(const kp_hotspots *h, const char *file, uint32_t line, const char *fn)
{
    for (size_t i = 0; i < h->n; i++) {
        const kp_hotspot *l = &h->lines[i];
        if (strcmp(l->function, fn) != 0 || l->line != line) continue;
        if ((file == NULL) != (l->file == NULL)) continue;
        if (file && strcmp(file, l->file) != 0) continue;
        return l;
    }
    return NULL;
}

static void test_reason_names(void)
{
    CHECK_STR(kp_stall_reason_short(reasons[LONG_SB]), "long_scoreboard");
    CHECK_STR(kp_stall_reason_short(reasons[LONG_SB_NOT_ISSUED]), "long_scoreboard_not_issued");
    CHECK_STR(kp_stall_reason_short("smsp__pcsamp_sample_count"), "sample_count");
    CHECK_STR(kp_stall_reason_short("wait"), "wait");
    CHECK(kp_stall_reason_not_issued(reasons[LONG_SB_NOT_ISSUED]));
    CHECK(!kp_stall_reason_not_issued(reasons[LONG_SB]));
    CHECK(!kp_stall_reason_not_issued("_not_issue"));
}

static void test_one_entry_per_pc(void)
{
    kp_pc_samples s = {0};
    CHECK_INT(kp_pc_samples_set_reasons(&s, reasons, NREASONS, NULL), 0);
    /* Many PCs, each named three times, in an order that interleaves them: the index grows
     * through several sizes and still finds every one. */
    for (int round = 0; round < 3; round++)
        for (uint64_t pc = 0; pc < 5000; pc++) {
            kp_pc_sample *p = kp_pc_samples_at(&s, pc % 2 ? "odd" : "even", pc * 16);
            CHECK(p != NULL);
            if (p) p->stalls[WAIT]++;
        }
    CHECK_INT(s.n, 5000);
    int all_three = 1;
    for (size_t i = 0; i < s.n; i++)
        if (s.pcs[i].stalls[WAIT] != 3) all_three = 0;
    CHECK(all_three);
    /* The same offset in another function is another PC. */
    kp_pc_sample *a = kp_pc_samples_at(&s, "even", 0);
    CHECK(a != NULL && a->stalls[WAIT] == 3);
    kp_pc_sample *b = kp_pc_samples_at(&s, "odd", 0);
    CHECK(b != NULL && b->stalls[WAIT] == 0);
    CHECK_INT(s.n, 5001);
    kp_pc_samples_free(&s);
    CHECK_INT(s.n, 0);
    kp_pc_samples_free(&s); /* harmless twice */
}

static void test_aggregation(void)
{
    kp_pc_samples s = {0};
    CHECK_INT(kp_pc_samples_set_reasons(&s, reasons, NREASONS, NULL), 0);
    s.dispatches = 4;
    s.total_samples = 1000;
    s.dropped_samples = 3;
    snprintf(s.note, sizeof s.note, "a note");
    /* Line 7 of hot.cu in k: three PCs. Its samples: 100 + 300 + 60 = 460 plain; the 250
     * not-issued ones are a part of the long_scoreboard ones, not more. */
    add(&s, "k", 0x100, "/src/hot.cu", 7, (uint64_t[]){10, 50, 40, 30, 10});
    add(&s, "k", 0x110, "/src/hot.cu", 7, (uint64_t[]){0, 200, 200, 100, 0});
    add(&s, "k", 0x120, "/src/hot.cu", 7, (uint64_t[]){0, 0, 0, 0, 60});
    /* The same PC named again (another record): it adds to its line. */
    add(&s, "k", 0x100, NULL, 0, (uint64_t[]){0, 0, 10, 0, 0});
    /* Line 3 of hot.cu in k: 120 plain samples, tied by math and wait. */
    add(&s, "k", 0x010, "/src/hot.cu", 3, (uint64_t[]){0, 0, 0, 60, 60});
    /* Line 3 of hot.cu in another function: a line of its own. */
    add(&s, "k2", 0x010, "/src/hot.cu", 3, (uint64_t[]){0, 0, 0, 0, 120});
    /* Line 9 of a header: 20. */
    add(&s, "k", 0x300, "/src/inc.h", 9, (uint64_t[]){20, 0, 0, 0, 0});
    /* Two PCs without a line: one line each, by PC. */
    add(&s, "k", 0x500, NULL, 0, (uint64_t[]){0, 0, 0, 0, 80});
    add(&s, "k", 0x510, NULL, 0, (uint64_t[]){0, 0, 0, 0, 80});
    /* A PC with not-issued samples only (never in practice): no plain samples, no line. */
    add(&s, "k", 0x600, "/src/hot.cu", 11, (uint64_t[]){0, 0, 5, 0, 0});

    kp_hotspots h;
    CHECK_INT(kp_hotspots_from_samples(&s, &h, NULL), KPROF_OK);
    CHECK_INT(h.n, 6);
    CHECK_INT(h.samples, 460 + 120 + 120 + 20 + 80 + 80);
    CHECK_INT(h.total_samples, 1000);
    CHECK_INT(h.dropped_samples, 3);
    CHECK_INT(h.dispatches, 4);
    CHECK_STR(h.note, "a note");
    CHECK_INT(h.nreasons, NREASONS);
    CHECK_STR(h.reasons[MATH], "math_pipe_throttle");

    const kp_hotspot *top = &h.lines[0];
    CHECK_STR(top->file, "/src/hot.cu");
    CHECK_INT(top->line, 7);
    CHECK_STR(top->function, "k");
    CHECK_INT(top->npcs, 3);
    CHECK_INT(top->samples, 460);
    CHECK_INT(top->not_issued, 250);
    CHECK_INT(top->pc_offset, 0x110); /* its hottest PC: 300 plain samples */
    CHECK_NEAR(top->share, 460.0 / 880.0, 1e-12);
    CHECK_INT(top->nstalls, 4);
    CHECK_STR(top->stalls[0].reason, "long_scoreboard");
    CHECK_INT(top->stalls[0].samples, 250);
    CHECK_STR(top->stalls[1].reason, "math_pipe_throttle");
    CHECK_INT(top->stalls[1].samples, 130);
    CHECK_STR(top->stalls[2].reason, "wait");
    CHECK_INT(top->stalls[2].samples, 70);
    CHECK_STR(top->stalls[3].reason, "selected");
    CHECK_INT(top->stalls[3].samples, 10);

    /* 120 each: line 3 of k and of k2, ordered by function; then the two PCs without a line
     * (80 each, by PC); then the header's line. */
    CHECK_INT(h.lines[1].line, 3);
    CHECK_STR(h.lines[1].function, "k");
    CHECK_INT(h.lines[1].nstalls, 2);
    CHECK_STR(h.lines[1].stalls[0].reason, "math_pipe_throttle"); /* a tie: the sampler's order */
    CHECK_STR(h.lines[1].stalls[1].reason, "wait");
    CHECK_INT(h.lines[2].line, 3);
    CHECK_STR(h.lines[2].function, "k2");
    CHECK(h.lines[3].file == NULL && h.lines[3].line == 0);
    CHECK_INT(h.lines[3].pc_offset, 0x500);
    CHECK_INT(h.lines[4].pc_offset, 0x510);
    CHECK_INT(h.lines[4].npcs, 1);
    CHECK_STR(h.lines[5].file, "/src/inc.h");
    CHECK_INT(h.lines[5].samples, 20);
    CHECK(find(&h, "/src/hot.cu", 11, "k") == NULL);
    double shares = 0;
    for (size_t i = 0; i < h.n; i++)
        shares += h.lines[i].share;
    CHECK_NEAR(shares, 1.0, 1e-12);
    CHECK(find(&h, "/src/inc.h", 9, "k") != NULL);
    kp_hotspots_free(&h);
    CHECK_INT(h.n, 0);
    kp_hotspots_free(&h);
    kp_hotspots_free(NULL);

    /* Nothing sampled: no lines, no division by zero. */
    kp_pc_samples none = {0};
    CHECK_INT(kp_pc_samples_set_reasons(&none, reasons, NREASONS, NULL), 0);
    CHECK_INT(kp_hotspots_from_samples(&none, &h, NULL), KPROF_OK);
    CHECK_INT(h.n, 0);
    CHECK_INT(h.samples, 0);
    kp_hotspots_free(&h);
    kp_pc_samples_free(&none);
    kp_pc_samples_free(&s);
}

static char *write_file(const char *dir, const char *name, const char *text)
{
    kp_str path = {0};
    kp_str_printf(&path, "%s/%s", dir, name);
    FILE *f = fopen(path.data, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return kp_str_take(&path);
}

static void test_text(void)
{
    char dir[] = "/tmp/kprof-hotspots-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    kp_str long_line = {0};
    kp_str_append(&long_line, "x = ");
    for (int i = 0; i < 100; i++)
        kp_str_append(&long_line, "é+");
    char *src = NULL;
    {
        kp_str text = {0};
        kp_str_printf(&text, "line one\n\t  acc = acc * 2.0f;\t  \r\n%s\nbad \x01 byte \xff end\n",
                      long_line.data);
        src = write_file(dir, "hot.cu", text.data);
        kp_str_free(&text);
    }
    char *inc = write_file(dir, "inc.h", "#define X 1\nint header_line;\n");
    kp_str_free(&long_line);

    kp_hotspot lines[6];
    memset(lines, 0, sizeof lines);
    lines[0] = (kp_hotspot){.file = strdup(src), .line = 2, .function = strdup("k")};
    lines[1] = (kp_hotspot){.file = strdup(src), .line = 3, .function = strdup("k")};
    lines[2] = (kp_hotspot){.file = strdup(src), .line = 4, .function = strdup("k")};
    lines[3] = (kp_hotspot){.file = strdup(src), .line = 9, .function = strdup("k")};
    /* Relative, as NVRTC may name it: found beside the session's source. */
    lines[4] = (kp_hotspot){.file = strdup("inc.h"), .line = 2, .function = strdup("k")};
    /* Elsewhere, but with the source's base name: the source. */
    lines[5] = (kp_hotspot){.file = strdup("/nowhere/hot.cu"), .line = 1, .function = strdup("k")};
    kp_hotspots h = {0};
    h.lines = malloc(sizeof lines);
    memcpy(h.lines, lines, sizeof lines);
    h.n = 6;
    kp_hotspots_read_text(&h, src);
    CHECK_STR(h.lines[0].text, "acc = acc * 2.0f;");
    /* Cut at a character, never inside "é", and marked. */
    CHECK(h.lines[1].text != NULL);
    if (h.lines[1].text) {
        size_t n = strlen(h.lines[1].text);
        CHECK(n <= 160 + strlen("…"));
        CHECK(n > 100);
        CHECK(strcmp(h.lines[1].text + n - strlen("…"), "…") == 0);
        CHECK(strncmp(h.lines[1].text, "x = é+é+", strlen("x = é+é+")) == 0);
        CHECK(strstr(h.lines[1].text, "é…") != NULL || strstr(h.lines[1].text, "+…") != NULL);
    }
    /* Control characters and bytes that are not UTF-8 are escaped: one line, valid UTF-8. */
    CHECK_STR(h.lines[2].text, "bad \\x01 byte \\xff end");
    CHECK(h.lines[3].text == NULL); /* past the end of the file */
    CHECK_STR(h.lines[4].text, "int header_line;");
    CHECK_STR(h.lines[5].text, "line one");

    /* The JSON carries every line and its text. */
    kp_str out = {0};
    kp_json j;
    kp_json_init(&j, &out, 0);
    kp_json_object_begin(&j, NULL);
    kp_hotspots_json(&j, "hotspots", &h, NULL);
    kp_json_object_end(&j);
    kp_json_finish(&j);
    CHECK_CONTAINS(out.data, "\"available\":true");
    CHECK_CONTAINS(out.data, "\"text\":\"acc = acc * 2.0f;\"");
    CHECK_CONTAINS(out.data, "\"line\":9");
    CHECK_CONTAINS(out.data, "\"text\":null");
    CHECK_CONTAINS(out.data, "\"file\":\"inc.h\"");
    kp_str_free(&out);
    kp_json_init(&j, &out, 0);
    kp_json_object_begin(&j, NULL);
    kp_hotspots_json(&j, "hotspots", NULL, "the opencl backend has no PC sampler");
    kp_json_object_end(&j);
    kp_json_finish(&j);
    CHECK_CONTAINS(out.data,
                   "\"hotspots\":{\"available\":false,\"reason\":\"the opencl backend has no PC "
                   "sampler\"}");
    kp_str_free(&out);

    kp_hotspots_free(&h);
    unlink(src);
    unlink(inc);
    rmdir(dir);
    free(src);
    free(inc);
}

int main(void)
{
    test_reason_names();
    test_one_entry_per_pc();
    test_aggregation();
    test_text();
    TEST_DONE();
}
