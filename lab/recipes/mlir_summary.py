"""Summarize a lab/recipes/mlir.sh run (issue 21): the compare table with each argument's cost, the conformance
counts and the mlir breakdown, printed and written as DIR/results-section.md and DIR/summary.json.

    python lab/recipes/mlir_summary.py DIR

Why: the acceptance needs "is mlir's launch cheaper, and where" in one place. Per-argument cost is the
least-squares slope of median µs over the argument counts; the intercept is the fixed cost. Reads only what
the step wrote (compare.json, conformance-*.xml, breakdown.json); a missing part is reported as missing.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import sys
import xml.etree.ElementTree as ET


def _load(path):
    if not os.path.exists(path):
        return None
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as fh:
        return json.load(fh)


def slope(points):
    """(fixed µs, µs per argument) by least squares over (nargs, µs) points."""
    n = len(points)
    if n < 2:
        return (points[0][1] if points else None), None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - b * mx, b


def compare_section(doc) -> list:
    stats = doc["stats"]
    names = list(dict.fromkeys(s["variant"] for s in stats))
    counts = sorted({s["nargs"] for s in stats})
    med = {(s["variant"], s["nargs"]): s["median"] for s in stats}
    dl = {(d["variant"], d["nargs"]): d for d in doc.get("deltas", [])}
    ref = doc.get("reference")
    lines = [f"Median µs per launch (reference {ref}; in brackets: the paired delta vs the reference):", "",
             "| args | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for n in counts:
        cells = []
        for v in names:
            x = med.get((v, n))
            d = dl.get((v, n))
            cell = "-" if x is None else f"{x:.2f}"
            if d and d.get("delta_pct") is not None:
                cell += f" ({d['delta_pct']:+.1f} %)"
            cells.append(cell)
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    fits = {v: slope([(n, med[(v, n)]) for n in counts if (v, n) in med]) for v in names}
    lines.append("| fixed (fit) | " + " | ".join(f"{fits[v][0]:.2f}" for v in names) + " |")
    lines.append("| per argument (fit) | " + " | ".join(
        "-" if fits[v][1] is None else f"{fits[v][1]:.2f}" for v in names) + " |")
    return lines, {v: {"fixed_us": f[0], "per_arg_us": f[1]} for v, f in fits.items()}


def conformance_section(d) -> tuple:
    lines, counts = [], {}
    for path in sorted(glob.glob(os.path.join(d, "conformance-*.xml"))):
        tag = os.path.basename(path)[len("conformance-"):-4]
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError:
            lines.append(f"- {tag}: unreadable junit XML")
            continue
        c = {"passed": 0, "failed": 0, "skipped": 0}
        for case in root.iter("testcase"):
            kinds = {child.tag for child in case}
            key = "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
            c[key] += 1
        counts[tag] = c
        lines.append(f"- {tag}: {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped")
    return lines or ["- no conformance results"], counts


def main(d: str) -> int:
    out, summary = ["## numba-cuda-mlir beside numba-cuda (issue 21)", ""], {}
    doc = _load(os.path.join(d, "compare.json"))
    if doc:
        lines, summary["fits"] = compare_section(doc)
        out += lines
    else:
        out.append("compare: no compare.json")
    out += ["", "LC-S conformance ported to mlir (tests/test_lcs_conformance_mlir.py):"]
    lines, summary["conformance"] = conformance_section(d)
    out += lines
    bd = _load(os.path.join(d, "breakdown.json"))
    if bd:
        sys.path.insert(0, os.getcwd())
        from launchbench.workloads.stages_mlir import format_table

        out += ["", "```", format_table(bd), "```"]
    text = "\n".join(out) + "\n"
    print(text)
    with open(os.path.join(d, "results-section.md"), "w") as fh:
        fh.write(text)
    with open(os.path.join(d, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
