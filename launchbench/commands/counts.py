"""``launchbench counts``: the exact Python-level counts of each variant's launch, ranked and diffed.

For each variant (compare's --variant/--repo grammar and environments), one or two fresh worker
processes set their kernels up and count, launch by launch, the Python bytecodes, calls and
function entries of ``k[1, 1](*args)`` at each arg count (``workloads.counts``). Nothing is
timed, so there is no calibration, no timed warm-up and no rounds beyond those processes: a
run takes the time the workers need to start. The report ranks the launch path's functions by
bytecodes per launch (where the Python time goes), per module too, and gives the exact
difference of each variant from the reference, per function.
"""
from __future__ import annotations

import os
import sys
import time

from ..base import childenv, device, signals
from ..base import options as opt
from ..base.atomic import write_text_atomic
from ..base.errors import UserError
from ..base.options import parse_counts
from ..engine import countdiff, countpass, progressbar, runplan
from ..engine.runplan import timing_json
from ..environments import envs, variants
from ..environments.variant_options import check_env_options, resolve_variant_envs
from ..output import counts as counts_out
from ..output import documents
from ..workloads.argkinds import MAX_ARGS as MAX_KERNEL_ARGS
from ..workloads.counts import DEFAULT_LAUNCHES
from . import common_args as ca

MAX_LAUNCHES = 10_000


def register(sub) -> None:
    p = sub.add_parser(
        "counts", help="exact Python bytecodes, calls and function entries per launch: ranked, diffed, no timing",
        description=__doc__.split("\n\n")[0] + " Default variants: compare's (0.29.0, contextvar on it, 0.30.4).",
    )
    v = p.add_argument_group("variants (the first is the reference)")
    ca.add_repo(v)
    ca.add_variant(v, "numba-cuda==X.Y.Z, numba-cuda-mlir==X.Y.Z, repo:PATH, env:PATH or MECH@BASE, e.g. "
                      "hoist-imports@numba-cuda==0.30.4 (repeatable; one variant is enough for the ranking)")
    ca.add_reference(v, "variant the differences are taken against (default: the first)")
    ca.add_env_options(p.add_argument_group("environments"))
    m = p.add_argument_group("what is counted")
    ca.add_args(m, MAX_KERNEL_ARGS)
    ca.add_arg_kind(m)
    m.add_argument("--processes", type=opt.COUNT_PROCESSES, default=countpass.DEFAULT_PROCESSES, metavar="N",
                   help=f"fresh processes per variant (default {countpass.DEFAULT_PROCESSES}: whether every "
                        f"process gives the same counts shows; 1: fastest; at most {countpass.MAX_PROCESSES})")
    m.add_argument("--launches", type=opt.COUNT_LAUNCHES, default=DEFAULT_LAUNCHES, metavar="N",
                   help=f"launches counted one by one per process and arg count (default {DEFAULT_LAUNCHES})")
    ca.add_simulator(m, "count the CUDA simulator's launch path on CPU (NUMBA_ENABLE_CUDASIM=1), not numba-cuda's")
    o = p.add_argument_group("output")
    o.add_argument("--top", type=opt.TOP_FUNCTIONS, default=counts_out.TOP_RANKED, metavar="N",
                   help=f"functions ranked per variant (default {counts_out.TOP_RANKED})")
    ca.add_output(o, "launchbench-counts.json", "JSON (default launchbench-counts.json)")
    ca.add_markdown(o)
    ca.add_no_report(o, "write only the JSON (and print the tables)")
    ca.add_quiet(o)
    p.set_defaults(func=run)


def check_options(args) -> tuple[list, list, str]:
    """(arg counts, variants, reference), or a one-line UserError; before any environment is built."""
    if not 1 <= args.processes <= countpass.MAX_PROCESSES:
        raise UserError(f"--processes must be 1 to {countpass.MAX_PROCESSES} (got {args.processes}); counts are "
                        "exact, so 2 fresh processes show whether they agree")
    if not 1 <= args.launches <= MAX_LAUNCHES:
        raise UserError(f"--launches must be 1 to {MAX_LAUNCHES} (got {args.launches}); every counted launch "
                        f"is counted on its own, e.g. --launches {DEFAULT_LAUNCHES}")
    if args.top < 1:
        raise UserError(f"--top must be at least 1 function (got {args.top}), e.g. --top {counts_out.TOP_RANKED}")
    arg_counts = parse_counts(args.args, "--args", MAX_KERNEL_ARGS)
    ca.arg_setup(args)  # --arg-kind / --dispatch, checked
    vlist, reference = variants.parse_variants(args.items or [], args.reference, minimum=1)
    return arg_counts, vlist, reference


