/*
 * pcsample.c — the set of sampled PCs (see pcsample.h): a growing array with an open-addressing
 * index on (function, offset), so a sampler that sees one PC in many records, over many
 * dispatches, keeps one entry for it.
 */
#include "core/pcsample.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

kprof_status kp_pc_samples_set_reasons(kp_pc_samples *s, const char *const *names, size_t n,
                                       kp_error *err)
{
    char **copy = calloc(n ? n : 1, sizeof *copy);
    if (!copy) return kp_error_nomem(err);
    for (size_t i = 0; i < n; i++) {
        copy[i] = kp_strdup(names[i] ? names[i] : "");
        if (!copy[i]) {
            for (size_t j = 0; j < i; j++)
                free(copy[j]);
            free(copy);
            return kp_error_nomem(err);
        }
    }
    for (size_t i = 0; i < s->nreasons; i++)
        free(s->reasons[i]);
    free(s->reasons);
    s->reasons = copy;
    s->nreasons = n;
    return KPROF_OK;
}

static size_t kp_pcs_hash(const char *function, uint64_t pc_offset)
{
    uint64_t h = kp_hash64_str(KP_HASH_SEED, function);
    h ^= pc_offset + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return (size_t)h;
}

/* Slots hold index + 1 into pcs (0 = empty); kept at most half full. KPROF_OK, or KPROF_NOMEM
 * (kp_pc_samples_at's NULL then says so). */
static kprof_status kp_pcs_reindex(kp_pc_samples *s, size_t nslots)
{
    size_t *slots = calloc(nslots, sizeof *slots);
    if (!slots) return KPROF_NOMEM;
    for (size_t i = 0; i < s->n; i++) {
        size_t at = kp_pcs_hash(s->pcs[i].function, s->pcs[i].pc_offset) & (nslots - 1);
        while (slots[at])
            at = (at + 1) & (nslots - 1);
        slots[at] = i + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = nslots;
    return KPROF_OK;
}

kp_pc_sample *kp_pc_samples_at(kp_pc_samples *s, const char *function, uint64_t pc_offset)
{
    if (!function) function = "";
    if (2 * (s->n + 1) > s->nslots && kp_pcs_reindex(s, s->nslots ? 2 * s->nslots : 64) != KPROF_OK)
        return NULL;
    size_t at = kp_pcs_hash(function, pc_offset) & (s->nslots - 1);
    for (; s->slots[at]; at = (at + 1) & (s->nslots - 1)) {
        kp_pc_sample *pc = &s->pcs[s->slots[at] - 1];
        if (pc->pc_offset == pc_offset && strcmp(pc->function, function) == 0) return pc;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        kp_pc_sample *pcs = realloc(s->pcs, cap * sizeof *pcs);
        if (!pcs) return NULL;
        s->pcs = pcs;
        s->cap = cap;
    }
    kp_pc_sample *pc = &s->pcs[s->n];
    memset(pc, 0, sizeof *pc);
    pc->function = kp_strdup(function);
    pc->stalls = calloc(s->nreasons ? s->nreasons : 1, sizeof *pc->stalls);
    if (!pc->function || !pc->stalls) {
        free(pc->function);
        free(pc->stalls);
        return NULL;
    }
    pc->pc_offset = pc_offset;
    s->slots[at] = ++s->n;
    return pc;
}

void kp_pc_samples_free(kp_pc_samples *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->pcs[i].function);
        free(s->pcs[i].file);
        free(s->pcs[i].stalls);
    }
    free(s->pcs);
    for (size_t i = 0; i < s->nreasons; i++)
        free(s->reasons[i]);
    free(s->reasons);
    free(s->slots);
    memset(s, 0, sizeof *s);
}
