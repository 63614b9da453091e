"""Shared fixtures for the asv suite.

Self-contained on purpose: asv runs these files inside the virtualenvs it
builds for numba-cuda commits, where launchbench itself is not installed.
Only the standard library, numpy and numba-cuda may be imported here.
"""
import os
import warnings

ARG_COUNTS = [0, 1, 2, 3, 4]

#: asv processes per parameter set for every benchmark that does not sample like bench_launch's
#: launch rows (LC-S, peers, tracks; bench_mechanisms and bench_argkinds do, and take their 2).
#: One: their samples are timings inside the process, fresh processes of their own (timeraw) or
#: exact counts, and `launchbench peers` gives the peers' interleaved intervals. With
#: bench_launch's 2 it keeps the full default grid for one commit within
#: 15 minutes (docs/asv.md, "Which path gives which precision"); ``-a rounds=N`` overrides.
SURVEY_ROUNDS = 1

#: Set to 1 to let the suite run under the CUDA simulator (CI smoke runs).
#: Smoke numbers are simulator timings, never GPU launch costs.
SMOKE_ENV = "LAUNCHBENCH_SMOKE"


#: Which package's ``cuda`` the suite launches through (issue 21): numba-cuda (default) or
#: numba-cuda-mlir, which keeps numba-cuda's API as ``from numba_cuda_mlir import cuda``.
CUDA_MODULE_ENV = "LAUNCHBENCH_CUDA_MODULE"
_CUDA_IMPORTS = {"numba-cuda": ("numba.cuda", None), "numba-cuda-mlir": ("numba_cuda_mlir.cuda", None)}


def cuda_module_name():
    name = (os.environ.get(CUDA_MODULE_ENV) or "numba-cuda").strip()
    if name not in _CUDA_IMPORTS:
        raise NotImplementedError(f"{CUDA_MODULE_ENV}={name!r}: use numba-cuda or numba-cuda-mlir")
    return name


def cuda_module():
    """The asv import shim: ``numba.cuda`` or ``numba_cuda_mlir.cuda``, so the same ``time_*``
    classes measure either (mirrors launchbench.base.cudamod; the suite must not import launchbench)."""
    import importlib

    module, attr = _CUDA_IMPORTS[cuda_module_name()]
    mod = importlib.import_module(module)
    return getattr(mod, attr) if attr else mod


def simulator_enabled():
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def smoke_mode():
    return simulator_enabled() and os.environ.get(SMOKE_ENV, "0") not in ("", "0")


def gpu_or_skip():
    """Call first in every setup: raising NotImplementedError makes asv skip.

    Under the simulator the suite produces no numbers unless the smoke
    switch is set, so simulator timings can never pass for GPU results.
    """
    if simulator_enabled():
        if not smoke_mode():
            raise NotImplementedError("CUDA simulator: set LAUNCHBENCH_SMOKE=1 for a smoke run")
        return
    cuda = cuda_module()

    if not cuda.is_available():
        raise NotImplementedError("no CUDA GPU available")


def quiet_occupancy_warnings():
    """Silence numba-cuda's low-occupancy warning for the whole process.

    It fires when a launch configuration with fewer than 128 blocks is
    built. configure() is cached, so it would fire once per config, but a
    cache miss (e.g. more than 128 distinct configs, or an older numba-cuda
    without the cache) would add warnings.warn() and filter matching to
    every launch and distort exactly the [1, 1] numbers we care about.
    """
    import importlib

    mlir = cuda_module_name() == "numba-cuda-mlir"  # its own config and warning class
    # ``from numba.cuda import config``: an attribute of numba.cuda (also under the simulator)
    config = importlib.import_module("numba_cuda_mlir.numba_cuda.core.config") if mlir else \
        getattr(cuda_module(), "config", None)
    if hasattr(config, "CUDA_LOW_OCCUPANCY_WARNINGS"):
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    try:
        errors = importlib.import_module("numba_cuda_mlir.numba_cuda.core.errors" if mlir else "numba.core.errors")
    except ImportError:  # pragma: no cover - very old numba
        return
    warnings.simplefilter("ignore", errors.NumbaPerformanceWarning)


def kernel_source(nargs, name="k"):
    """Source of an empty kernel with *nargs* array parameters.

    The body must not be empty of side effects in a way that lets a future
    optimisation skip the launch; an empty body still launches a kernel.
    """
    params = ", ".join(f"a{i}" for i in range(nargs))
    return f"def {name}({params}):\n    pass\n"


def make_kernel(nargs, name="k", **jit_options):
    """A @cuda.jit kernel taking *nargs* float32[:] device arrays."""
    cuda = cuda_module()

    namespace = {}
    exec(compile(kernel_source(nargs, name), f"<launchbench {name}/{nargs}>", "exec"), namespace)
    return cuda.jit(**jit_options)(namespace[name])


