"""The ``launchbench mechanisms`` table: median µs per launch per mechanism, the deltas vs
passthrough and vs stock with their intervals, class writes and the tls target's verdict."""
from __future__ import annotations


def _fmt_delta(d: dict | None) -> str:
    if d is None:
        return "-"
    lo, hi = d["ci_us"]
    return f"{d['delta_us']:+.3f} [{lo:+.3f},{hi:+.3f}]"


def format_table(doc: dict) -> str:
    specs, analysis = doc["params"]["mechanisms"], doc["analysis"]
    across = doc.get("analysis_scope") == "processes"
    n_proc = len(doc.get("processes") or [])
    lines = []
    if doc["simulator"]:
        lines.append("SIMULATOR SMOKE RUN -- not a measurement of GPU launch costs")
    lines.append(f"numba-cuda {doc['numba_cuda']} ({doc['signature']}); "
                 + (f"{n_proc} processes, " if across else "")
                 + f"{doc['rounds_complete']} pair rounds x {doc['params']['samples']} samples x "
                 f"{doc['params']['launches']} launches" + ("; INTERRUPTED" if doc["interrupted"] else ""))
    lines.append("Median us/launch" + (" (mean over processes of each one's median):" if across else ":"))
    lines.append("args " + "".join(f"{s:>14}" for s in specs))
    for key, entry in analysis["per_args"].items():
        lines.append(f"{key:<5}" + "".join(f"{entry['median_us'].get(s, float('nan')):>14.3f}" for s in specs))
    how = ("mean over processes of each one's median paired difference [95% t CI over processes]" if across
           else "median of paired differences [95% order-statistic CI]")
    for slot, ref in (("vs_passthrough", "passthrough"), ("vs_stock", "stock")):
        others = [s for s in specs if s != ref]
        if ref not in specs or not others:
            continue
        lines.append(f"Delta vs {ref}, us/launch: {how}")
        lines.append("args " + "".join(f" {s:>27}" for s in others))
        for key, entry in analysis["per_args"].items():
            lines.append(f"{key:<5}" + "".join(f" {_fmt_delta(entry[slot].get(s)):>27}" for s in others))
    if across:
        sds = [e["vs_passthrough"]["tls"]["sd_between_processes_us"] for e in analysis["per_args"].values()
               if "tls" in e["vs_passthrough"]]
        if sds:
            lines.append(f"tls - passthrough varies between processes by SD {min(sds):.3f}..{max(sds):.3f} us")
    writes = doc.get("class_writes")
    if writes and writes["blocks"]:
        lines.append(f"CUDADispatcher written before {writes['class_modified']} of {writes['blocks']} blocks (warm-up "
                     f"{doc['params'].get('warmup_class_write')} launches there, {doc['params']['warmup']} after an "
                     "in-place switch): " + ", ".join(f"{s} {writes['by_mechanism'][s]['class_modified']}/"
                                                      f"{writes['by_mechanism'][s]['blocks']}"
                                                      for s in specs if s in writes["by_mechanism"]))
    where = f"across {n_proc} processes" if across else "in this process"
    lines.append(f"Target {analysis['tls_target']['rule']}, {where}: "
                 f"{analysis['tls_target']['verdict'].upper()} ("
                 + ", ".join(f"{k} args {e['tls_target']['verdict']}" for k, e in analysis["per_args"].items()
                             if "tls_target" in e) + ")")
    if analysis["tls_target"].get("scope"):
        lines.append(f"  (scope: {analysis['tls_target']['scope']})")
    return "\n".join(lines)
