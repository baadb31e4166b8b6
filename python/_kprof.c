/*
 * _kprof.c — kprof._kprof, the C extension the Python package kprof is written over: a thin
 * binding of include/kprof.h for CPython's limited API of 3.9 (one abi3 wheel serves every
 * CPython from 3.9 on). python/kprof/__init__.py builds the public API on it.
 *
 * What it holds besides plain calls:
 * - the exceptions: kprof._kprof.Error and one subclass per kprof_status (InvalidError, ...,
 *   named from kprof_status_name), raised with kprof_last_error()'s line;
 * - scope sites (kprof._kprof.Scope): kprof.scope(name) returns the one object of its name (a
 *   dict lookup, no allocation once cached). Entering one reads libkprof's kprof_scopes_on_ and
 *   does nothing more when no session records; the start ticks of open scopes live on a stack
 *   per thread (a pthread key; freed when the thread ends), not in the object, so one site nests
 *   and recurses, on any number of threads;
 * - callbacks from C (kernel hooks, kprof_benchmark's callable, kprof_profile_repeat's) take the
 *   GIL back with PyGILState_Ensure; blocking library calls (kprof_start, kprof_stop, a result's
 *   views and exports, the benchmarks) run with the GIL released.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kprof.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- exceptions ----------------------------------------------------------------------------- */

static PyObject *kp_py_error;                       /* kprof.Error */
static PyObject *kp_py_errors[KPROF_STATUS_COUNT_]; /* one per status, OK's slot unused */

/* Raise the exception of status st with message (NULL: kprof_last_error()). Returns NULL. */
static PyObject *kp_py_raise_msg(kprof_status st, const char *message)
{
    PyObject *cls =
        (unsigned)st < KPROF_STATUS_COUNT_ && kp_py_errors[st] ? kp_py_errors[st] : kp_py_error;
    const char *m = message ? message : kprof_last_error();
    PyErr_SetString(cls, m && *m ? m : kprof_strerror(st));
    return NULL;
}

static PyObject *kp_py_raise(kprof_status st)
{
    return kp_py_raise_msg(st, NULL);
}

/* "NOT_FOUND" -> "NotFoundError". */
static void kp_py_class_name(const char *status, char *out, size_t n)
{
    size_t o = 0;
    int up = 1;
    for (const char *p = status; *p && o + 6 < n; p++) {
        if (*p == '_') {
            up = 1;
            continue;
        }
        out[o++] = up ? *p : (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
        up = 0;
    }
    snprintf(out + o, n - o, "Error");
}

static int kp_py_make_errors(PyObject *module)
{
    PyObject *dict = Py_BuildValue("{s:s}", "__doc__",
                                   "A kprof call failed. Every kprof error is one of its "
                                   "subclasses, one per kprof status (InvalidError, "
                                   "UnavailableError, ...); str(e) is libkprof's one line "
                                   "naming what was wrong and where.");
    if (!dict) return -1;
    kp_py_error = PyErr_NewException("kprof.Error", PyExc_Exception, dict);
    Py_DECREF(dict);
    if (!kp_py_error || PyModule_AddObject(module, "Error", kp_py_error) < 0) return -1;
    Py_INCREF(kp_py_error); /* the module's reference was stolen; keep ours */
    for (int st = 1; st < KPROF_STATUS_COUNT_; st++) {
        char cls[64], qualified[80], doc[200];
        const char *status = kprof_status_name((kprof_status)st);
        kp_py_class_name(status, cls, sizeof cls);
        snprintf(qualified, sizeof qualified, "kprof.%s", cls);
        snprintf(doc, sizeof doc, "kprof status %s: %s.", status, kprof_strerror((kprof_status)st));
        PyObject *bases = st == KPROF_INVALID ? PyTuple_Pack(2, kp_py_error, PyExc_ValueError)
                                              : PyTuple_Pack(1, kp_py_error);
        PyObject *attrs = Py_BuildValue("{s:s,s:s,s:i}", "__doc__", doc, "status", status,
                                        "exit_code", kprof_status_exit_code((kprof_status)st));
        PyObject *e = bases && attrs ? PyErr_NewException(qualified, bases, attrs) : NULL;
        Py_XDECREF(bases);
        Py_XDECREF(attrs);
        if (!e) return -1;
        kp_py_errors[st] = e;
        Py_INCREF(e);
        if (PyModule_AddObject(module, cls, e) < 0) {
            Py_DECREF(e);
            return -1;
        }
    }
    return 0;
}

/* ---- small helpers -------------------------------------------------------------------------- */

/* A Python number as a finite double; -1 with an exception set otherwise. */
static int kp_py_double(PyObject *o, const char *what, double *out)
{
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a number, not %R", what, (PyObject *)Py_TYPE(o));
        return -1;
    }
    if (!isfinite(v)) {
        PyErr_Format(kp_py_errors[KPROF_INVALID], "%s must be a finite number, not %R", what, o);
        return -1;
    }
    *out = v;
    return 0;
}

/* Set key to a new reference value in dict (the reference is consumed). -1 on failure. */
static int kp_py_set(PyObject *dict, const char *key, PyObject *value)
{
    if (!value) return -1;
    int rc = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *kp_py_str(const char *s)
{
    return PyUnicode_DecodeUTF8(s ? s : "", (Py_ssize_t)strlen(s ? s : ""), "backslashreplace");
}

/* ---- the per-thread stack of open scopes ---------------------------------------------------- */

typedef struct kp_open_scope {
    const char *name;         /* interned (kprof_intern): one pointer per name */
    unsigned long long start; /* kprof_scope_begin's start_ (0: not recording) */
} kp_open_scope;

typedef struct kp_scope_stack {
    size_t n, cap;
    kp_open_scope *e;
} kp_scope_stack;

static pthread_key_t kp_stack_key;
/* Entries on every thread's stack together: a scope that closes while no session records looks
 * at its stack only when one of them may be its own (a session stopped while it was open). */
static long kp_open_scopes;

static void kp_stack_free(void *p)
{
    kp_scope_stack *s = p;
    if (!s) return;
    __atomic_sub_fetch(&kp_open_scopes, (long)s->n, __ATOMIC_RELAXED);
    free(s->e);
    free(s);
}

static kp_scope_stack *kp_stack_get(int make)
{
    kp_scope_stack *s = pthread_getspecific(kp_stack_key);
    if (s || !make) return s;
    s = calloc(1, sizeof *s);
    if (s && pthread_setspecific(kp_stack_key, s) != 0) {
        free(s);
        s = NULL;
    }
    return s;
}

static int kp_stack_push(const char *name, unsigned long long start)
{
    kp_scope_stack *s = kp_stack_get(1);
    if (!s) return -1;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        kp_open_scope *e = realloc(s->e, cap * sizeof *e);
        if (!e) return -1;
        s->e = e;
        s->cap = cap;
    }
    s->e[s->n++] = (kp_open_scope){name, start};
    __atomic_add_fetch(&kp_open_scopes, 1, __ATOMIC_RELAXED);
    return 0;
}

