"""``launchbench breakdown --variant ...``: where the microseconds go, and where they moved.

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

import os
import statistics
import sys
import time

from ..engine import runner
from ..workloads import argkinds, stages
from ..base.errors import UserError
from ..base.options import parse_counts

SCHEMA = "launchbench.breakdown/2"
DEFAULT_ROUNDS = 60
DEFAULT_REPEATS = 3
DEFAULT_SAMPLE_TIME = 0.002
DEFAULT_MAX_TIME = 240.0
DEFAULT_WARMUP = 200
WRITE_EVERY_S = 10.0


# ---------------------------------------------------------------- arguments

def add_arguments(p) -> None:
    """The paired mode's options (the single-environment mode's are breakdown.add_arguments')."""
    from .compare import _Ordered, add_env_arguments

    v = p.add_argument_group("paired mode: variants (any of compare's; two or more; the first is the reference)")
    v.add_argument("--variant", dest="items", action=_Ordered, metavar="NAME=SPEC",
                   help="numba-cuda==X.Y.Z, repo:PATH, env:PATH or MECH@BASE (repeatable); with "
                        "variants, stages are timed in interleaved rounds of fresh processes")
    v.add_argument("--repo", dest="items", action=_Ordered, metavar="NAME=PATH", help="a numba-cuda checkout")
    v.add_argument("--reference", help="variant the deltas are taken against (default: the first)")
    add_env_arguments(p.add_argument_group("paired mode: environments"))
    m = p.add_argument_group("paired mode: measurement")
    argkinds.add_argument_options(m)
    m.add_argument("--stages", help="comma-separated stages to time (default: all of launchbench.workloads.stages)")
    m.add_argument("--no-insitu", action="store_true", help="skip the X+launch (in-situ) stages")
    m.add_argument("--sample-time", type=float, default=DEFAULT_SAMPLE_TIME,
                   help=f"calibration target seconds per sample (default {DEFAULT_SAMPLE_TIME})")
    m.add_argument("--max-time", type=float, default=DEFAULT_MAX_TIME,
                   help=f"seconds of measurement after which no new round starts (default {DEFAULT_MAX_TIME:g})")
    m.add_argument("--warmup", type=int, default=DEFAULT_WARMUP,
                   help=f"launches per arg count before timing (default {DEFAULT_WARMUP}; each stage gets a tenth)")
    m.add_argument("--prefetch", default="auto", help="rounds set up ahead (default auto, as compare)")
    m.add_argument("--affinity", metavar="CPUS", default="auto", help="measuring CPU(s), as compare (default auto)")
    m.add_argument("--simulator", action="store_true",
                   help="smoke run on a stand-in launch path under NUMBA_ENABLE_CUDASIM=1; NOT a measurement")
    m.add_argument("--quiet", action="store_true", help="no progress output")
    m.add_argument("--target", metavar="MODULE:FUNC", help=_suppress())


def _suppress():
    import argparse

    return argparse.SUPPRESS


def parse_stages(text: str | None, insitu: bool = True) -> list:
    """--stages: a subset of launchbench.workloads.stages (baselines are always timed)."""
    every = stages.stage_names(insitu=insitu)
    if not text:
        return every
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    bad = [w for w in wanted if w not in stages.stage_names(insitu=True)]
    if bad or not wanted:
        raise UserError(f"--stages {text!r}: unknown stage(s) {bad}; choose from {','.join(every)}")
    base = [stages.BASELINE] + ([stages.INSITU_BASELINE] if any(w.endswith("+launch") for w in wanted) else [])
    return [s for s in every if s in base or s in wanted]


# ---------------------------------------------------------------- analysis (pure)

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
    from ..engine.runner import key_id

    return key_id({"stage": stage, "nargs": nargs})


def _ci(values: list, confidence: float) -> dict:
    from ..engine import stats

    mean, lo, hi = stats.mean_ci(values, confidence)
    return {"us": mean, "ci": [lo, hi], "n": len(values)}


def _medians(by: dict, variant: str, reference: str | None, stage: str, nargs: int, cache: dict) -> dict:
    """round -> median of *stage*'s samples (reference None) or of its paired differences
    against *reference*'s samples of the same repeat slots, in the rounds both completed."""
    from ..engine import stats

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
    from ..engine import analysis

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


LIMIT_FLAGS = {"over": "OVER (interval above the limit)", "under": "ok (every interval below)",
               "unresolved": "unresolved (an interval reaches the limit)",
               "not limited": "(the parts' in-context costs)"}


