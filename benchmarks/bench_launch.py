"""Launch overhead: host-side cost of one numba-cuda kernel launch, truthful through asv itself.

What a sample is (docs/asv.md, "Native asv"): one asv call runs ``S`` slots
(``SLOTS``; ``LAUNCHBENCH_ASV_SLOTS``); each slot times a batch of 100
launches of an empty kernel (one synchronize at the end) and a batch of a
commit-independent reference launch in the same process. The recorded time
is ``median(numba/reference) * R0`` -- numba-cuda's µs per launch with the
process's speed state divided out (benchmarks/normalize.py) -- handed to
asv through a value clock, so ``asv compare`` and ``asv publish`` show it
as the benchmark's time: read ``11.9±0.1μs`` as 11.9 µs per launch on a
machine whose reference launch takes R0 = 3.70 µs. ``TimeLaunchRaw`` keeps
the plain per-launch time of the same loop and ``TimeReferenceLaunch`` the
reference's, so a result can always be traced back to wall time.

Why: per-call samples from separate processes carry each process's speed
state (two states ~1.8x apart on the VM); asv's statistics cannot remove
what the samples do not cancel, and ``asv compare`` called v2's +4-9 %
"stayed the same" (issue 20). The timed body never synchronizes per launch:
the empty kernels drain faster than the host launches them, so what is
measured is the host-side launch path.

Processes: one sample per process (``repeat = 1``) keeps asv's statistics
honest (it treats samples as independent); ``rounds`` processes per
parameter set. Processes are cheap with asv's forkserver: numba.cuda is
imported at module import (before the fork, no CUDA context yet) and the
kernels load from numba's disk cache in a per-environment folder.

The anchor (``LAUNCHBENCH_ASV_ANCHOR=PYTHON``, benchmarks/anchor.py): the
reference is then a fixed numba-cuda in one shared server process that
launches the same kind of launch on this process's CPU, slot by slot; the
VM's state moves both alike (what a lighter reference loop does not), and
native asv read v2's regression within 2 pp of ``launchbench compare`` on
the H200 (docs/asv.md, lever 6). Off unless the variable is set.

Held state (opt-in): ``LAUNCHBENCH_ASV_PIN`` / ``LAUNCHBENCH_ASV_SPIN``
pin each process and keep other CPUs busy while it measures; whether that
holds a VM's fast state depends on the VM (docs/asv.md).

Low-occupancy warning: turned off in every setup (see
``common.quiet_occupancy_warnings``) so ``[1, 1]`` pays no ``warnings.warn``.
Dynamic shared memory: ``[1, 128] sharedmem=1KiB`` launches the same empty
kernel with 1024 bytes of dynamic shared memory; the host path does not
look at the kernel's declarations.
"""
import os
import sys

from . import anchor, common, native, normalize

#: Launch configurations by readable name: (griddim, blockdim, extra), where
#: extra is "" (plain), "stream" (a non-default stream) or a dynamic
#: shared-memory size in bytes.
LAUNCH_CONFIGS = {
    "[1, 1]": (1, 1, ""),
    "[1, 128]": (1, 128, ""),
    "[128, 128]": (128, 128, ""),
    "[1024, 256]": (1024, 256, ""),
    "[(16, 16), (16, 16)]": ((16, 16), (16, 16), ""),
    "[1, 128] sharedmem=1KiB": (1, 128, 1024),
    "[1, 128] stream": (1, 128, "stream"),
}
CONFIG_NAMES = list(LAUNCH_CONFIGS)

#: Smoke runs (simulator) only prove the suite runs: the simulator executes
#: every GPU thread in Python, so they take one sample of one launch and skip
#: grids larger than this many threads.
SMOKE_MAX_THREADS = 128
SMOKE = common.smoke_mode()


def total_threads(config):
    """Threads one launch of a named configuration starts."""
    griddim, blockdim, _ = LAUNCH_CONFIGS[config]

    def size(dim):
        if isinstance(dim, int):
            return dim
        out = 1
        for d in dim:
            out *= d
        return out

    return size(griddim) * size(blockdim)


