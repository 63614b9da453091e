"""The measuring process: runs inside one variant's environment, answers JSON lines.

``python -m launchbench.worker`` reads one JSON request per line on stdin and
writes one JSON reply per line on the original stdout; anything else that
prints (numba warnings, stray output) is sent to stderr, so the protocol
cannot be corrupted. Requests::

    {"cmd": "setup", "arg_counts": [0..4], "mechanism": null|"contextvar", "simulator": false}
        -> {"ok": true, "info": {pid, python, numba_cuda_version, installed, mechanism, device}}
    {"cmd": "prepare", "affinity": null|[cpus], "warmup": 1000}
        -> {"ok": true, "affinity": [cpus]|null}
    {"cmd": "calibrate", "nargs": 2, "target_s": 0.004} -> {"ok": true, "loops": 200}
    {"cmd": "sample", "nargs": 2, "loops": 20000}       -> {"ok": true, "us": 19.64}
    {"cmd": "peers", "nargs": 2, "loops": 20000}        -> {"ok": true, "peers": {"cupy": 4.6, ...}}
    {"cmd": "mechanisms", "specs": [...], "max_time": 2.5, "rounds": 3000, "samples": 1, "launches": 100,
     "warmup": 10, "warmup_class_write": 120, "seed": 7}
        -> {"ok": true, "rounds": [...], "signature": "call(...)", "delay": {...}, "elapsed_s": 2.6}
    {"cmd": "exit", "cpus": null|[cpus]}  -> no reply; the process ends at once
    failures -> {"ok": false, "kind": "import"|"nogpu"|"mechanism"|"error", "error": "one line"}

``setup`` is the expensive part (import, compile, a few launches) and may run
while another worker measures; ``prepare`` is cheap and runs just before this
worker's round: it pins the process to the measuring CPU(s) and warms every
kernel up there. A sample is ``loops`` launches of a preconfigured ``k[1, 1]`` with the
garbage collector off, between two ``cuda.synchronize()`` calls, in µs/launch.
Only the standard library, numba-cuda and launchbench are imported here.
"""
from __future__ import annotations

import gc
import json
import os
import sys
import time
import warnings


#: launches per kernel during setup: enough to compile and load it; the real warm-up is prepare's
SETUP_LAUNCHES = 10


def process_state() -> dict:
    """Where this process last ran and how its memory is backed (Linux /proc; {} elsewhere):
    recorded per worker so that a process that measures slow can be told apart afterwards."""
    state: dict = {}
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        state["cpu"] = int(fields[36])  # field 39, "processor": the CPU it last ran on
    except (OSError, IndexError, ValueError):
        pass
    try:
        with open("/proc/self/smaps_rollup") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key in ("Rss", "AnonHugePages"):
                    state[key.lower() + "_kb"] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return state


