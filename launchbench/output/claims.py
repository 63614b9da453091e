"""The upstream-claims page (``docs/upstream-claims.md``): one row per launch-latency claim upstream
made, what launchbench measured for it (from committed ``launchbench releases`` documents) and a
verdict. A claim with no matching measured step says "not measured yet" and which run would measure
it: the page never shows a number no document holds. Pure: documents in, Markdown out.
"""
from __future__ import annotations

#: what each claim needs: the step between two points of a releases run (``from`` -> ``to``, point
#: labels as ``launchbench releases`` writes them), read as ``expect``:
#: faster (agree: established faster at every measured arg count), free (agree: the 95 % interval
#: within +/- ``within_pct`` of the earlier point's cost at every arg count) or report (no number was
#: claimed: the measured step is shown, no verdict)
CLAIMS = (
    {"id": "mlir-235", "source": "numba-cuda-mlir #232/#235 (0.4.2)",
     "claim": "up to 0.4.1 every launch synchronized (cuCtxSynchronize plus a device-to-host read of an error "
              "code); from 0.4.2 only with debug=True",
     "from": "numba-cuda-mlir==0.4.1", "to": "numba-cuda-mlir==0.4.2", "expect": "faster",
     "run": "launchbench releases numba-cuda-mlir==0.3.0..0.6.0 (lab/recipes/releases.sh)"},
    {"id": "mlir-90", "source": "numba-cuda-mlir #90 (0.4.0)",
     "claim": "objects with the CUDA array interface go straight to the C++ launcher (CuPy vector add 154 -> 50 µs)",
     "from": "numba-cuda-mlir==0.3.0", "to": "numba-cuda-mlir==0.4.0", "expect": "faster", "arg_kind": "cupy",
     "run": "a releases run with CuPy arguments (releases has no --arg-kind yet: compare --arg-kind cupy on "
            "mlir-env 0.3.0 and 0.4.0 measures it)"},
    {"id": "mlir-243", "source": "numba-cuda-mlir #243 (0.5.0)",
     "claim": "hot launches no longer take the global compiler lock when a planner is registered (LC-S kernels)",
     "from": "numba-cuda-mlir==0.4.2", "to": "numba-cuda-mlir==0.5.0", "expect": "faster", "arg_kind": "lcs",
     "run": "an LC-S kernel with a planner registered beside a plain one, on 0.4.2 and 0.5.0 (not a releases "
            "row yet)"},
    {"id": "ubench", "source": "numba-cuda-mlir tests/benchmarks/launch_latency_ubench README (RTX PRO 6000 Blackwell)",
     "claim": "mlir vs numba-cuda speed-up: empty 1.06x, 1 array 1.97x, 16 scalars 3.56x, 16 arrays 2.44x, "
              "256 scalars 17.7x",
     "from": "numba-cuda==0.30.4", "to": "numba-cuda-mlir==0.6.0", "expect": "ratio",
     "ratios": {0: 1.06, 1: 1.97}, "arg_kind": "ubench",
     "run": "launchbench releases numba-cuda==0.30.4 numba-cuda-mlir==0.6.0 (0 and 1 array args; the 16- and "
            "256-argument rows need scalar and 16-array kernels the series does not time)"},
    {"id": "nc-804", "source": "numba-cuda 05922fc4 (#804, 0.30.0: launch-config capture)",
     "claim": "capture costs +0.0/+0.2/+0.8/+0.5/+0.8 % per launch at 0..4 args", "within_pct": 1.0,
     "from": "numba-cuda==0.29.0", "to": "numba-cuda==0.30.0", "expect": "free",
     "run": "launchbench releases numba-cuda==0.29.0,0.30.0 on one stack (+pinned)"},
    {"id": "nc-877", "source": "numba-cuda f62f98a8 (#877: the cuda-core >= 1.0 branch)",
     "claim": "_Kernel.launch takes another branch on every launch when cuda-core >= 1.0 (no cost stated)",
     "from": "numba-cuda==0.30.4+cuda-core==0.7.0", "to": "numba-cuda==0.30.4+cuda-core==1.2.2", "expect": "report",
     "run": "launchbench releases numba-cuda==0.30.4+cuda-core==0.7.0 numba-cuda==0.30.4+cuda-core==1.2.2"},
)

KERNEL = "empty kernels, float32 device-array args, launched [1, 1]"


def _same(label: str, want: str) -> bool:
    """A point's label names the claim's point (on constraints.txt's stack, ``+pinned``, too)."""
    return label in (want, want + "+pinned")


