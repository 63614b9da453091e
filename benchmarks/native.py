"""The timed body of the native launch benchmarks: batches in slots, next to a reference.

Why loops and not single calls: asv_runner re-runs ``setup`` and reads its
timer around every call when ``number > 1`` (asv#966), so a per-call timing
carries the timer's and asv's own overhead and one sample mixes in
whatever the machine did between calls. Here one asv call runs ``S`` slots;
each slot times a batch of launches with one synchronize at its end, for
numba-cuda and for a commit-independent reference (see normalize.py).

The reference is a Python loop over cuda.bindings' ``cuLaunchKernel`` on an
empty kernel loaded from PTX: it runs Python per launch like numba-cuda
(so it shares the process's interpreter speed state, which the C floor
loop did not), it is in every numba-cuda >= 0.29 environment (cuda-bindings
is a dependency), and it does not depend on the numba-cuda commit.
"""
import atexit
import os
import subprocess
import sys
import time

MAX_REFERENCE_ARGS = 4


def empty_ptx(max_args=MAX_REFERENCE_ARGS) -> bytes:
    """Empty kernels ``launchbench_empty<n>`` with n u64 params; the driver JIT-compiles them."""
    entries = []
    for n in range(max_args + 1):
        params = ", ".join(f".param .u64 p{i}" for i in range(n))
        entries.append(f".visible .entry launchbench_empty{n}({params})\n{{\n    ret;\n}}\n")
    return (".version 7.8\n.target sm_80\n.address_size 64\n" + "".join(entries)).encode()


#: Launches per batch: ~1-3 ms per batch at 3.7-30 µs per launch, long
#: enough for the timer, short enough that a slot sees one machine state.
NUMBA_BATCH = 100
REFERENCE_BATCH = 300


class ReferenceUnavailable(RuntimeError):
    pass


def bindings_reference(nargs=0, marshal=False):
    """``run(n)`` -> seconds per launch for *n* cuLaunchKernel calls and one sync.

    ``nargs`` pointer arguments (device buffers of 4 bytes). ``marshal``: the
    parameter block is built in Python on every launch (a ctypes value per
    argument and the pointer array), as a Python launch path does -- work
    that grows with the argument count like numba-cuda's own marshalling, so
    a process's speed state should move it as it moves numba-cuda's launch.
    Needs a current CUDA context (numba-cuda's, made before this is called).
    """
    import ctypes

    try:
        from cuda.bindings import driver as drv
    except ImportError:
        try:
            from cuda import cuda as drv  # cuda-python < 12.6 layout
        except ImportError as exc:
            raise ReferenceUnavailable(f"cuda.bindings is not importable ({exc})") from None

    def check(result, what):
        err = result[0] if isinstance(result, tuple) else result
        if int(err) != 0:
            raise ReferenceUnavailable(f"{what} failed: {err}")
        return result[1] if isinstance(result, tuple) and len(result) > 1 else None

    if not 0 <= nargs <= MAX_REFERENCE_ARGS:
        raise ReferenceUnavailable(f"the reference kernel takes 0..{MAX_REFERENCE_ARGS} args, not {nargs}")
    module = check(drv.cuModuleLoadData(empty_ptx()), "cuModuleLoadData")
    func = check(drv.cuModuleGetFunction(module, f"launchbench_empty{nargs}".encode()), "cuModuleGetFunction")
    ptrs = [int(check(drv.cuMemAlloc(4), "cuMemAlloc")) for _ in range(nargs)]
    launch, sync, clock = drv.cuLaunchKernel, drv.cuCtxSynchronize, time.perf_counter
    u64, addressof, array = ctypes.c_uint64, ctypes.addressof, ctypes.c_void_p * nargs
    keep = [u64(p) for p in ptrs]
    fixed_block = array(*[addressof(v) for v in keep]) if nargs else None  # kept alive with run

    if marshal and nargs:
        def run(n):
            t0 = clock()
            for _ in range(n):
                values = [u64(p) for p in ptrs]
                block = array(*[addressof(v) for v in values])
                launch(func, 1, 1, 1, 1, 1, 1, 0, 0, addressof(block), 0)
            sync()
            return (clock() - t0) / n
    else:
        params = addressof(fixed_block) if nargs else 0

        def run(n):
            t0 = clock()
            for _ in range(n):
                launch(func, 1, 1, 1, 1, 1, 1, 0, 0, params, 0)
            sync()
            return (clock() - t0) / n

    run.keepalive = (module, ptrs, keep, fixed_block)
    return run


