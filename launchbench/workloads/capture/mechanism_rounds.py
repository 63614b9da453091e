"""The mechanisms workload: interleaved pair rounds, capture mechanisms switched in place.

``launchbench mechanisms`` times with these (``session``): in its own process with ``--processes 1``
(launchbench.commands.mechanisms_cli.run_here), else in fresh worker processes, each answering
one ``mechanisms`` request (launchbench.engine.worker). A pair round times, per arg count, one
block of back-to-back launches under every mechanism, in a shuffled order.

Why blocks switch with ``mechanisms.switch`` and warm up by what it did:
assigning ``CUDADispatcher.call`` modifies the class, so CPython drops its
type version tag and every specialized attribute lookup on a dispatcher in
the launch path misses until its adaptive cooldown ends (about 52 executions
of each instruction on 3.12); installing and removing a mechanism around
every block, with a 10-launch warm-up, timed about 40 of each block's 100
launches on de-specialized code. (On a stand-in launch path, per-launch time
after a class write is back to steady state after ~60 launches on 3.12 and
~100 on 3.11.) passthrough, tls and delay
are one C Interceptor, so between them ``switch`` changes its mode in place
and the class is not written; only moves to or from ``stock`` and
``contextvar`` write it. A block after such a write warms up
``--warmup-class-write`` launches (default 120, past the cooldown), one
after an in-place switch ``--warmup`` (default 10). Each block records
whether its switch wrote the class (``class_modified`` in the JSON); the
mechanism is removed once, at the end (also on errors and Ctrl-C).
"""
from __future__ import annotations

import time

from .. import kernels
from . import mechanisms

DEFAULT_ROUNDS = 3000      # upper bound; --max-time usually ends the run first
DEFAULT_LAUNCHES = 100
DEFAULT_WARMUP = 10               # untimed launches before a block switched in place
DEFAULT_WARMUP_CLASS_WRITE = 120  # ... before a block whose switch wrote the class (see the docstring)


class SimulatorDispatcher:
    """Stand-in for CUDADispatcher under the CUDA simulator.

    The simulator's kernels never reach ``CUDADispatcher.call``, so the smoke
    mode installs the mechanisms on this class instead: it has the 0.30 call
    signature and runs the simulator kernel from ``call``.
    """

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, config):
        return _SimulatorLaunch(self, *config)

    def call(self, args, launch_config):
        lc = launch_config
        self.kernel[lc.griddim, lc.blockdim, lc.stream, lc.sharedmem](*args)


class _SimulatorLaunch:
    def __init__(self, dispatcher, griddim, blockdim, stream=0, sharedmem=0):
        self.dispatcher, self.griddim, self.blockdim = dispatcher, griddim, blockdim
        self.stream, self.sharedmem = stream, sharedmem

    def __call__(self, *args):
        return self.dispatcher.call(args, self)


def make_launchers(arg_counts, simulator: bool) -> dict:
    """nargs -> (configured [1, 1] launch, device-array args), compiled and warmed once."""
    from numba import cuda

    kernels.quiet_occupancy_warnings()
    launchers = {}
    for nargs in arg_counts:
        kernel = kernels.empty_kernel(cuda, nargs)
        if simulator:
            kernel = SimulatorDispatcher(kernel)
        args = tuple(kernels.device_arrays(nargs, cuda))
        launch = kernel[1, 1]
        launch(*args)  # compile now, outside any timing
        launchers[nargs] = (launch, args)
    cuda.synchronize()
    return launchers


def signature_text(target=None) -> str:
    """"call(args, launch_config)": the launch signature of *target* (default: numba-cuda's CUDADispatcher)."""
    if target is None:
        from numba.cuda.dispatcher import CUDADispatcher

        target = CUDADispatcher
    return "call(" + ", ".join(mechanisms.signature_of(target.__dict__["call"])[1:]) + ")"


