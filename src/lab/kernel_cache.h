/*
 * kernel_cache.h — compiled kernels kept on disk, keyed by (source hash, options, device), so a
 * second `kprof run` of the same kernel needs no compiler.
 *
 * Folder: $KPROF_CACHE_DIR, else $XDG_CACHE_HOME/kprof, else ~/.cache/kprof. Each entry is
 * <folder>/<backend>/<key>.bin (the backend's binary) and <key>.meta (the program's kernels and
 * parameters, text, with the binary's length and hash). Entries are written atomically; a
 * damaged or truncated entry reads as a miss and is rebuilt.
 */
#ifndef KP_LAB_KERNEL_CACHE_H
#define KP_LAB_KERNEL_CACHE_H

#include "base/error.h"
#include "core/device.h"

#include <stdint.h>

/* The cache folder (not created). Returns buf, or NULL when no folder can be named. */
char *kp_cache_dir(char *buf, size_t n);

/* The key of a build: everything that can change the binary (for CUDA, the source's path too:
 * the line info names it). */
uint64_t kp_cache_key(const kp_device_info *dev, const kp_source *src);

/* A lookup: 0 and the entry on a hit (binary heap, meta filled); -1 on a miss. A missing,
 * damaged or truncated entry is a miss, not a failure: it is rebuilt. */
int kp_cache_get(const char *backend, uint64_t key, unsigned char **binary, size_t *len,
                 kp_program_meta *meta);

/* Store an entry. KPROF_OK; KPROF_INVALID (no binary, a folder path too long), KPROF_IO (no
 * folder can be named, or a file cannot be written), KPROF_NOMEM, err filled. Callers may ignore
 * a failure: the cache is an optimisation. */
kprof_status kp_cache_put(const char *backend, uint64_t key, const unsigned char *binary,
                          size_t len, const kp_program_meta *meta, kp_error *err);

/* Program metadata as text and back (exposed for tests). Serialise returns heap text (NULL out
 * of memory). Parse: KPROF_OK with meta filled (kp_program_meta_free releases); KPROF_CORRUPT
 * naming the damaged line, or KPROF_NOMEM, with meta left empty and err filled. */
char *kp_meta_serialize(const kp_program_meta *meta);
kprof_status kp_meta_parse(const char *text, kp_program_meta *meta, kp_error *err);

#endif
