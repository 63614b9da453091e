/*
 * launchbench.workloads._floor: the driver's floor for a kernel launch.
 *
 * A C loop calling cuLaunchKernel N times on one function handle with one
 * prepared parameter array, timed inside C with CLOCK_MONOTONIC. Nothing
 * Python-level runs inside the timed region, so the result is what a launch
 * costs with no binding layer at all -- the number numba-cuda, CuPy and
 * cuda.core are compared against.
 *
 * The driver is loaded with dlopen("libcuda.so.1") at run time and the few
 * types and prototypes needed are declared here, so building needs neither
 * a CUDA toolkit nor its headers; on a machine without a driver the module
 * imports and available() is False.
 *
 * available()                    driver loads, cuInit succeeds, >= 1 device
 * unavailable_reason()           why not (str), or None when available
 * driver_version()               cuDriverGetVersion, e.g. 13000
 * compute_capability()           (major, minor) of device 0
 * load_module(ptx, name)         -> CUfunction handle (int)
 * mem_alloc(nbytes) / mem_free(ptr)
 * launch_loop(func, n, nargs, grid=(1,1,1), block=(1,1,1), shmem=0,
 *             stream=0, device_ptrs=None, sync=True) -> ns (int)
 *
 * launch_loop's timed region is the n launches and, when sync is true (the
 * default), one cuCtxSynchronize after them: the same "n launches, then
 * synchronize" region the Python-level peers time, so the numbers compare.
 * A context must be current on the calling thread (load_module makes the
 * primary context of device 0 current when none is).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define LB_FLOOR_MAX_ARGS 32

/* The driver API types we need, declared as the driver ABI defines them. */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

#define CUDA_SUCCESS 0
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

typedef CUresult (*p_cuInit)(unsigned int);
typedef CUresult (*p_cuDriverGetVersion)(int *);
typedef CUresult (*p_cuDeviceGetCount)(int *);
typedef CUresult (*p_cuDeviceGet)(CUdevice *, int);
typedef CUresult (*p_cuDeviceGetAttribute)(int *, int, CUdevice);
typedef CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
typedef CUresult (*p_cuCtxGetCurrent)(CUcontext *);
typedef CUresult (*p_cuCtxSetCurrent)(CUcontext);
typedef CUresult (*p_cuCtxSynchronize)(void);
typedef CUresult (*p_cuModuleLoadData)(CUmodule *, const void *);
typedef CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
typedef CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
typedef CUresult (*p_cuMemFree)(CUdeviceptr);
typedef CUresult (*p_cuGetErrorName)(CUresult, const char **);
typedef CUresult (*p_cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                                     unsigned int, unsigned int, unsigned int,
                                     unsigned int, CUstream, void **, void **);

static struct {
    int tried;          /* dlopen + cuInit attempted */
    int ok;             /* usable */
    char reason[512];   /* why not, when !ok */
    void *lib;
    p_cuInit cuInit;
    p_cuDriverGetVersion cuDriverGetVersion;
    p_cuDeviceGetCount cuDeviceGetCount;
    p_cuDeviceGet cuDeviceGet;
    p_cuDeviceGetAttribute cuDeviceGetAttribute;
    p_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain;
    p_cuCtxGetCurrent cuCtxGetCurrent;
    p_cuCtxSetCurrent cuCtxSetCurrent;
    p_cuCtxSynchronize cuCtxSynchronize;
    p_cuModuleLoadData cuModuleLoadData;
    p_cuModuleGetFunction cuModuleGetFunction;
    p_cuMemAlloc cuMemAlloc;
    p_cuMemFree cuMemFree;
    p_cuGetErrorName cuGetErrorName;
    p_cuLaunchKernel cuLaunchKernel;
} drv;

static const char *
lb_error_name(CUresult rc)
{
    const char *name = NULL;
    if (drv.cuGetErrorName && drv.cuGetErrorName(rc, &name) == CUDA_SUCCESS && name)
        return name;
    return "CUDA_ERROR_UNKNOWN_CODE";
}

/* Sets RuntimeError("<call> failed: <NAME> (<code>)") and returns NULL. */
static PyObject *
lb_driver_error(const char *call, CUresult rc)
{
    PyErr_Format(PyExc_RuntimeError, "%s failed: %s (%d)", call, lb_error_name(rc), rc);
    return NULL;
}

