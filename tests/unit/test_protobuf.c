/* test_protobuf.c — the protobuf wire encoder against byte sequences known from elsewhere: the
 * examples of the protobuf encoding guide, and bytes perfetto's own Python classes
 * (perfetto_trace_pb2 with the protobuf package) produce for the same messages. */
#include "export/protobuf.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The encoder's bytes equal want (n bytes); prints both when not. */
static int same_bytes(const unsigned char *got, size_t got_len, const char *want_hex)
{
    unsigned char want[512];
    size_t n = 0;
    for (const char *p = want_hex; *p; p++) {
        if (*p == ' ') continue;
        unsigned v;
        sscanf(p, "%2x", &v);
        want[n++] = (unsigned char)v;
        p++;
    }
    if (got_len == n && memcmp(got, want, n) == 0) return 1;
    fprintf(stderr, "  got :");
    for (size_t i = 0; i < got_len; i++)
        fprintf(stderr, " %02x", got[i]);
    fprintf(stderr, "\n  want: %s\n", want_hex);
    return 0;
}

#define CHECK_BYTES(pb, hex) CHECK(same_bytes((pb)->buf, (pb)->len, hex))

/* A sink that gathers into one buffer, counting calls, and can be told to fail. */
typedef struct gather {
    unsigned char *data;
    size_t len;
    int calls;
    int fail_at; /* refuse the call with this number (1-based); 0 never */
    size_t largest;
} gather;

static kprof_status gather_sink(void *ctx, const void *data, size_t len)
{
    gather *g = ctx;
    g->calls++;
    if (g->fail_at && g->calls == g->fail_at) return KPROF_IO;
    unsigned char *d = realloc(g->data, g->len + len);
    if (!d) return KPROF_NOMEM;
    memcpy(d + g->len, data, len);
    g->data = d;
    g->len += len;
    if (len > g->largest) g->largest = len;
    return KPROF_OK;
}

static void test_scalars(void)
{
    kp_pb pb;
    /* The encoding guide: field 1 = 150 is 08 96 01; field 2 = "testing". */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_varint(&pb, 1, 150);
    kp_pb_string(&pb, 2, "testing");
    CHECK_BYTES(&pb, "08 96 01 12 07 74 65 73 74 69 6e 67");
    kp_pb_free(&pb);

    /* Varint edges: 0, 127, 128, 300, 2^63, UINT64_MAX (ten bytes). */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_varint(&pb, 1, 0);
    kp_pb_varint(&pb, 1, 127);
    kp_pb_varint(&pb, 1, 128);
    kp_pb_varint(&pb, 1, 300);
    kp_pb_varint(&pb, 1, 1ull << 63);
    kp_pb_varint(&pb, 1, UINT64_MAX);
    CHECK_BYTES(&pb, "08 00 08 7f 08 80 01 08 ac 02 08 80 80 80 80 80 80 80 80 80 01"
                     " 08 ff ff ff ff ff ff ff ff ff 01");
    kp_pb_free(&pb);
    CHECK_INT(kp_pb_varint_size(0), 1);
    CHECK_INT(kp_pb_varint_size(127), 1);
    CHECK_INT(kp_pb_varint_size(128), 2);
    CHECK_INT(kp_pb_varint_size(16383), 2);
    CHECK_INT(kp_pb_varint_size(16384), 3);
    CHECK_INT(kp_pb_varint_size(UINT64_MAX), 10);

    /* int64: a negative number is its two's complement, ten bytes. */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_int64(&pb, 4, -1);
    kp_pb_int64(&pb, 4, 16);
    CHECK_BYTES(&pb, "20 ff ff ff ff ff ff ff ff ff 01 20 10");
    kp_pb_free(&pb);

    /* sint64 zigzag: 0 1 -1 2 -2 ... as 0 2 1 4 3; INT64_MAX and INT64_MIN at the ends. */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_sint64(&pb, 1, 0);
    kp_pb_sint64(&pb, 1, -1);
    kp_pb_sint64(&pb, 1, 1);
    kp_pb_sint64(&pb, 1, -2);
    kp_pb_sint64(&pb, 1, 2147483647);
    kp_pb_sint64(&pb, 1, INT64_MAX);
    kp_pb_sint64(&pb, 1, INT64_MIN);
    CHECK_BYTES(&pb, "08 00 08 01 08 02 08 03 08 fe ff ff ff 0f"
                     " 08 fe ff ff ff ff ff ff ff ff 01 08 ff ff ff ff ff ff ff ff ff 01");
    kp_pb_free(&pb);

    /* fixed64, little-endian, with a two-byte tag (TrackEvent.flow_ids is field 47). */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_fixed64(&pb, 47, 0x0102030405060708ull);
    CHECK_BYTES(&pb, "f9 02 08 07 06 05 04 03 02 01");
    kp_pb_free(&pb);

    /* Empty and NULL strings, bytes with a NUL inside, the largest field number. */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_string(&pb, 2, "");
    kp_pb_string(&pb, 2, NULL);
    kp_pb_bytes(&pb, 3, "a\0b", 3);
    kp_pb_varint(&pb, (1u << 29) - 1, 1);
    CHECK_BYTES(&pb, "12 00 12 00 1a 03 61 00 62 f8 ff ff ff 0f 01");
    kp_pb_free(&pb);
}

