"""The summary of lab/recipes/argkinds.sh: per argument kind and dispatch, the µs per added
argument of each release and of their difference, and the stages that make the difference.

    python -m launchbench.output.argkinds RESULTS_DIR

reads ``compare-<kind>-<dispatch>.json`` and ``breakdown-<kind>.json`` (plain or .gz) from
RESULTS_DIR, prints the summary and writes ``argkinds-summary.json`` and ``results-section.md``
there (atomically). Missing or failed runs are reported as such, never raised.
"""
from __future__ import annotations

import gzip
import json
import os
import sys

from ..base.atomic import write_json_atomic, write_text_atomic

KINDS = ("array", "cupy", "torch")
DISPATCHES = ("lazy", "eager")
#: stage-delta rows that are not stages of their own (totals, rests, sums)
_NOT_STAGES = ("full", "sum_of_leaves", "remainder", "unexplained")


def load(directory: str, name: str) -> dict | None:
    for path, opener in ((os.path.join(directory, name + ".json"), open),
                         (os.path.join(directory, name + ".json.gz"), gzip.open)):
        if os.path.exists(path):
            try:
                with opener(path, "rt") as fh:
                    return json.load(fh)
            except (OSError, ValueError):
                return None
    return None


def _level(doc: dict, variant: str, nargs: int) -> float | None:
    for rec in doc.get("stats", []):
        if rec.get("variant") == variant and rec.get("nargs") == nargs:
            return rec["median"]
    return None


def compare_row(doc: dict) -> dict:
    """Slopes (µs/arg with interval) per variant and delta, and the levels at the fewest and most args."""
    counts = doc["settings"]["arg_counts"]
    ref = doc["reference"]
    names = [v["name"] for v in doc["variants"]]
    lo, hi = counts[0], counts[-1]
    row = {"rounds": doc.get("rounds_completed"), "arg_counts": counts, "per_arg": doc.get("per_arg", {}),
           "levels_us": {n: {str(lo): _level(doc, n, lo), str(hi): _level(doc, n, hi)} for n in names},
           "delta_at_most_args": None}
    for d in doc.get("deltas", []):
        if d["nargs"] == hi and d["variant"] != ref:
            row["delta_at_most_args"] = {"variant": d["variant"], "us": d["delta_us"], "ci": d["ci_us"]}
    return row


def top_stages(doc: dict, count: int = 3) -> dict:
    """variant -> the *count* stages with the largest |delta| at the most args, with their intervals."""
    a = doc.get("analysis") or {}
    out = {}
    for var, by_n in (a.get("stage_deltas") or {}).items():
        n = max(by_n, key=int)
        cells = [(s, c) for s, c in by_n[n].items()
                 if s not in _NOT_STAGES and not s.startswith(("rest:", "parts:", "gap:"))]
        cells.sort(key=lambda sc: -abs(sc[1]["us"]))
        out[var] = {"nargs": int(n), "stages": [{"stage": s, "us": c["us"], "ci": c["ci"]} for s, c in cells[:count]]}
    return out


def _ci(rec: dict) -> str:
    return f"{rec['us']:+.3f} [{rec['ci'][0]:+.3f}, {rec['ci'][1]:+.3f}]"


def summarize(directory: str) -> tuple[dict, list[str], list[str]]:
    """(JSON summary, printed lines, Markdown lines)."""
    summary: dict = {"compare": {}, "breakdown": {}}
    text, md = [], ["## Kernel arguments as users pass them", "",
                    "µs per added argument: least-squares slope over the arg counts, 95% interval over rounds "
                    "(the delta's slope from paired per-round differences).", "",
                    "| kind | dispatch | rounds | v029 µs/arg | v030 µs/arg | v030 - v029 µs/arg "
                    "| full at most args (v029 / v030 µs) |",
                    "|---|---|---|---|---|---|---|"]
    for kind in KINDS:
        for dispatch in DISPATCHES:
            name = f"compare-{kind}-{dispatch}"
            doc = load(directory, name)
            if not doc or not doc.get("per_arg"):
                text.append(f"{kind:6} {dispatch:5}: no results ({name}.err says why)")
                md.append(f"| {kind} | {dispatch} | - | no results | | | |")
                continue
            row = compare_row(doc)
            summary["compare"][f"{kind}/{dispatch}"] = row
            pa = row["per_arg"]
            delta_key = next((k for k in pa if "-" in k), None)
            most = str(row["arg_counts"][-1])
            levels = " / ".join(f"{row['levels_us'][v][most]:.2f}" if row["levels_us"][v][most] is not None else "-"
                                for v in row["levels_us"])
            cells = [(_ci(pa[v]) if v in pa else "-") for v in ("v029", "v030")] + [_ci(pa[delta_key]) if delta_key else "-"]
            text.append(f"{kind:6} {dispatch:5}: µs/arg v029 {cells[0]}  v030 {cells[1]}  diff {cells[2]}  "
                        f"({row['rounds']} rounds; full at {most} args {levels} µs)")
            md.append(f"| {kind} | {dispatch} | {row['rounds']} | {cells[0]} | {cells[1]} | {cells[2]} | {levels} |")
    md += ["", "Stages with the largest v030 - v029 difference at the most arguments (lazy dispatch, µs, 95% CI):", ""]
    for kind in KINDS:
        doc = load(directory, f"breakdown-{kind}")
        tops = top_stages(doc) if doc else {}
        if not tops:
            text.append(f"{kind:6} breakdown: no results")
            md.append(f"- {kind}: no results")
            continue
        summary["breakdown"][kind] = tops
        for var, rec in tops.items():
            line = ", ".join(f"{s['stage']} {_ci(s)}" for s in rec["stages"])
            text.append(f"{kind:6} breakdown {var} at {rec['nargs']} args: {line}")
            md.append(f"- {kind}, {var} at {rec['nargs']} args: {line}")
    return summary, text, md


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("usage: python -m launchbench.output.argkinds RESULTS_DIR", file=sys.stderr)
        return 2
    summary, text, md = summarize(argv[0])
    print("\n".join(text))
    write_json_atomic(os.path.join(argv[0], "argkinds-summary.json"), summary)
    write_text_atomic(os.path.join(argv[0], "results-section.md"), "\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