def find_step(claim: dict, docs: list):
    """(document, steps per arg count, levels of the earlier point) of the newest measured releases
    document holding the claim's step, or None."""
    if claim.get("arg_kind") in ("cupy", "lcs", "ubench") and claim["expect"] != "ratio":
        return None  # the series times device arrays on a plain kernel: not this claim's arguments
    for doc in sorted(docs, key=lambda d: d.get("created") or "", reverse=True):
        if doc.get("kind") != "releases" or not doc.get("measurement"):
            continue
        steps = sorted((s for s in doc.get("steps", []) if _same(s["previous"], claim["from"])
                        and _same(s["commit"], claim["to"])), key=lambda s: s["nargs"])
        if steps:
            return doc, steps, {d["nargs"]: d for d in doc.get("levels", {}).get(steps[0]["previous"], [])}
    return None


def verdict(claim: dict, steps: list, before: dict, threshold: float) -> tuple[str, str]:
    """(agree / disagree / undecided / measured, why) from the measured steps."""
    exp = claim["expect"]
    if exp == "report":
        return "measured", "no cost was claimed; the step is the answer"
    if exp == "ratio":
        got = []
        for s in steps:
            lv = before.get(s["nargs"])
            if lv and s["nargs"] in claim["ratios"]:
                ratio = lv["us"] / (lv["us"] + s["delta_us"])
                got.append(f"{s['nargs']} args {ratio:.2f}x vs {claim['ratios'][s['nargs']]:.2f}x")
        return ("measured", "ratios on our GPU: " + "; ".join(got)) if got else ("not measurable", "no level")
    if exp == "faster":
        if all(s["established"] and s["ci_us"][1] < 0 for s in steps):
            return "agree", f"faster at every arg count, each 95% CI wholly below -{threshold} µs"
        if any(s["established"] and s["ci_us"][0] > 0 for s in steps):
            return "disagree", "slower at some arg count (established)"
        if all(-threshold < s["ci_us"][0] and s["ci_us"][1] < threshold for s in steps):
            return "disagree", f"no change: every 95% CI within +/-{threshold} µs"
        return "undecided", "the intervals leave it open; more rounds"
    pct = claim["within_pct"]
    rel = []
    for s in steps:
        lv = before.get(s["nargs"])
        if not lv:
            return "not measurable", "no level of the earlier point"
        rel.append((100 * s["ci_us"][0] / lv["us"], 100 * s["ci_us"][1] / lv["us"]))
    if all(-pct <= lo and hi <= pct for lo, hi in rel):
        return "agree", f"every 95% CI within +/-{pct}% of the earlier cost"
    if any(lo > pct or hi < -pct for lo, hi in rel):
        return "disagree", f"some 95% CI lies wholly beyond +/-{pct}%"
    return "undecided", f"the intervals straddle +/-{pct}%"


def _cell(steps: list, before: dict) -> str:
    parts = []
    for s in steps:
        lv = before.get(s["nargs"])
        lvl = f"{lv['us']:.2f} µs -> " if lv else ""
        parts.append(f"{s['nargs']} args: {lvl}{s['delta_us']:+.2f} [{s['ci_us'][0]:+.2f}, {s['ci_us'][1]:+.2f}] µs "
                     f"({s.get('n', '?')} rounds)")
    return "; ".join(parts)


def rows(docs: list, sources: dict | None = None) -> list:
    """One row per claim: claim, source, measured, verdict, why. *sources*: id(doc) -> its path."""
    out = []
    for c in CLAIMS:
        got = find_step(c, docs)
        if got is None:
            out.append({"claim": c["claim"], "source": c["source"], "measured": "not measured yet",
                        "verdict": "not measured yet", "why": f"needs {c['run']}"})
            continue
        doc, steps, before = got
        v, why = verdict(c, steps, before, doc["settings"]["threshold_us"])
        where = (sources or {}).get(id(doc), doc.get("created", ""))
        dev = (doc.get("device") or {}).get("name") or "GPU"
        out.append({"claim": c["claim"], "source": c["source"], "verdict": v, "why": why,
                    "measured": f"{c['from']} -> {c['to']}, {KERNEL}, on {dev}: {_cell(steps, before)} ({where})"})
    return out


def render(docs: list, sources: dict | None = None) -> str:
    """The page."""
    lines = ["# Upstream launch-latency claims, checked",
             "",
             ("Generated by `launchbench claims` from committed `launchbench releases` documents (it lists the "
              "files it read); do not edit by hand. Each row: the claim and its source, what launchbench "
              "measured (µs per launch with 95% CIs and rounds, the kernel and arguments), and the verdict. "
              "\"not measured yet\" names the run that would measure it."),
             "",
             "| claim | source | launchbench measured | verdict | why |",
             "|---|---|---|---|---|"]
    for r in rows(docs, sources):
        lines.append("| " + " | ".join(str(r[k]).replace("|", "\\|") for k in
                                       ("claim", "source", "measured", "verdict", "why")) + " |")
    read = sorted(set((sources or {}).values()))
    lines += ["", "Documents read: " + (", ".join(f"`{p}`" for p in read) if read else "none yet."), ""]
    return "\n".join(lines)
