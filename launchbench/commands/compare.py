"""``launchbench compare``: launch overhead of several numba-cuda variants, measured fairly.

With no variants it runs the embedded default: baseline = numba-cuda 0.29.0,
contextvar = the contextvar mechanism replayed on the baseline (same env),
v2 = numba-cuda 0.30.4, each env pinned like constraints.txt. Each variant's
environment is its own (envs.py); short samples are interleaved across
fresh worker processes, pinned to one CPU, in many short rounds set up ahead
of time (runner.py); deltas are
medians of paired adjacent-sample differences with confidence intervals over
rounds and verdicts (stats.py); the table is the old script's (tables.py);
the JSON (schema.py) is rewritten atomically after every round.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time

from ..base import atomic, childenv, device, signals
from ..base import options as opt
from ..base.errors import UserError
from ..base.options import parse_counts, parse_ints
from ..engine import countdiff, pinning, progressbar, runplan, sequential, stats
from ..engine import lanes as lanes_mod
from ..engine.analysis import analyze, apply_rule, gate_result, peer_stats, per_arg, round_series
from ..engine.pinning import parse_prefetch
from ..engine.runplan import timing_json
from ..environments import envs, variants
from ..environments.variant_options import check_env_options, resolve_variant_envs
from ..output import counts as counts_out
from ..output import documents, report, tables
from ..output.lanes import render as render_lanes
from ..workloads.argkinds import MAX_ARGS as MAX_KERNEL_ARGS
from ..workloads.argkinds import max_args
from . import common_args as ca

ARG_COUNTS = [0, 1, 2, 3, 4]
# Processes, not samples, are the independent units (per-process offsets), so the default
# takes many short rounds, set up ahead on the other CPUs, and stops once every delta's
# interval is narrow enough (--target-ci) or at the time cap. 20 repeats of 2 ms samples pair
# the reference's and the variant's samples closer in time than fewer, longer ones (the runs that
# chose them: lab/README.md, "Measurements behind the code").
DEFAULT_SAMPLE_TIME = ca.SAMPLE_TIME_COMPARE
DEFAULT_REPEATS = ca.REPEATS_COMPARE
DEFAULT_ROUNDS = 400  # a cap: --target-ci or --max-time ends the default run first
DEFAULT_TARGET_CI = 0.5
DEFAULT_MAX_TIME = 120.0
DEFAULT_PINNED_WARMUP = 100
#: rounds whose workers also count bytecodes and calls (after their samples): two fresh processes
#: per variant, so a count that differs between processes shows; each costs well under a second
DEFAULT_COUNT_ROUNDS = 2
MAX_COUNT_ROUNDS = 10
WRITE_EVERY_S = 3.0  # the JSON is rewritten after a finished round at most this often (and at the end)


def register(sub) -> None:
    p = sub.add_parser(
        "compare", help="launch overhead of numba-cuda variants: interleaved rounds, CIs, verdicts",
        description=__doc__.split("\n\n")[0] + " Default: baseline (0.29.0), contextvar on it, v2 (0.30.4).",
    )
    v = p.add_argument_group("variants (the first is the reference)")
    ca.add_repo(v)
    ca.add_variant(v, "numba-cuda==X.Y.Z, repo:PATH, env:PATH (existing env) or MECH@BASE, "
                      "e.g. contextvar@numba-cuda==0.29.0 or delay:0.5us@baseline (repeatable)")
    ca.add_reference(v)
    ca.add_env_options(p.add_argument_group("environments"))
    m = p.add_argument_group("measurement")
    ca.add_args(m, MAX_KERNEL_ARGS)
    ca.add_arg_kind(m)
    m.add_argument("--loops", help="launches per sample, one value or one per arg count "
                                   "(default: calibrated to --sample-time; the old script's: 100000,100000,100000,100000,10000)")
    ca.add_sample_time(m, DEFAULT_SAMPLE_TIME, "calibration target seconds per sample",
                       ": short samples, so a variant's sample and the reference's sample of a repeat slot "
                       "share the machine's state")
    ca.add_repeats(m, DEFAULT_REPEATS, "samples per variant, arg count and round")
    ca.add_rounds(m, DEFAULT_ROUNDS, f"rounds of fresh worker processes; the CI is over rounds (default {DEFAULT_ROUNDS})")
    ca.add_prefetch(m, "compare")
    opt.add_spawn_options(m)
    ca.add_warmup(m)
    m.add_argument("--pinned-warmup", type=opt.PINNED_WARMUP, default=DEFAULT_PINNED_WARMUP, metavar="N",
                   help="of the --warmup launches, the last N run on the measuring CPU just before the round "
                        f"(default {DEFAULT_PINNED_WARMUP}); the rest run during set-up on the other CPUs, "
                        "where they cost the round nothing (N >= --warmup: all on the measuring CPU)")
    ca.add_affinity(m, "compare")
    ca.add_gpus(m, "compare")
    m.add_argument("--spin", metavar="CPUS", default="none",
                   help="keep these CPUs busy for the whole run, e.g. 0; 'auto': the lowest set-up CPU; "
                        "'none' (default). A busy CPU holds a VM's CPUs in one speed state (pinning.Spinners)")
    m.add_argument("--peers", action="store_true", help="also time CuPy, cuda.core and the C floor in the reference's workers")
    ca.add_simulator(m, "smoke mode under NUMBA_ENABLE_CUDASIM=1 on CPU; labelled NOT a measurement")
    m.add_argument("--counts", type=opt.COUNT_ROUNDS, default=DEFAULT_COUNT_ROUNDS, metavar="N",
                   help=f"the first N rounds' workers also count each launch's Python bytecodes, calls and "
                        f"function entries, exactly, after their samples (default {DEFAULT_COUNT_ROUNDS}; "
                        f"0: no counts; at most {MAX_COUNT_ROUNDS}: more processes add nothing to an exact count)")
    s = p.add_argument_group("stopping when the answer is known (sequential.py)")
    s.add_argument("--target-ci", type=opt.TARGET_CI, default=DEFAULT_TARGET_CI, metavar="PCT",
                   help=f"stop once every delta's 95%% half-width is <= PCT %% of the reference (default "
                        f"{DEFAULT_TARGET_CI}; precision mode: the interval reported is then the stopping-valid "
                        "one); --rounds and --max-time cap it; 0: no target, run every --rounds")
    ca.add_fail_if_slower(s, "CI gate: stop once every delta is decided against PCT %%; exit 1 when any delta's "
                             "interval lies wholly above PCT, 0 when all lie below, 3 when undecided at the cap "
                             "(intervals: a confidence sequence, valid at any stopping round)")
    ca.add_min_rounds(s)
    ca.add_max_time(s, DEFAULT_MAX_TIME, f"cap on seconds of measurement: no new round starts after it (default "
                                         f"{DEFAULT_MAX_TIME:g}; 0: no cap)", metavar="S")
    o = p.add_argument_group("output")
    ca.add_output(o, "launchbench-compare.json", "JSON results (default launchbench-compare.json)")
    ca.add_markdown(o)
    o.add_argument("--plot", help="PNG plot (default: next to --output, .png)")
    ca.add_no_report(o)
    ca.add_quiet(o)
    p.set_defaults(func=run)


# ---------------------------------------------------------------- stopping rule and document

def stop_rule(args):
    """The sequential.Rule the options ask for, or None (a fixed number of rounds)."""
    if args.fail_if_slower is not None:
        return sequential.Rule(target_pct=None, threshold_pct=args.fail_if_slower,
                               min_rounds=opt.min_rounds(args.min_rounds, args.rounds))
    if args.target_ci:
        if args.target_ci < 0:
            raise UserError("--target-ci must be a positive percentage, e.g. 0.5 (or 0: no target)")
        return sequential.Rule(target_pct=args.target_ci, min_rounds=opt.min_rounds(args.min_rounds, args.rounds))
    return None


def build_document(*, argv, simulator, host, settings, reference, variants, outcome, confidence=0.95,
                   rule=None) -> dict:
    names = [v["name"] for v in variants]
    stat_recs, delta_recs = analyze(outcome.samples, names, reference, settings["arg_counts"])
    if rule is not None:
        apply_rule(delta_recs, round_series(outcome.samples, names, reference, settings["arg_counts"]),
                   rule, reference, sequential.chosen_stop(outcome.stopped_by_rule, outcome.interrupted))
    label = ("CUDA simulator smoke run: NOT A MEASUREMENT" if simulator
             else "launch overhead measurement on a GPU")
    device = {"name": None}
    info = outcome.infos.get(reference)
    if info:
        device = info.get("device") or device
    return {
        **documents.stamp("compare"),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": list(argv),
        "child_env": childenv.record(),  # names withheld from / passed to builds and workers (base/childenv.py)
        "simulator": bool(simulator),
        "measurement": not simulator,
        "label": label,
        "host": host,
        "device": device,
        "settings": settings,
        "reference": reference,
        "variants": variants,
        "samples": outcome.samples,
        "partial_samples": outcome.partial_samples,
        "stats": stat_recs,
        "deltas": delta_recs,
        # µs per added argument (slope over the arg counts, 95% interval over rounds)
        "per_arg": per_arg(outcome.samples, names, reference, settings["arg_counts"], confidence),
        "confidence": confidence,
        "method": stats.method(settings.get("spawn", "fresh")),
        "peers": ({"samples": outcome.peer_samples, "stats": peer_stats(outcome.peer_samples)}
                  if settings.get("peers") else None),
        "rounds_planned": settings["rounds"],
        "rounds_completed": outcome.rounds_completed,
        "interrupted": outcome.interrupted,
        "interrupt_reason": outcome.reason,
        "timing": timing_json(outcome.timing),
        # exact Python-level counts per launch, per variant, and their diffs (engine/countdiff.py)
        "counts": counts_section(outcome, reference, names),
    }


def counts_section(outcome, reference: str, names: list) -> dict | None:
    """The document's ``counts``: the summary and diffs, plus each process's per-launch totals."""
    return countdiff.section(outcome.counts, reference, names)


# ---------------------------------------------------------------- command

def export_reports(doc: dict, output: str, markdown: str | None = None, plot: str | None = None) -> list:
    """Markdown and PNG next to the JSON unless paths are given (launchbench.output.report renders them)."""
    stem = os.path.splitext(output)[0]
    return list(report.export(doc, markdown=markdown or stem + ".md", plot=plot or stem + ".png"))


def _write_what_fits(doc: dict, outcome, output: str, args, document, kept: list) -> dict:
    """A checkpoint the file system refused (a full disk, a file-size limit) ended the run:
    write what still fits, in order of value -- the JSON (whole; else compact; else the rounds
    of the last checkpoint, compact), then the Markdown, then the PNG -- each recording why the
    run stopped. One line on stderr says what was kept; returns the document the JSON holds
    (the one the reports render), else the whole one."""
    exc = outcome.write_error
    attempts = [(doc, 1), (doc, None)]
    if 0 < kept[1] < len(outcome.samples):
        n_rounds, n_samples = kept
        short = dataclasses.replace(outcome, samples=outcome.samples[:n_samples], partial_samples=[],
                                    rounds_completed=n_rounds,
                                    reason=f"{outcome.reason}; {n_rounds} of {outcome.rounds_completed} "
                                           "finished rounds fit on disk",
                                    peer_samples=[s for s in outcome.peer_samples if s["round"] < n_rounds])
        attempts.append((document(short), None))
    on_disk, lost = None, []
    for candidate, indent in attempts:
        try:
            documents.validate(candidate, "compare")
            atomic.write_json_atomic(output, candidate, indent=indent)
            on_disk = candidate
            break
        except atomic.OutputError:
            continue
    if on_disk is not None:
        saved = [f"{output} ({on_disk['rounds_completed']} of {outcome.rounds_completed} rounds, "
                 "with the reason)"]
    elif atomic.written_here(output):
        saved = [f"{output} (its last checkpoint: {kept[0]} of {outcome.rounds_completed} rounds; the reason "
                 "could not be added)"]
    else:
        saved, lost = [], [output]
    shown = on_disk or doc
    if not args.no_report:
        stem = os.path.splitext(output)[0]
        for option, path in (("markdown", args.markdown or stem + ".md"), ("plot", args.plot or stem + ".png")):
            try:
                report.export(shown, **{option: path})
                saved.append(path)
            except atomic.OutputError:
                lost.append(path)
    why = exc.strerror or str(exc)
    line = (f"launchbench: error: the file system refused {exc.filename or 'an output'} after "
            f"{outcome.rounds_completed} of {args.rounds} rounds ({why}); the run stopped there; kept: "
            f"{', '.join(saved) or 'nothing'}" + (f"; not written: {', '.join(lost)}" if lost else ""))
    fix = atomic.fix_for(exc.errno)
    print(line + (f"; {fix}" if fix else ""), file=sys.stderr)
    return shown


def _settings(args, arg_counts, loops, calibrated, affinity, prefetch=0, spin=None) -> dict:
    return {
        "arg_counts": arg_counts,
        "loops": {str(n): loops[n] for n in arg_counts} if loops else {},
        "calibrated": calibrated,
        "sample_target_s": args.sample_time if calibrated else None,
        "repeats": args.repeats,
        "rounds": args.rounds,
        "warmup": args.warmup,
        "pinned_warmup": min(args.pinned_warmup, args.warmup),
        "affinity": affinity,
        "prefetch": prefetch,
        "spawn": args.spawn,
        **({"fork_rounds": args.fork_rounds} if args.spawn == "fork" else {}),
        "spin_cpus": spin,
        "gc_disabled": True,
        "launch": "[1, 1]",
        "order": ("interleaved: " + ("fresh workers per round" if args.spawn == "fresh" else
                                     f"workers forked per round from zygotes, {args.fork_rounds} rounds per "
                                     "zygote and cluster (intervals over clusters)") +
                  " (set up ahead on the other CPUs), pinned to "
                  "the affinity CPUs and warmed up just before their round; for repeat, for nargs, for "
                  "variant (order rotated every repeat); deltas pair the samples of each repeat slot"),
        "peers": bool(args.peers),
        "arg_kind": getattr(args, "arg_kind", "array"),
        "dispatch": getattr(args, "dispatch", "lazy"),
    }


def run(args) -> int:
    if args.repeats < 1 or args.rounds < 1:
        raise UserError("--repeats and --rounds must be at least 1")
    if not 0 < args.sample_time < float("inf"):
        raise UserError("--sample-time must be positive, e.g. 0.05")
    if args.warmup < 0:
        raise UserError(f"--warmup must be >= 0 launches (got {args.warmup})")
    if args.pinned_warmup < 1:
        raise UserError(f"--pinned-warmup must be >= 1 launch (got {args.pinned_warmup}); "
                        "it warms the measuring CPU's caches for the round")
    # the stopping options, before any environment is built (they once failed after 34 s of venvs)
    if args.max_time is not None and not args.max_time >= 0:
        raise UserError("--max-time must be a number of seconds >= 0, e.g. 120 (0: no cap)")
    stop_rule(args)  # raises on a bad --target-ci
    arg_counts = parse_counts(args.args, "--args", max_args(getattr(args, "arg_kind", None)))  # scalars: up to 256
    loops = None
    if args.loops is not None:
        loops = dict(zip(arg_counts, parse_ints(args.loops, "--loops", minimum=1, count=len(arg_counts), maximum=opt.MAX_LOOPS,
                                                example="100000,100000,100000,100000,10000")))
    lane_setup = lanes_mod.set_up(args.gpus, args.affinity, args.cuda_connections, args.simulator)
    affinity, connections = lane_setup.affinity, lane_setup.connections
    vlist, reference = variants.parse_variants(args.items or [], args.reference)
    prefetch = parse_prefetch(args.prefetch, len(vlist), affinity)
    setup = pinning.setup_cpus(affinity) or []
    spin = pinning.parse_spin(args.spin, affinity, setup)
    reports = ca.report_paths(args, args.output)
    output = ca.plan_outputs(args, args.output, reports)
    env_opts = ca.env_options(args)
    check_env_options(env_opts)
    if not args.simulator:
        device.refuse_without_gpu()

    log = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    resolved, pins = resolve_variant_envs(env_opts, vlist, log)

    run_dir = os.path.splitext(output)[0] + ".logs"
    os.makedirs(run_dir, exist_ok=True)
    overlay = envs.make_overlay(os.path.join(run_dir, "overlay"))
    plan = runplan.Plan(
        variants=[(v.name, resolved[v.base].python, v.mechanism) for v in vlist],
        reference=reference, arg_counts=arg_counts, loops=loops, repeats=args.repeats,
        rounds=args.rounds, warmup=args.warmup, sample_target_s=args.sample_time,
        simulator=args.simulator, affinity=affinity, peers=args.peers, overlay=overlay, log_dir=run_dir,
        prefetch=prefetch, setup_cpus=[c for c in setup if c not in spin] or None, spin_cpus=spin,
        setup=ca.arg_setup(args),
        modules={v.name: v.base.module for v in vlist if v.base.module != "numba-cuda"},
        max_time=args.max_time or None, pinned_warmup=min(args.pinned_warmup, args.warmup),
        count_rounds=args.counts, spawn=args.spawn, fork_rounds=args.fork_rounds, worker_env=lane_setup.worker_env,
        expect={v.name: envs.expected_import(resolved[v.base]) for v in vlist},
    )
    rule = stop_rule(args)
    if rule is not None:
        names = [v.name for v in vlist]

        def stop(outcome):
            series = round_series(outcome.samples, names, reference, arg_counts)
            done, why = sequential.should_stop({k: v[1] for k, v in series.items()}, rule,
                                               outcome.rounds_completed)
            return why if done else None
        plan.stop = stop
    host = device.host_info()
    argv = ["launchbench"] + sys.argv[1:] if os.path.basename(sys.argv[0]) in ("launchbench", "__main__.py") else list(sys.argv)

    def variant_records(outcome) -> list:
        recs = []
        for v in vlist:
            env = resolved[v.base]
            info = outcome.infos.get(v.name, {})
            recs.append({
                "name": v.name, "spec": v.spec, "kind": v.kind, "mechanism": v.mechanism,
                "base": v.base.label, "numba_cuda_version": info.get("numba_cuda_version"),
                "cuda_module_file": info.get("cuda_module_file"),  # checked: workerproc.import_mismatch
                "git_sha": env.git_sha, "pins": pins if v.base.kind != "env" else {},
                "installed": info.get("installed", {}), "python": info.get("python") or env.python_version,
                "env": env.path, "affinity": info.get("affinity"),
            })
        return recs

    def document(outcome):
        settings = _settings(args, arg_counts, outcome.loops, loops is None, affinity, prefetch, spin)
        settings["cuda_connections"] = connections
        doc = build_document(argv=argv, simulator=args.simulator, host=host, settings=settings,
                             reference=reference, variants=variant_records(outcome), outcome=outcome, rule=rule)
        doc["stopped"] = outcome.stopped
        if rule is not None:
            settings["stop_rule"] = {"mode": rule.mode, "target_pct": rule.target_pct,
                                     "threshold_pct": rule.threshold_pct, "min_rounds": rule.min_rounds,
                                     "max_time_s": args.max_time or None}
        if args.fail_if_slower is not None:
            doc["gate"] = gate_result(doc["deltas"], args.fail_if_slower)
        if lane_setup.lanes:
            doc["lanes"] = lanes_mod.report(outcome, [v.name for v in vlist], reference, arg_counts, connections)
        return doc

    last_write = [0.0]
    kept = [0, 0]  # rounds and samples of the last checkpoint on disk

    def on_round(outcome) -> None:
        """Keep the finished rounds on disk (throttled: the document grows with every round)."""
        now = time.monotonic()
        if now - last_write[0] >= WRITE_EVERY_S or outcome.rounds_completed in (1, args.rounds):
            documents.write(output, document(outcome), "compare")
            last_write[0] = time.monotonic()
            kept[:] = [outcome.rounds_completed, len(outcome.samples)]

    total = args.rounds * args.repeats * len(arg_counts) * len(vlist)
    progress = progressbar.Progress(total, enabled=not args.quiet)
    if args.simulator:
        progress.line("launchbench: CUDA SIMULATOR smoke run -- the numbers are NOT a measurement")
    outcome = lane_setup.run(plan, progress, on_round=on_round)
    runplan.raise_setup_failure(outcome)
    doc = document(outcome)
    if outcome.write_error is not None:  # the file system refused a checkpoint: keep what fits
        doc = _write_what_fits(doc, outcome, output, args, document, kept)
    else:
        documents.write(output, doc, "compare")
    print(tables.render(doc), end="")
    print(counts_out.text(doc.get("counts"), doc["deltas"], arg_counts), end="")
    print(render_lanes(doc.get("lanes")), end="")
    if outcome.write_error is not None:
        return 2
    written = [output]
    if not args.no_report:
        written += export_reports(doc, output, markdown=reports["markdown"], plot=reports["plot"])
    log("launchbench: wrote " + ", ".join(written))
    if outcome.interrupted:
        stopped = (f"terminated ({outcome.reason}): " if signals.by_signal(outcome.reason)
                   and outcome.reason != signals.SIGINT_REASON else "")
        print(f"launchbench: {stopped}interrupted after {outcome.rounds_completed} of {args.rounds} rounds "
              f"({outcome.reason}); the results keep the completed rounds", file=sys.stderr)
        return 130 if signals.by_signal(outcome.reason) else 1
    if outcome.stopped:
        log(f"launchbench: stopped: {outcome.stopped}")
    if "gate" in doc:
        g = doc["gate"]
        print(f"launchbench: gate --fail-if-slower {g['fail_if_slower_pct']:g}%: {g['verdict'].upper()} "
              f"(exit {g['exit_code']})")
        return g["exit_code"]
    return 0
