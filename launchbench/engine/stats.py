"""Statistics for interleaved launch-overhead runs: summaries, paired deltas, CIs, verdicts.

Why paired differences of adjacent samples, and their median: on the GPU
VM a process flips between a fast and a slow state (~10 vs ~14 us at 0
args) that lasts 0.1 s to seconds. Samples of a few ms, interleaved
A B C A B C, put a variant's sample next to the reference's sample of the
same repeat slot, so both see the same state; the median of those
differences ignores the slots where the state flipped in between.

compare (separate processes): each round gives one delta per variant, the
median of its paired differences; the CI is a Student t interval over
rounds, because per-process offsets make rounds the independent units.
mechanisms (one process): the paired differences are pooled and their
median gets a distribution-free binomial order-statistic interval.

Pure standard library; no numpy, so variant environments and tests stay light.
"""
from __future__ import annotations

import functools
import math
import statistics

CONFIDENCE = 0.95
#: A CI containing 0 but wider than this (in % of the reference) says nothing.
INCONCLUSIVE_HALF_WIDTH_PCT = 2.0

METHOD = (
    "per round, delta = median over repeat slots of (variant sample - reference sample), the two "
    "samples adjacent in time (paired differences); mean over rounds with a two-sided Student t "
    "confidence interval (rounds of fresh processes are the independent units); percent deltas are, "
    "per round, the median over repeat slots of (variant - reference) / reference, so a machine state "
    "that scales both samples of a slot cancels; with one round: median of the paired "
    "differences with a binomial order-statistic interval"
)
#: what ``METHOD`` becomes where workers are forked from zygotes (--spawn fork)
METHOD_FORKED = (
    METHOD + "; with --spawn fork, a round's workers are forked from one zygote per variant, the rounds "
    "one set of zygotes served form a cluster, and the unit is the cluster: its slots pooled, the mean "
    "and Student t interval over clusters (forks share their zygote's process state)"
)


def method(spawn: str = "fresh") -> str:
    return METHOD_FORKED if spawn == "fork" else METHOD


def summarize(values) -> dict:
    """n, mean, stdev (sample; 0 for n < 2), median, min, max of *values*."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("summarize() needs at least one value")
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
    }


# ---------------------------------------------------------------- Student t

def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction for the incomplete beta function (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """CDF of Student's t distribution with *df* degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * _betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Inverse of t_cdf by bisection (exact enough: 1e-12), e.g. t_quantile(0.975, 4) = 2.776."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if df <= 0:
        raise ValueError("df must be positive")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return 0.5 * (lo + hi)


def mean_ci(values, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(mean, low, high): two-sided Student t interval; n == 1 gives a zero-width interval."""
    values = [float(v) for v in values]
    n = len(values)
    if n == 0:
        raise ValueError("mean_ci() needs at least one value")
    mean = statistics.fmean(values)
    if n == 1:
        return mean, mean, mean
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return mean, mean - half, mean + half


# ---------------------------------------------------------------- per-argument slopes

def lsq_line(xs, ys) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line through (xs, ys); needs two distinct xs."""
    xs, ys = [float(x) for x in xs], [float(y) for y in ys]
    if len(xs) != len(ys) or len(set(xs)) < 2:
        raise ValueError("lsq_line() needs as many ys as xs and at least two distinct xs")
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def slope_ci(xs, rounds, confidence: float = CONFIDENCE) -> dict:
    """The cost per added argument with its interval: ``{"us", "ci", "n", "intercept", "method"}``.

    *rounds* holds one list of ys (one per x) per round. With two or more rounds the slope is
    fitted per round and the t interval is taken over the rounds' slopes: rounds are the
    independent units (fresh processes), and for a paired delta each round's ys are already
    variant-minus-reference differences, so the pairing carries into the slope. With a single
    round the interval is the ordinary least-squares one (residuals, n - 2 degrees of freedom),
    which assumes independent points and is marked so in ``method``."""
    xs = [float(x) for x in xs]
    rounds = [list(r) for r in rounds if len(r) == len(xs)]
    if not rounds:
        raise ValueError("slope_ci() needs at least one round with one y per x")
    fits = [lsq_line(xs, r) for r in rounds]
    if len(fits) >= 2:
        m, lo, hi = mean_ci([f[0] for f in fits], confidence)
        intercept = statistics.fmean(f[1] for f in fits)
        return {"us": m, "ci": [lo, hi], "n": len(fits), "intercept": intercept, "method": "per-round slopes, t over rounds"}
    slope, intercept = fits[0]
    ys = rounds[0]
    n = len(xs)
    if n <= 2:
        return {"us": slope, "ci": [slope, slope], "n": 1, "intercept": intercept, "method": "one round, two points: no interval"}
    mx = statistics.fmean(xs)
    sxx = sum((x - mx) ** 2 for x in xs)
    rss = sum((y - (intercept + slope * x)) ** 2 for x, y in zip(xs, ys))
    half = t_quantile(0.5 + confidence / 2.0, n - 2) * math.sqrt(rss / (n - 2) / sxx)
    return {"us": slope, "ci": [slope - half, slope + half], "n": 1, "intercept": intercept,
            "method": "one round: least-squares interval over the points"}


# ---------------------------------------------------------------- medians

def _binom_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), summed in log space (exact for any n we meet)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    log_half_n = n * math.log(0.5)
    lg_n1 = math.lgamma(n + 1)
    return min(1.0, sum(math.exp(lg_n1 - math.lgamma(i + 1) - math.lgamma(n - i + 1) + log_half_n)
                        for i in range(k + 1)))


