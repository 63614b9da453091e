"""One native asv benchmark process: its LAUNCHBENCH_ASV_* settings, its reference, its sample.

What a sample is (docs/asv.md, "Native asv"): ``S`` slots (``SLOTS``;
``LAUNCHBENCH_ASV_SLOTS``); each slot times a batch of 100 launches of an
empty kernel (one synchronize at the end) and a batch of a commit-independent
reference launch in the same process (asvnative/slots.slot_loop). The value is
``median(numba/reference) * R0`` -- numba-cuda's µs per launch with the
process's speed state divided out (asvnative/normalize.py) -- which the asv suite hands
asv through a value clock (normalize.ValueClock).

The anchor (``LAUNCHBENCH_ASV_ANCHOR=PYTHON``, anchor.py): the reference is
then a fixed numba-cuda in one shared server process that launches the same
kind of launch on this process's CPU, slot by slot.

Held state (opt-in): ``LAUNCHBENCH_ASV_PIN`` / ``LAUNCHBENCH_ASV_SPIN`` pin
each process and keep other CPUs busy while it measures (slots.hold_machine_state).

Per-process state (:func:`per_process`): asv_runner calls ``setup`` before
every sample, so anything costly there (a compile, a warm-up, the reference)
is built once per process. A skip is ``NotImplementedError`` (asv records
"skipped"); a bad setting is :class:`SettingsError` (asv records "failed").
"""
import importlib
import os
import sys

from ..base import cudamod
from ..base.device import simulator_enabled
from . import anchor, kernels, launchers
from .asvnative import normalize, references, slots

#: Slots per sample (normalize.SLOTS_ENV overrides): 100 slots of ~2-6 ms,
#: a sample of ~0.3-0.8 s per process.
SLOTS = 100

#: Default of LAUNCHBENCH_ASV_PIN and _SPIN: off. Pinning each process to the
#: highest CPU with a busy loop on the lowest helps on some VMs and does nothing,
#: or harm, on others (which CPU holds the measuring one fast differs per VM;
#: docs/asv.md).
HOLD = "none"

#: Per-process state built by the first ``setup`` that needs it (asv runs one parameter set per process).
_PER_PROCESS = {}


class SettingsError(RuntimeError):
    """A LAUNCHBENCH_ASV_* setting that cannot be used, or an anchor that cannot serve: the benchmark
    FAILS, so ``asv run`` and ``asv continuous`` exit non-zero (asv counts a NotImplementedError as a
    skip and exits 0, which let a typo pass for a run)."""


def per_process(key, build):
    """``build()`` once per process for *key*; later calls return the same state.

    A build that raises (a skip) is not kept and raises again.
    """
    state = _PER_PROCESS.get(key)
    if state is None:
        state = _PER_PROCESS[key] = build()
    return state


def gpu_or_skip():
    """Skip (NotImplementedError) without a GPU. Under the simulator the suite produces no numbers
    unless the smoke switch is set, so simulator timings can never pass for GPU results."""
    if simulator_enabled():
        if not kernels.smoke_mode():
            raise NotImplementedError(f"CUDA simulator: set {kernels.SMOKE_ENV}=1 for a smoke run")
        return
    try:
        cuda = cudamod.import_cuda()
    except ValueError as exc:  # a bad LAUNCHBENCH_CUDA_MODULE
        raise NotImplementedError(str(exc)) from None
    if not cuda.is_available():
        raise NotImplementedError("no CUDA GPU available")


def preimport_cuda():
    """Import numba.cuda now, without initialising CUDA.

    asv's forkserver imports the benchmark modules once and forks a child
    per benchmark: whatever is imported here is not paid again per process
    (~1.4 s of a 3.3 s process in the design probes). Importing does not
    create a CUDA context, so forking after it is safe. A commit whose
    numba-cuda fails to import is left to ``setup``, which reports it.
    """
    try:
        cudamod.import_cuda()
    except Exception:  # noqa: BLE001 - discovery must survive any broken commit
        return False
    return True


