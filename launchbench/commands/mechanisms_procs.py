"""``launchbench mechanisms`` over many fresh processes: the verdict's unit is a process.

Why: a process's memory layout, hash seeds and allocator state shift a
launch's cost by a few percent, and they shift the *difference* between two
mechanisms too, by more than one process's own interval is wide
(lab/README.md). An interval from one process describes that process only.

So the in-process measurement (interleaved pair rounds, mechanisms switched
in place; see mechanisms_cli) runs in N fresh worker processes, a slice of
the time budget each. Each process gives one paired delta per mechanism and
arg count (the median of its pair-round differences); the reported delta is
the mean of those N values with a Student t interval over processes, which
holds the process-to-process spread as well as the noise inside each. As in
``compare``, the next processes are set up (import, compile) on the CPUs
that do not measure while one measures, and only the measuring one is pinned
to the measuring CPU. Every finished process is kept: the JSON is rewritten
as processes finish (at most every 3 s, and at the end), and a Ctrl-C or a
dying worker loses only the unfinished one.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass, field

from . import mechanisms_cli
from ..engine import pinning, progressbar, runner, runplan, workerproc
from ..base.errors import UserError
from ..base import signals
from ..engine.stats import mean_ci, over_units
from ..environments import envs
from ..base.atomic import write_json_atomic
from ..base.device import host_info, require_gpu, simulator_enabled
from ..base.outputs import check_writable
from ..output import documents

#: untimed launches per kernel after a worker is pinned to the measuring CPU, before its rounds
PREPARE_WARMUP = 200


@dataclass
class Plan:
    processes: int
    seconds_each: float | None   # measuring time per process (None: until `rounds`)
    rounds: int                  # most pair rounds per process
    specs: list
    arg_counts: list
    samples: int
    launches: int
    warmup: int
    warmup_class_write: int
    seed: int
    affinity: list | None
    simulator: bool
    overlay: str
    log_dir: str
    python: str = sys.executable
    prefetch: int = 0
    setup_cpus: list | None = None


@dataclass
class Outcome:
    processes: list = field(default_factory=list)
    info: dict = field(default_factory=dict)   # the first worker's set-up info (versions, device)
    interrupted: bool = False
    reason: str | None = None
    error: workerproc.WorkerError | None = None
    timing: dict = field(default_factory=lambda: {"wall_s": 0.0, "setup_wait_s": 0.0, "measure_s": 0.0,
                                                  "teardown_s": 0.0})


def process_seed(seed: int, index: int) -> int:
    """Each process's shuffle seed, derived from the run's seed (recorded per process too)."""
    return (seed * 1_000_003 + index) % 2**32


def _measure_process(mplan: Plan):
    """The engine's measure step for one round = one fresh process: a whole in-process
    mechanisms session, kept as one unit."""
    def measure(plan: runplan.Plan, rnd: int, workers: dict, out: runplan.Outcome, progress) -> None:
        worker = workers[PROCESS]
        info = out.round_infos[PROCESS]
        seed = process_seed(mplan.seed, rnd)
        reply = worker.request({"cmd": "mechanisms", "specs": mplan.specs, "max_time": mplan.seconds_each,
                                "rounds": mplan.rounds, "samples": mplan.samples, "launches": mplan.launches,
                                "warmup": mplan.warmup, "warmup_class_write": mplan.warmup_class_write,
                                "seed": seed})
        out.units.append({"index": rnd, "pid": info.get("pid"), "seed": seed, "affinity": info.get("affinity"),
                          "numba_cuda": info.get("numba_cuda_version"), "signature": reply["signature"],
                          "delay": reply["delay"], "elapsed_s": reply["elapsed_s"],
                          "setup_state": info.get("setup_state"), "end_state": reply.get("end_state"),
                          "rounds_complete": sum(1 for r in reply["rounds"] if r["complete"]),
                          "rounds": reply["rounds"]})
        progress.tick(f"process {rnd + 1}/{mplan.processes}")
    return measure


PROCESS = "process"


def engine_plan(plan: Plan) -> runplan.Plan:
    """The engine's view of a mechanisms run: one variant, one process a round, no calibration."""
    return runplan.Plan(
        variants=[(PROCESS, plan.python, None)], reference=PROCESS, arg_counts=plan.arg_counts, loops={},
        repeats=1, rounds=plan.processes, warmup=PREPARE_WARMUP, sample_target_s=0.0,
        simulator=plan.simulator, affinity=plan.affinity, peers=False, overlay=plan.overlay,
        log_dir=plan.log_dir, prefetch=plan.prefetch, setup_cpus=plan.setup_cpus,
        measure=_measure_process(plan), log_prefix="worker-p")


