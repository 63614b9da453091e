"""``launchbench history`` and ``launchbench bisect``: which commit changed the launch cost.

history: every first-parent commit of ``A..B`` in a numba-cuda clone is built
once into a wheel cached by SHA (builds.py), installed into its own env with
the pins of constraints.txt (envs.py), and all of them are measured together
by the engine (runner.py) as compare measures: fresh processes per round,
interleaved paired samples, intervals over rounds. Each commit gets its delta
vs the range's first commit and its *step* (paired delta vs the previous
measured commit) with a 95 % interval; a step is *established* when its
interval lies wholly beyond +/- ``--threshold``. Before the timing, each
commit's launch is counted (bytecodes, calls) and its exact counts step shown.

Commits whose runtime code is identical to their predecessor's (only tests,
CI, docs or the version string changed: builds.code_identity) are not
measured again: their step is zero by construction, and the report says so.
``--aa N`` still measures the first N of them, as an A/A check of the method
(their measured step must contain 0).

bisect: counts first (one short process per commit, several at once): where
GOOD's and BAD's counts differ, the range is split on counts alone until each
place they move lies between neighbours; timing then measures GOOD, those
commits, the commits whose compiled sources changed (beside their
predecessors) and BAD, and where nothing points it searches k-ary. A stage
follows only a segment whose pooled step is established (its interval beyond
0, family-wise over the stage) in the GOOD -> BAD direction, rules out those
wholly short of --threshold, runs more rounds until one is established, and
says "undecided between A and B" when its rounds run out.
"""
from __future__ import annotations

import os
import sys
import time

from ..base import childenv, device, outpaths, signals
from ..base import options as opt
from ..base.atomic import write_json_atomic
from ..base.errors import UserError
from ..base.options import parse_counts
from ..engine import analysis, bisection, commitcounts, countdiff
from ..engine.countdiff import NOT_VISIBLE
from ..engine.history import Session, command_line
from ..engine.runplan import launch_keys
from ..environments import builds
from ..environments.commits import CommitEnvs, check_clone, commit_records
from ..environments.variant_options import check_env_options
from ..output import asvresults, documents
from ..output.history import export, render, render_bisect
from ..output.history import report_paths as history_report_paths
from ..output.lanes import render as render_lanes
from ..workloads.argkinds import MAX_ARGS as MAX_KERNEL_ARGS
from . import common_args as ca

DEFAULT_ROUNDS = 30
DEFAULT_POINTS = 5
DEFAULT_STAGE_ROUNDS = 32
WRITE_EVERY_S = 3.0


# ---------------------------------------------------------------- options

