"""``launchbench pr``: is this pull request right, and what does it cost?

Builds the pull request's head and its base (its merge base with the main
line, or ``--base``) through history's wheel cache (offline with
``--wheels``), runs the LC-S conformance suite under each and diffs the
outcomes test by test (fixed, broken, xfail -> xpass, newly skipped), then
measures the pair with compare's method (fresh interleaved workers per round,
paired deltas, intervals over rounds) and, with ``--fail-if-slower``, compare's
gate; the first ``--counts`` rounds' workers also count each side's launch
exactly (Python bytecodes, calls, function entries; the per-function diff).
Writes one Markdown report for a PR comment and the JSON into ``--out``.

Exit codes: 0 conformance holds and the cost is not shown slower than the
gate (or no gate, or the gate is undecided); 1 slower than the gate;
3 conformance broken (a test that did not fail on the base fails on the head,
or the head does not build); 4 both; 2 a usage error; 130 interrupted.
"""
from __future__ import annotations

import argparse
import os
import time

from ..base import childenv, device, outpaths, signals
from ..base import options as opt
from ..base.atomic import write_json_atomic, write_text_atomic
from ..base.errors import UserError
from ..base.options import parse_counts
from ..engine import analysis, conformance, countdiff, sequential
from ..engine.history import Session, command_line
from ..environments import builds, envs
from ..environments.commits import CommitEnvs, check_clone, commit_records
from ..environments.variant_options import check_env_options
from ..output import documents, prreport
from ..workloads.argkinds import MAX_ARGS as MAX_KERNEL_ARGS
from . import common_args as ca

DEFAULT_ROUNDS = 60
DEFAULT_OUT = "launchbench-pr"
DEFAULT_COUNT_ROUNDS = 2  # as compare's --counts: two fresh processes per side show whether the counts agree
MAX_COUNT_ROUNDS = 10


def register(sub) -> None:
    p = sub.add_parser("pr", help="a pull request's LC-S conformance vs its base, and its launch cost",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    ca.add_clone(p)
    p.add_argument("ref", help="the pull request's head: a branch (e.g. pull-request/897), tag or SHA")
    p.add_argument("--base", metavar="REF", help="the commit to judge against (default: the merge base of REF "
                                                 "with --main)")
    p.add_argument("--main", metavar="REF", help="the main line for the merge base (default: the first of "
                                                 "main, origin/main, upstream/main, master, origin/master)")
    ca.add_fail_if_slower(p, "compare's gate: exit 1 (4 with broken conformance) when a delta's interval lies "
                             "wholly above PCT %%; rounds stop once every delta is decided")
    ca.add_rounds(p, DEFAULT_ROUNDS, f"rounds of fresh processes, a cap when gated (default {DEFAULT_ROUNDS})", for_ci=True)
    ca.add_min_rounds(p, "never stop the gate")
    p.add_argument("--counts", type=opt.COUNT_ROUNDS, default=DEFAULT_COUNT_ROUNDS, metavar="N",
                   help=f"the first N rounds' workers also count each side's launch (Python bytecodes, calls, "
                        f"function entries), exactly, after their samples (default {DEFAULT_COUNT_ROUNDS}; 0: no "
                        f"counts; at most {MAX_COUNT_ROUNDS})")
    p.add_argument("--no-measure", action="store_true", help="conformance only")
    p.add_argument("--no-conformance", action="store_true", help="cost only")
    p.add_argument("--build-only", action="store_true",
                   help="only build (and cache) the two wheels, e.g. on a CPU machine for an offline GPU one")
    p.add_argument("--conformance-timeout", type=opt.TIMEOUT_S, default=600.0, metavar="S",
                   help="seconds per conformance run (default 600)")
    p.add_argument("--suite", help=argparse.SUPPRESS)  # another pytest file instead of the LC-S suite (tests on CPU)
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                   help=f"folder for pr.md (the PR comment), pr.json and the logs (default {DEFAULT_OUT})")
    ca.add_commit_options(p, None)
    p.set_defaults(func=run)


