"""Launch-config capture mechanisms, installed onto one numba-cuda in-process.

The mechanism under test replaces ``CUDADispatcher.call`` (see
``launchbench.workloads.capture.mechanisms``): ``stock`` is numba-cuda untouched,
``passthrough`` the bare interception, ``contextvar`` the pull-request-#288
style capture, ``tls`` our C thread-local stack, ``delay:0.5us`` a known
+0.5 µs. Read a mechanism's cost as its time minus ``passthrough``'s.

A sample is taken as bench_launch takes one (docs/asv.md, "Native asv"):
slots of a batch of ``k[1, 1](*args)`` launches next to a batch of the
process's reference launch, the value ``median(mechanism/reference) * R0``
handed to asv through the value clock, one sample per process, ``rounds``
processes per parameter set. Why: every parameter set runs in processes
of its own, and raw per-launch times carried each process's speed state
(``stock`` against ``passthrough`` read apart by far more than the
mechanism costs: lab/README.md), a gap that was the VM and not the mechanism. With ``LAUNCHBENCH_ASV_ANCHOR`` the reference is the
anchor's launch of the same kind, as for the launch rows.

Needs launchbench's C extension (``launchbench.workloads._tls``), built for the
environment's Python; where it does not load, every benchmark here skips with
the command that builds it.
For tightly interleaved numbers with confidence intervals use
``launchbench mechanisms``; this suite puts the same quantity on the asv
site next to the other launch benchmarks.
"""
from launchbench.workloads import kernels, launchers, sampling
from launchbench.workloads.asvnative import slots
from launchbench.workloads.capture import mechanisms

from . import common

MECHANISM_SPECS = ["stock", "passthrough", "contextvar", "tls", "delay:0.5us"]

#: Launches after each install (a few warm the mechanism's path).
INSTALL_WARMUP = 10


class TimeMechanismLaunch(common.NativeTiming):
    """``cfg(*args)`` per launch, ``cfg = k[1, 1]``, under each capture mechanism; normalized µs.

    setup installs the mechanism and teardown removes it (asv runs both around the sample); the
    kernel is loaded and warmed up once per process, before any mechanism is installed, and so is
    the reference (it never goes through numba-cuda's dispatcher).
    """

    params = [MECHANISM_SPECS, common.ARG_COUNTS, [common.REFERENCE_LABEL]]
    param_names = ["mechanism", "args", "reference"]

    def setup(self, mechanism, nargs, reference=None):
        sampling.extension_or_skip("_tls")  # the tls and delay mechanisms need it
        self.prepare_process(reference)
        kernels.quiet_occupancy_warnings()
        configured, self.args, target = sampling.per_process(("mechanisms", nargs),
                                                             lambda: launchers.mechanism_kernel(nargs))
        self.ref = sampling.ref_for(self.settings, nargs)
        mechanisms.install(mechanism, target=target)
        self.installed = True
        launchers.warm_up(configured, self.args, INSTALL_WARMUP)
        self.run = slots.launch_batch(configured, self.args, launchers.synchronize)

    def teardown(self, mechanism, nargs, reference=None):
        if getattr(self, "installed", False):
            mechanisms.uninstall()
            launchers.synchronize()

    def time_launch(self, mechanism, nargs, reference=None):
        self.sample(self.run, self.ref)

    time_launch.pretty_name = "bench_mechanisms.TimeMechanismLaunch.time_launch [" + common.NORMALIZED_NOTE + "]"
    time_launch.version = "2f550cfae8b6e86cc547e4e4aa733b43887b9f71876c3a610e34503ed22ded1e"  # see common.py, "Row versions"
