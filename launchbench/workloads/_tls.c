/*
 * launchbench.workloads._tls: a per-thread stack of (launch configuration, args).
 *
 * The "tls" capture mechanism pushes the configured launch and its args
 * before a launch and pops them afterwards, the way numba-cuda's v2 keeps
 * them in C thread-local storage. A stack (not a single slot) makes nesting
 * -- a launch inside a compilation triggered by a launch -- restore exactly.
 *
 * enter(config, args)  push; both references are owned by the stack
 * leave()              pop; raises RuntimeError on an empty stack
 * current()            top config, or None
 * current_args()       top args, or None
 * depth()              number of entries on this thread's stack
 * spin(ns)             busy-wait ns nanoseconds on CLOCK_MONOTONIC, holding
 *                      the GIL (the "delay" mechanism's calibrated cost)
 * clock_overhead_ns()  what one CLOCK_MONOTONIC read costs (best of batches):
 *                      the part of a spin beyond the time it was asked for
 * Interceptor(func, mode, spin_ns=0, signature=None)
 *                      the interception itself, in C: a vectorcall callable
 *                      and method descriptor that replaces
 *                      CUDADispatcher.call and forwards every call to func.
 *                      "passthrough" only forwards; "tls" pushes the launch
 *                      on this stack around the call (popped also when it
 *                      raises); "delay" spins spin_ns first. One code path,
 *                      so tls - passthrough is the capture and nothing else.
 *                      signature "0.30" is call(self, args, launch_config):
 *                      pushes (launch_config, args); "0.29" is
 *                      call(self, args, griddim, blockdim, stream, sharedmem):
 *                      pushes ((self, griddim, blockdim, stream, sharedmem), args),
 *                      the tuple built only when current() asks for it.
 * Interceptor.set_mode(mode, spin_ns=0)
 *                      switch the mode of an installed Interceptor in place,
 *                      with the constructor's checks: the class it is set on
 *                      is not written, so CPython's type version tag -- and
 *                      every specialized attribute lookup keyed on it in the
 *                      launch path -- stays valid. A call reads the mode once,
 *                      at entry; a tls call that pushed pops on its way out
 *                      whatever the mode has become meanwhile.
 *
 * The first thread to use the stack (the one that launches, normally) keeps it
 * in this module's static memory; other threads keep a _Thread_local one (see
 * lb_state). The Interceptor's entries borrow the in-flight call's arguments:
 * a launch under tls allocates nothing and counts no references.
 *
 * Entries left by a thread that exits without leaving are leaked, not freed:
 * there is no safe point to DECREF without the thread state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define LB_TLS_MAX_DEPTH 64

#if defined(_MSC_VER)
#define LB_THREAD_LOCAL __declspec(thread)
#else
#define LB_THREAD_LOCAL _Thread_local
#endif

/* An entry holds the config object itself, or (0.29 launches) the five parts
   it is made of: the tuple is built only if someone asks for it (current()).
   An entry pushed by enter() owns its references. One pushed by the
   Interceptor borrows them from the intercepted call's arguments, which its
   caller keeps alive until the call returns -- and the entry is popped before
   it does. So a launch under tls allocates nothing and touches no reference
   count, like v2's C thread-local. */
#define LB_NPARTS 5

typedef struct {
    char owned;                    /* config and args are the entry's own references (enter()) */
    char built;                    /* config is a tuple built from parts, owned by the entry */
    PyObject *config;              /* NULL (parts set) until current() builds it */
    PyObject *args;
    PyObject *parts[LB_NPARTS];    /* (dispatcher, griddim, blockdim, stream, sharedmem), borrowed */
} lb_entry;

