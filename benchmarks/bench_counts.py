"""Exact counts per launch in asv: Python bytecodes, calls, C calls and function entries.

``track_*`` rows over the launch rows' parameters (argument counts x launch configurations,
bench_launch.CONFIG_NAMES), in both of their launch styles: ``TrackCountsPreconfigured``
counts ``cfg(*args)`` with ``cfg = k[g, b]`` made once (TimeLaunchPreconfigured's launch, and
``launchbench compare --counts``' at ``[1, 1]``); ``TrackCountsConfigurePerLaunch`` counts a
one-line caller ``k[g, b](*args)`` (TimeLaunchConfigurePerLaunch's; the caller's own few
bytecodes and its entry are in every value alike). Their rows: ``track_bytecodes``,
``track_c_calls`` and ``track_entries``; ``TrackCalls*`` hold ``track_calls`` (every call made
from Python bytecode), which only ``sys.monitoring`` (Python 3.12+) counts: on 3.11 they skip
with that reason. Each value is what one launch executes in
Python (the median launch of 20, after warm-up; a steady launch path gives every launch the
same totals), so a series has no noise: asv's step detection and ``asv compare`` show a change
of a few bytecodes as an exact step (docs/asv.md, "Exact counts").

Where the counting code comes from: ``launchbench/workloads/counts.py`` of this suite's own
checkout, loaded by path as bench_lcs loads its fixture. asv's per-commit virtualenvs do not
have launchbench installed (bench_mechanisms and bench_peers skip there); counts.py imports
only the standard library, so it runs in any of them, and the suite and its counting code
always come from the same checkout. Without that file the rows fail, loudly (asv: failed,
with the path in the message), rather than skip: a skipped count would leave a silent hole
in a series whose point is to have none.

Cost: one ``setup_cache`` process per commit counts every parameter set of both classes (on a
GPU about a second: counting a launch is fast, the kernels load from the per-environment disk
cache); each track process only looks its value up. Counts are exact, so one round
(``common.SURVEY_ROUNDS``) is plenty.

Comparable only between counts made by the same Python minor version, the same counter
(``sys.monitoring`` on 3.12+, ``sys.settrace`` on 3.11: bytecodes differ between versions)
and the same counting code. asv keeps virtualenvs of different Pythons apart by name, but an
``existing:`` environment (``launchbench asv-releases`` runs every release through one shim)
does not; so the rows' asv ``version`` names the counter, the Python and a digest of
counts.py and this file: ``asv compare`` marks a pair of different versions ``x`` (not
comparable) and ``asv publish`` keeps only the current version's series.
"""
import hashlib
import importlib.util
import os
import sys

from . import bench_launch, common

#: launchbench's counting code, loaded by path from this suite's checkout (see the docstring)
COUNTS_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "launchbench", "workloads", "counts.py")
COUNTS_NAME = "_launchbench_counts"

#: launch style -> per_launch_configure (bench_launch._LaunchBase's attribute of the same name)
STYLES = {"preconfigured": False, "configure-per-launch": True}

#: Smoke runs (simulator) count single-thread launches only: the simulator starts a Python thread per
#: GPU thread, and counting ``[1, 128]`` took 6-14 s a parameter set and was not steady (thread timing).
SMOKE_MAX_THREADS = 1


class CountsUnavailable(RuntimeError):
    """launchbench's counts.py is not where this suite expects it: the rows fail (not skip)."""


