"""Every subcommand fed plausible mistakes: exit 2 with ONE ``launchbench: error:`` line (or
argparse's usage error), never a traceback, and nothing built, measured or written.

In-process through ``launchbench.cli.main`` (fast, CPU only). Whatever would build an
environment, start asv, fetch or measure is replaced by a tripwire (a BaseException no
command catches), so a case that slips past validation fails loudly instead of working;
NUMBA_ENABLE_CUDASIM=1 makes every GPU guard refuse. Subcommands without cases of their
own (added later) get generic ones.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench import cli

ROOT = Path(__file__).resolve().parent.parent
UNWRITABLE = "/proc/launchbench-sweep/out.json"  # cannot be created, even by root
COMPARE_JSON = str(ROOT / "tests" / "fixtures" / "compare-1.json.gz")
BREAKDOWN_JSON = str(ROOT / "tests" / "fixtures" / "breakdown-2.json.gz")
RELEASES_JSON = str(ROOT / "tests" / "fixtures" / "releases" / "history-1.json.gz")
SIM = ["compare", "--simulator"]
REAL = ["compare", "--variant", "a=numba-cuda==0.29.0", "--variant", "b=numba-cuda==0.30.4", "-o", "{tmp}/r.json"]
GIT = ["--repo", "{git}"]

# --args mistakes every command that takes --args refuses alike: (text, needle).
ARGS_GRAMMAR = [
    ("0,x", "--args '0,x': 'x' is not a whole number or a LO-HI range"),
    ("-1", "--args '-1': '-1' is negative"),
    ("", "--args is empty"),
    ("0,,1", "--args '0,,1' has an empty item"),
    ("4,0,0", "--args '4,0,0': 0 comes after 4; give the counts in ascending order, e.g. --args 0,4"),
    ("0,2,2", "--args '0,2,2': 2 is given twice"),
    ("0-3,1", "--args '0-3,1': 1 is given twice"),
    ("4-1", "--args '4-1': the range '4-1' runs downwards"),
    ("0-99", "--args '0-99': 99 is more than"),
]
HISTORY = ["history", "{git}", "HEAD..HEAD", "-o", "{tmp}/h.json"]
COUNTS = ["counts", "--simulator", "--variant", "a=env:{prefix}", "-o", "{tmp}/c.json"]

# (argv, needle): the needle must be in the one error line; "usage" = any argparse error.
# Placeholders: {tmp} an existing folder, {file} an existing non-JSON file, {git} a git repo
# with one commit, {py} this interpreter.
CASES = {
    "compare": [
        (SIM + ["--repeats", "0"], "--repeats"),
        # stopping options: refused before any virtualenv is built (the tripwire on EnvManager._build)
        (REAL + ["--target-ci", "-1"], "--target-ci"),
        (REAL + ["--min-rounds", "1"], "--min-rounds"),
        (REAL + ["--max-time", "-1"], "--max-time"),
        (SIM + ["--rounds", "-3"], "--rounds"),
        (SIM + ["--repeats", "many"], "usage"),
        (SIM + ["--sample-time", "0"], "--sample-time"),
        (SIM + ["--sample-time", "nan"], "--sample-time"),
        (SIM + ["--sample-time", "inf"], "--sample-time"),
        (SIM + ["--warmup", "-1"], "--warmup"),
        # the --args grammar (launchbench/base/options.py), the same in every command: see ARGS_GRAMMAR
        *[(SIM + ["--args", text], needle) for text, needle in ARGS_GRAMMAR],
        (SIM + ["--args", "0,40"], "--args '0,40': 40 is more than 32"),
        (SIM + ["--loops", "0"], "--loops"),
        (SIM + ["--loops", "1,2"], "--loops"),
        (SIM + ["--args", "0-4", "--loops", "1-3"], "--loops '1-3': '1-3' is not a whole number"),
        (SIM + ["--args", "0-4", "--loops", "5,5"], "--loops '5,5': 2 values for 5 positions"),
        (SIM + ["--affinity", "cpu7"], "affinity"),
        (SIM + ["--affinity", "100000"], "not available"),
        (SIM + ["--prefetch", "-2"], "--prefetch"),
        (SIM + ["--prefetch", "lots"], "--prefetch"),
        (SIM + ["--variant", "a=numba-cuda>=1", "--variant", "b=numba-cuda==0.30.4"], "unknown variant spec"),
        (SIM + ["--variant", "a=bogus@numba-cuda==0.29.0", "--variant", "b=numba-cuda==0.30.4"], "bogus"),
        (SIM + ["--variant", "a=numba-cuda==0.29.0"], "at least two variants"),
        (SIM + ["--variant", "=numba-cuda==0.29.0", "--variant", "b=numba-cuda==0.30.4"], "NAME=SPEC"),
        (SIM + ["--variant", "a=numba-cuda==0.29.0", "--variant", "a=numba-cuda==0.30.4"], "used twice"),
        (SIM + ["--repo", "a=/no/such/clone", "--variant", "b=numba-cuda==0.30.4"], "does not exist"),
        (SIM + ["--repo", "a={tmp}", "--variant", "b=numba-cuda==0.30.4"], "not a numba-cuda checkout"),
        (SIM + ["--variant", "a=env:/no/such/env", "--variant", "b=numba-cuda==0.30.4"], "does not exist"),
        (SIM + ["--reference", "nosuch"], "--reference"),
        (SIM + ["--constraints", "/no/such/constraints.txt"], "constraints"),
        (SIM + ["--constraints", "{file}"], "expected name==version"),
        (SIM + ["--wheels", "/no/such/wheels"], "--wheels"),
        (SIM + ["--python", "/no/such/python"], "python"),
        (SIM + ["--env-dir", "{file}"], "--env-dir"),
        (SIM + ["--env-dir", "/proc/launchbench-sweep/envs"], "--env-dir"),
        (SIM + ["-o", UNWRITABLE], "--output"),
        (SIM + ["-o", "{tmp}"], "is a directory"),
        (SIM + ["-o", "{file}/r.json"], "not a folder"),
        (SIM + ["--markdown", UNWRITABLE], "--markdown"),
        (SIM + ["--plot", "{tmp}"], "--plot"),
        (SIM + ["--no-install", "--env-dir", "{tmp}"], "no environment for variant"),
        # a version the (fake) package index lacks: refused before any virtualenv is built
        (SIM + ["--variant", "x=numba-cuda==99.0.0", "--variant", "b=numba-cuda==0.30.4", "--env-dir", "{tmp}/envs"],
         "numba-cuda==99.0.0 is not on the package index (latest: 0.30.4); pick a released version"),
        (SIM + ["--variant", "x=contextvar@numba-cuda==99.0.0", "--variant", "b=numba-cuda==0.30.4"],
         "numba-cuda==99.0.0 is not on the package index"),
        (SIM + ["--variant", "m=numba-cuda-mlir==9.9.9", "--variant", "b=numba-cuda==0.30.4"],
         "numba-cuda-mlir==9.9.9 is not on the package index (latest: 0.6.0)"),
        (["compare", "--bogus"], "usage"),
    ],
    "counts": [
        (COUNTS + ["--processes", "0"], "argument --processes: '0' is less than 1"),
        (COUNTS + ["--processes", "11"], "argument --processes: '11' is more than 10"),
        (COUNTS + ["--processes", "two"], "usage"),
        (COUNTS + ["--launches", "0"], "argument --launches: '0' is less than 1"),
        (COUNTS + ["--launches", "1e9"], "usage"),
        (COUNTS + ["--top", "0"], "argument --top: '0' is less than 1"),
        *[(COUNTS + ["--args", text], needle) for text, needle in ARGS_GRAMMAR],
        (COUNTS + ["--args", "0,40"], "--args '0,40': 40 is more than 32"),
        (COUNTS + ["--arg-kind", "numpy"], "usage"),
        (COUNTS + ["--dispatch", "eagerly"], "usage"),
        (["counts", "--simulator", "--variant", "a=bogus@numba-cuda==0.30.4"], "unknown mechanism 'bogus'"),
        (["counts", "--simulator", "--variant", "a=hoist-imports:all@numba-cuda==0.30.4"], "takes no argument"),
        (["counts", "--simulator", "--variant", "a=hoist-imports@"], "expected MECH@BASE"),
        (["counts", "--simulator", "--variant", "a=numba-cuda>=1"], "unknown variant spec"),
        (["counts", "--simulator", "--variant", "a=numba-cuda==0.29.0", "--variant", "a=numba-cuda==0.30.4"],
         "used twice"),
        (["counts", "--simulator", "--repo", "a=/no/such/clone"], "does not exist"),
        (COUNTS + ["--reference", "nosuch"], "--reference"),
        (COUNTS + ["--constraints", "/no/such/constraints.txt"], "constraints"),
        (["counts", "--simulator", "--variant", "a=numba-cuda==0.30.4", "--python", "/no/such/python"], "python"),
        (["counts", "--simulator", "--variant", "x=numba-cuda==99.0.0", "-o", "{tmp}/c.json"],
         "numba-cuda==99.0.0 is not on the package index"),
        (["counts", "--simulator", "--variant", "x=hoist-imports@numba-cuda==99.0.0", "-o", "{tmp}/c.json"],
         "numba-cuda==99.0.0 is not on the package index"),
        (["counts", "--simulator", "--no-install", "--env-dir", "{tmp}", "-o", "{tmp}/c.json"],
         "no environment for variant"),
        (COUNTS + ["-o", UNWRITABLE], "--output"),
        (COUNTS + ["-o", "{tmp}"], "is a directory"),
        (COUNTS + ["--markdown", UNWRITABLE], "--markdown"),
        (["counts", "--variant", "a=env:{prefix}", "-o", "{tmp}/c.json"], "simulator"),  # valid: the GPU guard refuses
    ],
    "mechanisms": [
        (["mechanisms", "--simulator", "--processes", "0"], "--processes"),
        (["mechanisms", "--simulator", "--processes", "two"], "usage"),
        (["mechanisms", "--simulator", "--rounds", "0"], "--rounds"),
        (["mechanisms", "--simulator", "--samples", "-1"], "--samples"),
        (["mechanisms", "--simulator", "--launches", "0"], "--launches"),
        (["mechanisms", "--simulator", "--max-time", "-1"], "--max-time"),
        (["mechanisms", "--simulator", "--max-time", "nan"], "--max-time"),
        (["mechanisms", "--simulator", "--warmup", "-1"], "--warmup"),
        (["mechanisms", "--simulator", "--warmup-class-write", "-5"], "--warmup-class-write"),
        (["mechanisms", "--simulator", "--args", "9"], "--args '9': 9 is more than 8"),
        *[(["mechanisms", "--simulator", "--args", text], needle) for text, needle in ARGS_GRAMMAR],
        (["mechanisms", "--simulator", "--mechanisms", "bogus"], "bogus"),
        (["mechanisms", "--simulator", "--mechanisms", "delay:abc"], "delay"),
        (["mechanisms", "--simulator", "--mechanisms", "delay:-1us"], "delay"),
        (["mechanisms", "--simulator", "--affinity", "cpu7"], "affinity"),
        (["mechanisms", "--simulator", "--seed", "x"], "usage"),
        (["mechanisms", "--simulator", "-o", UNWRITABLE], "--output"),
        (["mechanisms", "-o", "{tmp}"], "is a directory"),
        (["mechanisms", "--pool", "/no/such/a.json", "/no/such/b.json", "-o", "{tmp}/p.json"], "does not exist"),
        (["mechanisms", "--pool", "{file}", "{file}", "-o", "{tmp}/p.json"], "not valid JSON"),
        (["mechanisms", "--pool", "{tmp}", "{tmp}", "-o", "{tmp}/p.json"], "is a directory"),
        (["mechanisms", "--pool", "{file}", "-o", "{tmp}/p.json"], "two or more"),
        (["mechanisms", "--pool", "{file}", "{file}", "-o", UNWRITABLE], "--output"),
        (["mechanisms", "--pool", "{list}", "{mech}", "-o", "{tmp}/p.json"], "JSON list"),
        (["mechanisms", "--pool", "{other}", "{mech}", "-o", "{tmp}/p.json"], "launchbench.compare/3"),
        (["mechanisms", "--pool", "{mech}", "{mech}", "-o", "{tmp}/p.json"], "twice"),
        (["mechanisms"], "simulator"),  # valid options: the GPU guard refuses (simulator on)
    ],
    "peers": [
        (["peers", "--loops", "0"], "--loops"),
        (["peers", "--repeats", "-1"], "--repeats"),
        (["peers", "--rounds", "0"], "--rounds"),
        (["peers", "--loops", "1e4"], "usage"),
        (["peers", "--args", "99"], "--args '99': 99 is more than 8"),
        *[(["peers", "--args", text], needle) for text, needle in ARGS_GRAMMAR],
        (["peers", "--args", "0-2,4"], "simulator"),  # the grammar's ranges pass; the GPU guard refuses
        (["peers", "--only", "bogus"], "--only"),
        (["peers", "--only", ","], "--only"),
        (["peers", "--affinity", "cpu7"], "affinity"),
        (["peers", "-o", UNWRITABLE], "--output"),
        (["peers", "-o", "{tmp}"], "is a directory"),
        (["peers"], "simulator"),
    ],
    "breakdown": [
        (["breakdown", "--loops", "0"], "--loops"),
        (["breakdown", "--repeats", "-2"], "--repeats"),
        (["breakdown", "--rounds", "zero"], "usage"),
        (["breakdown", "--rounds", "0"], "--rounds"),
        (["breakdown", "--variant", "a=env:{prefix}", "--variant", "b=env:{prefix}", "--rounds", "0"], "--rounds"),
        (["breakdown", "--variant", "a=env:{prefix}", "--variant", "b=env:{prefix}", "--repeats", "0"], "--repeats"),
        (["breakdown", "--args", "9"], "--args '9': 9 is more than 8"),  # one environment: peers' kernels
        (["breakdown", "--simulator", "--args", "0,33"], "--args '0,33': 33 is more than 32"),  # stage deltas
        *[(["breakdown", "--args", text], needle) for text, needle in ARGS_GRAMMAR],
        *[(["breakdown", "--simulator", "--args", text], needle) for text, needle in ARGS_GRAMMAR],
        (["breakdown", "--args", "1-3"], "simulator"),  # the grammar's ranges pass; the GPU guard refuses
        (["breakdown", "--output", UNWRITABLE], "--output"),
        (["breakdown", "--affinity", "cpu7"], "affinity"),
        (["breakdown", "--simulator", "--variant", "x=numba-cuda==99.0.0", "--variant", "b=numba-cuda==0.30.4",
          "-o", "{tmp}/b.json"], "numba-cuda==99.0.0 is not on the package index"),
        (["breakdown"], "simulator"),
    ],
    "history": [
        (["history"], "usage"),
        (["history", "/no/such/clone", "HEAD..HEAD"], "/no/such/clone"),
        (HISTORY + ["--repeats", "0"], "--repeats"),
        *[(HISTORY + ["--args", text], needle) for text, needle in ARGS_GRAMMAR],
        (HISTORY + ["--args", "0,40"], "--args '0,40': 40 is more than 32"),
        (HISTORY + ["--warmup", "-1"], "--warmup"),
        (HISTORY + ["--max-time", "-1"], "--max-time"),
        (HISTORY + ["--max-time", "nan"], "--max-time"),
        (HISTORY + ["--prefetch", "lots"], "--prefetch"),
        (HISTORY + ["--args", "0-2,4"], "NUMBA_ENABLE_CUDASIM=1"),  # valid options: the GPU guard, before any build
        (["bisect", "{git}", "HEAD", "HEAD", "-o", "{tmp}/b.json", "--prefetch", "-1"], "--prefetch"),
    ],
    "bisect": [
        (["bisect"], "usage"),
        (["bisect", "{git}", "HEAD", "HEAD", "-o", "{tmp}/b.json", "--args", "4,0"], "--args '4,0': 0 comes after 4"),
        (["bisect", "{git}", "HEAD", "HEAD", "-o", "{tmp}/b.json", "--args", "0-2,2"], "--args '0-2,2': 2 is given twice"),
    ],
    "report": [
        (["report"], "usage"),
        (["report", "/no/such/results.json"], "does not exist"),
        (["report", "{tmp}"], "{tmp}"),
        (["report", "{file}"], "not valid JSON"),
        (["report", COMPARE_JSON, "--markdown", UNWRITABLE], "--markdown"),
        (["report", COMPARE_JSON, "--html", "{tmp}"], "is a directory"),
        (["report", COMPARE_JSON, "--plot", "{file}/p.png"], "not a folder"),
        (["report", BREAKDOWN_JSON, "--text", "{file}/t.txt"], "--text"),
        (["report", BREAKDOWN_JSON, "--text", "{tmp}"], "is a directory"),
    ],
    "site": [
        (["site", "--config", "/no/such/asv.conf.json"], "not found"),
        (["site"], "not found"),  # run outside the checkout: no asv.conf.json here
        (["site", "--config", "{file}"], "asv config"),
        (["site", "--config", "{tmp}"], "asv config"),
        (["site", "--results", "/no/such/results"], "no such directory"),
        (["site", "--html-dir", "{file}"], "--html-dir {file} is a file"),
        (["site", "--config", str(ROOT / "asv.conf.json"), "--results", "{tmp}"], "not an asv results directory"),
    ],
    "claims": [  # no document is a page of "not measured yet" rows: work, not a mistake
        (["claims", "/no/such/releases.json"], "RELEASES.json"),
        (["claims", "-o", ""], "--output"),
    ],
    "asv-series": [
        (["asv-series", COMPARE_JSON, "--ledger", "{tmp}/l", "--results-dir", "{tmp}/r"], "not a launchbench releases"),
        (["asv-series", RELEASES_JSON, "--ledger", "{tmp}/l", "--results-dir", "{tmp}/r", "--publish"],
         "--publish needs --html-dir"),
        (["asv-series", RELEASES_JSON, RELEASES_JSON.replace("history-1", "missing"), "--ledger", "{tmp}/l",
          "--results-dir", "{tmp}/r"], "cannot read it"),
        (["asv-series", RELEASES_JSON, "--results-dir", "{tmp}/r"], "usage"),  # --ledger is required
    ],
    "series-page": [
        (["series-page", COMPARE_JSON, "-o", "{tmp}/p.md"], "not a launchbench releases"),
        (["series-page"], "usage"),
    ],
    "releases": [
        (["releases"], "usage"),
        (["releases", "numba-cuda==0.30.4+cuda-core==1+cuda-core==2"], "conflicting pins"),
        (["releases", "numba-cuda==0.29.0,0.30.4", "--pin", "numba"], "--pin"),
    ],
    "lock-probe": [
        (["lock-probe"], "usage"),
        (["lock-probe", "numba-cuda==0.30.4"], "is not a numba-cuda-mlir series"),
        (["lock-probe", "numba-cuda-mlir==0.6.0", "--timeout", "0"], "--timeout"),
        (["lock-probe", "numba-cuda-mlir==0.6.0", "--pin", "numba"], "--pin"),
    ],
    "info": [
        (["info", "--bogus"], "usage"),
        (["info", "extra"], "usage"),
    ],
    "refs": [
        (["refs"], "usage"),
        (["refs", "/no/such/clone"], "does not exist"),
        (["refs", "{file}"], "is not a folder"),
        (["refs", "{tmp}"], "not a git repository"),
        (["refs", "{git}"], "not a numba-cuda clone"),
        (["refs", "{tmp}", "--pr", "x"], "usage"),
    ],
    "asv-config": [
        (["asv-config"], "usage"),
        (["asv-config", "--repo", "/no/such/clone", "-o", "{tmp}/a.json"], "not a git repository"),
        (["asv-config", "--repo", "{git}", "--config", "/no/such/asv.conf.json", "-o", "{tmp}/a.json"], "not found"),
        (["asv-config", "--repo", "{git}", "-o", UNWRITABLE], "--output"),
        (["asv-config", "--repo", "{git}", "-o", "{tmp}"], "is a directory"),
        (["asv-config", "--repo", "{git}", "--config", "{file}", "-o", "{tmp}/a.json"], "not readable JSON"),
        (["asv-config", "--repo", "{git}", "--config", "{list}", "-o", "{tmp}/a.json"], "JSON list"),
        (["asv-config", "--repo", "{git}", "--config", "{empty}", "-o", "{tmp}/a.json"], "not readable JSON"),
        (["asv-config", "--repo", "{git}", "-o", "{tmp}/a.json"], "not a numba-cuda clone"),
    ],
    "against": [
        (["against"], "usage"),
        (["against", "baseline"], "usage"),
        (["against", "baseline", "v2"], "needs a local numba-cuda clone"),
        (["against", "baseline", "v2", "--repo", "https://github.com/NVIDIA/numba-cuda.git"], "needs a local"),
        (["against", "baseline", "v2", "--repo", "/no/such/clone"], "not a git repository"),
        (["against", "baseline...v2", "v2"] + GIT, "not a single ref"),
        (["against", "baseline", "v2", "--factor", "fast"] + GIT, "--factor"),
        (["against", "baseline", "v2", "--factor", "0"] + GIT, "--factor"),
        (["against", "baseline", "v2", "-a", "repeat"] + GIT, "-a"),
        (["against", "baseline", "v2", "--config", "/no/such/asv.conf.json"] + GIT, "not found"),
        (["against", "baseline", "v2", "--config", "{file}"] + GIT, "not readable JSON"),
        (["against", "baseline", "v2"] + GIT, "NUMBA_ENABLE_CUDASIM=1"),  # valid options: the GPU guard refuses
    ],
    "asv-releases": [
        (["asv-releases"], "--env"),
        (["asv-releases", "--env", "0.29.0"], "VERSION=PYTHON"),
        (["asv-releases", "--env", "x.y={py}"], "not a numba-cuda version"),
        (["asv-releases", "--env", "0.29.0=/no/such/python"], "not an executable python"),
        (["asv-releases", "--env", "0.29.0={py}", "--env", "0.29.0={py}"], "given twice"),
        (["asv-releases", "--env", "0.29.0={py}", "--branch", "baseline=0.30.4"], "no --env given"),
        (["asv-releases", "--env", "0.29.0={py}", "--branch", "baseline"], "NAME=VERSION"),
        (["asv-releases", "--env", "0.29.0={py}", "--launch-method", "fork"], "usage"),
        (["asv-releases", "--env", "0.0.1={py}", "-a", "repeat"], "-a"),
        (["asv-releases", "--env", "0.0.1={py}", "--log", UNWRITABLE], "--log"),
        (["asv-releases", "--env", "0.0.1={py}", "--compare-output", "{tmp}"], "--compare-output"),
        (["asv-releases", "--env", "0.0.1={py}", "--ledger", "{file}"], "--ledger"),
        (["asv-releases", "--env", "0.0.1={py}", "--results-dir", "{file}"], "--results-dir {file} is a file"),
        (["asv-releases", "--env", "0.0.1={py}"], "not 0.0.1"),
    ],
    "wheelhouse": [
        (["wheelhouse"], "usage"),
        (["wheelhouse", "{file}"], "is a file"),
        (["wheelhouse", "/proc/launchbench-sweep/wheels"], "/proc/launchbench-sweep/wheels"),
        (["wheelhouse", "{tmp}/w", "--python-version", "three"], "--python-version"),
        (["wheelhouse", "{tmp}/w", "--platform", "any platform"], "--platform"),
        (["wheelhouse", "{tmp}/w", "--split-mb", "0"], "--split-mb"),
        (["wheelhouse", "{tmp}/w", "--split-mb", "many"], "--split-mb"),
        (["wheelhouse", "{tmp}/w", "--variant", "numba-cuda>=1"], "numba-cuda>=1"),
        (["wheelhouse", "{tmp}/w", "--constraints", "/no/such/constraints.txt"], "constraints"),
    ],
}


def _generic_cases(parser) -> list:
    """For a subcommand without cases here: no arguments (when something is required), a missing
    clone, and a range written with three dots ("A...B") where refs go, next to a real clone.
    (Anything that would then start work trips a wire: give such a command cases of its own.)"""
    positional = [a for a in parser._actions if not a.option_strings]
    if not positional:
        return [([], "usage")] if any(a.required for a in parser._actions) else []
    clone_like = [any(w in (a.dest + " " + str(a.metavar)).lower() for w in ("clone", "repo", "path"))
                  for a in positional]
    cases = [([], "usage")]
    if any(clone_like):
        refs = ["HEAD..HEAD" if ".." in str(a.metavar) or "range" in a.dest else "HEAD" for a in positional]
        cases.append((["/no/such/clone" if c else r for c, r in zip(clone_like, refs)], "/no/such/clone"))
    cases.append((["{git}" if c else "A...B" for c in clone_like], ""))
    return cases


def _subparsers():
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return sub.choices


def _all_cases():
    out = []
    for name, parser in _subparsers().items():
        own = CASES.get(name)
        if own is None:
            own = [([name] + argv, needle) for argv, needle in _generic_cases(parser)]
        for i, (argv, needle) in enumerate(own):
            out.append(pytest.param(argv, needle, id=f"{name}-{i}"))
    return out


class Tripwire(BaseException):
    """Work a validation case must never reach (not an Exception: nothing catches it)."""


def _tripwire(what):
    def fail(*args, **kwargs):
        raise Tripwire(f"{what} was reached: the case got past validation")
    return fail


class _GuardedPopen(subprocess.Popen):
    """Local git queries, uname and quick ``python -c`` probes only: no pip, asv, venv or network."""

    def __init__(self, args, *rest, **kwargs):
        argv = [str(a) for a in ([args] if isinstance(args, (str, bytes, os.PathLike)) else args)]
        exe = os.path.basename(argv[0]) if argv else ""
        probe = "python" in exe and len(argv) > 2 and argv[1] in ("-c", "-I")
        local = exe in ("git", "uname") and not {"fetch", "clone", "pull", "push", "ls-remote"} & set(argv)
        if not (probe or local):
            raise Tripwire(f"subprocess {argv[:5]} was started: the case got past validation")
        super().__init__(args, *rest, **kwargs)


INDEX = {"numba-cuda": ["0.30.4", "0.30.3", "0.29.0", "0.28.2"], "numba-cuda-mlir": ["0.6.0", "0.5.4"]}


def fake_index(python, name):
    return list(INDEX.get(name, []))


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    """Shared inputs (cases must leave them as they are: the test checks)."""
    root = tmp_path_factory.mktemp("sweep-fixtures")
    (root / "dir").mkdir()
    (root / "file.txt").write_text("not json\n")
    (root / "list.json").write_text("[1, 2]\n")
    (root / "empty.json").write_text("")
    (root / "other.json").write_text('{"schema": "launchbench.compare/3", "samples": []}\n')
    (root / "mech.json").write_text('{"schema": "launchbench.mechanisms/2", "tool": "launchbench mechanisms", '
                                    '"command": ["launchbench"], "analysis": {}, "analysis_scope": "processes", '
                                    '"processes": [], "params": {"mechanisms": [], "arg_counts": []}}\n')
    git = root / "git"
    subprocess.run(["git", "init", "-q", str(git)], check=True)
    subprocess.run(["git", "-C", str(git), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    return root


@pytest.fixture
def sweep_env(tmp_path, monkeypatch, fixtures, odd_paths):
    from launchbench.commands import asv, mechanisms_cli, peers
    from launchbench.engine import mechanism_procs, runner
    from launchbench.environments import envs, ledger, refs
    from launchbench.output import asvtools, site
    from launchbench.workloads import breakdown

    for obj, attr in ((envs.EnvManager, "_build"), (runner, "run"), (mechanisms_cli, "make_launchers"),
                      (mechanism_procs, "run"), (peers, "measure_on_engine"), (breakdown, "numba_kernel_and_args"),
                      (asvtools, "run_asv"), (asv, "run_asv"), (site, "publish"), (refs, "fetch_pull_head"),
                      (ledger, "ensure_ledger"), (ledger, "ensure_series_ledger")):
        monkeypatch.setattr(obj, attr, _tripwire(f"{getattr(obj, '__name__', obj)}.{attr}"))
    monkeypatch.setattr(subprocess, "Popen", _GuardedPopen)
    monkeypatch.setattr(envs, "index_versions", fake_index)  # no network: the index as of 2026-11
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setenv("LAUNCHBENCH_SMOKE", "0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    subs = {"{tmp}": str(fixtures / "dir"), "{file}": str(fixtures / "file.txt"), "{git}": str(fixtures / "git"),
            "{py}": sys.executable, "{prefix}": sys.prefix, "{list}": str(fixtures / "list.json"),
            "{other}": str(fixtures / "other.json"), "{mech}": str(fixtures / "mech.json"),
            "{empty}": str(fixtures / "empty.json"), **odd_paths}
    return [tmp_path, fixtures], subs


@pytest.fixture(scope="module")
def odd_paths(tmp_path_factory):
    """Paths of odd kinds, outside the folders a case must leave as they were: a symlink loop, a
    dangling symlink, a FIFO nobody writes, and a name that is not valid UTF-8 (as argv gives it)."""
    odd = tmp_path_factory.mktemp("sweep-odd")
    os.symlink(odd / "loop", odd / "loop")
    os.symlink(odd / "nowhere", odd / "dangling")
    os.mkfifo(odd / "fifo")
    return {"{loop}": str(odd / "loop"), "{dangling}": str(odd / "dangling"), "{fifo}": str(odd / "fifo"),
            "{badname}": os.fsdecode(bytes(odd) + b"/r\xff.json")}


def _tree(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts}


def _checkout_state() -> set:
    return {p.name for p in ROOT.iterdir()} | {f".asv/{p.name}" for p in (ROOT / ".asv").glob("*")}


@pytest.mark.parametrize("argv, needle", _all_cases())
def test_mistake_is_one_line_error(argv, needle, sweep_env, capsys):
    roots, subs = sweep_env

    def fill(text):
        for key, value in subs.items():
            text = text.replace(key, value)
        return text

    argv, needle = [fill(a) for a in argv], fill(needle)
    before, checkout = [_tree(r) for r in roots], _checkout_state()
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse (its types: base/options.py): one line, no usage block
        rc = exc.code
        err = capsys.readouterr().err
        assert rc == 2 and "Traceback" not in err, err
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        # unknown options are the top-level parser's to report
        assert lines[0].startswith((f"launchbench {argv[0]}: error: ", "launchbench: error: unrecognized")), err
        assert needle == "usage" or needle in lines[0], err
    else:
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err, err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2, (rc, out, err)
        assert len(lines) == 1 and lines[0].startswith("launchbench: error: "), err
        assert needle in lines[0], lines[0]
    assert [_tree(r) for r in roots] == before, "a failed command left files behind"
    assert _checkout_state() == checkout, "a failed command wrote into the launchbench checkout"


def test_every_subcommand_is_swept():
    names = set(_subparsers())
    assert names >= {"compare", "against", "asv-config", "asv-releases", "refs", "mechanisms", "peers",
                     "breakdown", "report", "site", "info"}
    cases = {p.id.rsplit("-", 1)[0] for p in _all_cases()}
    assert names <= cases, names - cases


@pytest.mark.parametrize("code, needle", [(28, "No space left on device; free space"),
                                          (27, "File too large; the file-size limit"),
                                          (13, "Permission denied; choose a writable folder"),
                                          (30, "Read-only file system")])
def test_a_refused_write_outside_the_atomic_helper_is_one_line(code, needle, tmp_path, capsys, monkeypatch):
    """A log, plot or cache written with plain open(): cli.main words the OSError in one line."""
    import errno as errno_mod

    from launchbench.commands import info

    assert code in (errno_mod.ENOSPC, errno_mod.EFBIG, errno_mod.EACCES, errno_mod.EROFS)
    target = tmp_path / "run.logs" / "worker.log"

    def refuse(args):
        raise OSError(code, os.strerror(code), str(target))

    monkeypatch.setattr(info, "_run_info", refuse)
    rc = cli.main(["info"])
    out, err = capsys.readouterr()
    assert rc == 2 and "Traceback" not in out + err and err.count("\n") == 1, err
    assert err.startswith(f"launchbench: error: cannot write {target}: {needle}"), err


def test_other_os_errors_are_not_disguised(capsys, monkeypatch):
    from launchbench.commands import info

    def broken(args):
        raise OSError(5, "Input/output error", "/dev/x")

    monkeypatch.setattr(info, "_run_info", broken)
    with pytest.raises(OSError, match="Input/output error"):
        cli.main(["info"])


# ---------------------------------------------------------------- the generated sweep
#
# Every option of every subcommand, found in the parser itself (its argparse actions), fed the
# bad values of its kind. Each case must exit non-zero with exactly one line on stderr that names
# the option (or the value given), no traceback, nothing written, and no environment, build,
# download or worker started (the tripwires of sweep_env). Numeric options are found by their
# type (base/options.Number); every other option needs a row in OPTION_KINDS, so a new option
# without one fails test_every_option_has_a_kind. Grow BAD_VALUES and OPTION_KINDS as bugs show.

from launchbench.base.options import Number  # noqa: E402

BINARY = "{binary}"
BAD_VALUES = {
    "flag": ["=x"],  # a store_true option given a value
    "choice": ["bogus", "", "\u00e9"],
    "counts": ["", "nan", "-1", "\u0663", "99999999999", "x"],
    "cpus": ["", "nan", "-1", "\u0663", "99999999"],
    "gpus": ["", "nan", "-1", "\u0663", "0,0"],
    "ints": ["", "nan", "inf", "-1", "0", "99999999999", "\u0663"],
    "infile": ["", "/no/such/file", "{tmp}", BINARY, "{file}/x", "{fifo}", "/dev/zero"],
    "injson": ["", "/no/such/file.json", "{tmp}", BINARY, "{file}", "{list}", "{file}/x", "{fifo}", "/dev/zero"],
    "indir": ["", "/no/such/dir", "{file}"],
    "exe": ["", "/no/such/python", "{file}", "{tmp}"],
    # odd paths (symlink loops, dangling links, FIFOs, names not in UTF-8): see ODD in sweep_env
    "outfile": ["", UNWRITABLE, "{tmp}", "{file}/x", "{loop}", "{dangling}", "{loop}/x", "{fifo}", "{badname}"],
    "outdir": ["", "/proc/launchbench-sweep/d", "{file}", "{loop}", "{dangling}", "{loop}/x", "{fifo}"],
    "clone": ["", "/no/such/clone", "{file}", "{tmp}"],
    "ref": ["", "no-such-ref", "-x"],
    "variant": ["", "x", "a=", "=numba-cuda==0.30.4", "a=numba-cuda>=1", "a=bogus@numba-cuda==0.29.0"],
    "repo_item": ["", "a", "a=/no/such/clone", "a={file}"],
    "name": ["", "nosuch"],
    "list": ["", ",", "nosuch", "\u00e9"],
    "requirement": ["", "not a req!!", "numba-cuda>=1"],
    "text": ["", "\u00e9 \u2603"],
    "series": ["", "numba==1", "numba-cuda==0.3..x", "numba-cuda==0.6.0..0.3.0", "/no/such.whl", "{file}.whl",
               "numba-cuda==0.30.4+numba==1+numba==2"],
    "pin": ["", "numba", "numba==", "pinned", "=1"],
}


def _number_values(t: Number) -> list:
    values = ["nan", "inf", "-inf", "", "\u0663", "many", "1e400", str(int(t.high) + 1), "9" * 30]
    if t.low is not None:
        values += [f"{t.low - 1:g}"] + (["0"] if t.above or t.low > 0 else [])
    if t.kind is int:
        values.append("1.5")
    return values


# (subcommand, option) or option -> its kind; "skip": hidden test hooks with no user-facing grammar.
OPTION_KINDS = {
    "--help": None, "-h": None, "--pass-env": "text",
    "--no-install": "flag", "--system-site-packages": "flag", "--peers": "flag", "--simulator": "flag",
    "--no-report": "flag", "--quiet": "flag", "--no-measure": "flag", "--no-counts": "flag", "--no-hints": "flag",
    "--no-conformance": "flag",
    "--build-only": "flag", "--no-fetch": "flag", "--force": "flag", "--breakdown": "flag", "--no-insitu": "flag",
    "--no-pull": "flag", "--cdn": "flag", "--json": "flag", "--build-deps": "flag", "--asv-builds": "flag",
    "--allow-version-mismatch": "flag", "--asv-verbose": "flag",
    "--arg-kind": "choice", "--dispatch": "choice", "--launch-method": "choice",
    "--args": "counts", "--affinity": "cpus", "--spin": "cpus", "--gpus": "gpus",
    "--variant": "variant", "--reference": "name", "--env-dir": "outdir", "--python": "exe", "--wheels": "indir",
    "--constraints": "infile", "--extras": "text", "--output": "outfile", "--markdown": "outfile",
    "--plot": "outfile", "--wheel-cache": "outdir", "--asv-results": "outdir", "--target": "skip", "--suite": "skip",
    ("compare", "--repo"): "repo_item", ("counts", "--repo"): "repo_item", ("breakdown", "--repo"): "repo_item",
    ("compare", "--loops"): "ints",
    ("pr", "--base"): "ref", ("pr", "--main"): "ref", ("pr", "--out"): "outdir",
    ("asv-config", "--repo"): "clone", ("asv-config", "--config"): "injson", ("asv-config", "--results-dir"): "outdir",
    ("asv-config", "--html-dir"): "outdir", ("asv-config", "--offline"): "indir", ("asv-config", "--host-site"): "indir",
    ("asv-config", "--plan"): "injson", ("asv-plan", "--every"): "outfile", ("asv-plan", "--config"): "injson",
    ("asv-plan", "clone"): "clone", ("asv-plan", "range"): "ref",
    ("against", "--repo"): "clone", ("against", "--config"): "injson", ("against", "--bench"): "text",
    ("against", "--attribute"): "text", ("against", "--machine"): "text",
    ("asv-releases", "--env"): "text", ("asv-releases", "--branch"): "text", ("asv-releases", "--results-dir"): "outdir",
    ("asv-releases", "--html-dir"): "outdir", ("asv-releases", "--ledger"): "outdir",
    ("asv-releases", "--config"): "injson", ("asv-releases", "--machine"): "text", ("asv-releases", "--bench"): "text",
    ("asv-releases", "--attribute"): "text", ("asv-releases", "--compare-output"): "outfile",
    ("asv-releases", "--compare"): "text", ("asv-releases", "--log"): "outfile",
    ("refs", "--v2"): "ref", ("refs", "--baseline"): "ref", ("refs", "--remote"): "name",
    ("mechanisms", "--mechanisms"): "list", ("mechanisms", "--pool"): "injson", ("peers", "--only"): "list",
    ("breakdown", "--stages"): "list", ("report", "--html"): "outfile", ("report", "--text"): "outfile",
    ("site", "--config"): "injson", ("site", "--results"): "indir", ("site", "--html-dir"): "outdir",
    ("wheelhouse", "--python-version"): "text", ("wheelhouse", "--platform"): "text",
    ("wheelhouse", "--variant"): "requirement", ("wheelhouse", "--package"): "requirement",
    # positionals, by dest
    ("history", "clone"): "clone", ("history", "range"): "ref", ("bisect", "clone"): "clone",
    ("bisect", "good"): "ref", ("bisect", "bad"): "ref", ("pr", "clone"): "clone", ("pr", "ref"): "ref",
    ("against", "ref1"): "ref", ("against", "ref2"): "ref", ("refs", "path"): "clone",
    ("report", "results"): "injson", ("wheelhouse", "dir"): "outdir",
    ("releases", "series"): "series", ("releases", "--pin"): "pin", ("releases", "--stack-bisect"): "flag",
    ("claims", "documents"): "injson",
    ("asv-series", "documents"): "injson", ("asv-series", "--ledger"): "outdir", ("asv-series", "--results-dir"): "outdir",
    ("asv-series", "--html-dir"): "outdir", ("asv-series", "--machine"): "text", ("asv-series", "--publish"): "flag",
    ("series-page", "documents"): "injson",
    ("lock-probe", "series"): "series", ("lock-probe", "--pin"): "pin",
}

# A valid command line per subcommand (its positionals first): each case adds one bad option to it
# (or replaces one positional). Valid as given, each ends in a one-line refusal (the GPU guard under
# NUMBA_ENABLE_CUDASIM=1 and the like) or in a tripwire, never in work.
SWEEP_BASE = {
    "compare": ["compare", "-o", "{out}/c.json"],
    "counts": ["counts", "-o", "{out}/c.json"],
    "history": ["history", "{git}", "HEAD..HEAD", "-o", "{out}/h.json"],
    "bisect": ["bisect", "{git}", "HEAD", "HEAD", "-o", "{out}/b.json"],
    "pr": ["pr", "{git}", "HEAD", "--out", "{out}/pr"],
    "asv-config": ["asv-config", "--repo", "{git}", "-o", "{out}/a.json"],
    "asv-plan": ["asv-plan", "{git}", "HEAD..HEAD", "-o", "{out}/p.txt"],
    "against": ["against", "baseline", "v2", "--repo", "{git}"],
    "asv-releases": ["asv-releases", "--env", "0.0.1={py}"],
    "refs": ["refs", "{git}"],
    "mechanisms": ["mechanisms", "-o", "{out}/m.json"],
    "peers": ["peers"],
    "breakdown": ["breakdown", "--simulator", "-o", "{out}/b.json"],  # the paired mode: every option applies
    "report": ["report", COMPARE_JSON],
    "site": ["site", "--config", str(ROOT / "asv.conf.json")],
    "info": ["info"],
    "wheelhouse": ["wheelhouse", "{out}/w"],
    "releases": ["releases", "numba-cuda==0.29.0,0.30.4", "-o", "{out}/r.json"],
    "claims": ["claims", "/no/such/releases.json", "-o", "{out}/claims.md"],
    "asv-series": ["asv-series", RELEASES_JSON, "--ledger", "{out}/ledger", "--results-dir", "{out}/results"],
    "series-page": ["series-page", RELEASES_JSON, "-o", "{out}/page.md"],
    "lock-probe": ["lock-probe", "numba-cuda-mlir==0.4.2,0.5.0", "-o", "{out}/l.json"],
}
# Values a command takes on purpose (not mistakes): (subcommand, option, value).
ACCEPTED = {
    ("compare", "--extras", ""), ("counts", "--extras", ""), ("history", "--extras", ""), ("bisect", "--extras", ""), ("pr", "--extras", ""),  # noqa: E501
    ("breakdown", "--extras", ""), ("releases", "--extras", ""), ("lock-probe", "--extras", ""), ("asv-plan", "--extras", ""), ("wheelhouse", "--package", "numba-cuda>=1"),  # a requirement, fetched as given  # noqa: E501
}


# Cases not yet refused as they should be, each a known gap to close (strict: a case that starts
# passing fails here until its row is removed). Keys: (subcommand, option or positional, value).
KNOWN_GAPS = {
    **{("asv-config", option, value): "checked only after the clone is found to be numba-cuda's (the sweep's "
       "clone is not)" for option, values in (("--results-dir", ("",)), ("--env-dir", ("",)), ("--html-dir", ("",)),
                                               ("--offline", ("",)), ("--host-site", ("",)), ("--repo", ("",)))
       for value in values},
    **{("asv-releases", option, value): "checked only after the env's numba-cuda version (the sweep's env has "
       "another)" for option, values in (("--html-dir", ("", "/proc/launchbench-sweep/d", "{file}", "{loop}",
                                                         "{dangling}", "{loop}/x", "{fifo}")),
                                         ("--config", ("", "/no/such/file.json", "{tmp}", BINARY, "{file}", "{list}",
                                                       "{file}/x", "{fifo}", "/dev/zero")),
                                         ("--machine", ("", "\u00e9 \u2603")), ("-b", ("", "\u00e9 \u2603")))
       for value in values},
    **{("refs", option, value): "checked only after the clone is found to be numba-cuda's (the sweep's clone is "
       "not)" for option, values in (("--v2", ("", "no-such-ref", "-x")), ("--baseline", ("", "no-such-ref", "-x")),
                                     ("--remote", ("", "nosuch"))) for value in values},
    **{("against", option, value): "not checked: the GPU guard refuses first" for option, values in
       (("-b", ("", "\u00e9 \u2603")), ("--machine", ("", "\u00e9 \u2603")), ("ref1", ("no-such-ref",)),
        ("ref2", ("no-such-ref",))) for value in values},
    ("against", "ref1", ""): "refused, as REF1, not by its name ref1",
    ("against", "ref2", ""): "refused, as REF2, not by its name ref2",
    ("against", "ref1", "-x"): "argparse reads -x as an option (then misses ref2)",
    ("bisect", "good", "-x"): "argparse reads -x as an option (then misses bad)",
    **{(command, "clone", value): "the GPU guard refuses before the clone is checked" for command in ("history", "bisect")
       for value in ("", "{tmp}")},
    **{("bisect", option, value): "the GPU guard refuses before the refs are resolved" for option in ("good", "bad")
       for value in ("", "no-such-ref")},
    ("pr", "ref", ""): "refused as unknown revision '' (the message names the value, not REF)",
    ("pr", "--main", ""): "the head's own-base check refuses first",
    ("compare", "--repo", "a=/no/such/clone"): "refused naming the path, not --repo",
    ("counts", "--repo", "a=/no/such/clone"): "refused naming the path, not --repo",
    ("counts", "--repo", "a={file}"): "refused naming the path, not --repo",
    ("compare", "--repo", "a={file}"): "refused naming the path, not --repo",
    ("site", "--results", ""): "'' is read as the current folder (refused as not an asv results directory)",
    ("site", "--html-dir", ""): "'' is taken as no --html-dir: the run goes on to the ledger",
}


def _kind(command: str, action):
    if isinstance(action.type, Number):
        return "number"
    if action.choices and not action.option_strings == []:
        return OPTION_KINDS.get((command, action.option_strings[0]), "choice")
    keys = [(command, action.dest)] if not action.option_strings else \
        [(command, o) for o in action.option_strings] + list(action.option_strings)
    for key in keys:
        if key in OPTION_KINDS:
            return OPTION_KINDS[key]
    return "unknown"


def _option_cases():
    out = []
    for command, parser in _subparsers().items():
        base = SWEEP_BASE.get(command)
        positionals = [a for a in parser._actions if not a.option_strings]
        for action in parser._actions:
            kind = _kind(command, action)
            if kind in (None, "skip") or action.__class__.__name__ in ("_HelpAction", "_VersionAction"):
                continue
            values = _number_values(action.type) if kind == "number" else BAD_VALUES.get(kind, [])
            name = action.option_strings[0] if action.option_strings else action.dest
            for value in values:
                if (command, name, value) in ACCEPTED or base is None:
                    continue
                if action.option_strings:
                    if kind == "flag":
                        argv = base + [f"{name}{value}"]
                    else:
                        argv = base + [f"{name}={value}" if value.startswith("-") else name] + \
                            ([] if value.startswith("-") else [value])
                    needle = action.option_strings
                else:
                    i = positionals.index(action) + 1  # base[0] is the command
                    argv = base[:i] + [value] + base[i + 1:]
                    needle = [action.dest, str(action.metavar)]
                gap = KNOWN_GAPS.get((command, name, value))
                marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
                out.append(pytest.param(argv, needle, value, id=f"{command}:{name}={value!r}", marks=marks))
    return out


OPTION_CASES = _option_cases()


def test_every_option_has_a_kind():
    """A new option fails here until OPTION_KINDS (or a base/options.Number type) says what it takes."""
    missing = []
    for command, parser in _subparsers().items():
        assert command in SWEEP_BASE, f"add a valid command line for {command} to SWEEP_BASE"
        for action in parser._actions:
            if _kind(command, action) == "unknown" and action.__class__.__name__ != "_HelpAction":
                missing.append((command, action.option_strings or action.dest))
    assert not missing, f"give these options a kind in OPTION_KINDS: {missing}"
    assert len(OPTION_CASES) > 500, len(OPTION_CASES)


def test_every_numeric_option_is_a_declared_type():
    """Nothing parses numbers with plain int/float (no range, NaN accepted): base/options.py declares them."""
    plain = [(command, a.option_strings) for command, parser in _subparsers().items()
             for a in parser._actions if a.type in (int, float)]
    assert not plain, plain


@pytest.fixture
def binary_file(fixtures):
    path = fixtures / "binary.bin"
    path.write_bytes(b"\xff\xfe\x00\x80numba-cuda==\xc3\x28\n")
    return str(path)


@pytest.mark.parametrize("argv, needle, value", OPTION_CASES)
def test_option_sweep(argv, needle, value, sweep_env, binary_file, capsys, tmp_path):
    roots, subs = sweep_env
    subs = {**subs, BINARY: binary_file, "{out}": str(tmp_path / "out")}

    def fill(text):
        for key, v in subs.items():
            text = text.replace(key, v)
        return text

    argv = [fill(a) for a in argv]
    before, checkout = [_tree(r) for r in roots], _checkout_state()
    try:
        rc = cli.main(argv)
    except SystemExit as exc:  # argparse, with the option's type
        rc = exc.code
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in out + err, err
    assert rc not in (0, None), (rc, out, err)
    assert len(lines) == 1 and " error: " in lines[0], err  # one line, argparse's or launchbench's
    line = lines[0]
    names = [n for n in needle if n and n != "None"] + ([fill(value)] if len(value) > 1 else [])
    assert any(n in line for n in names), f"the error does not name {names}: {line}"
    assert [_tree(r) for r in roots] == before, "a failed command left files behind"
    assert _checkout_state() == checkout, "a failed command wrote into the launchbench checkout"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*")), "outputs were written"


# ---------------------------------------------------------------- generated classes of mistakes
#
# One generator per class, over the parsers' own options (OPTION_KINDS): outputs that alias each other
# or an input, reports named by default on top of the JSON, outputs another run is writing, and
# environment variables that set what an option sets. Each case: exit 2, one line, nothing written,
# every input as it was. Odd paths (symlink loops, dangling links, FIFOs, /dev/zero, names not in
# UTF-8) are values of BAD_VALUES above; inconsistent documents are tests/test_documents.py's
# generator (every kind) and report's here.

import functools  # noqa: E402
import itertools  # noqa: E402

#: the run outputs of each command a second run must not share (locked): file options, and folders
RUN_OUTPUTS = {"outfile"}
RUN_FOLDERS = {("pr", "--out"), ("site", "--html-dir"), ("wheelhouse", "dir"), ("asv-series", "--ledger"),
               ("asv-series", "--results-dir"), ("asv-series", "--html-dir")}
#: an input of each kind the aliasing cases can name: (fixture file name, its source)
INPUTS = {("report", "results"): ("in.json.gz", COMPARE_JSON), ("asv-config", "--config"): ("in.conf.json", None),
          ("mechanisms", "--pool"): ("in-mech.json", None), "infile": ("in-constraints.txt", None)}
#: the reports a command writes beside its JSON by default: -o NAME.md is then two outputs in one file
DEFAULT_REPORTS = {"compare": (".md", ".png"), "counts": (".md",), "history": (".md", ".png")}


def _options_of_kind(command, kinds):
    """(name, positional index or None) of *command*'s options whose kind is in *kinds*."""
    parser = _subparsers()[command]
    positionals = [a for a in parser._actions if not a.option_strings]
    for action in parser._actions:
        kind = _kind(command, action)
        if kind in kinds or (command, action.option_strings[0] if action.option_strings else action.dest) in kinds:
            if action.option_strings:
                yield action.option_strings[0], None
            else:
                yield action.dest, positionals.index(action) + 1


