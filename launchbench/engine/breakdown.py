"""The launch breakdown on the engine: the single environment's stages timed in rounds of fresh
workers (``run_breakdown``), and the paired stage deltas' analysis (``analyze``).

Every stage of the launch (``launchbench.workloads.stages``) is a sample key
``{"stage": s, "nargs": n}`` of the one measurement engine (``runner.run``):
interleaved rounds of fresh worker processes, one per variant, as in
``launchbench compare``, so two numba-cuda releases (or a mechanism on one)
are timed stage by stage side by side and their difference per stage gets a
95% interval over rounds (``analysis.analyze`` with keys).

Derived quantities are linear in the stage samples (a level minus its
children, a stage's in-situ cost, a sum of stages, a slope over arg counts),
so each is computed per round first -- from per-round medians for a
variant's level, from per-round medians of paired differences for a delta --
and gets its t interval over rounds like any stage: the rounds stay the
independent units, and stages measured in the same round keep their
correlation. A stage is its loop's time minus the empty loop's
(``X+launch`` stages: minus ``noop+launch``).

Checks reported with every run: whether the stage deltas add up to the
``full`` delta (the interval of the gap contains 0; they need not: a rest
can move), and
whether any unexplained part -- a level's rest -- exceeds 0.5 us at some arg
count, with the in-situ costs that account for it.
"""
from __future__ import annotations

import statistics

from ..base.device import require_gpu
from ..workloads import stages
from ..workloads.breakdown import breakdown_document
from . import analysis, runner, runplan, stats

# ---------------------------------------------------------------- the single environment