def build_fingerprint(dist=None):
    """A short id of the installed numba-cuda build: a digest of its RECORD.

    Why: asv makes one environment per matrix entry and reinstalls each commit
    into it, so ``sys.prefix`` alone would let two builds share one disk
    cache; an index pickled by 0.29.0 fails to load under 0.30.4
    (``No module named 'numba.cuda.cloudpickle'``, seen on the GPU). RECORD
    lists every installed file's hash, so two builds never share an id.
    """
    import hashlib
    import importlib.metadata as md

    dist = dist or cuda_module_name()
    try:
        found = md.distribution(dist)
    except md.PackageNotFoundError:
        return "none"
    text = found.read_text("RECORD") or found.version
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def kernel_cache_dir():
    """Where the suite's cached kernels live: one folder per environment and build.

    numba's disk cache (``cache=True``) only works for functions defined in a
    file, and a cache must never be shared by two numba-cuda builds, so the
    kernel files sit under the environment's own prefix, in a folder named by
    ``build_fingerprint``; ``LAUNCHBENCH_KERNEL_DIR`` overrides the prefix.
    Falls back to the temp folder when the prefix is read-only.
    """
    import hashlib
    import sys
    import tempfile

    leaf = "build-" + build_fingerprint()
    root = os.environ.get("LAUNCHBENCH_KERNEL_DIR") or os.path.join(sys.prefix, "launchbench-kernels")
    folder = os.path.join(root, leaf)
    try:
        os.makedirs(folder, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise OSError(folder)
    except OSError:  # a stable name (str hash() is salted per process)
        prefix_id = hashlib.sha1(sys.prefix.encode()).hexdigest()[:12]
        folder = os.path.join(tempfile.gettempdir(), f"launchbench-kernels-{prefix_id}", leaf)
        os.makedirs(folder, exist_ok=True)
    return folder


def cached_kernel(nargs, name="k"):
    """Like make_kernel, but loaded from numba's disk cache after the first process.

    Why: a fresh asv process otherwise spends ~0.75 s compiling (design
    probes); from the cache it loads the cubin. Under the simulator there is
    nothing to cache: make_kernel.
    """
    if simulator_enabled():
        return make_kernel(nargs, name)
    import importlib.util

    folder = kernel_cache_dir()
    module = f"lb_kernel_{cuda_module_name().replace('-', '_')}_{name}_{nargs}"
    path = os.path.join(folder, module + ".py")
    imp = "from numba_cuda_mlir import cuda" if cuda_module_name() == "numba-cuda-mlir" else "from numba import cuda"
    source = imp + "\n\n\n@cuda.jit(cache=True)\n" + kernel_source(nargs, name)
    try:
        with open(path) as fh:
            current = fh.read()
    except OSError:
        current = None
    if current != source:  # write once; a rewrite would invalidate the cache index
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(source)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(module, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def preimport_numba_cuda():
    """Import numba.cuda now, without initialising CUDA.

    asv's forkserver imports the benchmark modules once and forks a child
    per benchmark: whatever is imported here is not paid again per process
    (~1.4 s of a 3.3 s process in the design probes). Importing does not
    create a CUDA context, so forking after it is safe. A commit whose
    numba-cuda fails to import is left to ``setup``, which reports it.
    """
    try:
        cuda_module()
    except Exception:  # noqa: BLE001 - discovery must survive any broken commit
        return False
    return True


def make_args(nargs, size=1):
    """*nargs* distinct float32 device arrays of *size* elements."""
    import numpy as np

    cuda = cuda_module()
    return [cuda.to_device(np.zeros(size, dtype=np.float32)) for _ in range(nargs)]


def synchronize():
    cuda_module().synchronize()


#: Launches after the first (which compiles or loads the cache), before timing starts.
WARMUP_LAUNCHES = 100

#: Per-process state built by the first ``setup`` that needs it (asv runs one parameter set per process).
_PER_PROCESS = {}


def per_process(key, build):
    """``build()`` once per process for *key*; later calls return the same state.

    asv_runner calls ``setup`` before every sample, so anything costly there (a compile, a warm-up)
    must be built once. A build that raises (a skip) is not kept and raises again.
    """
    state = _PER_PROCESS.get(key)
    if state is None:
        state = _PER_PROCESS[key] = build()
    return state


def warm_up(fn, args, launches=WARMUP_LAUNCHES):
    """``fn(*args)`` *launches* times (once in a smoke run: the simulator runs every thread in Python),
    then synchronize; the first call compiles or loads the kernel."""
    for _ in range(1 if smoke_mode() else launches):
        fn(*args)
    synchronize()


def has_launchconfig():
    """True on numba-cuda >= 0.30, which has numba.cuda.launchconfig (v2)."""
    try:
        import numba.cuda.launchconfig  # noqa: F401
    except ImportError:
        return False
    return True