# ---------------------------------------------------------------- options

def _check(args) -> tuple[str, str]:
    """Every option checked before anything is built: (clone, out dir)."""
    if args.fail_if_slower is not None and not args.fail_if_slower >= 0:
        raise UserError("--fail-if-slower must be a percentage >= 0, e.g. 5")
    if args.rounds < 2:
        raise UserError("--rounds must be at least 2 (intervals are over rounds)")
    if args.base is not None and not args.base.strip():
        raise UserError("--base is empty; pass a tag, branch or SHA of the clone, or leave --base out "
                        "(the merge base with --main)")
    opt.min_rounds(args.min_rounds, args.rounds)  # not above --rounds
    if args.max_time is not None and not args.max_time > 0:
        raise UserError("--max-time must be a positive number of seconds, e.g. 100")
    if not args.conformance_timeout > 0:
        raise UserError("--conformance-timeout must be a positive number of seconds, e.g. 600")
    if args.no_measure and args.no_conformance:
        raise UserError("--no-measure and --no-conformance leave nothing to do; drop one")
    if args.suite and not os.path.isfile(args.suite):
        raise UserError(f"--suite {args.suite} does not exist")
    if not args.out.strip():  # "" would be the current folder
        raise UserError("--out is empty; give a folder for pr.md, pr.json and the logs, e.g. --out pr-results")
    out = os.path.abspath(os.path.expanduser(args.out))
    if os.path.exists(out) and not os.path.isdir(out):
        raise UserError(f"--out {args.out} is a file; give a folder, e.g. --out pr-results")
    outpaths.add_inputs([(args.suite, "the --suite file"), (args.constraints, "the --constraints file")])
    out = outpaths.check_folder(args.out, "--out", output=True)  # locked: one pr run per folder
    outpaths.check_outputs([(os.path.join(out, name), f"--out's {name}") for name in ("pr.json", "pr.md")])
    check_env_options(ca.env_options(args))
    return check_clone(args.clone), out


# ---------------------------------------------------------------- command

def run(args) -> int:
    clone, out_dir = _check(args)
    session = Session(ca.commit_settings(args), clone, parse_counts(args.args, "--args", MAX_KERNEL_ARGS),  # options first
                      lambda say: CommitEnvs(ca.env_options(args), say, target=args.target))
    head = builds.resolve(clone, args.ref)
    base = builds.resolve(clone, args.base) if args.base else builds.merge_base(clone, head, args.main)
    builds.check_numba_cuda(clone, head, base)
    if base.sha == head.sha:
        raise UserError(f"{args.ref} is its own base ({head.short}); pass --base REF or a ref ahead of the main line")
    if builds.is_ancestor(clone, head, base):
        raise UserError(f"{args.ref} ({head.short}) is older than its base {args.base or base.short} ({base.short}): "
                        "the head must come after the base; swap them or pass an older --base")
    if not (args.build_only or args.simulator or args.target):  # before any build or conformance run
        device.refuse_without_gpu()
    session.say(f"launchbench: pr {head.short} ({head.subject[:60]}) vs base {base.short}")
    if args.build_only:
        for c in (base, head):
            print(f"{c.short} {session.cache.build(clone, c)}")
        return 0
    os.makedirs(out_dir, exist_ok=True)
    records = commit_records(clone, [base, head], aa=1)
    session.build(records)
    base_rec, head_rec = records
    doc = {**documents.stamp("pr"),
           "command": command_line(), "child_env": childenv.record(),
           "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "simulator": bool(args.simulator), "clone": clone,
           "head": _commit_json(head, head_rec), "base": _commit_json(base, base_rec),
           "same_code": head_rec.get("aa", False), "conformance": None, "measurement": None, "gate": None}
    if not base_rec.get("variant"):
        raise UserError(f"the base {base.short} does not build ({base_rec['build']['error']}); pass --base REF")
    if not head_rec.get("variant"):  # the pull request does not build: a verdict, not a usage error
        doc["verdicts"] = {"build": "head does not build"}
        return _finish(doc, out_dir, write_json_atomic, write_text_atomic, prreport, session)
    overlay = envs.make_overlay(os.path.join(out_dir, "logs", "overlay"))
    if not args.no_conformance:
        runs = {}
        for side, rec in (("base", base_rec), ("head", head_rec)):
            session.say(f"launchbench: conformance suite under {side} {rec['short']}")
            runs[side] = conformance.run_suite(rec["python"], overlay, os.path.join(out_dir, "logs", f"conformance-{side}"),
                                               suite=args.suite, timeout=args.conformance_timeout)
        changes = conformance.diff(runs["base"]["tests"], runs["head"]["tests"])
        doc["conformance"] = {"verdict": conformance.verdict(runs["base"], runs["head"], changes),
                              "base": runs["base"], "head": runs["head"], "changes": changes,
                              "suite": os.path.abspath(args.suite) if args.suite else conformance.suite_path()}
    outcome = None
    if not args.no_measure:
        outcome = _measure(args, session, records, out_dir, doc)
    return _finish(doc, out_dir, write_json_atomic, write_text_atomic, prreport, session, outcome)


