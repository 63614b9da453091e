"""bisect's search, as pure functions: where the counts move, and which timed segment to follow.

Counts first. A commit's counts (``commitcounts``) are exact, so a segment whose two ends have
identical fingerprints is taken to hold no Python-level change (a change undone inside it is
missed), and a segment whose ends differ is split until the change sits between two
neighbouring commits. Counting needs no quiet machine, so these stages cost builds and a few
seconds of one short process per commit, not timing rounds.

Then timing, under one rule: a stage measures its points interleaved, as compare
does; each segment between neighbouring points gets one value per round, the per-round paired
delta pooled over the argument counts (weighted by each one's noise: ``pooled_rounds``), and a
confidence sequence over rounds
(``sequential``: valid at whichever round the stage stops), at a family-wise confidence over the
stage's segments (Bonferroni), so that a stage of many segments is not more likely to follow a
flat one; a segment of two neighbouring commits, which names the culprit, at 99 %. The direction is that of the overall
GOOD -> BAD change. A segment is *established*
when its interval lies wholly beyond 0 in that direction (it holds a real step that way, however
small), *ruled out* when its interval lies wholly short of ``threshold`` (it cannot hold a step
worth finding); the stage takes more rounds until one segment is established or every one is
ruled out, follows the established segment whose bound lies furthest out, and when its rounds
run out says "undecided between A and B", never a guess. A step against the direction, however
clear, is never followed: it cannot explain the change being searched.

Where counts cannot see a step (C code, a dependency), the commits whose compiled sources
changed (``hints``) are candidates, as the counts' change points are: a stage times up to two
candidates beside their predecessors, those nearest the even split of its segment
(``candidate_points``), so a C-level step there is confirmed in a stage instead of searched for
in several, and a stage still halves the search when the candidate is not the culprit. Hints only choose where to look;
every culprit is named by an established timed step
between two neighbouring commits.

The search itself (``search``) takes its counting and measuring as callables, so tests drive it
with injected per-commit costs and counts, and the command with real processes.
"""
from __future__ import annotations

import math
import statistics

from . import sequential, stats

ESTABLISHED, OPEN, RULED_OUT = "established", "open", "ruled out"
#: A segment of two neighbouring commits names the culprit when followed: it is judged at this
#: confidence (family-wise over its stage), the wider segments that only choose where to look next
#: at the stage's (95 %): a wrong turn there ends in "undecided" or "no-step", a wrong name would not
NAME_CONFIDENCE = 0.99


# ---------------------------------------------------------------- timing: one segment, one stage

def pooled_rounds(by: dict, a: str, b: str, arg_counts: list, weighted: bool = True) -> list:
    """Per round both variants completed at every arg count: the round's median paired difference
    (us) of *b* vs *a*, pooled over the arg counts as a mean weighted by 1 / level^2 (*by*:
    ``analysis.group_rounds``).

    A round's spread at an arg count grows with its launch's level, so the equal-weight mean let
    the noisiest arg counts dominate; inverse-variance weights (the level is *a*'s median over the
    rounds, which no delta enters) narrow the pooled spread and so the rounds a step needs
    (docs/history.md). A step that costs the same at
    every arg count (C code) reads as itself; one that grows with the arg count reads as its
    weighted mean, with its sign. *weighted* False: the plain mean (``gpu/pooling_weights.py``
    compares the two)."""
    per_n, weights = [], []
    for n in arg_counts:
        ra, rb = by.get((a, n), {}), by.get((b, n), {})
        per_n.append({r: statistics.median([y - x for x, y in zip(ra[r], rb[r])])
                      for r in set(ra) & set(rb) if ra[r] and rb[r]})
        level = statistics.median([statistics.median(v) for v in ra.values() if v]) if any(ra.values()) else 0.0
        weights.append(1.0 / level ** 2 if level > 0 else 0.0)
    if not weighted:
        weights = [1.0] * len(per_n)
    if not per_n:
        return []
    if not any(weights):
        weights = [1.0] * len(per_n)
    total = math.fsum(weights)
    common = sorted(set.intersection(*(set(d) for d in per_n)))
    return [math.fsum(w * d[r] for w, d in zip(weights, per_n)) / total for r in common]