def counts_module():
    """launchbench.workloads.counts from this checkout (loaded once per process, by path)."""
    module = sys.modules.get(COUNTS_NAME)
    if module is not None:
        return module
    if not os.path.isfile(COUNTS_PATH):
        raise CountsUnavailable(f"launchbench's counting code is not at {COUNTS_PATH}: run the suite from a "
                                "launchbench checkout (benchmarks/ beside launchbench/)")
    spec = importlib.util.spec_from_file_location(COUNTS_NAME, COUNTS_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[COUNTS_NAME] = module
    return module


def counts_version():
    """The rows' asv version: counter, Python and a digest of the counting code and this file.

    Computed at discovery; never raises (a suite that fails to import loses every row), so a
    missing or broken counts.py shows here as ``unavailable`` and fails in ``count_all``."""
    digest = hashlib.sha1()
    for path in (COUNTS_PATH, os.path.abspath(__file__)):
        try:
            with open(path, "rb") as fh:
                digest.update(fh.read())
        except OSError:
            digest.update(b"missing")
    try:
        module = counts_module()
        where = f"{module.counter_name()} py{module.python_version()}"
    except Exception:  # noqa: BLE001 - discovery must survive; count_all raises it
        where = "unavailable"
    return f"counts {digest.hexdigest()[:12]} {where}"


def configure_per_launch(kernel, index):
    """``launch(*args)`` = ``kernel[index](*args)``: a user's line that configures per launch."""
    def launch(*args):
        return kernel[index](*args)
    return launch


def smoke_skip(config):
    """Why a smoke run does not count *config* (None: it does)."""
    threads = bench_launch.total_threads(config)
    if common.smoke_mode() and threads > SMOKE_MAX_THREADS:
        return (f"smoke run: {config} starts {threads} simulator threads per launch; counts there are "
                f"slow and not steady, only configurations of at most {SMOKE_MAX_THREADS} thread are counted")
    return None


def count_one(counts, per_launch_configure, nargs, config, state):
    """The counts record of one parameter set (kernels and arguments shared per argument count in *state*)."""
    cuda = common.cuda_module()
    if nargs not in state:
        state[nargs] = (common.cached_kernel(nargs), common.make_args(nargs))
    kernel, args = state[nargs]
    stream = cuda.stream() if bench_launch.LAUNCH_CONFIGS[config][2] == "stream" else None
    index = bench_launch.launch_index(config, stream)
    launch = configure_per_launch(kernel, index) if per_launch_configure else kernel[index]
    common.warm_up(launch, args)
    return counts.count(launch, args, sync=common.synchronize)


def count_all():
    """setup_cache: every parameter set of both styles counted in this one process.

    ``{"skip": reason}`` where the suite produces no numbers here (no GPU; simulator without
    the smoke switch), as every row does; else ``{"rows": {(style, nargs, config): summary}}``,
    a summary being the record's counter, python, kinds, per_launch and steady, or ``{"skip":
    reason}``. A missing counts.py or a launch that raises fails the whole cache: loudly."""
    counts = counts_module()  # before the GPU check: a suite without its counting code fails anywhere
    try:
        common.gpu_or_skip()
    except NotImplementedError as exc:
        return {"skip": str(exc)}
    common.quiet_occupancy_warnings()
    state, rows = {}, {}
    for style, per_launch_configure in STYLES.items():
        for nargs in common.ARG_COUNTS:
            for config in bench_launch.CONFIG_NAMES:
                reason = smoke_skip(config)
                if reason:
                    rows[(style, nargs, config)] = {"skip": reason}
                    continue
                rec = count_one(counts, per_launch_configure, nargs, config, state)
                if not rec["steady"]:
                    print(f"bench_counts: {style} {nargs} args {config}: launches differ ({rec['launch_totals']}); "
                          "the median launch's counts are recorded", file=sys.stderr)
                rows[(style, nargs, config)] = {k: rec[k] for k in ("counter", "python", "kinds", "per_launch", "steady")}
    return {"rows": rows}


count_all.timeout = 300  # asv's setup_cache timeout: 70 parameter sets in one process


class _Counts:
    """One style's rows; the values come from ``count_all`` (asv's setup_cache, one process).

    ``needs``: the kinds this class's rows read; where the counter has not counted one of them,
    setup skips with the reason (a track that raised would be recorded as failed)."""

    style = None
    needs = ()
    params = [common.ARG_COUNTS, bench_launch.CONFIG_NAMES]
    param_names = ["args", "config"]
    rounds = common.SURVEY_ROUNDS  # exact: another round would only repeat the same numbers
    timeout = 120
    version = counts_version()

    setup_cache = staticmethod(count_all)

    def setup(self, cached, nargs, config):
        if "skip" in cached:
            raise NotImplementedError(cached["skip"])
        row = cached["rows"][(self.style, nargs, config)]
        if "skip" in row:
            raise NotImplementedError(row["skip"])
        for kind in self.needs:
            if kind not in row["kinds"]:
                raise NotImplementedError(f"{row['counter']} (Python {row['python']}) does not count {kind}; "
                                          "sys.monitoring (Python 3.12+) does")
        self.per_launch = row["per_launch"]


class _EveryCounter(_Counts):
    """Bytecodes, C calls and function entries: counted by both counters."""

    needs = ("bytecodes", "c_calls", "entries")

    def track_bytecodes(self, cached, nargs, config):
        return self.per_launch["bytecodes"]

    track_bytecodes.unit = "bytecodes per launch"

    def track_c_calls(self, cached, nargs, config):
        return self.per_launch["c_calls"]

    track_c_calls.unit = "C calls per launch"

    def track_entries(self, cached, nargs, config):
        return self.per_launch["entries"]

    track_entries.unit = "function entries per launch"


class _Calls(_Counts):
    """Every call made from Python bytecode, to Python or C: sys.monitoring (3.12+) only."""

    needs = ("calls",)

    def track_calls(self, cached, nargs, config):
        return self.per_launch["calls"]

    track_calls.unit = "calls per launch"


class TrackCountsPreconfigured(_EveryCounter):
    """``cfg(*args)``, ``cfg = k[g, b]`` made once: TimeLaunchPreconfigured's launch, counted."""

    style = "preconfigured"


class TrackCountsConfigurePerLaunch(_EveryCounter):
    """``k[g, b](*args)`` per launch: TimeLaunchConfigurePerLaunch's launch, counted (with its one-line caller)."""

    style = "configure-per-launch"


class TrackCallsPreconfigured(_Calls):
    """Calls per launch of TrackCountsPreconfigured's launch (Python 3.12+)."""

    style = "preconfigured"


class TrackCallsConfigurePerLaunch(_Calls):
    """Calls per launch of TrackCountsConfigurePerLaunch's launch (Python 3.12+)."""

    style = "configure-per-launch"
