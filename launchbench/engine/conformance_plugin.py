"""A pytest plugin that writes every test's outcome as JSON, for ``launchbench pr``.

Why a plugin and not junit XML: junit folds xpass into pass and xfail into
skip, and the pull-request report must tell those apart. Loaded with
``-p launchbench.engine.conformance_plugin``; the output path comes from
``LAUNCHBENCH_CONFORMANCE_OUT``. Outcomes: passed, failed, error (setup or
teardown failed), skipped, xfailed, xpassed (a strict xpass fails: failed).
"""
from __future__ import annotations

import os

from launchbench.base.atomic import write_json_atomic

OUT_ENV = "LAUNCHBENCH_CONFORMANCE_OUT"
TEXT_CHARS = 4000
_RESULTS: dict = {}


def _text(report) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    return (report.longreprtext or "")[-TEXT_CHARS:]


def is_strict_xpass(text: str) -> bool:
    """pytest reports a strict xfail that passed as a failure whose text starts ``[XPASS(strict)]``."""
    return text.lstrip().startswith("[XPASS(strict)]")


def _outcome(report) -> str | None:
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            return "xpassed" if xfail else "passed"
        if report.skipped:
            return "xfailed" if xfail else "skipped"
        if is_strict_xpass(report.longreprtext or ""):
            return "xpassed"  # the test passed; pytest fails it only because its xfail is strict
        return "failed"
    if report.failed:
        return "error"
    if report.when == "setup" and report.skipped:
        return "xfailed" if xfail else "skipped"
    return None


def pytest_runtest_logreport(report) -> None:
    outcome = _outcome(report)
    if outcome is None:
        return
    rec = _RESULTS.get(report.nodeid)
    if rec is not None and rec["outcome"] in ("failed", "error"):
        return  # a teardown after a failed call keeps the call's failure
    _RESULTS[report.nodeid] = {"outcome": outcome, "when": report.when, "text": _text(report),
                               "duration_s": round(getattr(report, "duration", 0.0), 3)}


def pytest_sessionfinish(session, exitstatus) -> None:
    path = os.environ.get(OUT_ENV)
    if path:
        write_json_atomic(path, {"exitstatus": int(exitstatus), "tests": _RESULTS})
