/*
 * cuda_parse.c — kernel declarations from CUDA C++ source, parameter lists, demangled names,
 * option words and the NVRTC architecture choice (see cuda_parse.h).
 */
#include "backend/cuda/cuda_parse.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* ---- tokens --------------------------------------------------------------------------- */

typedef struct kp_cuda_token {
    const char *s; /* into the cleaned text */
    size_t n;
} kp_cuda_token;

typedef struct kp_cuda_tokens {
    kp_cuda_token *t;
    size_t count, capacity;
} kp_cuda_tokens;

static int kp_cuda_ident_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static int kp_cuda_ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Copy of text with comments, the insides of string and character literals and preprocessor
 * lines turned into blanks (newlines kept), so tokens never come from them. */
static char *kp_cuda_clean(const char *text, size_t len)
{
    char *out = malloc(len + 1);
    if (!out) return NULL;
    size_t i = 0;
    int line_start = 1;
    while (i < len) {
        char c = text[i];
        if (c == '/' && i + 1 < len && text[i + 1] == '/') {
            while (i < len && text[i] != '\n')
                out[i++] = ' ';
            continue;
        }
        if (c == '/' && i + 1 < len && text[i + 1] == '*') {
            out[i++] = ' ';
            out[i++] = ' ';
            while (i < len && !(text[i] == '*' && i + 1 < len && text[i + 1] == '/')) {
                out[i] = text[i] == '\n' ? '\n' : ' ';
                i++;
            }
            for (int k = 0; k < 2 && i < len; k++)
                out[i++] = ' ';
            continue;
        }
        if (c == '"' || c == '\'') {
            out[i++] = c;
            while (i < len && text[i] != c && text[i] != '\n') {
                if (text[i] == '\\' && i + 1 < len && text[i + 1] != '\n') out[i++] = ' ';
                out[i++] = ' ';
            }
            if (i < len && text[i] == c) out[i++] = c;
            line_start = 0;
            continue;
        }
        if (c == '#' && line_start) {
            /* A directive runs to the end of the line, and on over backslash-newlines. */
            while (i < len && text[i] != '\n') {
                if (text[i] == '\\' && i + 1 < len && text[i + 1] == '\n') {
                    out[i++] = ' ';
                    out[i++] = '\n';
                    continue;
                }
                out[i++] = ' ';
            }
            continue;
        }
        if (c == '\n')
            line_start = 1;
        else if (!isspace((unsigned char)c))
            line_start = 0;
        out[i++] = c;
    }
    out[len] = '\0';
    return out;
}

/* The tokens of s[0..len) into out (heap). KPROF_OK, or KPROF_NOMEM with out emptied. */
static kprof_status kp_cuda_tokenize(const char *s, size_t len, kp_cuda_tokens *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    size_t i = 0;
    while (i < len) {
        if (isspace((unsigned char)s[i]) || s[i] == '\0') {
            i++;
            continue;
        }
        size_t start = i;
        if (kp_cuda_ident_start(s[i]) || isdigit((unsigned char)s[i])) {
            while (i < len &&
                   (kp_cuda_ident_char(s[i]) || (isdigit((unsigned char)s[start]) && s[i] == '.')))
                i++;
        } else if (s[i] == ':' && i + 1 < len && s[i + 1] == ':') {
            i += 2;
        } else {
            i++;
        }
        if (out->count == out->capacity) {
            size_t cap = out->capacity ? out->capacity * 2 : 256;
            kp_cuda_token *t = realloc(out->t, cap * sizeof *t);
            if (!t) {
                free(out->t);
                memset(out, 0, sizeof *out);
                return kp_error_nomem(err);
            }
            out->t = t;
            out->capacity = cap;
        }
        out->t[out->count].s = s + start;
        out->t[out->count].n = i - start;
        out->count++;
    }
    return KPROF_OK;
}

static int kp_cuda_tok_is(const kp_cuda_token *t, const char *word)
{
    return t->n == strlen(word) && memcmp(t->s, word, t->n) == 0;
}