def _with(base, name, index, value):
    return base[:index] + [value] + base[index + 1:] if index is not None else base + [name, value]


def _alias_cases():
    out = []
    for command, base in SWEEP_BASE.items():
        outs = list(_options_of_kind(command, RUN_OUTPUTS))
        for (a, _), (b, _) in itertools.combinations(outs, 2):
            out.append(pytest.param(base + [a, "{out}/same", b, "{out}/same"], None, id=f"{command}:{a}={b}"))
        for name, index in _options_of_kind(command, {"infile", "injson"}):
            key = (command, name) if (command, name) in INPUTS else _kind(command, next(
                x for x in _subparsers()[command]._actions if name in x.option_strings or x.dest == name))
            if key not in INPUTS:
                continue
            for o, _ in outs:
                out.append(pytest.param(_with(base, name, index, "{input}") + [o, "{input}"], key,
                                        id=f"{command}:{name}={o}"))
        for ext in DEFAULT_REPORTS.get(command, ()):
            out.append(pytest.param(base + ["-o", "{out}/x" + ext], None, id=f"{command}:-o=default{ext}"))
    return out


@pytest.fixture
def inputs(tmp_path_factory):
    """One fresh copy of each input kind (a case that overwrote one would show)."""
    root = tmp_path_factory.mktemp("sweep-inputs")
    (root / "in.json.gz").write_bytes(Path(COMPARE_JSON).read_bytes())
    (root / "in.conf.json").write_text((ROOT / "asv.conf.json").read_text())
    (root / "in-mech.json").write_text('{"schema": "launchbench.mechanisms/4"}\n')
    (root / "in-constraints.txt").write_text((ROOT / "constraints.txt").read_text())
    return root