def launch_index(config, stream=None):
    """The subscript users write, ``k[<index>]``, for a named configuration."""
    griddim, blockdim, extra = LAUNCH_CONFIGS[config]
    if extra == "stream":
        if stream is None:
            raise ValueError(f"{config} needs a stream")
        return (griddim, blockdim, stream)
    if extra:
        return (griddim, blockdim, 0, extra)
    return (griddim, blockdim)


#: Slots per sample (normalize.SLOTS_ENV overrides): 100 slots of ~2-6 ms,
#: a sample of ~0.3-0.8 s per process.
SLOTS = 100

#: Default of LAUNCHBENCH_ASV_PIN and _SPIN: off. Pinning each process to the
#: highest CPU with a busy loop on the lowest halved the per-process spread on
#: one H200 VM and did nothing, or harm, on two others (which CPU holds the
#: measuring one fast differs per VM; results/h200/2026-11-25-asv-native-held).
HOLD = "none"

#: The clock asv reads around each timed call (see normalize.ValueClock).
CLOCK = normalize.ValueClock()

#: numba.cuda imported before asv's forkserver forks (no CUDA context yet).
PREIMPORTED = common.preimport_numba_cuda()

#: Per-process state built by the first ``setup`` of each benchmark kind and parameter set.
_prepared = common.per_process


class SettingsError(RuntimeError):
    """A LAUNCHBENCH_ASV_* setting that cannot be used, or an anchor that cannot serve: the benchmark
    FAILS, so ``asv run`` and ``asv continuous`` exit non-zero (asv counts a NotImplementedError as a
    skip and exits 0, which let a typo pass for a run)."""


def _is_discovery(argv=None):
    """True in asv's discovery process (``.../asv/benchmark.py discover ROOT RESULT``): a run's start."""
    argv = sys.argv if argv is None else argv
    return len(argv) > 1 and argv[1] == "discover" and os.path.basename(argv[0]).startswith("benchmark")


def reference_setup(environ=None, begin=False):
    """What this process's values are measured against: kind, R0, the anchor (version, build, A0
    table) and the ``reference`` label asv keys the results by. Raises SettingsError."""
    try:
        kind = normalize.reference_kind(environ)
        if SMOKE and kind != "anchor":
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


def _reference_at_import():
    """The reference of this import (asv's discovery reads the label off ``params``); an error is kept
    for every setup to raise, so a bad setting fails each benchmark instead of the import."""
    try:
        return reference_setup(begin=_is_discovery()), None
    except SettingsError as exc:
        return None, str(exc)


REFERENCE, REFERENCE_ERROR = _reference_at_import()
#: The ``reference`` parameter's one value (normalize.reference_label).
REFERENCE_LABEL = REFERENCE["label"] if REFERENCE else "invalid LAUNCHBENCH_ASV settings: every row fails"
#: What the normalized rows' values are, for their pretty names (asv publish shows them).
NORMALIZED_NOTE = "wall µs, no reference" if REFERENCE and REFERENCE["kind"] == "none" else "normalized, not wall µs"


def _settings():
    """The LAUNCHBENCH_ASV_* settings of this process; a bad one raises SettingsError (the row fails).

    Also pins the process and starts its spinners (``LAUNCHBENCH_ASV_PIN`` /
    ``_SPIN``, normalize.pin_cpu / spin_cpus): once per process, before any
    warm-up, so every slot is timed in the held state.
    """
    if REFERENCE_ERROR:
        raise SettingsError(REFERENCE_ERROR)
    kind = REFERENCE["kind"]
    try:
        settings = {"kind": kind, "r0": REFERENCE["r0"], "delay": normalize.delay_us(),
                    "slots": 2 if SMOKE else normalize.slots(SLOTS), "pin": None, "spin": [],
                    "label": REFERENCE["label"], "anchor_info": REFERENCE["anchor"]}
        if kind == "anchor":
            settings["anchor"] = normalize.anchor_python()
            settings["anchor_dir"] = normalize.anchor_dir()
        if not SMOKE and hasattr(os, "sched_getaffinity"):
            allowed = os.sched_getaffinity(0)
            settings["pin"] = normalize.pin_cpu(allowed, default=normalize.pin_default(kind, HOLD))
            settings["spin"] = normalize.spin_cpus(allowed, settings["pin"], default=HOLD)
    except normalize.ConfigError as exc:
        raise SettingsError(str(exc)) from None
    settings["spinners"] = native.hold_machine_state(settings["pin"], settings["spin"])
    return settings


