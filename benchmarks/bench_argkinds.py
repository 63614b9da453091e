"""Kernel arguments as users pass them (issue 22): numba-cuda device arrays, CuPy arrays and torch
CUDA tensors, at 1 and 26 arguments, dispatched lazily (``cuda.jit(k)``: typed at each launch)
or eagerly (``cuda.jit("void(float32[::1], ...)")(k)``: one signature compiled up front).

One timed call is one ``k[1, 1](*args)`` launch of an empty kernel. CuPy and torch are imported
in setup; where one is missing (asv's per-commit envs without the host's site-packages, a
machine without them) its benchmarks skip with a reason naming the package. The suite must not
import launchbench (absent from asv's envs); launchbench.workloads.argkinds holds the same
factories for ``launchbench compare/breakdown --arg-kind``. Kept apart from bench_launch.py.
"""
import importlib

from . import common

KINDS = ["array", "cupy", "torch"]
ARG_COUNTS = [1, 26]
DISPATCHES = ["lazy", "eager"]
WARMUP_LAUNCHES = 100


def _one_array(kind):
    """A zeroed float32[1] of *kind*; NotImplementedError (asv: skipped) when its package is missing."""
    if kind == "array":
        import numpy as np

        return common.cuda_module().to_device(np.zeros(1, dtype=np.float32))
    if common.simulator_enabled():
        raise NotImplementedError(f"{kind} arguments need a real GPU (the simulator cannot read them)")
    try:
        mod = importlib.import_module(kind)
    except Exception as exc:  # noqa: BLE001 - ImportError, or an install that cannot load
        raise NotImplementedError(f"{kind} is not importable here ({type(exc).__name__})") from None
    if kind == "cupy":
        return mod.zeros(1, dtype=mod.float32)
    return mod.zeros(1, dtype=mod.float32, device="cuda")


class TimeArgKindLaunch:
    """``cfg(*args)`` per launch, ``cfg = k[1, 1]``, per argument kind, count and dispatch."""

    params = [KINDS, ARG_COUNTS, DISPATCHES]
    param_names = ["kind", "args", "dispatch"]
    # 200 calls per sample, 3-10 samples within 2 s: at 26 torch arguments a launch takes ~1.6 ms, so
    # the earlier 2000 x (5-20 samples, 10 s) spent 16-20 s per parameter set and ~4 min per round of the
    # grid (results/h200/2026-11-25-asv-native-anchor/diag-argkinds)
    number = 200
    rounds = common.SURVEY_ROUNDS
    repeat = (3, 10, 2.0)
    warmup_time = 0.2

    def setup(self, kind, nargs, dispatch):
        common.gpu_or_skip()
        common.quiet_occupancy_warnings()
        self.args = [_one_array(kind) for _ in range(nargs)]
        cuda = common.cuda_module()
        namespace = {}
        exec(compile(common.kernel_source(nargs), f"<launchbench argkinds/{nargs}>", "exec"), namespace)
        if dispatch == "eager":
            kernel = cuda.jit(f"void({', '.join(['float32[::1]'] * nargs)})")(namespace["k"])
        else:
            kernel = cuda.jit(namespace["k"])
        self.configured = kernel[1, 1]
        for _ in range(WARMUP_LAUNCHES):
            self.configured(*self.args)
        common.synchronize()

    def time_launch(self, kind, nargs, dispatch):
        self.configured(*self.args)

    def teardown(self, kind, nargs, dispatch):
        common.synchronize()