/* ---- scopes --------------------------------------------------------------------------------- */

#define KP_PY_MAX_METRICS 16

typedef struct {
    PyObject_HEAD const char *name; /* interned */
    PyObject *pyname;
    int nmetrics;
    const char *keys[KP_PY_MAX_METRICS]; /* interned */
    double values[KP_PY_MAX_METRICS];
} kp_py_scope;

static PyObject *kp_py_scope_type;
static PyObject *kp_py_scope_cache; /* name -> its site (no metrics) */
static PyObject *kp_py_decorate;    /* kprof._decorate(scope, fn), set by kprof/__init__.py */

static PyObject *kp_py_scope_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (__builtin_expect(__atomic_load_n(&kprof_scopes_on_, __ATOMIC_RELAXED) != 0, 0)) {
        kp_py_scope *sc = (kp_py_scope *)self;
        unsigned long long t = kprof_scope_open_();
        unsigned long long start = t ? t | KPROF_SCOPE_NAMED_ : 0;
        if (kp_stack_push(sc->name, start) != 0) return PyErr_NoMemory();
        if (start)
            for (int i = 0; i < sc->nmetrics; i++)
                kprof_scope_metric_(sc->name, start, sc->keys[i], sc->values[i]);
    }
    Py_INCREF(self);
    return self;
}

static PyObject *kp_py_scope_exit(PyObject *self, PyObject *args)
{
    (void)args;
    if (__builtin_expect(__atomic_load_n(&kprof_scopes_on_, __ATOMIC_RELAXED) == 0, 1) &&
        __atomic_load_n(&kp_open_scopes, __ATOMIC_RELAXED) == 0)
        Py_RETURN_NONE;
    kp_py_scope *sc = (kp_py_scope *)self;
    kp_scope_stack *s = kp_stack_get(0);
    /* Its entry is on top, unless it opened while no session recorded (then it has none). */
    if (s && s->n && s->e[s->n - 1].name == sc->name) {
        kp_open_scope e = s->e[--s->n];
        __atomic_sub_fetch(&kp_open_scopes, 1, __ATOMIC_RELAXED);
        if (e.start) kprof_scope_close_(e.name, e.start);
    }
    Py_RETURN_NONE;
}

/* scope(fn): the decorator. */
static PyObject *kp_py_scope_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *fn;
    if (kwargs && PyDict_Size(kwargs) > 0) {
        PyErr_SetString(PyExc_TypeError, "a scope decorates a function: scope(fn) takes no "
                                         "keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:scope", &fn)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "a scope decorates a callable, not %R",
                     (PyObject *)Py_TYPE(fn));
        return NULL;
    }
    if (!kp_py_decorate) {
        PyErr_SetString(PyExc_RuntimeError, "kprof._kprof used without the kprof package");
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(kp_py_decorate, self, fn, NULL);
}

static void kp_py_scope_dealloc(PyObject *self)
{
    kp_py_scope *sc = (kp_py_scope *)self;
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(sc->pyname);
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static PyObject *kp_py_scope_repr(PyObject *self)
{
    kp_py_scope *sc = (kp_py_scope *)self;
    return PyUnicode_FromFormat("kprof.scope(%R%s)", sc->pyname, sc->nmetrics ? ", ..." : "");
}

static PyObject *kp_py_scope_get_name(PyObject *self, void *unused)
{
    (void)unused;
    kp_py_scope *sc = (kp_py_scope *)self;
    Py_INCREF(sc->pyname);
    return sc->pyname;
}

static PyObject *kp_py_scope_get_metrics(PyObject *self, void *unused)
{
    (void)unused;
    kp_py_scope *sc = (kp_py_scope *)self;
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < sc->nmetrics; i++)
        if (kp_py_set(d, sc->keys[i], PyFloat_FromDouble(sc->values[i])) < 0) Py_CLEAR(d);
    return d;
}

static PyMethodDef kp_py_scope_methods[] = {
    {"__enter__", kp_py_scope_enter, METH_NOARGS,
     "Open the scope (nothing happens while no profile records)."},
    {"__exit__", kp_py_scope_exit, METH_VARARGS, "Close the scope opened by __enter__."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef kp_py_scope_getset[] = {
    {"name", kp_py_scope_get_name, NULL, "the scope's name", NULL},
    {"metrics", kp_py_scope_get_metrics, NULL,
     "the metrics each instance records (flops, bytes, ...)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot kp_py_scope_slots[] = {
    {Py_tp_doc, "A scope: `with kprof.scope(name):` or `@kprof.scope(name)`. Made by "
                "kprof.scope; one object per name (without metrics), shared by every thread."},
    {Py_tp_dealloc, kp_py_scope_dealloc},
    {Py_tp_repr, kp_py_scope_repr},
    {Py_tp_call, kp_py_scope_call},
    {Py_tp_methods, kp_py_scope_methods},
    {Py_tp_getset, kp_py_scope_getset},
    {0, NULL}};

static PyType_Spec kp_py_scope_spec = {"kprof._kprof.Scope", sizeof(kp_py_scope), 0,
                                       Py_TPFLAGS_DEFAULT, kp_py_scope_slots};

static kp_py_scope *kp_py_scope_new(PyObject *pyname, const char *name)
{
    PyTypeObject *tp = (PyTypeObject *)kp_py_scope_type;
    allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    kp_py_scope *sc = (kp_py_scope *)alloc(tp, 0);
    if (!sc) return NULL;
    sc->name = name;
    sc->pyname = pyname;
    Py_INCREF(pyname);
    sc->nmetrics = 0;
    return sc;
}

/* The interned C text of a Python str; NULL with an exception set. */
static const char *kp_py_intern(PyObject *text, const char *what)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %R", what, (PyObject *)Py_TYPE(text));
        return NULL;
    }
    PyObject *b = PyUnicode_AsUTF8String(text);
    if (!b) return NULL;
    const char *utf8 = PyBytes_AsString(b);
    const char *interned = utf8 ? kprof_intern(utf8) : NULL;
    Py_DECREF(b);
    if (!interned && !PyErr_Occurred()) PyErr_NoMemory();
    return interned;
}

static int kp_py_scope_add_metric(kp_py_scope *sc, const char *key, PyObject *value)
{
    if (value == Py_None) return 0;
    if (sc->nmetrics == KP_PY_MAX_METRICS) {
        PyErr_Format(kp_py_errors[KPROF_INVALID], "a scope takes at most %d metrics",
                     KP_PY_MAX_METRICS);
        return -1;
    }
    double v;
    if (kp_py_double(value, key, &v) < 0) return -1;
    const char *k = kprof_intern(key);
    if (!k) {
        PyErr_NoMemory();
        return -1;
    }
    sc->keys[sc->nmetrics] = k;
    sc->values[sc->nmetrics++] = v;
    return 0;
}

/* kprof.scope(name, flops=None, bytes=None, **metrics) */
static PyObject *kp_py_scope_fn(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    /* One positional argument, read without PyArg_ParseTuple's format parsing: the off path
     * is this lookup and nothing else. */
    if (PyTuple_Size(args) != 1) {
        PyErr_Format(PyExc_TypeError, "scope() takes exactly one positional argument (%zd given)",
                     PyTuple_Size(args));
        return NULL;
    }
    PyObject *pyname = PyTuple_GetItem(args, 0);
    if (!kwargs || PyDict_Size(kwargs) == 0) {
        PyObject *site = PyDict_GetItemWithError(kp_py_scope_cache, pyname);
        if (site) {
            Py_INCREF(site);
            return site;
        }
        if (PyErr_Occurred()) return NULL;
    }
    if (!PyUnicode_Check(pyname)) {
        PyErr_Format(PyExc_TypeError, "a scope's name must be a str, not %R",
                     (PyObject *)Py_TYPE(pyname));
        return NULL;
    }
    if (PyUnicode_GetLength(pyname) == 0) {
        PyErr_SetString(kp_py_errors[KPROF_INVALID], "a scope's name must not be empty");
        return NULL;
    }
    const char *name = kp_py_intern(pyname, "a scope's name");
    if (!name) return NULL;
    kp_py_scope *sc = kp_py_scope_new(pyname, name);
    if (!sc) return NULL;
    if (!kwargs || PyDict_Size(kwargs) == 0) {
        if (PyDict_SetItem(kp_py_scope_cache, pyname, (PyObject *)sc) < 0) {
            Py_DECREF(sc);
            return NULL;
        }
        return (PyObject *)sc;
    }
    /* flops and bytes first, then the others in the order given. */
    static const char *const firsts[] = {"flops", "bytes"};
    for (int i = 0; i < 2; i++) {
        PyObject *v = PyDict_GetItemString(kwargs, firsts[i]);
        if (v && kp_py_scope_add_metric(sc, firsts[i], v) < 0) goto fail;
    }
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        PyObject *b = PyUnicode_AsUTF8String(key);
        if (!b) goto fail;
        const char *k = PyBytes_AsString(b);
        int rc = 0;
        if (strcmp(k, "flops") != 0 && strcmp(k, "bytes") != 0)
            rc = kp_py_scope_add_metric(sc, k, value);
        Py_DECREF(b);
        if (rc < 0) goto fail;
    }
    return (PyObject *)sc;
fail:
    Py_DECREF(sc);
    return NULL;
}

