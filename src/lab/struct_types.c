/*
 * struct_types.c — structs, unions and classes a kernel source declares (see struct_types.h). A
 * small tokenizer (identifiers and the punctuation declarations need) and three patterns:
 *   struct|union|class NAME              NAME is one (a definition, a declaration, a use)
 *   typedef struct|union|class ... NAME; NAME is one (after the body, or after the tag)
 *   typedef OTHER NAME;  using NAME = OTHER;   NAME is what OTHER is
 * It never fails on odd input: it finds less.
 */
#include "lab/struct_types.h"
#include "base/error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct kp_token {
    const char *p;
    size_t n;
} kp_token;

typedef struct kp_tokens {
    kp_token *v;
    size_t n, cap;
} kp_tokens;

static int kp_ident_start(int c)
{
    return isalpha(c) || c == '_';
}

static int kp_ident_char(int c)
{
    return isalnum(c) || c == '_';
}

static kprof_status kp_tokens_push(kp_tokens *t, const char *p, size_t n, kp_error *err)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        kp_token *v = realloc(t->v, cap * sizeof *v);
        if (!v) return kp_error_nomem(err);
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = (kp_token){p, n};
    return KPROF_OK;
}

/* Identifiers and { } ; , * & = < > ( ) [ ] : ; everything else is dropped. Out of memory the
 * tokens stop where it ran out: the answer is then "the text does not say" (NONE), which a
 * caller takes for any type the text does not show. */
static void kp_tokenize(const char *s, size_t len, kp_tokens *t)
{
    size_t i = 0;
    int line_start = 1;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') {
            line_start = 1;
            i++;
            continue;
        }
        if (isspace(c)) {
            i++;
            continue;
        }
        if (c == '#' && line_start) { /* a preprocessor line, with its continuations */
            while (i < len && s[i] != '\n') {
                if (s[i] == '\\' && i + 1 < len && s[i + 1] == '\n') i++;
                i++;
            }
            continue;
        }
        line_start = 0;
        if (c == '/' && i + 1 < len && s[i + 1] == '/') {
            while (i < len && s[i] != '\n')
                i++;
            continue;
        }
        if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < len && !(s[i] == '*' && s[i + 1] == '/'))
                i++;
            i += 2;
            continue;
        }
        if (c == '"' || c == '\'') {
            i++;
            while (i < len && s[i] != (char)c && s[i] != '\n') {
                if (s[i] == '\\') i++;
                i++;
            }
            i++;
            continue;
        }
        if (kp_ident_start(c)) {
            size_t start = i;
            while (i < len && kp_ident_char((unsigned char)s[i]))
                i++;
            if (kp_tokens_push(t, s + start, i - start, NULL) != KPROF_OK) return;
            continue;
        }
        if (isdigit(c)) {
            while (i < len && (kp_ident_char((unsigned char)s[i]) || s[i] == '.'))
                i++;
            continue;
        }
        if (strchr("{};,*&=<>()[]:", c) && kp_tokens_push(t, s + i, 1, NULL) != KPROF_OK) return;
        i++;
    }
}

static int kp_tok_is(const kp_token *t, const char *word)
{
    size_t n = strlen(word);
    return t->n == n && memcmp(t->p, word, n) == 0;
}

static int kp_tok_ident(const kp_token *t)
{
    return kp_ident_start((unsigned char)t->p[0]);
}

static kp_struct_type kp_tok_struct_type(const kp_token *t)
{
    if (kp_tok_is(t, "struct") || kp_tok_is(t, "class")) return KP_STRUCT_TYPE_STRUCT;
    if (kp_tok_is(t, "union")) return KP_STRUCT_TYPE_UNION;
    return KP_STRUCT_TYPE_NONE;
}

