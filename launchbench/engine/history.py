"""What history, bisect and pr share: their settings (``CommitRun``), one engine run over per-commit environments
(``Session``), and the per-commit statistics (steps, levels, culprits).

Each measured commit is a variant of the one engine (``runner.run``, or ``lanes.run`` with
``--gpus``), measured as compare measures: fresh processes per round, interleaved paired samples,
intervals over rounds. A commit's *step* is its paired delta vs the previous measured commit; it
is *established* when its interval lies wholly beyond +/- ``--threshold``. The wheels and
environments come from ``environments.commits`` (the command hands them in).
"""
from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time

from ..base import childenv, device
from ..base.errors import UserError
from ..base.options import DEFAULT_FORK_ROUNDS
from . import analysis, commitcounts, pinning, progressbar, runplan, stats
from . import lanes as lanes_mod
from .countdiff import visibility
from .runplan import key_id, launch_keys, timing_json

#: history's schema id and version (history, and the measurement inside bisect's and pr's documents);
#: output/documents.py's "history" and "bisect" kinds read them from here (the engine sits below output/)
SCHEMA = "launchbench.history"
SCHEMA_VERSION = 1


# ---------------------------------------------------------------- settings

@dataclasses.dataclass(frozen=True)
class CommitRun:
    """The measurement options of history, bisect and pr (declared in ``commands/common_args``)."""
    repeats: int
    sample_time: float
    warmup: int
    affinity: str = "auto"
    prefetch: str = "auto"
    gpus: str | None = None
    threshold: float = 0.2
    max_time: float | None = None
    simulator: bool = False
    target: str | None = None     # time a Python callable per commit (tests on CPU)
    quiet: bool = False
    count_jobs: int | None = None
    spawn: str = "fresh"          # --spawn: fresh workers, or forked from zygotes (engine/zygote.py)
    fork_rounds: int = DEFAULT_FORK_ROUNDS
    cuda_connections: str | int = "auto"  # --cuda-connections (lanes.cuda_connections)


# ---------------------------------------------------------------- statistics (pure)

def steps(by: dict, records: list, keys: list, threshold: float, confidence: float = 0.95) -> list:
    """Each measured commit's paired delta vs the previous measured commit, per sample key
    (*by*: ``analysis.group_rounds`` of the samples)."""
    measured = [r for r in records if r["measured"] and r.get("variant")]
    out = []
    for prev, cur in zip(measured, measured[1:]):
        for key in keys:
            ref_l, var_l = analysis.paired_rounds(by, prev["variant"], cur["variant"], key_id(key))
            if not ref_l:
                continue
            d = stats.paired_median_delta(ref_l, var_l, confidence)
            d99 = stats.paired_median_delta(ref_l, var_l, 0.99)
            out.append({"commit": cur["sha"], "previous": prev["sha"], **key, **d, "ci99_us": d99["ci_us"],
                        "significant": d["n"] >= 2 and (d["ci_us"][0] > 0 or d["ci_us"][1] < 0),
                        "established": established(d, threshold)})
    return out


def established(delta: dict, threshold: float) -> bool:
    """The interval lies wholly beyond +/- threshold (and rests on two or more rounds)."""
    lo, hi = delta["ci_us"]
    return delta.get("n", 0) >= 2 and (lo > threshold or hi < -threshold)


def levels(by: dict, reference: str, keys: list) -> list:
    """The reference commit's level per key: mean over rounds of its per-round median, t interval."""
    out = []
    for key in keys:
        rounds = by.get((reference, key_id(key)), {})
        meds = [statistics.median(v) for _r, v in sorted(rounds.items())]
        if meds:
            m, lo, hi = stats.mean_ci(meds)
            out.append({**key, "us": m, "ci_us": [lo, hi], "rounds": len(meds)})
    return out


def culprits(step_recs: list) -> list:
    """Commits with an established step at one or more keys, in history order."""
    seen = []
    for s in step_recs:
        if s["established"] and s["commit"] not in seen:
            seen.append(s["commit"])
    return seen


# ---------------------------------------------------------------- measuring

def settings(opts: CommitRun, arg_counts, prefetch, affinity, rounds) -> dict:
    return {"arg_counts": arg_counts, "repeats": opts.repeats, "rounds": rounds, "warmup": opts.warmup,
            "sample_target_s": opts.sample_time, "affinity": affinity, "prefetch": prefetch,
            "threshold_us": opts.threshold, "launch": "[1, 1]", "gc_disabled": True,
            "target": opts.target, "max_time": opts.max_time, "spawn": opts.spawn,
            **({"fork_rounds": opts.fork_rounds} if opts.spawn == "fork" else {}),
            "order": "compare's: " + ("fresh workers" if opts.spawn == "fresh" else "workers forked from zygotes") +
                     " per round, interleaved samples, paired by repeat slot"}


