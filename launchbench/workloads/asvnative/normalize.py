"""How a native asv sample becomes a number that compares across processes.

Why: on a GPU VM each fresh process lands in a speed state of its own
(docs/methodology.md). asv
compares commits measured in *different* processes, so raw per-launch
times carry that state into every ratio. A commit-independent reference
launch timed in the same process, slot by slot next to numba-cuda's,
shares the state; the ratio cancels it (the design probes: docs/asv.md).

A sample is ``S`` slots; slot ``s`` times a batch of numba-cuda launches
(``n_s`` seconds per launch) and a batch of reference launches (``r_s``)
back to back, in alternating order. The sample's value is

    normalized_us = median_s(n_s / r_s) * R0

where ``R0`` (µs) is the reference's per-launch time on the reference GPU
machine in its usual state (lab/README.md) (``REFERENCE_US``; ``LAUNCHBENCH_REF_US`` overrides it), so the
value reads as "µs per launch on a machine whose reference takes R0". The
median of ratios (not the ratio of medians) keeps one slow slot from moving
the sample. Standard library and launchbench.base only: asv runs this inside numba-cuda's envs.
"""
import os
import statistics
import sys

from ...base import options
from ...base.errors import UserError

#: R0: the reference launch's µs per launch on the reference GPU machine (medians of the design
#: probes: ``bind0``, a Python loop over cuda.bindings' cuLaunchKernel, 0 args;
#: ``core0``, cuda.core's ``launch()`` of the same empty kernel).
#: ``bindings-args`` (the reference takes numba-cuda's argument count and
#: marshals it per launch) is scaled by bind0's R0: its values are
#: numba/reference ratios times 3.70 µs, comparable between commits, not
#: wall µs (docs/asv.md).
REFERENCE_US = {"bindings": 3.70, "bindings-args": 3.70, "core": 3.61}

#: Environment switches (asv passes the environment on to benchmark processes).
REF_ENV = "LAUNCHBENCH_ASV_REFERENCE"    # bindings (default) | bindings-args | core | anchor | none
ANCHOR_ENV = "LAUNCHBENCH_ASV_ANCHOR"     # a Python whose numba-cuda is the anchor (workloads/anchor.py)
ANCHOR_DIR_ENV = "LAUNCHBENCH_ASV_ANCHOR_DIR"  # the anchor server's folder (socket, log, run record)
A0_DIR_ENV = "LAUNCHBENCH_ASV_A0_DIR"     # the anchor's A0 tables (default: RESULTS_DIR/anchor-a0)
REF_US_ENV = "LAUNCHBENCH_REF_US"         # R0 override, µs
DELAY_ENV = "LAUNCHBENCH_ASV_DELAY_US"    # calibration: busy-wait added after each launch
DELAY_COMMIT_ENV = "LAUNCHBENCH_ASV_DELAY_COMMIT"  # ... only in processes of this commit (hash prefix)
SLOTS_ENV = "LAUNCHBENCH_ASV_SLOTS"       # slots per sample
PIN_ENV = "LAUNCHBENCH_ASV_PIN"           # the CPU a benchmark process measures on: auto | none | N
SPIN_ENV = "LAUNCHBENCH_ASV_SPIN"         # CPUs kept busy while it measures: auto | none | 0,1 | 0-1


class ConfigError(ValueError):
    """A LAUNCHBENCH_ASV_* setting that cannot be used (the message names it and the fix)."""


def reference_kind(environ=None) -> str:
    """The reference a sample is divided by: ``anchor`` when LAUNCHBENCH_ASV_ANCHOR is set, else bindings."""
    env = os.environ if environ is None else environ
    default = "anchor" if env.get(ANCHOR_ENV, "").strip() else "bindings"
    kind = env.get(REF_ENV, default).strip() or default
    if kind not in (*REFERENCE_US, "anchor", "none"):
        raise ConfigError(f"{REF_ENV}={kind!r}: use {', '.join(REFERENCE_US)}, anchor or none")
    if kind == "anchor":
        anchor_python(env)
    return kind


def anchor_python(environ=None) -> str:
    """LAUNCHBENCH_ASV_ANCHOR: an executable Python (its numba-cuda is the anchor)."""
    env = os.environ if environ is None else environ
    path = env.get(ANCHOR_ENV, "").strip()
    if not path:
        raise ConfigError(f"{REF_ENV}=anchor needs {ANCHOR_ENV}=PYTHON: a Python whose numba-cuda "
                          "(a release env, not the commit under test) is the anchor")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise ConfigError(f"{ANCHOR_ENV}={path!r} is not an executable file: give a Python, e.g. ENV/bin/python")
    return path


def _positive_float(environ, name, default, allow_zero=False):
    env = os.environ if environ is None else environ
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not a number") from None
    if value < 0 or (value == 0 and not allow_zero) or value != value or value == float("inf"):
        raise ConfigError(f"{name}={text!r}: give a finite number {'>= 0' if allow_zero else '> 0'}")
    return value


