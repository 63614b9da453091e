"""Launch-config capture mechanisms, installed onto one numba-cuda in-process.

Each timed call is one ``k[1, 1](*args)`` launch of an empty kernel with
the mechanism under test replacing ``CUDADispatcher.call`` (see
``launchbench.workloads.mechanisms``): ``stock`` is numba-cuda untouched,
``passthrough`` the bare interception, ``contextvar`` the pull-request-#288
style capture, ``tls`` our C thread-local stack, ``delay:0.5us`` a known
+0.5 µs. Read a mechanism's cost as its time minus ``passthrough``'s.

Needs launchbench itself (its C extension), so it runs in an environment
where launchbench is installed; in the virtualenvs asv builds for
numba-cuda commits launchbench is absent and every benchmark here skips.
For tightly interleaved numbers with confidence intervals use
``launchbench mechanisms``; this suite puts the same quantity on the asv
site next to the other launch benchmarks.
"""
from . import common

MECHANISM_SPECS = ["stock", "passthrough", "contextvar", "tls", "delay:0.5us"]

#: Launches in setup after compilation, before timing starts.
WARMUP_LAUNCHES = 100


def _mechanisms_or_skip():
    """launchbench.workloads.mechanisms, or NotImplementedError (asv: skipped) where it is absent."""
    try:
        from launchbench.workloads import mechanisms
        from launchbench.workloads import _tls  # noqa: F401 - the tls and delay mechanisms need it
    except ImportError as exc:
        raise NotImplementedError(f"launchbench is not importable here ({exc})") from None
    return mechanisms


class TimeMechanismLaunch:
    """``cfg(*args)`` per launch, ``cfg = k[1, 1]``, under each capture mechanism."""

    params = [MECHANISM_SPECS, common.ARG_COUNTS]
    param_names = ["mechanism", "args"]
    number = 2000
    rounds = common.SURVEY_ROUNDS
    repeat = (5, 10, 2.0)  # 2000 launches (~20-60 ms) per sample; was up to 20 samples in 10 s
    warmup_time = 0.2

    def setup(self, mechanism, nargs):
        mechanisms = _mechanisms_or_skip()
        common.gpu_or_skip()
        common.quiet_occupancy_warnings()
        target = None
        kernel = common.make_kernel(nargs)
        if common.simulator_enabled():
            # Smoke runs only: simulator kernels never reach CUDADispatcher.call.
            from launchbench.workloads.mechanism_rounds import SimulatorDispatcher

            kernel, target = SimulatorDispatcher(kernel), SimulatorDispatcher
        self.args = common.make_args(nargs)
        self.configured = kernel[1, 1]
        self.configured(*self.args)  # compile before the mechanism is installed
        mechanisms.install(mechanism, target=target)
        self._mechanisms = mechanisms
        for _ in range(WARMUP_LAUNCHES):
            self.configured(*self.args)
        common.synchronize()

    def teardown(self, mechanism, nargs):
        if hasattr(self, "_mechanisms"):
            self._mechanisms.uninstall()
            common.synchronize()

    def time_launch(self, mechanism, nargs):
        self.configured(*self.args)