static int kp_cuda_tok_ident(const kp_cuda_token *t)
{
    return t->n > 0 && kp_cuda_ident_start(t->s[0]);
}

/* Index of the token closing the bracket opened at tokens[open], or `end` when unbalanced. */
static size_t kp_cuda_match(const kp_cuda_token *t, size_t open, size_t end)
{
    char o = t[open].s[0];
    char c = o == '(' ? ')' : o == '[' ? ']' : o == '{' ? '}' : '>';
    int depth = 0;
    for (size_t i = open; i < end; i++) {
        if (t[i].n != 1) continue;
        if (t[i].s[0] == o)
            depth++;
        else if (t[i].s[0] == c && --depth == 0)
            return i;
    }
    return end;
}

/* ---- parameter lists ------------------------------------------------------------------ */

/* Words that are part of a type, never a parameter's name. */
static int kp_cuda_type_word(const kp_cuda_token *t)
{
    static const char *const words[] = {
        "void", "char",  "short",    "int",    "long",  "float", "double", "signed",   "unsigned",
        "bool", "const", "volatile", "struct", "class", "union", "enum",   "typename", "auto"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (kp_cuda_tok_is(t, words[i])) return 1;
    return 0;
}

/* Attributes that say nothing about the type kprof passes. */
static int kp_cuda_ignored_word(const kp_cuda_token *t)
{
    return kp_cuda_tok_is(t, "__restrict__") || kp_cuda_tok_is(t, "__restrict") ||
           kp_cuda_tok_is(t, "restrict") || kp_cuda_tok_is(t, "__grid_constant__") ||
           kp_cuda_tok_is(t, "register");
}

/* Attributes followed by a parenthesised argument list. */
static int kp_cuda_attribute_call(const kp_cuda_token *t)
{
    return kp_cuda_tok_is(t, "__attribute__") || kp_cuda_tok_is(t, "__align__") ||
           kp_cuda_tok_is(t, "alignas") || kp_cuda_tok_is(t, "__declspec") ||
           kp_cuda_tok_is(t, "__launch_bounds__") || kp_cuda_tok_is(t, "__maxnreg__") ||
           kp_cuda_tok_is(t, "__cluster_dims__");
}

/* Append a token to a type spelling: a blank only between two words ("unsigned int"), and
 * after a comma ("Foo<int, 4>"). */
static void kp_cuda_type_append(char *out, size_t n, const kp_cuda_token *t)
{
    size_t len = strlen(out);
    if (len &&
        ((kp_cuda_ident_char(out[len - 1]) && kp_cuda_ident_char(t->s[0])) || out[len - 1] == ','))
        snprintf(out + len, n - len, " ");
    len = strlen(out);
    snprintf(out + len, n - len, "%.*s", (int)t->n, t->s);
}

/* One parameter from its tokens t[0..n). */
static void kp_cuda_param_from_tokens(const kp_cuda_token *t, size_t n, int named,
                                      kp_cuda_decl_param *p)
{
    memset(p, 0, sizeof *p);
    /* Drop a default argument. */
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = t[i].n == 1 ? t[i].s[0] : 0;
        if (c == '(' || c == '[' || c == '{' || c == '<')
            depth++;
        else if (c == ')' || c == ']' || c == '}' || c == '>')
            depth--;
        else if (c == '=' && depth == 0) {
            n = i;
            break;
        }
    }
    /* Keep the tokens that spell the type, minus attributes and qualifiers; note const. */
    size_t keep[128];
    size_t nkeep = 0, array_at = n;
    int is_const = 0, is_volatile = 0, angle = 0, seen_star = 0;
    for (size_t i = 0; i < n && nkeep < sizeof keep / sizeof keep[0]; i++) {
        const kp_cuda_token *k = &t[i];
        if (kp_cuda_ignored_word(k)) continue;
        if (kp_cuda_attribute_call(k) && i + 1 < n && kp_cuda_tok_is(&t[i + 1], "(")) {
            i = kp_cuda_match(t, i + 1, n);
            continue;
        }
        if (kp_cuda_tok_is(k, "[") && i + 1 < n && kp_cuda_tok_is(&t[i + 1], "[")) {
            size_t j = kp_cuda_match(t, i, n);
            i = j;
            continue;
        }
        if (k->n == 1 && k->s[0] == '<') angle++;
        if (k->n == 1 && k->s[0] == '>') angle--;
        if (angle == 0 && (kp_cuda_tok_is(k, "const") || kp_cuda_tok_is(k, "volatile"))) {
            /* Only a qualifier of the pointee (before the first star) is worth keeping. */
            if (!seen_star) {
                if (k->s[0] == 'c')
                    is_const = 1;
                else
                    is_volatile = 1;
            }
            continue;
        }
        if (angle == 0 && k->n == 1 && k->s[0] == '*') {
            p->pointer = 1;
            seen_star = 1;
        }
        if (angle == 0 && k->n == 1 && k->s[0] == '[' && array_at == n) {
            p->pointer = 1;
            array_at = nkeep;
        }
        keep[nkeep++] = i;
    }
    /* The name: the last word before any array brackets, after at least one type word. */
    size_t end = array_at < nkeep ? array_at : nkeep;
    size_t name_at = nkeep;
    if (named && end >= 2) {
        const kp_cuda_token *last = &t[keep[end - 1]];
        const kp_cuda_token *before = &t[keep[end - 2]];
        if (kp_cuda_tok_ident(last) && !kp_cuda_type_word(last) && !kp_cuda_tok_is(before, "::"))
            name_at = end - 1;
    }
    if (name_at < nkeep)
        snprintf(p->name, sizeof p->name, "%.*s", (int)t[keep[name_at]].n, t[keep[name_at]].s);
    if (is_const) snprintf(p->type_name, sizeof p->type_name, "const ");
    if (is_volatile) {
        size_t len = strlen(p->type_name);
        snprintf(p->type_name + len, sizeof p->type_name - len, "volatile ");
    }
    for (size_t i = 0; i < end; i++)
        if (i != name_at) kp_cuda_type_append(p->type_name, sizeof p->type_name, &t[keep[i]]);
    if (array_at < nkeep) {
        size_t len = strlen(p->type_name);
        snprintf(p->type_name + len, sizeof p->type_name - len, "*");
    }
}

