"""``launchbench mechanisms`` over many fresh processes: the verdict's unit is a process.

Why: a process's memory layout, hash seeds and allocator state shift a launch's cost by a few
percent, and they shift the *difference* between two mechanisms too, by more than one process's
own interval is wide (lab/README.md). So one process's in-process session (interleaved pair
rounds, mechanisms switched in place: workloads/capture/mechanism_rounds.py) runs in each of N fresh
worker processes, one round of the engine each (runner.run: set up ahead, pinned, every finished
process kept); mechanism_stats.py judges across them.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from . import progressbar, runner, runplan, workerproc

#: untimed launches per kernel after a worker is pinned to the measuring CPU, before its rounds
PREPARE_WARMUP = 200


@dataclass
class Plan:
    processes: int
    seconds_each: float | None   # measuring time per process (None: until `rounds`)
    rounds: int                  # most pair rounds per process
    specs: list
    arg_counts: list
    samples: int
    launches: int
    warmup: int
    warmup_class_write: int
    seed: int
    affinity: list | None
    simulator: bool
    overlay: str
    log_dir: str
    python: str = sys.executable
    prefetch: int = 0
    setup_cpus: list | None = None


@dataclass
class Outcome:
    processes: list = field(default_factory=list)
    info: dict = field(default_factory=dict)   # the first worker's set-up info (versions, device)
    interrupted: bool = False
    reason: str | None = None
    error: workerproc.WorkerError | None = None
    timing: dict = field(default_factory=lambda: {"wall_s": 0.0, "setup_wait_s": 0.0, "measure_s": 0.0,
                                                  "teardown_s": 0.0})


def process_seed(seed: int, index: int) -> int:
    """Each process's shuffle seed, derived from the run's seed (recorded per process too)."""
    return (seed * 1_000_003 + index) % 2**32


def _measure_process(mplan: Plan):
    """The engine's measure step for one round = one fresh process: a whole in-process
    mechanisms session, kept as one unit."""
    def measure(plan: runplan.Plan, rnd: int, workers: dict, out: runplan.Outcome, progress) -> None:
        worker = workers[PROCESS]
        info = out.round_infos[PROCESS]
        seed = process_seed(mplan.seed, rnd)
        reply = worker.request({"cmd": "mechanisms", "specs": mplan.specs, "max_time": mplan.seconds_each,
                                "rounds": mplan.rounds, "samples": mplan.samples, "launches": mplan.launches,
                                "warmup": mplan.warmup, "warmup_class_write": mplan.warmup_class_write,
                                "seed": seed})
        out.units.append({"index": rnd, "pid": info.get("pid"), "seed": seed, "affinity": info.get("affinity"),
                          "numba_cuda": info.get("numba_cuda_version"), "signature": reply["signature"],
                          "delay": reply["delay"], "elapsed_s": reply["elapsed_s"],
                          "setup_state": info.get("setup_state"), "end_state": reply.get("end_state"),
                          "rounds_complete": sum(1 for r in reply["rounds"] if r["complete"]),
                          "rounds": reply["rounds"]})
        progress.tick(f"process {rnd + 1}/{mplan.processes}")
    return measure


PROCESS = "process"


def engine_plan(plan: Plan) -> runplan.Plan:
    """The engine's view of a mechanisms run: one variant, one process a round, no calibration."""
    return runplan.Plan(
        variants=[(PROCESS, plan.python, None)], reference=PROCESS, arg_counts=plan.arg_counts, loops={},
        repeats=1, rounds=plan.processes, warmup=PREPARE_WARMUP, sample_target_s=0.0,
        simulator=plan.simulator, affinity=plan.affinity, peers=False, overlay=plan.overlay,
        log_dir=plan.log_dir, prefetch=plan.prefetch, setup_cpus=plan.setup_cpus,
        measure=_measure_process(plan), log_prefix="worker-p")


def run(plan: Plan, progress: progressbar.Progress, on_process=None) -> Outcome:
    """Measure in plan.processes fresh workers, one at a time (the engine's rounds); returns what
    finished, even when interrupted."""
    out = Outcome()

    def on_round(engine_out: runplan.Outcome) -> None:
        out.processes = engine_out.units
        out.info = engine_out.infos.get(PROCESS, {})
        out.timing = engine_out.timing
        if on_process is not None:
            on_process(out)

    res = runner.run(engine_plan(plan), progress, on_round=on_round)
    out.processes, out.info = res.units, res.infos.get(PROCESS, {})
    out.interrupted, out.reason, out.error, out.timing = res.interrupted, res.reason, res.error, res.timing
    return out