def _reference(settings, nargs=0, kind=None):
    """The reference launcher (None under ``none``), made once per process and argument count.

    ``bindings``: 0 args, parameters prebuilt (commit- and argument-independent);
    ``bindings-args``: numba-cuda's argument count, marshalled per launch;
    ``anchor``: the anchor server's batch of the same *kind* of launch (anchor.py).
    """
    if settings["kind"] == "none":
        return None
    if settings["kind"] == "anchor":
        return _anchor_reference(settings, kind)
    args = nargs if settings["kind"] == "bindings-args" else 0
    try:
        if settings["kind"] == "core":
            run = native.REFERENCES["core"]()
        else:
            run = native.bindings_reference(args, marshal=settings["kind"] == "bindings-args")
    except native.ReferenceUnavailable as exc:
        raise SettingsError(f"reference launch unavailable: {exc}; set {normalize.REF_ENV}=none for raw µs")
    for _ in range(3):
        run(native.REFERENCE_BATCH)  # module load and first launches
    return run


def _launch_state(nargs, config, per_launch_configure=False):
    """Kernel, arguments and a warmed-up batch runner for one parameter set (with its calibration delay)."""
    delay = _prepared("settings", _settings)["delay"] * 1e-6
    return launch_runner(nargs, config, per_launch_configure, delay)


def launch_runner(nargs, config, per_launch_configure=False, delay_s=0.0):
    """Kernel, arguments and a warmed-up ``run(n)`` for one kind of launch (the anchor server's too)."""
    common.quiet_occupancy_warnings()
    cuda = common.cuda_module()

    kernel = common.cached_kernel(nargs)
    args = common.make_args(nargs)
    stream = cuda.stream() if LAUNCH_CONFIGS[config][2] == "stream" else None
    index = launch_index(config, stream)
    configured = kernel[index]
    common.warm_up(configured, args)
    if per_launch_configure:
        run = native.configure_batch(kernel, index, args, common.synchronize, delay_s)
    else:
        run = native.launch_batch(configured, args, common.synchronize, delay_s)
    return {"run": run, "configured": configured, "args": args, "stream": stream}


def _anchor_reference(settings, kind):
    """``run(n)`` -> the anchor's seconds per launch of *kind*; ``run.r0_us`` is its A0, ``run.batch`` its batch.

    Every request checks the server against the run's (anchor.check_run): an anchor that died and
    came back, or another one, fails the row in one line instead of mixing anchors.
    """
    info = settings["anchor_info"]
    client = _prepared("anchor", lambda: anchor.Client(settings["anchor"], settings["anchor_dir"]))

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


