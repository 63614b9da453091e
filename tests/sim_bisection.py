"""What bisect's search names on simulated planted ranges (docs/history.md).

    python tests/sim_bisection.py            # seeds 0-199 per setting, as docs/history.md quotes
    python tests/sim_bisection.py --ranges 20

The ranges, the fake stages (each point's cost plus Gaussian noise per round) and the flat hints
are tests/test_bisection.py's. Per setting it prints how many searches named a planted step, a
commit without one (wrong), an undecided span holding a planted step, one holding none, or
something else (no-step, no-change). The planted settings search each range with its hints and
without them; the flat-hint setting judges its stages family-wise and, as a control, segment by
segment (``bisection.family_confidence`` replaced by the segment's own level).

What it printed (seeds 0-199; docs/history.md quotes it):

    200 planted ranges, ten steps of 0.15-1 us: hints / planted 196, hints / undecided, holds a step 4,
        no hints / UNDECIDED, HOLDS NONE 1, no hints / planted 193, no hints / undecided, holds a step 6
    200 planted ranges, ten steps of 0.15-0.3 us: hints / planted 32, hints / undecided, holds a step 168,
        no hints / planted 29, no hints / undecided, holds a step 171
    200 ranges with twelve flat hints, family-wise: UNDECIDED, HOLDS NONE 1, planted 161,
        undecided, holds a step 38
    200 ranges with twelve flat hints, segment by segment: UNDECIDED, HOLDS NONE 7, WRONG 2, no-step 1,
        planted 172, undecided, holds a step 18
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from launchbench.engine import bisection  # noqa: E402
from test_bisection import FLAT_HINTS, THRESHOLD, FakeCounts, FakeStages, N, _planted, bytecodes_with, costs_with  # noqa: E402


def verdict(res: dict, steps: dict) -> str:
    if res["result"] == "found":
        return "planted" if res["culprit"] in steps else "WRONG"
    if res["result"] == "undecided":
        a, b = res["span"]
        return "undecided, holds a step" if any(a < i <= b for i in steps) else "UNDECIDED, HOLDS NONE"
    return res["result"]


def planted(ranges: int, high: float) -> collections.Counter:
    """Ten steps of 0.15-*high* us per range (seed = range index), searched with and without hints."""
    got = collections.Counter()
    for seed in range(ranges):
        steps, prints, hints = _planted(seed, high)
        measure = FakeStages(costs_with(steps), noise=0.45, cap=48, seed=seed)
        for label, use in (("hints", hints), ("no hints", ())):
            res = bisection.search(N, FakeCounts(prints), measure, threshold=THRESHOLD, hints=use)
            got[(label, verdict(res, steps))] += 1
    return got


def flat_hints(ranges: int, family_wise: bool) -> collections.Counter:
    """One +0.3 us step at 58 among twelve hinted commits that change nothing (seed = range index)."""
    got = collections.Counter()
    original = bisection.family_confidence
    if not family_wise:
        bisection.family_confidence = lambda confidence, segments: confidence
    try:
        for seed in range(ranges):
            measure = FakeStages(costs_with({58: 0.3}), noise=0.45, cap=120, seed=seed)
            res = bisection.search(N, FakeCounts(bytecodes_with({})), measure, threshold=THRESHOLD,
                                   hints=FLAT_HINTS + (58,))
            got[verdict(res, {58: 0.3})] += 1
    finally:
        bisection.family_confidence = original
    return got


def show(title: str, got: collections.Counter) -> None:
    print(f"{title}: " + ", ".join(f"{' / '.join(k) if isinstance(k, tuple) else k} {n}"
                                   for k, n in sorted(got.items(), key=str)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranges", type=int, default=200, help="ranges per setting (seeds 0..N-1; default 200)")
    n = ap.parse_args(argv).ranges
    show(f"{n} planted ranges, ten steps of 0.15-1 us", planted(n, 1.0))
    show(f"{n} planted ranges, ten steps of 0.15-0.3 us", planted(n, 0.3))
    show(f"{n} ranges with twelve flat hints, family-wise", flat_hints(n, True))
    show(f"{n} ranges with twelve flat hints, segment by segment", flat_hints(n, False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