static kprof_status kp_cuda_params_from_tokens(const kp_cuda_token *t, size_t n, int named,
                                               kp_cuda_decl_param **params, int *nparams,
                                               kp_error *err)
{
    *params = NULL;
    *nparams = 0;
    if (n == 0 || (n == 1 && kp_cuda_tok_is(&t[0], "void"))) return KPROF_OK;
    size_t count = 1;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        char c = t[i].n == 1 ? t[i].s[0] : 0;
        if (c == '(' || c == '[' || c == '{' || c == '<')
            depth++;
        else if (c == ')' || c == ']' || c == '}' || c == '>')
            depth--;
        else if (c == ',' && depth == 0)
            count++;
    }
    kp_cuda_decl_param *p = calloc(count, sizeof *p);
    if (!p) return kp_error_nomem(err);
    size_t start = 0, k = 0;
    depth = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = i < n && t[i].n == 1 ? t[i].s[0] : 0;
        if (c == '(' || c == '[' || c == '{' || c == '<')
            depth++;
        else if (c == ')' || c == ']' || c == '}' || c == '>')
            depth--;
        if (i == n || (c == ',' && depth == 0)) {
            if (k < count) kp_cuda_param_from_tokens(t + start, i - start, named, &p[k++]);
            start = i + 1;
        }
    }
    *params = p;
    *nparams = (int)count;
    return KPROF_OK;
}

kprof_status kp_cuda_parse_param_list(const char *text, size_t len, int named,
                                      kp_cuda_decl_param **params, int *nparams, kp_error *err)
{
    *params = NULL;
    *nparams = 0;
    char *clean = kp_cuda_clean(text, len);
    if (!clean) return kp_error_nomem(err);
    kp_cuda_tokens toks;
    kprof_status rc = kp_cuda_tokenize(clean, len, &toks, err);
    if (rc == KPROF_OK)
        rc = kp_cuda_params_from_tokens(toks.t, toks.count, named, params, nparams, err);
    free(toks.t);
    free(clean);
    return rc;
}