/* A thread's stack. The first thread that asks (normally the main thread,
   the one that launches) keeps its stack in this module's static memory and
   finds it by comparing its thread state's id -- unique for the life of the
   interpreter, never reused -- with the owner's. Every other thread uses a
   _Thread_local copy. Why: in a dlopen'ed module each _Thread_local access is
   a __tls_get_addr call that reads the thread's dtv and a separately
   malloc'ed block -- memory nothing else in the launch path touches -- and
   in a launch that capture cost several times what the same work costs in a
   tight loop (docs/results.md).
   The owner's id, its depth and what a pop reads of the first entry share
   one cache line, so a launch, whose own work evicts lines from the first
   levels of cache, misses at most once there. The GIL is held whenever a
   stack is used, so claiming the owner needs no atomics. A thread's stack
   never moves, so a launch looks it up once. */
typedef struct {
    int depth;
    lb_entry stack[LB_TLS_MAX_DEPTH];
} lb_state;

#if defined(_MSC_VER)
#define LB_ALIGN64 __declspec(align(64))
#else
#define LB_ALIGN64 __attribute__((aligned(64)))
#endif

static LB_ALIGN64 struct {
    uint64_t id;                   /* 0: not claimed yet (thread state ids start at 1) */
    lb_state state;
} lb_owner;

static LB_THREAD_LOCAL lb_state lb_tls;

static inline lb_state *
lb_here(void)
{
    uint64_t id = PyThreadState_GetID(PyThreadState_Get());
    if (id == lb_owner.id)
        return &lb_owner.state;
    if (lb_owner.id == 0) {
        lb_owner.id = id;
        return &lb_owner.state;
    }
    return &lb_tls;
}

static inline int
lb_full(const lb_state *st)
{
    if (st->depth >= LB_TLS_MAX_DEPTH) {
        PyErr_Format(PyExc_RuntimeError,
                     "launch-config stack is full (%d nested launches); "
                     "a leave() is missing", LB_TLS_MAX_DEPTH);
        return 1;
    }
    return 0;
}

/* Push config and args: new references when `owned` (enter()), else borrowed
   from an in-flight call; -1 with RuntimeError when full. */
static inline int
lb_push(lb_state *st, PyObject *config, PyObject *args, int owned)
{
    if (lb_full(st))
        return -1;
    lb_entry *e = &st->stack[st->depth];
    if (owned) {
        Py_INCREF(config);
        Py_INCREF(args);
    }
    e->config = config;
    e->args = args;
    e->owned = (char)owned;
    e->built = 0;
    st->depth++;
    return 0;
}

/* Push the parts of a 0.29 launch (config built lazily) and args, all borrowed
   from the in-flight call. */
static inline int
lb_push_parts(lb_state *st, PyObject *dispatcher, PyObject *args, PyObject *griddim,
              PyObject *blockdim, PyObject *stream, PyObject *sharedmem)
{
    if (lb_full(st))
        return -1;
    lb_entry *e = &st->stack[st->depth];
    e->config = NULL;
    e->args = args;
    e->parts[0] = dispatcher;
    e->parts[1] = griddim;
    e->parts[2] = blockdim;
    e->parts[3] = stream;
    e->parts[4] = sharedmem;
    e->owned = 0;
    e->built = 0;
    st->depth++;
    return 0;
}

/* Pop the innermost entry (the caller checks depth > 0). The depth drops
   before any DECREF: a destructor that re-enters sees a consistent stack. */
static inline void
lb_pop(lb_state *st)
{
    st->depth--;
    lb_entry *e = &st->stack[st->depth];
    PyObject *config = e->config, *args = e->args;
    if (e->owned) {
        Py_DECREF(config);
        Py_DECREF(args);
    }
    else if (e->built) {
        Py_DECREF(config);
    }
}

/* The innermost config as an object (new reference), building it from its parts once. */
static PyObject *
lb_top_config(lb_state *st)
{
    lb_entry *e = &st->stack[st->depth - 1];
    if (e->config == NULL) {
        e->config = PyTuple_Pack(LB_NPARTS, e->parts[0], e->parts[1], e->parts[2],
                                 e->parts[3], e->parts[4]);
        if (e->config == NULL)
            return NULL;
        e->built = 1;
    }
    return Py_NewRef(e->config);
}

