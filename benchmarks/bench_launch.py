"""Launch overhead: host-side cost of one numba-cuda kernel launch.

Each timed call is exactly one launch of an empty kernel that was compiled
and warmed up in ``setup``, so asv's reported time *is* the time per launch
(asv divides each sample by its ``number`` of calls); read ``12.3±0.1μs`` as
12.3 µs per launch. The timed body never synchronizes: the empty kernels run
on the GPU faster than the host can launch them, so the queue never fills
and what is measured is the host-side launch path.

Low-occupancy warning: numba-cuda warns when a launch configuration with
fewer than 128 blocks is built. ``setup`` turns the warning off (config flag
plus a warnings filter, see ``common.quiet_occupancy_warnings``) for every
benchmark, small grid or not, so all configurations pay the same (zero)
warning cost and ``[1, 1]`` is not distorted by a ``warnings.warn`` call
whenever numba-cuda builds a new launch configuration.

Dynamic shared memory: the ``sharedmem=1KiB`` configuration launches the
same empty kernel with 1024 bytes of dynamic shared memory. The host-side
launch path does not look at whether the kernel declares
``cuda.shared.array(0, ...)``; keeping the kernel identical makes the launch
configuration the only difference between rows.

Setup runs between timed calls: asv_runner >= 0.3 re-runs ``setup`` and
``teardown`` before *every* timed call when ``number > 1`` (asv#966), and
times each call on its own. So ``setup`` is memoized per process: the
kernel is compiled, its arguments allocated and the launch path warmed up
once (``_prepared``); every later ``setup`` is a dictionary look-up, and
``teardown`` never synchronizes. Without this, each of the 1000 calls per
sample recompiled the kernel and the run never finished (seen on the H200).
"""
from . import common

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

#: Launches in setup after compilation, before timing starts.
WARMUP_LAUNCHES = 100

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


#: Per-process state built by the first ``setup`` of each benchmark kind
#: and parameter set (asv runs one parameter set per process).
_PREPARED = {}


def _prepared(key, build):
    """``build()`` once per process for *key*; later calls return the same state."""
    state = _PREPARED.get(key)
    if state is None:
        state = _PREPARED[key] = build()
    return state


def _launch_state(nargs, config):
    """Kernel, arguments, subscript and configured launcher, warmed up."""
    common.quiet_occupancy_warnings()
    from numba import cuda

    kernel = common.make_kernel(nargs)
    args = common.make_args(nargs)
    stream = cuda.stream() if LAUNCH_CONFIGS[config][2] == "stream" else None
    index = launch_index(config, stream)
    configured = kernel[index]
    for _ in range(1 if SMOKE else WARMUP_LAUNCHES):  # first launch compiles
        configured(*args)
    common.synchronize()
    return {"kernel": kernel, "args": args, "stream": stream, "index": index, "configured": configured}


class _Timing:
    """Timing attributes shared by every launch benchmark (docs/asv.md).

    On the GPU VM each process has its own offset of a few percent that
    more samples from it cannot average away (docs/methodology.md), so the
    process is the independent unit. asv pools all samples of a parameter
    set and treats them as independent: its median, its 99% interval and,
    with ``--record-samples``, its Mann-Whitney test in ``asv compare`` are
    honest only if each process gives ONE sample. Hence:

    * ``rounds = 12``: twelve fresh processes per parameter set and commit
      (asv's old name ``processes`` is only a fallback for ``rounds``), the
      fewest whose distribution-free 99% interval for the median is not
      simply the whole range (it is [2nd, 11th] of 12). ``asv continuous``
      and ``asv run --interleave-rounds`` alternate commits round by round,
      so the VM's slow spells fall on both commits alike. Each process costs about
      5 s (start, import, CUDA init, compile), so ~1 min per parameter set
      and commit; ``-a rounds=N`` trades time for width.
    * ``repeat = 1``, ``number = 5000``: one sample per process, the mean of
      5000 individually timed launches (asv_runner re-runs the memoized
      ``setup`` between them), ~0.1-0.2 s: long enough that one interrupt
      moves it by well under the per-process offset.
    * ``warmup_time = 0.1``: at least one untimed 5000-launch pass after the
      100 warm-up launches of ``setup``. ``sample_time`` is not set: asv
      uses it only to choose ``number`` when ``number`` is 0.
    * ``timeout`` bounds a stuck parameter set well below asv's default.
    """

    number = 1 if SMOKE else 5000
    repeat = 1
    rounds = 1 if SMOKE else 12
    warmup_time = 0 if SMOKE else 0.1
    timeout = 120