def _run_case(argv, subs, capsys):
    argv = [functools.reduce(lambda t, kv: t.replace(*kv), subs.items(), a) for a in argv]
    try:
        rc = cli.main(argv)
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in out + err, err
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("launchbench: error: "), (rc, err)
    return lines[0]


@pytest.mark.parametrize("argv, input_key", _alias_cases())
def test_outputs_that_alias_are_refused(argv, input_key, sweep_env, inputs, capsys, tmp_path):
    _roots, subs = sweep_env
    src = inputs / INPUTS[input_key][0] if input_key else None
    subs = {**subs, "{out}": str(tmp_path / "out"), "{input}": str(src)}
    before = src.read_bytes() if src else None
    line = _run_case(argv, subs, capsys)
    assert "are the same file" in line or "itself" in line, line
    assert src is None or src.read_bytes() == before, "an input was overwritten"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*")), "outputs were written"


def test_every_kind_of_alias_is_generated():
    ids = {p.id for p in _alias_cases()}
    for wanted in ("compare:--output=--markdown", "compare:--output=--plot", "counts:--output=--markdown",
                   "breakdown:--output=--markdown", "report:--markdown=--html", "report:results=--markdown",
                   "compare:--constraints=--output", "asv-config:--config=-o", "mechanisms:--pool=--output",
                   "compare:-o=default.md", "history:-o=default.png"):
        assert wanted in ids, wanted