#define LB_SYM(field, symbol)                                                  \
    do {                                                                       \
        *(void **)(&drv.field) = dlsym(drv.lib, symbol);                       \
        if (!drv.field) {                                                      \
            snprintf(drv.reason, sizeof(drv.reason),                           \
                     "libcuda.so.1 has no symbol %s (driver too old?)", symbol); \
            return 0;                                                          \
        }                                                                      \
    } while (0)

static int
lb_load_driver_once(void)
{
    if (drv.tried)
        return drv.ok;
    drv.tried = 1;
    drv.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv.lib) {
        const char *err = dlerror();
        snprintf(drv.reason, sizeof(drv.reason),
                 "the CUDA driver library libcuda.so.1 could not be loaded (%s)",
                 err ? err : "unknown dlopen error");
        return 0;
    }
    LB_SYM(cuInit, "cuInit");
    LB_SYM(cuDriverGetVersion, "cuDriverGetVersion");
    LB_SYM(cuDeviceGetCount, "cuDeviceGetCount");
    LB_SYM(cuDeviceGet, "cuDeviceGet");
    LB_SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
    LB_SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LB_SYM(cuCtxGetCurrent, "cuCtxGetCurrent");
    LB_SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
    LB_SYM(cuCtxSynchronize, "cuCtxSynchronize");
    LB_SYM(cuModuleLoadData, "cuModuleLoadData");
    LB_SYM(cuModuleGetFunction, "cuModuleGetFunction");
    LB_SYM(cuMemAlloc, "cuMemAlloc_v2");
    LB_SYM(cuMemFree, "cuMemFree_v2");
    LB_SYM(cuGetErrorName, "cuGetErrorName");
    LB_SYM(cuLaunchKernel, "cuLaunchKernel");

    CUresult rc = drv.cuInit(0);
    if (rc != CUDA_SUCCESS) {
        snprintf(drv.reason, sizeof(drv.reason), "cuInit failed: %s (%d)", lb_error_name(rc), rc);
        return 0;
    }
    int count = 0;
    rc = drv.cuDeviceGetCount(&count);
    if (rc != CUDA_SUCCESS || count < 1) {
        snprintf(drv.reason, sizeof(drv.reason), "no CUDA device found (cuDeviceGetCount: %s, count %d)",
                 lb_error_name(rc), count);
        return 0;
    }
    drv.ok = 1;
    drv.reason[0] = '\0';
    return 1;
}

/* Raises RuntimeError with the reason when the driver is unusable. */
static int
lb_require_driver(void)
{
    if (lb_load_driver_once())
        return 1;
    PyErr_Format(PyExc_RuntimeError, "CUDA driver unavailable: %s", drv.reason);
    return 0;
}

/* Make a context current: the primary context of device 0 unless one already is. */
static int
lb_ensure_context(void)
{
    CUcontext ctx = NULL;
    CUresult rc = drv.cuCtxGetCurrent(&ctx);
    if (rc != CUDA_SUCCESS) {
        lb_driver_error("cuCtxGetCurrent", rc);
        return 0;
    }
    if (ctx)
        return 1;
    CUdevice dev;
    rc = drv.cuDeviceGet(&dev, 0);
    if (rc != CUDA_SUCCESS) {
        lb_driver_error("cuDeviceGet", rc);
        return 0;
    }
    rc = drv.cuDevicePrimaryCtxRetain(&ctx, dev);
    if (rc != CUDA_SUCCESS) {
        lb_driver_error("cuDevicePrimaryCtxRetain", rc);
        return 0;
    }
    rc = drv.cuCtxSetCurrent(ctx);
    if (rc != CUDA_SUCCESS) {
        lb_driver_error("cuCtxSetCurrent", rc);
        return 0;
    }
    return 1;
}

static PyObject *
lb_available(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(lb_load_driver_once());
}

static PyObject *
lb_unavailable_reason(PyObject *self, PyObject *unused)
{
    if (lb_load_driver_once())
        Py_RETURN_NONE;
    return PyUnicode_FromString(drv.reason);
}

