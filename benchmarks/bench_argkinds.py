"""Kernel arguments as users pass them (issue 22): numba-cuda device arrays, CuPy arrays and torch
CUDA tensors, at 1 and 26 arguments, dispatched lazily (``cuda.jit(k)``: typed at each launch)
or eagerly (``cuda.jit("void(float32[::1], ...)")(k)``: one signature compiled up front).

One sample is a batch of ``BATCH`` ``k[1, 1](*args)`` launches of an empty kernel and one
synchronize, recorded as µs per launch (``number = 1`` with a value clock, as bench_launch does):
asv_runner re-runs ``setup`` before every individually timed call when ``number > 1``, which made
each timed launch pay a fresh compile (10.5 min for this class in the 2026-11-25 grid). The kernel
and arguments are built once per process and parameter set. CuPy and torch are imported
in setup; where one is missing (asv's per-commit envs without the host's site-packages, a
machine without them) its benchmarks skip with a reason naming the package. The suite must not
import launchbench (absent from asv's envs); launchbench.workloads.argkinds holds the same
factories for ``launchbench compare/breakdown --arg-kind``. Kept apart from bench_launch.py.
"""
import importlib

from . import common, native, normalize

KINDS = ["array", "cupy", "torch"]
ARG_COUNTS = [1, 26]
DISPATCHES = ["lazy", "eager"]
#: Launches per sample (one synchronize at the end): ~0.13 s at 26 torch arguments (~1.3 ms each).
BATCH = 1 if common.smoke_mode() else 100

#: The clock asv reads around each timed call; the body advances it by the batch's µs per launch.
CLOCK = normalize.ValueClock()


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
    """``cfg(*args)`` per launch, ``cfg = k[1, 1]``, per argument kind, count and dispatch; µs per launch."""

    params = [KINDS, ARG_COUNTS, DISPATCHES]
    param_names = ["kind", "args", "dispatch"]
    timer = staticmethod(CLOCK.now)
    number = 1
    rounds = common.SURVEY_ROUNDS
    repeat = (3, 10, 2.0)
    warmup_time = 0  # setup warmed up

    def setup(self, kind, nargs, dispatch):
        self.run = common.per_process(("argkinds", kind, nargs, dispatch), lambda: _runner(kind, nargs, dispatch))

    def time_launch(self, kind, nargs, dispatch):
        CLOCK.advance(self.run(BATCH))


def _runner(kind, nargs, dispatch):
    """A warmed-up ``run(n)`` -> seconds per launch of ``k[1, 1](*args)`` for one parameter set."""
    common.gpu_or_skip()
    common.quiet_occupancy_warnings()
    args = [_one_array(kind) for _ in range(nargs)]
    cuda = common.cuda_module()
    namespace = {}
    exec(compile(common.kernel_source(nargs), f"<launchbench argkinds/{nargs}>", "exec"), namespace)
    if dispatch == "eager":
        kernel = cuda.jit(f"void({', '.join(['float32[::1]'] * nargs)})")(namespace["k"])
    else:
        kernel = cuda.jit(namespace["k"])
    configured = kernel[1, 1]
    common.warm_up(configured, args)
    return native.launch_batch(configured, args, common.synchronize)
