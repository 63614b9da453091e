"""The engine's samples, analysed: paired deltas with intervals over rounds.

Sample records (``runplan.Outcome.samples``: variant, round, repeat, sample key, us) are grouped
per round in repeat order, paired between two variants over the rounds both completed, and turned
into the schema's ``stats`` and ``deltas`` records (stats.py); under a stopping rule each delta's
interval is replaced by the one valid at a data-dependent stop (sequential.py). Shared by every
command that runs the engine (compare, history and bisect, breakdown --variant) and by the asv
results writer.
"""
from __future__ import annotations

import math

from . import sequential, stats
from .runplan import key_id, launch_keys


def concat_rounds(units: list) -> dict:
    """The ``samples`` of each round's unit ({a: {b: [values]}}), concatenated in round order:
    how the single-environment workloads (peers, breakdown) pool their rounds."""
    merged: dict = {}
    for unit in units:
        for a, inner in unit["samples"].items():
            for b, values in inner.items():
                merged.setdefault(a, {}).setdefault(b, []).extend(values)
    return merged


def _by_repeat(pairs: list) -> list:
    """((round, repeat), us) records of one unit -> us values in slot order (the pairing key)."""
    return [us for _slot, us in sorted(pairs, key=lambda p: p[0])]


def unit_of(sample: dict):
    """The independent unit a sample belongs to: its round of fresh processes, or, for workers
    forked from zygotes, its cluster (the rounds one set of zygotes served: engine/zygote.py)."""
    return sample["cluster"] if sample.get("cluster") is not None else sample["round"]


def group_rounds(samples: list, keys: list) -> dict:
    """(variant, key id) -> {unit: [us in slot order]} from sample records; a unit is a round
    (``unit_of``), or a cluster of forked rounds, whose rounds' slots are concatenated."""
    fields = sorted({f for k in keys for f in k})
    by: dict = {}
    for s in samples:
        kid = key_id({f: s[f] for f in fields if f in s})
        slot = (s["round"], s["repeat"])
        by.setdefault((s["variant"], kid), {}).setdefault(unit_of(s), []).append((slot, s["us"]))
    return {k: {r: _by_repeat(v) for r, v in rounds.items()} for k, rounds in by.items()}


def paired_rounds(by: dict, reference: str, variant: str, kid) -> tuple[list, list]:
    """The rounds both variants completed for key *kid*: (reference lists, variant lists)."""
    ref_r, var_r = by.get((reference, kid), {}), by.get((variant, kid), {})
    common = sorted(set(ref_r) & set(var_r))
    return [ref_r[r] for r in common], [var_r[r] for r in common]


def cluster_groups(by_round: dict, reference: str, variant: str, kid, cluster_of: dict) -> list:
    """Per cluster, its rounds' % deltas of *variant* vs *reference* (``by_round``: group_rounds
    of the samples with their clusters removed)."""
    ref_r, var_r = by_round.get((reference, kid), {}), by_round.get((variant, kid), {})
    groups: dict = {}
    for r in sorted(set(ref_r) & set(var_r)):
        _us, pct = stats.per_round_deltas([ref_r[r]], [var_r[r]])
        groups.setdefault(cluster_of.get(r), []).extend(pct)
    return [groups[c] for c in sorted(groups, key=str)]


def rounds_in(samples: list, variant: str) -> int:
    """How many rounds *variant*'s samples span (a cluster holds several)."""
    return len({s["round"] for s in samples if s["variant"] == variant})


def analyze(samples: list, names: list, reference: str, arg_counts: list, keys: list | None = None,
            confidence: float = 0.95) -> tuple[list, list]:
    """(stats, deltas) records of the schema from complete-round samples; one record per
    variant and sample key (by default one key per arg count)."""
    keys = keys if keys is not None else launch_keys(arg_counts)
    by = group_rounds(samples, keys)
    clustered = any(s.get("cluster") is not None for s in samples)
    if clustered:  # the rounds apart too, to see how much a cluster fixes (stats.cluster_split)
        by_round = group_rounds([{**s, "cluster": None} for s in samples], keys)
        cluster_of = {s["round"]: s["cluster"] for s in samples}
    stat_recs, delta_recs = [], []
    for name in names:
        for key in keys:
            rounds = by.get((name, key_id(key)))
            if rounds:
                values = [u for r in sorted(rounds) for u in rounds[r]]
                stat_recs.append({"variant": name, **key, **stats.summarize(values)})
    for name in names:
        if name == reference:
            continue
        for key in keys:
            ref_lists, var_lists = paired_rounds(by, reference, name, key_id(key))
            if not ref_lists:
                continue
            d = stats.paired_median_delta(ref_lists, var_lists, confidence)
            if clustered and d["units"] == "rounds":
                d["units"], d["rounds"] = "clusters", rounds_in(samples, name)
                split = stats.cluster_split(cluster_groups(by_round, reference, name, key_id(key), cluster_of))
                if split is not None:
                    d["clusters"] = split
            d["verdict"] = stats.verdict(d["ci_pct"], d["n"])
            noise = stats.noise_split(ref_lists, var_lists)
            if noise is not None:
                d["noise"] = noise
            rec = {"variant": name, **key, **d}
            rec["summary"] = stats.summary_line(name, rec, reference)
            delta_recs.append(rec)
    return stat_recs, delta_recs


