/*
 * protobuf.h — a small protocol buffers wire-format encoder, enough for the Perfetto export:
 * varints (uint, bool, enum), two's-complement int64, zigzag sint64, fixed64, length-delimited
 * bytes and strings, and nested messages. A message's length is not known when it starts, so
 * kp_pb_begin leaves one byte for it and kp_pb_end writes the length there, moving the body up
 * when the length needs more bytes (bodies are short; the move is rare and small).
 *
 * Bytes go into a growable buffer that is handed to a sink in chunks of about KP_PB_CHUNK bytes,
 * only between top-level fields (a message still open has no length yet), so writing a stream
 * of top-level messages — a Perfetto trace is a sequence of `packet` fields — never holds more
 * than one chunk and one message in memory. Without a sink everything stays in the buffer.
 *
 * Errors stick: the first failure (out of memory, the sink refused, misuse such as an
 * unbalanced kp_pb_end) is kept in `failed`, later calls do nothing but keep begin/end counted,
 * and the caller checks once at the end (kp_pb_finish). Not thread-safe; one kp_pb per thread.
 */
#ifndef KP_EXPORT_PROTOBUF_H
#define KP_EXPORT_PROTOBUF_H

#include "kprof.h"

#include <stddef.h>
#include <stdint.h>

#define KP_PB_MAX_DEPTH 16         /* messages open at once */
#define KP_PB_CHUNK     (1u << 20) /* bytes handed to the sink at a time, about */

/* Takes len bytes of encoded output; returns KPROF_OK, or a failure status to stop the encoder
 * (KP_PB_SINK_FAILED: the sink keeps its own status and reason). */
typedef kprof_status (*kp_pb_sink)(void *ctx, const void *data, size_t len);

enum {
    KP_PB_OK = 0,
    KP_PB_NOMEM = 1,       /* the buffer could not grow */
    KP_PB_SINK_FAILED = 2, /* the sink returned a failure */
    KP_PB_MISUSE = 3       /* kp_pb_end without kp_pb_begin, nesting beyond KP_PB_MAX_DEPTH,
                              kp_pb_finish with a message open */
};

typedef struct kp_pb {
    unsigned char *buf;           /* encoded bytes not yet given to the sink */
    size_t len, cap;              /* bytes in buf, bytes allocated */
    size_t chunk;                 /* flush once len reaches this (KP_PB_CHUNK; tests lower it) */
    size_t open[KP_PB_MAX_DEPTH]; /* where each open message's body starts in buf */
    int depth;                    /* messages open (counted on even after a failure) */
    kp_pb_sink sink;              /* NULL: keep everything in buf */
    void *sink_ctx;               /* the sink's first argument */
    uint64_t written;             /* bytes handed to the sink so far */
    int failed;                   /* KP_PB_*: the first failure, KP_PB_OK while none */
} kp_pb;

/* Start an encoder writing to sink (NULL: into pb->buf only). Nothing is allocated yet. */
void kp_pb_init(kp_pb *pb, kp_pb_sink sink, void *sink_ctx);

/* Release the buffer (what was not flushed is lost). pb may be NULL. */
void kp_pb_free(kp_pb *pb);

/* Scalar fields. field is the field number (1 to 2^29 - 1). */
void kp_pb_varint(kp_pb *pb, uint32_t field, uint64_t value);  /* uint32/64, bool, enum */
void kp_pb_int64(kp_pb *pb, uint32_t field, int64_t value);    /* int32/64: negative is 10 bytes */
void kp_pb_sint64(kp_pb *pb, uint32_t field, int64_t value);   /* sint32/64: zigzag */
void kp_pb_fixed64(kp_pb *pb, uint32_t field, uint64_t value); /* fixed64, little-endian */
void kp_pb_bytes(kp_pb *pb, uint32_t field, const void *data, size_t len);
void kp_pb_string(kp_pb *pb, uint32_t field, const char *text); /* NULL writes "" */

/* Open a nested message as field `field`; kp_pb_end closes the innermost one open. When a
 * top-level field ends and the buffer holds at least a chunk, the buffer goes to the sink. */
void kp_pb_begin(kp_pb *pb, uint32_t field);
void kp_pb_end(kp_pb *pb);

/* Hand everything buffered to the sink (nothing to do without one) and return pb->failed:
 * KP_PB_MISUSE when a message is still open. */
int kp_pb_finish(kp_pb *pb);

/* Bytes the varint encoding of value takes (1 to 10), and that encoding written at out (room
 * for 10 bytes); returns the bytes written. */
size_t kp_pb_varint_size(uint64_t value);
size_t kp_pb_varint_encode(unsigned char *out, uint64_t value);

#endif
