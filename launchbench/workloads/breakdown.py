"""Where a numba-cuda launch spends its time, stage by stage, measured.

Each stage of ``k[1, 1](*args)`` is re-run on its own, in a loop, with the
same objects the real launch uses (the cached configured launch, the
compiled ``_Kernel``, its prepared arguments), so every number is a
measurement of numba-cuda's own code rather than an estimate:

configure       ``k[1, 1]``: ``__getitem__`` and the lru_cached ``configure``
type_dispatch   ``_dispatcher.Dispatcher._cuda_call(k, *args)`` -- typeof of
                every argument and the overload lookup, in C (0.30 passes the
                launch config as a keyword; both forms are the real call)
lc_bookkeeping  0.30+ only: the launch-args swap in and out of TLS, the LC-S
                dispatcher selection, the sensitivity update and the (empty)
                pre-launch callback loop of ``CUDADispatcher.call``
cufunc_lookup   ``kernel._codelibrary.get_cufunc().kernel`` (context lookup
                plus per-device cache hit)
marshal_args    the ``_prepare_args`` loop of ``_Kernel.launch``
launch_config   ``cuda.core.LaunchConfig(...)`` as ``_Kernel.launch`` builds it
driver_launch   ``cuda.core.launch(stream, config, kernel, *kernelargs)`` with
                the prepared config and arguments (cuda.core's own argument
                packing included -- it cannot be separated from the call)

``full`` is the preconfigured launch ``cfg(*args)``; the stages it contains
(all but configure) are summed and the difference is reported as the
unexplained remainder: Python frames and attribute reads between the
layers, which no stage isolates. Loops of launches end with one
synchronize inside the timed region, as everywhere in launchbench. The
cost of an empty Python loop iteration is measured and subtracted from
every stage so that summing stages does not count it several times.

numba and numpy are imported only when a breakdown runs.
"""
from __future__ import annotations

import statistics

from .kernels import kernel_source, numba_kernel_and_args, quiet_occupancy_warnings  # noqa: F401 - their old home
from .stages import base_loops, launch_path_style  # noqa: F401 - launch_path_style: its old home

ARG_COUNTS = (0, 1, 2, 3, 4)

STAGES = (
    "configure",
    "type_dispatch",
    "lc_bookkeeping",
    "cufunc_lookup",
    "marshal_args",
    "launch_config",
    "driver_launch",
)
#: Stages that are part of a preconfigured launch ``cfg(*args)``.
IN_FULL = STAGES[1:]
TOTALS = ("full", "full_with_configure")

NOTES = {
    "lc_bookkeeping": "absent before numba-cuda 0.30 (no launch-config capture in the launch path)",
    "driver_launch": "includes cuda.core's packing of the marshalled Python values into kernel params",
    "remainder": "full minus the sum of its stages: frames and attribute reads between layers",
}


# -- pure summaries -----------------------------------------------------------

def summarize_stages(medians: dict[str, float | None]) -> dict:
    """Sum of the stages inside a preconfigured launch, and what is left over.

    *medians* maps stage and total names to µs (None: not in this version).
    """
    parts = [medians.get(s) for s in IN_FULL]
    total = sum(p for p in parts if p is not None)
    full = medians.get("full")
    out = {"sum_of_stages": total, "full": full, "remainder": None, "explained_fraction": None}
    if full:
        out["remainder"] = full - total
        out["explained_fraction"] = total / full
    fwc = medians.get("full_with_configure")
    if fwc is not None and full is not None:
        out["configure_in_full_launch"] = fwc - full
    return out


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


# -- running ------------------------------------------------------------------

def run_breakdown(arg_counts=ARG_COUNTS, loops: int = 10000, repeats: int = 5, rounds: int = 3) -> dict:
    """Measure every stage for every arg count; medians of interleaved samples, µs."""
    from ..base.device import require_gpu

    require_gpu(smoke_flag=False)
    from importlib.metadata import version

    samples: dict[str, dict[str, list[float]]] = {}
    style = None
    stage_loops = {}
    for nargs in arg_counts:
        k, args = numba_kernel_and_args(nargs)
        cfg = k[1, 1]
        style, stage_loops[nargs] = base_loops(k, cfg, args)
        for fn in stage_loops[nargs].values():  # warm-up
            fn(max(10, loops // 10))
        samples[str(nargs)] = {name: [] for name in stage_loops[nargs]}
    for r in range(rounds):
        for nargs in arg_counts:
            names = list(stage_loops[nargs])
            shift = r % len(names)
            order = names[shift:] + names[:shift]
            for _ in range(repeats):
                for name in order:
                    samples[str(nargs)][name].append(stage_loops[nargs][name](loops) / loops * 1e6)
    loop_us = statistics.median(x for n in samples for x in samples[n]["loop"])
    stages, summary = {}, {}
    for n, by_name in samples.items():
        med = {name: statistics.median(v) - loop_us for name, v in by_name.items() if name != "loop"}
        for stage in STAGES:
            med.setdefault(stage, None)
        stages[n] = med
        summary[n] = summarize_stages(med)
    return {
        "schema": "launchbench.breakdown/1",
        "numba_cuda": version("numba-cuda"),
        "launch_path": style,
        "arg_counts": list(arg_counts),
        "settings": {"loops": loops, "repeats": repeats, "rounds": rounds},
        "loop_overhead_us": loop_us,
        "stages": stages,
        "summary": summary,
        "samples_us": samples,
        "notes": NOTES,
    }


def add_arguments(p) -> None:
    # None: the mode's own default (SINGLE_DEFAULTS here; launchbench.commands.stagedelta's with --variant)
    p.add_argument("--loops", type=int, default=None, help="calls per sample (default 10000; with --variant: calibrated)")
    p.add_argument("--repeats", type=int, default=None, help="samples per stage per round (default 5; with --variant: 3)")
    p.add_argument("--rounds", type=int, default=None,
                   help="interleaved rounds (default 3; with --variant: 60 rounds of fresh processes, capped by --max-time)")
    p.add_argument("--args", default="0,1,2,3,4", help="comma-separated argument counts (default 0..4)")
    p.add_argument("--output", "-o", help="write the JSON document here (atomically)")
    from ..commands import stagedelta

    stagedelta.add_arguments(p)


#: The single-environment mode's defaults.
SINGLE_DEFAULTS = {"loops": 10000, "repeats": 5, "rounds": 3}


def run_cli(args) -> int:
    from ..base.atomic import write_json_atomic
    from .kernels import check_counts, parse_arg_counts

    if getattr(args, "items", None) or getattr(args, "simulator", False) or getattr(args, "target", None):
        from ..commands import stagedelta  # paired stage deltas over variants, on the engine (runner.run)

        return stagedelta.run(args)
    for name, value in SINGLE_DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    counts = parse_arg_counts(args.args)
    check_counts(args.loops, args.repeats, args.rounds)
    if args.output:
        from ..base.outputs import check_writable

        check_writable(args.output, "--output")
    doc = run_breakdown(counts, args.loops, args.repeats, args.rounds)
    print(format_breakdown(doc))
    if args.output:
        write_json_atomic(args.output, doc)
        print(f"wrote {args.output}")
    return 0
