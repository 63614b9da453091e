"""``launchbench mechanisms``: what each capture mechanism adds per launch, switched inside each process.

Kernels for 0..4 args are compiled once and the process is pinned to one CPU;
then, over many short "pair rounds", every mechanism is switched on (in a
shuffled order) and timed over a block of ~100 launches (a few ms), so the
blocks of one pair round are adjacent in time and share the machine's state
(the GPU VM flips between fast and slow spells lasting 0.1 s or more). In one
process, each difference against ``passthrough`` (the wrapper's own cost) and
``stock`` is the median of the per-round paired differences, with a binomial
order-statistic (distribution-free) 95 % interval. By default this runs in
``--processes`` fresh worker processes one after another and the verdict is
judged across them (engine/mechanism_procs.py, engine/mechanism_stats.py): one process's
interval holds only for that process. Raw samples go to the JSON, rewritten atomically as the run
goes, so an interrupted run keeps what it measured.

Why processes: a new process (another memory layout) moves tls - passthrough
by several times the width of one process's own interval (lab/README.md).
With ``--processes 1`` the verdict says "in this process" for that reason.
"""
from __future__ import annotations

import random
import sys
import time
from datetime import datetime, timezone

from ..base import options as opt
from ..base.atomic import write_json_atomic  # noqa: F401 - re-exported for callers and tests
from ..base.device import device_info, host_info
from ..base.errors import UserError
from ..base.options import parse_counts

# the statistics (engine/) and the table (output/) of this command, imported for its callers
from ..engine.mechanism_stats import SCOPE, TARGET_US, analyze, class_write_summary, paired_rounds, target_summary, target_verdict  # noqa: F401
from ..engine.pinning import parse_affinity, pin
from ..output import documents
from ..output.mechanisms import format_table
from ..workloads.capture import mechanisms
from ..workloads.capture.mechanism_rounds import (
    DEFAULT_LAUNCHES,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP,
    DEFAULT_WARMUP_CLASS_WRITE,
    SimulatorDispatcher,
    delay_info,
    make_launchers,
    rewarm,
    session,
    signature_text,
)
from ..workloads.kernels import MAX_ARGS
from . import common_args as ca

DEFAULT_SPECS = ("stock", "passthrough", "contextvar", "tls", "delay:0.5us")
METHOD = ("per pair round, each mechanism's block value is the median of its samples (us/launch); "
          "a delta is the median over pair rounds of (mechanism block - reference block), the blocks "
          "adjacent in time, with a binomial order-statistic 95% interval for that median "
          "(distribution-free); levels are the median block value with the same kind of interval; "
          "mechanisms are switched between blocks in place where possible (passthrough/tls/delay), and a "
          "block whose switch wrote CUDADispatcher warms up past CPython's re-specialization cooldown")
METHOD_PROCESSES = ("in each of N fresh processes: " + METHOD + "; across processes: each process's median "
                    "paired delta (and median level) is one observation, and the reported value is their mean "
                    "with a Student t 95% interval over processes")
DEFAULT_PROCESSES = 20
DEFAULT_MAX_TIME = 100.0   # seconds of measuring (about 1500 pair rounds on a fast machine)
WRITE_EVERY_S = 5.0


# ----------------------------------------------------------------- options

def parse_specs(text: str) -> list[str]:
    """Mechanism specs, canonical and distinct. passthrough is always included (tls and delay are
    judged against it), and stock whenever contextvar is (contextvar's cost is against stock)."""
    specs = []
    if not [part for part in text.split(",") if part.strip()]:
        raise UserError(f"--mechanisms {text!r} names no mechanism; e.g. --mechanisms {','.join(DEFAULT_SPECS)}")
    for part in text.split(","):
        if part.strip():
            try:
                spec = mechanisms.validate(part)
            except UserError as exc:
                raise UserError(f"--mechanisms {text!r}: {exc}") from None
            if spec not in specs:
                specs.append(spec)
    if "passthrough" not in specs:
        specs.insert(0, "passthrough")
    if "contextvar" in specs and "stock" not in specs:
        specs.insert(0, "stock")
    return specs


