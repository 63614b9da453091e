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
Python (the median launch of five, after warm-up; a steady launch path gives every launch the
same totals), so a series has no noise: asv's step detection and ``asv compare`` show a change
of a few bytecodes as an exact step (docs/asv.md, "Exact counts").

The counting code is launchbench.workloads' (``counts``, and ``countgrid`` for the grid), from
this suite's own checkout (benchmarks/__init__.py imports it): the suite and its counting code
always come from the same checkout. A launch that cannot be counted fails the rows, loudly
(asv: failed), rather than skips: a skipped count would leave a silent hole in a series whose
point is to have none.

Cost: one ``setup_cache`` process per commit counts every parameter set of both classes; each
track process only looks its value up. Every commit is a build of its own, so its kernels are
compiled once per commit (the first about a second, the others a few ms); counting is most of the
rest (docs/asv.md, "A range"). Counts are exact, so one round (``common.SURVEY_ROUNDS``) is plenty.

Comparable only between counts made by the same Python minor version, the same counter
(``sys.monitoring`` on 3.12+, ``sys.settrace`` on 3.11: bytecodes differ between versions)
and the same counting code. asv keeps virtualenvs of different Pythons apart by name, but an
``existing:`` environment (``launchbench asv-releases`` runs every release through one shim)
does not; so the rows' asv ``version`` names the counter, the Python and a digest of
counts.py, countgrid.py and this file: ``asv compare`` marks a pair of different versions ``x`` (not
comparable) and ``asv publish`` keeps only the current version's series.
"""
import hashlib
import os

from launchbench.workloads import counts, countgrid, launchers

from . import common

#: The files whose text the rows' version digests: the counting code and this file.
VERSIONED_FILES = (counts.__file__, countgrid.__file__, os.path.abspath(__file__))


def counts_version():
    """The rows' asv version: counter, Python and a digest of the counting code and this file."""
    digest = hashlib.sha1()
    for path in VERSIONED_FILES:
        with open(path, "rb") as fh:
            digest.update(fh.read())
    return f"counts {digest.hexdigest()[:12]} {counts.counter_name()} py{counts.python_version()}"


def count_all():
    """setup_cache: every parameter set of both styles counted in this one process (countgrid.count_all)."""
    return countgrid.count_all(common.ARG_COUNTS)


count_all.timeout = 300  # asv's setup_cache timeout: 70 parameter sets in one process


class _Counts:
    """One style's rows; the values come from ``count_all`` (asv's setup_cache, one process).

    ``needs``: the kinds this class's rows read; where the counter has not counted one of them,
    setup skips with the reason (a track that raised would be recorded as failed)."""

    style = None
    needs = ()
    params = [common.ARG_COUNTS, launchers.CONFIG_NAMES]
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