def is_discovery(argv=None):
    """True in asv's discovery process (``.../asv/benchmark.py discover ROOT RESULT``): a run's start."""
    argv = sys.argv if argv is None else argv
    return len(argv) > 1 and argv[1] == "discover" and os.path.basename(argv[0]).startswith("benchmark")


def reference_setup(environ=None, begin=False):
    """What this process's values are measured against: kind, R0, the anchor (version, build, A0
    table) and the ``reference`` label asv keys the results by. Raises SettingsError."""
    try:
        kind = normalize.reference_kind(environ)
        if kernels.smoke_mode() and kind != "anchor":
            kind = "none"
        r0 = normalize.reference_us(kind, environ)
        info = None
        if kind == "anchor":
            info = anchor.reference(normalize.anchor_python(environ), normalize.anchor_dir(environ),
                                    normalize.a0_dir(environ), r0, begin=begin)
    except normalize.ConfigError as exc:
        raise SettingsError(str(exc)) from None
    except (anchor.AnchorError, OSError) as exc:
        raise SettingsError(f"anchor ({normalize.ANCHOR_ENV}): {exc}") from None
    return {"kind": kind, "r0": r0, "anchor": info, "label": normalize.reference_label(kind, r0, info)}


def reference_at_import():
    """(the reference of this import, None) or (None, the error): asv's discovery reads the label off
    ``params``; an error is kept for every setup to raise, so a bad setting fails each benchmark
    instead of the import."""
    try:
        return reference_setup(begin=is_discovery()), None
    except SettingsError as exc:
        return None, str(exc)


def process_settings(reference, error=None):
    """The LAUNCHBENCH_ASV_* settings of this process; a bad one raises SettingsError (the row fails).

    Also pins the process and starts its spinners (``LAUNCHBENCH_ASV_PIN`` /
    ``_SPIN``, normalize.pin_cpu / spin_cpus): once per process, before any
    warm-up, so every slot is timed in the held state.
    """
    if error:
        raise SettingsError(error)
    kind = reference["kind"]
    smoke = kernels.smoke_mode()
    try:
        settings = {"kind": kind, "r0": reference["r0"], "delay": normalize.delay_us(),
                    "slots": 2 if smoke else normalize.slots(SLOTS), "pin": None, "spin": [],
                    "label": reference["label"], "anchor_info": reference["anchor"]}
        if kind == "anchor":
            settings["anchor"] = normalize.anchor_python()
            settings["anchor_dir"] = normalize.anchor_dir()
        if not smoke and hasattr(os, "sched_getaffinity"):
            allowed = os.sched_getaffinity(0)
            settings["pin"] = normalize.pin_cpu(allowed, default=normalize.pin_default(kind, HOLD))
            settings["spin"] = normalize.spin_cpus(allowed, settings["pin"], default=HOLD)
    except normalize.ConfigError as exc:
        raise SettingsError(str(exc)) from None
    settings["spinners"] = slots.hold_machine_state(settings["pin"], settings["spin"])
    return settings


def prepare_process(reference, error=None, label=None):
    """Every setup's first step: skip without a GPU, then this process's settings (once per process:
    it pins the CPU and starts the spinners before any warm-up); a row whose *label* is not this
    process's own fails (asv would file the value under it)."""
    per_process("gpu", _gpu_checked)
    settings = per_process("settings", lambda: process_settings(reference, error))
    if label is not None and label != settings["label"]:
        raise SettingsError(f"this row's reference is {label!r} but the process measures against "
                            f"{settings['label']!r}: the settings changed since asv's discovery; rerun")
    return settings


def _gpu_checked():
    """``gpu_or_skip`` once per process (a skip raises every time: not cached)."""
    gpu_or_skip()
    return True


def make_reference(settings, nargs=0, kind=None):
    """The reference launcher (None under ``none``), made once per process and argument count.

    ``bindings``: 0 args, parameters prebuilt (commit- and argument-independent);
    ``bindings-args``: numba-cuda's argument count, marshalled per launch;
    ``anchor``: the anchor server's batch of the same *kind* of launch (anchor.py).
    """
    if settings["kind"] == "none":
        return None
    if settings["kind"] == "anchor":
        return anchor_reference(settings, kind)
    args = nargs if settings["kind"] == "bindings-args" else 0
    try:
        if settings["kind"] == "core":
            run = references.REFERENCES["core"]()
        else:
            run = references.bindings_reference(args, marshal=settings["kind"] == "bindings-args")
    except references.ReferenceUnavailable as exc:
        raise SettingsError(f"reference launch unavailable: {exc}; set {normalize.REF_ENV}=none for raw µs")
    for _ in range(3):
        run(slots.REFERENCE_BATCH)  # module load and first launches
    return run


