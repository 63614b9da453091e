/*
 * launchbench._tls: a per-thread stack of (launch configuration, args).
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
 *
 * Entries left by a thread that exits without leaving are leaked, not freed:
 * there is no safe point to DECREF without the thread state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <time.h>

#define LB_TLS_MAX_DEPTH 64

#if defined(_MSC_VER)
#define LB_THREAD_LOCAL __declspec(thread)
#else
#define LB_THREAD_LOCAL _Thread_local
#endif

typedef struct {
    PyObject *config;
    PyObject *args;
} lb_entry;

static LB_THREAD_LOCAL lb_entry lb_stack[LB_TLS_MAX_DEPTH];
static LB_THREAD_LOCAL int lb_depth = 0;

static PyObject *
lb_enter(PyObject *self, PyObject *const *argv, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "enter(config, args) takes exactly 2 arguments");
        return NULL;
    }
    if (lb_depth >= LB_TLS_MAX_DEPTH) {
        PyErr_Format(PyExc_RuntimeError,
                     "launch-config stack is full (%d nested launches); "
                     "a leave() is missing", LB_TLS_MAX_DEPTH);
        return NULL;
    }
    Py_INCREF(argv[0]);
    Py_INCREF(argv[1]);
    lb_stack[lb_depth].config = argv[0];
    lb_stack[lb_depth].args = argv[1];
    lb_depth++;
    Py_RETURN_NONE;
}

static PyObject *
lb_leave(PyObject *self, PyObject *unused)
{
    if (lb_depth <= 0) {
        PyErr_SetString(PyExc_RuntimeError, "leave() without a matching enter()");
        return NULL;
    }
    lb_depth--;
    PyObject *config = lb_stack[lb_depth].config;
    PyObject *args = lb_stack[lb_depth].args;
    lb_stack[lb_depth].config = NULL;
    lb_stack[lb_depth].args = NULL;
    /* DECREF after the slot is cleared: a destructor that re-enters sees a
       consistent stack. */
    Py_DECREF(config);
    Py_DECREF(args);
    Py_RETURN_NONE;
}

static PyObject *
lb_current(PyObject *self, PyObject *unused)
{
    if (lb_depth == 0)
        Py_RETURN_NONE;
    return Py_NewRef(lb_stack[lb_depth - 1].config);
}

static PyObject *
lb_current_args(PyObject *self, PyObject *unused)
{
    if (lb_depth == 0)
        Py_RETURN_NONE;
    return Py_NewRef(lb_stack[lb_depth - 1].args);
}

static PyObject *
lb_depth_fn(PyObject *self, PyObject *unused)
{
    return PyLong_FromLong(lb_depth);
}

static inline long long
lb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
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
    long long deadline = start + ns;
    while (lb_now_ns() < deadline)
        ;
    Py_RETURN_NONE;
}

static PyMethodDef lb_methods[] = {
    {"enter", (PyCFunction)(void (*)(void))lb_enter, METH_FASTCALL,
     "enter(config, args): push a launch configuration and its args."},
    {"leave", lb_leave, METH_NOARGS, "leave(): pop the innermost entry."},
    {"current", lb_current, METH_NOARGS, "current(): innermost config or None."},
    {"current_args", lb_current_args, METH_NOARGS, "current_args(): innermost args or None."},
    {"depth", lb_depth_fn, METH_NOARGS, "depth(): entries on this thread's stack."},
    {"spin", lb_spin, METH_O, "spin(ns): busy-wait ns nanoseconds (GIL held)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef lb_module = {
    PyModuleDef_HEAD_INIT, "launchbench._tls",
    "Per-thread launch-configuration stack (see launchbench.mechanisms).",
    -1, lb_methods,
};

PyMODINIT_FUNC
PyInit__tls(void)
{
    PyObject *m = PyModule_Create(&lb_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "MAX_DEPTH", LB_TLS_MAX_DEPTH) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