/* Words that qualify a type in a declaration without naming it. */
static int kp_tok_qualifier(const kp_token *t)
{
    static const char *const words[] = {
        "const",   "volatile", "typename",     "__private", "private", "__global",     "__constant",
        "__local", "restrict", "__restrict__", "__align__", "alignas", "__attribute__"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (kp_tok_is(t, words[i])) return 1;
    return 0;
}

/* Skip a balanced group opening at t[i] ('{', '(', '[' or '<'); returns the index after it. */
static size_t kp_skip_group(const kp_tokens *t, size_t i, size_t end)
{
    char open = t->v[i].p[0];
    char close = open == '{' ? '}' : open == '(' ? ')' : open == '[' ? ']' : '>';
    int depth = 0;
    for (; i < end; i++) {
        if (t->v[i].n != 1) continue;
        if (t->v[i].p[0] == open)
            depth++;
        else if (t->v[i].p[0] == close && --depth == 0)
            return i + 1;
    }
    return end;
}

/* The end of the declaration starting at i: the ';' at its own brace depth (or end). */
static size_t kp_decl_end(const kp_tokens *t, size_t i)
{
    for (; i < t->n; i++) {
        if (kp_tok_is(&t->v[i], "{"))
            i = kp_skip_group(t, i, t->n) - 1;
        else if (kp_tok_is(&t->v[i], ";"))
            return i;
    }
    return t->n;
}

/* What `name` is in the tokens, following typedef and using chains (depth-limited). */
static kp_struct_type kp_lookup(const kp_tokens *t, const char *name, size_t name_n, int depth)
{
    if (depth > 8 || name_n == 0) return KP_STRUCT_TYPE_NONE;
    kp_token want = {name, name_n};
    for (size_t i = 0; i < t->n; i++) {
        const kp_token *k = &t->v[i];
        kp_struct_type agg = kp_tok_struct_type(k);
        /* struct|union|class NAME; not `enum class NAME`, nor a template's `<class T`. */
        int not_a_type = i > 0 && (kp_tok_is(&t->v[i - 1], "enum") ||
                                   (kp_tok_is(k, "class") && (kp_tok_is(&t->v[i - 1], "<") ||
                                                              kp_tok_is(&t->v[i - 1], ","))));
        if (agg && !not_a_type && i + 1 < t->n && t->v[i + 1].n == name_n &&
            memcmp(t->v[i + 1].p, name, name_n) == 0)
            return agg;
        int typedef_ = kp_tok_is(k, "typedef");
        int using_ = kp_tok_is(k, "using") && i + 2 < t->n && kp_tok_is(&t->v[i + 2], "=");
        if (!typedef_ && !using_) continue;
        size_t end = kp_decl_end(t, i + 1);
        if (using_) {
            if (!(t->v[i + 1].n == name_n && memcmp(t->v[i + 1].p, name, name_n) == 0)) continue;
            size_t j = i + 3;
            while (j < end && kp_tok_qualifier(&t->v[j]))
                j++;
            if (j >= end) return KP_STRUCT_TYPE_NONE;
            for (size_t x = j; x < end; x++)
                if (kp_tok_is(&t->v[x], "*") || kp_tok_is(&t->v[x], "&"))
                    return KP_STRUCT_TYPE_NONE;
            if (kp_tok_struct_type(&t->v[j])) return kp_tok_struct_type(&t->v[j]);
            /* ns::P<4>: the last identifier before any '<'. */
            size_t target = j;
            for (size_t x = j; x < end && !kp_tok_is(&t->v[x], "<"); x++)
                if (kp_tok_ident(&t->v[x])) target = x;
            return kp_lookup(t, t->v[target].p, t->v[target].n, depth + 1);
        }
        /* typedef ... ; find where the declarators start. */
        size_t j = i + 1;
        while (j < end && kp_tok_qualifier(&t->v[j]))
            j++;
        if (j >= end) continue;
        kp_struct_type what = kp_tok_struct_type(&t->v[j]);
        size_t decl = j + 1;
        if (what) {
            if (decl < end && kp_tok_ident(&t->v[decl])) decl++; /* the tag */
            if (decl < end && kp_tok_is(&t->v[decl], "{")) decl = kp_skip_group(t, decl, end);
        } else {
            /* The type: an identifier (maybe qualified, maybe a template) or several words
             * ("unsigned int"); the declarator is the last identifier before ';'. */
            decl = end;
            while (decl > j && !kp_tok_ident(&t->v[decl - 1]))
                decl--;
            if (decl > j) decl--;
        }
        /* Declarators: NAME, *PNAME, NAME[4], (*FN)(...) — only a plain NAME is the type. */
        for (size_t x = decl; x < end; x++) {
            const kp_token *d = &t->v[x];
            if (kp_tok_is(d, "(") || kp_tok_is(d, "[")) {
                x = kp_skip_group(t, x, end) - 1;
                continue;
            }
            if (!kp_tok_ident(d) || kp_tok_qualifier(d)) continue;
            int pointer =
                x > decl && (kp_tok_is(&t->v[x - 1], "*") || kp_tok_is(&t->v[x - 1], "&"));
            int array = x + 1 < end && kp_tok_is(&t->v[x + 1], "[");
            if (pointer || array || !(d->n == want.n && memcmp(d->p, want.p, want.n) == 0))
                continue;
            if (what) return what;
            /* typedef OTHER NAME: what OTHER is (its last identifier before any '<'). */
            size_t target = j;
            for (size_t y = j; y < decl && !kp_tok_is(&t->v[y], "<"); y++)
                if (kp_tok_ident(&t->v[y]) && !kp_tok_qualifier(&t->v[y])) target = y;
            if (target == decl) return KP_STRUCT_TYPE_NONE;
            return kp_lookup(t, t->v[target].p, t->v[target].n, depth + 1);
        }
    }
    return KP_STRUCT_TYPE_NONE;
}

/* Skip leading qualifiers in a type name; *prefix receives a struct, union or class keyword if one
 * leads. */
static const char *kp_type_core(const char *type, kp_struct_type *prefix)
{
    *prefix = KP_STRUCT_TYPE_NONE;
    static const char *const quals[] = {"const ", "volatile ", "__private ", "private ",
                                        "typename "};
    int again = 1;
    while (again) {
        again = 0;
        while (*type == ' ')
            type++;
        for (size_t i = 0; i < sizeof quals / sizeof quals[0]; i++) {
            size_t n = strlen(quals[i]);
            if (strncmp(type, quals[i], n) == 0) {
                type += n;
                again = 1;
            }
        }
    }
    static const struct {
        const char *word;
        kp_struct_type what;
    } kinds[] = {{"struct ", KP_STRUCT_TYPE_STRUCT},
                 {"class ", KP_STRUCT_TYPE_STRUCT},
                 {"union ", KP_STRUCT_TYPE_UNION}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t n = strlen(kinds[i].word);
        if (strncmp(type, kinds[i].word, n) == 0) {
            *prefix = kinds[i].what;
            return type + n;
        }
    }
    return type;
}

kp_struct_type kp_struct_type_of_name(const char *type)
{
    kp_struct_type prefix;
    kp_type_core(type ? type : "", &prefix);
    return prefix;
}

kp_struct_type kp_struct_type_in_source(const char *text, size_t len, const char *type)
{
    kp_struct_type prefix;
    const char *core = kp_type_core(type ? type : "", &prefix);
    if (prefix) return prefix;
    if (strchr(core, '*') || strchr(core, '&')) return KP_STRUCT_TYPE_NONE; /* a pointer */
    /* ns::P<4> -> P */
    size_t n = strcspn(core, "< ");
    const char *name = core;
    for (const char *c = core; c + 1 < core + n; c++)
        if (c[0] == ':' && c[1] == ':') name = c + 2;
    n -= (size_t)(name - core);
    if (n == 0 || !text) return KP_STRUCT_TYPE_NONE;
    kp_tokens t = {0};
    kp_tokenize(text, len, &t);
    kp_struct_type what = kp_lookup(&t, name, n, 0);
    free(t.v);
    return what;
}
