"""Stop a compare run early, once the answer is known, without losing the intervals' coverage.

Looking at the data after every round and stopping when the interval looks
good is optional stopping: the interval reported at a data-chosen round can
cover less often than its stated confidence. Two modes, each with an interval
that keeps its coverage under its own stopping rule (the per-round percent
deltas are the units, as in ``stats.mean_ci``):

precision (``Rule.target_pct``): stop when every series' half-width is at most
the target. The stop depends on the spread only, and for normal data the mean
is independent of the spread, so the t interval nearly keeps its coverage;
stopping picks rounds where the spread happens to be small, though, and in
simulation that cost about 1.5 points (93.5% for a nominal 95%). The interval
is therefore a t interval at the smaller error rate ``PRECISION_ALPHA_FACTOR``
x alpha (a 96.5% t interval, stated as 95%), which simulated at >= 95%.
A run the rule did not stop (it reached its time or rounds cap, fixed before
it started) keeps the plain 95% t interval (``chosen_stop``): no small spread
chose its last round; if anything, the rule's not stopping earlier selects
larger spreads, and the runs that stop early keep their wider interval, so
the two kinds of run together still cover (tests/test_sequential.py).

decision (``Rule.threshold_pct``): stop when every series' interval lies wholly
above or wholly below the threshold. That stops on the mean itself, which
inflates the error badly (a plain t interval checked every round covered only
~72% when the truth sits on the threshold), so this mode reports a confidence
sequence: Lai's (1976) scale-invariant normal-mixture boundary for a normal
mean with unknown variance (Wang & Ramdas 2023, "anytime-valid t-tests").
By Ville's inequality it covers the mean at every round simultaneously with
probability >= confidence, so any stopping rule, look schedule or time cap
keeps the coverage; it costs a wider interval (~1.6x the t interval at 100
rounds).

Pure standard library, like ``stats``.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from . import stats

#: Precision mode reports a t interval at alpha x this: offsets the selection of small spreads.
PRECISION_ALPHA_FACTOR = 0.7
#: Prior precision c^2 of the mixture (in rounds): tightest near 60-100 rounds, still decides at 10.
CS_PRIOR = 4.0


@dataclass
class Rule:
    """When to stop. ``threshold_pct`` set: decision mode; else precision mode on ``target_pct``.

    In decision mode a set ``target_pct`` is a second way for a series to be
    done: its sequential interval is already that narrow (it straddles the
    threshold, and more rounds would buy little). The caller enforces
    max_rounds and any time cap; both intervals stay valid there.
    """
    target_pct: float | None = 0.5
    threshold_pct: float | None = None
    min_rounds: int = 10
    confidence: float = 0.95

    def __post_init__(self):
        if self.target_pct is None and self.threshold_pct is None:
            raise ValueError("Rule needs target_pct (precision) or threshold_pct (decision)")
        if self.target_pct is not None and self.target_pct <= 0:
            raise ValueError("target_pct must be positive")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError("confidence must be in (0, 1)")
        if self.min_rounds < 2:
            raise ValueError("min_rounds must be at least 2 (an interval needs a spread)")

    @property
    def mode(self) -> str:
        return "precision" if self.threshold_pct is None else "decision"


def looks(max_rounds: int, min_rounds: int) -> list[int]:
    """Rounds after which the rule may stop: every round from min_rounds to max_rounds.

    No sparser schedule is needed: the decision interval is valid at every
    round at once, and in simulation checking the precision target only on
    a geometric schedule covered no better than checking every round.
    """
    if max_rounds < 1:
        raise ValueError("max_rounds must be at least 1")
    if max_rounds <= min_rounds:
        return [max_rounds]
    return list(range(min_rounds, max_rounds + 1))


@functools.lru_cache(maxsize=4096)
def _t(p: float, df: int) -> float:
    """Cached: stats.t_quantile bisects an incomplete beta, and we ask every round."""
    return stats.t_quantile(p, df)


def _moments(values) -> tuple[int, float, float]:
    """(n, mean, sum of squared deviations), two-pass with fsum (statistics.stdev is slow)."""
    xs = values if isinstance(values, list) else list(values)
    n = len(xs)
    if n == 0:
        raise ValueError("interval() needs at least one value")
    mean = math.fsum(xs) / n
    dev = [x - mean for x in xs]
    return n, mean, math.fsum([d * d for d in dev])


def _cs_half(n: int, ss: float, alpha: float, c2: float = CS_PRIOR) -> float:
    """Half-width of the normal-mixture confidence sequence after n values (inf when unbounded).

    The mixture martingale M_n(mu) = c/sqrt(n+c2) * (S / (S - (sum y)^2/(n+c2)))^(n/2),
    y = x - mu, S = sum y^2, is the likelihood ratio of the scale-invariant
    statistic mixed over delta = mean/sd ~ N(0, 1/c2); it starts at 1, so Ville
    gives P(sup_n M_n >= 1/alpha) <= alpha. {mu: M_n < 1/alpha} solved for
    d = mean - mu: n d^2 (1 - K c2/(n+c2)) < (K - 1) ss, K = ((n+c2)/(c2 alpha^2))^(1/n).
    """
    if n < 2:
        return math.inf
    k = math.exp((math.log(n + c2) - math.log(c2) - 2.0 * math.log(alpha)) / n)
    den = 1.0 - k * c2 / (n + c2)
    if den <= 0.0:
        return math.inf
    return math.sqrt((k - 1.0) * ss / (n * den))


def _half(values, rule: Rule) -> tuple[float, float]:
    """(mean, half-width) of the interval valid under *rule*."""
    n, mean, ss = _moments(values)
    alpha = 1.0 - rule.confidence
    if n < 2:
        return mean, math.inf
    if rule.mode == "decision":
        return mean, _cs_half(n, ss, alpha)
    sd = math.sqrt(ss / (n - 1))
    return mean, _t(1.0 - PRECISION_ALPHA_FACTOR * alpha / 2.0, n - 1) * sd / math.sqrt(n)


def interval(values: list[float], rule: Rule) -> tuple[float, float, float]:
    """(mean, lo, hi) at the stated confidence, valid at a round chosen by *rule*.

    Decision mode: the confidence sequence; precision mode: the corrected t
    interval. Neither depends on how many looks came before. One value: (x, -inf, inf).
    """
    mean, half = _half(values, rule)
    return mean, mean - half, mean + half


def chosen_stop(stopped_by_rule: bool, interrupted: bool) -> bool:
    """Whether the data may have chosen a run's last round: the rule stopped it, or someone did
    (an interruption: a person watching the numbers may stop when they look good). A run that
    reached a cap fixed before it started was not chosen."""
    return bool(stopped_by_rule or interrupted)


def _label(key) -> str:
    return "/".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def should_stop(series: dict, rule: Rule, rounds_done: int) -> tuple[bool, str]:
    """(stop, reason) after *rounds_done* rounds; *series* maps key -> per-round pct deltas.

    Stops only when every series is done, so the slowest series sets the
    length and each interval keeps its own coverage. Never before min_rounds:
    with fewer rounds the spread is too unreliable to stop on.
    """
    if not series:
        raise ValueError("should_stop() needs at least one series")
    if rounds_done < rule.min_rounds:
        return False, f"{rounds_done} of at least {rule.min_rounds} rounds"
    worst_key, worst_half = None, -1.0
    for key, values in series.items():
        mean, half = _half(values, rule)
        if rule.mode == "decision":
            t = rule.threshold_pct
            if mean - half > t or mean + half < t:
                continue
            if rule.target_pct is not None and half <= rule.target_pct:
                continue
            return False, (f"undecided after {rounds_done} rounds: {_label(key)} "
                           f"[{mean - half:+.2f}, {mean + half:+.2f}] contains {t:+g}%")
        if half > worst_half:
            worst_key, worst_half = key, half
        if half > rule.target_pct:
            return False, (f"after {rounds_done} rounds {_label(key)} half-width "
                           f"{half:.2f}% > target {rule.target_pct:g}%")
    if rule.mode == "decision":
        return True, f"decided after {rounds_done} rounds: every interval settles {rule.threshold_pct:+g}%"
    return True, (f"precise after {rounds_done} rounds: worst half-width {worst_half:.2f}% "
                  f"({_label(worst_key)}) <= target {rule.target_pct:g}%")


def gate(intervals: dict, fail_if_slower_pct: float) -> int:
    """Exit code of ``--fail-if-slower PCT``: 1 any interval wholly above, 0 all wholly below, 3 undecided.

    Values are (lo, hi) or (mean, lo, hi). A failure is reported even when
    other series are undecided: one proven regression settles the gate.
    Touching the threshold is undecided.
    """
    if not intervals:
        raise ValueError("gate() needs at least one interval")
    bounds = [tuple(v)[-2:] for v in intervals.values()]
    if any(lo > fail_if_slower_pct for lo, _ in bounds):
        return 1
    if all(hi < fail_if_slower_pct for _, hi in bounds):
        return 0
    return 3


def allocate(series: dict, budget: int) -> dict:
    """Repeats per key for the next round: 1 each, the rest in proportion to each key's variance.

    The run waits for its widest interval, and a half-width squared is
    variance / n, so giving n in proportion to the variance evens the
    half-widths out (Neyman's sd-proportional split would minimise a weighted
    sum instead). Keys with fewer than 2 values count as the noisiest known.
    Largest remainders keep the total at max(budget, number of keys).
    """
    if not series:
        return {}
    keys = list(series)
    var = {}
    for key in keys:
        vals = series[key]
        if len(vals) >= 2:
            n, _, ss = _moments(vals)
            var[key] = ss / (n - 1)
    fallback = max(var.values()) if var else 1.0
    weights = [var.get(k, fallback) for k in keys]
    total = sum(weights)
    if total <= 0.0:
        weights, total = [1.0] * len(keys), float(len(keys))
    spare = max(0, int(budget) - len(keys))
    exact = [spare * w / total for w in weights]
    out = [1 + int(e) for e in exact]
    left = spare - sum(int(e) for e in exact)
    order = sorted(range(len(keys)), key=lambda i: exact[i] - int(exact[i]), reverse=True)
    for i in order[:left]:
        out[i] += 1
    return dict(zip(keys, out))