static PyObject *
lb_enter(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "enter(config, args) takes exactly 2 arguments");
        return NULL;
    }
    if (lb_push(lb_here(), argv[0], argv[1], 1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
lb_leave(PyObject *self, PyObject *unused)
{
    lb_state *st = lb_here();
    if (st->depth <= 0) {
        PyErr_SetString(PyExc_RuntimeError, "leave() without a matching enter()");
        return NULL;
    }
    lb_pop(st);
    Py_RETURN_NONE;
}

static PyObject *
lb_current(PyObject *self, PyObject *unused)
{
    lb_state *st = lb_here();
    if (st->depth == 0)
        Py_RETURN_NONE;
    return lb_top_config(st);
}

static PyObject *
lb_current_args(PyObject *self, PyObject *unused)
{
    lb_state *st = lb_here();
    if (st->depth == 0)
        Py_RETURN_NONE;
    return Py_NewRef(st->stack[st->depth - 1].args);
}

static PyObject *
lb_depth_fn(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(lb_here()->depth);
}

static inline long long
lb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void
lb_spin_until(long long deadline)
{
    while (lb_now_ns() < deadline)
        ;
}

/* Busy-wait, not sleep: a sleep's wake-up latency (tens of microseconds)
   would swamp the sub-microsecond delays the sensitivity check injects.
   The GIL stays held, as it is during the launch work being imitated. */
static PyObject *
lb_spin(PyObject *self, PyObject *arg)
{
    long long start = lb_now_ns();
    long long ns = PyLong_AsLongLong(arg);
    if (ns == -1 && PyErr_Occurred())
        return NULL;
    if (ns < 0) {
        PyErr_SetString(PyExc_ValueError, "spin(ns) needs ns >= 0");
        return NULL;
    }
    if (ns > 10LL * 1000000000LL) {
        PyErr_SetString(PyExc_ValueError, "spin(ns) refuses waits over 10 s");
        return NULL;
    }
    lb_spin_until(start + ns);
    Py_RETURN_NONE;
}

static PyObject *
lb_clock_overhead_ns(PyObject *self, PyObject *unused)
{
    double best = 1e300;
    for (int batch = 0; batch < 30; batch++) {
        long long t0 = lb_now_ns(), t = t0;
        for (int i = 0; i < 1000; i++)
            t = lb_now_ns();
        double per = (double)(t - t0) / 1000.0;
        if (per < best)
            best = per;
    }
    return PyLong_FromLongLong((long long)(best + 0.5));
}

/* ------------------------------------------------------------------------
 * Interceptor: the interception of CUDADispatcher.call, in C.
 * ---------------------------------------------------------------------- */

enum { LB_PASSTHROUGH = 0, LB_TLS = 1, LB_DELAY = 2 };
enum { LB_SIG_NONE = 0, LB_SIG_029 = 1, LB_SIG_030 = 2 };

static const char *const lb_mode_names[] = {"passthrough", "tls", "delay"};
static const char *const lb_sig_names[] = {NULL, "0.29", "0.30"};

/* Parameter names, for the (rare) call that passes them as keywords. */
static const char *const lb_params_029[] = {"self", "args", "griddim", "blockdim", "stream", "sharedmem"};
static const char *const lb_params_030[] = {"self", "args", "launch_config"};

typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *dict;          /* __wrapped__, __name__, ... from functools.update_wrapper */
    vectorcallfunc vectorcall;
    int mode;
    int sig;
    long long spin_ns;
} lb_interceptor;

/* Argument `index` of a vectorcall, positional or keyword; NULL if absent
   (borrowed). */
static PyObject *
lb_arg(PyObject *const *argv, Py_ssize_t nargs, PyObject *kwnames,
       Py_ssize_t index, const char *name)
{
    if (index < nargs)
        return argv[index];
    if (kwnames == NULL)
        return NULL;
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; i++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, i), name) == 0)
            return argv[nargs + i];
    }
    return NULL;
}