def run_breakdown(counts, loops: int, repeats: int, rounds: int, affinity: str | None, make_overlay) -> dict:
    """Each stage of this interpreter's numba-cuda launch, timed in rounds of fresh pinned
    workers (the engine); medians over every round's samples. *make_overlay*: the workers'
    overlay maker (the command passes ``environments.envs.make_overlay``; runner.rounds_here)."""
    require_gpu(smoke_flag=False)
    out = runner.rounds_here({"workload": "breakdown_single", "stage_warmup": max(10, loops // 10)}, counts,
                             {"cmd": "breakdown_round", "loops": loops, "repeats": repeats}, rounds, affinity,
                             "breakdown", make_overlay)
    first = out.units[0]
    settings = {"loops": loops, "repeats": repeats, "rounds": len(out.units),
                "round": "a fresh worker process, set up ahead and pinned (launchbench.engine.runner)"}
    return breakdown_document(analysis.concat_rounds(out.units), first["launch_path"], counts, settings,
                              first.get("numba_cuda"))


# ---------------------------------------------------------------- the paired analysis (pure)

def _level(stage: str) -> dict:
    return {stage: 1.0, stages.baseline_of(stage): -1.0}


def _add(*terms) -> dict:
    """sum of coefficient * combo over (coefficient, combo) terms; zero coefficients dropped."""
    out: dict = {}
    for coeff, combo in terms:
        for stage, c in combo.items():
            out[stage] = out.get(stage, 0.0) + coeff * c
    return {s: c for s, c in out.items() if abs(c) > 1e-12}


def quantities(present: list) -> dict:
    """name -> {stage: coefficient}: every reported quantity as a linear combination of stages.

    A stage's level; each level's rest (level minus the children present); the sum of the
    leaves; the old remainder (``full`` minus the six stages ``breakdown`` timed); in-situ
    costs and what is left of ``full`` after them."""
    have = set(present)
    q: dict = {}
    for s in present:
        if s not in (stages.BASELINE, stages.INSITU_BASELINE) and not s.endswith("+launch"):
            q[s] = _level(s)
    for parent, children in (*stages.TREE, *stages.SUBTREE):
        kids = [c for c in children if c in have]
        if parent in have and kids:
            q[f"rest:{parent}"] = _add((1.0, _level(parent)), *((-1.0, _level(c)) for c in kids))
    leaves = [s for s in stages.LEAVES if s in have]
    if "full" in have and leaves:
        q["sum_of_leaves"] = _add(*((1.0, _level(s)) for s in leaves))
        old = [s for s in leaves if s != "configured_call"]
        q["remainder"] = _add((1.0, _level("full")), *((-1.0, _level(s)) for s in old))
        q["unexplained"] = _add((1.0, _level("full")), *((-1.0, _level(s)) for s in leaves))
    insitu = [s for s in stages.INSITU if f"{s}+launch" in have]
    if insitu and stages.INSITU_BASELINE in have:
        for s in insitu:
            q[f"insitu:{s}"] = {f"{s}+launch": 1.0, stages.INSITU_BASELINE: -1.0}
            if s in have:
                q[f"insitu_extra:{s}"] = _add((1.0, q[f"insitu:{s}"]), (-1.0, _level(s)))
        if "full" in have and "driver_launch" in have:
            q["insitu_sum"] = _add((1.0, _level("driver_launch")), *((1.0, q[f"insitu:{s}"]) for s in insitu))
            q["rest:insitu"] = _add((1.0, _level("full")), (-1.0, q["insitu_sum"]))
    for level in stages.PARTS_LEVELS:  # a level's parts back to back: in-context costs, its rest split in two
        whole = stages.parts_of(level)
        if whole not in have:
            continue
        kids = [c for c in stages.parts_children(level) if c in have]
        incontext = []
        for c in stages.parts_children(level):
            if stages.parts_without(level, c) in have:
                q[f"incontext:{c}"] = {whole: 1.0, stages.parts_without(level, c): -1.0}
                incontext.append(q[f"incontext:{c}"])
                if c in have:
                    q[f"incontext_extra:{c}"] = _add((1.0, q[f"incontext:{c}"]), (-1.0, _level(c)))
        if level in have:
            q[f"rest:parts:{level}"] = _add((1.0, _level(level)), (-1.0, _level(whole)))
        if kids:
            q[f"interaction:{level}"] = _add((1.0, _level(whole)), *((-1.0, _level(c)) for c in kids))
        if incontext:
            q[f"joint:{level}"] = _add((1.0, _level(whole)), *((-1.0, combo) for combo in incontext))
    if all(f"rest:parts:{level}" in q and f"interaction:{level}" in q for level in stages.PARTS_LEVELS):
        # the additivity gap (the three rests) = what no part runs + what the parts cost more together
        q["gap:outside_parts"] = _add(*((1.0, q[f"rest:parts:{level}"]) for level in stages.PARTS_LEVELS))
        q["gap:interaction"] = _add(*((1.0, q[f"interaction:{level}"]) for level in stages.PARTS_LEVELS))
    if "full_with_configure" in have and "full" in have:
        q["configure_in_launch"] = {"full_with_configure": 1.0, "full": -1.0}
    return q


def _kid(stage: str, nargs: int):
    return runplan.key_id({"stage": stage, "nargs": nargs})


def _ci(values: list, confidence: float) -> dict:
    mean, lo, hi = stats.mean_ci(values, confidence)
    return {"us": mean, "ci": [lo, hi], "n": len(values)}


def _medians(by: dict, variant: str, reference: str | None, stage: str, nargs: int, cache: dict) -> dict:
    """round -> median of *stage*'s samples (reference None) or of its paired differences
    against *reference*'s samples of the same repeat slots, in the rounds both completed."""
    key = (variant, reference, stage, nargs)
    if key not in cache:
        kid = _kid(stage, nargs)
        var = by.get((variant, kid)) or {}
        if reference is None:
            cache[key] = {r: statistics.median(v) for r, v in var.items()}
        else:
            ref = by.get((reference, kid)) or {}
            cache[key] = {r: statistics.median(stats.paired_differences(ref[r], var[r]))
                          for r in var if r in ref}
    return cache[key]


def _per_round(by: dict, variant: str, reference: str | None, combo: dict, nargs: int, cache: dict) -> dict:
    """round -> the combination's value in that round (levels from per-round medians, deltas
    from per-round medians of paired differences), over the rounds every term has."""
    series = [(coeff, _medians(by, variant, reference, stage, nargs, cache)) for stage, coeff in combo.items()]
    if not series or not all(m for _, m in series):
        return {}
    common = set.intersection(*(set(m) for _, m in series))
    return {r: sum(coeff * m[r] for coeff, m in series) for r in sorted(common)}


def _slope(xs: list, ys: list) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def analyze(samples: list, names: list, reference: str, arg_counts: list, stage_list: list,
            confidence: float = 0.95) -> dict:
    """Levels, paired deltas, rests, additivity and per-argument slopes, each with a t interval
    over rounds; pure (no numba), from sample records of complete rounds."""
    keys = [{"stage": s, "nargs": n} for n in arg_counts for s in stage_list]
    stat_recs, delta_recs = analysis.analyze(samples, names, reference, arg_counts, keys=keys, confidence=confidence)
    by = analysis.group_rounds(samples, keys)
    q = quantities(stage_list)
    levels: dict = {}
    deltas: dict = {}
    per_arg: dict = {}
    cache: dict = {}
    def cells(name, ref):  # {nargs: {quantity: interval}} of *name*'s levels (ref None) or deltas vs ref
        out = {}
        for n in arg_counts:
            cell = {}
            for qname, combo in q.items():
                vals = _per_round(by, name, ref, combo, n, cache)
                if vals:
                    cell[qname] = _ci(list(vals.values()), confidence)
            out[str(n)] = cell
        return out

    for name in names:
        levels[name] = cells(name, None)
        if name != reference:
            deltas[name] = cells(name, reference)
        per_arg[name] = _slopes(by, name, None, q, arg_counts, confidence, cache)
        if name != reference:
            per_arg[f"{name}-{reference}"] = _slopes(by, name, reference, q, arg_counts, confidence, cache)
    return {
        "stats": stat_recs,
        "deltas": delta_recs,
        "levels": levels,
        "stage_deltas": deltas,
        "per_arg": per_arg,
        "additivity": {name: additivity(deltas[name]) for name in deltas},
        "unexplained": {name: unexplained(levels[name]) for name in names},
        "confidence": confidence,
    }


def _slopes(by, variant, reference, q, arg_counts, confidence, cache) -> dict:
    """quantity -> us per added argument: least-squares slope over arg counts per round, t over rounds."""
    if len(arg_counts) < 2:
        return {}
    out = {}
    for qname, combo in q.items():
        per_n = [_per_round(by, variant, reference, combo, n, cache) for n in arg_counts]
        if not all(per_n):
            continue
        common = set.intersection(*(set(p) for p in per_n))
        slopes = [_slope(arg_counts, [p[r] for p in per_n]) for r in sorted(common)]
        if slopes:
            out[qname] = _ci(slopes, confidence)
    return out


def additivity(delta_cells: dict) -> dict:
    """Per arg count: do the stage deltas add up to the ``full`` delta?

    ``adds_up``: the interval of the gap (full minus the sum of the stages, paired per round)
    contains 0. ``sum_within_full_ci`` is the plainer test -- the sum inside the full delta's
    interval -- recorded too, but not the verdict: the sum carries the noise of seven stages
    and ``full`` that of one, so it would call runs with nothing unexplained non-additive."""
    out = {}
    for n, cell in delta_cells.items():
        full, total, gap = cell.get("full"), cell.get("sum_of_leaves"), cell.get("unexplained")
        if not full or not total or not gap:
            continue
        lo, hi = full["ci"]
        rec = {"full": full, "sum_of_stages": total, "gap": gap, "sum_within_full_ci": lo <= total["us"] <= hi,
               "adds_up": gap["ci"][0] <= 0.0 <= gap["ci"][1]}
        if not rec["adds_up"]:
            rests = [(r, cell[r]) for r in stages.UNEXPLAINED if r in cell]
            moved = [(r, c) for r, c in rests if not (c["ci"][0] <= 0.0 <= c["ci"][1])]
            rec["moved"] = [r for r, _ in sorted(moved, key=lambda rc: -abs(rc[1]["us"]))]
        if cell.get("gap:outside_parts") and cell.get("gap:interaction"):
            rec["gap_split"] = {"outside_parts": cell["gap:outside_parts"], "interaction": cell["gap:interaction"]}
        out[n] = rec
    return out


def unexplained(level_cells: dict, limit: float = stages.UNEXPLAINED_LIMIT_US) -> dict:
    """Per unexplained part (a level's rest): its largest level over arg counts and whether it
    exceeds *limit* us; the same for the old remainder, for comparison."""
    out = {}
    split = [f"{kind}:{level}" for level in stages.PARTS_LEVELS for kind in ("rest:parts", "interaction", "joint")]
    for part in (*stages.UNEXPLAINED, *split, "rest:insitu", "remainder"):
        cells = [(int(n), c[part]) for n, c in level_cells.items() if part in c]
        if not cells:
            continue
        n, worst = max(cells, key=lambda nc: nc[1]["us"])
        limited = not part.startswith(("remainder", "interaction:", "joint:"))
        out[part] = {"max_us": worst["us"], "ci": worst["ci"], "at_nargs": n,
                     "over_limit": limited and worst["us"] > limit,
                     "verdict": limit_verdict([c for _n, c in cells], limit) if limited else "not limited",
                     "by_nargs": {str(k): c["us"] for k, c in sorted(cells)}}
    return out


def limit_verdict(cells: list, limit: float) -> str:
    """Over arg counts: "over" when some interval lies wholly above *limit*, "under" when every
    interval lies wholly below it, else "unresolved" (more rounds would tell)."""
    if any(c["ci"][0] > limit for c in cells):
        return "over"
    if all(c["ci"][1] < limit for c in cells):
        return "under"
    return "unresolved"