static void test_nested(void)
{
    kp_pb pb;
    /* The encoding guide: field 3 holding a message with field 1 = 150 is 1a 03 08 96 01. */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_begin(&pb, 3);
    kp_pb_varint(&pb, 1, 150);
    kp_pb_end(&pb);
    CHECK_BYTES(&pb, "1a 03 08 96 01");
    kp_pb_free(&pb);

    /* What perfetto_trace_pb2 writes for Trace{packet{track_event{type: SLICE_BEGIN},
     * timestamp_clock_id: 3}}: 0a 07 5a 02 48 01 d0 03 03. */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_begin(&pb, 1);
    kp_pb_begin(&pb, 11);
    kp_pb_varint(&pb, 9, 1);
    kp_pb_end(&pb);
    kp_pb_varint(&pb, 58, 3);
    kp_pb_end(&pb);
    CHECK_BYTES(&pb, "0a 07 5a 02 48 01 d0 03 03");
    kp_pb_free(&pb);

    /* An empty message. */
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_begin(&pb, 5);
    kp_pb_end(&pb);
    CHECK_BYTES(&pb, "2a 00");
    CHECK_INT(kp_pb_finish(&pb), KP_PB_OK);
    kp_pb_free(&pb);

    /* Bodies past 127 and 16383 bytes: the length takes two and three bytes, and the body moves
     * up whole, inner and outer messages both. */
    kp_pb_init(&pb, NULL, NULL);
    char text[20000];
    memset(text, 'x', sizeof text);
    kp_pb_begin(&pb, 1); /* outer: 206 + 20004 + 2 = 20212 bytes of body */
    kp_pb_begin(&pb, 2); /* inner: a 200-byte string, 203 bytes of body */
    kp_pb_bytes(&pb, 1, text, 200);
    kp_pb_end(&pb);
    kp_pb_bytes(&pb, 3, text, 20000);
    kp_pb_varint(&pb, 4, 7);
    kp_pb_end(&pb);
    CHECK_INT(kp_pb_finish(&pb), KP_PB_OK);
    CHECK_INT(pb.len, 1 + 3 + 20212);
    const unsigned char *b = pb.buf;
    CHECK(b[0] == 0x0a && b[1] == 0xf4 && b[2] == 0x9d && b[3] == 0x01); /* 20212 */
    CHECK(b[4] == 0x12 && b[5] == 0xcb && b[6] == 0x01);                 /* field 2, 203 */
    CHECK(b[7] == 0x0a && b[8] == 0xc8 && b[9] == 0x01 && b[10] == 'x' && b[209] == 'x');
    CHECK(b[210] == 0x1a && b[211] == 0xa0 && b[212] == 0x9c && b[213] == 0x01); /* 20000 */
    CHECK(b[214] == 'x' && b[214 + 19999] == 'x');
    CHECK(b[214 + 20000] == 0x20 && b[214 + 20001] == 7);
    kp_pb_free(&pb);
}