/* ---- kernel declarations -------------------------------------------------------------- */

static kprof_status kp_cuda_decl_add(kp_cuda_decls *d, int *capacity, const kp_cuda_token *name,
                                     const kp_cuda_token *t, size_t open, size_t close,
                                     kp_error *err)
{
    if (d->count == *capacity) {
        int cap = *capacity ? *capacity * 2 : 8;
        kp_cuda_decl *n = realloc(d->decls, (size_t)cap * sizeof *n);
        if (!n) return kp_error_nomem(err);
        d->decls = n;
        *capacity = cap;
    }
    kp_cuda_decl *decl = &d->decls[d->count];
    memset(decl, 0, sizeof *decl);
    snprintf(decl->name, sizeof decl->name, "%.*s", (int)name->n, name->s);
    kprof_status st = kp_cuda_params_from_tokens(t + open + 1, close - open - 1, 1, &decl->params,
                                                 &decl->nparams, err);
    if (st != KPROF_OK) return st;
    for (int i = 0; i < decl->nparams; i++)
        if (decl->params[i].name[0]) decl->named++;
    decl->order = d->count;
    d->count++;
    return KPROF_OK;
}

kprof_status kp_cuda_parse_kernels(const char *text, size_t len, kp_cuda_decls *out, kp_error *err)
{
    memset(out, 0, sizeof *out);
    int capacity = 0;
    kprof_status rc = KPROF_OK;
    kp_cuda_tokens toks = {0};
    char *clean = kp_cuda_clean(text, len);
    if (!clean) {
        rc = kp_error_nomem(err);
        goto fail;
    }
    rc = kp_cuda_tokenize(clean, len, &toks, err);
    if (rc != KPROF_OK) goto fail;
    const kp_cuda_token *t = toks.t;
    size_t n = toks.count;
    for (size_t i = 0; i < n; i++) {
        if (!kp_cuda_tok_is(&t[i], "__global__")) continue;
        /* Walk to the parameter list: skip attribute calls, stop at anything that ends a
         * declaration before one appears. */
        for (size_t j = i + 1; j < n && j < i + 96; j++) {
            const kp_cuda_token *k = &t[j];
            if (kp_cuda_tok_is(k, ";") || kp_cuda_tok_is(k, "{") || kp_cuda_tok_is(k, "}") ||
                kp_cuda_tok_is(k, "=") || kp_cuda_tok_is(k, "__global__"))
                break;
            if (kp_cuda_attribute_call(k) && j + 1 < n && kp_cuda_tok_is(&t[j + 1], "(")) {
                j = kp_cuda_match(t, j + 1, n);
                continue;
            }
            if (kp_cuda_tok_is(k, "[") && j + 1 < n && kp_cuda_tok_is(&t[j + 1], "[")) {
                j = kp_cuda_match(t, j, n);
                continue;
            }
            if (!kp_cuda_tok_is(k, "(")) continue;
            /* The name is just before: an identifier, maybe with template arguments. */
            size_t p = j - 1;
            if (kp_cuda_tok_is(&t[p], ">")) {
                int depth = 0;
                while (p > i) {
                    if (kp_cuda_tok_is(&t[p], ">"))
                        depth++;
                    else if (kp_cuda_tok_is(&t[p], "<") && --depth == 0)
                        break;
                    p--;
                }
                p = p > i ? p - 1 : i;
            }
            size_t close = kp_cuda_match(t, j, n);
            if (p > i && kp_cuda_tok_ident(&t[p]) && !kp_cuda_type_word(&t[p]) && close < n) {
                rc = kp_cuda_decl_add(out, &capacity, &t[p], t, j, close, err);
                if (rc != KPROF_OK) goto fail;
                i = close;
            }
            break;
        }
    }
    goto done;
fail:
    kp_cuda_decls_free(out);
done:
    free(toks.t);
    free(clean);
    return rc;
}

