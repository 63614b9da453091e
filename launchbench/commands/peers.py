"""``launchbench peers``: numba-cuda's launch next to CuPy, cuda.core and the C floor, as a table.

The launchers and their interleaved samples are launchbench.workloads.peers'; here are the
options, the statistics of the samples (overhead over the floor, per-argument slopes), the JSON
document and the table. ``--breakdown`` adds launchbench breakdown's stage table.
"""
from __future__ import annotations

import statistics
import sys
import time

from ..base.atomic import write_json_atomic
from ..base.errors import UserError
from ..engine.breakdown import run_breakdown
from ..environments import envs
from ..output.breakdown import format_breakdown
from ..base import options as opt
from ..base.options import parse_counts
from ..workloads.kernels import MAX_ARGS, check_counts
from ..workloads.peers import LABELS, LAUNCHERS
from ..engine.analysis import concat_rounds
from ..engine import runner
from ..base.device import device_info, host_info, require_gpu
from ..base.outputs import check_writable
from . import common_args as ca


# -- pure statistics and tables ------------------------------------------------

def fit_line(xs, ys) -> tuple[float, float]:
    """Least-squares (slope, intercept) of ys over xs: slope is the per-arg cost."""
    xs, ys = list(xs), list(ys)
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("fit_line needs at least two (x, y) points of equal count")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("fit_line needs at least two distinct x values")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def summarize(samples: list[float]) -> dict:
    """Median, median absolute deviation, min and count of one cell's samples."""
    med = statistics.median(samples)
    return {
        "median_us": med,
        "mad_us": statistics.median(abs(s - med) for s in samples),
        "min_us": min(samples),
        "n": len(samples),
    }


def analyse(medians: dict[str, dict[int, float]], subject: str = "numba_cuda", floor: str = "floor") -> dict:
    """Overhead of *subject* over *floor* per arg count, and each launcher's per-arg slope."""
    overhead = {}
    if subject in medians and floor in medians:
        for n in sorted(set(medians[subject]) & set(medians[floor])):
            s, f = medians[subject][n], medians[floor][n]
            overhead[n] = {"us": s - f, "ratio": s / f if f > 0 else None}
    slopes = {}
    for name, per in medians.items():
        counts = sorted(per)
        if len(set(counts)) >= 2:
            slope, intercept = fit_line(counts, [per[n] for n in counts])
            slopes[name] = {"us_per_arg": slope, "intercept_us": intercept}
    return {"overhead_vs_floor": overhead, "per_arg": slopes}


def format_table(doc: dict) -> str:
    """The peers table (µs/launch), overhead over the floor, and per-arg costs."""
    names = [n for n in LAUNCHERS if n in doc["results"]]
    counts = doc["arg_counts"]
    width = 14
    lines = ["Launch cost, us/launch (median of %d samples of %d launches each):"
             % (doc["settings"]["repeats"] * doc["settings"]["rounds"], doc["settings"]["loops"])]
    header = "args" + "".join(f"{LABELS[n]:>{width}}" for n in names)
    over = doc["analysis"]["overhead_vs_floor"]
    if over:
        header += f"{'numba - floor':>{width + 2}}{'numba / floor':>{width}}"
    lines.append(header)
    for n in counts:
        key = str(n)
        row = f"{n:<4}" + "".join(f"{doc['results'][name][key]['median_us']:>{width}.2f}" for name in names)
        if key in over:
            ratio = over[key]["ratio"]
            row += f"{over[key]['us']:>{width + 2}.2f}" + (f"{ratio:>{width - 1}.1f}x" if ratio else f"{'-':>{width}}")
        lines.append(row)
    slopes = doc["analysis"]["per_arg"]
    if slopes:
        lines.append("us per extra arg (least-squares slope over arg count):")
        lines.append("    " + "".join(
            f"{slopes[name]['us_per_arg']:>{width}.3f}" if name in slopes else f"{'-':>{width}}" for name in names))
    for name, reason in doc.get("unavailable", {}).items():
        lines.append(f"{LABELS.get(name, name)}: not measured ({reason})")
    return "\n".join(lines)


def _jsonable_counts(d: dict) -> dict:
    return {str(k): v for k, v in d.items()}


def build_document(samples, arg_counts, settings, unavailable_reasons, context=None) -> dict:
    """The peers JSON document (string keys for arg counts, as JSON needs)."""
    results = {name: {str(n): summarize(per[n]) for n in arg_counts} for name, per in samples.items()}
    medians = {name: {n: results[name][str(n)]["median_us"] for n in arg_counts} for name in samples}
    analysis = analyse(medians)
    doc = {
        "schema": "launchbench.peers/1",
        "arg_counts": list(arg_counts),
        "settings": dict(settings),
        "results": results,
        "samples_us": {name: _jsonable_counts(per) for name, per in samples.items()},
        "analysis": {
            "overhead_vs_floor": _jsonable_counts(analysis["overhead_vs_floor"]),
            "per_arg": analysis["per_arg"],
        },
        "unavailable": dict(unavailable_reasons),
    }
    doc.update(context or {})
    return doc


