"""The peers' statistics: each cell's summary, the overhead of numba-cuda over the C floor, and each
launcher's per-argument cost (a least-squares slope: stats.lsq_line). Pure; ``launchbench peers`` renders them
(output/peers.py)."""
from __future__ import annotations

import statistics

from .stats import lsq_line


def summarize(samples: list[float]) -> dict:
    """Median, median absolute deviation, min and count of one cell's samples."""
    med = statistics.median(samples)
    return {
        "median_us": med,
        "mad_us": statistics.median(abs(s - med) for s in samples),
        "min_us": min(samples),
        "n": len(samples),
    }


def analyze(medians: dict[str, dict[int, float]], subject: str = "numba_cuda", floor: str = "floor") -> dict:
    """Overhead of *subject* over *floor* per arg count, and each launcher's per-arg slope."""
    overhead = {}
    if subject in medians and floor in medians:
        for n in sorted(set(medians[subject]) & set(medians[floor])):
            s, f = medians[subject][n], medians[floor][n]
            overhead[n] = {"us": s - f, "ratio": s / f if f > 0 else None}
    slopes = {}
    for name, per in medians.items():
        counts = sorted(per)
        if len(set(counts)) >= 2:
            slope, intercept = lsq_line(counts, [per[n] for n in counts])
            slopes[name] = {"us_per_arg": slope, "intercept_us": intercept}
    return {"overhead_vs_floor": overhead, "per_arg": slopes}
