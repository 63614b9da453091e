"""``asv-plan``'s files: the asv hash file, one reason line per commit, the plan's JSON; and the
per-commit cost of an asv run read back from asv's own results.

asv reads ``asv run HASHFILE:PATH`` as one commit name per line, blank lines skipped, an unknown
name only warned about and skipped: so the hash file holds full SHAs and nothing else, and the
reasons go beside it (``PATH.reasons``: ``SHA  reason; reason``). ``PATH.json`` holds every commit
of the range (its counts key, its wheel, whether it is timed and why), for ``asv-config --plan``
(asv then installs launchbench's wheels instead of building) and for scoring a run.
"""
from __future__ import annotations

import glob
import json
import os

from ..base import atomic
from ..engine import asvplan as plan_engine
from . import documents

REASONS_SUFFIX = ".reasons"
JSON_SUFFIX = ".json"


def sidecars(plan_path: str) -> tuple[str, str]:
    """(reasons, JSON) paths beside the hash file."""
    return plan_path + REASONS_SUFFIX, plan_path + JSON_SUFFIX


def json_path(path: str) -> str:
    """The plan's JSON from either the hash file's path or the JSON's own."""
    return path if path.endswith(JSON_SUFFIX) else path + JSON_SUFFIX


# ---------------------------------------------------------------- hash files

def hashfile_text(shas: list) -> str:
    """One full SHA per line: what ``asv run HASHFILE:PATH`` reads."""
    return "".join(f"{sha}\n" for sha in shas)


def parse_hashfile(text: str) -> list[str]:
    """The names in a hash file, read as asv 0.6 reads one (``commands/run.py``: split on newlines,
    strip, skip blank lines)."""
    return [line.strip() for line in text.split("\n") if line.strip()]


# ---------------------------------------------------------------- reasons

def reason_text(reason: tuple, short, details: dict) -> str:
    """One reason in words; *short*(index) names a commit, *details* adds what the command knows
    (``("counts", i)``: the counts delta, ``("unusable", i)``: why, ``("compiled", i)``: the files)."""
    kind = reason[0]
    if kind == plan_engine.START:
        return "range start (A)"
    if kind == plan_engine.END:
        return "range end (B)"
    if kind == plan_engine.COUNTS_STEP:
        return f"counts change here vs {short(reason[1])}" + (f": {details[('counts', reason[2])]}"
                                                            if ("counts", reason[2]) in details else "")
    if kind == plan_engine.BEFORE_COUNTS_STEP:
        return f"the commit before the counts change at {short(reason[1])}"
    if kind == plan_engine.COMPILED:
        files = details.get(("compiled", reason[1]))
        return "compiled sources change here" + (f" ({files})" if files else "")
    if kind == plan_engine.BEFORE_COMPILED:
        return f"the commit before the compiled-source change at {short(reason[1])}"
    if kind == plan_engine.UNUSABLE:
        why = details.get(("unusable", reason[1]))
        return "counts unusable" + (f" ({why})" if why else "") + ": timed so the range has no blind commit"
    if kind == plan_engine.SAMPLE:
        return f"even sample: nothing points between {short(reason[1])} and {short(reason[2])}"
    raise ValueError(f"unknown reason {reason!r}")


def with_index(chosen: dict) -> dict:
    """The engine's reasons with the commit they belong to where the text needs it (a counts step's
    details and an unusable commit's why are looked up by it)."""
    out = {}
    for i, reasons in chosen.items():
        out[i] = [(*r, i) if r[0] == plan_engine.COUNTS_STEP else
                  (r[0], i) if r[0] in (plan_engine.UNUSABLE, plan_engine.COMPILED) else r for r in reasons]
    return out


def reason_lines(commits: list, chosen: dict, details: dict) -> dict[int, str]:
    """index -> its reasons joined in one line."""
    def short(i: int) -> str:
        return "g" + commits[i]["sha"][:8]
    return {i: "; ".join(reason_text(r, short, details) for r in reasons) for i, reasons in with_index(chosen).items()}


# ---------------------------------------------------------------- the plan's files

