"""Launch overhead: host-side cost of one numba-cuda kernel launch, truthful through asv itself.

What a sample is (docs/asv.md, "Native asv"): one asv call runs ``S`` slots
(``SLOTS``; ``LAUNCHBENCH_ASV_SLOTS``); each slot times a batch of 100
launches of an empty kernel (one synchronize at the end) and a batch of a
commit-independent reference launch in the same process. The recorded time
is ``median(numba/reference) * R0`` -- numba-cuda's µs per launch with the
process's speed state divided out (launchbench/workloads/asvnative/normalize.py) -- handed to
asv through a value clock, so ``asv compare`` and ``asv publish`` show it
as the benchmark's time: read ``11.9±0.1μs`` as 11.9 µs per launch on a
machine whose reference launch takes R0 = 3.70 µs. ``TimeLaunchRaw`` keeps
the plain per-launch time of the same loop and ``TimeReferenceLaunch`` the
reference's, so a result can always be traced back to wall time.

Why: per-call samples from separate processes carry each process's speed
state (two states ~1.8x apart on the VM); asv's statistics cannot remove
what the samples do not cancel, and ``asv compare`` called v2's +4-9 %
"stayed the same". The timed body never synchronizes per launch:
the empty kernels drain faster than the host launches them, so what is
measured is the host-side launch path.

Processes: one sample per process (``repeat = 1``) keeps asv's statistics
honest (it treats samples as independent); ``rounds`` processes per
parameter set. Processes are cheap with asv's forkserver: numba.cuda is
imported at module import (before the fork, no CUDA context yet) and the
kernels load from numba's disk cache in a per-environment folder.

The anchor (``LAUNCHBENCH_ASV_ANCHOR=PYTHON``, launchbench/workloads/anchor.py): the
reference is then a fixed numba-cuda in one shared server process that
launches the same kind of launch on this process's CPU, slot by slot; the
VM's state moves both alike (what a lighter reference loop does not), and
native asv reads v2's regression close to ``launchbench compare``
(docs/asv.md, lever 6). Off unless the variable is set.

Held state (opt-in): ``LAUNCHBENCH_ASV_PIN`` / ``LAUNCHBENCH_ASV_SPIN``
pin each process and keep other CPUs busy while it measures; whether that
holds a VM's fast state depends on the VM (docs/asv.md).

Low-occupancy warning: turned off in every setup (``kernels.quiet_occupancy_warnings``)
so ``[1, 1]`` pays no ``warnings.warn``. The launches, the slot loop and the reference
are launchbench.workloads' (``launchers``, ``slots``, ``sampling``); this file holds
the asv classes and their parameters.
"""
from launchbench.base.device import simulator_enabled
from launchbench.workloads import kernels, launchers, sampling
from launchbench.workloads.asvnative import normalize

from . import common
from .common import NORMALIZED_NOTE, REFERENCE_LABEL

CONFIG_NAMES = launchers.CONFIG_NAMES

#: Smoke runs (simulator) only prove the suite runs: the simulator executes
#: every GPU thread in Python, so they take one sample of one launch and skip
#: grids larger than this many threads.
SMOKE_MAX_THREADS = 128


class _LaunchBase(common.NativeTiming):
    params = [common.ARG_COUNTS, CONFIG_NAMES, [REFERENCE_LABEL]]
    param_names = ["args", "config", "reference"]
    per_launch_configure = False
    normalized = True

    def setup(self, nargs, config, reference=None):
        self.prepare_process(reference)
        if common.SMOKE and launchers.total_threads(config) > SMOKE_MAX_THREADS:
            raise NotImplementedError(f"smoke run: {config} is too many threads for the simulator")
        key = ("launch", nargs, config, self.per_launch_configure)
        state = sampling.per_process(key, lambda: sampling.launch_state(self.settings, nargs, config,
                                                                        self.per_launch_configure))
        self.run = state["run"]
        mode = "cpl" if self.per_launch_configure else "pre"
        self.ref = sampling.ref_for(self.settings, nargs, mode, config) if self.normalized else None


class TimeLaunchPreconfigured(_LaunchBase):
    """``cfg = k[g, b]`` once, then ``cfg(*args)`` per launch; normalized µs (not wall µs: see ``reference``)."""

    def time_launch(self, nargs, config, reference=None):
        self.sample(self.run, self.ref)

    time_launch.pretty_name = "bench_launch.TimeLaunchPreconfigured.time_launch [" + NORMALIZED_NOTE + "]"
    time_launch.version = "336dbba627f02c1ad2f1fd33629012e0a569784ce563dde1751a5460cb8ebbaa"  # see common.py, "Row versions"


