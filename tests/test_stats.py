"""Known inputs give known intervals and verdicts (launchbench.engine.stats)."""
import math
import statistics

import pytest

from launchbench.engine import stats


@pytest.mark.parametrize("p, df, expected", [
    (0.975, 1, 12.7062), (0.975, 4, 2.7764), (0.975, 9, 2.2622), (0.975, 30, 2.0423),
    (0.975, 1e6, 1.9600), (0.95, 5, 2.0150), (0.025, 4, -2.7764),
])
def test_t_quantile_matches_tables(p, df, expected):
    assert stats.t_quantile(p, df) == pytest.approx(expected, abs=1e-4)


def test_t_cdf_is_inverse_of_quantile():
    for df in (2, 7, 50):
        assert stats.t_cdf(stats.t_quantile(0.9, df), df) == pytest.approx(0.9, abs=1e-10)


def test_mean_ci_known_values():
    mean, lo, hi = stats.mean_ci([1, 2, 3, 4, 5])
    half = 2.776445 * math.sqrt(2.5) / math.sqrt(5)
    assert mean == 3
    assert (lo, hi) == (pytest.approx(3 - half, abs=1e-5), pytest.approx(3 + half, abs=1e-5))


def test_mean_ci_single_value_is_zero_width():
    assert stats.mean_ci([4.2]) == (4.2, 4.2, 4.2)


def test_summarize():
    s = stats.summarize([3, 1, 2, 10])
    assert s == {"n": 4, "mean": 4.0, "stdev": pytest.approx(4.0825, abs=1e-4), "median": 2.5, "min": 1.0, "max": 10.0}
    assert stats.summarize([5])["stdev"] == 0.0


def test_paired_median_delta_pairs_within_rounds():
    # Round 2 is 20% slower for both: unpaired this would be noise; paired it is a clean +10%.
    ref = [[10.0, 10.0, 10.0], [12.0, 12.0, 12.0]]
    var = [[11.0, 11.0, 11.0], [13.2, 13.2, 13.2]]
    d = stats.paired_median_delta(ref, var)
    assert d["rounds"] == 2 and d["units"] == "rounds" and d["n"] == 2
    assert d["delta_us"] == pytest.approx(1.1)
    half = 12.7062 * math.sqrt(0.02) / math.sqrt(2)
    assert d["ci_us"] == [pytest.approx(1.1 - half, abs=1e-3), pytest.approx(1.1 + half, abs=1e-3)]
    assert d["delta_pct"] == pytest.approx(10.0)
    assert d["ci_pct"] == [pytest.approx(10.0), pytest.approx(10.0)]
    assert stats.verdict(d["ci_pct"], d["n"]) == "slower"


def test_percent_deltas_are_per_slot_ratios_so_a_scaling_state_cancels():
    # A speed state scales a launch (10 vs 15 us); the variant is 10 % slower in either. Round 0
    # mixes the states and one slot flips between its two samples. Per-slot ratios still give
    # +10 % (the flipped slot is the median's outlier); the round's median difference over its
    # reference median, the old percent, says +8 %.
    ref = [[10.0, 15.0, 15.0, 10.0], [10.0, 10.0, 10.0, 10.0]]
    var = [[11.0, 16.5, 11.0, 11.0], [11.0, 11.0, 11.0, 11.0]]
    us, pct = stats.per_round_deltas(ref, var)
    assert pct == [pytest.approx(10.0), pytest.approx(10.0)]
    assert 100 * us[0] / statistics.median(ref[0]) == pytest.approx(8.0)
    d = stats.paired_median_delta(ref, var)
    assert d["ci_pct"] == [pytest.approx(10.0), pytest.approx(10.0)]


def test_paired_median_delta_follows_state_flips_slot_by_slot():
    # The process flips between a fast (10) and a slow (14) state; each repeat slot's two
    # samples share the state, so every paired difference is the true +0.5.
    ref = [[10.0, 14.0, 14.0, 10.0, 14.0], [10.0, 10.0, 14.0, 10.0, 10.0]]
    var = [[10.5, 14.5, 14.5, 10.5, 14.5], [10.5, 10.5, 14.5, 10.5, 10.5]]
    d = stats.paired_median_delta(ref, var)
    assert d["delta_us"] == pytest.approx(0.5)
    assert d["ci_us"] == [pytest.approx(0.5), pytest.approx(0.5)]


def test_paired_median_delta_ignores_a_slot_where_the_state_flipped():
    ref = [[10.0, 10.0, 10.0], [10.0, 10.0, 10.0]]
    var = [[10.5, 14.5, 10.5], [10.5, 10.5, 10.5]]  # one flip between the two samples of a slot
    assert stats.paired_median_delta(ref, var)["delta_us"] == pytest.approx(0.5)


