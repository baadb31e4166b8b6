/*
 * protobuf.c — the protocol buffers wire-format encoder of protobuf.h (wire types 0 varint,
 * 1 fixed64, 2 length-delimited; the Perfetto export needs no others).
 */
#include "export/protobuf.h"

#include <stdlib.h>
#include <string.h>

enum { KP_PB_WIRE_VARINT = 0, KP_PB_WIRE_FIXED64 = 1, KP_PB_WIRE_LEN = 2 };

void kp_pb_init(kp_pb *pb, kp_pb_sink sink, void *sink_ctx)
{
    memset(pb, 0, sizeof *pb);
    pb->chunk = KP_PB_CHUNK;
    pb->sink = sink;
    pb->sink_ctx = sink_ctx;
}

void kp_pb_free(kp_pb *pb)
{
    if (!pb) return;
    free(pb->buf);
    pb->buf = NULL;
    pb->len = pb->cap = 0;
}

size_t kp_pb_varint_size(uint64_t value)
{
    size_t n = 1;
    while (value >= 0x80) {
        value >>= 7;
        n++;
    }
    return n;
}

size_t kp_pb_varint_encode(unsigned char *out, uint64_t value)
{
    size_t n = 0;
    while (value >= 0x80) {
        out[n++] = (unsigned char)(value | 0x80);
        value >>= 7;
    }
    out[n++] = (unsigned char)value;
    return n;
}

/* Room for n more bytes; 0 when there is none (the encoder is then failed). */
static int kp_pb_room(kp_pb *pb, size_t n)
{
    if (pb->failed) return 0;
    if (pb->len + n <= pb->cap) return 1;
    size_t cap = pb->cap ? pb->cap : 4096;
    while (cap < pb->len + n) {
        if (cap > SIZE_MAX / 2) {
            pb->failed = KP_PB_NOMEM;
            return 0;
        }
        cap *= 2;
    }
    unsigned char *b = realloc(pb->buf, cap);
    if (!b) {
        pb->failed = KP_PB_NOMEM;
        return 0;
    }
    pb->buf = b;
    pb->cap = cap;
    return 1;
}

/* The buffer to the sink, when there is one and nothing is open. */
static void kp_pb_drain(kp_pb *pb)
{
    if (pb->failed || !pb->sink || pb->depth > 0 || pb->len == 0) return;
    if (pb->sink(pb->sink_ctx, pb->buf, pb->len) != KPROF_OK) {
        pb->failed = KP_PB_SINK_FAILED;
        return;
    }
    pb->written += pb->len;
    pb->len = 0;
}

/* After a top-level field: drain once a chunk has gathered. */
static void kp_pb_field_done(kp_pb *pb)
{
    if (pb->depth == 0 && pb->len >= pb->chunk) kp_pb_drain(pb);
}

static void kp_pb_put_varint(kp_pb *pb, uint64_t value)
{
    if (!kp_pb_room(pb, 10)) return;
    pb->len += kp_pb_varint_encode(pb->buf + pb->len, value);
}

static void kp_pb_tag(kp_pb *pb, uint32_t field, unsigned wire)
{
    kp_pb_put_varint(pb, (uint64_t)field << 3 | wire);
}

void kp_pb_varint(kp_pb *pb, uint32_t field, uint64_t value)
{
    if (pb->failed) return;
    kp_pb_tag(pb, field, KP_PB_WIRE_VARINT);
    kp_pb_put_varint(pb, value);
    kp_pb_field_done(pb);
}

void kp_pb_int64(kp_pb *pb, uint32_t field, int64_t value)
{
    kp_pb_varint(pb, field, (uint64_t)value); /* the wire's int64: two's complement, 10 bytes */
}

void kp_pb_sint64(kp_pb *pb, uint32_t field, int64_t value)
{
    /* Zigzag: 0, -1, 1, -2 ... as 0, 1, 2, 3 ...; shifts on the unsigned value, which C
     * defines for every input (INT64_MIN included). */
    uint64_t u = (uint64_t)value;
    kp_pb_varint(pb, field, (u << 1) ^ (value < 0 ? UINT64_MAX : 0));
}

void kp_pb_fixed64(kp_pb *pb, uint32_t field, uint64_t value)
{
    if (pb->failed) return;
    kp_pb_tag(pb, field, KP_PB_WIRE_FIXED64);
    if (!kp_pb_room(pb, 8)) return;
    for (int i = 0; i < 8; i++)
        pb->buf[pb->len++] = (unsigned char)(value >> (8 * i));
    kp_pb_field_done(pb);
}

void kp_pb_bytes(kp_pb *pb, uint32_t field, const void *data, size_t len)
{
    if (pb->failed) return;
    kp_pb_tag(pb, field, KP_PB_WIRE_LEN);
    kp_pb_put_varint(pb, len);
    if (!kp_pb_room(pb, len)) return;
    if (len) memcpy(pb->buf + pb->len, data, len);
    pb->len += len;
    kp_pb_field_done(pb);
}

void kp_pb_string(kp_pb *pb, uint32_t field, const char *text)
{
    kp_pb_bytes(pb, field, text ? text : "", text ? strlen(text) : 0);
}

void kp_pb_begin(kp_pb *pb, uint32_t field)
{
    if (pb->depth >= KP_PB_MAX_DEPTH) {
        if (!pb->failed) pb->failed = KP_PB_MISUSE;
        pb->depth++; /* still counted, so the matching end balances */
        return;
    }
    kp_pb_tag(pb, field, KP_PB_WIRE_LEN);
    if (kp_pb_room(pb, 1)) pb->buf[pb->len++] = 0; /* the length's first byte, for now */
    pb->open[pb->depth++] = pb->len;
}

void kp_pb_end(kp_pb *pb)
{
    if (pb->depth == 0) {
        if (!pb->failed) pb->failed = KP_PB_MISUSE;
        return;
    }
    pb->depth--;
    if (pb->failed) return;
    size_t start = pb->open[pb->depth], body = pb->len - start;
    size_t n = kp_pb_varint_size(body);
    if (n > 1) { /* the length needs more than the byte left for it: move the body up */
        if (!kp_pb_room(pb, n - 1)) return;
        memmove(pb->buf + start + n - 1, pb->buf + start, body);
        pb->len += n - 1;
    }
    kp_pb_varint_encode(pb->buf + start - 1, body);
    kp_pb_field_done(pb);
}

int kp_pb_finish(kp_pb *pb)
{
    if (pb->depth != 0 && !pb->failed) pb->failed = KP_PB_MISUSE;
    kp_pb_drain(pb);
    return pb->failed;
}
