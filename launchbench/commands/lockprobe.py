"""``launchbench lock-probe``: does a hot launch take the global compiler lock (numba-cuda-mlir #243)?

Each numba-cuda-mlir release of the series (the grammar of ``launchbench releases``) gets its own
environment on its resolved stack; in one fresh process per release, a plain kernel, then with a
planner registered a plain and an LC-S kernel, are compiled and warmed, and each hot launch is started
while another thread holds the global compiler lock: it completes while held or it waits. The hot
launch's cost is timed beside. A release without the planner API says so in one line.
"""
from __future__ import annotations

import os
import sys
import time

from ..base import device, outpaths
from ..base.atomic import write_json_atomic
from ..base.errors import UserError
from ..engine import lockprobe as engine
from ..engine.history import command_line
from ..environments import releases as rel
from ..environments.stacks import ReleaseEnvs, records_of
from ..environments.variant_options import EnvOptions, check_env_options
from ..output.lockprobe import document, render
from ..workloads import lockprobe as probe
from . import common_args as ca

DEFAULT_OUTPUT = "launchbench-lock-probe.json"
PROJECT = "numba-cuda-mlir"
#: --timeout: a launch that has not returned after this long while the lock is held waits for it
HELD_TIMEOUT_S = ca.opt.Number(float, 0, 600.0, "seconds each held launch may wait; a hot launch takes "
                               "microseconds, so ten minutes is no probe", above=True, example=2)


def register(sub) -> None:
    p = sub.add_parser("lock-probe", help="numba-cuda-mlir releases: does a hot launch (plain, LC-S with a "
                                          "planner) complete while the global compiler lock is held",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("series", nargs="+", metavar="SERIES",
                   help="numba-cuda-mlir==A..B, ==X,Y or ==X (optionally +DEP==VERSION...+pinned), or .whl files")
    p.add_argument("--pin", action="append", default=[], metavar="DEP==VERSION",
                   help="pin a dependency at every point (repeatable)")
    p.add_argument("--tries", type=ca.opt.TRIES, default=4, metavar="N",
                   help="stacks tried per point when the newest does not import or launch (default 4)")
    ca.add_env_options(p.add_argument_group("builds and environments"), commits=True, releases=True)
    m = p.add_argument_group("the probe")
    m.add_argument("--timeout", type=HELD_TIMEOUT_S, default=probe.DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"seconds a hot launch has to complete while the lock is held (default {probe.DEFAULT_TIMEOUT_S})")
    m.add_argument("--loops", type=ca.opt.LOOPS, default=probe.DEFAULT_LOOPS,
                   help=f"hot launches per timed sample (default {probe.DEFAULT_LOOPS})")
    ca.add_repeats(m, probe.DEFAULT_REPEATS, "timed samples per kernel and form")
    ca.add_target(m)  # a stand-in API (tests on CPU)
    o = p.add_argument_group("output")
    ca.add_output(o, DEFAULT_OUTPUT, f"JSON results (default {DEFAULT_OUTPUT})")
    ca.add_quiet(o)
    p.set_defaults(func=run_lock_probe)


def run_lock_probe(args) -> int:
    output = outpaths.check_outputs([(args.output, "--output")],
                                    inputs=[(args.constraints, "the --constraints file")])[0]
    constraints = check_env_options(EnvOptions(env_dir=args.env_dir, python=args.python, wheels=args.wheels,
                                               system_site_packages=args.system_site_packages,
                                               constraints=args.constraints, extras=args.extras))
    if args.env_dir is not None:
        outpaths.check_folder(args.env_dir, "--env-dir")
    if any(t.strip() == "pinned" for t in args.pin):
        raise UserError("--pin pinned is not a pin; write +pinned after a series item")
    pins = dict(rel.parse_stack(args.pin, "--pin " + " --pin ".join(args.pin))[0]) if args.pin else {}
    items = [rel.parse_item(t) for t in args.series]
    for item in items:
        if item.project not in (PROJECT, None):  # None: wheel files, checked once read
            raise UserError(f"lock-probe: {item.text!r} is not a numba-cuda-mlir series; the probe registers "
                            "numba-cuda-mlir's planners (numba_cuda_mlir.extending)")
    if not args.target:
        device.refuse_without_gpu(smoke_flag=False)  # no simulator: numba-cuda-mlir has none
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    site_from = (args.python or sys.executable) if args.system_site_packages else None
    envs = ReleaseEnvs([], None, say, args.env_dir, args.python, args.wheels, args.extras, site_from, args.target,
                       launch=True, simulator=False, tries=args.tries, pinned_stack=constraints)
    envs.index = rel.FolderIndex(args.wheels) if args.wheels else rel.PyPIIndex()
    points = envs.points = rel.points(items, envs.index, pins)
    for pt in points:
        if pt.project != PROJECT:
            raise UserError(f"lock-probe: {pt.label} is not a numba-cuda-mlir release; the probe registers "
                            "numba-cuda-mlir's planners (numba_cuda_mlir.extending)")
    records = records_of(points, envs.by_name)
    envs.build(None, records)
    log_dir = os.path.splitext(output)[0] + ".logs"
    overlay = envs.make_overlay(os.path.join(log_dir, "overlay"))
    refused = [{"point": r["sha"], "reason": r["refused"]} for r in records if r.get("refused")]
    got = []
    for r in records:
        if not r["measured"]:
            continue
        say(f"launchbench: probing {r['sha']}")
        res = engine.run_point(r["python"], overlay, os.path.join(log_dir, f"{r['variant_name']}.log"), args.timeout,
                               args.loops, args.repeats, args.target)
        got.append({"point": r["sha"], "version": r.get("version"), "stack": r.get("stack"), **res})
        if res.get("note"):
            print(f"launchbench: {r['sha']}: {res['note']}", file=sys.stderr, flush=True)  # --quiet too
    series = " ".join(os.path.basename(t) if t.endswith(".whl") else t for t in args.series)
    settings = {"timeout_s": args.timeout, "loops": args.loops, "repeats": args.repeats, "target": args.target,
                "forms": list(probe.FORMS)}
    doc = document(series, got, refused, settings, not args.target, command_line(),
                   time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), device.host_info())
    write_json_atomic(output, doc)
    print(render(doc), end="")
    say(f"launchbench: wrote {output}")
    if not got:
        raise UserError(f"no point of the series could be probed ({len(refused)} refused, listed above); "
                        f"the reasons are in {output}")
    return 0