HOLDER = """
import sys
from launchbench.base import outpaths
for line in sys.stdin:
    path, folder = line.rstrip("\\n").rsplit(" ", 1)
    if folder == "1":
        outpaths.check_folder(path, "x", output=True)
    else:
        outpaths.check_outputs([(path, "x")])
    print("held", flush=True)
"""


@pytest.fixture(scope="module")
def holder():
    """Another launchbench process: it locks each path sent to it, as a run writing there would."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)

    def hold(path: str, folder: bool) -> None:
        proc.stdin.write(f"{path} {int(folder)}\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "held"
    yield hold
    proc.stdin.close()
    proc.wait(timeout=60)


def _concurrent_cases():
    out = []
    for command, base in SWEEP_BASE.items():
        for name, index in _options_of_kind(command, RUN_OUTPUTS | RUN_FOLDERS):
            folder = (command, name) in RUN_FOLDERS
            out.append(pytest.param(_with(base, name, index, "{out}/busy"), folder, id=f"{command}:{name}"))
    return out


@pytest.mark.parametrize("argv, folder", _concurrent_cases())
def test_an_output_another_run_is_writing_is_refused(argv, folder, sweep_env, holder, capsys, tmp_path):
    _roots, subs = sweep_env
    busy = tmp_path / "out" / "busy"
    holder(str(busy), folder)
    line = _run_case(argv, {**subs, "{out}": str(tmp_path / "out")}, capsys)
    assert "is being written by another launchbench run (pid" in line, line


def _env_cases():
    out = []
    for command, base in SWEEP_BASE.items():
        options = {o for a in _subparsers()[command]._actions for o in a.option_strings}
        if "--cuda-connections" in options:
            for value in ("garbage", "0", "33", "-1", "1.5", "\u0663"):
                out.append(pytest.param({"CUDA_DEVICE_MAX_CONNECTIONS": value}, base, "CUDA_DEVICE_MAX_CONNECTIONS",
                                        id=f"{command}:CUDA_DEVICE_MAX_CONNECTIONS={value!r}"))
        if "--gpus" in options:
            for value in ("0,0", "0,1,0", "GPU-a,GPU-a"):
                out.append(pytest.param({"CUDA_VISIBLE_DEVICES": value}, base + ["--gpus", "all"],
                                        "CUDA_VISIBLE_DEVICES", id=f"{command}:CUDA_VISIBLE_DEVICES={value!r}"))
        for value in ("yes", "true", "1x"):
            out.append(pytest.param({"NUMBA_ENABLE_CUDASIM": value}, base, "NUMBA_ENABLE_CUDASIM",
                                    id=f"{command}:NUMBA_ENABLE_CUDASIM={value!r}"))
    return out


@pytest.mark.parametrize("environ, argv, needle", _env_cases())
def test_an_environment_variable_is_checked_as_its_option(environ, argv, needle, sweep_env, capsys, monkeypatch,
                                                          tmp_path):
    _roots, subs = sweep_env
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    line = _run_case(argv, {**subs, "{out}": str(tmp_path / "out")}, capsys)
    assert needle in line, line