/* Push what this call launches; 1 if pushed, 0 if the call does not match
   the signature (func will raise its own TypeError), -1 on error. The launch
   path passes everything positionally: that case reads argv directly. */
static int
lb_push_launch(lb_state *st, lb_interceptor *self, PyObject *const *argv, Py_ssize_t nargs,
               PyObject *kwnames)
{
    if (self->sig == LB_SIG_030) {
        if (kwnames == NULL && nargs == 3)
            return lb_push(st, argv[2], argv[1], 0) < 0 ? -1 : 1;
        PyObject *args = lb_arg(argv, nargs, kwnames, 1, lb_params_030[1]);
        PyObject *config = lb_arg(argv, nargs, kwnames, 2, lb_params_030[2]);
        if (args == NULL || config == NULL)
            return 0;
        return lb_push(st, config, args, 0) < 0 ? -1 : 1;
    }
    if (kwnames == NULL && nargs == 6)
        return lb_push_parts(st, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5]) < 0 ? -1 : 1;
    PyObject *a[6];
    for (Py_ssize_t i = 0; i < 6; i++) {
        a[i] = lb_arg(argv, nargs, kwnames, i, lb_params_029[i]);
        if (a[i] == NULL)
            return 0;
    }
    return lb_push_parts(st, a[0], a[1], a[2], a[3], a[4], a[5]) < 0 ? -1 : 1;
}

static PyObject *
lb_interceptor_vectorcall(PyObject *op, PyObject *const *argv, size_t nargsf,
                          PyObject *kwnames)
{
    lb_interceptor *self = (lb_interceptor *)op;
    /* Read once: set_mode() may run (from func, or another thread between
       bytecodes) while this call is in flight. */
    const int mode = self->mode;
    const long long spin_ns = self->spin_ns;
    switch (mode) {
    case LB_PASSTHROUGH:
        return PyObject_Vectorcall(self->func, argv, nargsf, kwnames);
    case LB_DELAY:
        if (spin_ns > 0)
            lb_spin_until(lb_now_ns() + spin_ns);
        return PyObject_Vectorcall(self->func, argv, nargsf, kwnames);
    default: {
        lb_state *st = lb_here();  /* once per launch; valid for this thread's lifetime */
        int depth = st->depth;
        int pushed = lb_push_launch(st, self, argv, PyVectorcall_NARGS(nargsf), kwnames);
        if (pushed < 0)
            return NULL;
        PyObject *result = PyObject_Vectorcall(self->func, argv, nargsf, kwnames);
        /* `pushed` is this call's own record: the pop does not depend on the
           mode, which func may have switched. */
        if (pushed && st->depth > depth) {
            /* Restore the depth found on entry (also past entries a callee
               failed to leave); keep func's exception across the DECREFs. */
            PyObject *type, *value, *tb;
            if (result == NULL)
                PyErr_Fetch(&type, &value, &tb);
            while (st->depth > depth)
                lb_pop(st);
            if (result == NULL)
                PyErr_Restore(type, value, tb);
        }
        return result;
    }
    }
}

static int
lb_lookup(PyObject *value, const char *const *names, int n, const char *what)
{
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "Interceptor %s must be a str", what);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (names[i] != NULL && PyUnicode_CompareWithASCIIString(value, names[i]) == 0)
            return i;
    }
    PyErr_Format(PyExc_ValueError, "unknown Interceptor %s %R", what, value);
    return -1;
}

/* The mode `mode_obj` names, checked against the signature and spin_ns;
   -1 with an exception when they do not fit. Shared by the constructor and
   set_mode(), so a switched Interceptor obeys the same rules as a new one. */