void kp_cuda_decls_free(kp_cuda_decls *d)
{
    if (!d) return;
    for (int i = 0; i < d->count; i++)
        free(d->decls[i].params);
    free(d->decls);
    memset(d, 0, sizeof *d);
}

static int kp_cuda_same_types(const kp_cuda_decl *a, const kp_cuda_decl *b)
{
    if (a->nparams != b->nparams) return 0;
    for (int i = 0; i < a->nparams; i++)
        if (strcmp(a->params[i].type_name, b->params[i].type_name) != 0) return 0;
    return 1;
}

static int kp_cuda_decl_matches(const kp_cuda_decl *c, const char *base_name, int nparams,
                                const char *pointers)
{
    if (strcmp(c->name, base_name) != 0 || c->nparams != nparams) return 0;
    if (!pointers) return 1;
    if ((int)strlen(pointers) != nparams) return 0;
    for (int k = 0; k < nparams; k++)
        if ((pointers[k] == '1') != (c->params[k].pointer != 0)) return 0;
    return 1;
}

const kp_cuda_decl *kp_cuda_decl_find(const kp_cuda_decls *d, const char *base_name, int nparams,
                                      const char *pointers)
{
    /* Declarations that name their parameters outrank those that do not: a template's
     * definition ("T *x") over its explicit instantiation ("float *"). */
    int any_named = 0;
    for (int i = 0; i < d->count; i++)
        if (kp_cuda_decl_matches(&d->decls[i], base_name, nparams, pointers) &&
            d->decls[i].named > 0)
            any_named = 1;
    const kp_cuda_decl *best = NULL;
    for (int i = 0; i < d->count; i++) {
        const kp_cuda_decl *c = &d->decls[i];
        if (!kp_cuda_decl_matches(c, base_name, nparams, pointers)) continue;
        if (any_named && c->named == 0 && nparams > 0) continue;
        if (!best) {
            best = c;
            continue;
        }
        if (!kp_cuda_same_types(best, c)) return NULL; /* overloads: cannot tell */
        if (c->named > best->named) best = c;
    }
    return best;
}

/* ---- names ----------------------------------------------------------------------------- */

int kp_cuda_is_identifier(const char *s)
{
    if (!s || !kp_cuda_ident_start(*s)) return 0;
    for (s++; *s; s++)
        if (!kp_cuda_ident_char(*s)) return 0;
    return 1;
}

int kp_cuda_split_demangled(const char *demangled, char *name, size_t name_n, char *params,
                            size_t params_n)
{
    size_t len = strlen(demangled);
    while (len && isspace((unsigned char)demangled[len - 1]))
        len--;
    size_t open = len, name_end = len;
    int signature = 0;
    if (len && demangled[len - 1] == ')') {
        int depth = 0;
        for (size_t i = len; i-- > 0;) {
            if (demangled[i] == ')')
                depth++;
            else if (demangled[i] == '(' && --depth == 0) {
                open = i;
                break;
            }
        }
        if (open < len && open > 0) {
            name_end = open;
            signature = 1;
        }
    }
    /* The return type ends at the last blank outside brackets ("void tk<16, 4>"). */
    size_t name_start = 0;
    int depth = 0;
    for (size_t i = 0; i < name_end; i++) {
        char c = demangled[i];
        if (c == '<' || c == '(' || c == '[')
            depth++;
        else if (c == '>' || c == ')' || c == ']')
            depth--;
        else if (c == ' ' && depth == 0)
            name_start = i + 1;
    }
    if (!signature) name_start = 0;
    if (name) snprintf(name, name_n, "%.*s", (int)(name_end - name_start), demangled + name_start);
    if (params) {
        if (signature)
            snprintf(params, params_n, "%.*s", (int)(len - open - 2), demangled + open + 1);
        else if (params_n)
            params[0] = '\0';
    }
    return signature;
}

