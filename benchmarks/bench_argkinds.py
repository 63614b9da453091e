"""Kernel arguments as users pass them (issue 22): numba-cuda device arrays, CuPy arrays and torch
CUDA tensors, at 1 and 26 arguments, dispatched lazily (``cuda.jit(k)``: typed at each launch)
or eagerly (``cuda.jit("void(float32[::1], ...)")(k)``: one signature compiled up front).

A sample is taken as bench_launch's launch rows take one (docs/asv.md, "Native asv"): slots of a
batch of ``k[1, 1](*args)`` launches (one synchronize each) next to a batch of the process's
reference launch, the value ``median(launch/reference) * R0`` handed to asv through the value
clock, one sample per process, ``rounds`` processes per row. Why: each row runs in processes of
its own, and raw per-launch values carried each process's speed state (up to ~1.8x on the VM).
The batch is sized in setup to about ``SLOT_BATCH_S`` of launches, since one launch takes from
~6 µs (a device array) to ~1.6 ms (26 torch tensors, lazily typed). ``number = 1``: asv_runner
re-runs ``setup`` before every individually timed call when ``number > 1``, which made each timed
launch pay a fresh compile (10.5 min for this class in the 2026-11-25 grid). The kernel and
arguments are built once per process and parameter set. CuPy and torch are imported
in setup; where one is missing (asv's per-commit envs without the host's site-packages, a
machine without them) its benchmarks skip with a reason naming the package. The suite must not
import launchbench (absent from asv's envs); launchbench.workloads.argkinds holds the same
factories for ``launchbench compare/breakdown --arg-kind``. Kept apart from bench_launch.py.
"""
import importlib

from . import bench_launch, common, native

KINDS = ["array", "cupy", "torch"]
ARG_COUNTS = [1, 26]
DISPATCHES = ["lazy", "eager"]

#: Seconds of launches per slot batch (1 to native.NUMBA_BATCH launches; 1 in smoke runs): a slot
#: stays short enough to see one machine state, and 100 slots stay under a second at 26 torch tensors.
SLOT_BATCH_S = 3e-3

#: The clock asv reads around each timed call: bench_launch's, which its samples advance.
CLOCK = bench_launch.CLOCK


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


class TimeArgKindLaunch(bench_launch._Timing):
    """``cfg(*args)`` per launch, ``cfg = k[1, 1]``, per argument kind, count and dispatch; normalized µs."""

    params = [KINDS, ARG_COUNTS, DISPATCHES, [bench_launch.REFERENCE_LABEL]]
    param_names = ["kind", "args", "dispatch", "reference"]

    def setup(self, kind, nargs, dispatch, reference=None):
        self._prepare_process(reference)
        self.run, self.batch = common.per_process(("argkinds", kind, nargs, dispatch),
                                                  lambda: _runner(kind, nargs, dispatch))
        self.ref = bench_launch._ref_for(self.settings, nargs)

    def time_launch(self, kind, nargs, dispatch, reference=None):
        self._sample(self.run, self.ref, self.batch)

    time_launch.pretty_name = "bench_argkinds.TimeArgKindLaunch.time_launch [" + bench_launch.NORMALIZED_NOTE + "]"


def slot_batch(seconds_per_launch, target_s=SLOT_BATCH_S, most=native.NUMBA_BATCH):
    """Launches per slot batch: about *target_s* of them, at least 1 and at most *most*."""
    if seconds_per_launch <= 0:
        return most
    return max(1, min(most, round(target_s / seconds_per_launch)))


def _runner(kind, nargs, dispatch):
    """A warmed-up ``run(n)`` -> seconds per launch of ``k[1, 1](*args)`` for one parameter set, and
    the batch a slot takes (sized from ten timed launches after the warm-up)."""
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
    run = native.launch_batch(configured, args, common.synchronize)
    return run, 1 if common.smoke_mode() else slot_batch(run(10))
