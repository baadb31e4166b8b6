/*
 * expr.h — the arithmetic of `kprof bench --axis`: an axis value put into --grid, --buffers and
 * -D, and the --flops/--bytes formulas written in the axis variables.
 *
 * An expression is numbers, variables, + - * / % ^ (power, right-associative), unary minus and
 * parentheses. A number is decimal ("12", "0.5", "1e6") with an optional size suffix K, M or G
 * (binary: 1K = 1024, as everywhere on kprof's command line). A variable is a name
 * [A-Za-z_][A-Za-z0-9_]* bound in a kp_vars; a variable whose value is text (an axis of types,
 * "f32,f64") cannot take part in arithmetic.
 *
 * Substitution (kp_expr_substitute) rewrites a text such as a SPEC: `{EXPR}` becomes the
 * expression's value, and a bare name that is a variable becomes its value, where a bare name is
 * a maximal run of name characters not preceded by a letter, digit or '_' ("1M" keeps its M).
 * Whole values are written as integers; other values as %.17g. Nothing here prints.
 */
#ifndef KP_CORE_EXPR_H
#define KP_CORE_EXPR_H

#include "base/error.h"
#include "base/util.h"

#include <stddef.h>

#define KP_VARS_MAX 16

typedef struct kp_var {
    char name[32];
    char text[64]; /* the value as given ("1M", "f32") */
    double value;  /* its number, when numeric */
    int numeric;
} kp_var;

typedef struct kp_vars {
    int n;
    kp_var v[KP_VARS_MAX];
} kp_vars;

/* Evaluate text with vars (NULL: none). KPROF_OK and *out, or KPROF_INVALID with err (may be
 * NULL) naming the problem and the place ("unknown name 'M' at 3 in '...'", "division by
 * zero ..."). */
kprof_status kp_expr_eval(const char *text, const kp_vars *vars, double *out, kp_error *err);

/* Rewrite text into out (appended) as described above. KPROF_OK, or KPROF_INVALID (a bad
 * expression) or KPROF_NOMEM with err (may be NULL) saying why. */
kprof_status kp_expr_substitute(const char *text, const kp_vars *vars, kp_str *out, kp_error *err);

/* Whether name is a valid variable name. */
int kp_expr_is_name(const char *name);

/* The variable named name, or NULL. */
const kp_var *kp_vars_find(const kp_vars *vars, const char *name);

/* Write a value as substitution writes it. */
void kp_expr_format(double v, char *buf, size_t n);

#endif