def core_reference():
    """``run(n)`` -> seconds per launch through cuda.core's ``launch()`` (``LAUNCHBENCH_ASV_REFERENCE=core``).

    The launcher is ``launchbench peers``' own (launchbench.workloads.peers), so
    it needs launchbench installed in the environment (the release envs have
    it; asv's per-commit virtualenvs do not: use the bindings reference there).
    """
    try:
        from launchbench.workloads import peers
    except ImportError as exc:
        raise ReferenceUnavailable(f"launchbench is not installed in this environment ({exc})") from None
    try:
        total = peers.make_cuda_core(0)
    except peers.PeerUnavailable as exc:
        raise ReferenceUnavailable(str(exc)) from None

    def run(n):
        return total(n) / n

    run.keepalive = total
    return run


#: The reference launchers by ``LAUNCHBENCH_ASV_REFERENCE`` value.
REFERENCES = {"bindings": bindings_reference, "core": core_reference}


def spin(seconds, clock=time.perf_counter):
    """Busy-wait: the calibration delay (a sleep would yield the CPU)."""
    end = clock() + seconds
    while clock() < end:
        pass


def launch_batch(fn, args, sync, delay_s=0.0, clock=time.perf_counter):
    """``run(n)`` -> seconds per launch for *n* calls ``fn(*args)`` and one *sync*.

    The loop calls *fn* itself (no wrapper frame per launch); *delay_s* > 0
    adds a busy-wait after each launch (the calibration variant).
    """
    if delay_s > 0:
        def run(n):
            t0 = clock()
            for _ in range(n):
                fn(*args)
                spin(delay_s, clock)
            sync()
            return (clock() - t0) / n
    else:
        def run(n):
            t0 = clock()
            for _ in range(n):
                fn(*args)
            sync()
            return (clock() - t0) / n
    return run


def configure_batch(kernel, index, args, sync, delay_s=0.0, clock=time.perf_counter):
    """Like launch_batch for ``kernel[index](*args)``: configure (cached) and launch per call."""
    def run(n):
        t0 = clock()
        for _ in range(n):
            kernel[index](*args)
            if delay_s > 0:
                spin(delay_s, clock)
        sync()
        return (clock() - t0) / n
    return run


def slot_loop(numba_run, ref_run, slots, numba_batch=NUMBA_BATCH, ref_batch=REFERENCE_BATCH):
    """(numba seconds/launch per slot, reference seconds/launch per slot).

    Order alternates slot by slot (numba first in even slots) so a drift
    within a slot favours neither side. *ref_run* None: no reference.
    """
    numba_s, ref_s = [], []
    for s in range(slots):
        if ref_run is not None and s % 2:
            ref_s.append(ref_run(ref_batch))
            numba_s.append(numba_run(numba_batch))
        else:
            numba_s.append(numba_run(numba_batch))
            if ref_run is not None:
                ref_s.append(ref_run(ref_batch))
    return numba_s, ref_s


#: A busy loop pinned to one CPU that ends when the process that started it
#: is gone (asv's forkserver children leave with os._exit: no atexit there).
SPIN_CODE = """import os, sys
os.sched_setaffinity(0, {int(sys.argv[1])})
parent = int(sys.argv[2])
sys.stdout.write("1"); sys.stdout.flush()
while os.getppid() == parent:
    for _ in range(20000):
        pass
"""


def hold_machine_state(pin, spin_cpus, popen=subprocess.Popen, setaffinity=getattr(os, "sched_setaffinity", None)):
    """Pin this process to *pin* and keep *spin_cpus* busy until it exits.

    Returns the spinner processes. Each has started spinning when this
    returns (it writes one byte first), so the first slot is already timed in
    the held state.
    """
    if pin is not None:
        setaffinity(0, {pin})
    procs = []
    for cpu in spin_cpus:
        proc = popen([sys.executable, "-c", SPIN_CODE, str(cpu), str(os.getpid())],
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append(proc)
        proc.stdout.read(1)
    if procs:
        atexit.register(stop_spinners, procs)
    return procs


def stop_spinners(procs):
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
