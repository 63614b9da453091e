"""The measuring process: runs inside one variant's environment, answers JSON lines.

``python -m launchbench.engine.worker`` reads one JSON request per line on stdin and
writes one JSON reply per line on the original stdout; anything else that
prints (numba warnings, stray output) is sent to stderr, so the protocol
cannot be corrupted. Requests::

    {"cmd": "setup", "arg_counts": [0..4], "mechanism": null|"contextvar", "simulator": false}
        -> {"ok": true, "info": {pid, python, numba_cuda_version, installed, mechanism, device}}
    {"cmd": "prepare", "affinity": null|[cpus], "warmup": 1000}
        -> {"ok": true, "affinity": [cpus]|null}
        setup may add "arg_kind": "array"|"scalar"|"mixed" (the kernels' arguments) and
        "workload": "stages" (time each stage of the launch: launchbench.workloads.stages; with "target" or
        under the simulator, on launchbench.workloads.standin's stand-in path)
    {"cmd": "calibrate", "nargs": 2, "target_s": 0.004} -> {"ok": true, "loops": 200}
    {"cmd": "sample", "nargs": 2, "loops": 20000}       -> {"ok": true, "us": 19.64}
        both may carry "stage": "marshal_args" (the stages workload): that stage's loop instead
    {"cmd": "peers", "nargs": 2, "loops": 20000}        -> {"ok": true, "peers": {"cupy": 4.6, ...}}
    {"cmd": "mechanisms", "specs": [...], "max_time": 2.5, "rounds": 3000, "samples": 1, "launches": 100,
     "warmup": 10, "warmup_class_write": 120, "seed": 7}
        -> {"ok": true, "rounds": [...], "signature": "call(...)", "delay": {...}, "elapsed_s": 2.6}
    {"cmd": "counts", "nargs": 2, "launches": 20, "warmup": 5}
        -> {"ok": true, "counts": {counter, python, per_launch, steady, functions, c_callee_scope, ...}}
        exact Python-level counts of the same launch (launchbench.workloads.counts, with each
        function's C callees: launchbench.workloads.callees); asked only
        after a round's samples, since counting slows the launches it counts
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

from ..base import cudamod, device, lifeline
from ..base.device import one_line
from ..workloads import argkinds, breakdown, callees, counts, peers, stages
from ..workloads.capture import mechanism_rounds, mechanisms
from ..workloads.stages import baseline_of, stage_names

#: launches per kernel during setup: enough to compile and load it; the real warm-up is prepare's
SETUP_LAUNCHES = 10
#: per-iteration cost a stage this numba-cuda lacks is calibrated for (Bench.calibrate)
ABSENT_STAGE_S = 0.25e-6


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
    for dist in ("numba-cuda", "numba-cuda-mlir", "numba", "llvmlite", "numpy", "cuda-core", "cuda-bindings"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _dist_version(module_name: str) -> str | None:
    """The installed version of the distribution that provides *module_name*, if any."""
    from importlib import metadata

    top = module_name.split(".")[0]
    try:
        names = metadata.packages_distributions().get(top, [top])
        return metadata.version(names[0])
    except Exception:  # noqa: BLE001
        return None


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
        self.sync = None
        self.launchers = {}
        self.args = {}
        self.mechanism = None
        self.simulator = False
        self.kernels = {}
        self.stage_loops = {}   # nargs -> {stage: loop(n) -> s}: the stages workload (launchbench.workloads.stages)
        self.stage_info = {}
        self.peer_runs = {}     # name -> {nargs: run(n)}: the peers workload (launchbench.workloads.peers)
        self.peer_reasons = {}  # name -> why that launcher cannot run here
        self.single_stages = None  # (style, {nargs: {stage: loop}}): launchbench breakdown without --variant

    def setup_callable(self, req: dict) -> dict:
        """``target: "module:function"``: time a plain Python callable (with *nargs* int
        arguments) instead of a kernel, so the round machinery, per-commit builds and the
        statistics can be exercised on a machine without numba-cuda or a GPU (tests, demos)."""
        import importlib

        module_name, _, func_name = str(req["target"]).partition(":")
        try:
            func = getattr(importlib.import_module(module_name), func_name)
        except Exception as exc:  # noqa: BLE001
            raise Failure("import", f"cannot load target {req['target']!r}: {one_line(exc)}") from None
        for nargs in req["arg_counts"]:
            self.launchers[nargs] = func
            self.args[nargs] = list(range(nargs))
        self.sync = lambda: None
        dist = module_name.split(".")[0]
        return {"pid": os.getpid(), "parent": os.getppid(), "python": sys.version.split()[0], "numba_cuda_version": None,
                "installed": {dist: _dist_version(module_name)}, "mechanism": None,
                "device": {"name": "CPU (timing a Python callable)"}, "target": req["target"],
                "setup_state": process_state()}

    def setup(self, req: dict) -> dict:
        if req.get("workload") == "stages" and (req.get("target") or req.get("simulator")):
            return self.setup_standin_stages(req)
        if req.get("target"):
            return self.setup_callable(req)
        phases = {"started": time.monotonic()}  # where a worker's set-up time goes, for the JSON
        try:
            cuda = cudamod.import_cuda()  # numba.cuda, or numba_cuda_mlir.cuda for an mlir variant
        except Exception as exc:  # noqa: BLE001 - any import failure is an environment problem
            raise Failure("import", device.diagnose_import_error(exc)) from None
        self.cuda = cuda
        self.sync = cuda.synchronize
        self.simulator = bool(req.get("simulator"))
        if not req.get("simulator"):
            try:
                device.require_gpu(allow_simulator=False)
            except Exception as exc:  # noqa: BLE001
                raise Failure("nogpu", device.one_line(exc, 300)) from None
        phases["imported"] = time.monotonic()
        cuda.synchronize()  # the CUDA context, if require_gpu has not made it
        phases["context"] = time.monotonic()
        mech = req.get("mechanism")
        if mech:
            try:
                mechanisms.install(mech, target=SimulatorDispatcher if req.get("simulator") else None)
            except Exception as exc:  # noqa: BLE001
                raise Failure("mechanism", f"installing mechanism {mech!r} failed: {device.one_line(exc)}") from None
            self.mechanism = mech
        self._quiet()
        kind, dispatch = req.get("arg_kind") or "array", req.get("dispatch") or "lazy"
        for nargs in req["arg_counts"]:
            try:  # CuPy/torch arguments, eager signatures: launchbench.workloads.argkinds
                kernel = argkinds.build_kernel(cuda, nargs, kind, dispatch)
                args = argkinds.make_args(nargs, kind, cuda)
            except argkinds.ArgKindUnavailable as exc:
                raise Failure("error", str(exc)) from None  # "variant v: --arg-kind cupy needs cupy ..."
            launcher = kernel[1, 1]
            if req.get("simulator"):
                launcher = _SimulatorLaunch(SimulatorDispatcher(launcher))
            self.launchers[nargs] = launcher
            self.args[nargs] = args
            self.kernels[nargs] = kernel
            # compiles and loads the module; with "setup_warmup", the bulk of the warm-up too,
            # here on a set-up CPU, so that prepare's pinned warm-up can be short
            for _ in range(max(SETUP_LAUNCHES, int(req.get("setup_warmup") or 0))):
                launcher(*args)
        cuda.synchronize()
        phases["kernels"] = time.monotonic()
        if req.get("workload") == "stages":  # each stage of the launch on its own (breakdown --variant)
            for nargs, kernel in self.kernels.items():
                style, self.stage_loops[nargs] = stages.worker_loops(kernel, self.args[nargs])
            self.stage_info = {"style": style, "arg_kind": kind, "dispatch": dispatch}
        if req.get("workload") == "breakdown_single":
            self.single_stages = breakdown.stage_loops_for(req["arg_counts"], int(req.get("stage_warmup", 1000)))
            phases["stages"] = time.monotonic()
        if req.get("workload") == "peers":  # numba-cuda, CuPy, cuda.core, the C floor (launchbench peers)
            self.peer_runs, self.peer_reasons = peers.build_launchers(
                req["launchers"], req["arg_counts"], warmup=int(req.get("peer_warmup", 1000)),
                numba_args=(kind, dispatch))
            phases["peers"] = time.monotonic()
        try:
            dev = device.device_info()
        except Exception as exc:  # noqa: BLE001
            dev = {"name": None, "error": device.one_line(exc)}
        return {
            "pid": os.getpid(),
            "parent": os.getppid(),  # launchbench, or the zygote it was forked from (engine/zygote.py)
            "python": sys.version.split()[0],
            # the launching package's version: numba-cuda's, or numba-cuda-mlir's for an mlir variant
            "numba_cuda_version": _versions()[cudamod.distribution()],
            "cuda_module": cudamod.choice(),
            # the file it came from: the parent checks it is the environment's own build (workerproc.import_mismatch)
            "cuda_module_file": os.path.realpath(cuda.__file__) if getattr(cuda, "__file__", None) else None,
            "installed": _versions(),
            "mechanism": mech,
            # a what-if's own record (hoist-imports: which functions' imports now run once)
            **({"mechanism_details": mechanisms.details()} if mech and mechanisms.details() is not None else {}),
            "arguments": {"kind": kind, "dispatch": dispatch},
            "device": dev,
            "launchbench": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # the package
            "setup_state": process_state(),
            "setup_done": time.monotonic(),  # system-wide clock: the parent relates it to its rounds
            "setup_phases_s": _phase_seconds(phases),
            **({"stages": self.stage_info} if self.stage_info else {}),
        }

    def setup_standin_stages(self, req: dict) -> dict:
        """The stages workload on a stand-in launch path (``target``: a ``module:function``
        returning (style, loops) per arg count, default ``launchbench.workloads.standin:stage_loops``):
        CPU tests with injected stage costs, and ``--simulator``, whose kernels never reach
        CUDADispatcher.call. A mechanism installs on the stand-in module's ``Dispatcher``."""
        import importlib

        target = req.get("target") or "launchbench.workloads.standin:stage_loops"
        module_name, _, func_name = str(target).partition(":")
        try:
            module = importlib.import_module(module_name)
            factory = getattr(module, func_name)
        except Exception as exc:  # noqa: BLE001
            raise Failure("import", f"cannot load stage target {target!r}: {one_line(exc)}") from None
        mech = req.get("mechanism")
        if mech:
            try:
                mechanisms.install(mech, target=getattr(module, "Dispatcher"))
            except Exception as exc:  # noqa: BLE001
                raise Failure("mechanism", f"installing mechanism {mech!r} failed: {one_line(exc)}") from None
            self.mechanism = mech
        kind = req.get("arg_kind") or "array"
        style = None
        for nargs in req["arg_counts"]:
            style, self.stage_loops[nargs] = factory(nargs, kind)
            full = self.stage_loops[nargs]["full"]
            launch = getattr(full, "launch", None)  # (cfg, args): the launch itself, so counts see no loop
            if launch is not None:
                self.launchers[nargs], self.args[nargs] = launch[0], list(launch[1])
            else:
                self.launchers[nargs] = lambda *a, full=full: full(1)
                self.args[nargs] = []
        self.sync = lambda: None
        self.simulator = bool(req.get("simulator"))
        self.stage_info = {"style": style, "arg_kind": kind, "standin": target}
        return {"pid": os.getpid(), "parent": os.getppid(), "python": sys.version.split()[0], "numba_cuda_version": None,
                "installed": {}, "mechanism": mech, "stages": self.stage_info,
                "device": {"name": "CPU (stand-in launch path)"}, "setup_state": process_state()}

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
            for loop in self.stage_loops.get(nargs, {}).values():
                loop(max(10, warmup // 10))
        self.sync()
        return pinned

    def _quiet(self) -> None:
        """No occupancy warnings: a warnings.warn per launch would distort [1, 1] timings."""
        cudamod.quiet_occupancy_warnings()

    def stage_loop(self, nargs: int, stage: str):
        """The timed loop of *stage*; a stage this numba-cuda lacks (``lc_bookkeeping`` before
        0.30) is its baseline -- an empty loop, or a no-op before the raw launch -- so it costs 0
        here and its paired delta is what the other variant spends on it."""
        loops = self.stage_loops.get(nargs)
        if not loops:
            raise Failure("error", "stage samples need a worker set up with workload 'stages'")
        if stage not in loops and stage not in stage_names():
            raise Failure("error", f"unknown stage {stage!r}")
        return loops.get(stage) or loops[baseline_of(stage)]

    def time_loops(self, nargs: int, loops: int, stage: str | None = None) -> float:
        """Seconds for *loops* launches (or iterations of *stage*), gc off, synchronized before and after."""
        if stage is not None:
            loop = self.stage_loop(nargs, stage)
            gc_was = gc.isenabled()
            gc.disable()
            try:
                self.sync()
                return loop(loops)
            finally:
                if gc_was:
                    gc.enable()
        launcher, args = self.launchers[nargs], self.args[nargs]
        sync = self.sync
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

    def counts(self, nargs: int, launches: int, warmup: int) -> dict:
        """Bytecodes, calls, function entries and C callees of this process's launch with *nargs* arguments."""
        if nargs not in self.launchers:
            raise Failure("error", f"no kernel with {nargs} arguments was set up in this worker")
        return callees.count(self.launchers[nargs], self.args[nargs], launches=launches, warmup=warmup,
                             sync=self.sync)

    def sample(self, nargs: int, loops: int, stage: str | None = None) -> float:
        return self.time_loops(nargs, loops, stage) / loops * 1e6

    def calibrate(self, nargs: int, target_s: float, stage: str | None = None) -> int:
        """Loops so one sample lasts about *target_s* (rounded to 2 significant digits).

        A stage this numba-cuda lacks is sized as if it cost ``ABSENT_STAGE_S`` per iteration:
        calibrated as the empty loop it is here, the variants that have it would take samples
        tens of times the target."""
        if stage is not None and stage not in self.stage_loops.get(nargs, {}):
            self.stage_loop(nargs, stage)  # unknown stage: the one-line failure
            return _two_digits(max(1, int(target_s / ABSENT_STAGE_S)))
        loops = 10
        while True:
            elapsed = self.time_loops(nargs, loops, stage)
            if elapsed >= min(0.2 * target_s, 0.02) or loops >= 10_000_000:
                break
            loops *= 4
        # the median of a few timings: one timing may land in a slow spell of the machine
        per_launch = sorted([elapsed / loops] + [self.time_loops(nargs, loops, stage) / loops for _ in range(4)])[2]
        return _two_digits(max(1, int(target_s / max(per_launch, 1e-9))))

    def mechanisms(self, req: dict) -> dict:
        """``launchbench mechanisms``' interleaved pair rounds, in this (fresh) process: one
        process's worth of the across-process measurement. Kernels must be set up without a
        mechanism; the rounds switch among them and leave none installed."""
        if self.mechanism:
            raise Failure("error", "the mechanisms request needs a worker set up without a mechanism")
        target = SimulatorDispatcher if self.simulator else None
        launchers = {n: (launch, tuple(self.args[n])) for n, launch in self.launchers.items()}
        specs = list(req["specs"])
        try:
            signature = mechanism_rounds.signature_text(target)
            delay = mechanism_rounds.delay_info(specs)
        except Exception as exc:  # noqa: BLE001 - e.g. an unsupported numba-cuda
            raise Failure("mechanism", one_line(exc)) from None
        start = time.monotonic()
        rounds = mechanism_rounds.session(launchers, specs, req, self.cuda.synchronize, target=target)
        return {"rounds": rounds, "signature": signature, "delay": delay,
                "elapsed_s": round(time.monotonic() - start, 3), "end_state": process_state()}

    def peers_round(self, req: dict) -> dict:
        """One engine round of ``launchbench peers``: every launcher warmed up on the measuring
        CPU, then interleaved samples (``peers.collect``); arg counts as text keys (JSON)."""
        counts = [int(n) for n in req["arg_counts"]]
        for per in self.peer_runs.values():
            for run in per.values():
                run(int(req.get("warmup", 100)))
        got = peers.collect(self.peer_runs, counts, int(req["loops"]), int(req["repeats"]), 1)
        return {"samples": {name: {str(n): v for n, v in per.items()} for name, per in got.items()},
                "unavailable": self.peer_reasons}

    def breakdown_round(self, req: dict) -> dict:
        """One engine round of the single-environment breakdown: each stage loop warmed up on the
        measuring CPU, then ``repeats`` rotated passes over the stages."""
        from importlib.metadata import version

        if self.single_stages is None:
            raise Failure("error", "the breakdown_round request needs a worker set up with workload 'breakdown_single'")
        style, loops = self.single_stages
        for by_stage in loops.values():
            for loop in by_stage.values():
                loop(max(10, int(req["loops"]) // 10))
        samples = breakdown.collect_stage_samples(loops, int(req["loops"]), int(req["repeats"]), int(req.get("rotation", 0)))
        return {"samples": samples, "launch_path": style, "numba_cuda": version("numba-cuda")}

    def peers(self, nargs: int, loops: int) -> dict:
        return peers.measure(nargs, loops)


def _phase_seconds(marks: dict) -> dict:
    """{"started": t0, "imported": t1, ...} (in order) -> {"imported": t1 - t0, ...}."""
    names = list(marks)
    return {b: round(marks[b] - marks[a], 4) for a, b in zip(names, names[1:])}


def _two_digits(wanted: int) -> int:
    digits = len(str(wanted)) - 2
    return max(1, round(wanted, -digits) if digits > 0 else wanted)


def handle(bench: Bench, req: dict) -> dict:
    cmd = req.get("cmd")
    if cmd == "setup":
        return {"ok": True, "info": bench.setup(req)}
    if cmd == "prepare":
        return {"ok": True, "affinity": bench.prepare(req)}
    if cmd == "calibrate":
        return {"ok": True, "loops": bench.calibrate(int(req["nargs"]), float(req["target_s"]), req.get("stage"))}
    if cmd == "sample":
        return {"ok": True, "us": bench.sample(int(req["nargs"]), int(req["loops"]), req.get("stage"))}
    if cmd == "counts":
        return {"ok": True, "counts": bench.counts(int(req["nargs"]), int(req.get("launches", counts.DEFAULT_LAUNCHES)),
                                                   int(req.get("warmup", counts.DEFAULT_WARMUP)))}
    if cmd == "mechanisms":
        return {"ok": True, **bench.mechanisms(req)}
    if cmd == "peers":
        return {"ok": True, "peers": bench.peers(int(req["nargs"]), int(req["loops"]))}
    if cmd == "breakdown_round":
        return {"ok": True, **bench.breakdown_round(req)}
    if cmd == "peers_round":
        return {"ok": True, **bench.peers_round(req)}
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
    lifeline.die_with_parent()  # SIGKILL when launchbench ends, however it ends (base/lifeline.py)
    # Protocol on a private copy of stdout; fd 1 now goes to stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    bench = Bench()
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