static PyObject *kp_py_set_decorator(PyObject *self, PyObject *fn)
{
    (void)self;
    Py_XDECREF(kp_py_decorate);
    Py_INCREF(fn);
    kp_py_decorate = fn;
    Py_RETURN_NONE;
}

/* The number of scope entries open on this thread's stack (tests: nothing leaks). */
static PyObject *kp_py_open_scopes(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    kp_scope_stack *s = kp_stack_get(0);
    return PyLong_FromSize_t(s ? s->n : 0);
}

/* ---- results -------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD kprof_result *r;
    int busy; /* a call is using r (with the GIL released): a result serves one thread at a time */
} kp_py_result;

static PyObject *kp_py_result_type;

/* The result for one call, marked busy until kp_py_result_put (both with the GIL held): libkprof
 * lets one thread at a time use a result, and its views run with the GIL released. */
static kprof_result *kp_py_result_get(PyObject *self)
{
    kp_py_result *res = (kp_py_result *)self;
    if (!res->r) {
        PyErr_SetString(kp_py_errors[KPROF_INVALID], "the result was closed");
        return NULL;
    }
    if (res->busy) {
        PyErr_SetString(kp_py_errors[KPROF_INVALID],
                        "the result is in use by another thread (a result serves one thread at "
                        "a time)");
        return NULL;
    }
    res->busy = 1;
    return res->r;
}

static void kp_py_result_put(PyObject *self)
{
    ((kp_py_result *)self)->busy = 0;
}

static void kp_py_result_dealloc(PyObject *self)
{
    kp_py_result *res = (kp_py_result *)self;
    PyTypeObject *tp = Py_TYPE(self);
    kprof_result_destroy(res->r);
    res->r = NULL;
    freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    tp_free(self);
    Py_DECREF(tp);
}

static PyObject *kp_py_result_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    kp_py_result *res = (kp_py_result *)self;
    if (res->busy) {
        PyErr_SetString(kp_py_errors[KPROF_INVALID],
                        "the result is in use by another thread (a result serves one thread at "
                        "a time)");
        return NULL;
    }
    kprof_result *r = res->r;
    res->r = NULL;
    Py_BEGIN_ALLOW_THREADS kprof_result_destroy(r);
    Py_END_ALLOW_THREADS Py_RETURN_NONE;
}

static PyObject *kp_py_result_summary_(PyObject *self, PyObject *unused, kprof_result *r)
{
    (void)self;
    (void)unused;
    kprof_summary s = KPROF_SUMMARY_INIT;
    kprof_status st = kprof_result_summary(r, &s);
    if (st != KPROF_OK) return kp_py_raise(st);
    return Py_BuildValue("{s:K,s:K,s:I,s:L,s:L,s:d}", "events", s.events, "dropped", s.dropped,
                         "threads", s.threads, "start_ns", s.start_ns, "end_ns", s.end_ns, "host_s",
                         s.host_s);
}

/* A list of n items, item i made by one(items, i) (a new reference); NULL with the exception
 * set when one fails. */
static PyObject *kp_py_list_of(const void *items, size_t n,
                               PyObject *(*one)(const void *items, size_t i))
{
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *o = one(items, i);
        if (!o) {
            Py_CLEAR(list);
            break;
        }
        PyList_SetItem(list, (Py_ssize_t)i, o);
    }
    return list;
}

static PyObject *kp_py_row_dict(const void *rows, size_t i)
{
    const kprof_row *row = kprof_row_at(rows, i);
    return Py_BuildValue("{s:N,s:N,s:N,s:K,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}",
                         "kind", kp_py_str(row->kind), "name", kp_py_str(row->name), "path",
                         kp_py_str(row->path), "calls", row->calls, "total_s", row->total_s,
                         "self_s", row->self_s, "min_s", row->min_s, "mean_s", row->mean_s, "max_s",
                         row->max_s, "std_s", row->std_s, "gpu_s", row->gpu_s, "flops", row->flops,
                         "bytes", row->bytes, "gflops_per_s", row->gflops_per_s, "gb_per_s",
                         row->gb_per_s, "host_gflops_per_s", row->host_gflops_per_s,
                         "host_gb_per_s", row->host_gb_per_s);
}

static PyObject *kp_py_result_key_averages_(PyObject *self, PyObject *args, kprof_result *r)
{
    (void)self;
    int by;
    if (!PyArg_ParseTuple(args, "i", &by)) return NULL;
    const kprof_row *rows = NULL;
    size_t n = 0;
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_result_key_averages(r, (kprof_group)by, &rows, &n);
    Py_END_ALLOW_THREADS if (st != KPROF_OK) return kp_py_raise(st);
    return kp_py_list_of(rows, n, kp_py_row_dict);
}

