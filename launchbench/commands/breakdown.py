"""``launchbench breakdown``: each stage of a numba-cuda launch timed on its own, as a table; with
``--variant`` (or ``--simulator``, ``--target``), where the microseconds go and where they moved.

In one environment (this process) the stages are timed by launchbench.workloads.breakdown in
rounds of fresh workers (``engine.breakdown.run_breakdown``). With variants, every stage is a
sample key of the one engine (``runner.run``): interleaved rounds of fresh worker processes, one
per variant, as in ``launchbench compare``; the paired stage deltas, rests, additivity and
per-argument slopes are ``engine.breakdown.analyze``'s, the text ``output.breakdown``'s.
"""
from __future__ import annotations

import os
import sys
import time

from ..base import childenv, device, signals
from ..base import options as opt
from ..base.atomic import write_json_atomic, write_text_atomic
from ..base.errors import UserError
from ..base.options import parse_counts
from ..base.outpaths import check_outputs
from ..engine import breakdown as engine_breakdown
from ..engine import countdiff, pinning, progressbar, runner, runplan
from ..environments import envs, variants
from ..environments.variant_options import check_env_options, resolve_variant_envs
from ..output import breakdown as render
from ..output import documents
from ..output.breakdown import format_breakdown
from ..workloads import argkinds, stages
from ..workloads.kernels import MAX_ARGS, check_counts
from . import common_args as ca

#: The paired mode's defaults (``--variant``).
PAIRED_DEFAULTS = {"rounds": 60, "repeats": 3}
DEFAULT_SAMPLE_TIME = ca.SAMPLE_TIME_COMPARE  # compare's
DEFAULT_MAX_TIME = 240.0
DEFAULT_WARMUP = 200
WRITE_EVERY_S = 10.0
#: rounds whose workers also count the full launch's bytecodes and calls, after their samples
#: (as compare's --counts: two fresh processes per variant show whether the counts agree)
DEFAULT_COUNT_ROUNDS = 2
MAX_COUNT_ROUNDS = 10


def run_breakdown(counts, loops: int, repeats: int, rounds: int, affinity: str | None = "auto") -> dict:
    """Each stage of this interpreter's numba-cuda launch, timed in rounds of fresh pinned workers."""
    return engine_breakdown.run_breakdown(counts, loops, repeats, rounds, affinity, envs.make_overlay)


def add_arguments(p) -> None:
    # None: the mode's own default (SINGLE_DEFAULTS here; PAIRED_DEFAULTS with --variant)
    p.add_argument("--loops", type=opt.LOOPS, default=None, help="calls per sample (default 10000; with --variant: calibrated)")
    ca.add_repeats(p, None, "samples per stage per round", shown="5; with --variant: 3")
    ca.add_rounds(p, None, "interleaved rounds (default 3; with --variant: 60 rounds of fresh processes, capped by "
                           "--max-time)")
    ca.add_args(p, argkinds.MAX_ARGS, what="kernel argument counts (at most 8 in the one-environment mode, "
                                           "without --variant/--simulator)")
    ca.add_output(p, None, "write the JSON document here (atomically)")
    add_paired_arguments(p)


#: The single-environment mode's defaults.
SINGLE_DEFAULTS = {"loops": 10000, "repeats": 5, "rounds": 3}


def run_cli(args) -> int:
    check_env_options(ca.env_options(args))  # both modes: a bad environment option is refused, not ignored
    if getattr(args, "items", None) or getattr(args, "simulator", False) or getattr(args, "target", None):
        return run_paired(args)  # paired stage deltas over variants, on the engine (runner.run)
    for name, value in SINGLE_DEFAULTS.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    if getattr(args, "markdown", None):
        raise UserError("--markdown is the paired mode's report; add --variant A=SPEC --variant B=SPEC")
    counts = parse_counts(args.args, "--args", MAX_ARGS)
    check_counts(args.loops, args.repeats, args.rounds)
    if args.output is not None:
        check_outputs([(args.output, "--output")], inputs=[(getattr(args, "constraints", None), "the --constraints file")])
    pinning.parse_affinity(getattr(args, "affinity", "auto"))  # with the other options, before the GPU guard
    doc = run_breakdown(counts, args.loops, args.repeats, args.rounds, getattr(args, "affinity", "auto"))
    print(format_breakdown(doc))
    if args.output:
        write_json_atomic(args.output, doc)
        print(f"wrote {args.output}")
    return 0