def judge(values: list, threshold: float, direction: int | None, confidence: float = stats.CONFIDENCE) -> dict:
    """A segment's pooled step: mean and stopping-valid interval over rounds, and its state in
    *direction* (+1 slower, -1 faster): established (wholly beyond 0 that way: a real step), ruled
    out (wholly short of +threshold: no step worth finding) or open. Without a direction the
    state is open."""
    rule = sequential.Rule(target_pct=None, threshold_pct=threshold, min_rounds=2, confidence=confidence)
    if values:
        mean, lo, hi = sequential.interval(list(values), rule)
    else:
        mean, lo, hi = 0.0, -math.inf, math.inf
    state = OPEN
    if direction:
        dlo, dhi = sorted((lo * direction, hi * direction))
        state = ESTABLISHED if dlo > 0 else RULED_OUT if dhi < threshold else OPEN
    return {"mean_us": mean, "ci_us": [lo, hi], "rounds": len(values), "state": state,
            "confidence": confidence}


def bounded(judged: dict | None) -> dict | None:
    """A judged segment for the JSON: an interval not bounded yet (few rounds, many segments)
    is written as null, not as an infinity JSON cannot hold."""
    if judged is None:
        return None
    ci = [x if isinstance(x, (int, float)) and math.isfinite(x) else None for x in judged.get("ci_us", [])]
    return {**judged, "ci_us": ci}


def family_confidence(confidence: float, segments: int) -> float:
    """Each of a stage's *segments* judged at this confidence keeps *confidence* for the stage
    as a whole (Bonferroni: a stage never follows a flat segment more often than 1 - confidence)."""
    return 1.0 - (1.0 - confidence) / max(1, segments)


def direction_of(overall: dict) -> int | None:
    """+1 or -1 once the overall GOOD -> BAD interval excludes 0, else None."""
    lo, hi = overall["ci_us"]
    return 1 if lo > 0 else -1 if hi < 0 else None


def decide(points: list, series: dict, threshold: float, direction: int | None = None,
           final: bool = False, confidence: float = stats.CONFIDENCE) -> dict:
    """What a stage says. *series*: (a, b) -> pooled per-round deltas, for each pair of
    neighbouring points and for (first, last). *direction*: the range's, once known (an earlier
    stage); else taken from (first, last). *final*: no more rounds for this stage.

    ``action``: ``follow`` (``segment``), ``more`` (rounds), ``undecided`` (``span``: between
    which points the step must lie), ``no-step`` (every segment is short of the threshold in the
    direction: no single step explains the change), ``no-change`` (GOOD and BAD differ by less
    than the threshold)."""
    overall = judge(series.get((points[0], points[-1]), []), threshold, None, confidence)
    out = {"overall": overall, "direction": direction, "segments": []}
    if direction is None:
        direction = direction_of(overall)
        out["direction"] = direction
        if direction is None:
            lo, hi = overall["ci_us"]
            if -threshold < lo and hi < threshold:
                return {**out, "action": "no-change",
                        "reason": f"the overall change lies within +/-{threshold:g} us"}
            if final:
                return {**out, "action": "undecided", "span": (points[0], points[-1]),
                        "reason": "the overall change is not established (its interval contains 0)"}
            return {**out, "action": "more", "reason": "the overall change's sign is not established yet"}
    segs = []
    m = len(points) - 1
    for a, b in zip(points, points[1:]):
        level = family_confidence(max(confidence, NAME_CONFIDENCE) if b - a == 1 else confidence, m)
        segs.append({"segment": (a, b), **judge(series.get((a, b), []), threshold, direction, level)})
    out["segments"] = segs
    est = [s for s in segs if s["state"] == ESTABLISHED]
    if est:
        best = max(est, key=lambda s: min(x * direction for x in s["ci_us"]))
        return {**out, "action": "follow", "segment": best["segment"],
                "reason": "its step is established (its interval lies beyond 0) in the range's direction"}
    open_ = [s for s in segs if s["state"] == OPEN]
    if open_:
        if final:
            return {**out, "action": "undecided", "span": (open_[0]["segment"][0], open_[-1]["segment"][1]),
                    "reason": "no segment's step was established in the range's direction within the rounds"}
        return {**out, "action": "more", "reason": f"{len(open_)} segment(s) neither established nor ruled out"}
    return {**out, "action": "no-step",
            "reason": f"every segment is short of {threshold:g} us in the range's direction: the change is "
                      "spread over several commits or smaller than the threshold"}