def build_document(*, argv, args, host, arg_counts, reference, vlist, resolved, outcome) -> dict:
    names = [v.name for v in vlist]
    records = []
    for v in vlist:
        env = resolved[v.base]
        info = outcome.infos.get(v.name, {})
        rec = {"name": v.name, "spec": v.spec, "kind": v.kind, "mechanism": v.mechanism, "base": v.base.label,
               "numba_cuda_version": info.get("numba_cuda_version"), "git_sha": env.git_sha,
               "installed": info.get("installed", {}), "python": info.get("python") or env.python_version,
               "env": env.path}
        if info.get("mechanism_details") is not None:
            rec["mechanism_details"] = info["mechanism_details"]
        records.append(rec)
    ref_info = outcome.infos.get(reference) or {}
    label = ("CUDA simulator: the counts of the simulator's launch path (NOT numba-cuda's)" if args.simulator
             else "Exact Python-level counts of each variant's launch (k[1, 1](*args))")
    return {
        **documents.stamp("counts"),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": list(argv), "child_env": childenv.record(), "simulator": bool(args.simulator), "label": label, "host": host,
        "device": ref_info.get("device") or {"name": None},
        "settings": {"arg_counts": arg_counts, "arg_kind": args.arg_kind, "dispatch": args.dispatch,
                     "processes": args.processes, "launches": args.launches, "top": args.top},
        "reference": reference, "variants": records,
        "counts": countdiff.section(outcome.counts, reference, names),
        "rounds_completed": outcome.rounds_completed, "interrupted": outcome.interrupted,
        "interrupt_reason": outcome.reason, "timing": timing_json(outcome.timing),
    }


def run(args) -> int:
    arg_counts, vlist, reference = check_options(args)
    markdown = ca.report_paths(args, args.output, ("markdown",))["markdown"]
    output = ca.plan_outputs(args, args.output, {"markdown": markdown})
    env_opts = ca.env_options(args)
    check_env_options(env_opts)  # the environment options, like every other option, before the GPU guard
    if not args.simulator:
        device.refuse_without_gpu()
    log = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    resolved, _pins = resolve_variant_envs(env_opts, vlist, log)

    run_dir = os.path.splitext(output)[0] + ".logs"
    os.makedirs(run_dir, exist_ok=True)
    plan = countpass.plan(
        [(v.name, resolved[v.base].python, v.mechanism) for v in vlist], reference, arg_counts,
        processes=args.processes, launches=args.launches, simulator=args.simulator,
        overlay=envs.make_overlay(os.path.join(run_dir, "overlay")), log_dir=run_dir, setup=ca.arg_setup(args),
        modules={v.name: v.base.module for v in vlist if v.base.module != "numba-cuda"},
        expect={v.name: envs.expected_import(resolved[v.base]) for v in vlist})
    progress = progressbar.Progress(args.processes * len(vlist), enabled=not args.quiet)
    if args.simulator:
        progress.line("launchbench: CUDA SIMULATOR: counting the simulator's launch path, not numba-cuda's")
    argv = ["launchbench"] + sys.argv[1:] if os.path.basename(sys.argv[0]) in ("launchbench", "__main__.py") else list(sys.argv)
    host = device.host_info()

    def document(outcome):
        return build_document(argv=argv, args=args, host=host, arg_counts=arg_counts, reference=reference,
                              vlist=vlist, resolved=resolved, outcome=outcome)

    outcome = countpass.run(plan, progress, on_round=lambda out: documents.write(output, document(out), "counts"))
    runplan.raise_setup_failure(outcome)
    doc = document(outcome)
    documents.write(output, doc, "counts")
    print(counts_out.report_text(doc), end="")
    written = [output]
    if markdown:
        written.append(write_text_atomic(markdown, counts_out.report_markdown(doc)))
    log("launchbench: wrote " + ", ".join(written))
    if outcome.interrupted:
        print(f"launchbench: interrupted after {outcome.rounds_completed} of {args.processes} processes per variant "
              f"({outcome.reason}); the results keep the finished ones", file=sys.stderr)
        return 130 if signals.by_signal(outcome.reason) else 1
    return 0
