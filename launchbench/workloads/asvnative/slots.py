"""The timed body of a native asv sample: batches in slots, next to a reference; the held machine state.

Why loops and not single calls: asv_runner re-runs ``setup`` and reads its
timer around every call when ``number > 1`` (asv#966), so a per-call timing
carries the timer's and asv's own overhead and one sample mixes in
whatever the machine did between calls. Here one asv call runs ``S`` slots;
each slot times a batch of launches with one synchronize at its end, for
numba-cuda and for a commit-independent reference (references.py; the
arithmetic: normalize.py). The anchor server times its own slots with the same loop.
"""
import atexit
import os
import subprocess
import sys
import time

#: Launches per batch: ~1-3 ms per batch at 3.7-30 µs per launch, long
#: enough for the timer, short enough that a slot sees one machine state.
NUMBA_BATCH = 100
REFERENCE_BATCH = 300


def spin(seconds, clock=time.perf_counter):
    """Busy-wait: the calibration delay (a sleep would yield the CPU)."""
    end = clock() + seconds
    while clock() < end:
        pass


def timed_calls(fn, args, sync, clock=time.perf_counter):
    """``run(n)`` -> the seconds *n* back-to-back calls ``fn(*args)`` and one *sync* took: the one plain
    timing loop (the launch rows' batches here, the peers' numba-cuda launchers in peers.py)."""
    def run(n):
        t0 = clock()
        for _ in range(n):
            fn(*args)
        sync()
        return clock() - t0
    return run


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
        total = timed_calls(fn, args, sync, clock)

        def run(n):
            return total(n) / n
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