class TimeLaunchConfigurePerLaunch(_LaunchBase):
    """``k[g, b](*args)`` per launch: indexing (a cached configure) plus launch; normalized µs."""

    per_launch_configure = True

    def time_launch(self, nargs, config, reference=None):
        self.sample(self.run, self.ref)

    time_launch.pretty_name = "bench_launch.TimeLaunchConfigurePerLaunch.time_launch [" + NORMALIZED_NOTE + "]"
    time_launch.version = "3510c87119349f3c42143d774cf9fdf626591798c80c8050db4b51c9889331b2"  # see common.py, "Row versions"


class TimeLaunchRaw(_LaunchBase):
    """``cfg(*args)`` at ``[1, 1]``, raw µs per launch (same loop, no reference): the wall time behind
    TimeLaunchPreconfigured's normalized value."""

    params = [common.ARG_COUNTS, ["[1, 1]"]]
    param_names = ["args", "config"]
    normalized = False

    def setup(self, nargs, config):
        super().setup(nargs, config)

    def time_launch(self, nargs, config):
        self.sample(self.run, None)

    time_launch.pretty_name = "bench_launch.TimeLaunchRaw.time_launch [wall µs]"
    time_launch.version = "90cb1fd8825416a401020913bb1b7811d38c5f5e25b2c7d8833506f3501283bb"  # see common.py, "Row versions"


class TimeReferenceLaunch(common.NativeTiming):
    """The reference launch alone, raw (wall) µs: R0's measured counterpart on this machine (per argument
    count: the ``bindings-args`` reference takes numba-cuda's; ``bindings`` always 0; ``anchor``: the
    anchor's ``[1, 1]`` launch with that many arguments, whose A0 the samples are scaled by). The
    ``reference`` parameter says which reference it is."""

    params = [common.ARG_COUNTS, [REFERENCE_LABEL]]
    param_names = ["args", "reference"]

    def setup(self, nargs, reference=None):
        self.prepare_process(reference)
        if self.settings["kind"] == "none":
            raise NotImplementedError(f"no reference ({normalize.REF_ENV}=none)")
        kernels.device_arrays(1)  # numba-cuda makes the CUDA context the reference launches in
        self.ref = sampling.ref_for(self.settings, nargs)

    def time_launch(self, nargs, reference=None):
        self.sample(self.ref, None)

    time_launch.pretty_name = "bench_launch.TimeReferenceLaunch.time_launch [wall µs of the reference]"
    time_launch.version = "f692dc57babe431d9b23f18bbb1c16a7911e4671d2fdea32926293a4dfcb1131"  # see common.py, "Row versions"


class TimeLaunchWithCallback(common.NativeTiming):
    """``cfg(*args)`` with one no-op ``pre_launch_callbacks`` entry (v2 API); normalized µs.

    The extension point compile-time extensions use on every launch; absent
    before numba-cuda 0.30, where this benchmark skips.
    """

    params = [common.ARG_COUNTS, [REFERENCE_LABEL]]
    param_names = ["args", "reference"]

    def setup(self, nargs, reference=None):
        self.prepare_process(reference)
        if not sampling.per_process("launchconfig", launchers.has_launchconfig):
            raise NotImplementedError("pre_launch_callbacks needs numba-cuda >= 0.30 (v2)")
        state = sampling.per_process(("callback", nargs),
                                     lambda: launchers.callback_runner(nargs, self.settings["delay"] * 1e-6))
        self.run = state["run"]
        self.ref = sampling.ref_for(self.settings, nargs)

    def time_launch(self, nargs, reference=None):
        self.sample(self.run, self.ref)

    time_launch.pretty_name = "bench_launch.TimeLaunchWithCallback.time_launch [" + NORMALIZED_NOTE + "]"
    time_launch.version = "5df7cc4322e56cb649f16f229df748c4a3d4459de288ee85e40fda14789fe7a3"  # see common.py, "Row versions"


class TrackRunKind:
    """Records whether these results come from the CUDA simulator.

    ``cuda_simulator`` is 1 for a smoke run under the simulator and 0 on a
    GPU. ``asv compare`` and ``asv publish`` show it beside the timings, so a
    smoke run can never pass for GPU numbers.
    """

    unit = "simulator (1=yes)"
    rounds = common.SURVEY_ROUNDS

    def setup(self):
        if simulator_enabled() and not kernels.smoke_mode():
            raise NotImplementedError("CUDA simulator without LAUNCHBENCH_SMOKE=1: no results")

    def track_cuda_simulator(self):
        return 1 if simulator_enabled() else 0

    track_cuda_simulator.version = "b7a5acd7ad5d2e694c1a9132ab5509abcbdea67f6f4b572e5440035606edd587"  # see common.py, "Row versions"