def limit_verdict(cells: list, limit: float) -> str:
    """Over arg counts: "over" when some interval lies wholly above *limit*, "under" when every
    interval lies wholly below it, else "unresolved" (more rounds would tell)."""
    if any(c["ci"][0] > limit for c in cells):
        return "over"
    if all(c["ci"][1] < limit for c in cells):
        return "under"
    return "unresolved"


# ---------------------------------------------------------------- text

def _tree_rows(present: list) -> list:
    """(label, quantity) in tree order, children indented under their level."""
    have = set(present)
    rows = []

    def walk(stage, depth, tree):
        if stage not in have:
            return
        rows.append(("  " * depth + stage, stage))
        for kid in tree.get(stage, ()):
            walk(kid, depth + 1, tree)
        if stage in tree and any(k in have for k in tree[stage]):
            rows.append(("  " * (depth + 1) + f"rest:{stage}", f"rest:{stage}"))

    tree = dict(stages.TREE)
    tree.update(stages.SUBTREE)
    for s in stages.OUTSIDE:
        if s in have:
            rows.append((s, s))
    walk("full", 0, tree)
    shown = {qn for _, qn in rows}
    for s in present:  # stages timed without their level (--stages)
        if (s not in shown and s not in (stages.BASELINE, stages.INSITU_BASELINE) and not s.endswith("+launch")
                and not stages.is_parts_stage(s)):
            rows.append((s, s))
    for s in stages.INSITU:
        if f"{s}+launch" in have:
            rows.append((f"insitu:{s}", f"insitu:{s}"))
    for extra in ("remainder", "rest:insitu"):
        rows.append((extra, extra))
    for level in stages.PARTS_LEVELS:
        whole = stages.parts_of(level)
        if whole in have:
            kids = stages.parts_children(level)
            rows.append((whole, whole))
            rows += [(f"  incontext:{c}", f"incontext:{c}") for c in kids]
            rows += [(f"  incontext_extra:{c}", f"incontext_extra:{c}") for c in kids]
            rows += [(f"  {n}:{level}", f"{n}:{level}") for n in ("rest:parts", "interaction", "joint")]
    return rows


def _cell(rec: dict | None, signed: bool = False) -> str:
    if not rec:
        return "-".rjust(15)
    half = (rec["ci"][1] - rec["ci"][0]) / 2
    return (f"{rec['us']:+.3f}" if signed else f"{rec['us']:.3f}").rjust(8) + f"±{half:.3f}".ljust(7)


def format_text(doc: dict) -> str:
    """Levels per variant, deltas against the reference, additivity, unexplained parts, per-argument costs."""
    a = doc["analysis"]
    if not a:
        return "Launch breakdown: no complete round, nothing to report\n"
    counts = doc["settings"]["arg_counts"]
    present = doc["settings"]["stages"]
    rows = _tree_rows(present)
    head = "stage".ljust(34) + "".join(f"{str(n) + ' args':>15}" for n in counts)
    out = []
    if doc.get("simulator"):
        out.append("CUDA SIMULATOR smoke run on a stand-in launch path: NOT A MEASUREMENT")
    out.append(f"Launch breakdown, {doc['rounds_completed']} rounds, arguments: {doc['settings']['arg_kind']}"
               f"{', eager dispatch' if doc['settings'].get('dispatch') == 'eager' else ''} "
               f"(us per launch, mean over rounds ± 95% half-width)")
    for v in doc["variants"]:
        name = v["name"]
        what = ("stand-in launch path" if (v.get("stages") or {}).get("standin")
                else f"numba-cuda {v.get('numba_cuda_version') or '?'}")
        out += ["", f"[{name}] {v.get('spec')} ({what}{', mechanism ' + v['mechanism'] if v.get('mechanism') else ''})", head]
        for label, qn in rows:
            cells = [a["levels"][name].get(str(n), {}).get(qn) for n in counts]
            if any(cells):
                out.append(label.ljust(34) + "".join(_cell(c) for c in cells))
    ref = doc["reference"]
    for name, by_n in a["stage_deltas"].items():
        out += ["", f"[{name} - {ref}] paired deltas", head]
        for label, qn in rows:
            cells = [by_n.get(str(n), {}).get(qn) for n in counts]
            if any(cells):
                out.append(label.ljust(34) + "".join(_cell(c, signed=True) for c in cells))
        out.append("additivity (stage deltas vs the full delta):")
        for n, rec in a["additivity"].get(name, {}).items():
            f, s = rec["full"], rec["sum_of_stages"]
            line = (f"  {n} args: stages sum to {s['us']:+.3f} us, full moved {f['us']:+.3f} "
                    f"[{f['ci'][0]:+.3f}, {f['ci'][1]:+.3f}]: ")
            if rec["adds_up"]:
                g = rec["gap"]
                line += f"adds up (gap {g['us']:+.3f} [{g['ci'][0]:+.3f}, {g['ci'][1]:+.3f}])"
            else:
                gap = rec["gap"]
                line += (f"DOES NOT add up: {gap['us']:+.3f} [{gap['ci'][0]:+.3f}, {gap['ci'][1]:+.3f}] us "
                         f"of the delta is in no stage" + (f" (moved: {', '.join(rec['moved'])})" if rec.get("moved") else ""))
            out.append(line)
            if rec.get("gap_split"):
                o, i = rec["gap_split"]["outside_parts"], rec["gap_split"]["interaction"]
                out.append(f"      the gap = outside the parts {o['us']:+.3f} [{o['ci'][0]:+.3f}, {o['ci'][1]:+.3f}]"
                           f" + the parts' interaction {i['us']:+.3f} [{i['ci'][0]:+.3f}, {i['ci'][1]:+.3f}] us")
    out += ["", f"unexplained parts (a level's rest; limit {stages.UNEXPLAINED_LIMIT_US} us at any arg count):"]
    for name, parts in a["unexplained"].items():
        for part, rec in parts.items():
            flag = "(old remainder)" if part == "remainder" else LIMIT_FLAGS.get(rec.get("verdict"), "")
            lo, hi = rec["ci"]
            out.append(f"  {name:12.12} {part:27} max {rec['max_us']:+.3f} [{lo:+.3f}, {hi:+.3f}] us at "
                       f"{rec['at_nargs']} args  {flag}")
    pa_rows = ["type_dispatch", "typeof", "rest:type_dispatch", "marshal_args", *dict(stages.SUBTREE)["marshal_args"],
               "marshal_imports", "marshal_view", "rest:marshal_to_device", "rest:marshal_args", "param_pack",
               "driver_launch", "rest:kernel_launch", "rest:dispatcher_call", "rest:full", "full"]
    cols = list(a["per_arg"])
    out += ["", "per added argument (us, least-squares slope over arg counts, ± 95% half-width):",
            "stage".ljust(28) + "".join(f"{c[:21]:>22}" for c in cols)]
    for qn in pa_rows:
        cells = [a["per_arg"][c].get(qn) for c in cols]
        if any(cells):
            out.append(qn.ljust(28) + "".join(_cell(c, signed=True).rjust(22) for c in cells))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- command

