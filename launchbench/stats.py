"""Statistics for interleaved launch-overhead runs: summaries, paired deltas, CIs, verdicts.

Why paired by round: on the GPU machine a variant's level moves by up to
30 % between rounds (FACTS.md), while variants measured in the same round,
interleaved sample by sample, share that drift. So each round gives one
delta per variant (median of its samples minus the reference's median in
that round), and the confidence interval is a Student t interval over those
per-round deltas: rounds, not samples, are the independent units. With a
single round we fall back to the paired samples inside it and say so.

Pure standard library; no numpy, so variant environments and tests stay light.
"""
from __future__ import annotations

import math
import statistics

CONFIDENCE = 0.95
#: A CI containing 0 but wider than this (in % of the reference) says nothing.
INCONCLUSIVE_HALF_WIDTH_PCT = 2.0

METHOD = (
    "per round, delta = median(variant samples) - median(reference samples) of the interleaved "
    "samples; mean over rounds with a two-sided Student t confidence interval (rounds are the "
    "independent units); percent deltas are per-round delta / reference median"
)


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


# ---------------------------------------------------------------- deltas

def paired_delta(reference: list[list[float]], variant: list[list[float]],
                 confidence: float = CONFIDENCE) -> dict:
    """Delta of *variant* vs *reference*, given per-round sample lists (same rounds, same order).

    Returns delta_us, ci_us, delta_pct, ci_pct, rounds and ``units`` (what
    the interval is over: "rounds", or "samples" when there is one round).
    """
    if len(reference) != len(variant) or not reference:
        raise ValueError("paired_delta() needs the same, non-zero number of rounds for both")
    if len(reference) >= 2:
        ref_meds = [statistics.median(r) for r in reference]
        diffs = [statistics.median(v) - m for v, m in zip(variant, ref_meds)]
        pcts = [100.0 * d / m for d, m in zip(diffs, ref_meds)]
        units = "rounds"
    else:  # one round: pair the interleaved samples inside it
        ref, var = reference[0], variant[0]
        n = min(len(ref), len(var))
        diffs = [v - r for r, v in zip(ref[:n], var[:n])]
        ref_med = statistics.median(ref)
        pcts = [100.0 * d / ref_med for d in diffs]
        units = "samples"
    d, dlo, dhi = mean_ci(diffs, confidence)
    p, plo, phi = mean_ci(pcts, confidence)
    return {
        "rounds": len(reference),
        "n": len(diffs),
        "units": units,
        "delta_us": d,
        "ci_us": [dlo, dhi],
        "delta_pct": p,
        "ci_pct": [plo, phi],
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
