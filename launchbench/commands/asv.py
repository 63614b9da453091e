"""``launchbench asv-config``, ``against`` and ``asv-releases``: the asv suite without hand-editing asv.conf.json.

asv has no ``--repo`` option, so pointing it at a local numba-cuda clone (or
at a release ledger, see :mod:`launchbench.environments.ledger`) means a second config
file, derived by launchbench.output.asvtools with every path made absolute, so it works
from any directory through ``asv --config FILE``.

Subcommands: ``asv-config`` (write a derived config), ``against`` (``asv
continuous`` between two refs), ``asv-releases`` (measure released wheels in
ready environments, no clone and no network needed).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

from ..base import atomic, device
from ..base import options as opt
from ..base.errors import UserError
from ..base.outpaths import check_folder, check_outputs
from ..environments import ledger
from ..output.asvplan import json_path as plan_json_path
from ..output.asvplan import read_plan
from ..output.asvtools import (
    SMOKE_MACHINE,
    asv_command,
    bench_args,
    check_branches,
    check_machine_label,
    default_machine,
    derive_config,
    ensure_machine,
    load_config,
    offline_config,
    parse_attributes,
    plan_config,
    range_tip,
    require_numba_cuda_repo,
    resolve_repo,
    run_asv,
    smoke_requested,
    write_asv_config,
)
from ..workloads.asvnative import normalize

ROOT = Path(__file__).resolve().parents[2]  # the checkout (this module: launchbench/commands/asv.py)
# An editable install finds the checkout's config; an installed copy
# (site-packages) uses the one in the current directory.
DEFAULT_CONFIG = ROOT / "asv.conf.json" if (ROOT / "asv.conf.json").is_file() else Path("asv.conf.json").resolve()


def check_suite_settings(environ=None) -> None:
    """The suite's LAUNCHBENCH_ASV_* variables, checked before asv starts.

    asv hands the environment to every benchmark process, where a bad value
    makes each benchmark skip with its message; here it stops the command in
    one line before any work (launchbench.workloads.asvnative.normalize: the suite's own reading of them).
    """
    env = os.environ if environ is None else environ
    try:
        kind = normalize.reference_kind(env)
        normalize.reference_us(kind, env)
        normalize.delay_us({k: v for k, v in env.items() if k != normalize.DELAY_COMMIT_ENV})
        normalize.slots(1, env)
        folder = normalize.anchor_dir(env) if kind == "anchor" else None
        tables = normalize.a0_dir(env) if kind == "anchor" and env.get(normalize.A0_DIR_ENV) else None
        if hasattr(os, "sched_getaffinity"):
            allowed = os.sched_getaffinity(0)
            pin = normalize.pin_cpu(allowed, env, default=normalize.pin_default(kind))
            normalize.spin_cpus(allowed, pin, env)
    except normalize.ConfigError as exc:
        raise UserError(str(exc)) from None
    if folder:
        check_folder(folder, normalize.ANCHOR_DIR_ENV)  # the anchor's socket, log and run record go there
    if tables:
        check_folder(tables, normalize.A0_DIR_ENV)  # the anchor's A0 tables go there


def with_a0_dir(env: dict, results_dir) -> dict:
    """*env* with the anchor's A0 tables beside asv's results (unless LAUNCHBENCH_ASV_A0_DIR names a folder):
    a benchmark process cannot see asv's --config, so its default would be the working folder's."""
    return {"LAUNCHBENCH_ASV_A0_DIR": str(Path(results_dir).resolve() / "anchor-a0"), **env} \
        if results_dir and not env.get("LAUNCHBENCH_ASV_A0_DIR") else env


# ----------------------------------------------------------------- asv-config
def cmd_asv_config(args) -> int:
    check_outputs([(args.output, "--output")], inputs=[(args.config, "the base config --config")])
    base = load_config(args.config)
    if args.host_site and not args.offline:
        raise UserError("--host-site goes with --offline DIR (the wheels the envs install from)")
    for folder, flag in ((args.offline, "--offline"), (args.host_site, "--host-site")):
        if folder and not os.path.isdir(folder):
            raise UserError(f"{flag} {folder} is not a directory")
    plan = plan_option(args.plan)
    for key in ("results_dir", "env_dir", "html_dir"):  # before they are resolved: a symlink loop is one line
        if getattr(args, key):
            check_folder(getattr(args, key), "--" + key.replace("_", "-"))
    try:
        conf = derive_config(base, Path(args.config).resolve().parent, repo=args.repo,
                             results_dir=args.results_dir, env_dir=args.env_dir, html_dir=args.html_dir)
    except (OSError, RuntimeError) as exc:  # a path of the base config that cannot be resolved (a loop)
        raise UserError(f"asv config {args.config}: a path in it cannot be resolved ({exc}); fix the config") from None
    if "repo" not in conf:
        raise UserError(f"asv config {args.config} names no repo; give --repo PATH (a numba-cuda clone)")
    for key in ("results_dir", "env_dir", "html_dir"):  # asv writes there: refused now, not mid-run
        if conf.get(key):
            flag = "--" + key.replace("_", "-")
            check_folder(conf[key], flag if getattr(args, key) else f"the base config's {key}")
    require_numba_cuda_repo(conf["repo"])
    check_branches(conf)
    if plan and os.path.realpath(plan["clone"]) != os.path.realpath(conf["repo"]):
        raise UserError(f"--plan {args.plan} is for {plan['clone']}, not --repo {conf['repo']}; "
                        f"make the plan of this clone: launchbench asv-plan {conf['repo']} A..B")
    if args.offline:
        conf = offline_config(conf, args.offline, args.host_site, args.launch_method)
    elif args.launch_method:
        conf["launch_method"] = args.launch_method
    if plan:
        conf = plan_config(conf, plan_json_path(args.plan), branch=range_tip(plan.get("range", "")))
    out = write_asv_config(conf, args.output)
    print(f"wrote {out} (repo {conf['repo']})")
    print(f"use it as: asv --config {out} run baseline..v2   (or continuous/compare/publish)")
    return 0


def plan_option(path):
    """--plan's document (asv-plan's JSON, named by the hash file or itself), or None; errors name --plan."""
    if path is None:
        return None
    try:
        return read_plan(path)
    except UserError as exc:
        raise UserError(f"--plan {path!r}: {exc}") from None


def default_local_config() -> Path:
    return ROOT / ".asv" / "asv.local.json"


# ----------------------------------------------------------------- against
def _is_url(repo: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", repo) or re.match(r"^[\w.-]+@[\w.-]+:", repo))


def _inside(path, folder) -> bool:
    path, folder = Path(path).resolve(), Path(folder).resolve()
    return path == folder or folder in path.parents


def against_config_path() -> Path:
    """Where ``against`` writes its derived config: the checkout's .asv/asv.local.json when
    launchbench runs from its checkout (editable install), else ~/.cache/launchbench/asv;
    never inside an installed package."""
    if (ROOT / "asv.conf.json").is_file():
        return default_local_config()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "launchbench" / "asv" / "against.asv.json"


def against_repo(args, base: dict, config: Path) -> str:
    """The local clone ``against`` measures: --repo, or the config's repo when that is a path.

    asv would mirror-clone a URL repo next to the config (into the launchbench checkout), which
    needs the network and could not have the refs ``launchbench refs`` creates anyway."""
    repo = args.repo or str(base.get("repo") or "")
    if not repo or _is_url(repo):
        given = f"--repo {repo}" if args.repo else f"{config}'s repo is {repo or 'missing'}"
        raise UserError(f"against needs a local numba-cuda clone ({given}); clone it once (git clone "
                        "https://github.com/NVIDIA/numba-cuda ~/numba-cuda; launchbench refs ~/numba-cuda) "
                        "and pass --repo ~/numba-cuda")
    if not args.repo:
        repo = str((config.resolve().parent / Path(repo).expanduser()))
    return resolve_repo(repo)


def check_ref(ref: str, what: str) -> None:
    """``asv continuous`` takes two refs, not ranges (asv itself checks that they exist)."""
    if ".." in ref or not ref.strip() or ref.startswith("-"):
        raise UserError(f"{what} {ref!r} is not a single ref; give two refs of the clone, e.g. "
                        "`launchbench against baseline v2 --repo PATH` (not a range like baseline..v2)")


def cmd_against(args) -> int:
    check_suite_settings()  # --factor: checked by its type (base/options.FACTOR) while parsing
    check_ref(args.ref1, "REF1")
    check_ref(args.ref2, "REF2")
    extra_args = [*bench_args(args.bench), *parse_attributes(args.attribute)]
    config = Path(args.config)
    base = load_config(config)
    repo = against_repo(args, base, config)
    conf = derive_config(base, config.resolve().parent, repo=repo)
    target = against_config_path()
    package = Path(__file__).resolve().parents[1]  # the launchbench package
    for what, where in (("config", target), ("env_dir", conf.get("env_dir")), ("results_dir", conf.get("results_dir"))):
        if where and _inside(where, package):
            raise UserError(f"asv's {what} {where} lies inside the launchbench package; pass --config "
                            "with a config whose env_dir and results_dir are elsewhere")
    # asv continuous on a host without a GPU builds two environments to time nothing: stop here
    # (asv's simulator smoke runs are asv-releases', which labels their machine; against does not)
    device.refuse_without_gpu(smoke_flag=False)
    config = write_asv_config(conf, target)
    cmd = asv_command(config, "continuous", "--factor", f"{args.factor:g}", *extra_args)
    if args.machine:
        cmd += ["--machine", args.machine]
    cmd += [args.ref1, args.ref2]
    proc = run_asv(cmd, env=with_a0_dir(dict(os.environ), conf.get("results_dir")), check=False)
    # asv continuous exits 2 when it finds a regression beyond --factor.
    if proc.returncode not in (0, 2):
        raise UserError(f"asv continuous failed (exit {proc.returncode}); see its output above")
    return proc.returncode


# ----------------------------------------------------------------- asv-releases
def parse_env_specs(items) -> dict:
    """``VERSION=PYTHON`` pairs -> {version: python}, in the order given."""
    envs = {}
    for item in items or ():
        version, sep, python = item.partition("=")
        if not sep or not version or not python:
            raise UserError(f"--env {item!r}: expected VERSION=PYTHON, e.g. --env 0.29.0=/tmp/env029/bin/python")
        if not re.fullmatch(r"\d+(\.\d+)*\w*(\+[A-Za-z0-9.]+)?", version):
            raise UserError(f"--env {item!r}: {version!r} is not a numba-cuda version like 0.29.0 "
                            "(or a label like 0.30.4+twin, 0.30.4+delay0.5us)")
        label_delay_us(version)  # a bad +delay label fails here, before any work
        if version in envs:
            raise UserError(f"--env: version {version} given twice")
        if not (os.path.isfile(python) and os.access(python, os.X_OK)):
            raise UserError(f"--env {item!r}: {python} is not an executable python; make the venv first")
        envs[version] = python
    if not envs:
        raise UserError("asv-releases needs at least one --env VERSION=PYTHON (e.g. --env 0.29.0=/tmp/env029/bin/python)")
    return envs


def parse_branch_specs(items, versions) -> dict:
    """``NAME=VERSION`` pairs -> {name: version}; every version must have an --env."""
    branches = {}
    for item in items or ():
        name, sep, version = item.partition("=")
        if not sep or not name or not version:
            raise UserError(f"--branch {item!r}: expected NAME=VERSION, e.g. --branch baseline=0.29.0")
        if version not in versions:
            raise UserError(f"--branch {item!r}: no --env given for numba-cuda {version}")
        branches[name] = version
    return branches


def release_of(label: str) -> str:
    """The numba-cuda version of a label: ``0.30.4+twin`` -> ``0.30.4``.

    A label is a release measured under another name: ``+twin`` (the same
    environment again: an A/A pair for the factor) or ``+delay<US>us`` (the
    calibration variant: the benchmarks add a known busy-wait per launch).
    """
    return label.split("+", 1)[0]


def label_delay_us(label: str) -> float | None:
    """The busy-wait a ``+delay<US>us`` label asks for (µs), else None."""
    suffix = label.partition("+")[2]
    if not suffix.startswith("delay"):
        return None
    m = re.fullmatch(r"delay(\d+(?:\.\d+)?)us", suffix)
    if not m or float(m.group(1)) <= 0:
        raise UserError(f"label {label!r}: write the delay as +delay<µs>us, e.g. 0.30.4+delay0.5us")
    return float(m.group(1))


def label_env(label: str, environ=None) -> dict:
    """The environment an asv run of *label* gets: the delay switch set only for delay labels."""
    env = dict(os.environ if environ is None else environ)
    env.pop("LAUNCHBENCH_ASV_DELAY_US", None)
    delay = label_delay_us(label)
    if delay is not None:
        env["LAUNCHBENCH_ASV_DELAY_US"] = repr(delay)
    return env


def parse_compare_specs(items, labels) -> list[tuple[str, str]]:
    """``A:B`` pairs for ``asv compare`` (branch names or labels)."""
    pairs = []
    for item in items or ():
        a, sep, b = item.partition(":")
        if not sep or not a or not b:
            raise UserError(f"--compare {item!r}: expected A:B, e.g. --compare baseline:v2")
        for side in (a, b):
            if side not in labels:
                raise UserError(f"--compare {item!r}: {side!r} is neither a --branch name nor an --env label")
        pairs.append((a, b))
    return pairs


def installed_numba_cuda(python) -> str | None:
    """The numba-cuda version installed for *python* (None if not installed)."""
    code = ("import importlib.metadata as m\n"
            "try: print(m.version('numba-cuda'))\n"
            "except m.PackageNotFoundError: print('')\n")
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        raise UserError(f"{python} failed to run ({proc.stderr.strip().splitlines()[-1:]}); check the venv")
    return proc.stdout.strip() or None


def check_env_versions(envs: dict, allow_mismatch: bool) -> dict:
    """The version actually installed in each env; a mismatch is the shadowing trap."""
    found = {}
    for version, python in envs.items():
        have = installed_numba_cuda(python)
        found[version] = have
        if have != release_of(version) and not allow_mismatch:
            raise UserError(f"{python} has numba-cuda {have}, not {release_of(version)}; install "
                            f"numba-cuda=={release_of(version)} there "
                            "(or pass --allow-version-mismatch for a smoke test)")
    return found


def write_python_shim(path, python) -> Path:
    """A fixed-path script that execs *python*.

    asv names an existing environment after its interpreter's path and
    ``asv compare`` only pairs results from the same environment name, so
    every release runs through this one path (pointing at its own venv).
    exec keeps the venv's own path as argv[0], so the venv stays active.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(f"#!/bin/sh\nexec {shlex.quote(str(Path(python).absolute()))} \"$@\"\n", encoding="utf-8")
    tmp.chmod(0o755)
    os.replace(tmp, path)
    return path


