"""The statistics of ``launchbench mechanisms`` inside one process: per pair round the mechanisms'
block medians, paired deltas vs passthrough and vs stock with order-statistic intervals, and the
tls target's verdict; how many blocks followed a class write. Pure (commands/mechanisms_cli.py
measures, commands/mechanisms_procs.py pools processes, output/mechanisms.py renders)."""
from __future__ import annotations

import statistics

from .stats import median_ci, pooled_median_delta

TARGET_US = 0.1  # the tls target: tls may add at most this much per launch over passthrough
SCOPE = ("one process: the intervals do not include the process-to-process variation (memory layout); "
         "judge the target across processes (the default, --processes 20)")


def paired_rounds(rounds: list[dict], nargs: int, a: str, b: str) -> tuple[list, list]:
    """Per-round sample lists of *a* and *b* at *nargs*, for rounds where both were measured."""
    key = str(nargs)
    ra, rb = [], []
    for rnd in rounds:
        per = rnd["samples"].get(key, {})
        if per.get(a) and per.get(b):
            ra.append(per[a])
            rb.append(per[b])
    return ra, rb


def target_verdict(ci_us, target: float = TARGET_US) -> str:
    """met: the whole CI is at or under the target; missed: all above; else inconclusive."""
    lo, hi = ci_us
    if hi <= target:
        return "met"
    if lo > target:
        return "missed"
    return "inconclusive"


def analyse(rounds: list[dict], specs: list[str], arg_counts: list[int], target: float = TARGET_US,
            judge: bool = True) -> dict:
    """Medians, paired deltas vs passthrough and vs stock, and the tls target verdict
    (not judged when *judge* is false: simulator numbers are not launch costs)."""
    results = {}
    for nargs in arg_counts:
        key = str(nargs)
        medians, median_cis = {}, {}
        for spec in specs:
            values = [statistics.median(rnd["samples"][key][spec]) for rnd in rounds
                      if rnd["samples"].get(key, {}).get(spec)]
            if values:
                med, lo, hi = median_ci(values)
                medians[spec], median_cis[spec] = med, [lo, hi]
        entry = {"median_us": medians, "median_ci_us": median_cis, "vs_passthrough": {}, "vs_stock": {}}
        for ref, slot in (("passthrough", "vs_passthrough"), ("stock", "vs_stock")):
            for spec in specs:
                if spec == ref:
                    continue
                ref_rounds, var_rounds = paired_rounds(rounds, nargs, ref, spec)
                if ref_rounds:
                    entry[slot][spec] = pooled_median_delta([statistics.median(r) for r in ref_rounds],
                                                            [statistics.median(v) for v in var_rounds])
        tls = entry["vs_passthrough"].get("tls")
        if tls is not None and judge:
            entry["tls_target"] = {"target_us": target, "verdict": target_verdict(tls["ci_us"], target)}
        results[key] = entry
    return {"per_args": results, "tls_target": target_summary(results, target, judge, SCOPE)}


def target_summary(per_args: dict, target: float, judge: bool, scope: str,
                   unmeasured: str = "not measured") -> dict:
    """The tls target over every arg count: met only if met at each, missed if missed at any."""
    verdicts = [e["tls_target"]["verdict"] for e in per_args.values() if "tls_target" in e]
    if not judge:
        overall = "not judged (simulator)"
    elif not verdicts:
        overall = unmeasured
    elif all(v == "met" for v in verdicts):
        overall = "met"
    elif any(v == "missed" for v in verdicts):
        overall = "missed"
    else:
        overall = "inconclusive"
    return {"rule": f"tls - passthrough <= {target:g} us at every arg count", "verdict": overall, "scope": scope}


def class_write_summary(rounds: list[dict]) -> dict:
    """How many timed blocks followed a class write, per mechanism (rounds of schema 3)."""
    by_spec: dict[str, list[int]] = {}
    for rnd in rounds:
        for per in rnd.get("class_modified", {}).values():
            for spec, wrote in per.items():
                counts = by_spec.setdefault(spec, [0, 0])
                counts[0] += bool(wrote)
                counts[1] += 1
    return {"blocks": sum(c[1] for c in by_spec.values()),
            "class_modified": sum(c[0] for c in by_spec.values()),
            "by_mechanism": {spec: {"class_modified": c[0], "blocks": c[1]} for spec, c in by_spec.items()}}
