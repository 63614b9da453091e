"""Peers and floors: numba-cuda's launch next to CuPy, cuda.core and the driver.

Every launcher launches an empty kernel with 0..4 pointer parameters on
the legacy default stream, grid 1, block 1, in loops of the same length:
``loops`` launches, then one synchronize, inside the timed region, divided
by ``loops``. Samples of all launchers are interleaved (rounds, rotating the
order) and the median is reported, in µs per launch.

numba_cuda  the preconfigured ``k[1, 1](*args)`` of a ``@cuda.jit`` kernel
            taking float32[1] device arrays (kernels.device_arrays)
cupy        ``RawModule(path=<ptx>).get_function(name)(grid, block, args)``
            with cupy arrays
cuda_core   ``cuda.core.launch(stream, LaunchConfig, kernel, *buffers)``
            (``cuda.core`` in 1.x, ``cuda.core.experimental`` before)
floor       launchbench.workloads._floor: cuLaunchKernel in a C loop, timed in C

CuPy, cuda.core and the floor load the same hand-written PTX, so they
launch identical kernels. numba-cuda's kernel is its own compilation of an
empty function; a float32[:] argument is 7 kernel parameters there (meminfo,
parent, nitems, itemsize, data, shape, stride), which is part of what its
launch costs.

``measure(nargs, loops)`` is the entry point ``launchbench compare --peers``
calls inside each variant environment. Nothing heavy is imported at module
import time.
"""
from __future__ import annotations

import functools
import os
import statistics
import tempfile
import time

from ..base import cudamod
from ..base.device import import_cuda, simulator_enabled
from ..base.errors import UserError
from . import argkinds
from .asvnative import slots
from .kernels import MAX_ARGS, device_arrays, empty_kernel, numba_kernel_and_args, quiet_occupancy_warnings

ARG_COUNTS = (0, 1, 2, 3, 4)
PEERS = ("numba_cuda_mlir", "cupy", "cuda_core", "floor")
LAUNCHERS = ("numba_cuda",) + PEERS
LABELS = {"numba_cuda": "numba-cuda", "numba_cuda_mlir": "numba-cuda-mlir", "cupy": "CuPy", "cuda_core": "cuda.core",
          "floor": "floor (C)"}
MAX_PTX_ARGS = MAX_ARGS

#: Lowest PTX ISA version that knows each target (PTX ISA release notes).
_PTX_ISA_FOR_TARGET = {
    (5, 0): "4.0", (5, 2): "4.1", (5, 3): "4.2",
    (6, 0): "5.0", (6, 1): "5.0", (6, 2): "5.0",
    (7, 0): "6.0", (7, 2): "6.1", (7, 5): "6.3",
    (8, 0): "7.0", (8, 6): "7.1", (8, 7): "7.4", (8, 9): "7.8",
    (9, 0): "7.8",
    (10, 0): "8.6", (10, 3): "8.8",
    (12, 0): "8.7", (12, 1): "8.8",
}


class PeerUnavailable(Exception):
    """A launcher cannot run here; the message says why (recorded, not fatal)."""


# -- PTX ------------------------------------------------------------------------

def ptx_target(cc: tuple[int, int]) -> tuple[str, str]:
    """(PTX ISA version, target) for a device of compute capability *cc*.

    The device's own target when known, else the highest known target below
    it (PTX is JIT-compiled forward). The lowest ISA version that supports
    the target keeps old drivers happy.
    """
    known = sorted(t for t in _PTX_ISA_FOR_TARGET if t <= tuple(cc))
    if not known:
        raise ValueError(f"compute capability {cc[0]}.{cc[1]} is older than any supported PTX target")
    best = known[-1]
    return _PTX_ISA_FOR_TARGET[best], f"sm_{best[0]}{best[1]}"


def kernel_name(nargs: int) -> str:
    return f"lb_empty{nargs}"


def empty_kernels_ptx(cc: tuple[int, int], max_args: int = MAX_PTX_ARGS) -> str:
    """One PTX module with empty kernels ``lb_empty0`` .. ``lb_empty<max_args>``.

    Each kernel takes that many ``.u64`` (pointer) parameters and returns.
    """
    version, target = ptx_target(cc)
    parts = [f"// launchbench: empty kernels with 0..{max_args} pointer parameters",
             f".version {version}", f".target {target}", ".address_size 64", ""]
    for nargs in range(max_args + 1):
        name = kernel_name(nargs)
        params = ",\n".join(f"\t.param .u64 {name}_param_{i}" for i in range(nargs))
        parts.append(f".visible .entry {name}(\n{params}\n)\n{{\n\tret;\n}}\n" if nargs
                     else f".visible .entry {name}()\n{{\n\tret;\n}}\n")
    return "\n".join(parts)


# -- launchers: each factory returns run(n) -> seconds for n launches + sync ---

