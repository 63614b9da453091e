"""The counts pass of history and bisect: one short process per commit counts its launch
(the worker's ``counts`` request), before any timing. A pool of at most ``jobs`` processes,
not the runner's rounds (which start every variant at once): a range has up to hundreds of
commits.

Counts do not depend on the machine's state, so several processes count at once (``jobs``,
bounded by the CPUs): the pass costs the GPU a few seconds of set-up per commit, not rounds.
A commit's counts are usable when its process counted every arg count and every counted
launch gave the same totals (``steady``); a launch path that busy-waits on a clock, for
example, is not.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from . import countdiff
from .workerproc import Worker, WorkerError

#: launches counted per commit and arg count (after the counter's own warm-up)
LAUNCHES = 10
#: counting processes at once, at most
MAX_JOBS = 8


def default_jobs() -> int:
    """Half the CPUs this process may use (the other half for what the processes start), 1 to 8."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_JOBS, cpus // 2))


def count_one(rec: dict, arg_counts: list, overlay: str, log_dir: str, simulator: bool, setup: dict,
              launches: int = LAUNCHES, module: str | None = None) -> dict:
    """{"counts": {nargs (text): record}, "wall_s"} or {"error": why} for one built commit; *module*: the
    CUDA module its workers launch through (``workerproc.Worker``'s; a numba-cuda-mlir release's own)."""
    name = rec["variant"]
    t0 = time.monotonic()
    try:
        worker = Worker(name, rec["python"], overlay, os.path.join(log_dir, f"counts-{name}.log"), simulator,
                        module=module)
    except OSError as exc:
        return {"error": f"cannot start {rec['python']}: {exc}"}
    try:
        worker.request({"cmd": "setup", "arg_counts": list(arg_counts), "simulator": simulator, **setup})
        got = {str(n): worker.request({"cmd": "counts", "nargs": n, "launches": launches})["counts"]
               for n in arg_counts}
    except WorkerError as exc:
        return {"error": str(exc)}
    finally:
        worker.close()
    return {"counts": got, "wall_s": round(time.monotonic() - t0, 3)}


def count_commits(records: list, arg_counts: list, overlay: str, log_dir: str, simulator: bool = False,
                  setup: dict | None = None, jobs: int = 1, launches: int = LAUNCHES, modules: dict | None = None) -> dict:
    """variant -> ``count_one``'s result for every built record, *jobs* processes at once; *modules*:
    variant -> CUDA module, as the timing's (``runplan.Plan.modules``), so both see the same launch."""
    os.makedirs(log_dir, exist_ok=True)
    todo = [r for r in records if r.get("variant") and r.get("python")]
    modules = modules or {}

    def one(rec):
        return rec["variant"], count_one(rec, arg_counts, overlay, log_dir, simulator, setup or {}, launches,
                                         modules.get(rec["variant"]))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return dict(pool.map(one, todo))


def unusable(entry: dict | None) -> str | None:
    """Why a commit's counts cannot locate a change (no counts, or they vary launch to launch), or None."""
    if not entry:
        return "not counted"
    if entry.get("error"):
        return entry["error"]
    varying = [n for n, rec in entry["counts"].items() if not rec.get("steady")]
    if varying:
        return f"counts vary from launch to launch at {', '.join(varying)} args (the launch path is not deterministic)"
    return None


def key(entry: dict | None, arg_counts: list):
    """What must be equal for two commits' counts to be the same (every arg count's
    ``countdiff.fingerprint``); None where the counts are unusable."""
    if unusable(entry):
        return None
    return tuple(countdiff.fingerprint(entry["counts"][str(n)]) for n in arg_counts)


def step(prev: dict | None, cur: dict | None, arg_counts: list) -> dict:
    """The counts step between two commits: per arg count the exact diff, and whether anything
    moved; ``error`` where either side's counts are unusable or do not compare."""
    why = unusable(prev) or unusable(cur)
    if why:
        return {"error": why}
    per, moved = {}, False
    for n in arg_counts:
        a, b = prev["counts"][str(n)], cur["counts"][str(n)]
        why = countdiff.comparable(a, b)
        if why:
            return {"error": why}
        d = countdiff.diff(a, b)
        if not d["moved"] and countdiff.fingerprint(a) != countdiff.fingerprint(b):
            d["moved"] = d["counts_moved"] = True  # e.g. the launches' totals differ beyond the median's
        per[str(n)] = d
        moved = moved or d["moved"]
    return {"moved": moved, "per_nargs": per}


def steps(records: list, results: dict, arg_counts: list) -> list:
    """Per measured commit after the first: its counts step vs the previous measured commit."""
    measured = [r for r in records if r.get("measured") and r.get("variant")]
    out = []
    for prev, cur in zip(measured, measured[1:]):
        s = step(results.get(prev["variant"]), results.get(cur["variant"]), arg_counts)
        out.append({"commit": cur["sha"], "previous": prev["sha"], **s})
    return out


def per_launch(results: dict, arg_counts: list) -> dict:
    """variant -> nargs (text) -> per-launch totals (the JSON's compact view of each commit)."""
    out = {}
    for name, entry in results.items():
        if entry.get("counts"):
            out[name] = {n: {"per_launch": rec["per_launch"], "steady": rec["steady"], "counter": rec["counter"],
                             "python": rec["python"]} for n, rec in entry["counts"].items()}
        else:
            out[name] = {"error": entry.get("error")}
    return out
