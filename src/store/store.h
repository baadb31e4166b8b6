/*
 * store.h — kprof's own SQLite database for what it learns about this machine: the measured
 * bandwidth ceiling of each device (`kprof caps --measure`), which `kprof run` reports GB/s
 * against.
 *
 * Location: $KPROF_STORE (a file path), else $XDG_DATA_HOME/kprof/kprof.db, else
 * ~/.local/share/kprof/kprof.db. The schema is created on first open and versioned in
 * PRAGMA user_version; a file that is not a kprof store is refused (CORRUPT), never modified.
 */
#ifndef KP_STORE_STORE_H
#define KP_STORE_STORE_H

#include "core/device.h"

#include <stdint.h>

typedef struct kp_store kp_store;

typedef struct kp_ceiling {
    double copy_gbs;            /* best device-to-device copy, bytes read + written per s / 1e9 */
    uint64_t copy_bytes;        /* buffer size of the best copy */
    double demo_add_gbs;        /* demo_add at the largest size, ~GB/s touched */
    double demo_add_ms;         /* its median GPU ms */
    uint64_t demo_add_elements;
    int64_t measured_at;        /* unix seconds */
    char driver[128];           /* driver version when measured */
    char method[256];           /* what was measured, for people */
} kp_ceiling;

/* Open (creating when missing) the store. readonly=1 never creates: NOT_FOUND when absent. */
kprof_status kp_store_open(int readonly, kp_store **out, kp_error *err);
void kp_store_close(kp_store *s);
/* The SQLite connection, for the store's other files in src/store (notes.c): SQL stays in
 * src/store. */
struct sqlite3 *kp_store_db(kp_store *s);
/* The path the store is (or would be) at. Returns buf. */
char *kp_store_path(char *buf, size_t n);

/* The key of a device in the store: backend, name and platform. */
void kp_store_device_key(const kp_device_info *dev, char *buf, size_t n);

kprof_status kp_store_put_ceiling(kp_store *s, const kp_device_info *dev, const kp_ceiling *c,
                                  kp_error *err);
/* 0 and *c when a ceiling is stored for dev; -1 when none. */
int kp_store_get_ceiling(kp_store *s, const kp_device_info *dev, kp_ceiling *c);

/* The ceiling for dev from the default store, without creating it: 0 found, -1 none. */
int kp_store_lookup_ceiling(const kp_device_info *dev, kp_ceiling *c);

#endif
