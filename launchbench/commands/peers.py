"""``launchbench peers``: numba-cuda's launch next to CuPy, cuda.core and the C floor, as a table.

The launchers and their interleaved samples are launchbench.workloads.peers'; here are the
options and the JSON document; the statistics of the samples (overhead over the floor, per-argument
slopes) are engine/peerstats.py's, the table output/peers.py's. ``--breakdown`` adds launchbench breakdown's stage table.
"""
from __future__ import annotations

import sys
import time

from ..base import options as opt
from ..base.atomic import write_json_atomic
from ..base.device import device_info, host_info, require_gpu
from ..base.errors import UserError
from ..base.options import parse_counts
from ..base.outpaths import check_outputs
from ..engine import pinning, runner
from ..engine.analysis import concat_rounds
from ..engine.breakdown import run_breakdown
from ..engine.peerstats import analyze, summarize
from ..environments import envs
from ..output import documents
from ..output.breakdown import format_breakdown
from ..output.peers import format_table
from ..workloads.kernels import MAX_ARGS, check_counts
from ..workloads.peers import LAUNCHERS
from . import common_args as ca

# -- the document ---------------------------------------------------------------

def _jsonable_counts(d: dict) -> dict:
    return {str(k): v for k, v in d.items()}


def build_document(samples, arg_counts, settings, unavailable_reasons, context=None) -> dict:
    """The peers JSON document (string keys for arg counts, as JSON needs)."""
    results = {name: {str(n): summarize(per[n]) for n in arg_counts} for name, per in samples.items()}
    medians = {name: {n: results[name][str(n)]["median_us"] for n in arg_counts} for name in samples}
    analysis = analyze(medians)
    doc = {
        "schema": documents.schema_id("peers"),
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
        check_outputs([(args.output, "--output")])
    pinning.parse_affinity(args.affinity)  # with the other options, before the GPU guard
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
    p = sub.add_parser("peers", help="numba-cuda's launch next to CuPy, cuda.core and a raw cuLaunchKernel loop",
                       description="Time numba-cuda's kernel launch next to CuPy's, cuda.core's and a C loop of "
                       "cuLaunchKernel (the floor), interleaved in fresh worker processes; a launcher whose "
                       "package is missing is listed as unavailable. Needs a GPU.")
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