# ---------------------------------------------------------------- counts: where the fingerprints change

def stage_points(lo: int, hi: int, k: int, skip: set = frozenset()) -> list:
    """Up to *k* (at least 3) indices from lo to hi, both ends included, evenly spread: the
    points nearest the k-way split of the segment, none in *skip* (commits that do not build)."""
    k = max(k, 3)  # two points cannot split a segment: the search would never shrink it
    free = [i for i in range(lo + 1, hi) if i not in skip]
    chosen: set = set()
    for j in range(1, k - 1):
        target = round(lo + j * (hi - lo) / (k - 1))  # as the old stage_points rounded
        left = [i for i in free if i not in chosen]
        if not left:
            break
        chosen.add(min(left, key=lambda i: (abs(i - target), i)))
    return [lo] + sorted(chosen) + [hi]


def count_segments(known: dict, skip: set = frozenset()) -> tuple[list, list]:
    """(open, settled) segments from the counted fingerprints *known* (index -> fingerprint):
    neighbouring counted indices whose fingerprints differ; *open* ones still hold uncounted,
    countable commits, *settled* ones do not (normally neighbours: the commit where counts move)."""
    idx = sorted(known)
    open_, settled = [], []
    for a, b in zip(idx, idx[1:]):
        if known[a] == known[b]:
            continue
        inner = [i for i in range(a + 1, b) if i not in skip]
        (open_ if inner else settled).append((a, b))
    return open_, settled


def count_stage(open_segments: list, k: int, skip: set = frozenset()) -> list:
    """The indices to count next: up to k - 2 inside each open segment."""
    want = set()
    for a, b in open_segments:
        want.update(stage_points(a, b, k, skip)[1:-1])
    return sorted(want)