static PyObject *kp_py_node_dict(const void *nodes, size_t i)
{
    const kprof_node *x = kprof_node_at(nodes, i);
    return Py_BuildValue(
        "{s:n,s:n,s:n,s:I,s:N,s:N,s:N,s:K,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,"
        "s:d,s:d,s:d}",
        "parent", (Py_ssize_t)x->parent, "first_child", (Py_ssize_t)x->first_child, "next_sibling",
        (Py_ssize_t)x->next_sibling, "depth", x->depth, "kind", kp_py_str(x->kind), "name",
        kp_py_str(x->name), "path", kp_py_str(x->path), "calls", x->calls, "inclusive_s",
        x->inclusive_s, "exclusive_s", x->exclusive_s, "min_s", x->min_s, "mean_s", x->mean_s,
        "max_s", x->max_s, "std_s", x->std_s, "gpu_s", x->gpu_s, "flops", x->flops, "bytes",
        x->bytes, "flops_inclusive", x->flops_inclusive, "bytes_inclusive", x->bytes_inclusive,
        "gflops_per_s", x->gflops_per_s, "gb_per_s", x->gb_per_s, "host_gflops_per_s",
        x->host_gflops_per_s, "host_gb_per_s", x->host_gb_per_s);
}

static PyObject *kp_py_result_tree_(PyObject *self, PyObject *unused, kprof_result *r)
{
    (void)self;
    (void)unused;
    const kprof_node *nodes = NULL;
    size_t n = 0;
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_result_tree(r, &nodes, &n);
    Py_END_ALLOW_THREADS if (st != KPROF_OK) return kp_py_raise(st);
    return kp_py_list_of(nodes, n, kp_py_node_dict);
}

typedef struct kp_py_events_ctx {
    PyObject *list;
    int failed;
} kp_py_events_ctx;

static int kp_py_event_one(const kprof_event *e, void *p)
{
    kp_py_events_ctx *c = p;
    PyObject *d = Py_BuildValue("{s:N,s:N,s:L,s:L,s:L,s:L,s:K}", "kind", kp_py_str(e->kind), "name",
                                kp_py_str(e->name), "start_ns", e->start_ns, "end_ns", e->end_ns,
                                "pid", e->pid, "tid", e->tid, "id", e->id);
    if (!d || PyList_Append(c->list, d) < 0) {
        Py_XDECREF(d);
        c->failed = 1;
        return 1;
    }
    Py_DECREF(d);
    return 0;
}

/* Called with the GIL held (each event makes a dict). */
static PyObject *kp_py_result_events_(PyObject *self, PyObject *unused, kprof_result *r)
{
    (void)self;
    (void)unused;
    kp_py_events_ctx c = {PyList_New(0), 0};
    if (!c.list) return NULL;
    kprof_status st = kprof_result_events(r, kp_py_event_one, &c);
    if (c.failed) {
        Py_DECREF(c.list);
        return NULL;
    }
    if (st != KPROF_OK) {
        Py_DECREF(c.list);
        return kp_py_raise(st);
    }
    return c.list;
}

static PyObject *kp_py_distribution_dict(const void *dists, size_t i)
{
    const kprof_distribution *x = kprof_distribution_at(dists, i);
    return Py_BuildValue("{s:N,s:N,s:K,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "kind",
                         kp_py_str(x->kind), "name", kp_py_str(x->name), "count", x->count, "min_s",
                         x->min_s, "p50_s", x->p50_s, "p90_s", x->p90_s, "max_s", x->max_s,
                         "mean_s", x->mean_s, "std_s", x->std_s, "total_s", x->total_s, "flops",
                         x->flops, "bytes", x->bytes);
}

static PyObject *kp_py_result_distributions_(PyObject *self, PyObject *unused, kprof_result *r)
{
    (void)self;
    (void)unused;
    const kprof_distribution *d = NULL;
    size_t n = 0;
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_result_distributions(r, &d, &n);
    Py_END_ALLOW_THREADS if (st != KPROF_OK) return kp_py_raise(st);
    return kp_py_list_of(d, n, kp_py_distribution_dict);
}

/* kprof_result_print into a string. */
static PyObject *kp_py_result_print_(PyObject *self, PyObject *args, kprof_result *r)
{
    (void)self;
    int view;
    if (!PyArg_ParseTuple(args, "i", &view)) return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return PyErr_NoMemory();
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_result_print(r, (kprof_view)view, f);
    Py_END_ALLOW_THREADS int closed = fclose(f);
    if (st != KPROF_OK) {
        free(text);
        return kp_py_raise(st);
    }
    if (closed != 0) {
        free(text);
        return PyErr_NoMemory();
    }
    PyObject *s = PyUnicode_DecodeUTF8(text ? text : "", (Py_ssize_t)len, "backslashreplace");
    free(text);
    return s;
}

static PyObject *kp_py_result_write_(PyObject *self, PyObject *args, kprof_result *r)
{
    (void)self;
    int format, force;
    PyObject *path;
    if (!PyArg_ParseTuple(args, "iO&p", &format, PyUnicode_FSConverter, &path, &force)) return NULL;
    const char *p = PyBytes_AsString(path);
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st =
        kprof_result_write(r, (kprof_format)format, p, force ? KPROF_WRITE_FORCE : 0);
    Py_END_ALLOW_THREADS Py_DECREF(path);
    if (st != KPROF_OK) return kp_py_raise(st);
    Py_RETURN_NONE;
}

/* Each method with the result marked busy around it. */
#define KP_PY_RESULT_METHOD(name)                                                                  \
    static PyObject *kp_py_result_##name(PyObject *self, PyObject *args)                           \
    {                                                                                              \
        kprof_result *r = kp_py_result_get(self);                                                  \
        if (!r) return NULL;                                                                       \
        PyObject *out = kp_py_result_##name##_(self, args, r);                                     \
        kp_py_result_put(self);                                                                    \
        return out;                                                                                \
    }
KP_PY_RESULT_METHOD(summary)
KP_PY_RESULT_METHOD(key_averages)
KP_PY_RESULT_METHOD(tree)
KP_PY_RESULT_METHOD(events)
KP_PY_RESULT_METHOD(distributions)
KP_PY_RESULT_METHOD(print)
KP_PY_RESULT_METHOD(write)
#undef KP_PY_RESULT_METHOD

