"""Recompute every committed compare run's widest 95% half-width (plain t over rounds) with the
percent delta as it was before 2026-11-23 (a round's median difference over its reference median)
and as it is now (the round's median per-slot paired ratio, stats.paired_ratios).

    python results/h200/2026-11-23-compare-paired-ratios/ratio_vs_old.py > results/h200/2026-11-23-compare-paired-ratios/ratio_vs_old.txt
"""
import glob
import math
import os
import statistics as st

from launchbench.base.atomic import read_json
from launchbench.engine import analysis, stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def half(per):
    return stats.t_quantile(0.975, len(per) - 1) * st.stdev(per) / math.sqrt(len(per))


for path in sorted(glob.glob(os.path.join(ROOT, "results/h200/*/**/*.json.gz"), recursive=True)):
    doc = read_json(path)
    if not str(doc.get("schema", "")).startswith("launchbench.compare") or not doc.get("samples"):
        continue
    ref, counts = doc["reference"], doc["settings"]["arg_counts"]
    by = analysis.group_rounds(doc["samples"], [{"nargs": n} for n in counts])
    names = list(dict.fromkeys(s["variant"] for s in doc["samples"]))
    old_w = new_w = 0.0
    rounds = 0
    for name in names:
        if name == ref:
            continue
        for n in counts:
            r_l, v_l = analysis.paired_rounds(by, ref, name, n)
            if len(r_l) < 3:
                continue
            rounds = len(r_l)
            old = [100 * st.median(stats.paired_differences(r, v)) / st.median(r) for r, v in zip(r_l, v_l)]
            new = [st.median(stats.paired_ratios(r, v)) for r, v in zip(r_l, v_l)]
            old_w, new_w = max(old_w, half(old)), max(new_w, half(new))
    if old_w:
        print(f"{os.path.relpath(path, ROOT)}: {rounds} rounds, widest half-width {old_w:.3f}% before, "
              f"{new_w:.3f}% with paired ratios ({100 * (1 - new_w / old_w):+.1f}% narrower)")