def run(args) -> int:
    """The paired breakdown: resolve variants as compare does, run the engine with stage keys."""
    from . import compare
    from ..environments import envs, variants
    from ..base import device
    from ..base.outputs import check_outputs

    # None is "not given"; 0 is given and wrong (``or`` once turned --rounds 0 into the default)
    if args.repeats is None:
        args.repeats = DEFAULT_REPEATS
    if args.rounds is None:
        args.rounds = DEFAULT_ROUNDS
    if args.repeats < 1 or args.rounds < 1:
        raise UserError("--repeats and --rounds must be at least 1")
    if args.sample_time <= 0 or (args.max_time is not None and args.max_time <= 0):
        raise UserError("--sample-time and --max-time must be positive, e.g. --sample-time 0.002")
    arg_counts = parse_counts(args.args, "--args", argkinds.MAX_ARGS)  # up to 32 arguments (issue 22), not peers' 8
    stage_list = parse_stages(args.stages, insitu=not args.no_insitu)
    affinity = runner.parse_affinity(args.affinity)
    # a smoke or stand-in run without variants times this interpreter's environment twice (an A/A pair)
    items = args.items or [("variant", f"here=env:{sys.prefix}"), ("variant", "twin=here")]
    if len(items) < 2:
        raise UserError("breakdown --variant needs at least two variants (the first is the reference); "
                        "without --variant, breakdown times this environment alone")
    vlist, reference = variants.parse_variants(items, args.reference)
    prefetch = runner.parse_prefetch(args.prefetch, len(vlist), affinity)
    if not args.target:
        compare._check_not_simulated(args)
    output = args.output or "launchbench-breakdown.json"
    check_outputs([(output, "--output")])
    log = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    resolved, pins = compare.resolve_variant_envs(args, vlist, log)
    output = os.path.abspath(output)
    run_dir = os.path.splitext(output)[0] + ".logs"
    os.makedirs(run_dir, exist_ok=True)
    overlay = envs.make_overlay(os.path.join(run_dir, "overlay"))
    keys = [{"stage": s, "nargs": n} for n in arg_counts for s in stage_list]
    loops = None
    if args.loops:
        if args.loops < 1:
            raise UserError("--loops must be at least 1 per sample")
        loops = {runner.key_id(k): args.loops for k in keys}
    setup = {"workload": "stages", "arg_kind": args.arg_kind, **argkinds.argument_setup(args)}
    if args.target:
        setup["target"] = args.target
    rounds, repeats = args.rounds, args.repeats
    plan = runner.Plan(
        variants=[(v.name, resolved[v.base].python, v.mechanism) for v in vlist], reference=reference,
        arg_counts=arg_counts, loops=loops, repeats=repeats, rounds=rounds, warmup=args.warmup,
        sample_target_s=args.sample_time, simulator=args.simulator, affinity=affinity, peers=False,
        overlay=overlay, log_dir=run_dir, prefetch=prefetch, setup_cpus=runner.setup_cpus(affinity),
        keys=keys, setup=setup, max_time=args.max_time, log_prefix="stages-r",
        modules={v.name: v.base.module for v in vlist if v.base.module != "numba-cuda"})
    host = device.host_info()
    argv = ["launchbench"] + sys.argv[1:] if os.path.basename(sys.argv[0]) in ("launchbench", "__main__.py") else list(sys.argv)
    names = [v.name for v in vlist]

    def document(outcome) -> dict:
        recs = []
        for v in vlist:
            info = outcome.infos.get(v.name, {})
            recs.append({"name": v.name, "spec": v.spec, "mechanism": v.mechanism, "base": v.base.label,
                         "numba_cuda_version": info.get("numba_cuda_version"), "env": resolved[v.base].path,
                         "installed": info.get("installed", {}), "stages": info.get("stages"),
                         "affinity": info.get("affinity"), "pins": pins if v.base.kind != "env" else {}})
        settings = {"arg_counts": arg_counts, "arg_kind": args.arg_kind, "dispatch": args.dispatch, "stages": stage_list,
                    "loops": {str(k): n for k, n in outcome.loops.items()}, "calibrated": loops is None,
                    "sample_target_s": args.sample_time if loops is None else None, "repeats": repeats,
                    "rounds": rounds, "max_time_s": args.max_time, "warmup": args.warmup,
                    "affinity": affinity, "prefetch": prefetch, "gc_disabled": True, "launch": "[1, 1]"}
        return build_document(argv=argv, host=host, settings=settings, reference=reference, variants=recs,
                              outcome=outcome, names=names, simulator=args.simulator)

    last = [0.0]

    def on_round(outcome) -> None:
        if time.monotonic() - last[0] >= WRITE_EVERY_S or outcome.rounds_completed == 1:
            schema_write(output, document(outcome))
            last[0] = time.monotonic()

    progress = runner.Progress(rounds * repeats * len(keys) * len(vlist), enabled=not args.quiet)
    if args.simulator:
        progress.line("launchbench: CUDA SIMULATOR smoke run on a stand-in launch path -- NOT a measurement")
    outcome = runner.run(plan, progress, on_round=on_round)
    runner.raise_setup_failure(outcome)
    doc = document(outcome)
    schema_write(output, doc)
    print(format_text(doc), end="")
    log(f"launchbench: wrote {output}")
    if outcome.interrupted:
        print(f"launchbench: interrupted after {outcome.rounds_completed} rounds ({outcome.reason}); "
              "the results keep the completed rounds", file=sys.stderr)
        return 130 if outcome.reason == "KeyboardInterrupt" else 1
    return 0