static int
lb_check_mode(PyObject *mode_obj, int sig, long long spin_ns)
{
    int mode = lb_lookup(mode_obj, lb_mode_names, 3, "mode");
    if (mode < 0)
        return -1;
    if (mode == LB_TLS && sig == LB_SIG_NONE) {
        PyErr_SetString(PyExc_ValueError, "Interceptor mode 'tls' needs signature='0.29' or '0.30'");
        return -1;
    }
    if (spin_ns < 0 || spin_ns > 10LL * 1000000000LL) {
        PyErr_SetString(PyExc_ValueError, "Interceptor spin_ns must be in [0, 10 s]");
        return -1;
    }
    if (mode != LB_DELAY && spin_ns != 0) {
        PyErr_SetString(PyExc_ValueError, "Interceptor spin_ns is only for mode 'delay'");
        return -1;
    }
    return mode;
}

static PyObject *
lb_interceptor_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"func", "mode", "spin_ns", "signature", NULL};
    PyObject *func, *mode_obj, *sig_obj = Py_None;
    long long spin_ns = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OU|LO:Interceptor", kwlist,
                                     &func, &mode_obj, &spin_ns, &sig_obj))
        return NULL;
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "Interceptor func must be callable");
        return NULL;
    }
    int sig = LB_SIG_NONE;
    if (sig_obj != Py_None && (sig = lb_lookup(sig_obj, lb_sig_names, 3, "signature")) < 0)
        return NULL;
    int mode = lb_check_mode(mode_obj, sig, spin_ns);
    if (mode < 0)
        return NULL;
    lb_interceptor *self = (lb_interceptor *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->func = Py_NewRef(func);
    self->dict = NULL;
    self->vectorcall = lb_interceptor_vectorcall;
    self->mode = mode;
    self->sig = sig;
    self->spin_ns = spin_ns;
    return (PyObject *)self;
}

/* set_mode(mode, spin_ns=0): see the module comment. Both fields change
   together under the GIL, so a call sees the old pair or the new one. */
static PyObject *
lb_interceptor_set_mode(lb_interceptor *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"mode", "spin_ns", NULL};
    PyObject *mode_obj;
    long long spin_ns = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "U|L:set_mode", kwlist, &mode_obj, &spin_ns))
        return NULL;
    int mode = lb_check_mode(mode_obj, self->sig, spin_ns);
    if (mode < 0)
        return NULL;
    self->mode = mode;
    self->spin_ns = spin_ns;
    Py_RETURN_NONE;
}

static PyMethodDef lb_interceptor_methods[] = {
    {"set_mode", (PyCFunction)(void (*)(void))lb_interceptor_set_mode, METH_VARARGS | METH_KEYWORDS,
     "set_mode(mode, spin_ns=0): switch among passthrough, tls and delay in place "
     "(same checks as the constructor); the class holding this Interceptor is not written."},
    {NULL, NULL, 0, NULL},
};

static int
lb_interceptor_traverse(lb_interceptor *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->dict);
    return 0;
}

static int
lb_interceptor_clear(lb_interceptor *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->dict);
    return 0;
}

