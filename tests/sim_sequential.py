"""Coverage of precision mode's intervals split by what ended the run (docs/methodology.md).

    python tests/sim_sequential.py

Runs the rule stops report the corrected interval (``sequential.interval``), runs that reach
their cap the plain 95 % t (``sequential.chosen_stop``). Prints, per setting and seed: the share
of runs that reached the cap, and the coverage of the capped runs, of the stopped ones and of
both; and a fixed-length control. ``tests/test_sequential.py`` asserts the first setting.
"""
import random
import sys

from launchbench.engine import sequential as sq
from launchbench.engine import stats

SD = 2.7


def stream(rng, mu, sd=SD, p_spell=0.03):
    """compare-like per-round % deltas: normal, plus 3 % of rounds from a slow spell with 4x the SD."""
    while True:
        yield mu + rng.gauss(0.0, 4.0 * sd if rng.random() < p_spell else sd)


def run_once(gens: dict, rule, max_rounds: int) -> tuple[dict, bool, int]:
    """One run as compare drives it: a round of every series, then the rule; (series, stopped by
    the rule, rounds)."""
    series = {key: [] for key in gens}
    stop, rounds = False, 0
    for rounds in range(1, max_rounds + 1):
        for key in series:
            series[key].append(next(gens[key]))
        stop, _ = sq.should_stop(series, rule, rounds)
        if stop:
            break
    return series, stop, rounds


def capped_coverage(target: float, n_series: int, max_rounds: int, runs: int, seed: int, mu: float = 0.4) -> dict:
    rule, rng = sq.Rule(target_pct=target), random.Random(seed)
    cover = {True: [0, 0], False: [0, 0]}
    for _ in range(runs):
        series, stop, _rounds = run_once({k: stream(rng, mu) for k in range(n_series)}, rule, max_rounds)
        chosen = sq.chosen_stop(stop, interrupted=False)
        for values in series.values():
            _, lo, hi = sq.interval(values, rule) if chosen else stats.mean_ci(values, 0.95)
            cover[chosen][0] += lo <= mu <= hi
            cover[chosen][1] += 1
    share = lambda k: cover[k][0] / cover[k][1] if cover[k][1] else None  # noqa: E731
    return {"at_cap_share": cover[False][1] / (n_series * runs), "at_cap": share(False), "by_rule": share(True),
            "both": (cover[True][0] + cover[False][0]) / (cover[True][1] + cover[False][1])}


def fixed_coverage(n: int, runs: int, seed: int, mu: float = 0.4) -> float:
    rng, hits = random.Random(seed), 0
    for _ in range(runs):
        gen = stream(rng, mu)
        _, lo, hi = stats.mean_ci([next(gen) for _ in range(n)], 0.95)
        hits += lo <= mu <= hi
    return hits / runs


def main() -> None:
    for target, n_series, max_rounds, runs, seeds in ((0.9, 3, 60, 2000, (4,)), (0.8, 10, 90, 1000, (5, 6, 7, 8))):
        for seed in seeds:
            got = capped_coverage(target, n_series, max_rounds, runs, seed)
            print(f"target {target}% x {n_series} series, <= {max_rounds} rounds, seed {seed}: "
                  + ", ".join(f"{k} {v:.4f}" for k, v in got.items()), flush=True)
    print(f"control: a fixed 90 rounds, 10000 runs: {fixed_coverage(90, 10000, 5):.4f}")


if __name__ == "__main__":
    sys.exit(main())