def register(sub) -> None:
    p = sub.add_parser("history", help="launch cost of every commit of a range, with each commit's step and CI",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    ca.add_clone(p)
    p.add_argument("range", metavar="A..B", help="first-parent commits after A up to B; A is the reference")
    ca.add_rounds(p, DEFAULT_ROUNDS, f"rounds of fresh processes (default {DEFAULT_ROUNDS})", for_ci=True)
    p.add_argument("--aa", type=opt.AA_COMMITS, default=1, metavar="N",
                   help="also measure the first N commits whose code equals their predecessor's (A/A check; default 1)")
    p.add_argument("--asv-results", metavar="DIR", help="also write the per-commit values as asv results into DIR")
    ca.add_no_report(p)
    ca.add_commit_options(p, "launchbench-history.json")
    ca.add_commit_counts(p)
    p.set_defaults(func=run_history)
    b = sub.add_parser("bisect", help="find the commit where launch cost steps in the GOOD -> BAD direction",
                       description=__doc__.split("\n\n")[3].replace("\n", " ") + " Exit status: 0 when a culprit "
                       "is found, 1 when the search ends undecided (or finds none), 2 for a usage error, 130/143/129 "
                       "when interrupted.")
    ca.add_clone(b)
    b.add_argument("good", help="a commit with the old cost")
    b.add_argument("bad", help="a later commit (first-parent descendant) with the new cost")
    b.add_argument("--points", type=opt.POINTS, default=DEFAULT_POINTS,
                   help=f"commits measured together per stage, at least 3 (default {DEFAULT_POINTS})")
    b.add_argument("--no-hints", dest="hints", action="store_false",
                   help="do not time the commits whose compiled sources (C, C++, CUDA, setup.py) changed first: "
                        "search by timing alone where counts are flat")
    ca.add_rounds(b, DEFAULT_STAGE_ROUNDS, f"rounds per timing stage (default {DEFAULT_STAGE_ROUNDS}): a stage ends once "
                                           "a step is established in the range's direction (or every one ruled out) "
                                           "and runs up to 3x this while undecided; --max-time caps all stages together",
                  for_ci=True)
    ca.add_commit_options(b, "launchbench-bisect.json")
    ca.add_commit_counts(b)
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
    reports = {}
    if not getattr(args, "no_report", True):  # history's Markdown and PNG, named as export names them
        reports = dict(zip(("markdown", "plot"), history_report_paths(args.output)))
    output = ca.plan_outputs(args, args.output, reports)
    env_opts = ca.env_options(args)
    check_env_options(env_opts)
    if getattr(args, "asv_results", None) is not None:  # history's: refused now, not after the measuring
        outpaths.check_folder(args.asv_results, "--asv-results")
    clone = check_clone(args.clone)
    session = Session(ca.commit_settings(args), clone, parse_counts(args.args, "--args", MAX_KERNEL_ARGS),
                      lambda say: CommitEnvs(env_opts, say, target=args.target))
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
    counts = None
    if args.counts:
        counts = session.count(records, os.path.join(log_dir, "counts"))
        moved = [s for s in commitcounts.steps(records, counts, session.arg_counts) if s.get("moved")]
        session.say(f"launchbench: counts: {len(counts)} commits counted ({session.count_jobs} at once) in "
                    f"{session.count_seconds:.0f} s; counts move at {len(moved)} commit(s)")

    def on_round(out) -> None:
        write(lambda: session.document(records, out, args.range, state.get("prefetch", 0), args.rounds, "history",
                                       counts=counts))

    out, state["prefetch"] = session.measure(records, args.rounds, log_dir, on_round=on_round)
    doc = session.document(records, out, args.range, state["prefetch"], args.rounds, "history", counts=counts)
    write(doc, force=True)
    written = [output]
    if args.asv_results:
        written += asvresults.write_history(args.asv_results, doc)
    print(render(doc), end="")
    print(render_lanes(doc.get("lanes")), end="")
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

class _Interrupted(Exception):
    """A timing stage was interrupted: the search ends there, what was measured is kept."""


def _named(dec: dict, distinct: list) -> dict:
    """A stage decision with commit SHAs for the indices (the JSON)."""
    sha = lambda i: distinct[i]["sha"]  # noqa: E731
    out = {k: dec[k] for k in ("action", "reason", "direction") if k in dec}
    out["overall"] = bisection.bounded(dec.get("overall"))
    out["segments"] = [{**bisection.bounded({k: v for k, v in s.items() if k != "segment"}), "previous": sha(s["segment"][0]),
                        "commit": sha(s["segment"][1])} for s in dec.get("segments", [])]
    if "segment" in dec:
        out["follow"] = [sha(i) for i in dec["segment"]]
    if "span" in dec:
        out["span"] = [sha(i) for i in dec["span"]]
    return out


def run_bisect(args) -> int:
    if args.points < 3:
        raise UserError("--points must be at least 3 (both ends and one commit between them)")
    output, clone, session = _start(args)
    good, bad = builds.resolve(clone, args.good), builds.resolve(clone, args.bad)
    commits = builds.first_parent_commits(clone, good.sha, bad.sha)
    records = commit_records(clone, commits, 0)
    distinct = [r for r in records if r["measured"]]
    for r in distinct:
        r["measured"] = False  # until a stage builds it
    session.say(f"launchbench: bisect over {len(records)} commits, {len(distinct)} distinct builds "
                f"({good.short}..{bad.short})")
    hints = builds.compiled_changes(clone, [r["sha"] for r in distinct]) if args.hints else []
    if hints:
        session.say(f"launchbench: compiled sources change at {len(hints)} commit(s): "
                    + " ".join(distinct[i]["short"] for i in hints) + " (timed first, beside their predecessors)")
    write = _writer(output)
    log_root = os.path.splitext(output)[0] + ".logs"
    stages: list = []
    counted: dict = {}  # variant -> commitcounts result
    arg_counts = session.arg_counts
    doc = {"schema": documents.schema_id("bisect"), "kind": "bisect", "command": command_line(),
           "child_env": childenv.record(),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "simulator": bool(args.simulator),
           "clone": clone, "good": good.sha, "bad": bad.sha, "threshold_us": args.threshold,
           "settings": {"arg_counts": arg_counts, "points": args.points, "rounds": args.rounds,
                        "stage_rounds_cap": 3 * args.rounds, "counts": bool(args.counts), "hints": bool(args.hints),
                        "rule": "follow: interval beyond 0 in the range's direction, family-wise over the stage "
                                "(99 % for neighbouring commits, else 95 %); ruled out: wholly short of the threshold",
                        "count_jobs": session.count_jobs, "max_time": args.max_time, "target": args.target},
           "commits": records, "stages": stages, "culprit": None, "counts": {"per_commit": {}},
           "hints": [distinct[i]["sha"] for i in hints]}

    def built(indices: list) -> list:
        """Build the commits at *indices* not built yet; returns those that failed."""
        todo = [i for i in indices if not distinct[i].get("variant") and not distinct[i].get("build")]
        subset = [dict(distinct[i], measured=True) for i in todo]
        session.build(subset)
        for i, rec in zip(todo, subset):
            distinct[i].update({k: rec.get(k) for k in ("wheel", "variant", "build", "measured", "python", "env")})
        return [i for i in indices if not distinct[i].get("variant")]

    def count(indices: list) -> dict:
        failed = built(indices)
        todo = [distinct[i] for i in indices if i not in failed and distinct[i]["variant"] not in counted]
        t0 = time.monotonic()
        counted.update(session.count(todo, os.path.join(log_root, "counts")))
        got = {i: None if i in failed else commitcounts.key(counted.get(distinct[i]["variant"]), arg_counts)
               for i in indices}
        stages.append({"kind": "counts", "points": [distinct[i]["sha"] for i in indices],
                       "seconds": round(time.monotonic() - t0, 1),
                       "unusable": {distinct[i]["sha"]: commitcounts.unusable(counted.get(distinct[i].get("variant")))
                                    for i in indices if got[i] is None}})
        doc["counts"]["per_commit"] = commitcounts.per_launch(counted, arg_counts)
        doc["gpu_seconds"] = round(session.gpu_seconds, 1)
        write(doc, force=True)
        session.say(f"launchbench: counts stage: {len(indices)} commit(s) counted "
                    f"({session.count_jobs} at once), {time.monotonic() - t0:.0f} s")
        return got

    def measure(points: list, stop):
        failed = built(points)
        pts = [i for i in points if i not in failed]
        left = None if args.max_time is None else args.max_time - session.gpu_seconds
        if len(pts) < 2 or (left is not None and left <= 0):
            return {}, True, failed
        subset = [dict(distinct[i]) for i in pts]
        pairs = list(zip(pts, pts[1:])) + [(pts[0], pts[-1])]
        keys = launch_keys(arg_counts)

        def series_of(samples):
            by = analysis.group_rounds(samples, keys)
            return {(a, b): bisection.pooled_rounds(by, distinct[a]["variant"], distinct[b]["variant"], arg_counts)
                    for a, b in pairs}

        def engine_stop(out):
            return DECIDED if stop(series_of(out.samples)) else None

        cap = 3 * args.rounds
        n = sum(s["kind"] == "timing" for s in stages) + 1
        session.say(f"launchbench: timing stage {n}: " + " ".join(r["short"] for r in subset) +
                    f" (until decided, at most {cap} rounds)")
        out, prefetch = session.measure(subset, cap, os.path.join(log_root, f"stage{n}"), stop=engine_stop,
                                        max_time=left)
        sdoc = session.document(subset, out, f"{subset[0]['sha']}..{subset[-1]['sha']}", prefetch, cap, "bisect")
        stages.append({"kind": "timing", "points": [r["sha"] for r in subset], "rounds": out.rounds_completed,
                       "stopped": out.stopped, "steps": sdoc["steps"], "deltas": sdoc["deltas"],
                       "level": sdoc["level"], "timing": sdoc["timing"], "device": sdoc["device"],
                       "samples": sdoc["samples"]})
        doc["device"] = sdoc["device"]
        doc["gpu_seconds"] = round(session.gpu_seconds, 1)
        write(doc, force=True)
        if out.interrupted:
            raise _Interrupted(out.reason)
        return series_of(out.samples), out.stopped != DECIDED, failed

    def on_stage(st: dict) -> None:
        if st["kind"] == "timing" and stages and stages[-1]["kind"] == "timing":
            stages[-1]["decision"] = _named(st["decision"], distinct)

    try:
        res = bisection.search(len(distinct), count, measure, points=args.points, threshold=args.threshold,
                               use_counts=args.counts, say=session.say, on_stage=on_stage, hints=hints)
    except _Interrupted as exc:
        res = {"result": "interrupted", "reason": str(exc), "counts_steps": [], "counts_note": None}
    _bisect_result(doc, res, distinct, stages, counted, session, arg_counts, log_root, args.counts)
    doc["gpu_seconds"] = round(session.gpu_seconds, 1)
    doc["count_seconds"] = round(session.count_seconds, 1)
    write(doc, force=True)
    print(render_bisect(doc), end="")
    session.say(f"launchbench: wrote {output}")
    return 0 if doc["culprit"] else 1


DECIDED = "decided: a segment's step is established (or every one ruled out)"


def _timed_step(stages: list, prev: str, commit: str) -> tuple[list, dict | None]:
    """The per-arg-count timing steps and the pooled judgement of the segment prev -> commit,
    from the last timing stage that measured it as neighbours."""
    for st in reversed(stages):
        if st["kind"] != "timing":
            continue
        steps = [s for s in st["steps"] if s["commit"] == commit and s["previous"] == prev]
        seg = next((s for s in (st.get("decision") or {}).get("segments", [])
                    if s["commit"] == commit and s["previous"] == prev), None)
        if steps or seg:
            return steps, seg
    return [], None


def _bisect_result(doc, res, distinct, stages, counted, session, arg_counts, log_root, counts: bool) -> None:
    """The search's answer in the document: culprit (with its counts step), the counts steps
    beside their timing, or 'undecided between A and B'."""
    doc["counts_note"] = res.get("counts_note")
    doc["direction"] = res.get("direction")
    result = res["result"]
    if result == "found":
        prev, cur = distinct[res["previous"]], distinct[res["culprit"]]
        if counts and (prev["variant"] not in counted or cur["variant"] not in counted):
            # found by timing inside a counts-flat segment: count the pair, so 'not visible' is checked, not assumed
            counted.update(session.count([r for r in (prev, cur) if r["variant"] not in counted],
                                         os.path.join(log_root, "counts")))
            doc["counts"]["per_commit"] = commitcounts.per_launch(counted, arg_counts)
        steps, seg = _timed_step(stages, prev["sha"], cur["sha"])
        cstep = (commitcounts.step(counted.get(prev["variant"]), counted.get(cur["variant"]), arg_counts)
                 if counts else None)
        doc["culprit"] = {"sha": cur["sha"], "short": cur["short"], "subject": cur["subject"],
                          "previous": prev["sha"], "steps": steps, "pooled": seg, "counts": cstep,
                          "hinted": bool(res.get("hinted")),
                          "reading": None if not cstep or "error" in cstep else
                          (countdiff.moved_reading(list(cstep["per_nargs"].values())) or NOT_VISIBLE)}
        doc["result"] = "found"
    elif result == "undecided" and res.get("span"):
        a, b = (distinct[i] for i in res["span"])
        doc["undecided"] = {"between": [a["sha"], b["sha"]]}
        doc["result"] = f"undecided between g{a['sha'][:8]} and g{b['sha'][:8]}: {res.get('reason', '')}"
    else:
        doc["result"] = {"no-step": "no single step beyond the threshold", "no-change": "no change",
                         "interrupted": "interrupted"}.get(result, result) + (f": {res['reason']}" if res.get("reason") else "")
    csteps = []
    for a, b in res.get("counts_steps") or []:
        pa, pb = distinct[a], distinct[b]
        steps, seg = _timed_step(stages, pa["sha"], pb["sha"])
        csteps.append({"commit": pb["sha"], "previous": pa["sha"], "subject": pb["subject"],
                       **commitcounts.step(counted.get(pa["variant"]), counted.get(pb["variant"]), arg_counts),
                       "timing": {"steps": steps, "pooled": seg}})
    doc["counts"]["steps"] = csteps