def run(plan: Plan, progress: progressbar.Progress, on_process=None) -> Outcome:
    """Measure in plan.processes fresh workers, one at a time (the engine's rounds); returns what
    finished, even when interrupted."""
    out = Outcome()

    def on_round(engine_out: runplan.Outcome) -> None:
        out.processes = engine_out.units
        out.info = engine_out.infos.get(PROCESS, {})
        out.timing = engine_out.timing
        if on_process is not None:
            on_process(out)

    res = runner.run(engine_plan(plan), progress, on_round=on_round)
    out.processes, out.info = res.units, res.infos.get(PROCESS, {})
    out.interrupted, out.reason, out.error, out.timing = res.interrupted, res.reason, res.error, res.timing
    return out


# ----------------------------------------------------------------- statistics (pure)

def across(per_process: list[dict], confidence: float = 0.95) -> dict:
    """One delta from per-process deltas (each a stats.pooled_median_delta dict): the mean over
    processes with a Student t interval, plus the spread that interval has to cover."""
    us = [d["delta_us"] for d in per_process]
    pct = [d["delta_pct"] for d in per_process]
    return {"processes": len(us), **over_units(us, pct, "processes", confidence), "median_us": statistics.median(us),
            "sd_between_processes_us": statistics.stdev(us) if len(us) > 1 else 0.0,
            "per_process_us": us}


def scope_text(n_processes: int) -> str:
    return (f"{n_processes} processes: each process's median paired delta is one observation; the mean over "
            "processes and its Student t interval include the variation between processes (memory layout) "
            "and over time (the machine's slower spells)")