def register(sub) -> None:
    b = sub.add_parser("breakdown", help="time each stage of a numba-cuda launch on its own",
                       description=" ".join(__doc__.split("\n\n")[0].split()).replace("``", "`"))
    add_arguments(b)
    b.set_defaults(func=run_cli)


# ---------------------------------------------------------------- paired mode

def add_paired_arguments(p) -> None:
    """The paired mode's options (the single-environment mode's are add_arguments')."""
    v = p.add_argument_group("paired mode: variants (any of compare's; two or more; the first is the reference)")
    ca.add_variant(v, "numba-cuda==X.Y.Z, repo:PATH, env:PATH or MECH@BASE (repeatable); with "
                      "variants, stages are timed in interleaved rounds of fresh processes")
    ca.add_repo(v, "a numba-cuda checkout")
    ca.add_reference(v)
    ca.add_env_options(p.add_argument_group("paired mode: environments"))
    m = p.add_argument_group("paired mode: measurement")
    ca.add_arg_kind(m)
    m.add_argument("--stages", help="comma-separated stages to time (default: all of launchbench.workloads.stages)")
    m.add_argument("--no-insitu", action="store_true", help="skip the X+launch (in-situ) stages")
    ca.add_sample_time(m, DEFAULT_SAMPLE_TIME, "calibration target seconds per sample")
    ca.add_max_time(m, DEFAULT_MAX_TIME, f"seconds of measurement after which no new round starts (default "
                                         f"{DEFAULT_MAX_TIME:g})")
    ca.add_warmup(m, DEFAULT_WARMUP, "; each stage gets a tenth")
    ca.add_prefetch(m, "breakdown")
    ca.add_affinity(m, "breakdown")
    ca.add_simulator(m, "smoke run on a stand-in launch path under NUMBA_ENABLE_CUDASIM=1; NOT a measurement")
    m.add_argument("--counts", type=opt.COUNT_ROUNDS, default=DEFAULT_COUNT_ROUNDS, metavar="N",
                   help=f"the first N rounds' workers also count the full launch's Python bytecodes, calls and "
                        f"function entries, exactly, after their samples (default {DEFAULT_COUNT_ROUNDS}; 0: no "
                        f"counts; at most {MAX_COUNT_ROUNDS})")
    ca.add_markdown(m, "also write a Markdown report here: the analysis and the exact counts tables", metavar="FILE")
    ca.add_quiet(m)
    ca.add_target(m)


def parse_stages(text: str | None, insitu: bool = True) -> list:
    """--stages: a subset of launchbench.workloads.stages (baselines are always timed)."""
    every = stages.stage_names(insitu=insitu)
    if text is None:
        return every
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    bad = [w for w in wanted if w not in stages.stage_names(insitu=True)]
    if bad or not wanted:
        raise UserError(f"--stages {text!r}: unknown stage(s) {bad}; choose from {','.join(every)}")
    base = [stages.BASELINE] + ([stages.INSITU_BASELINE] if any(w.endswith("+launch") for w in wanted) else [])
    return [s for s in every if s in base or s in wanted]


