"""Run the LC-S conformance suite in an environment and diff two runs' outcomes.

``launchbench pr`` asks "is this pull request right" by running the same suite
(launchbench/workloads/lcs/conformance.py, shipped in the package) under the
base's and the head's numba-cuda and comparing test by test. The suite runs in
a subprocess with the env's Python, launchbench reached through the overlay
(the runner's: only ``launchbench`` on PYTHONPATH), an empty ini so no project
config leaks in, and a plugin (conformance_plugin.py) that writes each test's
outcome. ``diff`` and ``summarize`` are pure.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess

from ..base import childenv
from . import conformance_plugin
from .conformance_plugin import OUT_ENV

PLUGIN = "launchbench.engine.conformance_plugin"
BAD = ("failed", "error")
DEFAULT_TIMEOUT_S = 600.0
# pytest and what it imports, lent to an env that lacks them (pytest_overlay)
PYTEST_MODULES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py", "exceptiongroup", "tomli")
# The kinds of change the report names, in the order it names them.
CHANGES = ("broken", "fixed", "xfail_to_xpass", "xpass_to_xfail", "newly_skipped", "newly_run",
           "added", "removed")


def suite_path() -> str:
    from ..workloads.lcs import conformance as lcs_conformance  # lazy: a pytest module (imports pytest at module level)

    return lcs_conformance.__file__


def run_suite(python: str, overlay: str, work_dir: str, suite: str | None = None,
              timeout: float = DEFAULT_TIMEOUT_S, env: dict | None = None) -> dict:
    """Run *suite* (default: the LC-S suite) with *python*; {"ok", "returncode", "tests", "log", ...}.

    ``ok`` is False when pytest did not get to report tests (import error in the
    env, timeout): that is not a conformance verdict, and the report says so.
    """
    suite = os.path.abspath(suite or suite_path())
    os.makedirs(work_dir, exist_ok=True)
    out_json = os.path.join(work_dir, "outcomes.json")
    log_path = os.path.join(work_dir, "pytest.log")
    ini = os.path.join(work_dir, "pytest.ini")
    with open(ini, "w") as fh:
        fh.write("[pytest]\n")
    try:
        os.unlink(out_json)
    except FileNotFoundError:
        pass
    child_env = dict(childenv.child_environ(), **(env or {}))  # the code under test: no credentials
    child_env[OUT_ENV] = out_json
    child_env["PYTHONPATH"] = overlay
    if not _has_pytest(python, child_env):
        child_env["PYTHONPATH"] += os.pathsep + pytest_overlay(os.path.join(work_dir, "pytest-overlay"))
    child_env.pop("PYTEST_ADDOPTS", None)
    cmd = [python, "-m", "pytest", suite, "-p", PLUGIN, "-p", "no:cacheprovider", "-c", ini,
           "--rootdir", os.path.dirname(suite), "-rsxX", "-q"]
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=child_env, cwd=work_dir, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = None
    try:
        with open(out_json) as fh:
            tests = {_name(k): v for k, v in json.load(fh)["tests"].items()}
    except (OSError, ValueError, KeyError):
        tests = {}
    ok = rc is not None and rc in (0, 1, 5) and (bool(tests) or rc == 5)
    reason = None
    if rc is None:
        reason = f"timed out after {timeout:g} s"
    elif not ok:
        reason = f"pytest exit {rc} before reporting tests (see {log_path})"
    return {"ok": ok, "returncode": rc, "reason": reason, "tests": tests, "counts": summarize(tests),
            "log": log_path, "command": cmd}


def _has_pytest(python: str, env: dict) -> bool:
    return subprocess.run([python, "-c", "import pytest"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL).returncode == 0


def pytest_overlay(root: str) -> str:
    """A folder holding links to this interpreter's pytest and its dependencies, and nothing else.

    Why: a per-commit env made without --system-site-packages has no pytest, and
    putting our whole site-packages on its path would shadow its own numba-cuda.
    """
    os.makedirs(root, exist_ok=True)
    for name in PYTEST_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin:
            continue
        src = os.path.dirname(spec.origin) if spec.submodule_search_locations else spec.origin
        link = os.path.join(root, os.path.basename(src))
        if not os.path.lexists(link):
            os.symlink(src, link)
    return root


def _name(nodeid: str) -> str:
    """The test's name without the file part, so runs from different paths line up."""
    return nodeid.split("::", 1)[1] if "::" in nodeid else nodeid