def schema_write(path: str, doc: dict) -> None:
    from ..base.atomic import write_json_atomic

    write_json_atomic(path, doc)


def build_document(*, argv, host, settings, reference, variants, outcome, names, simulator) -> dict:
    analysis = (analyze(outcome.samples, names, reference, settings["arg_counts"], settings["stages"])
                if outcome.samples else None)
    device = (outcome.infos.get(reference) or {}).get("device") or {"name": None}
    return {
        "schema": SCHEMA,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": list(argv),
        "simulator": bool(simulator),
        "measurement": not simulator,
        "label": ("stand-in launch path under the CUDA simulator: NOT A MEASUREMENT" if simulator
                  else "launch stages measured on a GPU"),
        "host": host,
        "device": device,
        "settings": settings,
        "reference": reference,
        "variants": variants,
        "tree": {"levels": dict(stages.TREE), "substages": dict(stages.SUBTREE), "leaves": list(stages.LEAVES),
                 "unexplained": list(stages.UNEXPLAINED), "insitu": list(stages.INSITU)},
        "notes": stages.NOTES,
        "analysis": analysis,
        "samples": outcome.samples,
        "partial_samples": outcome.partial_samples,
        "rounds_completed": outcome.rounds_completed,
        "stopped": outcome.stopped,
        "interrupted": outcome.interrupted,
        "interrupt_reason": outcome.reason,
        "timing": runner.timing_json(outcome.timing),
    }
