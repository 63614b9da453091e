"""Launch-config capture mechanisms, installed onto one numba-cuda in-process.

Each sample is a batch of ``BATCH`` ``k[1, 1](*args)`` launches of an empty
kernel and one synchronize, recorded as µs per launch (``number = 1``, a
value clock; asv_runner re-runs ``setup`` before every individually timed
call when ``number > 1``, and setup used to compile), with the mechanism
under test replacing ``CUDADispatcher.call`` (see
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
from . import common, native, normalize

MECHANISM_SPECS = ["stock", "passthrough", "contextvar", "tls", "delay:0.5us"]

#: Launches per sample, and after each install (a few warm the mechanism's path).
BATCH = 1 if common.smoke_mode() else 200
INSTALL_WARMUP = 10

#: The clock asv reads around each timed call; the body advances it by the batch's µs per launch.
CLOCK = normalize.ValueClock()


def _mechanisms_or_skip():
    """launchbench.workloads.mechanisms, or NotImplementedError (asv: skipped) where it is absent."""
    try:
        from launchbench.workloads import mechanisms
        from launchbench.workloads import _tls  # noqa: F401 - the tls and delay mechanisms need it
    except ImportError as exc:
        raise NotImplementedError(f"launchbench is not importable here ({exc})") from None
    return mechanisms


class TimeMechanismLaunch:
    """``cfg(*args)`` per launch, ``cfg = k[1, 1]``, under each capture mechanism; µs per launch.

    setup installs the mechanism and teardown removes it (asv runs both around every sample); the
    kernel is compiled and warmed up once per process, before any mechanism is installed.
    """

    params = [MECHANISM_SPECS, common.ARG_COUNTS]
    param_names = ["mechanism", "args"]
    timer = staticmethod(CLOCK.now)
    number = 1
    rounds = common.SURVEY_ROUNDS
    repeat = (10, 50, 2.0)  # a sample is ~2-6 ms of launches
    warmup_time = 0

    def setup(self, mechanism, nargs):
        mechanisms = _mechanisms_or_skip()
        common.gpu_or_skip()
        common.quiet_occupancy_warnings()
        configured, self.args, target = common.per_process(("mechanisms", nargs), lambda: _kernel(nargs))
        mechanisms.install(mechanism, target=target)
        self._mechanisms = mechanisms
        common.warm_up(configured, self.args, INSTALL_WARMUP)
        self.run = native.launch_batch(configured, self.args, common.synchronize)

    def teardown(self, mechanism, nargs):
        if hasattr(self, "_mechanisms"):
            self._mechanisms.uninstall()
            common.synchronize()

    def time_launch(self, mechanism, nargs):
        CLOCK.advance(self.run(BATCH))


def _kernel(nargs):
    """``k[1, 1]``, its arguments and the dispatcher class to patch (None: numba-cuda's), warmed up."""
    target = None
    kernel = common.make_kernel(nargs)
    if common.simulator_enabled():
        # Smoke runs only: simulator kernels never reach CUDADispatcher.call.
        from launchbench.workloads.mechanism_rounds import SimulatorDispatcher

        kernel, target = SimulatorDispatcher(kernel), SimulatorDispatcher
    args = common.make_args(nargs)
    configured = kernel[1, 1]
    common.warm_up(configured, args)  # compiled before any mechanism is installed
    return configured, args, target
