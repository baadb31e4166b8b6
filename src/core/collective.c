/*
 * collective.c — kernel names to collective operations (see collective.h).
 */
#include "core/collective.h"

#include <stddef.h>
#include <string.h>

static const char *const kp_op_keywords[KP_COLLECTIVE_OP_COUNT] = {
#define KP_COLLECTIVE_KEYWORD_(NAME, name, keyword) [KP_COLLECTIVE_##NAME] = keyword,
    KP_COLLECTIVE_OP_LIST(KP_COLLECTIVE_KEYWORD_)
#undef KP_COLLECTIVE_KEYWORD_
};

static const char *const kp_op_names[KP_COLLECTIVE_OP_COUNT] = {
#define KP_COLLECTIVE_NAME_(NAME, name, keyword) [KP_COLLECTIVE_##NAME] = name,
    KP_COLLECTIVE_OP_LIST(KP_COLLECTIVE_NAME_)
#undef KP_COLLECTIVE_NAME_
        [KP_COLLECTIVE_OTHER] = "collective",
};

static char kp_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether name holds word (lower case), in any case. */
static int kp_has_word(const char *name, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = name; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && kp_lower(p[i]) == word[i])
            i++;
        if (i == n) return 1;
    }
    return 0;
}

/* The operation a name holds, or NONE. Only the part before an argument list counts: a
 * demangled name's parameters (ncclDevComm*) say nothing of the operation. */
static kp_collective_op kp_op_of(const char *name)
{
    char head[256];
    size_t n = strcspn(name, "(");
    if (n >= sizeof head) n = sizeof head - 1;
    memcpy(head, name, n);
    head[n] = '\0';
    for (int op = KP_COLLECTIVE_NONE + 1; op < KP_COLLECTIVE_OTHER; op++)
        if (kp_has_word(head, kp_op_keywords[op])) return (kp_collective_op)op;
    return KP_COLLECTIVE_NONE;
}

kp_collective_op kp_collective_classify(const char *name)
{
    if (!name) return KP_COLLECTIVE_NONE;
    static const char *const prefixes[] = {"ncclKernel", "ncclDevKernel", "rcclKernel"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) {
            kp_collective_op op = kp_op_of(name);
            return op != KP_COLLECTIVE_NONE ? op : KP_COLLECTIVE_OTHER;
        }
    }
    if (!kp_has_word(name, "nccl") && !kp_has_word(name, "rccl")) return KP_COLLECTIVE_NONE;
    return kp_op_of(name);
}

const char *kp_collective_op_name(kp_collective_op op)
{
    if ((int)op <= KP_COLLECTIVE_NONE || op >= KP_COLLECTIVE_OP_COUNT) return "";
    return kp_op_names[op];
}
