"""Early stopping keeps the intervals' coverage (launchbench.engine.sequential), on synthetic rounds.

The streams mimic compare's per-round percent deltas: normal with SD 2.7% of
the reference, plus 3% of rounds from a VM slow spell with 4x the SD. Coverage
is counted over 2000 seeded runs, so a true 95% sits 4 standard errors above
the 93% bound and a real loss of coverage (see the plain-t control) fails.
"""
import functools
import math
import random

import pytest

import sim_sequential
from launchbench.engine import sequential as sq
from launchbench.engine import stats

SD = sim_sequential.SD
RUNS = 2000


_stream = sim_sequential.stream


def _simulate(rule, mu, runs=RUNS, max_rounds=100, sd=SD, n_series=1, seed=1):
    """Drive should_stop round by round as compare would; (coverage, mean stop round, share stopped by the rule)."""
    rng = random.Random(seed)
    covered = counted = total_rounds = stopped = 0
    for _ in range(runs):
        gens = {("v", k): _stream(rng, mu, sd) for k in range(n_series)}
        series, stop, rounds = sim_sequential.run_once(gens, rule, max_rounds)
        total_rounds += rounds
        stopped += stop
        for values in series.values():
            _, lo, hi = sq.interval(values, rule)
            covered += lo <= mu <= hi
            counted += 1
    return covered / counted, total_rounds / runs, stopped / runs


# ---------------------------------------------------------------- coverage at the stopping round

def test_precision_mode_covers_at_the_stopping_round():
    # target 1% at SD 2.7%: stops around 30-45 rounds, where selecting a small spread hurts most.
    coverage, mean_stop, stopped = _simulate(sq.Rule(target_pct=1.0), mu=0.4)
    assert coverage >= 0.93, coverage
    assert stopped > 0.95 and mean_stop < 60, (mean_stop, stopped)


@pytest.mark.parametrize("mu, max_rounds", [(8.0, 100), (0.0, 100), (2.0, 60)])
def test_decision_mode_covers_at_the_stopping_round(mu, max_rounds):
    # mu == threshold is the worst case: every early stop is a miss.
    rule = sq.Rule(target_pct=None, threshold_pct=2.0)
    coverage, _, _ = _simulate(rule, mu=mu, max_rounds=max_rounds, seed=2)
    assert coverage >= 0.93, coverage


def test_precision_mode_covers_with_the_plain_t_where_the_run_ends_at_its_cap():
    """Runs the rule stops report the corrected interval, runs that reach their cap the plain 95 %
    t (sequential.chosen_stop): each kind of run covers, and so do both together."""
    got = sim_sequential.capped_coverage(target=0.9, n_series=3, max_rounds=60, runs=RUNS, seed=4)
    assert 0.2 < got["at_cap_share"] < 0.9  # both kinds of run occur (about 70 % reach the cap)
    assert got["at_cap"] >= 0.94 and got["by_rule"] >= 0.93 and got["both"] >= 0.94, got


def test_only_a_cap_fixed_in_advance_ends_a_run_unchosen():
    assert not sq.chosen_stop(False, False)
    assert sq.chosen_stop(True, False) and sq.chosen_stop(False, True)


@functools.lru_cache(maxsize=None)
def _t975(df):
    return stats.t_quantile(0.975, df)


def test_control_plain_t_with_decision_stopping_loses_coverage():
    """The simulation can see the problem the confidence sequence fixes."""
    rng = random.Random(3)
    covered, runs, mu, threshold = 0, 1000, 2.0, 2.0
    for _ in range(runs):
        gen, xs = _stream(rng, mu), []
        for n in range(1, 61):
            xs.append(next(gen))
            if n < 10:
                continue
            mean = math.fsum(xs) / n
            half = _t975(n - 1) * math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1) / n)
            if mean - half > threshold or mean + half < threshold or n == 60:
                break
        covered += mean - half <= mu <= mean + half
    assert covered / runs < 0.85


# ---------------------------------------------------------------- when it stops

def test_large_effect_stops_at_min_rounds():
    rule = sq.Rule(target_pct=None, threshold_pct=2.0)
    _, mean_stop, stopped = _simulate(rule, mu=8.0, runs=300)
    assert stopped == 1.0 and mean_stop < 12


def test_small_noise_reaches_the_precision_target_early():
    _, mean_stop, stopped = _simulate(sq.Rule(target_pct=0.5), mu=0.0, sd=1.0, runs=300)
    assert stopped == 1.0 and mean_stop < 40


def test_undecided_runs_to_the_cap():
    rule = sq.Rule(target_pct=None, threshold_pct=2.0)
    _, mean_stop, stopped = _simulate(rule, mu=2.0, runs=200, max_rounds=60)
    assert stopped < 0.1 and mean_stop > 57


def test_unreachable_precision_runs_to_the_cap():
    _, mean_stop, stopped = _simulate(sq.Rule(target_pct=0.5), mu=0.0, runs=200, max_rounds=60)
    assert stopped == 0.0 and mean_stop == 60