class _Timing:
    """Timing attributes shared by the launch benchmarks (docs/asv.md, "Native asv").

    * ``timer = CLOCK.now``, ``number = 1``: the sample asv records is the
      normalized µs the body computed, not the loop's wall time.
    * ``repeat = 1``: one sample per process. On the VM the process is the
      independent unit, and asv treats samples as independent: its median,
      99 % interval and Mann-Whitney test are honest only over processes.
    * ``rounds = 2`` processes per parameter set for the full grid (asv's
      own default; 85 parameter sets at about 1.4 s a process on the H200):
      a survey that fits 15 minutes with the rest of the suite. Verdict rows
      take more with ``-a rounds=N`` (12-16 on the ``[1, 1]`` rows, docs/asv.md).
    * ``warmup_time = 0``: setup already warmed up (100 launches).
    * ``timeout`` bounds a stuck parameter set.
    """

    timer = staticmethod(CLOCK.now)
    number = 1
    repeat = 1
    rounds = 1 if SMOKE else 2
    warmup_time = 0
    min_run_count = 1
    timeout = 120

    def _prepare_process(self, reference=None):
        """Every setup's first step: skip without a GPU, then this process's settings (once per process:
        it pins the CPU and starts the spinners before any warm-up, see ``_settings``); a *reference*
        label that is not this process's own fails the row (asv would file the value under it)."""
        _prepared("gpu", _gpu_checked)
        self.settings = _prepared("settings", _settings)
        if reference is not None and reference != self.settings["label"]:
            raise SettingsError(f"this row's reference is {reference!r} but the process measures against "
                                f"{self.settings['label']!r}: the settings changed since asv's discovery; rerun")

    def _sample(self, run, ref, numba_batch=native.NUMBA_BATCH):
        settings = self.settings
        numba_s, ref_s = native.slot_loop(run, ref, settings["slots"], numba_batch=numba_batch,
                                          ref_batch=getattr(ref, "batch", native.REFERENCE_BATCH))
        if ref is None:
            value = normalize.raw_us(numba_s)
        else:
            value = normalize.normalized_us(numba_s, ref_s, getattr(ref, "r0_us", settings["r0"]))
        CLOCK.advance(value * 1e-6)


class _LaunchBase(_Timing):
    params = [common.ARG_COUNTS, CONFIG_NAMES, [REFERENCE_LABEL]]
    param_names = ["args", "config", "reference"]
    per_launch_configure = False
    normalized = True

    def setup(self, nargs, config, reference=None):
        self._prepare_process(reference)
        if SMOKE and total_threads(config) > SMOKE_MAX_THREADS:
            raise NotImplementedError(f"smoke run: {config} is too many threads for the simulator")
        key = ("launch", nargs, config, self.per_launch_configure)
        state = _prepared(key, lambda: _launch_state(nargs, config, self.per_launch_configure))
        self.run = state["run"]
        mode = "cpl" if self.per_launch_configure else "pre"
        self.ref = _ref_for(self.settings, nargs, mode, config) if self.normalized else None


def _ref_for(settings, nargs, mode="pre", config="[1, 1]"):
    """The process's reference for one kind of launch (only the anchor's depends on the kind)."""
    if settings["kind"] == "anchor":
        kind = {"mode": mode, "args": nargs, "config": config}
        return _prepared(("anchor", mode, nargs, config), lambda: _reference(settings, nargs, kind))
    key = ("reference", nargs if settings["kind"] == "bindings-args" else 0)
    return _prepared(key, lambda: _reference(settings, key[1]))


def _gpu_checked():
    """``common.gpu_or_skip`` once per process (a skip raises every time: not cached)."""
    common.gpu_or_skip()
    return True


class TimeLaunchPreconfigured(_LaunchBase):
    """``cfg = k[g, b]`` once, then ``cfg(*args)`` per launch; normalized µs (not wall µs: see ``reference``)."""

    def time_launch(self, nargs, config, reference=None):
        self._sample(self.run, self.ref)

    time_launch.pretty_name = "bench_launch.TimeLaunchPreconfigured.time_launch [" + NORMALIZED_NOTE + "]"


class TimeLaunchConfigurePerLaunch(_LaunchBase):
    """``k[g, b](*args)`` per launch: indexing (a cached configure) plus launch; normalized µs."""

    per_launch_configure = True

    def time_launch(self, nargs, config, reference=None):
        self._sample(self.run, self.ref)

    time_launch.pretty_name = "bench_launch.TimeLaunchConfigurePerLaunch.time_launch [" + NORMALIZED_NOTE + "]"