static PyMethodDef kp_py_result_methods[] = {
    {"summary", kp_py_result_summary, METH_NOARGS, "kprof_result_summary as a dict."},
    {"key_averages", kp_py_result_key_averages, METH_VARARGS,
     "key_averages(by): kprof_result_key_averages's rows as dicts (by: 0 name, 1 path)."},
    {"tree", kp_py_result_tree, METH_NOARGS, "kprof_result_tree's nodes as dicts."},
    {"events", kp_py_result_events, METH_NOARGS, "kprof_result_events as a list of dicts."},
    {"distributions", kp_py_result_distributions, METH_NOARGS,
     "kprof_result_distributions as dicts."},
    {"print", kp_py_result_print, METH_VARARGS,
     "print(view): kprof_result_print's text (view: a kprof_view number)."},
    {"write", kp_py_result_write, METH_VARARGS,
     "write(format, path, force): kprof_result_write (format: a kprof_format number)."},
    {"close", kp_py_result_close, METH_NOARGS,
     "Destroy the result and its scratch folder now (later calls raise InvalidError)."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot kp_py_result_slots[] = {
    {Py_tp_doc, "A libkprof result (kprof_result): what one session recorded."},
    {Py_tp_dealloc, kp_py_result_dealloc},
    {Py_tp_methods, kp_py_result_methods},
    {0, NULL}};

static PyType_Spec kp_py_result_spec = {"kprof._kprof.Result", sizeof(kp_py_result), 0,
                                        Py_TPFLAGS_DEFAULT, kp_py_result_slots};

static PyObject *kp_py_result_wrap(kprof_result *r)
{
    PyTypeObject *tp = (PyTypeObject *)kp_py_result_type;
    allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
    kp_py_result *res = (kp_py_result *)alloc(tp, 0);
    if (!res) {
        kprof_result_destroy(r);
        return NULL;
    }
    res->r = r;
    return (PyObject *)res;
}

/* ---- sessions ------------------------------------------------------------------------------- */

static PyObject *kp_py_start(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned collectors, ring_entries;
    PyObject *scratch = NULL;
    if (!PyArg_ParseTuple(args, "IIO&", &collectors, &ring_entries, PyUnicode_FSConverter,
                          &scratch))
        return NULL;
    kprof_options o = KPROF_OPTIONS_INIT;
    o.collectors = collectors;
    o.ring_entries = ring_entries;
    o.scratch_dir = PyBytes_Size(scratch) ? PyBytes_AsString(scratch) : NULL;
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_start(&o);
    Py_END_ALLOW_THREADS Py_DECREF(scratch);
    if (st != KPROF_OK) return kp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *kp_py_stop(PyObject *self, PyObject *args)
{
    (void)self;
    int keep = 1;
    if (!PyArg_ParseTuple(args, "|p", &keep)) return NULL;
    kprof_result *r = NULL;
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_stop(keep ? &r : NULL);
    Py_END_ALLOW_THREADS if (st != KPROF_OK) return kp_py_raise(st);
    if (!keep) Py_RETURN_NONE;
    return kp_py_result_wrap(r);
}

static PyObject *kp_py_recording(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyBool_FromLong(kprof_recording());
}

static PyObject *kp_py_version(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyUnicode_FromString(kprof_version());
}

static PyObject *kp_py_status_name(PyObject *self, PyObject *args)
{
    (void)self;
    int st;
    if (!PyArg_ParseTuple(args, "i", &st)) return NULL;
    return PyUnicode_FromString(kprof_status_name((kprof_status)st));
}

/* ---- callbacks from C ----------------------------------------------------------------------- */

/* A Python callable called from C with the GIL taken back: the first exception is kept (and
 * the calls after it skipped) for the caller to raise once the C call returns. */
typedef struct kp_py_call {
    PyObject *fn;
    PyObject *error_type, *error_value, *error_tb;
    double skip_s; /* after an error: sleep this long once (ends a time-budgeted loop) */
    int slept;
} kp_py_call;

static void kp_py_call_trampoline(void *p)
{
    kp_py_call *c = p;
    PyGILState_STATE g = PyGILState_Ensure();
    if (!c->error_type) {
        PyObject *out = PyObject_CallObject(c->fn, NULL);
        if (out)
            Py_DECREF(out);
        else
            PyErr_Fetch(&c->error_type, &c->error_value, &c->error_tb);
    }
    int sleep_now = c->error_type && c->skip_s > 0 && !c->slept;
    if (sleep_now) c->slept = 1;
    PyGILState_Release(g);
    if (sleep_now) {
        struct timespec ts = {(time_t)c->skip_s,
                              (long)((c->skip_s - floor(c->skip_s)) * 1e9) % 1000000000L};
        nanosleep(&ts, NULL);
    }
}

/* Raise the kept exception: 1 when there was one (then the caller returns NULL). */
static int kp_py_call_reraise(kp_py_call *c)
{
    if (!c->error_type) return 0;
    PyErr_Restore(c->error_type, c->error_value, c->error_tb);
    c->error_type = c->error_value = c->error_tb = NULL;
    return 1;
}

/* kernel hooks: ctx is the kernel's interned name, looked up in kp_py_hooks under the GIL. */
static PyObject *kp_py_hooks; /* kernel name -> callable */

static int kp_py_hook_get(PyObject *d, const char *key, double *out)
{
    PyObject *v = PyDict_GetItemString(d, key);
    if (!v || v == Py_None) return 0;
    double x = PyFloat_AsDouble(v);
    if (x == -1.0 && PyErr_Occurred()) return -1;
    *out = x;
    return 1;
}

static int kp_py_hook(void *ctx, const kprof_launch *launch, double *flops, double *bytes)
{
    const char *kernel = ctx;
    int got = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *fn = kp_py_hooks ? PyDict_GetItemString(kp_py_hooks, kernel) : NULL;
    if (fn) {
        Py_INCREF(fn);
        PyObject *kw =
            Py_BuildValue("{s:N,s:(III),s:(III)}", "kernel_name", kp_py_str(launch->kernel), "grid",
                          launch->grid[0], launch->grid[1], launch->grid[2], "threads",
                          launch->block[0], launch->block[1], launch->block[2]);
        PyObject *empty = PyTuple_New(0);
        PyObject *out = kw && empty ? PyObject_Call(fn, empty, kw) : NULL;
        Py_XDECREF(kw);
        Py_XDECREF(empty);
        if (out && out != Py_None && !PyDict_Check(out)) {
            PyErr_Format(PyExc_TypeError,
                         "the kernel hook of %s must return a dict of metrics (flops, bytes), "
                         "not %R",
                         kernel, (PyObject *)Py_TYPE(out));
            Py_CLEAR(out);
        }
        if (out && out != Py_None) {
            PyObject *key, *value;
            Py_ssize_t pos = 0;
            while (PyDict_Next(out, &pos, &key, &value)) {
                if (PyUnicode_Check(key) && (PyUnicode_CompareWithASCIIString(key, "flops") == 0 ||
                                             PyUnicode_CompareWithASCIIString(key, "bytes") == 0))
                    continue;
                PyErr_Format(PyExc_ValueError,
                             "the kernel hook of %s returned the metric %R: a hook gives "
                             "flops and bytes",
                             kernel, key);
                Py_CLEAR(out);
                break;
            }
        }
        if (out && out != Py_None) {
            int f = kp_py_hook_get(out, "flops", flops);
            int b = f < 0 ? -1 : kp_py_hook_get(out, "bytes", bytes);
            if (f < 0 || b < 0)
                Py_CLEAR(out);
            else
                got = (f ? KPROF_WORK_FLOPS : 0) | (b ? KPROF_WORK_BYTES : 0);
        }
        if (!out) {
            got = 0;
            PyErr_WriteUnraisable(fn);
        }
        Py_XDECREF(out);
        Py_DECREF(fn);
    }
    PyGILState_Release(g);
    return got;
}

static PyObject *kp_py_kernel_hook(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *pyname, *fn;
    if (!PyArg_ParseTuple(args, "OO:register_kernel_hook", &pyname, &fn)) return NULL;
    if (!PyUnicode_Check(pyname)) {
        PyErr_Format(PyExc_TypeError, "the kernel's name must be a str, not %R",
                     (PyObject *)Py_TYPE(pyname));
        return NULL;
    }
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError,
                     "a kernel hook must be callable (or None to remove it), "
                     "not %R",
                     (PyObject *)Py_TYPE(fn));
        return NULL;
    }
    const char *name = PyUnicode_GetLength(pyname) ? kp_py_intern(pyname, "the kernel's name") : "";
    if (!name) return NULL;
    if (fn != Py_None && PyDict_SetItemString(kp_py_hooks, name, fn) < 0) return NULL;
    kprof_status st;
    /* Without the GIL: libkprof runs hooks under its lock, and a hook takes the GIL. */
    Py_BEGIN_ALLOW_THREADS st =
        kprof_kernel_hook(name, fn == Py_None ? NULL : kp_py_hook, (void *)name);
    Py_END_ALLOW_THREADS if (st != KPROF_OK)
    {
        if (fn != Py_None && *name) PyDict_DelItemString(kp_py_hooks, name);
        PyErr_Clear();
        return kp_py_raise(st);
    }
    if (fn == Py_None && PyDict_GetItemString(kp_py_hooks, name))
        PyDict_DelItemString(kp_py_hooks, name);
    Py_RETURN_NONE;
}

/* The kernels with a Python hook (their names). */
static PyObject *kp_py_hooked(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyDict_Keys(kp_py_hooks);
}

/* ---- repeats, captures ---------------------------------------------------------------------- */

static PyObject *kp_py_profile_repeat(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *fn, *pyname;
    double budget;
    unsigned warmup, collectors;
    unsigned long long max_iterations;
    if (!PyArg_ParseTuple(args, "OdIKUI", &fn, &budget, &warmup, &max_iterations, &pyname,
                          &collectors))
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "profile_repeat runs a callable, not %R",
                     (PyObject *)Py_TYPE(fn));
        return NULL;
    }
    const char *name = kp_py_intern(pyname, "name");
    if (!name) return NULL;
    kprof_options session = KPROF_OPTIONS_INIT;
    session.collectors = collectors;
    kprof_repeat_options o = KPROF_REPEAT_OPTIONS_INIT;
    o.warmup = warmup;
    o.max_iterations = max_iterations;
    o.name = name;
    o.session = &session;
    kp_py_call c = {fn, NULL, NULL, NULL, budget, 0};
    kprof_result *r = NULL;
    kprof_status st;
    /* The callable runs on this thread, taking the GIL back for each call. */
    Py_BEGIN_ALLOW_THREADS st = kprof_profile_repeat(kp_py_call_trampoline, &c, budget, &o, &r);
    Py_END_ALLOW_THREADS if (kp_py_call_reraise(&c))
    {
        kprof_result_destroy(r);
        return NULL;
    }
    if (st != KPROF_OK) return kp_py_raise(st);
    return kp_py_result_wrap(r);
}

