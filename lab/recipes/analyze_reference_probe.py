"""Summarise asv_reference_probe.py's spawn.jsonl: which reference cancels the speed state best.

    python lab/recipes/analyze_reference_probe.py lab/results/h200/2026-11-24-design-probes/spawn.jsonl.gz

Per process, the value is the median over slots of numba-cuda's µs/launch (raw) or of its ratio
to the adjacent reference sample. Across processes of each release: the coefficient of
variation; between releases: the ratio of medians with a bootstrap 95% interval (fixed seed)
and the Mann-Whitney U (count of pairs where 0.30.4's process exceeds 0.29.0's).
"""
import gzip
import json
import random
import statistics as st
import sys

REFS = ["bind0", "bind4", "core0", "core4", "floor0", "cupy0"]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def process_value(rec, num, ref=None):
    s = rec["samples_us"]
    if ref is None:
        return st.median(s[num])
    return st.median([a / b for a, b in zip(s[num], s[ref])])


def cv(values):
    return st.pstdev(values) / st.mean(values) * 100


def main(path):
    recs = [r for r in load(path) if "samples_us" in r]
    by_env = {}
    for r in recs:
        by_env.setdefault(r["env"], []).append(r)
    (ea, a_recs), (eb, b_recs) = sorted(by_env.items())
    print(f"{len(a_recs)} processes of {ea}, {len(b_recs)} of {eb}")
    print(f"{'args':5s} {'reference':9s} {'CV ' + ea:>9s} {'CV ' + eb:>9s} {eb + '/' + ea:>12s}  95% bootstrap   U")
    for num in ("numba0", "numba4"):
        for ref in [None] + REFS:
            a = [process_value(r, num, ref) for r in a_recs]
            b = [process_value(r, num, ref) for r in b_recs]
            rng = random.Random(1)
            boot = sorted(st.median(rng.choices(b, k=len(b))) / st.median(rng.choices(a, k=len(a)))
                          for _ in range(2000))
            u = sum((x > y) + 0.5 * (x == y) for x in b for y in a)
            print(f"{num[-1]:5s} {ref or 'raw':9s} {cv(a):8.2f}% {cv(b):8.2f}% {st.median(b) / st.median(a):12.4f}"
                  f"  [{boot[50]:.4f}, {boot[1949]:.4f}]  {u:g}/{len(a) * len(b)}")
    print("reference medians (µs/launch): " + ", ".join(
        f"{ref} {st.median(st.median(r['samples_us'][ref]) for r in recs):.2f}" for ref in REFS))


if __name__ == "__main__":
    main(sys.argv[1])