def candidate_points(lo: int, hi: int, candidates: list, k: int, skip: set = frozenset()) -> list:
    """A timing stage's points in (lo, hi): where *candidates* (pairs (p, q): the counts' change
    points and the hints, each a commit q and its predecessor p) lie inside, up to (k - 1) // 2 of
    them (at least one), those nearest the even split of the segment, each with its predecessor,
    so that a stage both checks likely culprits and halves the search; else ``stage_points``.
    Few points per stage: every point is a worker per round, and a stage of twenty points is too
    slow a round to establish any step (lab/README.md, "Measurements behind the code")."""
    inside = [(p, q) for p, q in candidates if lo <= p < q <= hi and (p, q) != (lo, hi)
              and p not in skip and q not in skip]
    if not inside:
        return stage_points(lo, hi, k, skip)
    want = max(1, (k - 1) // 2)
    chosen: list = []
    for j in range(1, want + 1):
        target = lo + j * (hi - lo) / (want + 1)
        left = [c for c in inside if c not in chosen]
        if not left:
            break
        chosen.append(min(left, key=lambda c: (abs(c[1] - target), c[1])))
    return sorted({lo, hi, *[i for c in chosen for i in c]})


# ---------------------------------------------------------------- the search

def search(n: int, count, measure, points: int = 5, threshold: float = 0.2, use_counts: bool = True,
           say=lambda msg: None, on_stage=lambda stage: None, hints: tuple = ()) -> dict:
    """Bisect *n* distinct builds (0: GOOD, n-1: BAD).

    *count(indices)* -> {index: fingerprint, or None where that commit cannot be counted};
    *measure(points, stop)* -> (series, exhausted, failed): runs one timing stage over *points*,
    asking ``stop(series)`` after each round; *series* as in ``decide``; *exhausted*: the stage's
    rounds or the run's time ran out; *failed*: points that could not be built or measured.
    *hints*: indices whose compiled sources differ from the previous index's; the first timing
    stage times each beside its predecessor.
    Returns the result (``result``, ``culprit`` and ``previous`` or ``span``, ``counts_steps``,
    ``visible``: whether counts moved at the culprit, ``hinted``: whether it was a hint) and the
    stages, for the report; each stage is also handed to *on_stage* once decided."""
    stages: list = []
    skip: set = set()
    known: dict = {}
    counts_note = None
    change = []
    if use_counts and n >= 2:
        got = count([0, n - 1])
        stages.append({"kind": "counts", "points": [0, n - 1], "fingerprints": dict(got)})
        on_stage(stages[-1])
        if got.get(0) is None or got.get(n - 1) is None:
            counts_note = "GOOD or BAD could not be counted (or its counts vary launch to launch): timing only"
        elif got[0] == got[n - 1]:
            counts_note = ("counts (bytecodes, calls, C callees) do not move between GOOD and BAD: any change is "
                           "not visible to counts (inside C code, arguments to C calls, the driver or the machine); "
                           "timing only")
            known = dict(got)
        else:
            known = dict(got)
            while True:
                open_, settled = count_segments(known, skip)
                if not open_:
                    change = settled
                    break
                want = count_stage(open_, points, skip)
                got = count(want)
                stages.append({"kind": "counts", "points": want, "fingerprints": dict(got)})
                on_stage(stages[-1])
                for i in want:
                    if got.get(i) is None:
                        skip.add(i)
                    else:
                        known[i] = got[i]
            counts_note = (f"counts move at {len(change)} place(s): located from counts alone; "
                           "timing confirms their steps")
            say(f"launchbench: {counts_note}")
    hinted = sorted({i for i in hints if 0 < i < n})
    candidates = sorted(set(change) | {(i - 1, i) for i in hinted}, key=lambda pq: (pq[1], pq[0]))
    pts = candidate_points(0, n - 1, candidates, points, skip)
    direction = None
    result: dict = {"counts_note": counts_note, "counts_steps": change, "hints": hinted}
    while True:
        def stop(series, direction=direction):
            measured = sorted({i for pair in series for i in pair})  # without points that failed to build
            return bool(measured) and decide(measured, series, threshold, direction)["action"] != "more"

        series, exhausted, failed = measure(pts, stop)
        if failed:
            skip.update(failed)
            pts = [p for p in pts if p not in failed]
            if len(pts) < 2:
                result.update(result="undecided", reason="too few commits could be built and measured")
                break
        dec = decide(pts, series, threshold, direction, final=exhausted)
        stages.append({"kind": "timing", "points": list(pts), "decision": dec})
        direction = dec["direction"]
        action = dec["action"]
        if action == "more":  # the stage ended without deciding and without running out: say so
            dec = decide(pts, series, threshold, direction, final=True)
            stages[-1]["decision"] = dec
            action = dec["action"]
        on_stage(stages[-1])
        if action == "follow":
            a, b = dec["segment"]
            if b - a == 1:
                # counts were used (known): a step not among the counts' change points lies in a
                # segment with identical counts at both ends, so counts do not see it
                result.update(result="found", culprit=b, previous=a,
                              visible=((a, b) in change) if known else None, hinted=b in hinted)
                break
            if not [i for i in range(a + 1, b) if i not in skip]:
                result.update(result="undecided", span=(a, b),
                              reason="the step lies between these two; the commits between them do not build")
                break
            pts = candidate_points(a, b, candidates, points, skip)
            continue
        result.update(result=action, reason=dec["reason"])
        if action == "undecided":
            result["span"] = dec["span"]
        break
    result["direction"] = direction
    result["stages"] = stages
    return result
