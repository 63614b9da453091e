"""What history, bisect and pr share: their options, one engine run over per-commit environments
(``Session``), and the per-commit statistics (steps, levels, culprits).

Each measured commit is a variant of the one engine (``runner.run``, or ``lanes.run`` with
``--gpus``), measured as compare measures: fresh processes per round, interleaved paired samples,
intervals over rounds. A commit's *step* is its paired delta vs the previous measured commit; it
is *established* when its interval lies wholly beyond +/- ``--threshold``. The wheels and
environments come from ``environments.commits`` (the command hands them in).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from ..base import device
from ..base.errors import UserError
from ..base import options as opt
from ..base.options import counts_help
from ..workloads.argkinds import MAX_ARGS as MAX_KERNEL_ARGS
from . import analysis, commitcounts, runner, stats
from . import lanes as lanes_mod
from .countdiff import visibility
from .runner import key_id, launch_keys, timing_json

DEFAULT_THRESHOLD_US = 0.2
DEFAULT_REPEATS = 10
#: history's schema id and version (history, and the measurement inside bisect's and pr's documents);
#: output/documents.py's "history" and "bisect" kinds read them from here (the engine sits below output/)
SCHEMA = "launchbench.history"
SCHEMA_VERSION = 1


# ---------------------------------------------------------------- options

def add_clone_argument(p) -> None:
    p.add_argument("clone", help="a local numba-cuda clone (git)")


def add_common_arguments(p, default_output: str | None) -> None:
    """The build, env and measurement options history, bisect and pr share (no --output when
    *default_output* is None: pr writes a folder)."""
    e = p.add_argument_group("builds and environments")
    e.add_argument("--wheel-cache", metavar="DIR",
                   help="where per-commit wheels are cached by SHA (default ~/.cache/launchbench/wheels)")
    e.add_argument("--env-dir", help="where per-commit envs are cached (default ~/.cache/launchbench/envs)")
    e.add_argument("--python", help="interpreter that builds the wheels and the envs (default: this one)")
    e.add_argument("--wheels", metavar="DIR", help="offline: build and install from DIR (pip --no-index --find-links DIR)")
    e.add_argument("--system-site-packages", action="store_true",
                   help="envs also see the site-packages of --python (after their own)")
    e.add_argument("--constraints", metavar="FILE", help="pins for the envs (default: constraints.txt's)")
    e.add_argument("--extras", default=None, help="numba-cuda extras (default cu13, none with --system-site-packages)")
    m = p.add_argument_group("measurement (compare's method)")
    m.add_argument("--args", default="0,1,2,3,4", help=counts_help(MAX_KERNEL_ARGS))
    m.add_argument("--repeats", type=opt.REPEATS, default=DEFAULT_REPEATS,
                   help=f"samples per commit, arg count and round (default {DEFAULT_REPEATS})")
    m.add_argument("--sample-time", type=opt.SAMPLE_TIME, default=0.004, help="seconds per sample (default 0.004)")
    m.add_argument("--warmup", type=opt.WARMUP, default=1000, help="launches per arg count before timing (default 1000)")
    m.add_argument("--affinity", metavar="CPUS", default="auto", help="measuring CPU(s) (default: the highest)")
    m.add_argument("--prefetch", type=opt.PREFETCH, default="auto", help="rounds set up ahead (default auto)")
    opt.add_spawn_options(m)
    m.add_argument("--gpus", metavar="IDS", default=None,
                   help="spread the rounds over these GPUs (e.g. 0,1 or 'all'), one lane each with its own "
                        "CPUs; rounds pool, lanes are checked against each other (default: one GPU)")
    m.add_argument("--threshold", type=opt.THRESHOLD_US, default=DEFAULT_THRESHOLD_US,
                   help=f"a step counts when its 95%% interval lies wholly beyond +/- this many us (default {DEFAULT_THRESHOLD_US})")
    m.add_argument("--max-time", type=opt.MAX_TIME, default=None, help="cap on seconds of measurement (no new round after it)")
    m.add_argument("--simulator", action="store_true", help="smoke mode under the CUDA simulator; NOT a measurement")
    m.add_argument("--target", metavar="MODULE:FUNC", help=argparse.SUPPRESS)  # time a Python callable per commit (tests on CPU)
    o = p.add_argument_group("output")
    if default_output:
        o.add_argument("--output", "-o", default=default_output, help=f"JSON results (default {default_output})")
    o.add_argument("--quiet", action="store_true", help="no progress output")


def add_counts_arguments(p) -> None:
    """history's and bisect's counts pass (one short process per commit, before any timing)."""
    c = p.add_argument_group("counts (exact Python-level counts per commit, before any timing)")
    c.add_argument("--no-counts", dest="counts", action="store_false",
                   help="skip the counts pass: timing only")
    c.add_argument("--count-jobs", type=opt.COUNT_JOBS, default=None, metavar="N",
                   help=f"counting processes at once (default: half the CPUs, 1 to {commitcounts.MAX_JOBS})")


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

def settings(args, arg_counts, prefetch, affinity, rounds) -> dict:
    return {"arg_counts": arg_counts, "repeats": args.repeats, "rounds": rounds, "warmup": args.warmup,
            "sample_target_s": args.sample_time, "affinity": affinity, "prefetch": prefetch,
            "threshold_us": args.threshold, "launch": "[1, 1]", "gc_disabled": True,
            "target": args.target, "max_time": args.max_time, "spawn": args.spawn,
            **({"fork_rounds": args.fork_rounds} if args.spawn == "fork" else {}),
            "order": "compare's: " + ("fresh workers" if args.spawn == "fresh" else "workers forked from zygotes") +
                     " per round, interleaved samples, paired by repeat slot"}


class Session:
    """What history and bisect share: the clone, the wheel cache, the env manager, the engine."""

    def __init__(self, args, clone: str, arg_counts: list, make_envs):
        """*arg_counts*: the parsed --args; *make_envs*: (args, say) -> the per-commit wheels and
        environments (``environments.commits.CommitEnvs``: the command hands it in)."""
        self.args = args
        self.clone = clone
        self.say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.arg_counts = arg_counts
        if args.repeats < 1:
            raise UserError("--repeats must be at least 1")
        if args.sample_time <= 0:
            raise UserError("--sample-time must be positive, e.g. 0.004")
        if args.threshold < 0:
            raise UserError("--threshold must be >= 0 us, e.g. 0.2")
        if args.warmup < 0:
            raise UserError(f"--warmup must be >= 0 launches (got {args.warmup})")
        if args.max_time is not None and not args.max_time >= 0:
            raise UserError("--max-time must be a number of seconds >= 0, e.g. 600 (0: no cap)")
        visible = lanes_mod.visible_gpus()
        device.check_gpu_lanes(args.gpus, visible, args.simulator or bool(args.target))
        gpus = lanes_mod.parse_gpus(args.gpus, visible)
        self.lanes = lanes_mod.plan_lanes(gpus, args.affinity) if gpus else None
        self.affinity = self.lanes[0].affinity if self.lanes else runner.parse_affinity(args.affinity)
        runner.parse_prefetch(args.prefetch, 2, self.affinity)  # its syntax now; the count once builds are known
        self.envs = make_envs(args, self.say)
        self.cache = self.envs.cache
        self.gpu_seconds = 0.0
        self.count_seconds = 0.0
        jobs = getattr(args, "count_jobs", None)
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
        setup = {"target": self.args.target} if self.args.target else {}
        got = commitcounts.count_commits(todo, self.arg_counts, self.envs.make_overlay(os.path.join(log_dir, "overlay")),
                                      log_dir, simulator=self.args.simulator, setup=setup, jobs=self.count_jobs)
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
        prefetch = runner.parse_prefetch(self.args.prefetch, len(measured), self.affinity)
        os.makedirs(log_dir, exist_ok=True)
        setup = {"target": self.args.target} if self.args.target else {}
        plan = runner.Plan(
            variants=[(r["variant"], r["python"], None) for r in measured], reference=measured[0]["variant"],
            arg_counts=self.arg_counts, loops=None, repeats=self.args.repeats, rounds=rounds,
            warmup=self.args.warmup, sample_target_s=self.args.sample_time, simulator=self.args.simulator,
            affinity=self.affinity, peers=False, overlay=self.envs.make_overlay(os.path.join(log_dir, "overlay")),
            log_dir=log_dir, prefetch=prefetch, setup_cpus=runner.setup_cpus(self.affinity), setup=setup,
            stop=stop, max_time=self.args.max_time if max_time is None else max_time, count_rounds=count_rounds,
            spawn=self.args.spawn, fork_rounds=self.args.fork_rounds)
        total = rounds * self.args.repeats * len(self.arg_counts) * len(measured)
        progress = runner.Progress(total, enabled=not self.args.quiet)
        if self.args.simulator:
            progress.line("launchbench: CUDA SIMULATOR smoke run -- the numbers are NOT a measurement")
        if self.lanes:
            out = lanes_mod.run(plan, self.lanes, progress, on_round=on_round)
        else:
            out = runner.run(plan, progress, on_round=on_round)
        runner.raise_setup_failure(out)
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
        step_recs = steps(by, records, keys, self.args.threshold)
        info = out.infos.get(reference, {})
        return {
            "schema": f"{SCHEMA}/{SCHEMA_VERSION}", "schema_version": SCHEMA_VERSION, "command": command_line(),
            "kind": command,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "simulator": bool(self.args.simulator), "measurement": not self.args.simulator,
            "label": ("CUDA simulator smoke run: NOT A MEASUREMENT" if self.args.simulator
                      else "per-commit launch overhead on a GPU"),
            "host": device.host_info(), "device": info.get("device") or {"name": None},
            "installed": info.get("installed"), "clone": self.clone, "range": rng,
            "settings": settings(self.args, self.arg_counts, prefetch, self.affinity, rounds),
            "reference": reference, "commits": records, "samples": out.samples,
            "partial_samples": out.partial_samples, "stats": stat_recs, "deltas": delta_recs,
            "level": levels(by, reference, keys), "steps": step_recs,
            "culprits": culprits(step_recs), "method": stats.method(self.args.spawn),
            "rounds_planned": rounds, "rounds_completed": out.rounds_completed,
            "interrupted": out.interrupted, "interrupt_reason": out.reason, "stopped": out.stopped,
            "timing": timing_json(out.timing),
            **({"lanes": lanes_mod.report(out, names, reference, self.arg_counts)} if self.lanes else {}),
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