void kp_cuda_base_name(const char *name, char *out, size_t n)
{
    while (*name == '&' || isspace((unsigned char)*name))
        name++;
    /* Up to the template arguments or parameters at depth 0, then after the last "::". */
    size_t end = 0, start = 0;
    int depth = 0;
    for (; name[end]; end++) {
        char c = name[end];
        if (depth == 0 && (c == '<' || (c == '(' && end > 0 && kp_cuda_ident_char(name[end - 1]))))
            break;
        if (c == '(')
            depth++;
        else if (c == ')')
            depth--;
        else if (depth == 0 && c == ':' && name[end + 1] == ':')
            start = end + 2;
    }
    while (end > start && isspace((unsigned char)name[end - 1]))
        end--;
    snprintf(out, n, "%.*s", (int)(end - start), name + start);
}

/* ---- options and architectures -------------------------------------------------------- */

kprof_status kp_cuda_split_options(const char *options, char **copy, const char ***argv, int *argc,
                                   kp_error *err)
{
    *copy = NULL;
    *argv = NULL;
    *argc = 0;
    if (!options) options = "";
    size_t len = strlen(options);
    char *c = malloc(len + 1);
    const char **v = calloc(len / 2 + 2, sizeof *v);
    if (!c || !v) {
        free(c);
        free(v);
        return kp_error_nomem(err);
    }
    memcpy(c, options, len + 1);
    int count = 0;
    char *p = c;
    while (*p) {
        while (*p && isspace((unsigned char)*p))
            *p++ = '\0';
        if (!*p) break;
        v[count++] = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
    }
    *copy = c;
    *argv = v;
    *argc = count;
    return KPROF_OK;
}

int kp_cuda_pick_arch(const int *archs, int n, int want)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (archs[i] <= want && archs[i] > best) best = archs[i];
    return best;
}

static uint64_t kp_le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* offset + count * size <= len, without overflow. */
static int kp_within(uint64_t offset, uint64_t count, uint64_t size, size_t len)
{
    if (offset > len) return 0;
    if (size && count > (len - offset) / size) return 0;
    return 1;
}

kprof_status kp_cuda_image_check(const unsigned char *p, size_t len, kp_error *err)
{
    if (len >= 16 && kp_le(p, 4) == 0xBA55ED50u) {
        uint64_t header = kp_le(p + 6, 2), body = kp_le(p + 8, 8);
        if (header < 16 || !kp_within(header, 1, body, len))
            return kp_error_set(err, KPROF_INVALID,
                                "a fatbin whose header says %llu bytes, but the file has %zu",
                                (unsigned long long)(header + body), len);
        return KPROF_OK;
    }
    if (len < 64 || memcmp(p,
                           "\x7f"
                           "ELF",
                           4) != 0)
        return kp_error_set(err, KPROF_INVALID, "not a cubin (no ELF or fatbin header)");

    if (p[4] != 2 || p[5] != 1)
        return kp_error_set(err, KPROF_INVALID, "not a 64-bit little-endian ELF cubin");

    uint64_t phoff = kp_le(p + 0x20, 8), shoff = kp_le(p + 0x28, 8);
    uint64_t phentsize = kp_le(p + 0x36, 2), phnum = kp_le(p + 0x38, 2);
    uint64_t shentsize = kp_le(p + 0x3A, 2), shnum = kp_le(p + 0x3C, 2);
    if ((phnum && (phentsize < 56 || !kp_within(phoff, phnum, phentsize, len))) ||
        (shnum && (shentsize < 64 || !kp_within(shoff, shnum, shentsize, len))))
        return kp_error_set(err, KPROF_INVALID,
                            "a cut-off cubin: its header tables end past the file's %zu bytes",
                            len);

    for (uint64_t i = 0; i < phnum; i++) {
        const unsigned char *ph = p + phoff + i * phentsize;
        if (!kp_within(kp_le(ph + 8, 8), 1, kp_le(ph + 0x20, 8), len))
            return kp_error_set(err, KPROF_INVALID,
                                "a cut-off cubin: segment %llu ends past the file's %zu bytes",
                                (unsigned long long)i, len);
    }
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + i * shentsize;
        if (kp_le(sh + 4, 4) == 8 /* SHT_NOBITS */) continue;
        if (!kp_within(kp_le(sh + 0x18, 8), 1, kp_le(sh + 0x20, 8), len))
            return kp_error_set(err, KPROF_INVALID,
                                "a cut-off cubin: section %llu ends past the file's %zu bytes",
                                (unsigned long long)i, len);
    }
    return KPROF_OK;
}

