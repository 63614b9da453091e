"""``launchbench breakdown``: each stage of a numba-cuda launch timed on its own, as a table.

In one environment (this process) the stages are timed by launchbench.workloads.breakdown; with
``--variant`` (or ``--simulator``, ``--target``) the paired stage deltas over variants run on the
engine (launchbench.commands.stagedelta).
"""
from __future__ import annotations

from ..base.options import counts_help
from ..workloads.breakdown import NOTES, STAGES


def run_breakdown(counts, loops: int, repeats: int, rounds: int, affinity: str | None = "auto") -> dict:
    """Each stage of this interpreter's numba-cuda launch, timed in rounds of fresh pinned
    workers (the engine); medians over every round's samples."""
    from ..base.device import require_gpu
    from ..engine import runner
    from ..engine.analysis import concat_rounds
    from ..workloads.breakdown import breakdown_document

    require_gpu(smoke_flag=False)
    out = runner.rounds_here({"workload": "breakdown_single", "stage_warmup": max(10, loops // 10)}, counts,
                             {"cmd": "breakdown_round", "loops": loops, "repeats": repeats}, rounds, affinity,
                             "breakdown")
    first = out.units[0]
    settings = {"loops": loops, "repeats": repeats, "rounds": len(out.units),
                "round": "a fresh worker process, set up ahead and pinned (launchbench.engine.runner)"}
    return breakdown_document(concat_rounds(out.units), first["launch_path"], counts, settings,
                              first.get("numba_cuda"))


def format_breakdown(doc: dict) -> str:
    """A stage-by-arg-count table of µs per launch from a breakdown document."""
    counts = [str(n) for n in doc["arg_counts"]]
    by = doc["stages"]
    lines = [
        f"Launch breakdown, numba-cuda {doc.get('numba_cuda') or '?'} "
        f"(launch path: call(args, {'launch_config' if doc['launch_path'] == 'launch_config' else 'griddim, ...'})), us/launch:",
        "stage".ljust(22) + "".join(f"{n + ' args':>10}" for n in counts),
    ]

    def row(label, values):
        cells = ["-".rjust(10) if v is None else f"{v:10.3f}" for v in values]
        lines.append(label.ljust(22) + "".join(cells))

    for stage in STAGES:
        row(stage, [by[n].get(stage) for n in counts])
    row("sum (excl. configure)", [doc["summary"][n]["sum_of_stages"] for n in counts])
    row("full cfg(*args)", [by[n].get("full") for n in counts])
    row("remainder", [doc["summary"][n]["remainder"] for n in counts])
    row("full k[1, 1](*args)", [by[n].get("full_with_configure") for n in counts])
    lines.append(f"(empty-loop cost subtracted from every stage: {doc['loop_overhead_us']:.3f} us)")
    for key, note in NOTES.items():
        lines.append(f"  {key}: {note}")
    return "\n".join(lines)


def add_arguments(p) -> None:
    # None: the mode's own default (SINGLE_DEFAULTS here; launchbench.commands.stagedelta's with --variant)
    p.add_argument("--loops", type=int, default=None, help="calls per sample (default 10000; with --variant: calibrated)")
    p.add_argument("--repeats", type=int, default=None, help="samples per stage per round (default 5; with --variant: 3)")
    p.add_argument("--rounds", type=int, default=None,
                   help="interleaved rounds (default 3; with --variant: 60 rounds of fresh processes, capped by --max-time)")
    p.add_argument("--args", default="0,1,2,3,4", help=counts_help(
        32, what="kernel argument counts (at most 8 in the one-environment mode, without --variant/--simulator)"))
    p.add_argument("--output", "-o", help="write the JSON document here (atomically)")
    from . import stagedelta

    stagedelta.add_arguments(p)


#: The single-environment mode's defaults.
SINGLE_DEFAULTS = {"loops": 10000, "repeats": 5, "rounds": 3}


def run_cli(args) -> int:
    from ..base.atomic import write_json_atomic
    from ..base.options import parse_counts
    from ..workloads.kernels import MAX_ARGS, check_counts

    if getattr(args, "items", None) or getattr(args, "simulator", False) or getattr(args, "target", None):
        from . import stagedelta  # paired stage deltas over variants, on the engine (runner.run)

        return stagedelta.run(args)
    for name, value in SINGLE_DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    counts = parse_counts(args.args, "--args", MAX_ARGS)
    check_counts(args.loops, args.repeats, args.rounds)
    if args.output:
        from ..base.outputs import check_writable

        check_writable(args.output, "--output")
    from ..engine.runner import parse_affinity

    parse_affinity(getattr(args, "affinity", "auto"))  # with the other options, before the GPU guard
    doc = run_breakdown(counts, args.loops, args.repeats, args.rounds, getattr(args, "affinity", "auto"))
    print(format_breakdown(doc))
    if args.output:
        write_json_atomic(args.output, doc)
        print(f"wrote {args.output}")
    return 0


def register(sub) -> None:
    b = sub.add_parser("breakdown", help="time each stage of a numba-cuda launch on its own")
    add_arguments(b)
    b.set_defaults(func=run_cli)
