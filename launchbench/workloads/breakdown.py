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

from .kernels import numba_kernel_and_args
from .stages import base_loops

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


# -- running ------------------------------------------------------------------

def stage_loops_for(arg_counts, warmup: int) -> tuple:
    """(launch path style, {nargs: {stage: loop(n) -> seconds}}), every loop warmed up."""
    style, loops = None, {}
    for nargs in arg_counts:
        k, args = numba_kernel_and_args(nargs)
        style, loops[nargs] = base_loops(k, k[1, 1], args)
        for fn in loops[nargs].values():
            fn(max(10, warmup))
    return style, loops


def collect_stage_samples(stage_loops: dict, loops: int, repeats: int, rotation: int = 0) -> dict:
    """{nargs as text: {stage: [us per call, ...]}}: per arg count, *repeats* passes over the
    stages, their order rotated by *rotation* (the engine's round number)."""
    samples: dict = {}
    for nargs, by_stage in stage_loops.items():
        names = list(by_stage)
        shift = rotation % len(names)
        order = names[shift:] + names[:shift]
        got = samples.setdefault(str(nargs), {name: [] for name in names})
        for _ in range(repeats):
            for name in order:
                got[name].append(by_stage[name](loops) / loops * 1e6)
    return samples


#: The single-environment breakdown's schema id and version (output/documents.py's "breakdown" kind
#: reads it from here; the paired one, version 2, is written by commands/breakdown.py).
SCHEMA = "launchbench.breakdown/1"


def breakdown_document(samples: dict, style, arg_counts, settings: dict, numba_cuda: str | None) -> dict:
    """Stage medians (less the empty loop's) and their summary from samples of any number of rounds."""
    loop_us = statistics.median(x for n in samples for x in samples[n]["loop"])
    stages, summary = {}, {}
    for n, by_name in samples.items():
        med = {name: statistics.median(v) - loop_us for name, v in by_name.items() if name != "loop"}
        for stage in STAGES:
            med.setdefault(stage, None)
        stages[n] = med
        summary[n] = summarize_stages(med)
    return {
        "schema": SCHEMA,
        "numba_cuda": numba_cuda,
        "launch_path": style,
        "arg_counts": list(arg_counts),
        "settings": settings,
        "loop_overhead_us": loop_us,
        "stages": stages,
        "summary": summary,
        "samples_us": samples,
        "notes": NOTES,
    }