# -- CLI ------------------------------------------------------------------------

def parse_launchers(text: str | None) -> list[str]:
    if text is None:
        return list(LAUNCHERS)
    names = [part.strip() for part in text.split(",") if part.strip()]
    bad = [n for n in names if n not in LAUNCHERS]
    if bad or not names:
        raise UserError(f"--only {text!r}: unknown launcher(s) {bad}; choose from {','.join(LAUNCHERS)}")
    return [n for n in LAUNCHERS if n in names]


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("numba-cuda", "numba", "numpy", "cuda-core", "cuda-bindings", "cupy-cuda13x", "cupy-cuda12x"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return out


def merge_rounds(units: list, names: list, counts: list) -> tuple[dict, dict]:
    """The engine rounds' replies -> ({name: {nargs: samples over all rounds}}, {name: reason}).
    A launcher that could not run in some round is left out of every round's table."""
    reasons: dict = {}
    for unit in units:
        reasons.update(unit.get("unavailable") or {})
    ran = [n for n in names if n not in reasons and all(n in u.get("samples", {}) for u in units)]
    merged = concat_rounds(units)
    return {n: {c: merged[n][str(c)] for c in counts} for n in ran}, reasons


def measure_on_engine(args, names: list, counts: list) -> tuple[dict, dict]:
    """Rounds of fresh worker processes (launchbench's one engine), each with every launcher
    built during set-up and its samples interleaved in the worker."""
    out = runner.rounds_here(
        {"workload": "peers", "launchers": names, "peer_warmup": max(10, min(args.loops, 2000)),
         **ca.arg_setup(args)}, counts,
        {"cmd": "peers_round", "arg_counts": counts, "loops": args.loops, "repeats": args.repeats, "warmup": 100},
        args.rounds, getattr(args, "affinity", "auto"), "peers", envs.make_overlay)
    samples, reasons = merge_rounds(out.units, names, counts)
    if not samples:
        raise UserError("no launcher could run here: " + "; ".join(f"{k}: {v}" for k, v in reasons.items()))
    return samples, reasons


def run_peers(args) -> int:
    counts = parse_counts(args.args, "--args", MAX_ARGS)
    check_counts(args.loops, args.repeats, args.rounds)
    names = parse_launchers(args.only)
    if args.output is not None:
        check_writable(args.output, "--output")
    runner.parse_affinity(args.affinity)  # with the other options, before the GPU guard
    require_gpu(smoke_flag=False)
    started = time.time()
    samples, reasons = measure_on_engine(args, names, counts)
    settings = {"loops": args.loops, "repeats": args.repeats, "rounds": args.rounds,
                "round": "a fresh worker process, set up ahead and pinned (launchbench.engine.runner)",
                "grid": 1, "block": 1, "stream": "legacy default (0)",
                "timed_region": "loops launches + one synchronize, divided by loops",
                "numba_cuda_args": {"kind": args.arg_kind, "dispatch": args.dispatch}}
    context = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "elapsed_s": round(time.time() - started, 1),
        "host": host_info(),
        "device": device_info(),
        "versions": _versions(),
        "python": sys.executable,
    }
    # lazy: a C extension; at module level an unbuilt checkout could not even run launchbench --help
    from ..workloads import _floor

    if _floor.available():
        context["device"]["cu_driver_version"] = _floor.driver_version()
    doc = build_document(samples, counts, settings, reasons, context)
    if args.breakdown:
        doc["breakdown"] = run_breakdown(counts, args.loops, args.repeats, args.rounds, args.affinity,
                                         envs.make_overlay)
    print(format_table(doc))
    if args.breakdown:
        print()
        print(format_breakdown(doc["breakdown"]))
    if args.output:
        write_json_atomic(args.output, doc)
        print(f"wrote {args.output}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("peers", help="numba-cuda's launch next to CuPy, cuda.core and a raw cuLaunchKernel loop")
    p.add_argument("--loops", type=opt.LOOPS, default=10000, help="launches per sample, same for every launcher (default 10000)")
    ca.add_repeats(p, ca.REPEATS_PEERS, "samples per launcher per round")
    ca.add_rounds(p, 3, "rounds, each a fresh worker process with every launcher interleaved (default 3)")
    ca.add_affinity(p, "peers")
    ca.add_args(p, MAX_ARGS)
    p.add_argument("--only", help=f"comma-separated launchers (default all: {','.join(LAUNCHERS)})")
    p.add_argument("--breakdown", action="store_true", help="also time numba-cuda's launch stage by stage")
    ca.add_arg_kind(p)  # numba-cuda's launcher only: the peers launch raw pointers
    ca.add_output(p, None, "write the JSON document here (atomically)")
    p.set_defaults(func=run_peers)