@functools.lru_cache(maxsize=256)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """1-based ranks (lo, hi) of the order statistics bounding the median with coverage >= confidence.

    The largest k with P(Binomial(n, 1/2) <= k - 1) <= alpha/2 gives [x_(k), x_(n-k+1)]:
    distribution-free, needs only independent draws. None when n is too small
    (n < 6 at 95 %) for any such interval.
    """
    alpha = 1.0 - confidence
    k = 0
    lo, hi = 1, n // 2 + 1
    while lo < hi:  # largest k in [1, n//2] with cdf(k - 1) <= alpha / 2
        mid = (lo + hi) // 2
        if _binom_cdf_half(mid - 1, n) <= alpha / 2.0:
            k, lo = mid, mid + 1
        else:
            hi = mid
    if k < 1:
        return None
    return k, n - k + 1


def median_ci(values, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(median, low, high): binomial order-statistic interval for the median.

    Too few values for a 95 % order-statistic interval: (median, min, max)
    with the coverage it has, which is below *confidence* (say so via n).
    """
    values = sorted(float(v) for v in values)
    n = len(values)
    if n == 0:
        raise ValueError("median_ci() needs at least one value")
    med = statistics.median(values)
    ranks = median_ci_ranks(n, confidence)
    if ranks is None:
        return med, values[0], values[-1]
    return med, values[ranks[0] - 1], values[ranks[1] - 1]


def paired_differences(reference: list[float], variant: list[float]) -> list[float]:
    """variant[i] - reference[i] over the repeat slots both have (samples adjacent in time)."""
    n = min(len(reference), len(variant))
    return [float(v) - float(r) for r, v in zip(reference[:n], variant[:n])]


# ---------------------------------------------------------------- deltas

def over_units(us: list[float], pct: list[float], units: str, confidence: float = CONFIDENCE) -> dict:
    """One delta from independent per-unit deltas (a round of fresh processes in compare and
    history, a process in mechanisms): their mean with a Student t interval over the units.
    The single statistical path of every across-process verdict."""
    d, dlo, dhi = mean_ci(us, confidence)
    p, plo, phi = mean_ci(pct, confidence)
    return {"n": len(us), "units": units, "delta_us": d, "ci_us": [dlo, dhi], "delta_pct": p, "ci_pct": [plo, phi]}


def paired_ratios(reference: list[float], variant: list[float]) -> list[float]:
    """100 * (variant[i] - reference[i]) / reference[i] over the repeat slots both have.

    Why per slot: the VM's speed states scale a launch's time (about 10 vs 15 us at 0 args),
    and a slot's two samples share the state, so a relative difference taken slot by slot
    cancels it; one round's difference over its reference median does not when the round
    mixes states (on the committed runs with a large delta the widest interval is 0.5-21 %
    narrower; on A/A runs between 9 % wider and 8 % narrower)."""
    n = min(len(reference), len(variant))
    return [100.0 * (float(v) - float(r)) / float(r) for r, v in zip(reference[:n], variant[:n])]


def per_round_deltas(reference: list[list[float]], variant: list[list[float]]) -> tuple[list, list]:
    """Per round: the median paired difference (us) and the median paired ratio (%)."""
    diffs, pcts = [], []
    for ref, var in zip(reference, variant):
        diffs.append(statistics.median(paired_differences(ref, var)))
        pcts.append(statistics.median(paired_ratios(ref, var)))
    return diffs, pcts


def noise_split(reference: list[list[float]], variant: list[list[float]]) -> dict | None:
    """Where a delta's round-to-round spread comes from, in % of the reference (variances).

    Each round's even and odd repeat slots give two half-round deltas; half the variance of
    their difference is the within-round (sample) noise of a half, the rest of a half's
    variance is between rounds (processes, the machine's state between rounds). A round's
    full delta has about half the within part. Mostly between: more rounds narrow the
    interval, more repeats do not. None with fewer than 4 rounds or 4 slots per round."""
    if len(reference) < 4 or any(min(len(r), len(v)) < 4 for r, v in zip(reference, variant)):
        return None
    halves = [], []
    for ref, var in zip(reference, variant):
        ratios = paired_ratios(ref, var)
        halves[0].append(statistics.median(ratios[0::2]))
        halves[1].append(statistics.median(ratios[1::2]))
    _us, full = per_round_deltas(reference, variant)
    within_half = statistics.variance([a - b for a, b in zip(*halves)]) / 2.0
    half_var = (statistics.variance(halves[0]) + statistics.variance(halves[1])) / 2.0
    between = max(0.0, half_var - within_half)
    total = statistics.variance(full)
    return {"round_var_pct2": total, "between_var_pct2": between, "within_var_pct2": max(0.0, total - between),
            "between_share": min(1.0, between / total) if total > 0 else None}


def cluster_split(groups: list) -> dict | None:
    """Whether rounds in one cluster (forked from the same zygotes) share an offset: a one-way
    analysis of variance of the per-round % deltas grouped by cluster.

    ``icc`` is the share of a round's variance that its cluster fixes (0: the forks of a zygote
    vary like fresh processes; 1: they repeat their zygote's offset), ``design_effect`` how much
    the clusters widen the variance of a mean against as many independent rounds
    (1 + (k - 1) icc). None with fewer than 2 clusters of at least 2 rounds."""
    groups = [list(g) for g in groups if len(g) >= 2]
    if len(groups) < 2:
        return None
    n = sum(len(g) for g in groups)
    grand = sum(sum(g) for g in groups) / n
    means = [sum(g) / len(g) for g in groups]
    ss_between = sum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means))
    ss_within = sum((x - m) ** 2 for g, m in zip(groups, means) for x in g)
    ms_between = ss_between / (len(groups) - 1)
    ms_within = ss_within / (n - len(groups)) if n > len(groups) else 0.0
    k = (n - sum(len(g) ** 2 for g in groups) / n) / (len(groups) - 1)  # rounds per cluster (unbalanced)
    denom = ms_between + (k - 1) * ms_within
    icc = (ms_between - ms_within) / denom if denom > 0 else 0.0
    icc = max(0.0, icc)
    return {"clusters": len(groups), "rounds": n, "between_ms_pct2": ms_between, "within_ms_pct2": ms_within,
            "icc": icc, "design_effect": 1.0 + (k - 1) * icc}


def paired_median_delta(reference: list[list[float]], variant: list[list[float]],
                        confidence: float = CONFIDENCE) -> dict:
    """Delta of *variant* vs *reference* from per-round sample lists aligned by repeat slot.

    Per round: the median of the paired differences (us) and of the paired
    ratios (%, ``paired_ratios``). Two or more rounds: Student t over rounds
    (``units`` "rounds"); one round: the pooled paired differences with a
    binomial order-statistic interval for their median (``units`` "pairs").
    """
    if len(reference) != len(variant) or not reference:
        raise ValueError("paired_median_delta() needs the same, non-zero number of rounds for both")
    if len(reference) >= 2:
        diffs, pcts = per_round_deltas(reference, variant)
        return {"rounds": len(reference), **over_units(diffs, pcts, "rounds", confidence)}
    else:
        diffs = paired_differences(reference[0], variant[0])
        d, dlo, dhi = median_ci(diffs, confidence)
        p, plo, phi = median_ci(paired_ratios(reference[0], variant[0]), confidence)
        n, units = len(diffs), "pairs"
    return {
        "rounds": len(reference),
        "n": n,
        "units": units,
        "delta_us": d,
        "ci_us": [dlo, dhi],
        "delta_pct": p,
        "ci_pct": [plo, phi],
    }


def pooled_median_delta(reference: list[float], variant: list[float], confidence: float = CONFIDENCE) -> dict:
    """One process, many pair rounds: median of the paired differences, order-statistic CI.

    *reference* and *variant* are aligned block values (one per pair round).
    """
    diffs = paired_differences(reference, variant)
    if not diffs:
        raise ValueError("pooled_median_delta() needs at least one pair")
    ref_med = statistics.median(reference)
    d, lo, hi = median_ci(diffs, confidence)
    return {
        "rounds": len(diffs),
        "n": len(diffs),
        "units": "pairs",
        "delta_us": d,
        "ci_us": [lo, hi],
        "delta_pct": 100.0 * d / ref_med,
        "ci_pct": [100.0 * lo / ref_med, 100.0 * hi / ref_med],
    }


def verdict(ci_pct, n: int = 2, wide: float = INCONCLUSIVE_HALF_WIDTH_PCT) -> str:
    """slower / faster when the CI excludes 0; else indistinguishable, or inconclusive if too wide."""
    lo, hi = ci_pct
    if n < 2:
        return "inconclusive"
    if lo > 0:
        return "slower"
    if hi < 0:
        return "faster"
    if (hi - lo) / 2.0 > wide:
        return "inconclusive"
    return "indistinguishable"


def verdict_text(kind: str, reference: str, n: int = 2) -> str:
    if kind == "indistinguishable":
        return f"indistinguishable from {reference}"
    if kind == "inconclusive":
        if n < 2:
            return "inconclusive (one sample; add --rounds)"
        return f"inconclusive (interval wider than +/-{INCONCLUSIVE_HALF_WIDTH_PCT:g}%; add --rounds)"
    return kind


def summary_line(name: str, delta: dict, reference: str) -> str:
    """``v2: +0.4% [-0.3, +1.1] indistinguishable from baseline``."""
    lo, hi = delta["ci_pct"]
    return (f"{name}: {delta['delta_pct']:+.1f}% [{lo:+.1f}, {hi:+.1f}] "
            f"{verdict_text(delta['verdict'], reference, delta.get('n', 2))}")