def compare_pair(branches: dict) -> tuple[str, str] | None:
    """The two refs ``asv compare`` gets: baseline and v2 when named, else the first two."""
    names = list(branches)
    if "baseline" in branches and "v2" in branches:
        return "baseline", "v2"
    if len(names) >= 2:
        return names[0], names[1]
    return None


def cmd_asv_releases(args) -> int:
    check_suite_settings()
    envs = parse_env_specs(args.env)
    branches = parse_branch_specs(args.branch or default_branches(envs), envs)
    smoke = smoke_requested()
    machine = args.machine or default_machine(smoke)
    check_machine_label(machine, smoke)
    parse_attributes(args.attribute)  # one-line errors before any work
    ledger_names = {**{v: v for v in envs}, **branches}
    pairs = parse_compare_specs(args.compare, ledger_names)
    if not pairs:
        pair = compare_pair(branches)
        pairs = [pair] if pair else []
    check_outputs([(args.log, "--log"), (args.compare_output, "--compare-output")])
    check_folder(args.ledger, "--ledger")
    check_folder(args.results_dir, "--results-dir")  # asv writes every benchmark's results there
    found = check_env_versions(envs, args.allow_version_mismatch)

    ledger_dir = Path(args.ledger)
    commits = ledger.ensure_ledger(ledger_dir, list(envs), branches)
    pairs = [tuple(side if side in branches else f"v{side}" for side in pair) for pair in pairs]
    results_dir = Path(args.results_dir)
    base = load_config(args.config)
    conf = derive_config(base, Path(args.config).resolve().parent, repo=str(ledger_dir),
                         results_dir=results_dir, html_dir=args.html_dir,
                         branches=list(branches) or ["main"],
                         extra={"project": "numba-cuda releases",
                                "show_commit_url": "https://pypi.org/project/numba-cuda/"})
    config = write_asv_config(conf, ledger_dir.parent / f"{ledger_dir.name}.asv.json")

    log: list[str] = []
    ensure_machine(config, machine, log=log)
    failed = []
    shim = ledger_dir.parent / f"{ledger_dir.name}.python" / "python"
    for npass in range(args.passes):
        for version, python in envs.items():
            write_python_shim(shim, python)
            run_config = write_asv_config(single_commit_config(conf, commits[version]),
                                           ledger_dir.parent / f"{ledger_dir.name}.run.asv.json")
            # samples recorded, so asv compare runs its Mann-Whitney test over processes; later
            # passes add samples to the same results, so commits interleave pass by pass
            append = ["--append-samples"] if npass else ["--record-samples"]
            cmd = asv_command(run_config, "run", "--environment", f"existing:{shim}",
                              "--set-commit-hash", commits[version], "--machine", machine,
                              "--launch-method", args.launch_method, "--show-stderr", *append,
                              *bench_args(args.bench), *parse_attributes(args.attribute),
                              verbose=args.asv_verbose)
            tag = f" (pass {npass + 1}/{args.passes})" if args.passes > 1 else ""
            print(f"== numba-cuda {version} (installed: {found[version]}) in {python}{tag}", flush=True)
            proc = run_asv(cmd, env=with_a0_dir(label_env(version), results_dir), check=False, log=log, stamp=True)
            if proc.returncode != 0:
                failed.append(f"{version} (pass {npass + 1})")
    tables = []
    for pair in pairs:
        cmd = asv_command(config, "compare", "--machine", machine, "--split", "--factor", f"{args.factor:g}", *pair)
        proc = run_asv(cmd, check=False, capture=True, log=log)
        table = drop_unmeasured_rows(proc.stdout)
        print(f"== asv compare {pair[0]} {pair[1]} --factor {args.factor:g}")
        print(table)
        tables.append(f"## asv compare {pair[0]} {pair[1]} --factor {args.factor:g}\n\n{table}")
        if proc.returncode != 0:
            failed.append("compare")
    if args.log:
        atomic.write_text_atomic(args.log, "\n".join(log) + "\n")
    if args.compare_output and tables:
        atomic.write_text_atomic(args.compare_output, "\n".join(tables))
    if failed:
        raise UserError(f"asv failed for: {', '.join(failed)}; see the output above")
    return 0


