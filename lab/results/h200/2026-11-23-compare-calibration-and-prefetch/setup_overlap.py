"""Does a round measure worse while more workers set up beside it? Per round: the mean over the
ten deltas of the squared standardized deviation of its percent delta from the run's mean, against
``setup_overlap`` (mean number of workers setting up during its sampling); correlation and the
mean of the rounds below and above the median overlap.

    python results/h200/2026-11-23-compare-calibration-and-prefetch/setup_overlap.py > results/h200/2026-11-23-compare-calibration-and-prefetch/setup_overlap.txt
"""
import math
import os
import statistics as st

from launchbench.base.atomic import read_json
from launchbench.engine import analysis, stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RUNS = ["2026-11-23-compare-fast-default/adaptive", "2026-11-23-layout-smoke/adaptive",
        "2026-11-23-compare-paired-ratios/adaptive", "2026-11-23-compare-calibration-and-prefetch/calibrated-alone/default",
        "2026-11-23-compare-calibration-and-prefetch/calibrated-alone/p6"]

for run in RUNS:
    doc = read_json(os.path.join(ROOT, "results/h200", run + ".json.gz"))
    per_round = {r["round"]: r for r in doc["timing"]["rounds"]}
    ref, counts = doc["reference"], doc["settings"]["arg_counts"]
    by = analysis.group_rounds(doc["samples"], [{"nargs": n} for n in counts])
    dev: dict = {}
    for name in dict.fromkeys(s["variant"] for s in doc["samples"]):
        if name == ref:
            continue
        for n in counts:
            rounds = sorted(set(by[(ref, n)]) & set(by[(name, n)]))
            pct = [st.median(stats.paired_ratios(by[(ref, n)][r], by[(name, n)][r])) for r in rounds]
            mean, sd = st.fmean(pct), st.stdev(pct)
            for r, p in zip(rounds, pct):
                dev.setdefault(r, []).append(((p - mean) / sd) ** 2)
    pairs = [(per_round[r]["setup_overlap"], st.fmean(v)) for r, v in dev.items() if "setup_overlap" in per_round.get(r, {})]
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    mx, my = st.fmean(xs), st.fmean(ys)
    corr = sum((x - mx) * (y - my) for x, y in pairs) / math.sqrt(sum((x - mx) ** 2 for x in xs) * sum((y - my) ** 2 for y in ys))
    med = st.median(xs)
    low = st.fmean([y for x, y in pairs if x <= med])
    high = st.fmean([y for x, y in pairs if x > med])
    print(f"{run}: {len(pairs)} rounds, median overlap {med:.1f} workers; deviation below/above it "
          f"{low:.2f}/{high:.2f} (1 = the run's average); correlation {corr:+.2f}")