def summarize(tests: dict) -> dict:
    counts: dict = {}
    for rec in tests.values():
        outcome = outcome_of(rec)
        counts[outcome] = counts.get(outcome, 0) + 1
    return dict(sorted(counts.items()))


def classify(base: str | None, head: str | None) -> str | None:
    """The kind of change from a test's base outcome to its head outcome (None: no change worth naming)."""
    if base is None:
        return "broken" if head in BAD else "added"
    if head is None:
        return "removed"
    if base == head:
        return None
    if head in BAD:
        return "broken"
    if base in BAD and head in ("passed", "xfailed", "xpassed"):
        return "fixed"
    if base == "xfailed" and head == "xpassed":
        return "xfail_to_xpass"
    if base == "xpassed" and head == "xfailed":
        return "xpass_to_xfail"
    if head == "skipped":
        return "newly_skipped"
    if base == "skipped":
        return "newly_run"
    return None


def outcome_of(rec: dict | None) -> str | None:
    """A recorded outcome, with a strict xpass read as the pass it is (records written before the
    plugin knew say "failed" with ``[XPASS(strict)]`` text)."""
    if rec is None:
        return None
    if rec["outcome"] == "failed" and conformance_plugin.is_strict_xpass(rec.get("text") or ""):
        return "xpassed"
    return rec["outcome"]


def diff(base_tests: dict, head_tests: dict) -> dict:
    """{kind: [{"test", "base", "head", "text"}]} for every kind of CHANGES (empty lists kept).

    A strict xfail that now passes is ``xfail_to_xpass`` (the bug it pins is fixed and the suite's
    marker is stale), never ``broken``, although pytest counts it as a failure."""
    out: dict = {k: [] for k in CHANGES}
    for name in sorted(set(base_tests) | set(head_tests)):
        b, h = base_tests.get(name), head_tests.get(name)
        kind = classify(outcome_of(b), outcome_of(h))
        if kind is None:
            continue
        text = (h or {}).get("text") if kind in ("broken", "newly_skipped") else (b or {}).get("text")
        out[kind].append({"test": name, "base": outcome_of(b), "head": outcome_of(h),
                          "text": text or ""})
    return out


#: the verdict of a suite whose every test was skipped on the head (no GPU, a missing feature):
#: nothing was checked, so never "ok"
NOT_RUN = "not run"


def ran(run: dict) -> int:
    """How many of a run's tests did run (any outcome but skipped)."""
    return sum(1 for rec in run.get("tests", {}).values() if outcome_of(rec) != "skipped")


def verdict(base_run: dict, head_run: dict, changes: dict) -> str:
    """"broken", "ok", "not run" (every head test skipped, or none) or "unknown" (a run did not
    report tests)."""
    if not head_run["ok"]:
        return "unknown"
    if changes["broken"]:
        return "broken"
    if not ran(head_run):
        return NOT_RUN
    return "ok" if base_run["ok"] else "unknown"


def reclassify(conf: dict) -> dict:
    """*conf* (a ``pr.json`` ``conformance`` section) with counts, changes and verdict recomputed from the
    recorded outcomes, e.g. after a classification fix; the runs themselves are unchanged."""
    out = dict(conf)
    for side in ("base", "head"):
        out[side] = {**conf[side], "counts": summarize(conf[side]["tests"])}
    out["changes"] = diff(conf["base"]["tests"], conf["head"]["tests"])
    out["verdict"] = verdict(out["base"], out["head"], out["changes"])
    return out


#: ``launchbench pr``'s exit codes besides 0 (2: a usage error, 130: interrupted)
EXIT_SLOWER, EXIT_BROKEN, EXIT_BOTH = 1, 3, 4


def exit_code(conformance: str | None, gate: dict | None, head_built: bool = True) -> int:
    """A pull request's exit code from its conformance verdict and compare's gate: 0, 1 (slower),
    3 (broken) or 4 (both); an undecided gate or unknown conformance is not a failure. Public here
    (not in commands/pr.py) because gpu/rerender_pr.py recomputes it from a stored pr.json."""
    broken = conformance == "broken" or not head_built
    slower = bool(gate) and gate.get("verdict") == "fail"
    return EXIT_BOTH if broken and slower else EXIT_BROKEN if broken else EXIT_SLOWER if slower else 0