static void
lb_interceptor_dealloc(lb_interceptor *self)
{
    PyObject_GC_UnTrack(self);
    lb_interceptor_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A method, like a Python function: bound on instance access, itself on
   class access (so `Class.call(obj, ...)` and `obj.call(...)` both work). */
static PyObject *
lb_interceptor_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *
lb_interceptor_repr(lb_interceptor *self)
{
    if (self->func == NULL)
        return PyUnicode_FromFormat("<Interceptor %s (cleared)>", lb_mode_names[self->mode]);
    return PyUnicode_FromFormat("<Interceptor %s of %R>", lb_mode_names[self->mode], self->func);
}

static PyObject *
lb_interceptor_get_func(lb_interceptor *self, void *closure)
{
    if (self->func == NULL)
        Py_RETURN_NONE;
    return Py_NewRef(self->func);
}

static PyObject *
lb_interceptor_get_mode(lb_interceptor *self, void *closure)
{
    return PyUnicode_FromString(lb_mode_names[self->mode]);
}

static PyObject *
lb_interceptor_get_signature(lb_interceptor *self, void *closure)
{
    if (self->sig == LB_SIG_NONE)
        Py_RETURN_NONE;
    return PyUnicode_FromString(lb_sig_names[self->sig]);
}

static PyObject *
lb_interceptor_get_spin_ns(lb_interceptor *self, void *closure)
{
    return PyLong_FromLongLong(self->spin_ns);
}

static PyGetSetDef lb_interceptor_getset[] = {
    {"func", (getter)lb_interceptor_get_func, NULL, "the function every call is forwarded to", NULL},
    {"mode", (getter)lb_interceptor_get_mode, NULL, "passthrough, tls or delay", NULL},
    {"signature", (getter)lb_interceptor_get_signature, NULL, "'0.29', '0.30' or None", NULL},
    {"spin_ns", (getter)lb_interceptor_get_spin_ns, NULL, "busy-wait per call (delay)", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL},
};

static PyTypeObject lb_interceptor_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "launchbench.workloads._tls.Interceptor",
    .tp_basicsize = sizeof(lb_interceptor),
    .tp_dealloc = (destructor)lb_interceptor_dealloc,
    .tp_vectorcall_offset = offsetof(lb_interceptor, vectorcall),
    .tp_repr = (reprfunc)lb_interceptor_repr,
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    /* METHOD_DESCRIPTOR: `obj.call(...)` calls us with obj first, skipping
       the bound method, as it does for a Python function. */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Interceptor(func, mode, spin_ns=0, signature=None): forward calls to func, "
              "capturing per mode (passthrough, tls, delay; switch with set_mode); "
              "a method when set on a class.",
    .tp_traverse = (traverseproc)lb_interceptor_traverse,
    .tp_clear = (inquiry)lb_interceptor_clear,
    .tp_getset = lb_interceptor_getset,
    .tp_methods = lb_interceptor_methods,
    .tp_descr_get = lb_interceptor_descr_get,
    .tp_dictoffset = offsetof(lb_interceptor, dict),
    .tp_new = lb_interceptor_new,
};

static PyMethodDef lb_methods[] = {
    {"enter", (PyCFunction)(void (*)(void))lb_enter, METH_FASTCALL,
     "enter(config, args): push a launch configuration and its args."},
    {"leave", lb_leave, METH_NOARGS, "leave(): pop the innermost entry."},
    {"current", lb_current, METH_NOARGS, "current(): innermost config or None."},
    {"current_args", lb_current_args, METH_NOARGS, "current_args(): innermost args or None."},
    {"depth", lb_depth_fn, METH_NOARGS, "depth(): entries on this thread's stack."},
    {"spin", lb_spin, METH_O, "spin(ns): busy-wait ns nanoseconds (GIL held)."},
    {"clock_overhead_ns", lb_clock_overhead_ns, METH_NOARGS,
     "clock_overhead_ns(): cost of one CLOCK_MONOTONIC read, in ns (best of 30 batches)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef lb_module = {
    PyModuleDef_HEAD_INIT, "launchbench.workloads._tls",
    "Per-thread launch-configuration stack (see launchbench.workloads.capture.mechanisms).",
    -1, lb_methods,
};

PyMODINIT_FUNC
PyInit__tls(void)
{
    PyObject *m = PyModule_Create(&lb_module);
    if (m == NULL)
        return NULL;
    if (PyType_Ready(&lb_interceptor_type) < 0
        || PyModule_AddObjectRef(m, "Interceptor", (PyObject *)&lb_interceptor_type) < 0
        || PyModule_AddIntConstant(m, "MAX_DEPTH", LB_TLS_MAX_DEPTH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
