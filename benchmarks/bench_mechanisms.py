"""Launch-config capture mechanisms, installed onto one numba-cuda in-process.

The mechanism under test replaces ``CUDADispatcher.call`` (see
``launchbench.workloads.mechanisms``): ``stock`` is numba-cuda untouched,
``passthrough`` the bare interception, ``contextvar`` the pull-request-#288
style capture, ``tls`` our C thread-local stack, ``delay:0.5us`` a known
+0.5 µs. Read a mechanism's cost as its time minus ``passthrough``'s.

A sample is taken as bench_launch takes one (docs/asv.md, "Native asv"):
slots of a batch of ``k[1, 1](*args)`` launches next to a batch of the
process's reference launch, the value ``median(mechanism/reference) * R0``
handed to asv through the value clock, one sample per process, ``rounds``
processes per parameter set. Why: every parameter set runs in processes
of its own, and raw per-launch times carried each process's speed state
(``stock`` 16.0 µs against ``passthrough`` 10.9 µs at 0 args in the full
grid, results/h200/2026-11-25-asv-native-grid), a gap that was the VM and
not the mechanism. With ``LAUNCHBENCH_ASV_ANCHOR`` the reference is the
anchor's launch of the same kind, as for the launch rows.

Needs launchbench itself (its C extension), so it runs in an environment
where launchbench is installed; in the virtualenvs asv builds for
numba-cuda commits launchbench is absent and every benchmark here skips.
For tightly interleaved numbers with confidence intervals use
``launchbench mechanisms``; this suite puts the same quantity on the asv
site next to the other launch benchmarks.
"""
from . import bench_launch, common, native

MECHANISM_SPECS = ["stock", "passthrough", "contextvar", "tls", "delay:0.5us"]

#: Launches after each install (a few warm the mechanism's path).
INSTALL_WARMUP = 10

#: The clock asv reads around each timed call: bench_launch's, which its samples advance.
CLOCK = bench_launch.CLOCK


def _mechanisms_or_skip():
    """launchbench.workloads.mechanisms, or NotImplementedError (asv: skipped) where it is absent."""
    try:
        from launchbench.workloads import mechanisms
        from launchbench.workloads import _tls  # noqa: F401 - the tls and delay mechanisms need it
    except ImportError as exc:
        raise NotImplementedError(f"launchbench is not importable here ({exc})") from None
    return mechanisms


class TimeMechanismLaunch(bench_launch._Timing):
    """``cfg(*args)`` per launch, ``cfg = k[1, 1]``, under each capture mechanism; normalized µs.

    setup installs the mechanism and teardown removes it (asv runs both around the sample); the
    kernel is loaded and warmed up once per process, before any mechanism is installed, and so is
    the reference (it never goes through numba-cuda's dispatcher).
    """

    params = [MECHANISM_SPECS, common.ARG_COUNTS, [bench_launch.REFERENCE_LABEL]]
    param_names = ["mechanism", "args", "reference"]

    def setup(self, mechanism, nargs, reference=None):
        mechanisms = _mechanisms_or_skip()
        self._prepare_process(reference)
        common.quiet_occupancy_warnings()
        configured, self.args, target = common.per_process(("mechanisms", nargs), lambda: _kernel(nargs))
        self.ref = bench_launch._ref_for(self.settings, nargs)
        mechanisms.install(mechanism, target=target)
        self._mechanisms = mechanisms
        common.warm_up(configured, self.args, INSTALL_WARMUP)
        self.run = native.launch_batch(configured, self.args, common.synchronize)

    def teardown(self, mechanism, nargs, reference=None):
        if hasattr(self, "_mechanisms"):
            self._mechanisms.uninstall()
            common.synchronize()

    def time_launch(self, mechanism, nargs, reference=None):
        self._sample(self.run, self.ref)

    time_launch.pretty_name = "bench_mechanisms.TimeMechanismLaunch.time_launch [" + bench_launch.NORMALIZED_NOTE + "]"


def _kernel(nargs):
    """``k[1, 1]``, its arguments and the dispatcher class to patch (None: numba-cuda's), warmed up."""
    target = None
    kernel = common.cached_kernel(nargs)  # the launch rows' kernel: from numba's disk cache
    if common.simulator_enabled():
        # Smoke runs only: simulator kernels never reach CUDADispatcher.call.
        from launchbench.workloads.mechanism_rounds import SimulatorDispatcher

        kernel, target = SimulatorDispatcher(kernel), SimulatorDispatcher
    args = common.make_args(nargs)
    configured = kernel[1, 1]
    common.warm_up(configured, args)  # compiled before any mechanism is installed
    return configured, args, target
