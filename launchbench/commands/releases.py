"""``launchbench releases``: launch cost across released versions (or prebuilt wheels) and their stacks.

Each point of the series (``numba-cuda-mlir==0.3.0..0.6.0``, ``numba-cuda==0.29.0,0.30.4``, a stack
``numba-cuda==0.30.4+cuda-core==1.2.2``, or wheel files in the order given) gets its own environment
on its resolved stack: the newest numba, llvmlite, numpy, cuda-core and cuda-bindings its metadata
allows that import and launch (pins kept). All points are measured together as history measures
commits: fresh processes per round, interleaved paired samples; each point's cost with a 95 % CI,
its step to the previous point with its CI, established steps named. Before the timing, each point's
launch is counted (bytecodes, calls) and its exact counts step shown beside its µs step. A point that
cannot install, import or launch gets one line saying why and the run goes on.

--stack-bisect takes two points of one release (two stacks) and measures the chain between them that
changes one dependency at a time: the dependency whose step is established is named.
"""
from __future__ import annotations

import os
import sys
import time

from ..base import device, outpaths
from ..base.atomic import write_json_atomic
from ..base.errors import UserError
from ..base.options import parse_counts
from ..engine import analysis, commitcounts, stackbisect
from ..engine.history import Session, levels
from ..engine.runplan import launch_keys
from ..environments import releases as rel
from ..environments.stacks import ReleaseEnvs, records_of
from ..environments.variant_options import EnvOptions, check_env_options
from ..output.releases import export, render
from ..workloads.argkinds import max_args
from . import common_args as ca

DEFAULT_ROUNDS = 20
DEFAULT_TRIES = 4
WRITE_EVERY_S = 3.0