/* ---- compile-time threadgroup rules ------------------------------------------------------ */

static int kp_ptx_ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%';
}

/* text with its comments blanked (so offsets stay), NUL-terminated; heap, or NULL. */
static char *kp_ptx_without_comments(const char *text, size_t len)
{
    char *c = malloc(len + 1);
    if (!c) return NULL;
    memcpy(c, text, len);
    c[len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if (c[i] == '"') { /* a string (.pragma "nounroll";): skipped whole */
            i++;
            while (i < len && c[i] != '"' && c[i] != '\n')
                i++;
        } else if (c[i] == '/' && i + 1 < len && c[i + 1] == '/') {
            for (; i < len && c[i] != '\n'; i++)
                c[i] = ' ';
        } else if (c[i] == '/' && i + 1 < len && c[i + 1] == '*') {
            c[i] = c[i + 1] = ' ';
            size_t j = i + 2;
            for (; j < len && !(c[j] == '*' && j + 1 < len && c[j + 1] == '/'); j++)
                if (c[j] != '\n') c[j] = ' ';
            if (j < len) c[j++] = ' '; /* the star; the slash is blanked below */
            if (j < len) c[j] = ' ';
            i = j;
        }
    }
    return c;
}

/* "X[, Y[, Z]]" after a .reqntid/.maxntid word: 1 and size[], or 0 when the text is none (an
 * answer: the directive is then not read). */
static int kp_ptx_extents(const char *p, const char *end, uint64_t size[3])
{
    size[0] = size[1] = size[2] = 1;
    for (int d = 0; d < 3; d++) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p >= end || !isdigit((unsigned char)*p)) return d > 0;
        uint64_t v = 0;
        for (; p < end && isdigit((unsigned char)*p); p++) {
            if (v > (UINT64_C(1) << 32)) return 0;
            v = v * 10 + (uint64_t)(*p - '0');
        }
        if (v == 0) return 0;
        size[d] = v;
        while (p < end && isspace((unsigned char)*p))
            p++;
        if (p >= end || *p != ',') return 1;
        p++;
    }
    return 1;
}

int kp_cuda_ptx_ntid(const char *text, size_t len, const char *symbol, uint64_t size[3])
{
    size[0] = size[1] = size[2] = 1;
    if (!text || !symbol || !*symbol) return KP_CUDA_NTID_NONE;
    char *c = kp_ptx_without_comments(text, len);
    if (!c) return KP_CUDA_NTID_NONE;
    int rule = KP_CUDA_NTID_NONE;
    size_t sl = strlen(symbol);
    const char *end = c + len;
    for (const char *p = c; (p = strstr(p, ".entry")) != NULL; p += 6) {
        if ((p > c && kp_ptx_ident_char(p[-1])) || kp_ptx_ident_char(p[6])) continue;
        const char *q = p + 6;
        while (q < end && isspace((unsigned char)*q))
            q++;
        if ((size_t)(end - q) < sl || memcmp(q, symbol, sl) != 0 || kp_ptx_ident_char(q[sl]))
            continue;
        q += sl;
        while (q < end && isspace((unsigned char)*q))
            q++;
        if (q < end && *q == '(') { /* the parameter list */
            int depth = 0;
            for (; q < end; q++) {
                if (*q == '(')
                    depth++;
                else if (*q == ')' && --depth == 0)
                    break;
            }
            if (q < end) q++;
        }
        /* The performance directives sit between the parameters and the body. */
        const char *body = memchr(q, '{', (size_t)(end - q));
        if (!body) body = end;
        for (const char *d = q; d < body; d++) {
            if (*d != '.' || (d > q && kp_ptx_ident_char(d[-1]))) continue;
            int which = KP_CUDA_NTID_NONE;
            if ((size_t)(body - d) > 8 && memcmp(d, ".reqntid", 8) == 0 && !kp_ptx_ident_char(d[8]))
                which = KP_CUDA_NTID_REQUIRED;
            else if ((size_t)(body - d) > 8 && memcmp(d, ".maxntid", 8) == 0 &&
                     !kp_ptx_ident_char(d[8]))
                which = KP_CUDA_NTID_MAX;
            if (which == KP_CUDA_NTID_NONE || rule == KP_CUDA_NTID_REQUIRED) continue;
            uint64_t v[3];
            if (!kp_ptx_extents(d + 8, body, v)) continue;
            rule = which;
            memcpy(size, v, sizeof v);
        }
        break;
    }
    free(c);
    return rule;
}

