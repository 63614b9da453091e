"""The launches a native asv sample times: named launch configurations and warmed-up ``run(n)`` batches.

One builder per kind of launch, shared by the asv suite's rows (``benchmarks/``) and the
anchor server (``workloads/anchor.py``, which launches the same kind of launch with its own
numba-cuda): ``k[g, b]`` made once or per launch, with a no-op ``pre_launch_callbacks``
entry, per argument kind and dispatch, and under a capture mechanism. Each ``run(n)``
returns seconds per launch for *n* launches and one synchronize (``slots.launch_batch``).

Dynamic shared memory: ``[1, 128] sharedmem=1KiB`` launches the same empty kernel with
1024 bytes of dynamic shared memory; the host path does not look at the kernel's declarations.
Standard library at import; numba-cuda inside functions.
"""
from ..base import cudamod
from ..base.device import simulator_enabled
from . import argkinds, kernels
from .asvnative import slots
from .capture.mechanism_rounds import SimulatorDispatcher

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

#: Launches after the first (which compiles or loads the cache), before timing starts.
WARMUP_LAUNCHES = 100

#: Seconds of launches per slot batch of the argument-kind rows (1 to slots.NUMBA_BATCH launches; 1 in
#: smoke runs): a slot stays short enough to see one machine state, and 100 slots stay under a second
#: at 26 torch tensors.
SLOT_BATCH_S = 3e-3


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


def synchronize():
    cudamod.import_cuda().synchronize()


def warm_up(fn, args, launches=WARMUP_LAUNCHES):
    """``fn(*args)`` *launches* times (once in a smoke run: the simulator runs every thread in Python),
    then synchronize; the first call compiles or loads the kernel."""
    for _ in range(1 if kernels.smoke_mode() else launches):
        fn(*args)
    synchronize()


def has_launchconfig():
    """True on numba-cuda >= 0.30, which has numba.cuda.launchconfig (v2)."""
    try:
        import numba.cuda.launchconfig  # noqa: F401
    except ImportError:
        return False
    return True


def launch_runner(nargs, config, per_launch_configure=False, delay_s=0.0):
    """Kernel, arguments and a warmed-up ``run(n)`` for one kind of launch (the anchor server's too).

    *delay_s* > 0 adds a busy-wait after each launch (the calibration variant)."""
    kernels.quiet_occupancy_warnings()
    cuda = cudamod.import_cuda()

    kernel = kernels.cached_kernel(nargs)
    args = kernels.device_arrays(nargs, cuda)
    stream = cuda.stream() if LAUNCH_CONFIGS[config][2] == "stream" else None
    index = launch_index(config, stream)
    configured = kernel[index]
    warm_up(configured, args)
    if per_launch_configure:
        run = slots.configure_batch(kernel, index, args, synchronize, delay_s)
    else:
        run = slots.launch_batch(configured, args, synchronize, delay_s)
    return {"run": run, "configured": configured, "args": args, "stream": stream}


def noop_callback(kernel, launch_config):
    return None


def callback_runner(nargs, delay_s=0.0):
    """``k[1, 1](*args)`` with one no-op ``pre_launch_callbacks`` entry for the process's lifetime.

    ``k[1, 1]`` is cached by numba-cuda: the callback list is shared with
    the preconfigured row's configured object -- harmless, as asv runs one
    benchmark per process. NotImplementedError (asv: skipped) without the list.
    """
    kernels.quiet_occupancy_warnings()
    kernel = kernels.cached_kernel(nargs)
    args = kernels.device_arrays(nargs)
    configured = kernel[1, 1]
    if not hasattr(configured, "pre_launch_callbacks"):
        raise NotImplementedError("this numba-cuda has no pre_launch_callbacks")
    configured.pre_launch_callbacks.append(noop_callback)
    warm_up(configured, args)
    return {"run": slots.launch_batch(configured, args, synchronize, delay_s)}


def one_array_or_skip(kind):
    """A zeroed float32[1] of *kind*; NotImplementedError (asv: skipped) when its package is missing."""
    if kind != "array" and simulator_enabled():
        raise NotImplementedError(f"{kind} arguments need a real GPU (the simulator cannot read them)")
    try:
        argkinds.require(kind)
    except argkinds.ArgKindUnavailable as exc:
        raise NotImplementedError(f"{kind} is not importable here: {exc}") from None
    return argkinds.one_array(kind)


def slot_batch(seconds_per_launch, target_s=SLOT_BATCH_S, most=slots.NUMBA_BATCH):
    """Launches per slot batch: about *target_s* of them, at least 1 and at most *most*."""
    if seconds_per_launch <= 0:
        return most
    return max(1, min(most, round(target_s / seconds_per_launch)))


def argkind_runner(kind, nargs, dispatch):
    """A warmed-up ``run(n)`` -> seconds per launch of ``k[1, 1](*args)`` for one argument kind, count and
    dispatch (lazy: ``cuda.jit(k)``; eager: ``cuda.jit("void(float32[::1], ...)")(k)``), and the batch
    a slot takes (sized from ten timed launches after the warm-up)."""
    kernels.quiet_occupancy_warnings()
    args = [one_array_or_skip(kind) for _ in range(nargs)]
    kernel = argkinds.build_kernel(cudamod.import_cuda(), nargs, "array", dispatch)
    configured = kernel[1, 1]
    warm_up(configured, args)
    run = slots.launch_batch(configured, args, synchronize)
    return run, 1 if kernels.smoke_mode() else slot_batch(run(10))


def mechanism_kernel(nargs):
    """``k[1, 1]``, its arguments and the dispatcher class a capture mechanism patches (None: numba-cuda's),
    warmed up before any mechanism is installed."""
    target = None
    kernel = kernels.cached_kernel(nargs)  # the launch rows' kernel: from numba's disk cache
    if simulator_enabled():
        # Smoke runs only: simulator kernels never reach CUDADispatcher.call.
        kernel, target = SimulatorDispatcher(kernel), SimulatorDispatcher
    args = kernels.device_arrays(nargs)
    configured = kernel[1, 1]
    warm_up(configured, args)  # compiled before any mechanism is installed
    return configured, args, target