def _device_cc() -> tuple[int, int]:
    try:
        from . import _floor  # lazy: a C extension, imported only where a launcher needs it
    except ImportError:  # built for another Python (an asv env): numba-cuda knows the device too
        _floor = None
    if _floor is not None and _floor.available():
        return tuple(_floor.compute_capability())
    return tuple(import_cuda().get_current_device().compute_capability)


@functools.lru_cache(maxsize=None)
def device_ptx() -> str:
    """The empty kernels' PTX for this process's GPU, built once (public: gpu/asv_reference_probe.py loads it)."""
    return empty_kernels_ptx(_device_cc())


def make_numba_cuda(nargs: int, kind: str = "array", dispatch: str = "lazy"):
    """numba-cuda's ``k[1, 1](*args)``; *kind*/*dispatch* (``peers --arg-kind/--dispatch``)
    give it CuPy or torch arguments or an eager signature -- the other launchers keep raw pointers."""
    if (kind, dispatch) == ("array", "lazy"):
        kernel, args = numba_kernel_and_args(nargs)
    else:
        cuda_mod = cudamod.import_cuda()
        quiet_occupancy_warnings()
        kernel = argkinds.build_kernel(cuda_mod, nargs, kind, dispatch)
        args = argkinds.make_args(nargs, kind, cuda_mod)
        kernel[1, 1](*args)
        cuda_mod.synchronize()
    from numba import cuda

    return slots.timed_calls(kernel[1, 1], args, cuda.synchronize)


def make_numba_cuda_mlir(nargs: int):
    """numba-cuda-mlir, the successor, launching the same empty kernel with the same arguments.

    It coexists with numba-cuda in one process (lab/README.md), so it sits
    beside numba-cuda and the floors in the same slots.
    """

    try:
        from numba_cuda_mlir import cuda
    except Exception as exc:  # noqa: BLE001 - not installed, or fails to import here
        raise PeerUnavailable(f"numba-cuda-mlir is not importable ({type(exc).__name__}: {exc})") from None
    cudamod.quiet_occupancy_warnings({cudamod.ENV: "numba-cuda-mlir"})
    kernel = empty_kernel(cuda, nargs)
    args = device_arrays(nargs, cuda)
    cfg, sync = kernel[1, 1], cuda.synchronize
    cfg(*args)
    sync()
    return slots.timed_calls(cfg, args, sync)


@functools.lru_cache(maxsize=None)
def _cupy_module(ptx: str):
    import cupy

    fd, path = tempfile.mkstemp(suffix=".ptx", prefix="launchbench-")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(ptx)
        module = cupy.RawModule(path=path)
        module.get_function(kernel_name(0))  # loads the module while the file exists
    finally:
        os.unlink(path)
    return module


def make_cupy(nargs: int):
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 - any import failure means "not here"
        raise PeerUnavailable(f"cupy not importable ({type(exc).__name__}: {exc})") from None
    kern = _cupy_module(device_ptx()).get_function(kernel_name(nargs))
    args = tuple(cupy.zeros(1, dtype=cupy.float32) for _ in range(nargs))
    grid, block = (1,), (1,)
    sync, clock = cupy.cuda.runtime.deviceSynchronize, time.perf_counter

    def run(n):
        t0 = clock()
        for _ in range(n):
            kern(grid, block, args)
        sync()
        return clock() - t0

    return run


def cuda_core_namespace():
    """``cuda.core`` (1.x, and 0.7 which already re-exports) or ``cuda.core.experimental``."""
    try:
        import cuda.core as cc

        cc.launch, cc.LaunchConfig, cc.ObjectCode, cc.Device  # noqa: B018 - probe the names
        return cc
    except (ImportError, AttributeError):
        pass
    try:
        import cuda.core.experimental as cc
    except Exception as exc:  # noqa: BLE001
        raise PeerUnavailable(f"cuda.core not importable ({type(exc).__name__}: {exc})") from None
    return cc


@functools.lru_cache(maxsize=None)
def _cuda_core_object_code(ptx: str):
    return cuda_core_namespace().ObjectCode.from_ptx(ptx.encode())


def make_cuda_core(nargs: int):
    cc = cuda_core_namespace()
    dev = cc.Device(0)
    dev.set_current()
    kernel = _cuda_core_object_code(device_ptx()).get_kernel(kernel_name(nargs))
    buffers = [dev.allocate(4) for _ in range(nargs)]
    config = cc.LaunchConfig(grid=1, block=1)
    stream = cc.Stream.from_handle(0)  # the legacy default stream, as numba-cuda's k[1, 1]
    launch, sync, clock = cc.launch, dev.sync, time.perf_counter

    def run(n):
        t0 = clock()
        for _ in range(n):
            launch(stream, config, kernel, *buffers)
        sync()
        return clock() - t0

    run.keepalive = buffers
    return run