def document(clone: str, rng: str, commits: list, chosen: dict, details: dict, settings: dict,
             counts_seconds: float, created: str, command: list) -> dict:
    """The plan's JSON: every commit of the range, the timed ones with their reasons."""
    lines = reason_lines(commits, chosen, details)
    return {**documents.stamp("asv-plan"), "command": command, "created": created, "clone": clone, "range": rng,
            "settings": settings, "counts_seconds": round(counts_seconds, 1),
            "commits": [{**c, "timed": i in chosen, "reason": lines.get(i)} for i, c in enumerate(commits)],
            "timed": [commits[i]["sha"] for i in chosen]}


def write_plan(plan_path: str, doc: dict, every_path: str | None = None) -> list[str]:
    """The JSON, the reasons and the hash file (and every commit's hash file), each written whole."""
    reasons, json_file = sidecars(plan_path)
    written = [documents.write(json_file, doc, "asv-plan")]
    timed = [c for c in doc["commits"] if c["timed"]]
    written.append(atomic.write_text_atomic(reasons, "".join(f"{c['sha']}  {c['reason']}\n" for c in timed)))
    written.append(atomic.write_text_atomic(plan_path, hashfile_text([c["sha"] for c in timed])))
    if every_path:
        written.append(atomic.write_text_atomic(every_path, hashfile_text([c["sha"] for c in doc["commits"]])))
    return written


def read_plan(path: str) -> dict:
    """A plan's JSON (given the hash file's path or the JSON's), checked; errors are one line."""
    return documents.read(json_path(path), "asv-plan")


def wheel_map(doc: dict) -> dict:
    """sha -> the wheel launchbench built for its code (shared by commits of identical code)."""
    return {c["sha"]: c["wheel"] for c in doc["commits"] if c.get("wheel")}


def render(doc: dict) -> str:
    """The timed commits, one line each, and what the plan saves."""
    commits = doc["commits"]
    timed = [c for c in commits if c["timed"]]
    head = (f"asv plan for {doc['range']}: {len(timed)} of {len(commits)} commits to time "
            f"(counts of {doc['settings'].get('counted', 0)} builds in {doc['counts_seconds']:.0f} s)")
    out = [head]
    for c in timed:
        out.append(f"  g{c['sha'][:8]}  {c['subject'][:48]:<48}  {c['reason']}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- asv's cost, read back

def asv_costs(results_dir: str, machine: str | None = None, only: str | None = None) -> list[dict]:
    """Per commit of an asv results folder: build (asv's ``<build>``: checkout, uninstall, build,
    install), setup_cache, benchmark processes' seconds and the span from the first benchmark's
    start to the last one's end (*only*: benchmarks whose name starts with it, e.g.
    ``bench_counts``). asv writes these itself; nothing here times anything."""
    out = []
    pattern = os.path.join(results_dir, machine or "*", "*.json")
    for path in sorted(glob.glob(pattern)):
        if os.path.basename(path) == "machine.json":
            continue
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if "commit_hash" not in data:
            continue
        cols = data.get("result_columns", [])
        at = {k: cols.index(k) for k in ("result", "started_at", "duration") if k in cols}
        starts, ends, seconds, processes = [], [], 0.0, 0
        for name, row in data.get("results", {}).items():
            if only and not name.startswith(only):
                continue
            start = row[at["started_at"]] if len(row) > at.get("started_at", 99) else None
            dur = row[at["duration"]] if len(row) > at.get("duration", 99) else None
            result = row[at["result"]] if len(row) > at.get("result", 99) else None
            if start is not None and dur is not None:
                starts.append(start / 1000.0)
                ends.append(start / 1000.0 + dur)
                seconds += dur
            processes += len(result) if isinstance(result, list) else 1
        durations = data.get("durations", {})
        out.append({"commit": data["commit_hash"], "file": os.path.relpath(path, results_dir),
                    "build_s": durations.get("<build>"),
                    "setup_cache_s": round(sum(v for k, v in durations.items() if k.startswith("<setup_cache")
                                               and (not only or k.startswith(f"<setup_cache {only}"))), 3),
                    "benchmarks_s": round(seconds, 3), "parameter_sets": processes,
                    "span_s": round(max(ends) - min(starts), 3) if starts else None})
    return out