def test_every_series_must_be_done():
    rule = sq.Rule(target_pct=None, threshold_pct=2.0)
    series = {("v2", 0): [8.0 + 0.1 * (i % 3) for i in range(12)],
              ("v2", 1): [2.0 + (-1) ** i for i in range(12)]}
    stop, reason = sq.should_stop(series, rule, 12)
    assert not stop and "v2/1" in reason
    stop, reason = sq.should_stop({("v2", 0): series[("v2", 0)]}, rule, 12)
    assert stop and "decided" in reason


def test_never_stops_before_min_rounds():
    series = {"a": [1.0] * 9}
    assert sq.should_stop(series, sq.Rule(target_pct=0.5), 9) == (False, "9 of at least 10 rounds")
    assert sq.should_stop({"a": [1.0] * 10}, sq.Rule(target_pct=0.5), 10)[0]


def test_decision_mode_can_also_stop_on_precision():
    rule = sq.Rule(target_pct=0.5, threshold_pct=2.0)
    series = {"a": [2.0 + 0.1 * (-1) ** i for i in range(40)]}  # straddles 2% but narrow
    assert sq.should_stop(series, rule, 40)[0]
    assert not sq.should_stop(series, sq.Rule(target_pct=None, threshold_pct=2.0), 40)[0]


# ---------------------------------------------------------------- the intervals themselves

def test_confidence_sequence_is_on_its_mixture_boundary():
    """At lo and hi the mixture martingale equals 1/alpha: the closed form solves the right equation."""
    rng = random.Random(4)
    xs = [rng.gauss(1.0, 2.0) for _ in range(30)]
    _, lo, hi = sq.interval(xs, sq.Rule(target_pct=None, threshold_pct=0.0))
    n, c2 = len(xs), sq.CS_PRIOR
    for mu in (lo, hi):
        y = [x - mu for x in xs]
        s2, s1 = math.fsum(v * v for v in y), math.fsum(y)
        m = math.sqrt(c2 / (n + c2)) * (s2 / (s2 - s1 * s1 / (n + c2))) ** (n / 2)
        assert m == pytest.approx(1 / 0.05, rel=1e-9)


def test_sequential_interval_is_wider_than_plain_t():
    rng = random.Random(5)
    xs = [rng.gauss(0.0, SD) for _ in range(100)]
    mean, plo, phi = stats.mean_ci(xs)
    m_prec, lo_prec, hi_prec = sq.interval(xs, sq.Rule(target_pct=0.5))
    m_dec, lo_dec, hi_dec = sq.interval(xs, sq.Rule(target_pct=None, threshold_pct=2.0))
    assert m_prec == pytest.approx(mean) and m_dec == pytest.approx(mean)
    assert lo_dec < lo_prec < plo and phi < hi_prec < hi_dec
    assert 1.0 < (hi_dec - lo_dec) / (phi - plo) < 2.0


def test_interval_with_one_value_is_unbounded():
    assert sq.interval([3.0], sq.Rule()) == (3.0, -math.inf, math.inf)
    with pytest.raises(ValueError):
        sq.interval([], sq.Rule())


def test_rule_validation_and_looks():
    with pytest.raises(ValueError):
        sq.Rule(target_pct=None, threshold_pct=None)
    with pytest.raises(ValueError):
        sq.Rule(min_rounds=1)
    assert sq.Rule().mode == "precision" and sq.Rule(threshold_pct=1.0).mode == "decision"
    assert sq.looks(100, 10) == list(range(10, 101))
    assert sq.looks(5, 10) == [5]


# ---------------------------------------------------------------- gate and allocation

def test_gate_exit_codes():
    assert sq.gate({"a": (0.1, 1.9), "b": (-3.0, -1.0, 1.0)}, 2.0) == 0
    assert sq.gate({"a": (2.1, 3.0), "b": (-1.0, 5.0)}, 2.0) == 1
    assert sq.gate({"a": (0.1, 1.9), "b": (1.5, 2.5)}, 2.0) == 3
    assert sq.gate({"a": (1.0, 2.0)}, 2.0) == 3  # touching is not decided
    with pytest.raises(ValueError):
        sq.gate({}, 2.0)


def test_allocate_gives_more_to_the_noisier_key():
    rng = random.Random(6)
    series = {"quiet": [rng.gauss(0, 1.0) for _ in range(20)],
              "noisy": [rng.gauss(0, 3.0) for _ in range(20)],
              "new": [0.5]}
    out = sq.allocate(series, 40)
    assert sum(out.values()) == 40 and min(out.values()) >= 1
    assert out["noisy"] > 3 * out["quiet"]
    assert out["new"] >= out["noisy"] - 1  # unknown spread counts as the noisiest known
    assert sq.allocate(series, 2) == {"quiet": 1, "noisy": 1, "new": 1}
    assert sq.allocate({"a": [1.0, 1.0], "b": [2.0, 2.0]}, 6) == {"a": 3, "b": 3}