def test_paired_median_delta_single_round_uses_order_statistics():
    ref = [[10.0] * 10]
    var = [[10.0 + x for x in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)]]
    d = stats.paired_median_delta(ref, var)
    assert d["units"] == "pairs" and d["n"] == 10 and d["rounds"] == 1
    assert d["delta_us"] == pytest.approx(0.55)
    assert d["ci_us"] == [pytest.approx(0.2), pytest.approx(0.9)]  # ranks 2 and 9 of 10
    assert d["ci_pct"] == [pytest.approx(2.0), pytest.approx(9.0)]


def test_paired_median_delta_rejects_mismatched_rounds():
    with pytest.raises(ValueError):
        stats.paired_median_delta([[1.0]], [[1.0], [2.0]])


@pytest.mark.parametrize("n, ranks", [
    # Classic tables for a 95 % distribution-free CI of the median (coverage >= 95 %).
    (5, None), (6, (1, 6)), (10, (2, 9)), (20, (6, 15)), (100, (40, 61)), (1000, (469, 532)),
])
def test_median_ci_ranks_match_tables(n, ranks):
    assert stats.median_ci_ranks(n) == ranks


def test_median_ci_ranks_coverage_is_at_least_the_confidence_and_tight():
    for n in (6, 17, 50, 333, 2000):
        k, _ = stats.median_ci_ranks(n)
        coverage = 1.0 - 2.0 * stats._binom_cdf_half(k - 1, n)
        assert coverage >= 0.95
        assert 1.0 - 2.0 * stats._binom_cdf_half(k, n) < 0.95  # one rank further in would fall short


def test_median_ci_known_interval_and_small_n_fallback():
    assert stats.median_ci([5, 1, 4, 2, 3, 9, 8, 7, 6, 10]) == (5.5, 2.0, 9.0)
    assert stats.median_ci([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)  # too few: min..max


def test_pooled_median_delta_is_robust_to_outlier_pairs():
    ref = [10.0] * 100
    var = [10.1] * 90 + [25.0] * 10  # a tenth of the pairs hit a hiccup
    d = stats.pooled_median_delta(ref, var)
    assert d["units"] == "pairs" and d["n"] == 100
    assert d["delta_us"] == pytest.approx(0.1)
    assert d["ci_us"] == [pytest.approx(0.1), pytest.approx(0.1)]
    assert d["delta_pct"] == pytest.approx(1.0)


@pytest.mark.parametrize("ci, n, expected", [
    ([0.5, 1.5], 5, "slower"), ([-2.0, -0.1], 5, "faster"), ([-0.3, 1.1], 5, "indistinguishable"),
    ([-5.0, 6.0], 5, "inconclusive"), ([1.0, 1.0], 1, "inconclusive"),
])
def test_verdicts(ci, n, expected):
    assert stats.verdict(ci, n) == expected


def test_summary_lines_read_plainly():
    d = {"delta_pct": 0.4, "ci_pct": [-0.3, 1.1], "verdict": "indistinguishable", "n": 10}
    assert stats.summary_line("v2", d, "baseline") == "v2: +0.4% [-0.3, +1.1] indistinguishable from baseline"
    d = {"delta_pct": 27.0, "ci_pct": [25.0, 29.0], "verdict": "slower", "n": 10}
    assert stats.summary_line("contextvar", d, "baseline") == "contextvar: +27.0% [+25.0, +29.0] slower"


def test_noise_split_tells_round_offsets_from_sample_noise():
    import random

    rng = random.Random(7)

    def rounds(offset_sd, sample_sd, n_rounds=200, slots=20):
        ref, var = [], []
        for _ in range(n_rounds):
            offset = rng.gauss(0.0, offset_sd)
            ref.append([100.0 + rng.gauss(0.0, sample_sd) for _ in range(slots)])
            var.append([105.0 + offset + rng.gauss(0.0, sample_sd) for _ in range(slots)])
        return ref, var

    offsets = stats.noise_split(*rounds(offset_sd=2.0, sample_sd=0.2))
    samples = stats.noise_split(*rounds(offset_sd=0.0, sample_sd=3.0))
    assert offsets["between_share"] > 0.9 and samples["between_share"] < 0.3
    assert offsets["between_var_pct2"] == pytest.approx(4.0, rel=0.3)
    assert stats.noise_split([[1.0, 2.0, 3.0]] * 5, [[1.0, 2.0, 3.0]] * 5) is None  # 3 slots
    assert stats.noise_split([[1.0] * 6] * 3, [[1.0] * 6] * 3) is None  # 3 rounds