static PyObject *kp_py_capture_begin(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_capture_begin(name);
    Py_END_ALLOW_THREADS if (st != KPROF_OK) return kp_py_raise(st);
    Py_RETURN_NONE;
}

static PyObject *kp_py_capture_end(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_capture_end();
    Py_END_ALLOW_THREADS if (st != KPROF_OK) return kp_py_raise(st);
    Py_RETURN_NONE;
}

/* ---- benchmarks ----------------------------------------------------------------------------- */

/* The options both benchmark() and compare() take, from a dict the Python side checked. */
static int kp_py_bench_options(PyObject *d, kprof_benchmark_options *o, size_t sides,
                               double **samples)
{
    PyObject *v;
#define KP_PY_UINT(key, field)                                                                     \
    if ((v = PyDict_GetItemString(d, key)) && v != Py_None) {                                      \
        unsigned long x = PyLong_AsUnsignedLong(v);                                                \
        if (PyErr_Occurred()) return -1;                                                           \
        o->field = (unsigned)x;                                                                    \
    }
#define KP_PY_DBL(key, field)                                                                      \
    if ((v = PyDict_GetItemString(d, key)) && v != Py_None) {                                      \
        if (kp_py_double(v, key, &o->field) < 0) return -1;                                        \
    }
    KP_PY_UINT("warmup", warmup)
    KP_PY_UINT("min_runs", min_runs)
    KP_PY_UINT("max_runs", max_runs)
    KP_PY_DBL("budget", budget_s)
    if ((v = PyDict_GetItemString(d, "cold")) && v != Py_None)
        o->cache = PyObject_IsTrue(v) ? KPROF_CACHE_COLD : KPROF_CACHE_HOT;
    KP_PY_DBL("max_noise", max_noise)
    KP_PY_UINT("collector", collector)
    KP_PY_DBL("flops", flops)
    KP_PY_DBL("bytes", bytes)
    /* Room for every run a side may keep (compare: A's, then B's right after them). */
    size_t n = (o->max_runs ? o->max_runs : 1000) * sides;
    *samples = calloc(n, sizeof **samples);
    if (!*samples) {
        PyErr_NoMemory();
        return -1;
    }
    o->samples = *samples;
    o->samples_cap = n;
#undef KP_PY_UINT
#undef KP_PY_DBL
    return 0;
}

