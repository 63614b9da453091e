"""numba-cuda-mlir's launch path by stage: ``python -m launchbench.workloads.stages_mlir``.

Why a module of its own: mlir's launch path shares none of numba-cuda's
stages below the configured call. ``k[1, 1]`` returns an ``_ArgMarshaller``
(``numba_cuda_mlir/descriptor.py``, 0.6.0) whose call is, in order:

lock_frame          ``_ArgMarshaller.__call__``: looks up the dispatcher's
                    ``_launch_lock`` and runs ``_call_impl`` inside it
                    (timed with ``_call_impl`` replaced by a C no-op)
sig_lookup          ``_call_impl``'s fast path: the ``type(a)`` key, the
                    signature-cache hit and, for arrays, the per-array
                    ``_array_cache_key`` check and CAI stream sync (timed with
                    ``_launch`` replaced by a C no-op)
launch_bookkeeping  ``_launch``'s Python part: saving, setting and restoring
                    five thread-local compile slots and the planner check
                    (timed with the native launcher replaced by a C no-op)
native_launch       the C++ ``LaunchConfiguration`` call: argument packing and
                    the driver launch in one native call (no Python stage to
                    split; compare it with the peers' driver floor)

Levels, each timed whole: ``full`` (``cfg(*args)``), ``marshaller_call``
(``_call_impl``) and ``launch_frame`` (``_launch``). ``full`` minus the four
stages is the rest: what they cost more inside the real launch than alone.
``configure`` (``k[1, 1]``, a cached lookup in mlir too) is outside ``full``.

What is comparable with numba-cuda's breakdown (launchbench.workloads.stages):
``full`` and ``configure`` are the same calls; ``sig_lookup`` plays
``type_dispatch``'s part (in Python here, in C there); ``launch_bookkeeping``
is mlir's LC bookkeeping (numba-cuda 0.30's ``lc_bookkeeping``); numba-cuda's
``cufunc_lookup``, ``marshal_args``, ``launch_config`` and ``driver_launch``
all sit inside mlir's one ``native_launch``. Single process, interleaved
repeats: a short look, not the engine's paired rounds. Import-light: the
CUDA package is imported only when a breakdown runs.
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys

from ..base import cudamod
from ..base.atomic import write_json_atomic
from ..base.errors import UserError
from ..base.options import counts_help, parse_counts
from .kernels import MAX_ARGS, numba_kernel_and_args
from .stages import empty_loop, inline_loop

STAGES = ("lock_frame", "sig_lookup", "launch_bookkeeping", "native_launch")
LEVELS = ("full", "marshaller_call", "launch_frame")
OUTSIDE = ("configure",)
BASELINE = "loop"
#: the document's id and version, here because this runs in a numba-cuda-mlir worker (a workload may
#: not import output/; output/documents.py's "breakdown-mlir" kind reads it from here)
SCHEMA = "launchbench.breakdown-mlir/1"
#: mlir stage -> the numba-cuda stage(s) it stands for (None: no counterpart)
COUNTERPART = {
    "lock_frame": "configured_call (numba-cuda 0.29/0.30 take no lock)",
    "sig_lookup": "type_dispatch",
    "launch_bookkeeping": "lc_bookkeeping",
    "native_launch": "cufunc_lookup + marshal_args + launch_config + driver_launch",
}
_NOOP = "".format  # a C callable taking any positional arguments: a stand-in costs no Python frame


def marshaller_of(cfg):
    """The ``_ArgMarshaller`` a configured mlir launch is; a clear error for anything else."""
    needed = ("_call_impl", "_launch", "_launcher", "_sig_cache")
    if not all(hasattr(cfg, name) for name in needed):
        raise UserError(f"k[1, 1] is a {type(cfg).__module__}.{type(cfg).__name__}, not numba-cuda-mlir's "
                        f"_ArgMarshaller; run this in an environment with numba-cuda-mlir 0.6")
    return cfg


def mlir_loops(kernel, cfg, args, sync) -> dict:
    """``{stage: loop(n) -> seconds}`` for every stage, level, ``configure`` and the empty loop.

    The hollow copies share the real marshaller's caches, so each runs exactly
    the code the real launch runs up to the call it stands in for.
    """
    m = marshaller_of(cfg)
    argtypes = list(m._sig_cache[tuple(type(a) for a in args)][0])
    no_lock = copy.copy(m)
    no_lock._call_impl = _NOOP
    no_launch = copy.copy(m)
    no_launch._launch = _NOOP
    no_native = copy.copy(m)
    no_native._launcher = _NOOP
    names = [f"a{i}" for i in range(len(args))]
    call_args = ", ".join(names)
    ns = {"k": kernel, "cfg": m, "no_lock": no_lock, "no_launch": no_launch, "no_native": no_native,
          "native": m._launcher, "argtypes": argtypes, "args": list(args), "_sync": sync,
          **dict(zip(names, args))}
    bodies = {
        "full": (f"cfg({call_args})", True),
        "marshaller_call": (f"cfg._call_impl({call_args})", True),
        "launch_frame": ("cfg._launch(argtypes, args)", True),
        "native_launch": (f"native({call_args})", True),
        "lock_frame": (f"no_lock({call_args})", False),
        "sig_lookup": (f"no_launch._call_impl({call_args})", False),
        "launch_bookkeeping": ("no_native._launch(argtypes, args)", False),
        "configure": ("k[1, 1]", False),
    }
    loops = {BASELINE: empty_loop()}
    for name, (src, launches) in bodies.items():
        loops[name] = inline_loop(src, ns, sync=launches, name=name)
    return loops


def summarize(medians: dict) -> dict:
    """The partition of ``full`` (µs): its stages, their sum and the rest; and each level's own rest."""
    full = medians.get("full")
    total = sum(medians[s] for s in STAGES)
    out = {"sum_of_stages": total, "full": full, "rest": None if full is None else full - total}
    if medians.get("marshaller_call") is not None:
        out["rest:marshaller_call"] = (medians["marshaller_call"]
                                       - sum(medians[s] for s in STAGES if s != "lock_frame"))
    if medians.get("launch_frame") is not None:
        out["rest:launch_frame"] = (medians["launch_frame"] - medians["launch_bookkeeping"]
                                    - medians["native_launch"])
    return out


