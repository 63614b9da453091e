"""The empty kernels launchbench launches, and the argument counts its commands take.

Shared by ``launchbench peers``, ``launchbench breakdown`` (both modes), the
worker (through ``argkinds.build_kernel``), the mechanisms' rounds and the asv
suite: the ``@cuda.jit`` kernel with *nargs* array parameters (one builder,
:func:`empty_kernel`; the asv suite's from numba's disk cache,
:func:`cached_kernel`), and the checks of ``--args``, ``--loops``,
``--repeats`` and ``--rounds``.

numba and numpy are imported only when a kernel is built.
"""
from __future__ import annotations

import os

from ..base import atomic, cudamod
from ..base.device import import_cuda, simulator_enabled
from ..base.errors import UserError

#: The most parameters of a kernel: peers' PTX module holds lb_empty0 .. lb_empty<MAX_ARGS>.
MAX_ARGS = 8


def kernel_source(nargs: int, name: str = "k") -> str:
    """Source of an empty kernel with *nargs* array parameters."""
    params = ", ".join(f"a{i}" for i in range(nargs))
    return f"def {name}({params}):\n    pass\n"


#: Set to 1 to let the asv suite run under the CUDA simulator (CI smoke runs).
#: Smoke numbers are simulator timings, never GPU launch costs.
SMOKE_ENV = "LAUNCHBENCH_SMOKE"


def smoke_mode() -> bool:
    """An asv smoke run: the simulator with ``LAUNCHBENCH_SMOKE=1`` (one sample of one launch)."""
    return simulator_enabled() and os.environ.get(SMOKE_ENV, "0") not in ("", "0")


def quiet_occupancy_warnings() -> None:
    """The low-occupancy warning would otherwise fire for every [1, 1] config built (and a
    ``warnings.warn`` per launch where numba-cuda's configure cache misses)."""
    cudamod.quiet_occupancy_warnings()


def empty_kernel(cuda, nargs: int, name: str = "k", signature: str | None = None, **jit_options):
    """The one builder of the empty kernel: ``cuda.jit`` of :func:`kernel_source`, lazily or eagerly
    with *signature* (``void(float32[::1], ...)``)."""
    namespace: dict = {}
    exec(compile(kernel_source(nargs, name), f"<launchbench {name}/{nargs}>", "exec"), namespace)
    if signature is not None:
        return cuda.jit(signature, **jit_options)(namespace[name])
    return cuda.jit(namespace[name], **jit_options)


def device_arrays(nargs: int, cuda=None) -> list:
    """*nargs* distinct zeroed float32[1] device arrays (the empty kernel's arguments)."""
    import numpy as np

    cuda = cuda or cudamod.import_cuda()
    return [cuda.to_device(np.zeros(1, dtype=np.float32)) for _ in range(nargs)]


def build_fingerprint(dist=None) -> str:
    """A short id of the installed numba-cuda build: a digest of its RECORD.

    Why: asv makes one environment per matrix entry and reinstalls each commit
    into it, so ``sys.prefix`` alone would let two builds share one disk
    cache; an index pickled by 0.29.0 fails to load under 0.30.4
    (``No module named 'numba.cuda.cloudpickle'``, seen on the GPU). RECORD
    lists every installed file's hash, so two builds never share an id.
    """
    import hashlib
    import importlib.metadata as md

    dist = dist or cudamod.distribution()
    try:
        found = md.distribution(dist)
    except md.PackageNotFoundError:
        return "none"
    text = found.read_text("RECORD") or found.version
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def kernel_cache_dir() -> str:
    """Where the asv suite's cached kernels live: one folder per environment and build.

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


def cached_kernel(nargs: int, name: str = "k"):
    """The empty kernel, loaded from numba's disk cache after the first process.

    Why: a fresh asv process otherwise spends ~0.75 s compiling (design
    probes); from the cache it loads the cubin. Under the simulator there is
    nothing to cache: :func:`empty_kernel`.
    """
    if simulator_enabled():
        return empty_kernel(cudamod.import_cuda(), nargs, name)
    import importlib.util

    module = f"lb_kernel_{cudamod.choice().replace('-', '_')}_{name}_{nargs}"
    path = os.path.join(kernel_cache_dir(), module + ".py")
    imp = "from numba_cuda_mlir import cuda" if cudamod.choice() == "numba-cuda-mlir" else "from numba import cuda"
    source = imp + "\n\n\n@cuda.jit(cache=True)\n" + kernel_source(nargs, name)
    try:
        with open(path) as fh:
            current = fh.read()
    except OSError:
        current = None
    if current != source:  # write once; a rewrite would invalidate the cache index
        atomic.write_text_atomic(path, source)
    spec = importlib.util.spec_from_file_location(module, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def numba_kernel_and_args(nargs: int):
    """A compiled empty ``@cuda.jit`` kernel and *nargs* float32[1] device arrays.

    The first launch compiles it.
    """
    cuda = import_cuda()
    quiet_occupancy_warnings()
    kernel = empty_kernel(cuda, nargs)
    args = device_arrays(nargs, cuda)
    kernel[1, 1](*args)
    cuda.synchronize()
    return kernel, args


# -- command-line counts ------------------------------------------------------

def check_counts(loops: int, repeats: int, rounds: int) -> None:
    for flag, value in (("--loops", loops), ("--repeats", repeats), ("--rounds", rounds)):
        if value < 1:
            raise UserError(f"{flag} must be >= 1, got {value}")
