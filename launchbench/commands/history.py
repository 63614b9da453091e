"""``launchbench history`` and ``launchbench bisect``: which commit changed the launch cost.

history: every first-parent commit of ``A..B`` in a numba-cuda clone is built
once into a wheel cached by SHA (builds.py), installed into its own env with
the pins of constraints.txt (envs.py), and all of them are measured together
by the engine (runner.py) as compare measures: fresh processes per round,
interleaved paired samples, intervals over rounds. Each commit gets its delta
vs the range's first commit and its *step* (paired delta vs the previous
measured commit) with a 95 % interval; a step is *established* when its
interval lies wholly beyond +/- ``--threshold``.

Commits whose runtime code is identical to their predecessor's (only tests,
CI, docs or the version string changed: builds.code_identity) are not
measured again: their step is zero by construction, and the report says so.
``--aa N`` still measures the first N of them, as an A/A check of the method
(their measured step must contain 0).

bisect: the same measurement in a k-ary search over the distinct builds:
each stage measures up to ``--points`` commits of the current segment
interleaved in one run, follows the largest step, and stops when one
commit's step is established against its predecessor.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from ..base.errors import UserError
from ..engine import lanes as lanes_mod
from ..engine.runner import timing_json

DEFAULT_THRESHOLD_US = 0.2
DEFAULT_ROUNDS = 30
DEFAULT_REPEATS = 10
DEFAULT_POINTS = 5
DEFAULT_STAGE_ROUNDS = 16
SCHEMA = "launchbench.history"
SCHEMA_VERSION = 1
WRITE_EVERY_S = 3.0


# ---------------------------------------------------------------- options

def _clone_arg(p) -> None:
    p.add_argument("clone", help="a local numba-cuda clone (git)")


def _common(p, default_output: str | None) -> None:
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
    m.add_argument("--args", default="0,1,2,3,4", help="kernel argument counts (default 0,1,2,3,4)")
    m.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                   help=f"samples per commit, arg count and round (default {DEFAULT_REPEATS})")
    m.add_argument("--sample-time", type=float, default=0.004, help="seconds per sample (default 0.004)")
    m.add_argument("--warmup", type=int, default=1000, help="launches per arg count before timing (default 1000)")
    m.add_argument("--affinity", metavar="CPUS", default="auto", help="measuring CPU(s) (default: the highest)")
    m.add_argument("--prefetch", default="auto", help="rounds set up ahead (default auto)")
    m.add_argument("--gpus", metavar="IDS", default=None,
                   help="spread the rounds over these GPUs (e.g. 0,1 or 'all'), one lane each with its own "
                        "CPUs; rounds pool, lanes are checked against each other (default: one GPU)")
    m.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD_US,
                   help=f"a step counts when its 95%% interval lies wholly beyond +/- this many us (default {DEFAULT_THRESHOLD_US})")
    m.add_argument("--max-time", type=float, default=None, help="cap on seconds of measurement (no new round after it)")
    m.add_argument("--simulator", action="store_true", help="smoke mode under the CUDA simulator; NOT a measurement")
    m.add_argument("--target", metavar="MODULE:FUNC", help=argparse.SUPPRESS)  # time a Python callable per commit (tests on CPU)
    o = p.add_argument_group("output")
    if default_output:
        o.add_argument("--output", "-o", default=default_output, help=f"JSON results (default {default_output})")
    o.add_argument("--quiet", action="store_true", help="no progress output")


def register(sub) -> None:
    p = sub.add_parser("history", help="launch cost of every commit of a range, with each commit's step and CI",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    _clone_arg(p)
    p.add_argument("range", metavar="A..B", help="first-parent commits after A up to B; A is the reference")
    p.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS, help=f"rounds of fresh processes (default {DEFAULT_ROUNDS})")
    p.add_argument("--aa", type=int, default=1, metavar="N",
                   help="also measure the first N commits whose code equals their predecessor's (A/A check; default 1)")
    p.add_argument("--asv-results", metavar="DIR", help="also write the per-commit values as asv results into DIR")
    p.add_argument("--no-report", action="store_true", help="write only the JSON and the table")
    _common(p, "launchbench-history.json")
    p.set_defaults(func=run_history)
    b = sub.add_parser("bisect", help="find the commit whose step in launch cost exceeds --threshold",
                       description=__doc__.split("\n\n")[3].replace("\n", " "))
    _clone_arg(b)
    b.add_argument("good", help="a commit with the old cost")
    b.add_argument("bad", help="a later commit (first-parent descendant) with the new cost")
    b.add_argument("--points", type=int, default=DEFAULT_POINTS,
                   help=f"commits measured together per stage, at least 3 (default {DEFAULT_POINTS})")
    b.add_argument("--rounds", type=int, default=DEFAULT_STAGE_ROUNDS,
                   help=f"rounds per stage (default {DEFAULT_STAGE_ROUNDS}); an undecided last pair gets up to 3x")
    _common(b, "launchbench-bisect.json")
    b.set_defaults(func=run_bisect)


# ---------------------------------------------------------------- commits (pure given git)

def variant_name(commit) -> str:
    return "g" + commit.sha[:9]


def commit_records(clone: str, commits: list, aa: int = 0, identity=None) -> list[dict]:
    """One record per commit: its code identity, the measured commit whose code it shares
    (``identical_to``), and whether it is measured (the first, every code change, and the
    first *aa* identical ones as A/A checks)."""
    if identity is None:
        from ..environments import builds

        def identity(sha):
            return builds.code_identity(clone, sha)
    records, group_head, prev_id, aa_left = [], None, None, aa
    for i, c in enumerate(commits):
        ident = identity(c.sha)
        same = i > 0 and ident == prev_id
        rec = {"sha": c.sha, "short": c.short, "subject": c.subject, "date": c.date, "code_identity": ident,
               "identical_to": group_head if same else None, "measured": not same, "aa": False,
               "variant": None, "wheel": None, "build": None}
        if same and aa_left > 0:
            rec["measured"], rec["aa"] = True, True
            aa_left -= 1
        if not same:
            group_head = c.sha
        prev_id = ident
        records.append(rec)
    return records


# ---------------------------------------------------------------- statistics (pure)

def steps(by: dict, records: list, keys: list, threshold: float, confidence: float = 0.95) -> list:
    """Each measured commit's paired delta vs the previous measured commit, per sample key
    (*by*: ``analysis.group_rounds`` of the samples)."""
    from ..engine import analysis, stats
    from ..engine.runner import key_id

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
    import statistics as st

    from ..engine import stats
    from ..engine.runner import key_id

    out = []
    for key in keys:
        rounds = by.get((reference, key_id(key)), {})
        meds = [st.median(v) for _r, v in sorted(rounds.items())]
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

def _settings(args, arg_counts, prefetch, affinity, rounds) -> dict:
    return {"arg_counts": arg_counts, "repeats": args.repeats, "rounds": rounds, "warmup": args.warmup,
            "sample_target_s": args.sample_time, "affinity": affinity, "prefetch": prefetch,
            "threshold_us": args.threshold, "launch": "[1, 1]", "gc_disabled": True,
            "target": args.target, "max_time": args.max_time,
            "order": "compare's: fresh workers per round, interleaved samples, paired by repeat slot"}


class Session:
    """What history and bisect share: the clone, the wheel cache, the env manager, the engine."""

    def __init__(self, args, clone: str):
        from ..environments import builds, envs, variants
        from ..engine import runner

        self.args = args
        self.clone = clone
        self.say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.arg_counts = variants.parse_int_list(args.args, "--args")
        if args.repeats < 1:
            raise UserError("--repeats must be at least 1")
        if args.sample_time <= 0:
            raise UserError("--sample-time must be positive, e.g. 0.004")
        if args.threshold < 0:
            raise UserError("--threshold must be >= 0 us, e.g. 0.2")
        gpus = lanes_mod.parse_gpus(args.gpus, lanes_mod.visible_gpus())
        self.lanes = lanes_mod.plan_lanes(gpus, args.affinity) if gpus else None
        self.affinity = self.lanes[0].affinity if self.lanes else runner.parse_affinity(args.affinity)
        python = args.python or sys.executable
        pins = {} if args.target else variants.parse_pins(args.constraints)
        extras = args.extras if args.extras is not None else (
            "" if (args.system_site_packages or args.target) else "cu13")
        self.cache = builds.WheelCache(cache_dir=args.wheel_cache, python=python, wheels=args.wheels,
                                       pins={} if args.target else pins, log=self.say)
        self.manager = envs.EnvManager(env_dir=args.env_dir, python=python, pins=pins, wheels=args.wheels,
                                       site_from=python if args.system_site_packages else None, extras=extras,
                                       log=self.say)
        self.gpu_seconds = 0.0

    def build(self, records: list) -> None:
        """Wheel and env of every measured commit; a failed build is reported and skipped."""
        from ..base import outputs
        from ..environments import builds, envs
        from ..environments.variants import Base

        if any(rec["measured"] and not self.cache.path_for(rec["sha"]) for rec in records):
            # a wheel to build, so an env too: both folders refused before the first build, not in it
            outputs.check_folder(self.cache.cache_dir, "--wheel-cache")
            outputs.check_folder(self.manager.env_dir, "--env-dir")
        for rec in records:
            if not rec["measured"]:
                continue
            commit = builds.Commit(rec["sha"], rec["short"], rec["subject"], rec["date"])
            try:
                wheel = self.cache.build(self.clone, commit)
            except builds.BuildFailed as exc:
                rec.update(measured=False, build={"ok": False, "error": exc.message, "log": exc.log_path})
                self.say(f"launchbench: {rec['short']} does not build ({exc.message}); skipped. Log: {exc.log_path}")
                continue
            env = self.manager.ensure(Base("wheelfile", wheel), variant_name(commit))
            envs.check_python_matches(env, variant_name(commit))
            rec.update(wheel=wheel, variant=variant_name(commit), build={"ok": True}, python=env.python,
                       env=env.path)

    def measure(self, records: list, rounds: int, log_dir: str, on_round=None, stop=None):
        """One engine run over the measured commits (the first is the reference)."""
        from ..environments import envs
        from ..engine import runner

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
            affinity=self.affinity, peers=False, overlay=envs.make_overlay(os.path.join(log_dir, "overlay")),
            log_dir=log_dir, prefetch=prefetch, setup_cpus=runner.setup_cpus(self.affinity), setup=setup,
            stop=stop, max_time=self.args.max_time)
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

    def document(self, records: list, out, rng: str, prefetch: int, rounds: int, command: str) -> dict:
        from ..engine import analysis, stats
        from ..base import device
        from ..engine.runner import launch_keys

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
            "settings": _settings(self.args, self.arg_counts, prefetch, self.affinity, rounds),
            "reference": reference, "commits": records, "samples": out.samples,
            "partial_samples": out.partial_samples, "stats": stat_recs, "deltas": delta_recs,
            "level": levels(by, reference, keys), "steps": step_recs,
            "culprits": culprits(step_recs), "method": stats.METHOD,
            "rounds_planned": rounds, "rounds_completed": out.rounds_completed,
            "interrupted": out.interrupted, "interrupt_reason": out.reason, "stopped": out.stopped,
            "timing": timing_json(out.timing),
            **({"lanes": lanes_mod.report(out, names, reference, self.arg_counts)} if self.lanes else {}),
        }


def command_line() -> list:
    prog = os.path.basename(sys.argv[0])
    return ["launchbench"] + sys.argv[1:] if prog in ("launchbench", "__main__.py") else list(sys.argv)


def _clone(path: str) -> str:
    real = os.path.realpath(os.path.expanduser(path))
    if not os.path.isdir(real):
        raise UserError(f"clone {path} does not exist; pass the path of a local numba-cuda git clone")
    return real


def _writer(path: str):
    """Atomic, throttled JSON writes of a growing document (every finished round is kept)."""
    from ..base.atomic import write_json_atomic

    last = [0.0]

    def write(doc, force: bool = False) -> None:
        """*doc*: the document, or a callable making it (made only when it is written)."""
        if force or time.monotonic() - last[0] >= WRITE_EVERY_S:
            write_json_atomic(path, doc() if callable(doc) else doc)
            last[0] = time.monotonic()
    return write


# ---------------------------------------------------------------- history

def _start(args):
    """What history and bisect check before any build: rounds, the output path, the clone."""
    from ..base import outputs

    if args.rounds < 2:
        raise UserError("--rounds must be at least 2 (intervals are over rounds)")
    output = outputs.check_writable(args.output, "--output")
    if getattr(args, "asv_results", None):  # history's: refused now, not after the measuring
        outputs.check_folder(args.asv_results, "--asv-results")
    clone = _clone(args.clone)
    return output, clone, Session(args, clone)


def run_history(args) -> int:
    from ..environments import builds

    a, b = builds.parse_range(args.range)
    if args.aa < 0:
        raise UserError("--aa must be >= 0")
    output, clone, session = _start(args)
    commits = builds.first_parent_commits(clone, a, b)
    records = commit_records(clone, commits, args.aa)
    n_meas = sum(r["measured"] for r in records)
    session.say(f"launchbench: {len(records)} commits in {args.range}; {n_meas} to measure "
                f"({len(records) - n_meas} share their predecessor's code)")
    session.build(records)
    write = _writer(output)
    log_dir = os.path.splitext(output)[0] + ".logs"
    state = {}

    def on_round(out) -> None:
        write(lambda: session.document(records, out, args.range, state.get("prefetch", 0), args.rounds, "history"))

    out, state["prefetch"] = session.measure(records, args.rounds, log_dir, on_round=on_round)
    doc = session.document(records, out, args.range, state["prefetch"], args.rounds, "history")
    write(doc, force=True)
    written = [output]
    if args.asv_results:
        from ..output import asvresults

        written += asvresults.write_history(args.asv_results, doc)
    print(render(doc), end="")
    print(lanes_mod.render(doc.get("lanes")), end="")
    if not args.no_report:
        written += export(doc, output)
    session.say("launchbench: wrote " + ", ".join(written))
    return _exit(out, args.rounds)


def _exit(out, planned: int) -> int:
    if out.interrupted:
        print(f"launchbench: interrupted after {out.rounds_completed} of {planned} rounds ({out.reason}); "
              "the results keep the completed rounds", file=sys.stderr)
        return 130 if out.reason == "KeyboardInterrupt" else 1
    return 0


# ---------------------------------------------------------------- bisect

def stage_points(lo: int, hi: int, k: int) -> list:
    """Up to *k* indices from lo to hi inclusive, both ends included, evenly spread."""
    n = hi - lo + 1
    k = max(k, 3)  # two points cannot split a segment: the search would never shrink it
    if n <= k:
        return list(range(lo, hi + 1))
    return sorted({lo + round(i * (n - 1) / (k - 1)) for i in range(k)})


def pick_segment(points: list, step_by_point: dict) -> tuple[int, int] | None:
    """The segment (previous point, point) to follow: the one whose step is most clearly
    beyond 0 (largest |lower bound| over keys, sign-aware); None when no step is significant."""
    best, best_score = None, 0.0
    for prev, cur in zip(points, points[1:]):
        for s in step_by_point.get(cur, []):
            lo, hi = s["ci_us"]
            score = lo if lo > 0 else (-hi if hi < 0 else 0.0)
            if score > best_score:
                best, best_score = (prev, cur), score
    return best


def run_bisect(args) -> int:
    from ..environments import builds

    if args.points < 3:
        raise UserError("--points must be at least 3 (both ends and one commit between them)")
    output, clone, session = _start(args)
    good, bad = builds.resolve(clone, args.good), builds.resolve(clone, args.bad)
    commits = builds.first_parent_commits(clone, good.sha, bad.sha)
    records = commit_records(clone, commits, 0)
    distinct = [r for r in records if r["measured"]]
    session.say(f"launchbench: bisect over {len(records)} commits, {len(distinct)} distinct builds "
                f"({good.short}..{bad.short})")
    write = _writer(output)
    log_root = os.path.splitext(output)[0] + ".logs"
    stages: list = []
    doc = {"schema": f"{SCHEMA}-bisect/{SCHEMA_VERSION}", "kind": "bisect", "command": command_line(),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "simulator": bool(args.simulator),
           "clone": clone, "good": good.sha, "bad": bad.sha, "threshold_us": args.threshold,
           "commits": records, "stages": stages, "culprit": None}
    lo, hi, rounds, found = 0, len(distinct) - 1, args.rounds, None
    while True:
        points = stage_points(lo, hi, args.points)
        subset = [dict(distinct[i]) for i in points]
        session.build(subset)
        for i, rec in zip(points, subset):
            distinct[i].update({k: rec[k] for k in ("wheel", "variant", "build", "measured")})
        label = f"stage {len(stages) + 1}: " + " ".join(r["short"] for r in subset)
        session.say(f"launchbench: {label} ({rounds} rounds)")
        out, prefetch = session.measure(subset, rounds, os.path.join(log_root, f"stage{len(stages) + 1}"))
        sdoc = session.document(subset, out, f"{subset[0]['sha']}..{subset[-1]['sha']}", prefetch, rounds, "bisect")
        stages.append({"points": [r["sha"] for r in subset], "rounds": out.rounds_completed,
                       "steps": sdoc["steps"], "deltas": sdoc["deltas"], "level": sdoc["level"],
                       "timing": sdoc["timing"], "device": sdoc["device"], "samples": sdoc["samples"]})
        doc["device"] = sdoc["device"]
        doc["gpu_seconds"] = round(session.gpu_seconds, 1)
        write(doc, force=True)
        if out.interrupted:
            break
        by_point = {}
        for s in sdoc["steps"]:
            by_point.setdefault(s["commit"], []).append(s)
        seg = pick_segment([r["sha"] for r in subset], by_point)
        if seg is None:
            if len(points) == 2 and rounds < 3 * args.rounds:
                rounds = min(3 * args.rounds, rounds * 2)  # an undecided last pair: more rounds
                continue
            doc["result"] = "no significant step between the measured points"
            break
        ia = next(i for i in points if distinct[i]["sha"] == seg[0])
        ib = next(i for i in points if distinct[i]["sha"] == seg[1])
        if ib - ia == 1:
            step = list(by_point[seg[1]])
            if any(s["established"] for s in step):
                found = distinct[ib]
                doc["culprit"] = {"sha": found["sha"], "short": found["short"], "subject": found["subject"],
                                  "previous": distinct[ia]["sha"], "steps": step}
                doc["result"] = "found"
                break
            if rounds >= 3 * args.rounds:
                doc["result"] = "step significant but not beyond the threshold at the round cap"
                break
            lo, hi, rounds = ia, ib, min(3 * args.rounds, rounds * 2)
            continue
        lo, hi = ia, ib
    doc["gpu_seconds"] = round(session.gpu_seconds, 1)
    write(doc, force=True)
    print(render_bisect(doc), end="")
    session.say(f"launchbench: wrote {output}")
    return 0 if found else 1


# ---------------------------------------------------------------- rendering

def _ci(d: dict) -> str:
    return f"{d['delta_us']:+.2f} [{d['ci_us'][0]:+.2f}, {d['ci_us'][1]:+.2f}]"


def render(doc: dict, markdown: bool = False) -> str:
    """Per commit: step vs the previous measured commit per arg count (us, 95 % CI)."""
    counts = doc["settings"]["arg_counts"]
    steps_by = {(s["commit"], s["nargs"]): s for s in doc["steps"]}
    deltas_by = {(d["variant"], d["nargs"]): d for d in doc["deltas"]}
    head = ["commit", "subject"] + [f"step {n} args (us)" for n in counts] + ["vs first, 0..max args (us)"]
    rows = []
    for rec in doc["commits"]:
        subject = rec["subject"][:44]
        if rec.get("build") and not rec["build"].get("ok"):
            cells = ["build failed"] + [""] * len(counts) + [""]
        elif not rec["measured"] and rec.get("identical_to"):
            cells = ["0 (same code as g" + rec["identical_to"][:8] + ")"] + [""] * (len(counts) - 1) + [""]
        elif rec.get("variant") == doc["reference"]:
            cells = ["reference"] + [""] * (len(counts) - 1) + [""]
        else:
            cells = []
            for n in counts:
                s = steps_by.get((rec["sha"], n))
                mark = " <==" if s and s["established"] else (" *" if s and s["significant"] else "")
                cells.append(_ci(s) + mark if s else "")
            ds = [deltas_by.get((rec.get("variant"), n)) for n in counts]
            cells.append(" ".join(f"{d['delta_us']:+.2f}" for d in ds if d))
        if rec.get("aa"):
            subject = "(A/A) " + subject
        rows.append(["g" + rec["sha"][:8], subject] + cells)
    title = (f"Per-commit launch overhead, {doc['range']}: {doc['rounds_completed']} rounds; step = paired delta vs "
             f"the previous measured commit, 95% CI; <== established beyond +/-{doc['settings']['threshold_us']} us, "
             "* CI excludes 0")
    if doc.get("simulator"):
        title = "CUDA SIMULATOR SMOKE RUN -- NOT A MEASUREMENT\n" + title
    cul = doc.get("culprits") or []
    foot = ("Commits carrying an established step: " + ", ".join("g" + c[:8] for c in cul)) if cul else \
        "No commit carries an established step."
    if markdown:
        lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines + ["", foot, ""])
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([title, fmt(head)] + [fmt(r) for r in rows] + [foot, ""])


def render_bisect(doc: dict) -> str:
    lines = []
    if doc.get("simulator"):
        lines.append("CUDA SIMULATOR SMOKE RUN -- NOT A MEASUREMENT")
    for i, st in enumerate(doc["stages"], 1):
        steps_txt = "; ".join(f"g{s['commit'][:8]} {s['nargs']}a {_ci(s)}" for s in st["steps"] if s["nargs"] == st["steps"][0]["nargs"])
        lines.append(f"stage {i}: {len(st['points'])} commits, {st['rounds']} rounds, "
                     f"{st['timing'].get('wall_s', 0):.0f} s; steps at {st['steps'][0]['nargs'] if st['steps'] else '-'} args: {steps_txt}")
    c = doc.get("culprit")
    if c:
        lines.append(f"culprit: g{c['sha'][:8]} {c['subject']}")
        lines.append("  step vs g" + c["previous"][:8] + ": " + ", ".join(f"{s['nargs']} args {_ci(s)} us" for s in c["steps"]))
    else:
        lines.append(f"no culprit: {doc.get('result', 'interrupted')}")
    lines.append(f"measurement wall time: {doc.get('gpu_seconds', 0):.0f} s over {len(doc['stages'])} stages")
    return "\n".join(lines) + "\n"


def export(doc: dict, output: str) -> list:
    """Markdown table and a plot of delta vs commit next to the JSON."""
    from ..base.atomic import write_text_atomic

    stem = output[:-len(".json.gz")] if output.endswith(".json.gz") else os.path.splitext(output)[0]
    md = write_text_atomic(stem + ".md", render(doc, markdown=True))
    written = [md]
    try:
        written.append(plot(doc, stem + ".png"))
    except ImportError:
        pass
    return written


def plot(doc: dict, path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = doc["settings"]["arg_counts"]
    deltas_by = {(d["variant"], d["nargs"]): d for d in doc["deltas"]}
    recs = doc["commits"]
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(recs) + 3), 4.5))
    xs = list(range(len(recs)))
    for n in counts:
        ys, lo, hi, last = [], [], [], (0.0, 0.0, 0.0)
        for rec in recs:
            name = rec.get("variant")
            if rec["measured"] and name:
                d = deltas_by.get((name, n))
                last = (0.0, 0.0, 0.0) if name == doc["reference"] or d is None else (d["delta_us"], *d["ci_us"])
            ys.append(last[0]), lo.append(last[0] - last[1]), hi.append(last[2] - last[0])
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2, label=f"{n} args", drawstyle="steps-mid")
    ax.set_xticks(xs)
    ax.set_xticklabels([r["sha"][:8] for r in recs], rotation=70, fontsize=7)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel(f"launch time vs {recs[0]['sha'][:8]} (us, 95% CI)")
    ax.set_title(("SIMULATOR SMOKE -- " if doc.get("simulator") else "") + f"launch overhead per commit, {doc['range']}")
    for c in doc.get("culprits") or []:
        i = next(i for i, r in enumerate(recs) if r["sha"] == c)
        ax.axvline(i, color="red", lw=0.8, ls="--")
    ax.legend(fontsize=7)
    fig.tight_layout()
    import io

    from ..base.atomic import write_bytes_atomic

    buf = io.BytesIO()  # rendered first, then written whole: a full disk leaves no half PNG
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return write_bytes_atomic(path, buf.getvalue())