def anchor_reference(settings, kind):
    """``run(n)`` -> the anchor's seconds per launch of *kind*; ``run.r0_us`` is its A0, ``run.batch`` its batch.

    Every request checks the server against the run's (anchor.check_run): an anchor that died and
    came back, or another one, fails the row in one line instead of mixing anchors.
    """
    info = settings["anchor_info"]
    client = per_process("anchor", lambda: anchor.Client(settings["anchor"], settings["anchor_dir"]))

    def prepare():
        try:
            reply = client.prepare(kind, info["table_path"], info["table"], info["r0_us"])
        except (anchor.AnchorError, OSError, ValueError) as exc:
            raise SettingsError(f"anchor ({normalize.ANCHOR_ENV}={settings['anchor']}): {exc}") from None
        if (reply["numba_cuda"], reply["build"]) != (info["version"], info["build"]):
            raise SettingsError(f"anchor ({normalize.ANCHOR_ENV}={settings['anchor']}): the server runs numba-cuda "
                                f"{reply['numba_cuda']} build {reply['build']}, not the {info['version']} build "
                                f"{info['build']} this run's label names")
        client.current = kind
        return reply

    reply = prepare()

    def run(n):
        if client.current != kind:  # another benchmark of this process prepared another kind
            prepare()
        try:
            return client.run(n)
        except (anchor.AnchorError, OSError, ValueError) as exc:
            raise SettingsError(f"anchor ({normalize.ANCHOR_ENV}={settings['anchor']}): {exc}") from None

    run.r0_us, run.batch, run.anchor = reply["a0_us"], anchor.BATCH, reply
    for _ in range(3):
        run(anchor.BATCH)
    return run


def ref_for(settings, nargs, mode="pre", config="[1, 1]"):
    """The process's reference for one kind of launch (only the anchor's depends on the kind)."""
    if settings["kind"] == "anchor":
        kind = {"mode": mode, "args": nargs, "config": config}
        return per_process(("anchor", mode, nargs, config), lambda: make_reference(settings, nargs, kind))
    key = ("reference", nargs if settings["kind"] == "bindings-args" else 0)
    return per_process(key, lambda: make_reference(settings, key[1]))


def launch_state(settings, nargs, config, per_launch_configure=False):
    """Kernel, arguments and a warmed-up batch runner for one parameter set (with its calibration delay)."""
    return launchers.launch_runner(nargs, config, per_launch_configure, settings["delay"] * 1e-6)


def sample_us(settings, run, ref, numba_batch=slots.NUMBA_BATCH):
    """One sample: *settings*' slots of *run* next to *ref* -> normalized µs per launch (raw µs without *ref*)."""
    numba_s, ref_s = slots.slot_loop(run, ref, settings["slots"], numba_batch=numba_batch,
                                     ref_batch=getattr(ref, "batch", slots.REFERENCE_BATCH))
    if ref is None:
        return normalize.raw_us(numba_s)
    return normalize.normalized_us(numba_s, ref_s, getattr(ref, "r0_us", settings["r0"]))


def extension_or_skip(name):
    """``launchbench.workloads.<name>``, a C extension, or NotImplementedError (asv: skipped) naming the fix.

    asv's environments may run another Python than the one the extensions were built with (the
    worker overlay checks the same, environments/envs.check_python_matches)."""
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ImportError as exc:
        here = "%d.%d" % sys.version_info[:2]
        raise NotImplementedError(
            f"{__package__}.{name} does not load in this Python {here} ({exc}); build the C extensions for it: "
            f"{sys.executable} setup.py build_ext --inplace, in the launchbench checkout") from None
