/*
 * expr.c — a recursive-descent evaluator for the axis arithmetic of `kprof bench` and the
 * substitution of axis values into option texts (see expr.h).
 */
#include "core/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kp_parser {
    const char *text, *p;
    const kp_vars *vars;
    kp_error *err; /* the first failure's message, or NULL */
    int failed;
    int depth;
} kp_parser;

static double kp_fail(kp_parser *ps, const char *what)
{
    if (!ps->failed)
        kp_error_set(ps->err, KPROF_INVALID, "%s at %d in '%s'", what, (int)(ps->p - ps->text) + 1,
                     ps->text);
    ps->failed = 1;
    return 0;
}

static void kp_skip(kp_parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t')
        ps->p++;
}

static int kp_is_name_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static int kp_is_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

const kp_var *kp_vars_find(const kp_vars *vars, const char *name)
{
    if (!vars) return NULL;
    for (int i = 0; i < vars->n; i++)
        if (strcmp(vars->v[i].name, name) == 0) return &vars->v[i];
    return NULL;
}

int kp_expr_is_name(const char *name)
{
    if (!name || !kp_is_name_start(name[0]) || strlen(name) >= sizeof(((kp_var *)0)->name))
        return 0;
    for (const char *c = name; *c; c++)
        if (!kp_is_name_char(*c)) return 0;
    return 1;
}

static double kp_expr_sum(kp_parser *ps);

static double kp_primary(kp_parser *ps)
{
    kp_skip(ps);
    char c = *ps->p;
    if (c == '(') {
        if (++ps->depth > 64) return kp_fail(ps, "nested too deep");
        ps->p++;
        double v = kp_expr_sum(ps);
        kp_skip(ps);
        if (*ps->p != ')') return kp_fail(ps, "expected ')'");
        ps->p++;
        ps->depth--;
        return v;
    }
    if (c == '-' || c == '+') {
        ps->p++;
        if (++ps->depth > 64) return kp_fail(ps, "nested too deep");
        double v = kp_primary(ps);
        ps->depth--;
        return c == '-' ? -v : v;
    }
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)ps->p[1]))) {
        char *end = NULL;
        double v = strtod(ps->p, &end);
        /* strtod reads hex and "inf"; kprof's numbers are decimal only. */
        if (end > ps->p + 1 && (ps->p[1] == 'x' || ps->p[1] == 'X'))
            return kp_fail(ps, "bad number");
        ps->p = end;
        if (*ps->p == 'K' || *ps->p == 'k')
            v *= 1024.0, ps->p++;
        else if (*ps->p == 'M' || *ps->p == 'm')
            v *= 1048576.0, ps->p++;
        else if (*ps->p == 'G' || *ps->p == 'g')
            v *= 1073741824.0, ps->p++;
        if (kp_is_name_char(*ps->p)) return kp_fail(ps, "bad number");
        return v;
    }
    if (kp_is_name_start(c)) {
        const char *s = ps->p;
        while (kp_is_name_char(*ps->p))
            ps->p++;
        char name[64];
        size_t len = (size_t)(ps->p - s);
        if (len >= sizeof name) return kp_fail(ps, "name too long");
        memcpy(name, s, len);
        name[len] = '\0';
        const kp_var *v = kp_vars_find(ps->vars, name);
        if (!v) {
            ps->p = s;
            char what[96];
            snprintf(what, sizeof what, "unknown name '%s'", name);
            return kp_fail(ps, what);
        }
        if (!v->numeric) {
            ps->p = s;
            char what[160];
            snprintf(what, sizeof what, "'%s' is '%s', not a number", name, v->text);
            return kp_fail(ps, what);
        }
        return v->value;
    }
    return kp_fail(ps, c ? "expected a number, a name or '('" : "expression ends too soon");
}

static double kp_power(kp_parser *ps)
{
    double base = kp_primary(ps);
    kp_skip(ps);
    if (!ps->failed && *ps->p == '^') {
        ps->p++;
        if (++ps->depth > 64) return kp_fail(ps, "nested too deep");
        double e = kp_power(ps); /* right-associative */
        ps->depth--;
        return pow(base, e);
    }
    return base;
}

static double kp_product(kp_parser *ps)
{
    double v = kp_power(ps);
    for (;;) {
        kp_skip(ps);
        char op = *ps->p;
        if (ps->failed || (op != '*' && op != '/' && op != '%')) return v;
        ps->p++;
        double r = kp_power(ps);
        if (ps->failed) return v;
        if (op == '*')
            v *= r;
        else if (r == 0)
            return kp_fail(ps, "division by zero");
        else if (op == '/')
            v /= r;
        else
            v = fmod(v, r);
    }
}

static double kp_expr_sum(kp_parser *ps)
{
    double v = kp_product(ps);
    for (;;) {
        kp_skip(ps);
        char op = *ps->p;
        if (ps->failed || (op != '+' && op != '-')) return v;
        ps->p++;
        double r = kp_product(ps);
        v = op == '+' ? v + r : v - r;
    }
}

kprof_status kp_expr_eval(const char *text, const kp_vars *vars, double *out, kp_error *err)
{
    kp_parser ps = {.text = text ? text : "", .p = text ? text : "", .vars = vars, .err = err};
    double v = kp_expr_sum(&ps);
    kp_skip(&ps);
    if (!ps.failed && *ps.p) kp_fail(&ps, "unexpected text");
    if (!ps.failed && !isfinite(v)) kp_fail(&ps, "the value is not finite");
    if (ps.failed) return KPROF_INVALID;
    *out = v;
    return KPROF_OK;
}

void kp_expr_format(double v, char *buf, size_t n)
{
    if (v == floor(v) && fabs(v) < 9.007199254740992e15)
        snprintf(buf, n, "%.0f", v);
    else
        snprintf(buf, n, "%.17g", v);
}

kprof_status kp_expr_substitute(const char *text, const kp_vars *vars, kp_str *out, kp_error *err)
{
    const char *p = text ? text : "";
    while (*p) {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (!close) return kp_error_set(err, KPROF_INVALID, "'{' without '}' in '%s'", text);
            char *inner = strndup(p + 1, (size_t)(close - p - 1));
            if (!inner) return kp_error_nomem(err);
            /* A text variable alone in braces is its text. */
            const kp_var *tv = kp_vars_find(vars, inner);
            if (tv && !tv->numeric) {
                kp_str_append(out, tv->text);
            } else {
                double v;
                kprof_status st = kp_expr_eval(inner, vars, &v, err);
                if (st != KPROF_OK) {
                    free(inner);
                    return st;
                }
                char num[64];
                kp_expr_format(v, num, sizeof num);
                kp_str_append(out, num);
            }
            free(inner);
            p = close + 1;
            continue;
        }
        if (kp_is_name_start(*p) && (p == text || !kp_is_name_char(p[-1]))) {
            const char *s = p;
            while (kp_is_name_char(*p))
                p++;
            size_t len = (size_t)(p - s);
            char name[64];
            if (len < sizeof name) {
                memcpy(name, s, len);
                name[len] = '\0';
                const kp_var *v = kp_vars_find(vars, name);
                if (v) {
                    if (v->numeric) {
                        char num[64];
                        kp_expr_format(v->value, num, sizeof num);
                        kp_str_append(out, num);
                    } else {
                        kp_str_append(out, v->text);
                    }
                    continue;
                }
            }
            kp_str_append_n(out, s, len);
            continue;
        }
        kp_str_append_n(out, p, 1);
        p++;
    }
    if (out->failed) return kp_error_nomem(err);
    return KPROF_OK;
}