class _LaunchBase(_Timing):
    params = [common.ARG_COUNTS, CONFIG_NAMES]
    param_names = ["args", "config"]

    def setup(self, nargs, config):
        _prepared("gpu", _gpu_checked)
        if SMOKE and total_threads(config) > SMOKE_MAX_THREADS:
            raise NotImplementedError(f"smoke run: {config} is too many threads for the simulator")
        state = _prepared(("launch", nargs, config), lambda: _launch_state(nargs, config))
        self.kernel = state["kernel"]
        self.args = state["args"]
        self.stream = state["stream"]
        self.index = state["index"]
        self.configured = state["configured"]


def _gpu_checked():
    """``common.gpu_or_skip`` once per process (a skip raises every time: not cached)."""
    common.gpu_or_skip()
    return True


class TimeLaunchPreconfigured(_LaunchBase):
    """``cfg = k[g, b]`` once, then ``cfg(*args)`` per launch."""

    def time_launch(self, nargs, config):
        self.configured(*self.args)


class TimeLaunchConfigurePerLaunch(_LaunchBase):
    """``k[g, b](*args)`` per launch: indexing (a cached configure) plus launch."""

    def time_launch(self, nargs, config):
        self.kernel[self.index](*self.args)


class TimeLaunchWithCallback(_Timing):
    """``cfg(*args)`` with one no-op ``pre_launch_callbacks`` entry (v2 API).

    The extension point compile-time extensions use on every launch; absent
    before numba-cuda 0.30, where this benchmark skips.
    """

    params = [common.ARG_COUNTS]
    param_names = ["args"]

    def setup(self, nargs):
        _prepared("gpu", _gpu_checked)
        if not _prepared("launchconfig", common.has_launchconfig):
            raise NotImplementedError("pre_launch_callbacks needs numba-cuda >= 0.30 (v2)")
        state = _prepared(("callback", nargs), lambda: _callback_state(nargs))
        self.args = state["args"]
        self.configured = state["configured"]
        if _noop_callback not in self.configured.pre_launch_callbacks:
            self.configured.pre_launch_callbacks.append(_noop_callback)

    def teardown(self, nargs):
        # configure() is cached: leave the shared object as found. Cheap, as
        # asv_runner may call it between timed calls; no synchronize here.
        callbacks = getattr(getattr(self, "configured", None), "pre_launch_callbacks", [])
        if _noop_callback in callbacks:
            callbacks.remove(_noop_callback)

    def time_launch(self, nargs):
        self.configured(*self.args)


def _callback_state(nargs):
    common.quiet_occupancy_warnings()
    kernel = common.make_kernel(nargs)
    args = common.make_args(nargs)
    configured = kernel[1, 1]
    if not hasattr(configured, "pre_launch_callbacks"):
        raise NotImplementedError("this numba-cuda has no pre_launch_callbacks")
    configured.pre_launch_callbacks.append(_noop_callback)
    try:
        for _ in range(1 if SMOKE else WARMUP_LAUNCHES):
            configured(*args)
        common.synchronize()
    finally:
        configured.pre_launch_callbacks.remove(_noop_callback)
    return {"kernel": kernel, "args": args, "configured": configured}


def _noop_callback(kernel, launch_config):
    return None


class TrackRunKind:
    """Records whether these results come from the CUDA simulator.

    ``cuda_simulator`` is 1 for a smoke run under the simulator and 0 on a
    GPU. ``asv compare`` and ``asv publish`` show it beside the timings, so a
    smoke run can never pass for GPU numbers.
    """

    unit = "simulator (1=yes)"

    def setup(self):
        if common.simulator_enabled() and not common.smoke_mode():
            raise NotImplementedError("CUDA simulator without LAUNCHBENCH_SMOKE=1: no results")

    def track_cuda_simulator(self):
        return 1 if common.simulator_enabled() else 0