#define KP_EIFMT_SVAL         4
#define KP_EIATTR_MAX_THREADS 0x05
#define KP_EIATTR_REQNTID     0x10

int kp_cuda_cubin_ntid(const unsigned char *p, size_t len, const char *symbol, uint64_t size[3])
{
    size[0] = size[1] = size[2] = 1;
    if (!p || !symbol || len < 64 || memcmp(p, "\177ELF", 4) != 0 ||
        kp_cuda_image_check(p, len, NULL) != KPROF_OK)
        return KP_CUDA_NTID_NONE;
    uint64_t shoff = kp_le(p + 0x28, 8), shentsize = kp_le(p + 0x3A, 2);
    uint64_t shnum = kp_le(p + 0x3C, 2), shstrndx = kp_le(p + 0x3E, 2);
    if (shstrndx >= shnum) return KP_CUDA_NTID_NONE;
    const unsigned char *strsh = p + shoff + shstrndx * shentsize;
    uint64_t stroff = kp_le(strsh + 0x18, 8), strsize = kp_le(strsh + 0x20, 8);
    char want[1100];
    int wl = snprintf(want, sizeof want, ".nv.info.%s", symbol);
    if (wl < 0 || (size_t)wl >= sizeof want) return KP_CUDA_NTID_NONE;
    int rule = KP_CUDA_NTID_NONE;
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + i * shentsize;
        uint64_t name = kp_le(sh, 4);
        /* The name, NUL-terminated inside the string table. */
        if (name >= strsize || strsize - name < (uint64_t)wl + 1 ||
            memcmp(p + stroff + name, want, (size_t)wl + 1) != 0)
            continue;
        uint64_t off = kp_le(sh + 0x18, 8), n = kp_le(sh + 0x20, 8);
        /* Records: format byte, attribute byte, then a 2-byte value, or for EIFMT_SVAL a
         * 2-byte size and that many bytes. */
        for (uint64_t at = 0; at + 4 <= n;) {
            const unsigned char *r = p + off + at;
            uint64_t attr = r[1], sz = r[0] == KP_EIFMT_SVAL ? kp_le(r + 2, 2) : 0;
            if (at + 4 + sz > n) break;
            if (r[0] == KP_EIFMT_SVAL && sz >= 12 &&
                (attr == KP_EIATTR_REQNTID ||
                 (attr == KP_EIATTR_MAX_THREADS && rule != KP_CUDA_NTID_REQUIRED))) {
                uint64_t v[3];
                int ok = 1;
                for (int d = 0; d < 3; d++) {
                    v[d] = kp_le(r + 4 + 4 * d, 4);
                    if (v[d] == 0) ok = 0;
                }
                if (ok) {
                    rule = attr == KP_EIATTR_REQNTID ? KP_CUDA_NTID_REQUIRED : KP_CUDA_NTID_MAX;
                    memcpy(size, v, sizeof v);
                }
            }
            at += 4 + sz;
        }
        break;
    }
    return rule;
}