static PyObject *
lb_driver_version(PyObject *self, PyObject *unused)
{
    if (!lb_require_driver())
        return NULL;
    int version = 0;
    CUresult rc = drv.cuDriverGetVersion(&version);
    if (rc != CUDA_SUCCESS)
        return lb_driver_error("cuDriverGetVersion", rc);
    return PyLong_FromLong(version);
}

static PyObject *
lb_compute_capability(PyObject *self, PyObject *unused)
{
    if (!lb_require_driver())
        return NULL;
    CUdevice dev;
    int major = 0, minor = 0;
    CUresult rc = drv.cuDeviceGet(&dev, 0);
    if (rc != CUDA_SUCCESS)
        return lb_driver_error("cuDeviceGet", rc);
    rc = drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (rc != CUDA_SUCCESS)
        return lb_driver_error("cuDeviceGetAttribute", rc);
    rc = drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    if (rc != CUDA_SUCCESS)
        return lb_driver_error("cuDeviceGetAttribute", rc);
    return Py_BuildValue("(ii)", major, minor);
}

static PyObject *
lb_load_module(PyObject *self, PyObject *args)
{
    Py_buffer ptx;
    const char *name;
    if (!PyArg_ParseTuple(args, "y*s:load_module", &ptx, &name))
        return NULL;
    if (ptx.len == 0 || name[0] == '\0') {
        PyBuffer_Release(&ptx);
        PyErr_SetString(PyExc_ValueError, "load_module(ptx, name): ptx and name must be non-empty");
        return NULL;
    }
    /* cuModuleLoadData needs NUL-terminated PTX text; bytes objects are, other buffers may not be. */
    char *image = PyMem_Malloc((size_t)ptx.len + 1);
    if (!image) {
        PyBuffer_Release(&ptx);
        return PyErr_NoMemory();
    }
    memcpy(image, ptx.buf, (size_t)ptx.len);
    image[ptx.len] = '\0';
    PyBuffer_Release(&ptx);

    PyObject *result = NULL;
    if (!lb_require_driver() || !lb_ensure_context())
        goto done;
    CUmodule mod = NULL;
    CUresult rc = drv.cuModuleLoadData(&mod, image);
    if (rc != CUDA_SUCCESS) {
        lb_driver_error("cuModuleLoadData", rc);
        goto done;
    }
    /* The module stays loaded for the life of the process: the handle we
       return points into it, and benchmarks load a handful at most. */
    CUfunction func = NULL;
    rc = drv.cuModuleGetFunction(&func, mod, name);
    if (rc != CUDA_SUCCESS) {
        PyErr_Format(PyExc_RuntimeError, "cuModuleGetFunction(%s) failed: %s (%d)",
                     name, lb_error_name(rc), rc);
        goto done;
    }
    result = PyLong_FromVoidPtr((void *)func);
done:
    PyMem_Free(image);
    return result;
}

static PyObject *
lb_mem_alloc(PyObject *self, PyObject *args)
{
    Py_ssize_t nbytes;
    if (!PyArg_ParseTuple(args, "n:mem_alloc", &nbytes))
        return NULL;
    if (nbytes < 1) {
        PyErr_Format(PyExc_ValueError, "mem_alloc: nbytes must be >= 1, got %zd", nbytes);
        return NULL;
    }
    if (!lb_require_driver() || !lb_ensure_context())
        return NULL;
    CUdeviceptr ptr = 0;
    CUresult rc = drv.cuMemAlloc(&ptr, (size_t)nbytes);
    if (rc != CUDA_SUCCESS)
        return lb_driver_error("cuMemAlloc", rc);
    return PyLong_FromUnsignedLongLong(ptr);
}

static PyObject *
lb_mem_free(PyObject *self, PyObject *args)
{
    unsigned long long ptr;
    if (!PyArg_ParseTuple(args, "K:mem_free", &ptr))
        return NULL;
    if (ptr == 0) {
        PyErr_SetString(PyExc_ValueError, "mem_free: pointer must be non-zero");
        return NULL;
    }
    if (!lb_require_driver())
        return NULL;
    CUresult rc = drv.cuMemFree((CUdeviceptr)ptr);
    if (rc != CUDA_SUCCESS)
        return lb_driver_error("cuMemFree", rc);
    Py_RETURN_NONE;
}