def delay_info(specs) -> dict:
    """Per delay spec: the delay asked for, this process's clock-read overhead and the spin it leaves."""
    delay = {}
    for spec in specs:
        name, ns = mechanisms.parse(spec)
        if name == "delay":
            overhead = mechanisms.spin_overhead_ns()
            delay[spec] = {"requested_ns": ns, "clock_overhead_ns": overhead, "spin_ns": max(0, ns - overhead)}
    return delay


def measure_block(launch, args, samples: int, launches: int, warmup: int, sync) -> list[float]:
    """*samples* timings (µs per launch) of *launches* back-to-back launches each."""
    for _ in range(warmup):
        launch(*args)
    sync()
    clock = time.perf_counter_ns
    out = []
    for _ in range(samples):
        t0 = clock()
        for _ in range(launches):
            launch(*args)
        t1 = clock()
        out.append((t1 - t0) / launches / 1000.0)
    sync()
    return out


def run_rounds(launchers, specs, n_rounds, samples, launches, warmup, sync, rng, target=None,
               on_round=None, rounds=None, deadline=None, clock=time.monotonic,
               warmup_class_write=DEFAULT_WARMUP_CLASS_WRITE) -> list[dict]:
    """The interleaved measurement; appends to *rounds* (kept on KeyboardInterrupt).
    Stops after *n_rounds*, or after the first round that ends past *deadline* (a *clock* time).

    Each block is preceded by ``mechanisms.switch``; a block whose switch wrote
    the class warms up ``max(warmup, warmup_class_write)`` launches, others
    *warmup* (see the module docstring). Ends with the mechanism uninstalled,
    however it ends."""
    rounds = [] if rounds is None else rounds
    try:
        for index in range(n_rounds):
            if deadline is not None and index > 0 and clock() >= deadline:
                break
            record = {"round": index, "order": {}, "samples": {}, "class_modified": {}, "complete": False}
            rounds.append(record)
            arg_counts = list(launchers)
            rng.shuffle(arg_counts)
            for nargs in arg_counts:
                launch, args = launchers[nargs]
                order = list(specs)
                rng.shuffle(order)
                record["order"][str(nargs)] = order
                per = record["samples"].setdefault(str(nargs), {})
                modified = record["class_modified"].setdefault(str(nargs), {})
                for spec in order:
                    wrote = mechanisms.switch(spec, target)
                    modified[spec] = wrote
                    per[spec] = measure_block(launch, args, samples, launches,
                                              max(warmup, warmup_class_write) if wrote else warmup, sync)
            record["complete"] = True
            if on_round is not None:
                on_round(rounds)
    finally:
        mechanisms.uninstall()
    return rounds


def rewarm(launchers, sync, launches: int = 200) -> None:
    """Untimed launches of every kernel, after the process moved to the CPU it measures on."""
    for launch, largs in launchers.values():
        for _ in range(launches):
            launch(*largs)
    sync()


def session(launchers, specs, params: dict, sync, target=None, rounds=None, on_round=None) -> list[dict]:
    """One process's pair rounds as ``launchbench mechanisms`` runs them, here (--processes 1) or in
    a worker: *params* holds the command's rounds, samples, launches, warmup, warmup_class_write,
    seed and max_time (seconds of rounds, from now; none: until the rounds are done); what is
    missing takes its default. Appends to *rounds* (kept on KeyboardInterrupt) and returns it."""
    import random

    rounds = [] if rounds is None else rounds
    max_time = params.get("max_time")
    start = time.monotonic()
    run_rounds(launchers, specs, int(params.get("rounds", DEFAULT_ROUNDS)), int(params.get("samples", 1)),
               int(params.get("launches", DEFAULT_LAUNCHES)), int(params.get("warmup", DEFAULT_WARMUP)), sync,
               random.Random(params.get("seed")), target=target, on_round=on_round, rounds=rounds,
               deadline=start + float(max_time) if max_time else None,
               warmup_class_write=int(params.get("warmup_class_write", DEFAULT_WARMUP_CLASS_WRITE)))
    return rounds