def plan_modules(measured: list) -> dict:
    """runplan.Plan's ``modules``: a numba-cuda-mlir point's workers launch through numba_cuda_mlir
    (base/cudamod.py); every other record's through numba-cuda (not listed)."""
    return {r["variant"]: "numba-cuda-mlir" for r in measured if r.get("project") == "numba-cuda-mlir"}


def built_import(rec: dict) -> dict:
    """What a commit's workers must import (runplan.Plan's ``expect``): the package of its own
    environment, at its wheel's version (``X.Y.Z+g<sha8>``, from the file name)."""
    wheel = os.path.basename(rec.get("wheel") or "")
    version = wheel[:-len(".whl")].split("-")[1] if wheel.endswith(".whl") and wheel.count("-") >= 2 else None
    return {"prefix": rec.get("env"), "version": version}


class Session:
    """What history and bisect share: the clone, the wheel cache, the env manager, the engine."""

    #: extra fields of every worker's set-up (releases: ``argkinds.argument_setup``'s arg_kind/dispatch)
    worker_setup: dict = {}

    def __init__(self, run: CommitRun, clone: str, arg_counts: list, make_envs):
        """*arg_counts*: the parsed --args; *make_envs*: say -> the per-commit wheels and
        environments (``environments.commits.CommitEnvs``: the command hands it in)."""
        self.opts = run
        self.clone = clone
        self.say = (lambda msg: None) if run.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.arg_counts = arg_counts
        if run.repeats < 1:
            raise UserError("--repeats must be at least 1")
        if run.sample_time <= 0:
            raise UserError("--sample-time must be positive, e.g. 0.004")
        if run.threshold < 0:
            raise UserError("--threshold must be >= 0 us, e.g. 0.2")
        if run.warmup < 0:
            raise UserError(f"--warmup must be >= 0 launches (got {run.warmup})")
        if run.max_time is not None and not run.max_time >= 0:
            raise UserError("--max-time must be a number of seconds >= 0, e.g. 600 (0: no cap)")
        self.lane_setup = lanes_mod.set_up(run.gpus, run.affinity, run.cuda_connections, run.simulator or bool(run.target))
        self.affinity, self.connections = self.lane_setup.affinity, self.lane_setup.connections
        pinning.parse_prefetch(run.prefetch, 2, self.affinity)  # its syntax now; the count once builds are known
        self.envs = make_envs(self.say)
        self.cache = self.envs.cache
        self.gpu_seconds = 0.0
        self.count_seconds = 0.0
        jobs = run.count_jobs
        if jobs is not None and jobs < 1:
            raise UserError(f"--count-jobs must be at least 1 (got {jobs})")
        self.count_jobs = jobs or commitcounts.default_jobs()

    def build(self, records: list) -> None:
        """Wheel and env of every measured commit; a failed build is reported and skipped."""
        self.envs.build(self.clone, records)

    def count(self, records: list, log_dir: str) -> dict:
        """The counts pass over the built, measured commits: variant -> counts (``commitcounts``)."""
        todo = [r for r in records if r["measured"] and r.get("variant")]
        if not todo:
            return {}
        t0 = time.monotonic()
        # the launch the timing sees: the same arguments (releases' --arg-kind) and CUDA module
        setup = {**self.worker_setup, **({"target": self.opts.target} if self.opts.target else {})}
        got = commitcounts.count_commits(todo, self.arg_counts, self.envs.make_overlay(os.path.join(log_dir, "overlay")),
                                         log_dir, simulator=self.opts.simulator, setup=setup, jobs=self.count_jobs,
                                         modules=plan_modules(todo))
        spent = time.monotonic() - t0
        self.count_seconds += spent
        self.gpu_seconds += spent  # the counting processes hold the GPU too (their set-up)
        return got

    def measure(self, records: list, rounds: int, log_dir: str, on_round=None, stop=None, max_time=None,
                count_rounds: int = 0):
        """One engine run over the measured commits (the first is the reference); *max_time*
        overrides --max-time (bisect: what is left of it); the first *count_rounds* rounds' workers
        also count their launch (``Outcome.counts``: pr)."""
        measured = [r for r in records if r["measured"] and r.get("variant")]
        if len(measured) < 2:
            raise UserError("fewer than two commits of the range could be built and measured; "
                            "see the build logs named above")
        prefetch = pinning.parse_prefetch(self.opts.prefetch, len(measured), self.affinity)
        os.makedirs(log_dir, exist_ok=True)
        setup = {**self.worker_setup, **({"target": self.opts.target} if self.opts.target else {})}
        plan = runplan.Plan(
            variants=[(r["variant"], r["python"], None) for r in measured], modules=plan_modules(measured),
            reference=measured[0]["variant"],
            arg_counts=self.arg_counts, loops=None, repeats=self.opts.repeats, rounds=rounds,
            warmup=self.opts.warmup, sample_target_s=self.opts.sample_time, simulator=self.opts.simulator,
            affinity=self.affinity, peers=False, overlay=self.envs.make_overlay(os.path.join(log_dir, "overlay")),
            log_dir=log_dir, prefetch=prefetch, setup_cpus=pinning.setup_cpus(self.affinity), setup=setup,
            stop=stop, max_time=self.opts.max_time if max_time is None else max_time, count_rounds=count_rounds,
            spawn=self.opts.spawn, fork_rounds=self.opts.fork_rounds, worker_env=self.lane_setup.worker_env,
            expect={r["variant"]: built_import(r) for r in measured})
        total = rounds * self.opts.repeats * len(self.arg_counts) * len(measured)
        progress = progressbar.Progress(total, enabled=not self.opts.quiet)
        if self.opts.simulator:
            progress.line("launchbench: CUDA SIMULATOR smoke run -- the numbers are NOT a measurement")
        out = self.lane_setup.run(plan, progress, on_round=on_round)
        runplan.raise_setup_failure(out)
        self.gpu_seconds += out.timing["wall_s"]
        return out, prefetch

    def document(self, records: list, out, rng: str, prefetch: int, rounds: int, command: str,
                 counts: dict | None = None) -> dict:
        """The run's JSON; *counts* (variant -> ``commitcounts`` result) adds each commit's counts and
        its counts step vs the previous measured commit."""
        keys = launch_keys(self.arg_counts)
        measured = [r for r in records if r["measured"] and r.get("variant")]
        names = [r["variant"] for r in measured]
        reference = names[0]
        stat_recs, delta_recs = analysis.analyze(out.samples, names, reference, self.arg_counts)
        by = analysis.group_rounds(out.samples, keys)
        for d in delta_recs:  # asv's own test reads 99 % intervals
            ref_l, var_l = analysis.paired_rounds(by, reference, d["variant"], d["nargs"])
            d["ci99_us"] = stats.paired_median_delta(ref_l, var_l, 0.99)["ci_us"]
        step_recs = steps(by, records, keys, self.opts.threshold)
        for r in measured:  # where each commit's CUDA module came from (checked: workerproc.import_mismatch)
            r["cuda_module_file"] = out.infos.get(r["variant"], {}).get("cuda_module_file")
        info = out.infos.get(reference, {})
        return {
            "schema": f"{SCHEMA}/{SCHEMA_VERSION}", "schema_version": SCHEMA_VERSION, "command": command_line(),
            "child_env": childenv.record(),
            "kind": command,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "simulator": bool(self.opts.simulator), "measurement": not self.opts.simulator,
            "label": ("CUDA simulator smoke run: NOT A MEASUREMENT" if self.opts.simulator
                      else "per-commit launch overhead on a GPU"),
            "host": device.host_info(), "device": info.get("device") or {"name": None},
            "installed": info.get("installed"), "clone": self.clone, "range": rng,
            "settings": {**settings(self.opts, self.arg_counts, prefetch, self.affinity, rounds),
                         "cuda_connections": self.connections},
            "reference": reference, "commits": records, "samples": out.samples,
            "partial_samples": out.partial_samples, "stats": stat_recs, "deltas": delta_recs,
            "level": levels(by, reference, keys), "steps": step_recs,
            "culprits": culprits(step_recs), "method": stats.method(self.opts.spawn),
            "rounds_planned": rounds, "rounds_completed": out.rounds_completed,
            "interrupted": out.interrupted, "interrupt_reason": out.reason, "stopped": out.stopped,
            "timing": timing_json(out.timing),
            **({"lanes": lanes_mod.report(out, names, reference, self.arg_counts, self.connections)}
               if self.lane_setup.lanes else {}),
            **({"counts": counts_section(records, counts, self.arg_counts, step_recs, self.count_seconds)}
               if counts is not None else {}),
        }


def counts_section(records: list, counts: dict, arg_counts: list, step_recs: list, seconds: float) -> dict:
    """The JSON's ``counts``: per commit its per-launch totals, per measured commit its counts
    step (exact, per function), and per timed step how the two read together."""
    csteps = commitcounts.steps(records, counts, arg_counts)
    by_commit = {s["commit"]: s for s in csteps}
    for s in step_recs:  # the timing step's reading beside its counts step
        c = by_commit.get(s["commit"])
        d = (c or {}).get("per_nargs", {}).get(str(s["nargs"]))
        s["counts_reading"] = visibility(d, s["established"]) if c and "error" not in c else None
    return {"per_commit": commitcounts.per_launch(counts, arg_counts), "steps": csteps,
            "moved": [s["commit"] for s in csteps if s.get("moved")], "seconds": round(seconds, 1),
            "processes": len(counts), "method": "one fresh process per commit, before any timing; exact"}


def command_line() -> list:
    prog = os.path.basename(sys.argv[0])
    return ["launchbench"] + sys.argv[1:] if prog in ("launchbench", "__main__.py") else list(sys.argv)
