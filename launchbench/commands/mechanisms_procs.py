"""``launchbench mechanisms``: the command. With ``--processes`` N >= 2 the in-process session runs in
N fresh worker processes (engine/mechanism_procs.py) and is judged across them
(engine/mechanism_stats.py); with 1 it runs here (mechanisms_cli.run_here). The JSON is rewritten
as processes finish (at most every 3 s, and at the end), so a Ctrl-C or a dying worker loses only
the unfinished one; ``--pool`` joins the processes of several runs into one analysis.
"""
from __future__ import annotations

import os
import sys
import time

from ..base import signals
from ..base.atomic import write_json_atomic
from ..base.device import host_info, require_gpu, simulator_enabled
from ..base.errors import UserError
from ..base.outpaths import check_outputs
from ..engine import mechanism_procs, pinning, progressbar, runplan, workerproc
from ..engine.mechanism_stats import analyze_processes, pool
from ..environments import envs
from ..output import documents
from . import mechanisms_cli

# ----------------------------------------------------------------- command

WRITE_EVERY_S = 3.0


def _tls_line(one: dict, arg_counts: list) -> str:
    """One process's tls - passthrough per arg count (from its own analysis), for the progress lines."""
    got = [one["per_args"][str(n)]["vs_passthrough"].get("tls") for n in arg_counts]
    if not all(got):
        return ""
    return "tls - passthrough " + " ".join(f"{d['delta_us']:+.3f}" for d in got) + " us"


def command(args, opts: dict) -> int:
    """``launchbench mechanisms`` with --processes N >= 2."""
    import os

    specs, arg_counts, n = opts["specs"], opts["arg_counts"], opts["processes"]
    affinity = opts["affinity"]
    prefetch = pinning.parse_prefetch(args.prefetch, 1, affinity)
    output = os.path.abspath(args.output)
    log_dir = os.path.splitext(output)[0] + ".logs"
    os.makedirs(log_dir, exist_ok=True)
    plan = mechanism_procs.Plan(processes=n, seconds_each=opts["max_time"] / n if opts["max_time"] else None,
                                rounds=opts["rounds"], specs=specs, arg_counts=arg_counts, samples=opts["samples"],
                                launches=opts["launches"], warmup=opts["warmup"], warmup_class_write=opts["warmup_class_write"],
                                seed=opts["seed"], affinity=affinity, simulator=opts["simulator"],
                                overlay=envs.make_overlay(os.path.join(log_dir, "overlay")), log_dir=log_dir,
                                prefetch=prefetch, setup_cpus=pinning.setup_cpus(affinity))
    doc = mechanisms_cli.base_document(opts, host_info())
    doc["params"].update({"affinity": affinity, "prefetch": prefetch, "seconds_per_process": plan.seconds_each,
                          "setup_cpus": plan.setup_cpus})
    doc.update({"method": mechanisms_cli.METHOD_PROCESSES, "analysis_scope": "processes"})
    say = (lambda text: None) if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    if opts["simulator"]:
        say("launchbench: CUDA SIMULATOR smoke run -- the numbers are NOT a measurement")

    ones: list = []  # each finished process's own analysis, made once (on_process)

    def finish(out: mechanism_procs.Outcome) -> None:
        first = out.processes[0] if out.processes else {}
        doc.update({
            "numba_cuda": out.info.get("numba_cuda_version"), "python": out.info.get("python"),
            "installed": out.info.get("installed"), "device": out.info.get("device"),
            "signature": first.get("signature"), "delay": first.get("delay", {}),
            "interrupted": out.interrupted, "reason": out.reason,
            "processes": out.processes,
            "rounds_complete": sum(p["rounds_complete"] for p in out.processes),
            "class_writes": mechanisms_cli.class_write_summary([r for p in out.processes for r in p["rounds"]]),
            "analysis": analyze_processes(out.processes, specs, arg_counts, judge=not opts["simulator"], ones=ones),
            "timing": runplan.timing_json(out.timing, 1),
        })
        write_json_atomic(output, doc)

    last_write = [time.monotonic()]

    def on_process(out: mechanism_procs.Outcome) -> None:
        p = out.processes[-1]
        ones.append(mechanisms_cli.analyze(p["rounds"], specs, arg_counts, judge=False))
        say(f"launchbench: process {len(out.processes)}/{n} (pid {p['pid']}): {p['rounds_complete']} pair rounds "
            f"in {p['elapsed_s']:.1f} s; {_tls_line(ones[-1], arg_counts)}")
        if time.monotonic() - last_write[0] >= WRITE_EVERY_S or len(out.processes) == n:
            finish(out)
            last_write[0] = time.monotonic()

    out = mechanism_procs.run(plan, progressbar.Progress(n, enabled=not args.quiet), on_process=on_process)
    if not out.processes and out.error is not None:
        raise UserError(workerproc.worker_error_message(out.error))
    finish(out)
    print(mechanisms_cli.format_table(doc))
    print(f"wrote {args.output} ({len(out.processes)} processes, {doc['rounds_complete']} pair rounds, "
          f"{out.timing['wall_s']:.0f} s)")
    if out.interrupted:
        print(f"launchbench: interrupted after {len(out.processes)} of {n} processes ({out.reason}); "
              "the results keep the finished processes", file=sys.stderr)
        return 130 if signals.by_signal(out.reason) else 1
    return 0