def run_paired(args) -> int:
    """The paired breakdown: resolve variants as compare does, run the engine with stage keys."""
    # None is "not given"; 0 is given and wrong (``or`` once turned --rounds 0 into the default)
    if args.repeats is None:
        args.repeats = PAIRED_DEFAULTS["repeats"]
    if args.rounds is None:
        args.rounds = PAIRED_DEFAULTS["rounds"]
    if args.repeats < 1 or args.rounds < 1:
        raise UserError("--repeats and --rounds must be at least 1")
    if args.sample_time <= 0 or (args.max_time is not None and args.max_time <= 0):
        raise UserError("--sample-time and --max-time must be positive, e.g. --sample-time 0.002")
    if not 0 <= args.counts <= MAX_COUNT_ROUNDS:
        raise UserError(f"--counts must be a number of rounds from 0 to {MAX_COUNT_ROUNDS} (got {args.counts}); "
                        "counts are exact, so two processes per variant show whether they agree")
    arg_counts = parse_counts(args.args, "--args", argkinds.MAX_ARGS)  # up to 32 arguments, not peers' 8
    stage_list = parse_stages(args.stages, insitu=not args.no_insitu)
    affinity = pinning.parse_affinity(args.affinity)
    # a smoke or stand-in run without variants times this interpreter's environment twice (an A/A pair)
    items = args.items or [("variant", f"here=env:{sys.prefix}"), ("variant", "twin=here")]
    if len(items) < 2:
        raise UserError("breakdown --variant/--repo needs at least two variants (the first is the reference); "
                        "without --variant, breakdown times this environment alone")
    vlist, reference = variants.parse_variants(items, args.reference)
    prefetch = pinning.parse_prefetch(args.prefetch, len(vlist), affinity)
    output = args.output if args.output is not None else "launchbench-breakdown.json"
    output = ca.plan_outputs(args, output, {"markdown": args.markdown})
    if not args.target:
        if not args.simulator:
            device.refuse_without_gpu()
    log = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    resolved, pins = resolve_variant_envs(ca.env_options(args), vlist, log)
    run_dir = os.path.splitext(output)[0] + ".logs"
    os.makedirs(run_dir, exist_ok=True)
    overlay = envs.make_overlay(os.path.join(run_dir, "overlay"))
    keys = [{"stage": s, "nargs": n} for n in arg_counts for s in stage_list]
    loops = None
    if args.loops:
        if args.loops < 1:
            raise UserError("--loops must be at least 1 per sample")
        loops = {runplan.key_id(k): args.loops for k in keys}
    setup = {"workload": "stages", "arg_kind": args.arg_kind, **ca.arg_setup(args)}
    if args.target:
        setup["target"] = args.target
    rounds, repeats = args.rounds, args.repeats
    plan = runplan.Plan(
        variants=[(v.name, resolved[v.base].python, v.mechanism) for v in vlist], reference=reference,
        arg_counts=arg_counts, loops=loops, repeats=repeats, rounds=rounds, warmup=args.warmup,
        sample_target_s=args.sample_time, simulator=args.simulator, affinity=affinity, peers=False,
        overlay=overlay, log_dir=run_dir, prefetch=prefetch, setup_cpus=pinning.setup_cpus(affinity),
        keys=keys, setup=setup, max_time=args.max_time, log_prefix="stages-r", count_rounds=args.counts,
        modules={v.name: v.base.module for v in vlist if v.base.module != "numba-cuda"},
        expect={v.name: envs.expected_import(resolved[v.base]) for v in vlist})
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

    progress = progressbar.Progress(rounds * repeats * len(keys) * len(vlist), enabled=not args.quiet)
    if args.simulator:
        progress.line("launchbench: CUDA SIMULATOR smoke run on a stand-in launch path -- NOT a measurement")
    outcome = runner.run(plan, progress, on_round=on_round)
    runplan.raise_setup_failure(outcome)
    doc = document(outcome)
    schema_write(output, doc)
    print(render.format_text(doc), end="")
    log(f"launchbench: wrote {output}")
    if args.markdown:
        write_text_atomic(args.markdown, render.breakdown_markdown(doc))
        log(f"launchbench: wrote {args.markdown}")
    if outcome.interrupted:
        print(f"launchbench: interrupted after {outcome.rounds_completed} rounds ({outcome.reason}); "
              "the results keep the completed rounds", file=sys.stderr)
        return 130 if signals.by_signal(outcome.reason) else 1
    return 0


def schema_write(path: str, doc: dict) -> None:
    write_json_atomic(path, doc)


def build_document(*, argv, host, settings, reference, variants, outcome, names, simulator) -> dict:
    analysis = (engine_breakdown.analyze(outcome.samples, names, reference, settings["arg_counts"], settings["stages"])
                if outcome.samples else None)
    device = (outcome.infos.get(reference) or {}).get("device") or {"name": None}
    return {
        "schema": documents.schema_id("breakdown", documents.PAIRED_BREAKDOWN),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": list(argv),
        "child_env": childenv.record(),  # names withheld from / passed to builds and workers (base/childenv.py)
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
        "timing": runplan.timing_json(outcome.timing),
        # exact Python-level counts of each variant's full launch (engine/countdiff.py), beside the µs
        "counts": countdiff.section(outcome.counts, reference, names),
    }