def anchor_dir(environ=None):
    """LAUNCHBENCH_ASV_ANCHOR_DIR (None: anchor.default_dir); a file there, not a folder, is refused."""
    env = os.environ if environ is None else environ
    path = env.get(ANCHOR_DIR_ENV, "").strip()
    if not path:
        return None
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigError(f"{ANCHOR_DIR_ENV}={path!r} is a file, not a folder; give a folder (or unset it)")
    return path


def a0_dir(environ=None) -> str:
    """Where the anchor's A0 tables live: LAUNCHBENCH_ASV_A0_DIR, else ``anchor-a0`` in asv's results folder.

    Why beside the results: a value is ``median(n/a) * A0``, so the A0 table is part of every
    anchored result; a table under $TMPDIR was re-measured whenever the folder went away (A0
    differed by up to 38 % across VMs). asv tells a benchmark process only its working folder
    (``ASV_CONF_DIR``); the results folder is read from the ``asv.conf.json`` there (asv's
    ``.asv/results`` when it has none). The folder holds no machine.json, so asv skips it.
    """
    env = os.environ if environ is None else environ
    path = env.get(A0_DIR_ENV, "").strip()
    if path:
        if os.path.exists(path) and not os.path.isdir(path):
            raise ConfigError(f"{A0_DIR_ENV}={path!r} is a file, not a folder; give a folder (or unset it)")
        return os.path.abspath(path)
    base = env.get("ASV_CONF_DIR") or os.getcwd()
    return os.path.join(base, _results_dir(base), "anchor-a0")


def _results_dir(base) -> str:
    """asv.conf.json's ``results_dir`` in *base* (asv allows // comments), else asv's default."""
    import json

    try:
        with open(os.path.join(base, "asv.conf.json")) as fh:
            text = "\n".join(line for line in fh if not line.lstrip().startswith("//"))
        return json.loads(text).get("results_dir") or ".asv/results"
    except (OSError, ValueError):
        return ".asv/results"


def host_name() -> str:
    """The machine an A0 table belongs to (asv's default machine name is the host name too)."""
    import platform

    name = "".join(c if c.isalnum() or c in "._-" else "_" for c in platform.node())
    return name or "unknown-host"


def reference_label(kind: str, r0_us: float, anchor=None) -> str:
    """The ``reference`` parameter of every normalized benchmark: what its value was measured against.

    asv keys results by benchmark name and parameter values, so runs against different references
    (or another anchor, A0 table or R0) never share a time series, and ``asv compare`` and ``asv
    publish`` print the label beside every value. *anchor*: the anchor's ``version``, ``build``
    (a digest of its installed files) and ``table`` (its A0 table's id).
    """
    if kind == "none":
        return "wall us, no reference"
    if kind == "anchor":
        return (f"normalized to anchor numba-cuda {anchor['version']} build {anchor['build']}, "
                f"A0 table {anchor['table']}, R0 {r0_us:.2f} us")
    return f"normalized to {kind} reference, R0 {r0_us:.2f} us"


def reference_us(kind: str, environ=None) -> float:
    """R0 for *kind* (µs); 1.0 for ``none`` (the value is then raw µs); for ``anchor`` the bindings
    reference's R0, against which the anchor's A0 per kind of launch is measured."""
    if kind == "none":
        return 1.0
    return _positive_float(environ, REF_US_ENV, REFERENCE_US["bindings" if kind == "anchor" else kind])


def delay_us(environ=None) -> float:
    """The calibration busy-wait (µs) for this process.

    With ``LAUNCHBENCH_ASV_DELAY_COMMIT=HASH`` only the processes of that commit
    get it: asv names the commit it benchmarks in ``ASV_COMMIT``, so one
    ``asv continuous A B`` of two code-identical commits (delay on B) reads the
    known cost back through asv's own per-commit builds.
    """
    env = os.environ if environ is None else environ
    delay = _positive_float(env, DELAY_ENV, 0.0, allow_zero=True)
    only = env.get(DELAY_COMMIT_ENV, "").strip().lower()
    if not only:
        return delay
    if len(only) < 7 or any(c not in "0123456789abcdef" for c in only):
        raise ConfigError(f"{DELAY_COMMIT_ENV}={only!r}: give a commit hash (7 or more hex digits)")
    commit = env.get("ASV_COMMIT", "").strip().lower()
    if not commit:
        raise ConfigError(f"{DELAY_COMMIT_ENV} is set but ASV_COMMIT is not: it works only under asv's "
                          "own per-commit builds (asv run/continuous with a repo)")
    return delay if commit.startswith(only) else 0.0


def slots(default: int, environ=None) -> int:
    value = _positive_float(environ, SLOTS_ENV, float(default))
    if value != int(value) or value < 1:
        raise ConfigError(f"{SLOTS_ENV}={value!r}: give a whole number of slots >= 1")
    return int(value)