# ----------------------------------------------------------------- pooling runs

def load(path: str) -> dict:
    """A ``launchbench mechanisms`` JSON over processes (plain or gzip-compressed); one-line errors."""
    doc = documents.load(path, "mechanisms")
    if not isinstance(doc, dict):
        raise UserError(f"{path} holds a JSON {type(doc).__name__}, not a `launchbench mechanisms` result")
    if (documents.kind_of(doc) != "mechanisms" or doc.get("analysis_scope") != "processes"
            or not isinstance(doc.get("processes"), list) or not isinstance(doc.get("params"), dict)):
        raise UserError(f"{path} is not a `launchbench mechanisms` run over processes (schema "
                        f"{doc.get('schema')!r}); only runs with --processes 2 or more can be pooled")
    return documents.validate(doc, "mechanisms", path)


def pool_command(args) -> int:
    """``launchbench mechanisms --pool A.json B.json ... -o pooled.json``: no measuring."""
    paths = list(args.pool)
    if len(paths) < 2:
        raise UserError("--pool needs two or more result files, e.g. --pool run1.json run2.json -o pooled.json")
    docs = [load(p) for p in paths]
    seen: dict = {}
    for path in paths:  # the same run twice would count its processes twice
        real = os.path.realpath(path)
        if real in seen:
            raise UserError(f"--pool names {path} twice (also as {seen[real]}); give each run once")
        seen[real] = path
    doc = pool(docs, paths)
    write_json_atomic(args.output, doc)
    print(mechanisms_cli.format_table(doc))
    print(f"wrote {args.output} ({len(doc['processes'])} processes pooled from {len(paths)} runs)")
    return 0


# ----------------------------------------------------------------- the command

def register(sub) -> None:
    mechanisms_cli.add_parser(sub).set_defaults(func=run_command)


def run_command(args) -> int:
    """``launchbench mechanisms``: --pool, --processes N >= 2 (here) or 1 (``mechanisms_cli.run_here``)."""
    check_outputs([(args.output, "--output")], inputs=[(p, "the --pool file") for p in args.pool or ()])
    if args.pool is not None:
        return pool_command(args)
    opts = mechanisms_cli.settings(args)
    if opts["simulator"] and not simulator_enabled():
        if "numba" in sys.modules:  # too late: numba read its configuration when it was imported
            raise UserError("--simulator needs NUMBA_ENABLE_CUDASIM=1 set before numba is imported; "
                            "run NUMBA_ENABLE_CUDASIM=1 launchbench mechanisms --simulator")
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # as compare, counts and breakdown set it for their workers
    require_gpu(allow_simulator=opts["simulator"])
    if opts["processes"] > 1:
        return command(args, opts)
    return mechanisms_cli.run_here(args, opts)