static void test_chunks(void)
{
    /* Top-level messages go to the sink in chunks, never while a message is open, and the
     * chunks joined are the bytes an encoder without a sink makes. */
    gather g = {0};
    kp_pb pb, whole;
    kp_pb_init(&pb, gather_sink, &g);
    kp_pb_init(&whole, NULL, NULL);
    pb.chunk = 64;
    kp_pb *both[2] = {&pb, &whole};
    for (int i = 0; i < 1000; i++) {
        for (int k = 0; k < 2; k++) {
            kp_pb *p = both[k];
            kp_pb_begin(p, 1);
            kp_pb_varint(p, 8, (uint64_t)i * 1000003);
            kp_pb_begin(p, 11);
            kp_pb_varint(p, 9, 1 + i % 2);
            kp_pb_string(p, 23, i % 7 ? "k" : "a longer name than the others");
            kp_pb_end(p);
            kp_pb_end(p);
        }
        CHECK(pb.len < 64 + 64); /* at most a chunk and one packet */
    }
    CHECK_INT(kp_pb_finish(&pb), KP_PB_OK);
    CHECK_INT(kp_pb_finish(&whole), KP_PB_OK);
    CHECK_INT(pb.len, 0);
    CHECK_INT(g.len, whole.len);
    CHECK_INT(pb.written, whole.len);
    CHECK(g.data && memcmp(g.data, whole.buf, whole.len) == 0);
    CHECK(g.calls > 100);
    CHECK(g.largest < 64 + 64);
    kp_pb_free(&pb);
    kp_pb_free(&whole);
    free(g.data);

    /* A sink that fails stops the encoder; later fields do nothing; the failure stays. */
    gather bad = {.fail_at = 2};
    kp_pb_init(&pb, gather_sink, &bad);
    pb.chunk = 16;
    for (int i = 0; i < 100; i++) {
        kp_pb_begin(&pb, 1);
        kp_pb_string(&pb, 2, "sixteen bytes...");
        kp_pb_end(&pb);
    }
    CHECK_INT(pb.failed, KP_PB_SINK_FAILED);
    CHECK_INT(bad.calls, 2);
    CHECK_INT(kp_pb_finish(&pb), KP_PB_SINK_FAILED);
    CHECK_INT(bad.calls, 2);
    kp_pb_free(&pb);
    free(bad.data);
}

static void test_misuse(void)
{
    kp_pb pb;
    kp_pb_init(&pb, NULL, NULL);
    kp_pb_end(&pb);
    CHECK_INT(pb.failed, KP_PB_MISUSE);
    kp_pb_free(&pb);

    kp_pb_init(&pb, NULL, NULL);
    kp_pb_begin(&pb, 1);
    CHECK_INT(kp_pb_finish(&pb), KP_PB_MISUSE);
    kp_pb_free(&pb);

    /* Too deep: failed, and the ends still balance without touching memory out of range. */
    kp_pb_init(&pb, NULL, NULL);
    for (int i = 0; i < KP_PB_MAX_DEPTH + 3; i++)
        kp_pb_begin(&pb, 1);
    CHECK_INT(pb.failed, KP_PB_MISUSE);
    for (int i = 0; i < KP_PB_MAX_DEPTH + 3; i++)
        kp_pb_end(&pb);
    CHECK_INT(pb.depth, 0);
    kp_pb_free(&pb);
    kp_pb_free(NULL);
}

int main(void)
{
    test_scalars();
    test_nested();
    test_chunks();
    test_misuse();
    return kp_test_failures ? 1 : 0;
}