def analyse(processes: list[dict], specs: list, arg_counts: list, target: float = mechanisms_cli.TARGET_US,
            judge: bool = True, ones: list | None = None) -> dict:
    """The across-process analysis, shaped like the in-process one (``per_args`` with
    ``median_us``, ``vs_passthrough``, ``vs_stock``, ``tls_target``); levels are means of the
    processes' median levels. Judged only with two or more processes. *ones*: each process's own
    analysis, if the caller has it already (a run keeps them as its processes finish)."""
    if ones is None:
        ones = [mechanisms_cli.analyse(p["rounds"], specs, arg_counts, judge=False) for p in processes]
    results = {}
    for nargs in arg_counts:
        key = str(nargs)
        entries = [one["per_args"][key] for one in ones if key in one["per_args"]]
        medians, median_cis = {}, {}
        for spec in specs:
            levels = [e["median_us"][spec] for e in entries if spec in e["median_us"]]
            if levels:
                m, lo, hi = mean_ci(levels)
                medians[spec], median_cis[spec] = m, [lo, hi]
        entry = {"median_us": medians, "median_ci_us": median_cis, "vs_passthrough": {}, "vs_stock": {}}
        for slot in ("vs_passthrough", "vs_stock"):
            for spec in specs:
                got = [e[slot][spec] for e in entries if spec in e[slot]]
                if got:
                    entry[slot][spec] = across(got)
        tls = entry["vs_passthrough"].get("tls")
        if tls is not None and judge and tls["processes"] >= 2:
            entry["tls_target"] = {"target_us": target, "verdict": mechanisms_cli.target_verdict(tls["ci_us"], target)}
        results[key] = entry
    return {"per_args": results,
            "tls_target": mechanisms_cli.target_summary(results, target, judge, scope_text(len(processes)),
                                                        unmeasured="not measured (needs 2 or more processes)")}


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
    plan = Plan(processes=n, seconds_each=opts["max_time"] / n if opts["max_time"] else None,
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

    def finish(out: Outcome) -> None:
        first = out.processes[0] if out.processes else {}
        doc.update({
            "numba_cuda": out.info.get("numba_cuda_version"), "python": out.info.get("python"),
            "installed": out.info.get("installed"), "device": out.info.get("device"),
            "signature": first.get("signature"), "delay": first.get("delay", {}),
            "interrupted": out.interrupted, "reason": out.reason,
            "processes": out.processes,
            "rounds_complete": sum(p["rounds_complete"] for p in out.processes),
            "class_writes": mechanisms_cli.class_write_summary([r for p in out.processes for r in p["rounds"]]),
            "analysis": analyse(out.processes, specs, arg_counts, judge=not opts["simulator"], ones=ones),
            "timing": runplan.timing_json(out.timing, 1),
        })
        write_json_atomic(output, doc)

    last_write = [time.monotonic()]

    def on_process(out: Outcome) -> None:
        p = out.processes[-1]
        ones.append(mechanisms_cli.analyse(p["rounds"], specs, arg_counts, judge=False))
        say(f"launchbench: process {len(out.processes)}/{n} (pid {p['pid']}): {p['rounds_complete']} pair rounds "
            f"in {p['elapsed_s']:.1f} s; {_tls_line(ones[-1], arg_counts)}")
        if time.monotonic() - last_write[0] >= WRITE_EVERY_S or len(out.processes) == n:
            finish(out)
            last_write[0] = time.monotonic()

    out = run(plan, progressbar.Progress(n, enabled=not args.quiet), on_process=on_process)
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

#: what must agree for processes of several runs to be pooled into one analysis
SAME_FOR_POOLING = ("numba_cuda", "signature", "simulator")
SAME_PARAMS_FOR_POOLING = ("mechanisms", "arg_counts", "samples", "launches", "warmup", "warmup_class_write")


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


def pool(docs: list, paths: list) -> dict:
    """One document whose processes are those of all *docs* (which must have measured the same
    thing the same way), analysed together: more processes, a narrower interval over them."""
    first = docs[0]
    for doc, path in zip(docs[1:], paths[1:]):
        for key in SAME_FOR_POOLING:
            if doc.get(key) != first.get(key):
                raise UserError(f"cannot pool {path} with {paths[0]}: {key} differs ({doc.get(key)!r} vs "
                                f"{first.get(key)!r}); pool only runs of the same numba-cuda")
        for key in SAME_PARAMS_FOR_POOLING:
            if doc["params"].get(key) != first["params"].get(key):
                raise UserError(f"cannot pool {path} with {paths[0]}: --{key.replace('_', '-')} differs "
                                f"({doc['params'].get(key)!r} vs {first['params'].get(key)!r}); pool runs made "
                                "with the same options")
    processes = []
    for run_index, (doc, path) in enumerate(zip(docs, paths)):
        for p in doc["processes"]:
            processes.append(dict(p, run=run_index))
    out = {k: v for k, v in first.items() if k not in ("processes", "analysis", "timing")}
    out["params"] = dict(first["params"], processes=len(processes))
    out["command"] = ["launchbench"] + sys.argv[1:]
    out["pooled_from"] = [{"path": path, "created": doc.get("created"), "command": doc.get("command"),
                           "processes": len(doc["processes"]), "interrupted": doc.get("interrupted")}
                          for doc, path in zip(docs, paths)]
    out["interrupted"] = any(doc.get("interrupted") for doc in docs)
    out["processes"] = processes
    out["rounds_complete"] = sum(p["rounds_complete"] for p in processes)
    out["class_writes"] = mechanisms_cli.class_write_summary([r for p in processes for r in p["rounds"]])
    out["timing"] = {k: round(sum(doc.get("timing", {}).get(k, 0.0) for doc in docs), 1)
                     for k in ("wall_s", "setup_wait_s", "measure_s", "teardown_s")}
    out["analysis"] = analyse(processes, first["params"]["mechanisms"], first["params"]["arg_counts"],
                              judge=not first.get("simulator"))
    return out


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
    check_writable(args.output, "--output")
    if args.pool is not None:
        return pool_command(args)
    opts = mechanisms_cli.settings(args)
    if opts["simulator"] and not simulator_enabled():
        raise UserError("--simulator needs NUMBA_ENABLE_CUDASIM=1 set before launchbench starts; "
                        "run NUMBA_ENABLE_CUDASIM=1 launchbench mechanisms --simulator")
    require_gpu(allow_simulator=opts["simulator"])
    if opts["processes"] > 1:
        return command(args, opts)
    return mechanisms_cli.run_here(args, opts)