def per_arg(samples: list, names: list, reference: str, arg_counts: list, confidence: float = 0.95) -> dict:
    """µs per added kernel argument: the slope of launch time over the arg counts, with its interval.

    ``{variant: slope, "variant-reference": slope}``: a variant's slope from the median of its
    repeats per round and arg count; a delta's from the median of the paired (same repeat slot)
    differences, so the slope of the difference keeps the rounds' pairing (stats.slope_ci).
    Empty with fewer than two arg counts."""
    import statistics

    if len(arg_counts) < 2:
        return {}
    by = group_rounds(samples, [{"nargs": n} for n in arg_counts])
    out = {}
    for name in names:
        per_n = [by.get((name, n), {}) for n in arg_counts]
        common = sorted(set.intersection(*(set(p) for p in per_n)))
        if common:
            out[name] = stats.slope_ci(arg_counts, [[statistics.median(p[r]) for p in per_n] for r in common], confidence)
    for name in names:
        if name == reference:
            continue
        rounds: dict = {}
        for n in arg_counts:
            ref_r, var_r = by.get((reference, n), {}), by.get((name, n), {})
            for r in set(ref_r) & set(var_r):
                diffs = stats.paired_differences(ref_r[r], var_r[r])
                if diffs:
                    rounds.setdefault(r, {})[n] = statistics.median(diffs)
        full = [[cells[n] for n in arg_counts] for _r, cells in sorted(rounds.items()) if len(cells) == len(arg_counts)]
        if full:
            out[f"{name}-{reference}"] = stats.slope_ci(arg_counts, full, confidence)
    return out


def round_series(samples: list, names: list, reference: str, arg_counts: list) -> dict:
    """(variant, nargs) -> (per-round us deltas, per-round % deltas) vs the reference."""
    by = group_rounds(samples, [{"nargs": n} for n in arg_counts])
    out = {}
    for name in names:
        if name == reference:
            continue
        for n in arg_counts:
            ref_l, var_l = paired_rounds(by, reference, name, n)
            if ref_l:
                out[(name, n)] = stats.per_round_deltas(ref_l, var_l)
    return out


def apply_rule(delta_recs: list, series: dict, rule, reference: str, chosen: bool = True) -> None:
    """Replace each delta's interval by the one valid under *rule*'s data-dependent stopping;
    *chosen* False (``sequential.chosen_stop``: the run ended at its cap) keeps precision mode's
    plain t interval, whose last round no spread chose."""
    if rule.mode == "precision" and not chosen:
        for rec in delta_recs:
            if rec.get("units") in ("rounds", "clusters"):
                rec["interval"] = (f"t over {rec['units']} (precision mode, ended at its cap: no spread chose "
                                   "the stop)")
                rec["gate_ci_pct"] = rec["ci_pct"]
        return
    for rec in delta_recs:
        got = series.get((rec["variant"], rec["nargs"]))
        if not got or len(got[0]) < 2:
            continue
        us, pct = got
        _m, ulo, uhi = sequential.interval(us, rule)
        _m, plo, phi = sequential.interval(pct, rule)
        if not all(math.isfinite(x) for x in (ulo, uhi, plo, phi)):
            # too few rounds for a bounded stopping-valid interval: show the t interval, decide nothing
            rec["interval"] = (f"t over rounds; the stopping-valid ({rule.mode}) interval is unbounded after "
                               f"{len(pct)} rounds")
            rec["gate_ci_pct"] = None
            continue
        rec["ci_us"], rec["ci_pct"], rec["gate_ci_pct"] = [ulo, uhi], [plo, phi], [plo, phi]
        rec["interval"] = f"sequential ({rule.mode} mode)"
        rec["verdict"] = stats.verdict(rec["ci_pct"], rec["n"])
        rec["summary"] = stats.summary_line(rec["variant"], rec, reference)


def gate_result(delta_recs: list, pct: float) -> dict:
    """The machine-readable verdict of --fail-if-slower: exit code and each delta's side of PCT."""
    unbounded = [f"{d['variant']}/{d['nargs']}" for d in delta_recs if d.get("gate_ci_pct", d["ci_pct"]) is None]
    intervals = {(d["variant"], d["nargs"]): tuple(d.get("gate_ci_pct", d["ci_pct"])) for d in delta_recs
                 if d.get("gate_ci_pct", d["ci_pct"]) is not None}
    sides = {f"{v}/{n}": ("above" if lo > pct else "below" if hi < pct else "undecided")
             for (v, n), (lo, hi) in intervals.items()}
    sides.update({k: "undecided" for k in unbounded})
    code = sequential.gate(intervals, pct) if intervals else 3
    if code == 0 and unbounded:
        code = 3
    return {"fail_if_slower_pct": pct, "exit_code": code,
            "verdict": {0: "pass", 1: "fail", 3: "undecided"}[code], "deltas": sides}


def peer_stats(peer_samples: list) -> list:
    grouped = {}
    for s in peer_samples:
        grouped.setdefault((s["peer"], s["nargs"]), []).append(s["us"])
    out = []
    for (peer, n), values in sorted(grouped.items()):
        values = [v for v in values if v is not None]
        if values:
            out.append({"peer": peer, "nargs": n, **stats.summarize(values)})
        else:
            out.append({"peer": peer, "nargs": n, "n": 0, "mean": None, "stdev": None,
                        "median": None, "min": None, "max": None})
    return out