class Failure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for dist in ("numba-cuda", "numba", "llvmlite", "numpy", "cuda-core", "cuda-bindings"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def kernel_source(nargs: int) -> str:
    params = ", ".join(f"a{i}" for i in range(nargs))
    return f"def k({params}):\n    pass\n"


class SimulatorDispatcher:
    """Smoke-run stand-in for ``CUDADispatcher``: the simulator's kernels never reach
    ``CUDADispatcher.call``, so under ``--simulator`` every timed launch goes through this
    class's ``call`` (numba-cuda 0.29's signature) and mechanisms are installed here."""

    def __init__(self, launcher):
        self.launcher = launcher

    def call(self, args, griddim, blockdim, stream, sharedmem):
        return self.launcher(*args)


class _SimulatorLaunch:
    def __init__(self, dispatcher):
        self.dispatcher = dispatcher

    def __call__(self, *args):
        return self.dispatcher.call(args, (1, 1, 1), (1, 1, 1), 0, 0)


class Bench:
    """Kernels for each arg count, configured once, and the timing loops."""

    def __init__(self):
        self.cuda = None
        self.launchers = {}
        self.args = {}
        self.mechanism = None
        self.simulator = False

    def setup(self, req: dict) -> dict:
        from . import device

        try:
            from numba import cuda
        except Exception as exc:  # noqa: BLE001 - any import failure is an environment problem
            raise Failure("import", device.diagnose_import_error(exc)) from None
        self.cuda = cuda
        self.simulator = bool(req.get("simulator"))
        if not req.get("simulator"):
            try:
                device.require_gpu(allow_simulator=False)
            except Exception as exc:  # noqa: BLE001
                raise Failure("nogpu", device.one_line(exc, 300)) from None
        mech = req.get("mechanism")
        if mech:
            try:
                from . import mechanisms

                mechanisms.install(mech, target=SimulatorDispatcher if req.get("simulator") else None)
            except Exception as exc:  # noqa: BLE001
                raise Failure("mechanism", f"installing mechanism {mech!r} failed: {device.one_line(exc)}") from None
            self.mechanism = mech
        self._quiet()
        import numpy as np

        for nargs in req["arg_counts"]:
            namespace: dict = {}
            exec(compile(kernel_source(nargs), f"<launchbench k/{nargs}>", "exec"), namespace)
            kernel = cuda.jit(namespace["k"])
            args = [cuda.to_device(np.zeros(1, dtype=np.float32)) for _ in range(nargs)]
            launcher = kernel[1, 1]
            if req.get("simulator"):
                launcher = _SimulatorLaunch(SimulatorDispatcher(launcher))
            self.launchers[nargs] = launcher
            self.args[nargs] = args
            for _ in range(SETUP_LAUNCHES):  # compiles, loads the module; the warm-up is prepare's
                launcher(*args)
        cuda.synchronize()
        try:
            dev = device.device_info()
        except Exception as exc:  # noqa: BLE001
            dev = {"name": None, "error": device.one_line(exc)}
        return {
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "numba_cuda_version": _versions()["numba-cuda"],
            "installed": _versions(),
            "mechanism": mech,
            "device": dev,
            "launchbench": os.path.dirname(os.path.abspath(__file__)),
            "setup_state": process_state(),
        }

    def prepare(self, req: dict) -> list | None:
        """Pin to the measuring CPU(s), then warm every kernel up there (caches, branch predictors)."""
        affinity = req.get("affinity")
        pinned = None
        if affinity:
            try:
                os.sched_setaffinity(0, set(affinity))
                pinned = sorted(os.sched_getaffinity(0))
            except (OSError, AttributeError, ValueError) as exc:
                raise Failure("error", f"cannot pin to CPUs {affinity} ({exc}); choose CPUs from "
                                       "os.sched_getaffinity or pass --affinity none") from None
        warmup = max(1, int(req.get("warmup", 1000)))
        for nargs, launcher in self.launchers.items():
            args = self.args[nargs]
            for _ in range(warmup):
                launcher(*args)
        self.cuda.synchronize()
        return pinned

    def _quiet(self) -> None:
        """No occupancy warnings: a warnings.warn per launch would distort [1, 1] timings."""
        try:
            from numba.cuda import config

            config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
        except Exception:  # noqa: BLE001
            pass
        try:
            from numba.core.errors import NumbaPerformanceWarning

            warnings.simplefilter("ignore", NumbaPerformanceWarning)
        except ImportError:
            pass

    def time_loops(self, nargs: int, loops: int) -> float:
        """Seconds for *loops* launches, gc off, synchronized before and after."""
        launcher, args = self.launchers[nargs], self.args[nargs]
        sync = self.cuda.synchronize
        gc_was = gc.isenabled()
        gc.disable()
        try:
            sync()
            t0 = time.perf_counter()
            for _ in range(loops):
                launcher(*args)
            sync()
            t1 = time.perf_counter()
        finally:
            if gc_was:
                gc.enable()
        return t1 - t0

    def sample(self, nargs: int, loops: int) -> float:
        return self.time_loops(nargs, loops) / loops * 1e6

    def calibrate(self, nargs: int, target_s: float) -> int:
        """Loops so one sample lasts about *target_s* (rounded to 2 significant digits)."""
        loops = 10
        while True:
            elapsed = self.time_loops(nargs, loops)
            if elapsed >= min(0.2 * target_s, 0.02) or loops >= 10_000_000:
                break
            loops *= 4
        # the median of a few timings: one timing may land in a slow spell of the machine
        per_launch = sorted([elapsed / loops] + [self.time_loops(nargs, loops) / loops for _ in range(4)])[2]
        wanted = max(1, int(target_s / per_launch))
        digits = len(str(wanted)) - 2
        return max(1, round(wanted, -digits) if digits > 0 else wanted)

    def mechanisms(self, req: dict) -> dict:
        """``launchbench mechanisms``' interleaved pair rounds, in this (fresh) process: one
        process's worth of the across-process measurement. Kernels must be set up without a
        mechanism; the rounds switch among them and leave none installed."""
        import random

        from . import mechanisms_cli

        if self.mechanism:
            raise Failure("error", "the mechanisms request needs a worker set up without a mechanism")
        target = SimulatorDispatcher if self.simulator else None
        launchers = {n: (launch, tuple(self.args[n])) for n, launch in self.launchers.items()}
        specs = list(req["specs"])
        try:
            signature = mechanisms_cli.signature_text(target)
            delay = mechanisms_cli.delay_info(specs)
        except Exception as exc:  # noqa: BLE001 - e.g. an unsupported numba-cuda
            from .device import one_line

            raise Failure("mechanism", one_line(exc)) from None
        rounds: list = []
        start = time.monotonic()
        mechanisms_cli.run_rounds(
            launchers, specs, int(req.get("rounds", mechanisms_cli.DEFAULT_ROUNDS)), int(req.get("samples", 1)),
            int(req.get("launches", mechanisms_cli.DEFAULT_LAUNCHES)),
            int(req.get("warmup", mechanisms_cli.DEFAULT_WARMUP)), self.cuda.synchronize,
            random.Random(req.get("seed")), target=target, rounds=rounds,
            deadline=start + float(req["max_time"]) if req.get("max_time") else None,
            warmup_class_write=int(req.get("warmup_class_write", mechanisms_cli.DEFAULT_WARMUP_CLASS_WRITE)))
        return {"rounds": rounds, "signature": signature, "delay": delay,
                "elapsed_s": round(time.monotonic() - start, 3), "end_state": process_state()}

    def peers(self, nargs: int, loops: int) -> dict:
        from . import peers

        return peers.measure(nargs, loops)


def handle(bench: Bench, req: dict) -> dict:
    cmd = req.get("cmd")
    if cmd == "setup":
        return {"ok": True, "info": bench.setup(req)}
    if cmd == "prepare":
        return {"ok": True, "affinity": bench.prepare(req)}
    if cmd == "calibrate":
        return {"ok": True, "loops": bench.calibrate(int(req["nargs"]), float(req["target_s"]))}
    if cmd == "sample":
        return {"ok": True, "us": bench.sample(int(req["nargs"]), int(req["loops"]))}
    if cmd == "mechanisms":
        return {"ok": True, **bench.mechanisms(req)}
    if cmd == "peers":
        return {"ok": True, "peers": bench.peers(int(req["nargs"]), int(req["loops"]))}
    raise Failure("error", f"unknown request {cmd!r}")


def _exit_now(cpus) -> None:
    """Leave without Python's finalization (nothing is left to report), first moving off the
    measuring CPU, so that a round's workers tear down in parallel and away from the next one."""
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, set(cpus))
        except (OSError, ValueError):
            pass
    sys.stderr.flush()
    os._exit(0)


def main() -> int:
    # Protocol on a private copy of stdout; fd 1 now goes to stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    bench = Bench()
    from .device import one_line

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            if req.get("cmd") == "exit":
                _exit_now(req.get("cpus"))
            reply = handle(bench, req)
        except Failure as exc:
            reply = {"ok": False, "kind": exc.kind, "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides
            import traceback

            traceback.print_exc()
            reply = {"ok": False, "kind": "error", "error": f"{type(exc).__name__}: {one_line(exc)}"}
        proto.write(json.dumps(reply) + "\n")
        proto.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