static PyObject *kp_py_bench_dict(const kprof_benchmark_result *r, const double *samples)
{
    PyObject *d = Py_BuildValue("{s:I,s:I,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "runs", r->runs, "kernels",
                                r->kernels, "min_ns", r->min_ns, "p50_ns", r->p50_ns, "p90_ns",
                                r->p90_ns, "max_ns", r->max_ns, "mean_ns", r->mean_ns,
                                "busy_p50_ns", r->busy_p50_ns, "wall_p50_ns", r->wall_p50_ns);
    if (!d) return NULL;
    char stop[sizeof r->stop + 1];
    memcpy(stop, r->stop, sizeof r->stop);
    stop[sizeof r->stop] = '\0';
    PyObject *list = PyList_New((Py_ssize_t)r->samples_n);
    for (unsigned i = 0; list && samples && i < r->samples_n; i++)
        PyList_SetItem(list, (Py_ssize_t)i, PyFloat_FromDouble(samples[i]));
    if (kp_py_set(d, "lo_ns", PyFloat_FromDouble(r->lo_ns)) < 0 ||
        kp_py_set(d, "hi_ns", PyFloat_FromDouble(r->hi_ns)) < 0 ||
        kp_py_set(d, "noise", PyFloat_FromDouble(r->noise)) < 0 ||
        kp_py_set(d, "discarded", PyLong_FromUnsignedLong(r->discarded)) < 0 ||
        kp_py_set(d, "stop", kp_py_str(stop)) < 0 ||
        kp_py_set(d, "flush_ns", PyFloat_FromDouble(r->flush_ns)) < 0 ||
        kp_py_set(d, "gbps", PyFloat_FromDouble(r->gbps)) < 0 ||
        kp_py_set(d, "gflops", PyFloat_FromDouble(r->gflops)) < 0 ||
        kp_py_set(d, "samples", list) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* benchmark(fn, options: dict) -> dict */
static PyObject *kp_py_benchmark(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *fn, *opts;
    if (!PyArg_ParseTuple(args, "OO!", &fn, &PyDict_Type, &opts)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "benchmark times a callable, not %R",
                     (PyObject *)Py_TYPE(fn));
        return NULL;
    }
    kprof_benchmark_options o = KPROF_BENCHMARK_OPTIONS_INIT;
    double *samples = NULL;
    if (kp_py_bench_options(opts, &o, 1, &samples) < 0) {
        free(samples);
        return NULL;
    }
    kprof_benchmark_result r = KPROF_BENCHMARK_RESULT_INIT;
    kp_py_call c = {fn, NULL, NULL, NULL, 0, 0};
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_benchmark(kp_py_call_trampoline, &c, &o, &r);
    Py_END_ALLOW_THREADS PyObject *out = NULL;
    if (!kp_py_call_reraise(&c))
        out = st == KPROF_OK ? kp_py_bench_dict(&r, samples) : kp_py_raise(st);
    free(samples);
    return out;
}

/* compare(fn_a, fn_b, options: dict, threshold) -> (dict a, dict b, dict comparison) */
static PyObject *kp_py_compare(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *fa, *fb, *opts;
    double threshold;
    if (!PyArg_ParseTuple(args, "OOO!d", &fa, &fb, &PyDict_Type, &opts, &threshold)) return NULL;
    if (!PyCallable_Check(fa) || !PyCallable_Check(fb)) {
        PyErr_SetString(PyExc_TypeError, "compare times two callables");
        return NULL;
    }
    kprof_benchmark_options o = KPROF_BENCHMARK_OPTIONS_INIT;
    double *samples = NULL;
    if (kp_py_bench_options(opts, &o, 2, &samples) < 0) {
        free(samples);
        return NULL;
    }
    kprof_compare_options co = KPROF_COMPARE_OPTIONS_INIT;
    co.threshold = threshold;
    kprof_benchmark_result ra = KPROF_BENCHMARK_RESULT_INIT, rb = KPROF_BENCHMARK_RESULT_INIT;
    kprof_comparison cmp = KPROF_COMPARISON_INIT;
    kp_py_call ca = {fa, NULL, NULL, NULL, 0, 0}, cb = {fb, NULL, NULL, NULL, 0, 0};
    kprof_status st;
    Py_BEGIN_ALLOW_THREADS st = kprof_benchmark_compare(
        kp_py_call_trampoline, &ca, kp_py_call_trampoline, &cb, &o, &co, &ra, &rb, &cmp);
    Py_END_ALLOW_THREADS PyObject *out = NULL;
    /* A callable's exception first (A's when both raised); the other's is dropped. */
    kp_py_call *raised = ca.error_type ? &ca : cb.error_type ? &cb : NULL;
    if (!raised) {
        if (st != KPROF_OK) {
            kp_py_raise(st);
        } else {
            static const char *const verdicts[] = {"SAME", "FASTER", "SLOWER", "UNSURE"};
            PyObject *c =
                Py_BuildValue("{s:s,s:d,s:d,s:d,s:I,s:N}", "verdict",
                              (unsigned)cmp.verdict < 4 ? verdicts[cmp.verdict] : "UNSURE", "ratio",
                              cmp.ratio, "lo", cmp.lo, "hi", cmp.hi, "reasons", cmp.reasons,
                              "reason", kp_py_str(cmp.reason));
            const double *sb = samples ? samples + ra.samples_n : NULL;
            out = c ? Py_BuildValue("(NNN)", kp_py_bench_dict(&ra, samples),
                                    kp_py_bench_dict(&rb, sb), c)
                    : NULL;
        }
    } else {
        kp_py_call *other = raised == &ca ? &cb : &ca;
        if (kp_py_call_reraise(other)) PyErr_Clear();
        kp_py_call_reraise(raised);
    }
    free(samples);
    return out;
}

/* kprof_compare of two lists of samples -> dict */
static PyObject *kp_py_compare_samples(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *pa, *pb;
    double threshold;
    int paired;
    if (!PyArg_ParseTuple(args, "OOdp", &pa, &pb, &threshold, &paired)) return NULL;
    PyObject *fa = PySequence_Fast(pa, "samples must be a sequence of numbers");
    PyObject *fb = fa ? PySequence_Fast(pb, "samples must be a sequence of numbers") : NULL;
    PyObject *out = NULL;
    double *a = NULL, *b = NULL;
    if (!fb) goto done;
    Py_ssize_t na = PySequence_Size(fa), nb = PySequence_Size(fb);
    a = malloc(((size_t)na + 1) * sizeof *a);
    b = malloc(((size_t)nb + 1) * sizeof *b);
    if (!a || !b) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < na; i++) {
        PyObject *x = PySequence_GetItem(fa, i);
        int rc = x ? kp_py_double(x, "a sample", &a[i]) : -1;
        Py_XDECREF(x);
        if (rc < 0) goto done;
    }
    for (Py_ssize_t i = 0; i < nb; i++) {
        PyObject *x = PySequence_GetItem(fb, i);
        int rc = x ? kp_py_double(x, "a sample", &b[i]) : -1;
        Py_XDECREF(x);
        if (rc < 0) goto done;
    }
    kprof_compare_options co = KPROF_COMPARE_OPTIONS_INIT;
    co.threshold = threshold;
    co.paired = paired;
    kprof_comparison cmp = KPROF_COMPARISON_INIT;
    kprof_status st = kprof_compare(a, (size_t)na, b, (size_t)nb, &co, &cmp);
    if (st != KPROF_OK) {
        kp_py_raise(st);
        goto done;
    }
    static const char *const verdicts[] = {"SAME", "FASTER", "SLOWER", "UNSURE"};
    out = Py_BuildValue("{s:s,s:d,s:d,s:d,s:I,s:N}", "verdict",
                        (unsigned)cmp.verdict < 4 ? verdicts[cmp.verdict] : "UNSURE", "ratio",
                        cmp.ratio, "lo", cmp.lo, "hi", cmp.hi, "reasons", cmp.reasons, "reason",
                        kp_py_str(cmp.reason));
done:
    free(a);
    free(b);
    Py_XDECREF(fa);
    Py_XDECREF(fb);
    return out;
}