class TimeLaunchRaw(_LaunchBase):
    """``cfg(*args)`` at ``[1, 1]``, raw µs per launch (same loop, no reference): the wall time behind
    TimeLaunchPreconfigured's normalized value."""

    params = [common.ARG_COUNTS, ["[1, 1]"]]
    param_names = ["args", "config"]
    normalized = False

    def setup(self, nargs, config):
        super().setup(nargs, config)

    def time_launch(self, nargs, config):
        self._sample(self.run, None)

    time_launch.pretty_name = "bench_launch.TimeLaunchRaw.time_launch [wall µs]"


class TimeReferenceLaunch(_Timing):
    """The reference launch alone, raw (wall) µs: R0's measured counterpart on this machine (per argument
    count: the ``bindings-args`` reference takes numba-cuda's; ``bindings`` always 0; ``anchor``: the
    anchor's ``[1, 1]`` launch with that many arguments, whose A0 the samples are scaled by). The
    ``reference`` parameter says which reference it is."""

    params = [common.ARG_COUNTS, [REFERENCE_LABEL]]
    param_names = ["args", "reference"]

    def setup(self, nargs, reference=None):
        self._prepare_process(reference)
        if self.settings["kind"] == "none":
            raise NotImplementedError(f"no reference ({normalize.REF_ENV}=none)")
        common.make_args(1)  # numba-cuda makes the CUDA context the reference launches in
        self.ref = _ref_for(self.settings, nargs)

    def time_launch(self, nargs, reference=None):
        self._sample(self.ref, None)

    time_launch.pretty_name = "bench_launch.TimeReferenceLaunch.time_launch [wall µs of the reference]"


class TimeLaunchWithCallback(_Timing):
    """``cfg(*args)`` with one no-op ``pre_launch_callbacks`` entry (v2 API); normalized µs.

    The extension point compile-time extensions use on every launch; absent
    before numba-cuda 0.30, where this benchmark skips.
    """

    params = [common.ARG_COUNTS, [REFERENCE_LABEL]]
    param_names = ["args", "reference"]

    def setup(self, nargs, reference=None):
        self._prepare_process(reference)
        if not _prepared("launchconfig", common.has_launchconfig):
            raise NotImplementedError("pre_launch_callbacks needs numba-cuda >= 0.30 (v2)")
        state = _prepared(("callback", nargs), lambda: _callback_state(nargs, self.settings))
        self.run = state["run"]
        self.ref = _ref_for(self.settings, nargs)

    def time_launch(self, nargs, reference=None):
        self._sample(self.run, self.ref)

    time_launch.pretty_name = "bench_launch.TimeLaunchWithCallback.time_launch [" + NORMALIZED_NOTE + "]"


def _callback_state(nargs, settings):
    """A configured launch of its own with the callback attached for the process's lifetime.

    ``k[1, 1]`` is cached by numba-cuda: the callback list is shared with
    TimeLaunchPreconfigured's configured object -- harmless, as asv runs one
    benchmark per process.
    """
    common.quiet_occupancy_warnings()
    kernel = common.cached_kernel(nargs)
    args = common.make_args(nargs)
    configured = kernel[1, 1]
    if not hasattr(configured, "pre_launch_callbacks"):
        raise NotImplementedError("this numba-cuda has no pre_launch_callbacks")
    configured.pre_launch_callbacks.append(_noop_callback)
    common.warm_up(configured, args)
    return {"run": native.launch_batch(configured, args, common.synchronize, settings["delay"] * 1e-6)}


def _noop_callback(kernel, launch_config):
    return None


class TrackRunKind:
    """Records whether these results come from the CUDA simulator.

    ``cuda_simulator`` is 1 for a smoke run under the simulator and 0 on a
    GPU. ``asv compare`` and ``asv publish`` show it beside the timings, so a
    smoke run can never pass for GPU numbers.
    """

    unit = "simulator (1=yes)"
    rounds = common.SURVEY_ROUNDS

    def setup(self):
        if common.simulator_enabled() and not common.smoke_mode():
            raise NotImplementedError("CUDA simulator without LAUNCHBENCH_SMOKE=1: no results")

    def track_cuda_simulator(self):
        return 1 if common.simulator_enabled() else 0
