"""``launchbench asv-plan CLONE A..B``: which commits of a range asv should time, and why.

Every first-parent commit of ``A..B`` (A included) is built once into launchbench's wheel cache
(by SHA; commits of identical code share one build) and its launch counted by one short process
(bisect's counts pass, several at once). The plan (``engine/asvplan.choose``) times each counts
change point and the commit before it, each compiled-source change and the commit before it,
both ends, and an even sample where nothing points. Written: PLAN (full SHAs, one per line:
``asv run HASHFILE:PLAN``), PLAN.reasons (one line per timed commit) and PLAN.json (every commit,
its counts key and wheel: ``asv-config --plan PLAN`` makes asv install these wheels instead of
building); ``--every FILE`` also writes every commit of the range as a hash file (the count rows'
``asv run HASHFILE:FILE``).
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from ..base import device, outpaths
from ..base import options as opt
from ..base.errors import UserError
from ..base.options import parse_counts
from ..engine import asvplan as plan_engine
from ..engine import commitcounts
from ..engine.history import CommitRun, Session, command_line
from ..environments import builds
from ..environments.commits import CommitEnvs, check_clone, commit_records, env_jobs
from ..environments.variant_options import check_env_options
from ..output import asvplan as plan_output
from ..output.asvtools import load_config
from ..workloads.argkinds import MAX_ARGS
from . import common_args as ca

EVERY = opt.Number(int, 1, 100_000, "commits from one timed commit to the next where nothing points", example=12)


def register(sub) -> None:
    p = sub.add_parser("asv-plan", help="count every commit of a range and write the asv hash file of those worth timing",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    ca.add_clone(p)
    p.add_argument("range", metavar="A..B", help="first-parent commits after A up to B, and A")
    ca.add_output(p, "launchbench-asv-plan.txt",
                  "the asv hash file (default launchbench-asv-plan.txt; PLAN.reasons and PLAN.json beside it)")
    p.add_argument("--every", dest="every_file", metavar="FILE",
                   help="also write every commit of the range as an asv hash file (the count rows' run)")
    p.add_argument("--sample", dest="every", type=EVERY, default=plan_engine.DEFAULT_EVERY, metavar="N",
                   help=f"where nothing points, time at least one commit in every N (default {plan_engine.DEFAULT_EVERY})")
    p.add_argument("--config", metavar="ASV_CONFIG",
                   help="the asv config the plan is for (from asv-config): its repo must be CLONE, or asv "
                        "would skip every hash it does not know")
    ca.add_env_options(p.add_argument_group("builds and environments"), commits=True)
    m = p.add_argument_group("counts")
    ca.add_args(m, MAX_ARGS)
    m.add_argument("--count-jobs", type=opt.COUNT_JOBS, default=None, metavar="N",
                   help=f"counting processes at once (default: half the CPUs, 1 to {commitcounts.MAX_JOBS})")
    ca.add_simulator(m, "count under the CUDA simulator (its launch path, not numba-cuda's on a GPU)")
    ca.add_target(m)
    ca.add_quiet(p)
    p.set_defaults(func=run_asv_plan)


def check_config(path: str, clone: str) -> None:
    """The asv config the plan goes with: readable, and its repo the clone the plan names."""
    conf = load_config(path)
    repo = str(conf.get("repo") or "")
    if not repo or os.path.realpath(os.path.expanduser(repo)) != clone:
        raise UserError(f"asv config {path} has repo {repo or 'none'}, not {clone}; asv would skip the plan's "
                        f"commits: write one with `launchbench asv-config --repo {clone}`")


def counts_detail(step: dict, arg_counts: list) -> str | None:
    """A counts step in a few words: the per-launch change of the first arg count that moved."""
    if not step or "error" in step:
        return None
    for n in arg_counts:
        d = step["per_nargs"].get(str(n))
        if d and d.get("moved"):
            moved = ", ".join(f"{v:+g} {k}" for k, v in d["per_launch"].items() if v)
            return f"{moved or 'per-function counts moved'} at {n} args"
    return None


def compiled_files(clone: str, prev: str, sha: str) -> str:
    """The compiled sources a commit changed (the reason's detail)."""
    out = builds.compiled_change_files(clone, prev, sha)
    return ", ".join(os.path.basename(f) for f in out[:3]) + (f" and {len(out) - 3} more" if len(out) > 3 else "")


def prebuild(session: Session, clone: str, records: list) -> None:
    """The distinct commits' wheels, several at once (a range has dozens; one compiler process each):
    ``session.build`` then finds them cached and reports any that failed."""
    cache = session.cache
    todo = [r for r in records if r["measured"] and not cache.path_for(r["sha"])]
    if len(todo) < 2:
        return
    outpaths.check_folder(cache.cache_dir, "--wheel-cache")
    cache.build_python()  # the build venv, once, before the threads share it

    def one(rec: dict) -> None:
        try:
            cache.build(clone, builds.Commit(rec["sha"], rec["short"], rec["subject"], rec["date"]))
        except builds.BuildFailed:
            pass  # session.build tries it again and reports it

    with ThreadPoolExecutor(max_workers=env_jobs(len(todo))) as pool:
        list(pool.map(one, todo))


def run_asv_plan(args) -> int:
    a, b = builds.parse_range(args.range)
    plan_path = outpaths.check_writable(args.output, "--output")
    reasons_path, json_path = plan_output.sidecars(plan_path)
    outpaths.check_outputs([(plan_path, "--output"), (reasons_path, "--output (its .reasons)"),
                            (json_path, "--output (its .json)"), (args.every_file, "--every")],
                           inputs=[(getattr(args, "constraints", None), "the --constraints file")])
    arg_counts = parse_counts(args.args, "--args", MAX_ARGS)
    env_opts = ca.env_options(args)
    check_env_options(env_opts)
    clone = check_clone(args.clone)
    if args.config is not None:
        check_config(args.config, clone)
    run = CommitRun(repeats=1, sample_time=0.004, warmup=0, simulator=args.simulator, target=args.target,
                    quiet=args.quiet, count_jobs=args.count_jobs)
    session = Session(run, clone, arg_counts, lambda say: CommitEnvs(env_opts, say, target=args.target))
    commits = builds.first_parent_commits(clone, a, b)
    if not (args.simulator or args.target):  # counts are of numba-cuda's launch on a GPU
        device.refuse_without_gpu()
    records = commit_records(clone, commits, 0)
    heads = {i for i, r in enumerate(records) if r["measured"]}
    session.say(f"launchbench: {len(records)} commits in {args.range}, {len(heads)} distinct builds")
    prebuild(session, clone, records)
    session.build(records)
    counted = session.count(records, os.path.splitext(plan_path)[0] + ".logs")
    if not counted:
        raise UserError(f"none of the {len(records)} commits of {args.range} could be built and counted; "
                        "see the build logs named above")
    by_sha = {r["sha"]: r for r in records}

    def head(rec: dict) -> dict:
        return by_sha[rec["identical_to"]] if rec["identical_to"] else rec

    entries = [counted.get(head(r).get("variant") or "") for r in records]
    keys = [commitcounts.key(e, arg_counts) for e in entries]
    compiled = builds.compiled_changes(clone, [r["sha"] for r in records])
    chosen = plan_engine.choose(keys, compiled, args.every)
    details = {}
    for i, reasons in chosen.items():
        for r in reasons:
            if r[0] == plan_engine.COUNTS_STEP:
                text = counts_detail(commitcounts.step(entries[r[1]], entries[i], arg_counts), arg_counts)
                if text:
                    details[("counts", i)] = text
            elif r[0] == plan_engine.COMPILED:
                details[("compiled", i)] = compiled_files(clone, records[i - 1]["sha"], records[i]["sha"])
            elif r[0] == plan_engine.UNUSABLE:
                details[("unusable", i)] = commitcounts.unusable(entries[i]) or (head(records[i]).get("build") or {}).get("error")
    commits_out = [{"sha": r["sha"], "short": r["short"], "subject": r["subject"], "date": r["date"],
                    "code_identity": r["code_identity"], "same_code_as": r["identical_to"],
                    "wheel": head(r).get("wheel"), "counts_key": None if k is None else hash_key(k),
                    "counts_unusable": commitcounts.unusable(e) if k is None else None,
                    "compiled_change": i in compiled}
                   for i, (r, k, e) in enumerate(zip(records, keys, entries))]
    settings = {"every": args.every, "arg_counts": arg_counts, "simulator": bool(args.simulator),
                "target": args.target, "counted": len(counted), "distinct_builds": len(heads),
                "count_jobs": session.count_jobs,
                "rule": "each counts change point and the commit before it, each compiled-source change and the "
                        "commit before it, both ends, commits with unusable counts, and an even sample so that "
                        "no gap between timed commits exceeds `every` commits"}
    doc = plan_output.document(clone, args.range, commits_out, chosen, details, settings, session.count_seconds,
                               time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), command_line())
    written = plan_output.write_plan(plan_path, doc, args.every_file)
    print(plan_output.render(doc), end="")
    session.say("launchbench: wrote " + ", ".join(written))
    if not args.quiet:
        print(f"time them: asv --config CONFIG run HASHFILE:{plan_path}   (count rows on every commit: "
              f"asv --config CONFIG run HASHFILE:{args.every_file or 'EVERY'} -b bench_counts)", file=sys.stderr)
    return 0


def hash_key(key) -> str:
    """A short stable digest of a counts key (commits with equal digests count the same)."""
    return hashlib.sha256(repr(key).encode()).hexdigest()[:12]