/* ---- the module ----------------------------------------------------------------------------- */

static PyMethodDef kp_py_methods[] = {
    {"scope", (PyCFunction)(void (*)(void))kp_py_scope_fn, METH_VARARGS | METH_KEYWORDS,
     "scope(name, flops=None, bytes=None, **metrics)\n--\n\n"
     "A scope named `name`: `with kprof.scope(name):` or `@kprof.scope(name)` as a decorator.\n"
     "Scopes are per thread and nest by time; a profile started on any thread records every\n"
     "thread's. flops and bytes become GFLOP/s and GB/s in the results; other keyword metrics\n"
     "go into the trace as they are. Without metrics the same object comes back for the same\n"
     "name (no allocation once cached), and while no profile records, entering it costs one\n"
     "check of libkprof's flag."},
    {"_set_decorator", kp_py_set_decorator, METH_O, "Set the decorator factory (kprof's own)."},
    {"_open_scopes", kp_py_open_scopes, METH_NOARGS,
     "The scopes open on this thread's stack (entered while a profile recorded)."},
    {"start", kp_py_start, METH_VARARGS,
     "start(collectors, ring_entries, scratch_dir): kprof_start."},
    {"stop", kp_py_stop, METH_VARARGS,
     "stop(keep=True): kprof_stop; the Result, or None when keep is False."},
    {"recording", kp_py_recording, METH_NOARGS, "True while a session records (kprof_recording)."},
    {"version", kp_py_version, METH_NOARGS, "libkprof's version (kprof_version)."},
    {"status_name", kp_py_status_name, METH_VARARGS, "kprof_status_name."},
    {"kernel_hook", kp_py_kernel_hook, METH_VARARGS,
     "kernel_hook(name, fn): kprof_kernel_hook with a Python callable (None removes it)."},
    {"_hooked", kp_py_hooked, METH_NOARGS, "The kernels with a Python hook."},
    {"profile_repeat", kp_py_profile_repeat, METH_VARARGS,
     "profile_repeat(fn, budget_s, warmup, max_iterations, name, collectors): "
     "kprof_profile_repeat; the Result."},
    {"capture_begin", kp_py_capture_begin, METH_VARARGS, "kprof_capture_begin(name)."},
    {"capture_end", kp_py_capture_end, METH_NOARGS, "kprof_capture_end()."},
    {"benchmark", kp_py_benchmark, METH_VARARGS, "benchmark(fn, options): kprof_benchmark."},
    {"compare", kp_py_compare, METH_VARARGS,
     "compare(fn_a, fn_b, options, threshold): kprof_benchmark_compare."},
    {"compare_samples", kp_py_compare_samples, METH_VARARGS,
     "compare_samples(a, b, threshold, paired): kprof_compare."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef kp_py_module = {
    PyModuleDef_HEAD_INIT,
    "_kprof",
    "The C extension kprof is written over (libkprof's include/kprof.h); use the kprof package.",
    -1,
    kp_py_methods,
    NULL,
    NULL,
    NULL,
    NULL};

/* libkprof's symbols into the global scope: libkprof-inject.so's OpenCL layer finds a program's
 * kernel hooks there (dlsym(RTLD_DEFAULT, "kprof_kernel_work_")), and Python loads an extension
 * and what it links with RTLD_LOCAL. */
static void kp_py_libkprof_global(void)
{
    Dl_info info;
    if (dladdr((void *)kprof_version, &info) && info.dli_fname) {
        void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
        (void)h; /* kept open: libkprof is never unloaded */
    }
}

PyMODINIT_FUNC PyInit__kprof(void)
{
    kp_py_libkprof_global();
    if (pthread_key_create(&kp_stack_key, kp_stack_free) != 0) {
        PyErr_SetString(PyExc_ImportError, "kprof: no thread key left for the scopes' stacks");
        return NULL;
    }
    PyObject *m = PyModule_Create(&kp_py_module);
    if (!m) return NULL;
    if (kp_py_make_errors(m) < 0) goto fail;
    kp_py_scope_type = PyType_FromSpec(&kp_py_scope_spec);
    kp_py_result_type = PyType_FromSpec(&kp_py_result_spec);
    kp_py_scope_cache = PyDict_New();
    kp_py_hooks = PyDict_New();
    if (!kp_py_scope_type || !kp_py_result_type || !kp_py_scope_cache || !kp_py_hooks) goto fail;
    Py_INCREF(kp_py_scope_type);
    Py_INCREF(kp_py_result_type);
    if (PyModule_AddObject(m, "Scope", kp_py_scope_type) < 0 ||
        PyModule_AddObject(m, "Result", kp_py_result_type) < 0)
        goto fail;
    PyObject *collect =
        Py_BuildValue("{s:I,s:I,s:I,s:I}", "scopes", (unsigned)KPROF_COLLECT_SCOPES, "cuda",
                      (unsigned)KPROF_COLLECT_CUDA, "opencl", (unsigned)KPROF_COLLECT_OPENCL,
                      "nvtx", (unsigned)KPROF_COLLECT_NVTX);
    PyObject *formats = Py_BuildValue(
        "{s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "kprof", KPROF_FORMAT_TRACE, "chrome", KPROF_FORMAT_CHROME,
        "perfetto", KPROF_FORMAT_PERFETTO, "hatchet", KPROF_FORMAT_HATCHET, "json",
        KPROF_FORMAT_JSON, "csv", KPROF_FORMAT_CSV, "html", KPROF_FORMAT_HTML);
    PyObject *views =
        Py_BuildValue("{s:i,s:i,s:i,s:i}", "tree", KPROF_VIEW_TREE, "by-name", KPROF_VIEW_BY_NAME,
                      "by-path", KPROF_VIEW_BY_PATH, "distributions", KPROF_VIEW_DISTRIBUTIONS);
    if (PyModule_AddObject(m, "COLLECTORS", collect) < 0 ||
        PyModule_AddObject(m, "FORMATS", formats) < 0 || PyModule_AddObject(m, "VIEWS", views) < 0)
        goto fail;
    /* Why a comparison is UNSURE: KPROF_UNSURE_* bits by the words Comparison.reasons uses. */
    PyObject *unsure = Py_BuildValue(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "straddles", KPROF_UNSURE_STRADDLES, "few",
        KPROF_UNSURE_FEW, "drift", KPROF_UNSURE_DRIFT, "modes", KPROF_UNSURE_MODES, "busy",
        KPROF_UNSURE_BUSY, "small", KPROF_UNSURE_SMALL, "one_run", KPROF_UNSURE_ONE_RUN, "runs",
        KPROF_UNSURE_RUNS, "invalid", KPROF_UNSURE_INVALID);
#ifdef KPROF_UNSURE_CLOCK
    if (unsure && kp_py_set(unsure, "clock", PyLong_FromUnsignedLong(KPROF_UNSURE_CLOCK)) < 0)
        Py_CLEAR(unsure);
#endif
    if (PyModule_AddObject(m, "UNSURE_REASONS", unsure) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