def single_commit_config(conf: dict, sha: str) -> dict:
    """*conf* with ``branches`` set to the one commit a release's run is for.

    With an ``existing:`` environment asv refuses a range (``SHA^!``), and
    without one ``asv run`` benchmarks every configured branch's commit,
    filing each pass under ``--set-commit-hash``: with branches baseline and
    v2 that ran every benchmark twice. One branch = one commit = one pass.
    """
    out = json.loads(json.dumps(conf))
    out["branches"] = [sha]
    return out


def drop_unmeasured_rows(table: str) -> str:
    """Drop ``asv compare`` rows with no result on either side.

    asv compare lists every benchmark of the suite; rows not selected with -b
    (or skipped on both sides, e.g. simulator smoke skips) only add noise.
    """
    out = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and len(cells) >= 5 and cells[1] == "n/a" and cells[2] == "n/a":
            continue
        out.append(line)
    return "\n".join(out) + ("\n" if table.endswith("\n") else "")


def default_branches(envs: dict) -> list[str]:
    """baseline=0.29.0 and v2=0.30.4 when those envs are given."""
    defaults = {"baseline": "0.29.0", "v2": "0.30.4"}
    return [f"{name}={version}" for name, version in defaults.items() if version in envs]


# ----------------------------------------------------------------- CLI
def register(sub) -> None:
    p = sub.add_parser("asv-config", help="write an asv config pointing at a local numba-cuda clone (use with asv --config)",
                       description="Write a copy of the asv config (--config) whose repo is a local numba-cuda "
                       "clone and whose paths are absolute, so `asv --config FILE` works from any folder. The clone "
                       "must hold numba-cuda's history and the config's branches; the results, html and env "
                       "folders must be writable.")
    p.add_argument("--repo", required=True, help="numba-cuda clone (path) or git URL")
    p.add_argument("--config", default=str(DEFAULT_CONFIG), help="base asv config (default: the checkout's asv.conf.json)")
    p.add_argument("-o", "--output", default=str(default_local_config()), help="where to write (default: .asv/asv.local.json)")
    p.add_argument("--results-dir", help="results directory (default: the base config's)")
    p.add_argument("--env-dir", help="environments directory (default: the base config's)")
    p.add_argument("--html-dir", help="site directory (default: the base config's)")
    p.add_argument("--offline", metavar="WHEELS",
                   help="build and install every commit from this wheel folder, no index "
                        "(fill it with `launchbench wheelhouse --asv-builds`); also export PIP_NO_INDEX=1 "
                        "PIP_FIND_LINKS=WHEELS when running asv: its own requirement installs ignore matrix.env")
    p.add_argument("--host-site", metavar="SITE",
                   help="with --offline: install the commit's wheel without its CUDA wheels and append this "
                        "site-packages (which has cuda-bindings) after the env's own")
    p.add_argument("--launch-method", choices=("spawn", "forkserver"),
                   help="asv launch method written into the config (forkserver: numba.cuda imported once)")
    p.add_argument("--plan", metavar="PLAN",
                   help="install the wheels `launchbench asv-plan ... -o PLAN` built (by SHA) instead of building "
                        "each commit; one pip process per commit, no byte-compiling (docs/asv.md, \"A range\")")
    p.set_defaults(func=cmd_asv_config)

    p = sub.add_parser("against", help="asv continuous between two numba-cuda refs (each built in its own virtualenv)",
                       description="Run `asv continuous REF1 REF2` over the asv suite: asv builds each numba-cuda ref "
                       "of the clone (--repo, or the config's local repo) into its own virtualenv and reports the "
                       "benchmarks whose ratio passes --factor. Needs a GPU.")
    p.add_argument("ref1", help="reference ref, e.g. baseline (see `launchbench refs`)")
    p.add_argument("ref2", help="ref to compare, e.g. v2")
    p.add_argument("--repo", help="local numba-cuda clone (needed unless --config's repo is a local path)")
    p.add_argument("--config", default=str(DEFAULT_CONFIG), help="base asv config")
    p.add_argument("-b", "--bench", action="append", help="benchmark regex (repeatable)")
    p.add_argument("-a", "--attribute", action="append", help="asv benchmark attribute override NAME=VALUE")
    p.add_argument("--factor", type=opt.FACTOR, default="1.05", help="ratio reported as a change (default 1.05)")
    p.add_argument("--machine", help="asv machine name")
    p.set_defaults(func=cmd_against)

    p = sub.add_parser("asv-releases", help="run the asv suite on released numba-cuda in ready environments (no clone, no network)",  # noqa: E501
                       description="Run the asv suite on released numba-cuda versions installed in environments "
                       "you name (--env VERSION=PYTHON): a release ledger (a small git repository, --ledger) gives "
                       "asv one commit per release, so no clone, build or network is needed. Needs a GPU.")
    p.add_argument("--env", action="append", metavar="VERSION=PYTHON", help="a release and the python of a venv that has it (repeatable)")  # noqa: E501
    p.add_argument("--branch", action="append", metavar="NAME=VERSION", help="ledger branch names (default baseline=0.29.0, v2=0.30.4)")  # noqa: E501
    p.add_argument("--results-dir", default=str(ROOT / "results" / "asv"), help="asv results directory (default results/asv)")
    p.add_argument("--html-dir", default=str(ROOT / "html"), help="asv publish directory")
    p.add_argument("--ledger", default=str(ROOT / ".asv" / "release-ledger"), help="release ledger git repo (created if missing)")
    p.add_argument("--config", default=str(DEFAULT_CONFIG), help="base asv config")
    p.add_argument("--machine", help=f"asv machine name (default: host name; {SMOKE_MACHINE} under the simulator)")
    p.add_argument("-b", "--bench", action="append", help="benchmark regex (repeatable)")
    p.add_argument("-a", "--attribute", action="append", help="asv benchmark attribute override NAME=VALUE")
    p.add_argument("--launch-method", default="forkserver", choices=("spawn", "forkserver"),
                   help="asv launch method (default forkserver: numba.cuda imported once, before the fork)")
    p.add_argument("--allow-version-mismatch", action="store_true",
                   help="do not require the env's numba-cuda to match VERSION (smoke tests)")
    p.add_argument("--asv-verbose", action="store_true", help="run asv with --verbose (shows every benchmark process it starts)")
    p.add_argument("--compare-output", help="also write the asv compare table(s) here")
    p.add_argument("--passes", type=opt.PASSES, default=1,
                   help="run every release this many times, in turn (results add up: commits interleave)")
    p.add_argument("--factor", type=opt.FACTOR, default="1.02",
                   help="asv compare --factor: smallest ratio reported as a change (default 1.02, docs/asv.md)")
    p.add_argument("--compare", action="append", metavar="A:B",
                   help="pairs for asv compare, branch names or labels (repeatable; default baseline:v2)")
    p.add_argument("--log", help="write the exact asv commands here")
    p.set_defaults(func=cmd_asv_releases)