/* Parse a 1..3-tuple of positive ints into dims[3]; missing entries are 1. */
static int
lb_parse_dims(PyObject *obj, const char *what, unsigned int dims[3])
{
    dims[0] = dims[1] = dims[2] = 1;
    if (obj == NULL)
        return 1;
    if (PyLong_Check(obj)) {
        long v = PyLong_AsLong(obj);
        if (v == -1 && PyErr_Occurred())
            return 0;
        if (v < 1 || v > (long)UINT32_MAX) {
            PyErr_Format(PyExc_ValueError, "launch_loop: %s must be positive, got %ld", what, v);
            return 0;
        }
        dims[0] = (unsigned int)v;
        return 1;
    }
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) < 1 || PyTuple_GET_SIZE(obj) > 3) {
        PyErr_Format(PyExc_TypeError, "launch_loop: %s must be an int or a tuple of 1 to 3 ints", what);
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); i++) {
        PyObject *item = PyTuple_GET_ITEM(obj, i);
        if (!PyLong_Check(item)) {
            PyErr_Format(PyExc_TypeError, "launch_loop: %s[%zd] must be an int", what, i);
            return 0;
        }
        long v = PyLong_AsLong(item);
        if (v == -1 && PyErr_Occurred())
            return 0;
        if (v < 1 || v > (long)UINT32_MAX) {
            PyErr_Format(PyExc_ValueError, "launch_loop: %s[%zd] must be positive, got %ld", what, i, v);
            return 0;
        }
        dims[i] = (unsigned int)v;
    }
    return 1;
}

static int64_t
lb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static PyObject *
lb_launch_loop(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"func", "n", "nargs", "grid", "block", "shmem",
                             "stream", "device_ptrs", "sync", NULL};
    PyObject *func_obj, *grid_obj = NULL, *block_obj = NULL, *ptrs_obj = Py_None;
    long long n;
    int nargs;
    long shmem = 0;
    unsigned long long stream = 0;
    int sync = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLi|OOlKOp:launch_loop", kwlist,
                                     &func_obj, &n, &nargs, &grid_obj, &block_obj,
                                     &shmem, &stream, &ptrs_obj, &sync))
        return NULL;

    /* Validate everything before touching the driver, so bad input is
       reported the same way with or without a GPU. */
    if (!PyLong_Check(func_obj)) {
        PyErr_SetString(PyExc_TypeError, "launch_loop: func must be an int handle from load_module()");
        return NULL;
    }
    unsigned long long func_value = PyLong_AsUnsignedLongLong(func_obj);
    if (func_value == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return NULL;
        PyErr_Clear();
        func_value = 0;  /* negative: reported as not a valid handle below */
    }
    if (func_value == 0) {
        PyErr_SetString(PyExc_ValueError,
                        "launch_loop: func handle must be a positive int from load_module()");
        return NULL;
    }
    void *func = (void *)(uintptr_t)func_value;
    if (n < 1) {
        PyErr_Format(PyExc_ValueError, "launch_loop: n must be >= 1, got %lld", n);
        return NULL;
    }
    if (nargs < 0 || nargs > LB_FLOOR_MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "launch_loop: nargs must be in 0..%d, got %d",
                     LB_FLOOR_MAX_ARGS, nargs);
        return NULL;
    }
    if (shmem < 0) {
        PyErr_Format(PyExc_ValueError, "launch_loop: shmem must be >= 0, got %ld", shmem);
        return NULL;
    }
    unsigned int grid[3], block[3];
    if (!lb_parse_dims(grid_obj, "grid", grid) || !lb_parse_dims(block_obj, "block", block))
        return NULL;

    /* One parameter array, built once: each entry points at a CUdeviceptr. */
    CUdeviceptr values[LB_FLOOR_MAX_ARGS];
    void *params[LB_FLOOR_MAX_ARGS + 1];
    memset(values, 0, sizeof(values));
    if (ptrs_obj != Py_None) {
        PyObject *seq = PySequence_Fast(ptrs_obj, "launch_loop: device_ptrs must be a sequence of ints");
        if (!seq)
            return NULL;
        if (PySequence_Fast_GET_SIZE(seq) != nargs) {
            PyErr_Format(PyExc_ValueError, "launch_loop: device_ptrs has %zd entries but nargs is %d",
                         PySequence_Fast_GET_SIZE(seq), nargs);
            Py_DECREF(seq);
            return NULL;
        }
        for (int i = 0; i < nargs; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
            if (!PyLong_Check(item)) {
                PyErr_Format(PyExc_TypeError, "launch_loop: device_ptrs[%d] must be an int", i);
                Py_DECREF(seq);
                return NULL;
            }
            values[i] = PyLong_AsUnsignedLongLong(item);
            if (PyErr_Occurred()) {
                Py_DECREF(seq);
                return NULL;
            }
        }
        Py_DECREF(seq);
    }
    for (int i = 0; i < nargs; i++)
        params[i] = &values[i];
    params[nargs] = NULL;

    if (!lb_require_driver())
        return NULL;

    CUresult rc = CUDA_SUCCESS;
    const char *failed = NULL;
    long long done = 0;
    int64_t start, stop;
    CUfunction f = (CUfunction)func;
    CUstream s = (CUstream)(uintptr_t)stream;
    void **kp = nargs ? params : NULL;

    Py_BEGIN_ALLOW_THREADS
    start = lb_now_ns();
    for (; done < n; done++) {
        rc = drv.cuLaunchKernel(f, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                (unsigned int)shmem, s, kp, NULL);
        if (rc != CUDA_SUCCESS) {
            failed = "cuLaunchKernel";
            break;
        }
    }
    if (!failed && sync) {
        rc = drv.cuCtxSynchronize();
        if (rc != CUDA_SUCCESS)
            failed = "cuCtxSynchronize";
    }
    stop = lb_now_ns();
    Py_END_ALLOW_THREADS

    if (failed) {
        PyErr_Format(PyExc_RuntimeError, "%s failed after %lld launches: %s (%d)",
                     failed, done, lb_error_name(rc), rc);
        return NULL;
    }
    return PyLong_FromLongLong(stop - start);
}

