"""The statistics of ``launchbench mechanisms`` inside one process: per pair round the mechanisms'
block medians, paired deltas vs passthrough and vs stock with order-statistic intervals, and the
tls target's verdict; how many blocks followed a class write; across processes, each process's
median delta one observation (``analyze_processes``), and the processes of several runs pooled
(``pool``). Pure (workloads/capture/mechanism_rounds.py measures, engine/mechanism_procs.py runs the
processes, output/mechanisms.py renders)."""
from __future__ import annotations

import statistics
import sys

from ..base.errors import UserError
from .stats import mean_ci, median_ci, over_units, pooled_median_delta

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


def analyze(rounds: list[dict], specs: list[str], arg_counts: list[int], target: float = TARGET_US,
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


# ----------------------------------------------------------------- across processes

def across(per_process: list[dict], confidence: float = 0.95) -> dict:
    """One delta from per-process deltas (each a stats.pooled_median_delta dict): the mean over
    processes with a Student t interval, plus the spread that interval has to cover."""
    us = [d["delta_us"] for d in per_process]
    pct = [d["delta_pct"] for d in per_process]
    return {"processes": len(us), **over_units(us, pct, "processes", confidence), "median_us": statistics.median(us),
            "sd_between_processes_us": statistics.stdev(us) if len(us) > 1 else 0.0,
            "per_process_us": us}


def scope_text(n_processes: int) -> str:
    return (f"{n_processes} processes: each process's median paired delta is one observation; the mean over "
            "processes and its Student t interval include the variation between processes (memory layout) "
            "and over time (the machine's slower spells)")


def analyze_processes(processes: list[dict], specs: list, arg_counts: list, target: float = TARGET_US,
            judge: bool = True, ones: list | None = None) -> dict:
    """The across-process analysis, shaped like the in-process one (``per_args`` with
    ``median_us``, ``vs_passthrough``, ``vs_stock``, ``tls_target``); levels are means of the
    processes' median levels. Judged only with two or more processes. *ones*: each process's own
    analysis, if the caller has it already (a run keeps them as its processes finish)."""
    if ones is None:
        ones = [analyze(p["rounds"], specs, arg_counts, judge=False) for p in processes]
    results = {}
    for nargs in arg_counts:
        key = str(nargs)
        entries = [one["per_args"][key] for one in ones if key in one["per_args"]]
        medians, median_cis = {}, {}
        for spec in specs:
            levels = [e["median_us"][spec] for e in entries if spec in e["median_us"]]
            if levels:
                m, lo, hi = mean_ci(levels)
                medians[spec], median_cis[spec] = m, [lo, hi]
        entry = {"median_us": medians, "median_ci_us": median_cis, "vs_passthrough": {}, "vs_stock": {}}
        for slot in ("vs_passthrough", "vs_stock"):
            for spec in specs:
                got = [e[slot][spec] for e in entries if spec in e[slot]]
                if got:
                    entry[slot][spec] = across(got)
        tls = entry["vs_passthrough"].get("tls")
        if tls is not None and judge and tls["processes"] >= 2:
            entry["tls_target"] = {"target_us": target, "verdict": target_verdict(tls["ci_us"], target)}
        results[key] = entry
    return {"per_args": results,
            "tls_target": target_summary(results, target, judge, scope_text(len(processes)),
                                   unmeasured="not measured (needs 2 or more processes)")}


#: what must agree for processes of several runs to be pooled into one analysis
SAME_FOR_POOLING = ("numba_cuda", "signature", "simulator")
SAME_PARAMS_FOR_POOLING = ("mechanisms", "arg_counts", "samples", "launches", "warmup", "warmup_class_write")


def pool(docs: list, paths: list) -> dict:
    """One document whose processes are those of all *docs* (which must have measured the same
    thing the same way), analysed together: more processes, a narrower interval over them."""
    first = docs[0]
    for doc, path in zip(docs[1:], paths[1:]):
        for key in SAME_FOR_POOLING:
            if doc.get(key) != first.get(key):
                raise UserError(f"cannot pool {path} with {paths[0]}: {key} differs ({doc.get(key)!r} vs "
                                f"{first.get(key)!r}); pool only runs of the same numba-cuda")
        for key in SAME_PARAMS_FOR_POOLING:
            if doc["params"].get(key) != first["params"].get(key):
                raise UserError(f"cannot pool {path} with {paths[0]}: --{key.replace('_', '-')} differs "
                                f"({doc['params'].get(key)!r} vs {first['params'].get(key)!r}); pool runs made "
                                "with the same options")
    processes = []
    for run_index, (doc, path) in enumerate(zip(docs, paths)):
        for p in doc["processes"]:
            processes.append(dict(p, run=run_index))
    out = {k: v for k, v in first.items() if k not in ("processes", "analysis", "timing")}
    out["params"] = dict(first["params"], processes=len(processes))
    out["command"] = ["launchbench"] + sys.argv[1:]
    out["pooled_from"] = [{"path": path, "created": doc.get("created"), "command": doc.get("command"),
                           "processes": len(doc["processes"]), "interrupted": doc.get("interrupted")}
                          for doc, path in zip(docs, paths)]
    out["interrupted"] = any(doc.get("interrupted") for doc in docs)
    out["processes"] = processes
    out["rounds_complete"] = sum(p["rounds_complete"] for p in processes)
    out["class_writes"] = class_write_summary([r for p in processes for r in p["rounds"]])
    out["timing"] = {k: round(sum(doc.get("timing", {}).get(k, 0.0) for doc in docs), 1)
                     for k in ("wall_s", "setup_wait_s", "measure_s", "teardown_s")}
    out["analysis"] = analyze_processes(processes, first["params"]["mechanisms"], first["params"]["arg_counts"],
                              judge=not first.get("simulator"))
    return out