def document(samples: dict, counts, settings: dict, version: str | None) -> dict:
    """Medians less the empty loop's, per arg count, and their summary."""
    loop_us = statistics.median(x for n in samples for x in samples[n][BASELINE])
    stages, summary = {}, {}
    for n, by_name in samples.items():
        med = {name: statistics.median(v) - loop_us for name, v in by_name.items() if name != BASELINE}
        stages[n] = med
        summary[n] = summarize(med)
    return {"schema": SCHEMA, "numba_cuda_mlir": version, "arg_counts": list(counts), "settings": settings,
            "loop_overhead_us": loop_us, "stages": stages, "summary": summary, "samples_us": samples,
            "counterparts": COUNTERPART}


def collect(loops_by_n: dict, loops: int, repeats: int) -> dict:
    """``{nargs: {stage: [µs, ...]}}``: *repeats* passes, the stage order rotated each pass."""
    samples: dict = {}
    for nargs, by_stage in loops_by_n.items():
        names = list(by_stage)
        got = samples.setdefault(str(nargs), {name: [] for name in names})
        for rep in range(repeats):
            shift = rep % len(names)
            for name in names[shift:] + names[:shift]:
                got[name].append(by_stage[name](loops) / loops * 1e6)
    return samples


def format_table(doc: dict) -> str:
    counts = [str(n) for n in doc["arg_counts"]]
    lines = [f"numba-cuda-mlir {doc.get('numba_cuda_mlir') or '?'} launch by stage, us/launch:",
             "stage".ljust(22) + "".join(f"{n + ' args':>10}" for n in counts)]

    def row(label, values):
        lines.append(label.ljust(22) + "".join(f"{v:>10.2f}" if v is not None else f"{'-':>10}" for v in values))

    for name in LEVELS[:1] + STAGES + LEVELS[1:] + OUTSIDE:
        row(name, [doc["stages"][n].get(name) for n in counts])
    for key in ("rest", "rest:marshaller_call", "rest:launch_frame"):
        row(key, [doc["summary"][n].get(key) for n in counts])
    return "\n".join(lines)


def run(counts, loops: int, repeats: int) -> dict:
    """Build the kernels (through launchbench.base.cudamod's module choice) and time every stage."""
    from importlib import metadata

    cuda = cudamod.import_cuda()
    by_n = {}
    for nargs in counts:
        kernel, args = numba_kernel_and_args(nargs)
        cfg = kernel[1, 1]
        cfg(*args)
        cuda.synchronize()
        by_n[nargs] = mlir_loops(kernel, cfg, args, cuda.synchronize)
        for fn in by_n[nargs].values():
            fn(max(10, loops // 10))
    try:
        version = metadata.version(cudamod.distribution())
    except metadata.PackageNotFoundError:
        version = None
    settings = {"loops": loops, "repeats": repeats, "process": "one, stages interleaved"}
    return document(collect(by_n, loops, repeats), counts, settings, version)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m launchbench.workloads.stages_mlir",
                                description="numba-cuda-mlir's launch path by stage (set "
                                            "LAUNCHBENCH_CUDA_MODULE=numba-cuda-mlir)")
    p.add_argument("--args", default="0,1,2,3,4", help=counts_help(MAX_ARGS))
    p.add_argument("--loops", type=int, default=5000, help="calls per sample (default 5000)")
    p.add_argument("--repeats", type=int, default=7, help="samples per stage (default 7)")
    p.add_argument("-o", "--output", help="write the JSON document here")
    a = p.parse_args(argv)
    try:
        counts = parse_counts(a.args, "--args", MAX_ARGS)
        if a.loops < 1 or a.repeats < 1:
            raise UserError("--loops and --repeats must be >= 1")
        doc = run(counts, a.loops, a.repeats)
    except UserError as exc:
        print(f"launchbench: {exc}", file=sys.stderr)
        return 2
    print(format_table(doc))
    if a.output:
        write_json_atomic(a.output, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