static PyMethodDef lb_methods[] = {
    {"available", lb_available, METH_NOARGS,
     "available() -> bool: the CUDA driver loads, initialises and has a device."},
    {"unavailable_reason", lb_unavailable_reason, METH_NOARGS,
     "unavailable_reason() -> str | None: why available() is False."},
    {"driver_version", lb_driver_version, METH_NOARGS,
     "driver_version() -> int: cuDriverGetVersion (e.g. 13000)."},
    {"compute_capability", lb_compute_capability, METH_NOARGS,
     "compute_capability() -> (major, minor) of device 0."},
    {"load_module", lb_load_module, METH_VARARGS,
     "load_module(ptx: bytes, name: str) -> int: CUfunction handle of *name* in *ptx*.\n"
     "Makes the primary context of device 0 current if no context is."},
    {"mem_alloc", lb_mem_alloc, METH_VARARGS,
     "mem_alloc(nbytes) -> int: a device pointer (cuMemAlloc)."},
    {"mem_free", lb_mem_free, METH_VARARGS, "mem_free(ptr): cuMemFree."},
    {"launch_loop", (PyCFunction)(void (*)(void))lb_launch_loop, METH_VARARGS | METH_KEYWORDS,
     "launch_loop(func, n, nargs, grid=(1,1,1), block=(1,1,1), shmem=0, stream=0,\n"
     "            device_ptrs=None, sync=True) -> int\n"
     "Launch *func* n times with nargs pointer params (device_ptrs, or nulls)\n"
     "and return the nanoseconds taken, including one final cuCtxSynchronize\n"
     "when sync is true."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef lb_module = {
    PyModuleDef_HEAD_INIT, "launchbench.workloads._floor",
    "The driver's floor: a C loop over cuLaunchKernel, timed in C (libcuda loaded with dlopen).",
    -1, lb_methods,
};

PyMODINIT_FUNC
PyInit__floor(void)
{
    PyObject *m = PyModule_Create(&lb_module);
    if (!m)
        return NULL;
    if (PyModule_AddIntConstant(m, "MAX_ARGS", LB_FLOOR_MAX_ARGS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