def _cpu_set(text: str, name: str, allowed) -> list:
    """"3", "0,1" or "0-1" -> sorted CPUs, each one this process may run on (base.options.parse_set's grammar)."""
    try:
        cpus = options.parse_set(text, name, sys.maxsize, "0,1")
    except UserError:
        raise ConfigError(f"{name}={text!r}: give auto, none or CPUs like 0, 0,1 or 0-1") from None
    missing = sorted(set(cpus) - set(allowed))
    if missing:
        raise ConfigError(f"{name}={text!r}: CPU(s) {missing} are not available to this process "
                          f"(it may run on {_ranges(allowed)})")
    return cpus


def _ranges(cpus) -> str:
    cpus = sorted(cpus)
    return f"{cpus[0]}-{cpus[-1]}" if cpus and cpus == list(range(cpus[0], cpus[-1] + 1)) else ",".join(map(str, cpus))


def pin_default(kind: str, hold: str = "none") -> str:
    """LAUNCHBENCH_ASV_PIN's default: ``auto`` with the anchor (it takes turns with the benchmark process
    on one CPU, as compare's workers do), else *hold* (the suite's opt-in hold, off)."""
    return "auto" if kind == "anchor" else hold


def pin_cpu(allowed, environ=None, default="none"):
    """The CPU a benchmark process pins itself to (None: no pinning).

    ``auto`` is the highest CPU it may run on (launchbench compare's measuring
    CPU). Only with two or more CPUs: on one there is nothing to choose.
    """
    env = os.environ if environ is None else environ
    text = env.get(PIN_ENV, "").strip().lower() or default
    allowed = sorted(allowed)
    if text == "none" or len(allowed) < 2:
        return None
    if text == "auto":
        return allowed[-1]
    cpus = _cpu_set(text, PIN_ENV, allowed)
    if len(cpus) != 1:
        raise ConfigError(f"{PIN_ENV}={text!r}: give one CPU (or auto, none)")
    return cpus[0]


def spin_cpus(allowed, pinned, environ=None, default="none") -> list:
    """CPUs a benchmark process keeps busy while it measures.

    Why: on some VMs a lone busy vCPU drops into a slow state and a busy loop
    on another CPU holds it fast (lab/recipes/cpu_probe.py); asv compares samples from
    separate processes, so a process in the slow state moves the comparison.
    Which CPU helps, if any, differs per VM (on some a busy CPU makes the
    measuring one slower: docs/asv.md), so this is opt-in. ``auto`` is the lowest CPU
    other than the pinned one (none without pinning, or with a single CPU).
    """
    env = os.environ if environ is None else environ
    text = env.get(SPIN_ENV, "").strip().lower() or default
    allowed = sorted(allowed)
    if text == "none":
        return []
    if text == "auto":
        others = [c for c in allowed if c != pinned]
        return others[:1] if pinned is not None and others else []
    cpus = _cpu_set(text, SPIN_ENV, allowed)
    if pinned in cpus:
        raise ConfigError(f"{SPIN_ENV}={text!r}: CPU {pinned} is the one that measures ({PIN_ENV}); "
                          "choose others")
    return cpus


def normalized_us(numba_s, ref_s, r0_us: float) -> float:
    """median over slots of numba/ref, times R0 (µs). Seconds per launch in, µs out."""
    if len(numba_s) != len(ref_s) or not numba_s:
        raise ValueError("need one reference time per numba-cuda time, at least one slot")
    return statistics.median(n / r for n, r in zip(numba_s, ref_s)) * r0_us


def raw_us(seconds_per_launch) -> float:
    """median over slots, µs."""
    return statistics.median(seconds_per_launch) * 1e6


def expected_delay_us(delay: float, r0_us: float, ref_us_measured: float) -> float:
    """What a wall-clock busy-wait of *delay* µs reads as after normalization.

    The reference scales with the machine's state, a busy-wait does not: in a
    process whose reference takes ``ref`` µs instead of R0, ``delay`` wall µs
    read as ``delay * R0 / ref`` normalized µs.
    """
    return delay * r0_us / ref_us_measured


class ValueClock:
    """A clock that asv reads around the timed call and the body advances.

    asv times a benchmark as ``timer()`` after minus ``timer()`` before
    (timeit); with ``timer = clock.now`` and ``number = 1`` the recorded
    sample is exactly what the body passed to ``advance`` -- here the
    normalized seconds per launch -- while the wall time of the slot loop
    stays out of it. asv then stores, compares and publishes that value
    with its own statistics, unchanged.
    """

    def __init__(self):
        self._t = 0.0

    def now(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        if not seconds >= 0:
            raise ValueError(f"a sample must be >= 0 s, got {seconds!r}")
        self._t += seconds
