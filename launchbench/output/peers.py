"""The ``launchbench peers`` table: µs per launch per launcher, numba-cuda's overhead over the floor,
and the per-argument slopes (engine/peerstats.py computes them)."""
from __future__ import annotations

from ..workloads.peers import LABELS, LAUNCHERS


def format_table(doc: dict) -> str:
    """The peers table (µs/launch), overhead over the floor, and per-arg costs."""
    names = [n for n in LAUNCHERS if n in doc["results"]]
    counts = doc["arg_counts"]
    width = 14
    lines = ["Launch cost, us/launch (median of %d samples of %d launches each):"
             % (doc["settings"]["repeats"] * doc["settings"]["rounds"], doc["settings"]["loops"])]
    header = "args" + "".join(f"{LABELS[n]:>{width}}" for n in names)
    over = doc["analysis"]["overhead_vs_floor"]
    if over:
        header += f"{'numba - floor':>{width + 2}}{'numba / floor':>{width}}"
    lines.append(header)
    for n in counts:
        key = str(n)
        row = f"{n:<4}" + "".join(f"{doc['results'][name][key]['median_us']:>{width}.2f}" for name in names)
        if key in over:
            ratio = over[key]["ratio"]
            row += f"{over[key]['us']:>{width + 2}.2f}" + (f"{ratio:>{width - 1}.1f}x" if ratio else f"{'-':>{width}}")
        lines.append(row)
    slopes = doc["analysis"]["per_arg"]
    if slopes:
        lines.append("us per extra arg (least-squares slope over arg count):")
        lines.append("    " + "".join(
            f"{slopes[name]['us_per_arg']:>{width}.3f}" if name in slopes else f"{'-':>{width}}" for name in names))
    for name, reason in doc.get("unavailable", {}).items():
        lines.append(f"{LABELS.get(name, name)}: not measured ({reason})")
    return "\n".join(lines)