def _commit_json(commit, rec) -> dict:
    return {"sha": commit.sha, "short": commit.short, "subject": commit.subject, "date": commit.date,
            "variant": rec.get("variant"), "wheel": rec.get("wheel"), "build": rec.get("build")}


def _measure(args, session, records, out_dir, doc):
    """compare's method over (base, head); with the gate, rounds stop once every delta is decided."""
    names = [r["variant"] for r in records]
    rule = None
    stop = None
    if args.fail_if_slower is not None:
        rule = sequential.Rule(target_pct=None, threshold_pct=args.fail_if_slower,
                               min_rounds=opt.min_rounds(args.min_rounds, args.rounds))

        def stop(outcome):
            series = analysis.round_series(outcome.samples, names, names[0], session.arg_counts)
            done, why = sequential.should_stop({k: v[1] for k, v in series.items()}, rule,
                                               outcome.rounds_completed)
            return why if done else None
    out, prefetch = session.measure(records, args.rounds, os.path.join(out_dir, "logs", "measure"), stop=stop,
                                    count_rounds=args.counts)
    mdoc = session.document(records, out, f"{records[0]['sha']}..{records[1]['sha']}", prefetch, args.rounds, "pr")
    # exact counts of each side's launch, head vs base (engine/countdiff.py), beside the cost
    mdoc["counts"] = countdiff.section(out.counts, names[0], names)
    if rule is not None:
        analysis.apply_rule(mdoc["deltas"], analysis.round_series(out.samples, names, names[0], session.arg_counts),
                            rule, names[0], sequential.chosen_stop(out.stopped_by_rule, out.interrupted))
        doc["gate"] = analysis.gate_result(mdoc["deltas"], args.fail_if_slower)
    doc["measurement"] = mdoc
    return out


def _finish(doc, out_dir, write_json_atomic, write_text_atomic, prreport, session, outcome=None) -> int:
    conf = doc.get("conformance")
    head_built = bool(doc["head"]["variant"])
    doc.setdefault("verdicts", {})
    doc["verdicts"].update({"conformance": conf["verdict"] if conf else None,
                            "cost": doc["gate"]["verdict"] if doc.get("gate") else None})
    code = conformance.exit_code(conf and conf["verdict"], doc.get("gate"), head_built)
    if outcome is not None and outcome.interrupted:
        code = 130 if signals.by_signal(outcome.reason) else code
    doc["exit_code"] = code
    write_json_atomic(os.path.join(out_dir, "pr.json"), doc)
    md = write_text_atomic(os.path.join(out_dir, "pr.md"), prreport.render(doc))
    print(prreport.render_text(doc), end="")
    session.say(f"launchbench: wrote {md} and {os.path.join(out_dir, 'pr.json')}")
    return code