def _floor_module():
    try:
        from . import _floor  # lazy: the C extension may be unbuilt (a peer that is unavailable)
    except ImportError as exc:
        raise PeerUnavailable(f"launchbench.workloads._floor is not built ({exc}); reinstall launchbench") from None
    if not _floor.available():
        raise PeerUnavailable(_floor.unavailable_reason())
    return _floor


@functools.lru_cache(maxsize=None)
def _floor_function(ptx: str, nargs: int) -> int:
    return _floor_module().load_module(ptx.encode(), kernel_name(nargs))


def make_floor(nargs: int):
    floor = _floor_module()
    func = _floor_function(device_ptx(), nargs)
    ptrs = [floor.mem_alloc(4) for _ in range(nargs)]  # tiny, kept for the process

    def run(n):
        return floor.launch_loop(func, n, nargs, device_ptrs=ptrs) / 1e9

    return run


FACTORIES = {"numba_cuda": make_numba_cuda, "numba_cuda_mlir": make_numba_cuda_mlir, "cupy": make_cupy,
             "cuda_core": make_cuda_core, "floor": make_floor}


def build_launchers(names, arg_counts, warmup: int, numba_args: tuple = ("array", "lazy")):
    """{name: {nargs: run}} and {name: reason} for launchers that cannot run here.

    Each launcher is warmed up (module load, JIT, first-launch costs) before
    it is returned. A launcher failing for one arg count is dropped entirely,
    so every reported row covers the same arg counts.
    """
    runs: dict[str, dict[int, object]] = {}
    reasons: dict[str, str] = {}
    for name in names:
        try:
            per = {}
            for nargs in arg_counts:
                run = make_numba_cuda(nargs, *numba_args) if name == "numba_cuda" else FACTORIES[name](nargs)
                run(warmup)
                per[nargs] = run
            runs[name] = per
        except UserError:
            raise
        except Exception as exc:  # noqa: BLE001 - a peer that fails is reported, not fatal
            text = str(exc) if isinstance(exc, PeerUnavailable) else f"{type(exc).__name__}: {exc}"
            reasons[name] = " ".join(text.split())[:300]
    return runs, reasons


def collect(runs, arg_counts, loops: int, repeats: int, rounds: int) -> dict:
    """Interleaved samples, µs/launch: {name: {nargs: [..]}}.

    Per round and arg count, each repeat takes one sample of every launcher;
    the launcher order rotates between rounds so none is always first.
    """
    names = list(runs)
    samples = {name: {n: [] for n in arg_counts} for name in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)] if names else []
        for nargs in arg_counts:
            for _ in range(repeats):
                for name in order:
                    samples[name][nargs].append(runs[name][nargs](loops) / loops * 1e6)
    return samples


def measure(nargs: int, loops: int, repeats: int = 5) -> dict[str, float | None]:
    """Median µs/launch of CuPy, cuda.core and the floor for *nargs* pointer args.

    For ``launchbench compare --peers``: any launcher that cannot run here is
    None (see ``unavailable()`` for why). Under the CUDA simulator every
    value is None: peers are real-GPU numbers and must not sit next to
    simulated ones.
    """
    if not isinstance(nargs, int) or not 0 <= nargs <= MAX_PTX_ARGS:
        raise ValueError(f"nargs must be an int in 0..{MAX_PTX_ARGS}, got {nargs!r}")
    if loops < 1 or repeats < 1:
        raise ValueError(f"loops and repeats must be >= 1, got {loops}, {repeats}")
    result: dict[str, float | None] = {name: None for name in PEERS}
    if simulator_enabled():
        _UNAVAILABLE.update({name: "CUDA simulator run" for name in PEERS})
        return result
    runs = {}
    for name in PEERS:
        run = _cached_launcher(name, nargs, max(10, min(loops, 1000)))
        if run is not None:
            runs[name] = {nargs: run}
    samples = collect(runs, [nargs], loops, repeats, rounds=1)
    for name, per in samples.items():
        result[name] = statistics.median(per[nargs])
    return result


_UNAVAILABLE: dict[str, str] = {}
_LAUNCHER_CACHE: dict[tuple[str, int], object] = {}


def _cached_launcher(name: str, nargs: int, warmup: int):
    key = (name, nargs)
    if key not in _LAUNCHER_CACHE:
        runs, reasons = build_launchers([name], [nargs], warmup)
        _LAUNCHER_CACHE[key] = runs.get(name, {}).get(nargs)
        if name in reasons:
            _UNAVAILABLE[name] = reasons[name]
    return _LAUNCHER_CACHE[key]


def unavailable() -> dict[str, str]:
    """Why each peer ``measure()`` returned None for, so far in this process."""
    return dict(_UNAVAILABLE)
