"""The lock probe (``workloads/lockprobe.py``) run in each point's environment, one fresh process per
point, and read back: ``launchbench lock-probe``'s engine. The reading of a point (does the hot launch
of each kernel complete while the global compiler lock is held) is :func:`reading`, pure.
"""
from __future__ import annotations

import json
import os
import subprocess

from . import workerproc

#: seconds one point's probe may run (three kernels compiled, six held launches of at most the
#: timeout each, their timing): far more than it takes
POINT_TIMEOUT_S = 600


def run_point(python: str, overlay: str, log_path: str, timeout_s: float, loops: int, repeats: int,
              target: str | None = None) -> dict:
    """One point's probe: its JSON, or ``{"error": one line}`` (the log keeps the rest)."""
    req = {"timeout": timeout_s, "loops": loops, "repeats": repeats, "target": target}
    cmd = [python, "-m", "launchbench.workloads.lockprobe", json.dumps(req)]
    env = workerproc.worker_environment(overlay, False, None if target else "numba-cuda-mlir")
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                                 env=env, timeout=POINT_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return {"error": f"the probe ran over {POINT_TIMEOUT_S} s (log: {log_path})"}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    try:
        got = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {"error": f"the probe exited {out.returncode} without its JSON (log: {log_path})"}
    return got


def reading(point: dict) -> str:
    """One line: per kernel, whether its hot launches completed while the lock was held."""
    if point.get("error"):
        return f"not probed: {point['error']}"
    parts = []
    for k in point.get("kernels", []):
        forms = k["forms"].values()
        if any(f.get("error") for f in forms):
            state = "error: " + next(f["error"] for f in forms if f.get("error"))
        elif all(f["completed_while_held"] for f in forms):
            state = "launches while the lock is held"
        elif not any(f["completed_while_held"] for f in forms):
            state = "waits for the lock"
        else:
            state = "; ".join(f"{name}: {'launches' if f['completed_while_held'] else 'waits'}"
                              for name, f in k["forms"].items())
        us = ", ".join(f"{name} {f['us']:.2f} µs" for name, f in k["forms"].items() if f.get("us") is not None)
        parts.append(f"{k['kernel']}: {state}" + (f" ({us})" if us else ""))
    return "; ".join(parts) + (f"; {point['note']}" if point.get("note") else "")
