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

import os
import sys
import time

from ..base import device, outputs
from ..base import signals
from ..base.atomic import write_json_atomic
from ..base.errors import UserError
from ..base import options as opt
from ..base.options import parse_counts
from ..engine import lanes as lanes_mod
from ..workloads.argkinds import MAX_ARGS as MAX_KERNEL_ARGS
from ..engine.history import (SCHEMA, SCHEMA_VERSION, Session, add_clone_argument, add_common_arguments,
                              command_line)
from ..environments import builds
from ..environments.commits import CommitEnvs, check_clone, commit_records
from ..environments.variant_options import check_env_options
from ..output import asvresults
from ..output.history import export, render, render_bisect

DEFAULT_ROUNDS = 30
DEFAULT_POINTS = 5
DEFAULT_STAGE_ROUNDS = 16
WRITE_EVERY_S = 3.0


# ---------------------------------------------------------------- options

def register(sub) -> None:
    p = sub.add_parser("history", help="launch cost of every commit of a range, with each commit's step and CI",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    add_clone_argument(p)
    p.add_argument("range", metavar="A..B", help="first-parent commits after A up to B; A is the reference")
    p.add_argument("--rounds", type=opt.ROUNDS_FOR_CI, default=DEFAULT_ROUNDS, help=f"rounds of fresh processes (default {DEFAULT_ROUNDS})")
    p.add_argument("--aa", type=opt.AA_COMMITS, default=1, metavar="N",
                   help="also measure the first N commits whose code equals their predecessor's (A/A check; default 1)")
    p.add_argument("--asv-results", metavar="DIR", help="also write the per-commit values as asv results into DIR")
    p.add_argument("--no-report", action="store_true", help="write only the JSON and the table")
    add_common_arguments(p, "launchbench-history.json")
    p.set_defaults(func=run_history)
    b = sub.add_parser("bisect", help="find the commit whose step in launch cost exceeds --threshold",
                       description=__doc__.split("\n\n")[3].replace("\n", " "))
    add_clone_argument(b)
    b.add_argument("good", help="a commit with the old cost")
    b.add_argument("bad", help="a later commit (first-parent descendant) with the new cost")
    b.add_argument("--points", type=opt.POINTS, default=DEFAULT_POINTS,
                   help=f"commits measured together per stage, at least 3 (default {DEFAULT_POINTS})")
    b.add_argument("--rounds", type=opt.ROUNDS_FOR_CI, default=DEFAULT_STAGE_ROUNDS,
                   help=f"rounds per stage (default {DEFAULT_STAGE_ROUNDS}); an undecided last pair gets up to 3x")
    add_common_arguments(b, "launchbench-bisect.json")
    b.set_defaults(func=run_bisect)


def _writer(path: str):
    """Atomic, throttled JSON writes of a growing document (every finished round is kept)."""

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

    if args.rounds < 2:
        raise UserError("--rounds must be at least 2 (intervals are over rounds)")
    output = outputs.check_writable(args.output, "--output")
    check_env_options(args)
    if getattr(args, "asv_results", None) is not None:  # history's: refused now, not after the measuring
        outputs.check_folder(args.asv_results, "--asv-results")
    clone = check_clone(args.clone)
    session = Session(args, clone, parse_counts(args.args, "--args", MAX_KERNEL_ARGS), CommitEnvs)
    if not (args.simulator or args.target):  # no wheel built for numbers no GPU here can give
        device.refuse_without_gpu()
    return output, clone, session


def run_history(args) -> int:
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
        return 130 if signals.by_signal(out.reason) else 1
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
