"""Kernel arguments as users pass them: numba-cuda device arrays, CuPy arrays and torch
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
launch pay a fresh compile (minutes for this class: docs/asv.md). The kernel and
arguments are built once per process and parameter set. CuPy and torch are imported
in setup; where one is missing (asv's per-commit envs without the host's site-packages, a
machine without them) its benchmarks skip with a reason naming the package. The kernels and
arguments are launchbench.workloads.argkinds' (``launchbench compare/breakdown --arg-kind``),
through ``launchers.argkind_runner``. Kept apart from bench_launch.py.
"""
from launchbench.workloads import launchers, sampling

from . import common

KINDS = ["array", "cupy", "torch"]
ARG_COUNTS = [1, 26]
DISPATCHES = ["lazy", "eager"]


class TimeArgKindLaunch(common.NativeTiming):
    """``cfg(*args)`` per launch, ``cfg = k[1, 1]``, per argument kind, count and dispatch; normalized µs."""

    params = [KINDS, ARG_COUNTS, DISPATCHES, [common.REFERENCE_LABEL]]
    param_names = ["kind", "args", "dispatch", "reference"]

    def setup(self, kind, nargs, dispatch, reference=None):
        self.prepare_process(reference)
        self.run, self.batch = sampling.per_process(("argkinds", kind, nargs, dispatch),
                                                    lambda: launchers.argkind_runner(kind, nargs, dispatch))
        self.ref = sampling.ref_for(self.settings, nargs)

    def time_launch(self, kind, nargs, dispatch, reference=None):
        self.sample(self.run, self.ref, self.batch)

    time_launch.pretty_name = "bench_argkinds.TimeArgKindLaunch.time_launch [" + common.NORMALIZED_NOTE + "]"
    time_launch.version = "43ba2a8fe41175122fc4f44b67b07d4c529591073245a0668ddef413deb7d5f7"  # see common.py, "Row versions"