def register(sub) -> None:
    p = sub.add_parser("releases", help="launch cost of every release of a range (or prebuilt wheels) on "
                                        "resolved stacks, each step with its CI",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("series", nargs="+", metavar="SERIES",
                   help="PROJECT==A..B, PROJECT==X,Y or PROJECT==X (numba-cuda, numba-cuda-mlir), each optionally "
                        "+DEP==VERSION...+pinned (a stack); or a .whl file or a folder of wheels (prebuilt builds, "
                        "in the order given)")
    p.add_argument("--pin", action="append", default=[], metavar="DEP==VERSION",
                   help="pin a dependency at every point (repeatable); a point's own +DEP==VERSION wins")
    p.add_argument("--stack-bisect", action="store_true",
                   help="two points of one release: measure the chain between their stacks, one dependency "
                        "changed per point, and name the dependency that moves the cost")
    p.add_argument("--tries", type=ca.opt.TRIES, default=DEFAULT_TRIES, metavar="N",
                   help=f"stacks tried per point when the newest does not import or launch (default {DEFAULT_TRIES})")
    ca.add_arg_kind(p.add_argument_group("kernel arguments"))
    ca.add_rounds(p, DEFAULT_ROUNDS, f"rounds of fresh processes (default {DEFAULT_ROUNDS})", for_ci=True)
    ca.add_commit_options(p, "launchbench-releases.json", releases=True)
    ca.add_no_report(p)
    ca.add_commit_counts(p)
    p.set_defaults(func=run_releases)


def global_pins(texts: list) -> dict:
    """``--pin`` values -> {dep: version}; one line for a bad or doubled one."""
    pins, _ = rel.parse_stack(texts, "--pin " + " --pin ".join(texts)) if texts else ((), False)
    if texts and any(t.strip() == "pinned" for t in texts):
        raise UserError("--pin pinned is not a pin; write +pinned after a series item")
    return dict(pins)


def run_releases(args) -> int:
    """Every option and the series' grammar checked first, then the GPU guard, then the index."""
    if args.rounds < 2:
        raise UserError("--rounds must be at least 2 (intervals are over rounds)")
    output = outpaths.check_outputs([(args.output, "--output")],
                                    inputs=[(args.constraints, "the --constraints file")])[0]
    env_opts = EnvOptions(env_dir=args.env_dir, python=args.python, wheels=args.wheels,
                          system_site_packages=args.system_site_packages, constraints=args.constraints,
                          extras=args.extras)
    constraints = check_env_options(env_opts)
    if args.env_dir is not None:
        outpaths.check_folder(args.env_dir, "--env-dir")
    pins = global_pins(args.pin)
    items = [rel.parse_item(t) for t in args.series]
    site_from = (args.python or sys.executable) if args.system_site_packages else None
    holder = {}

    def make_envs(say):
        holder["envs"] = ReleaseEnvs([], None, say, args.env_dir, args.python, args.wheels, args.extras, site_from,
                                     args.target, launch=True, simulator=args.simulator, tries=args.tries,
                                     pinned_stack=constraints)
        return holder["envs"]

    counts = parse_counts(args.args, "--args", max_args(args.arg_kind))  # scalars: up to 256, else 32
    session = Session(ca.commit_settings(args), None, counts, make_envs)
    session.worker_setup = ca.arg_setup(args)  # --arg-kind / --dispatch: every point's kernels take these
    if not (args.simulator or args.target):  # nothing asked of the index for numbers no GPU here can give
        device.refuse_without_gpu()
    envs = holder["envs"]
    envs.index = rel.FolderIndex(args.wheels) if args.wheels else rel.PyPIIndex()
    points = envs.points = rel.points(items, envs.index, pins)
    if args.stack_bisect and (len(points) != 2 or (points[0].project, points[0].version, points[0].wheel)
                              != (points[1].project, points[1].version, points[1].wheel)):
        raise UserError("--stack-bisect takes two points of one release, e.g. 'numba-cuda==0.30.4+pinned' "
                        "'numba-cuda==0.30.4'")
    if len(points) < 2:
        raise UserError("the series has fewer than two points; give a range, a list or several items")
    records = records_of(points, envs.by_name)
    chain_points = None
    if args.stack_bisect:
        records, chain_points = _bisect_chain(session, envs, points, records)
    else:
        session.build(records)
    refused = [{"point": r["sha"], "reason": r["refused"]} for r in records if r.get("refused")]
    n_ok = sum(1 for r in records if r["measured"])
    session.say(f"launchbench: {len(records)} points, {n_ok} to measure, {len(refused)} refused")
    log_dir = os.path.splitext(output)[0] + ".logs"
    last = [0.0]
    state = {}
    series = " ".join(os.path.basename(t) if t.endswith(".whl") else t for t in args.series)
    counts = None

    def make_doc(out):
        doc = session.document(records, out, series, state.get("prefetch", 0), args.rounds, "releases", counts=counts)
        return _finish(doc, records, out, session.arg_counts, refused, chain_points, session.worker_setup, counts)

    def on_round(out) -> None:
        if time.monotonic() - last[0] >= WRITE_EVERY_S:
            write_json_atomic(output, make_doc(out))
            last[0] = time.monotonic()

    if n_ok < 2:
        write_json_atomic(output, {"kind": "releases", "series": series, "points": _public(records),
                                   "refused": refused, "measured": False})
        raise UserError(f"fewer than two points install, import and launch here ({len(refused)} refused, "
                        f"listed above); the reasons are in {output}")
    if args.counts:
        counts = _count(session, records, log_dir)
    out, state["prefetch"] = session.measure(records, args.rounds, log_dir, on_round=on_round)
    doc = make_doc(out)
    write_json_atomic(output, doc)
    written = [output]
    print(render(doc), end="")
    if not args.no_report:
        written += export(doc, output)
    session.say("launchbench: wrote " + ", ".join(written))
    if out.interrupted:
        print(f"launchbench: interrupted after {out.rounds_completed} of {args.rounds} rounds ({out.reason}); "
              "the results keep the completed rounds", file=sys.stderr)
        return 1
    return 0


def _count(session, records: list, log_dir: str) -> dict:
    """Every measured point's launch counted once, in its own environment, before any timing (history's
    pass); a point whose counting fails keeps its error (``commitcounts.unusable``) and is still timed."""
    counts = session.count(records, os.path.join(log_dir, "counts"))
    for point, why in unusable_counts(records, counts).items():
        session.say(f"launchbench: {point}: counts unusable ({why}); timed without them")
    moved = [s for s in commitcounts.steps(records, counts, session.arg_counts) if s.get("moved")]
    session.say(f"launchbench: counts: {len(counts)} points counted ({session.count_jobs} at once) in "
                f"{session.count_seconds:.0f} s; counts move at {len(moved)} point(s)")
    return counts


def unusable_counts(records: list, counts: dict) -> dict:
    """point -> why its counts cannot be compared, for every measured point whose counts are unusable
    (the JSON's ``counts.unusable``: ``per_commit`` is keyed by variant, which names no release)."""
    out = {}
    for r in records:
        if r["measured"] and r.get("variant"):
            why = commitcounts.unusable(counts.get(r["variant"]))
            if why:
                out[r["sha"]] = why
    return out


def _bisect_chain(session, envs, points, records):
    """Resolve both stacks, then the one-pin-at-a-time chain between them as the series' points."""
    session.build(records)
    for r in records:
        if r.get("refused"):
            raise UserError(f"--stack-bisect: {r['sha']}: {r['refused']}")
    a, b = records[0]["stack"], records[1]["stack"]
    chain = stackbisect.chain(a, b)
    if len(chain) < 2:
        raise UserError(f"--stack-bisect: both points resolve to the same stack ({a}); pin a dependency differently")
    base = points[0]
    chain_pts = [rel.Point(base.project, base.version, wheel=base.wheel, pins=tuple(sorted(s.items())))
                 for s, _g in chain]
    recs = records_of(chain_pts, envs.by_name)
    for rec, (stack, group) in zip(recs, chain):
        rec["changed"] = list(group)
    session.build(recs)
    return recs, [(r["sha"], tuple(r["changed"])) for r in recs]


def _public(records: list) -> list:
    return [{k: v for k, v in r.items() if k != "variant_name"} for r in records]


def _finish(doc: dict, records: list, out, arg_counts: list, refused: list, chain_points,
            arguments: dict | None = None, counts: dict | None = None) -> dict:
    """The history document made a releases one: every point's level (cost, 95 % CI), the refusals,
    the kernels' arguments (*arguments*: ``argkinds.argument_setup``'s fields; none: float32 arrays, lazy),
    the points whose *counts* (variant -> ``commitcounts`` result; none: not counted) are unusable
    and the stack bisect's reading."""
    arguments = arguments or {}
    keys = launch_keys(arg_counts)
    by = analysis.group_rounds(out.samples, keys)
    doc["kind"] = "releases"
    doc["label"] = ("CUDA simulator smoke run: NOT A MEASUREMENT" if doc["simulator"]
                    else "launch overhead per release (or prebuilt wheel) and stack on a GPU")
    doc.pop("commits")
    doc["points"] = _public(records)
    doc["levels"] = {r["sha"]: levels(by, r["variant"], keys) for r in records if r["measured"] and r.get("variant")}
    doc["refused"] = refused
    doc["settings"]["arg_kind"] = arguments.get("arg_kind", "array")
    doc["settings"]["dispatch"] = arguments.get("dispatch", "lazy")
    doc["established"] = doc.pop("culprits")
    if counts is not None:
        doc["counts"]["unusable"] = unusable_counts(records, counts)
    if chain_points:
        doc["stack_bisect"] = stackbisect.attribute(chain_points, doc["steps"])
    return doc