def _positive(name: str, value: int) -> int:
    if value < 1:
        raise UserError(f"--{name} must be at least 1 (got {value})")
    return value


def _numba_cuda_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("numba-cuda")
    except Exception:  # noqa: BLE001
        return None


# ----------------------------------------------------------------- command

def add_parser(sub):
    """The ``mechanisms`` subcommand's parser; ``mechanisms_procs.register`` points it at its command."""
    p = sub.add_parser(
        "mechanisms",
        help="cost of each launch-config capture mechanism (stock/passthrough/contextvar/tls/delay), "
             "switched inside each of many processes",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("--mechanisms", default=",".join(DEFAULT_SPECS),
                   help="comma-separated specs (default: %(default)s); passthrough is always added, "
                        "and stock when contextvar is measured")
    ca.add_args(p, MAX_ARGS, default="0-4")
    p.add_argument("--processes", type=opt.PROCESSES, default=None,
                   help=f"fresh worker processes, measured one after another, each for its share of --max-time; "
                        f"the intervals are over processes (default {DEFAULT_PROCESSES}; 2 with --simulator); "
                        "1: measure in this process only (the intervals then leave out the process-to-process "
                        "spread)")
    ca.add_prefetch(p, "mechanisms")
    ca.add_rounds(p, None, f"most pair rounds per process (default {DEFAULT_ROUNDS}; 2 with --simulator); "
                           "--max-time may end it sooner")
    ca.add_max_time(p, None, f"seconds of measuring in all, shared out over the processes; a process stops after the "
                             f"pair round that ends past its share (default {DEFAULT_MAX_TIME:g}; none with "
                             "--simulator; 0: no limit)")
    p.add_argument("--samples", type=opt.SAMPLES, default=None, help="timed samples per block (default 1)")
    p.add_argument("--launches", type=opt.LAUNCHES, default=None,
                   help=f"launches per sample (default {DEFAULT_LAUNCHES}, a few ms; 3 with --simulator)")
    p.add_argument("--warmup", type=opt.WARMUP, default=DEFAULT_WARMUP,
                   help="untimed launches before a block whose mechanism was switched in place, without "
                        "writing CUDADispatcher (default %(default)s)")
    p.add_argument("--warmup-class-write", type=opt.WARMUP, default=DEFAULT_WARMUP_CLASS_WRITE,
                   help="untimed launches before a block whose switch wrote CUDADispatcher (to or from stock or "
                        "contextvar): enough for CPython to re-specialize the launch path (default %(default)s)")
    ca.add_affinity(p, "mechanisms", metavar=None)
    p.add_argument("--seed", type=opt.SEED, default=None, help="shuffle seed (default: random, recorded)")
    ca.add_output(p, "mechanisms.json", "JSON path (default: %(default)s)")
    p.add_argument("--pool", nargs="+", metavar="JSON", default=None,
                   help="measure nothing: pool the processes of these earlier runs (same numba-cuda and "
                        "options) into one analysis, written to --output")
    ca.add_quiet(p, short=True, help="no progress lines on stderr")
    ca.add_simulator(p, "smoke run under NUMBA_ENABLE_CUDASIM=1; its numbers are NOT launch costs")
    return p


def settings(args) -> dict:
    """The parsed, checked options (one-line errors for bad ones); nothing is imported or measured."""
    sim = bool(args.simulator)
    processes = _positive("processes", args.processes if args.processes is not None
                          else (2 if sim else DEFAULT_PROCESSES))
    max_time = args.max_time if args.max_time is not None else (0.0 if sim else DEFAULT_MAX_TIME)
    if not max_time >= 0:
        raise UserError(f"--max-time must be >= 0 seconds (got {args.max_time}); 0 means no limit")
    if args.warmup < 0:
        raise UserError(f"--warmup must be >= 0 (got {args.warmup})")
    if args.warmup_class_write < 0:
        raise UserError(f"--warmup-class-write must be >= 0 (got {args.warmup_class_write})")
    return {
        "specs": parse_specs(args.mechanisms), "arg_counts": parse_counts(args.args, "--args", MAX_ARGS), "simulator": sim,
        "processes": processes,
        "rounds": _positive("rounds", args.rounds if args.rounds is not None else (2 if sim else DEFAULT_ROUNDS)),
        "samples": _positive("samples", args.samples if args.samples is not None else 1),
        "launches": _positive("launches", args.launches if args.launches is not None
                              else (3 if sim else DEFAULT_LAUNCHES)),
        "max_time": max_time, "warmup": args.warmup, "warmup_class_write": args.warmup_class_write,
        "affinity": parse_affinity(args.affinity),
        "seed": args.seed if args.seed is not None else random.SystemRandom().randrange(2**32),
    }


def base_document(opts: dict, host: dict) -> dict:
    """What both ways of measuring record about the run (the caller adds the results)."""
    sim = opts["simulator"]
    return {
        "schema": documents.schema_id("mechanisms"),
        "tool": "launchbench mechanisms",
        "measurement": not sim,
        "simulator": sim,
        "note": ("simulator smoke run: the numbers are NOT GPU launch costs" if sim else
                 "per-launch host time of [1, 1] launches of empty kernels with float32[:] device-array args"),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": ["launchbench"] + sys.argv[1:],
        "host": host,
        "params": {"mechanisms": opts["specs"], "arg_counts": opts["arg_counts"], "processes": opts["processes"],
                   "rounds": opts["rounds"], "samples": opts["samples"], "launches": opts["launches"],
                   "warmup": opts["warmup"], "warmup_class_write": opts["warmup_class_write"],
                   "seed": opts["seed"], "unit": "us/launch", "max_time_s": opts["max_time"] or None},
        "method": METHOD,
        "interrupted": False,
    }


def run_here(args, opts) -> int:
    """--processes 1: the pair rounds in this process."""
    sim, specs, arg_counts = opts["simulator"], opts["specs"], opts["arg_counts"]
    from numba import cuda

    launchers = make_launchers(arg_counts, sim)
    pinned = pin(opts["affinity"])
    if pinned:  # re-warm on the CPU we now run on
        rewarm(launchers, cuda.synchronize)
    target = SimulatorDispatcher if sim else None
    doc = base_document(opts, host_info())
    doc.update({"numba_cuda": _numba_cuda_version(), "signature": signature_text(target), "device": device_info(),
                "delay": delay_info(specs), "rounds": []})
    doc["params"]["affinity"] = pinned
    doc["analysis_scope"] = "process"

    def finish(rounds, interrupted=False):
        doc["rounds"] = rounds
        doc["interrupted"] = interrupted
        doc["rounds_complete"] = sum(1 for r in rounds if r["complete"])
        doc["class_writes"] = class_write_summary(rounds)
        doc["analysis"] = analyze(rounds, specs, arg_counts, judge=not sim)
        write_json_atomic(args.output, doc)

    rounds: list[dict] = []
    last_write = [time.monotonic()]

    def checkpoint(done):  # the whole JSON is MBs: rewrite it every few seconds, not every round
        if time.monotonic() - last_write[0] >= WRITE_EVERY_S:
            finish(done)
            last_write[0] = time.monotonic()

    start = time.monotonic()
    try:
        session(launchers, specs, opts, cuda.synchronize, target=target, rounds=rounds, on_round=checkpoint)
    except KeyboardInterrupt:  # run_rounds has uninstalled
        finish(rounds, interrupted=True)
        print(format_table(doc))
        print(f"interrupted: partial results in {args.output}", file=sys.stderr)
        return 130
    finish(rounds)
    doc["elapsed_s"] = round(time.monotonic() - start, 1)
    write_json_atomic(args.output, doc)
    print(format_table(doc))
    print(f"wrote {args.output} ({doc['rounds_complete']} pair rounds in {doc['elapsed_s']:.0f} s)")
    return 0
