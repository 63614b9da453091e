"""The upstream-claims page (``docs/upstream-claims.md``): one row per launch-latency claim upstream
made, what launchbench measured for it (from committed ``launchbench releases`` documents, with the
arguments the claim names: ``--arg-kind``; and ``launchbench lock-probe`` documents for #243) and a
verdict. A claim with no matching measured step says "not measured yet" and which run would measure
it: the page never shows a number no document holds. Pure: documents in, Markdown out.
"""
from __future__ import annotations

import statistics

from ..engine import stats
from ..engine.lockprobe import reading
from .history import counts_where
from .releases import arguments_text

#: what each claim needs: the step between two points of a releases run (``from`` -> ``to``, point
#: labels as ``launchbench releases`` writes them), read as ``expect``:
#: faster (agree: established faster at every measured arg count), free (agree: the 95 % interval
#: within +/- ``within_pct`` of the earlier point's cost at every arg count), branch (no cost was claimed:
#: agree when the exact counts of a launch differ between the two points in ``function`` at every arg
#: count, i.e. other code runs on every launch; the measured step is its cost), ratio (``rows``: the speed-up
#: of ``to`` over ``from`` per row, from the per-round samples of releases documents of each row's arg kind)
#: or lock (a lock-probe document probing ``to``). ``arg_kind``: the releases document's --arg-kind (default array).
CLAIMS = (
    {"id": "mlir-235", "source": "numba-cuda-mlir #232/#235 (0.4.2)",
     "claim": "up to 0.4.1 every launch synchronized (cuCtxSynchronize plus a device-to-host read of an error "
              "code); from 0.4.2 only with debug=True",
     "from": "numba-cuda-mlir==0.4.1", "to": "numba-cuda-mlir==0.4.2", "expect": "faster",
     "run": "launchbench releases numba-cuda-mlir==0.3.0..0.6.0 (lab/recipes/releases.sh)"},
    {"id": "mlir-90", "source": "numba-cuda-mlir #90 (0.4.0)",
     "claim": "objects with the CUDA array interface go straight to the C++ launcher (CuPy vector add 154 -> 50 µs)",
     "from": "numba-cuda-mlir==0.3.0", "to": "numba-cuda-mlir==0.4.0", "expect": "faster", "arg_kind": "cupy",
     "note": "the claimed 154 -> 50 µs is a CuPy vector-add kernel's; ours is the empty kernel with N CuPy arrays",
     "run": "launchbench releases 'numba-cuda-mlir==0.3.0,0.4.0' --arg-kind cupy --args 1,2 "
            "(lab/recipes/releases.sh run OUT claims)"},
    {"id": "mlir-243", "source": "numba-cuda-mlir #243 (0.5.0)",
     "claim": "hot launches no longer take the global compiler lock when a planner is registered (LC-S kernels)",
     "from": "numba-cuda-mlir==0.4.2", "to": "numba-cuda-mlir==0.5.0", "expect": "lock",
     "run": "launchbench lock-probe 'numba-cuda-mlir==0.4.2,0.5.0,0.6.0' (lab/recipes/releases.sh run OUT claims)"},
    {"id": "ubench", "source": "numba-cuda-mlir tests/benchmarks/launch_latency_ubench README (RTX PRO 6000 Blackwell)",
     "claim": "mlir vs numba-cuda speed-up: empty 1.06x, 1 array 1.97x, 16 scalars 3.56x, 16 arrays 2.44x, "
              "256 scalars 17.7x",
     "from": "numba-cuda==0.30.4", "to": "numba-cuda-mlir==0.6.0", "expect": "ratio",
     # (row, the arg kind it needs (None: any, no argument), arg count, claimed speed-up)
     "rows": (("empty", None, 0, 1.06), ("1 array", "array", 1, 1.97), ("16 scalars", "scalar", 16, 3.56),
              ("16 arrays", "array", 16, 2.44), ("256 scalars", "scalar", 256, 17.7)),
     "run": "launchbench releases numba-cuda==0.30.4 numba-cuda-mlir==0.6.0 --args 0,1,16 and the same with "
            "--arg-kind scalar --args 16,256 (lab/recipes/releases.sh run OUT claims)"},
    {"id": "nc-804", "source": "numba-cuda 05922fc4 (#804, 0.30.0: launch-config capture)",
     "claim": "capture costs +0.0/+0.2/+0.8/+0.5/+0.8 % per launch at 0..4 args", "within_pct": 1.0,
     "from": "numba-cuda==0.29.0", "to": "numba-cuda==0.30.0", "expect": "free",
     "run": "launchbench releases numba-cuda==0.29.0,0.30.0 on one stack (+pinned)"},
    {"id": "nc-877", "source": "numba-cuda f62f98a8 (#877: the cuda-core >= 1.0 branch)",
     "claim": "_Kernel.launch takes another branch on every launch when cuda-core >= 1.0 (no cost stated)",
     "from": "numba-cuda==0.30.4+cuda-core==0.7.0", "to": "numba-cuda==0.30.4+cuda-core==1.2.2", "expect": "branch",
     "function": "_Kernel.launch",
     "run": "launchbench releases numba-cuda==0.30.4+cuda-core==0.7.0 numba-cuda==0.30.4+cuda-core==1.2.2"},
)

KERNEL = "empty kernels, float32 device-array args, launched [1, 1]"


def _kind(doc: dict) -> str:
    """The arguments a releases document's kernels took (one from before --arg-kind: device arrays)."""
    return (doc.get("settings") or {}).get("arg_kind") or "array"


def _measured(docs: list, kind: str) -> list:
    """The GPU documents of *kind*, newest first (a simulator or stand-in document never counts)."""
    return [d for d in sorted(docs, key=lambda d: d.get("created") or "", reverse=True)
            if d.get("kind") == kind and d.get("measurement")]


def _same(label: str, want: str) -> bool:
    """A point's label names the claim's point (on constraints.txt's stack, ``+pinned``, too)."""
    return label in (want, want + "+pinned")


def find_step(claim: dict, docs: list):
    """(document, steps per arg count, levels of the earlier point) of the newest measured releases
    document holding the claim's step, or None."""
    for doc in _measured(docs, "releases"):
        if _kind(doc) != claim.get("arg_kind", "array"):
            continue  # another kind of argument than the claim's
        steps = sorted((s for s in doc.get("steps", []) if _same(s["previous"], claim["from"])
                        and _same(s["commit"], claim["to"])), key=lambda s: s["nargs"])
        if steps:
            return doc, steps, {d["nargs"]: d for d in doc.get("levels", {}).get(steps[0]["previous"], [])}
    return None


def counts_step(doc: dict, frm: str, to: str) -> dict | None:
    """The exact counts step from *frm* to *to* in *doc* (labels as written; ``+pinned`` matches), or None
    where the document counted nothing there."""
    return next((c for c in (doc.get("counts") or {}).get("steps", [])
                 if _same(c["previous"], frm) and _same(c["commit"], to)), None)


def counts_text(cstep: dict | None) -> str:
    """*cstep* in words for the "measured" cell ("" for none)."""
    if cstep is None:
        return ""
    if "error" in cstep:
        return f"exact counts not comparable ({cstep['error']})"
    return "exact counts per launch " + ("identical" if not cstep["moved"] else counts_where(cstep))


def branch_verdict(claim: dict, cstep: dict | None) -> tuple[str, str]:
    """A claim that other code runs on every launch, read from the exact counts step: agree when
    ``claim["function"]`` is among the functions whose counts changed, at every arg count."""
    fn = claim["function"]
    if cstep is None:
        return "undecided", "the run did not count its launches: only exact counts can show which code runs"
    if "error" in cstep:
        return "undecided", f"the counts do not compare: {cstep['error']}"
    if not cstep["moved"]:
        return "disagree", "the exact counts of a launch are identical at both points: the same code runs"
    changed = [{f["function"] for f in d.get("functions", [])} for d in cstep["per_nargs"].values()]
    if all(fn in names for names in changed):
        alone = all(names == {fn} for names in changed)
        return "agree", (f"the exact counts of every launch differ in {fn}" + (" and nowhere else" if alone else "")
                         + f", at every arg count ({len(changed)}): another path runs; its cost is the step")
    return "disagree", f"the exact counts move, but not in {fn} at every arg count"


def verdict(claim: dict, steps: list, before: dict, threshold: float, cstep: dict | None = None) -> tuple[str, str]:
    """(agree / disagree / undecided, why) from the measured steps (and *cstep*, the exact counts step
    between the claim's points, for a ``branch`` claim)."""
    exp = claim["expect"]
    if exp == "branch":
        return branch_verdict(claim, cstep)
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


def round_ratios(doc: dict, slow: str, fast: str, nargs: int) -> list:
    """Per round both points completed: the median of *slow*'s samples over *fast*'s at *nargs* (point
    labels as written; ``+pinned`` matches where the document has no point of the exact label)."""
    measured = [p for p in doc.get("points", []) if p.get("measured") and p.get("variant")]
    variant = {}
    for want in (slow, fast):
        exact = [p["variant"] for p in measured if p["sha"] == want]
        pinned = [p["variant"] for p in measured if _same(p["sha"], want)]
        if exact or pinned:
            variant[want] = (exact or pinned)[0]
    if len(variant) < 2:
        return []
    by: dict = {}
    for smp in doc.get("samples", []):
        if smp.get("nargs") == nargs:
            by.setdefault((smp["variant"], smp["round"]), []).append(smp["us"])
    a, b = variant[slow], variant[fast]
    return [statistics.median(by[(a, r)]) / statistics.median(by[(b, r)])
            for r in sorted({r for _v, r in by}) if (a, r) in by and (b, r) in by]


def ratio_row(claim: dict, docs: list, sources: dict):
    """(measured, verdict, why) of a speed-up table (``rows``) from releases documents holding both
    points, newest first per row; None when no row is measured."""
    got, where = {}, []
    for doc in _measured(docs, "releases"):
        place = f"{(doc.get('device') or {}).get('name') or 'GPU'} ({sources.get(id(doc), doc.get('created', ''))})"
        counted = counts_text(counts_step(doc, claim["from"], claim["to"]))
        place += f": {arguments_text(doc['settings'])}, {counted}" if counted else ""
        for label, kind, n, claimed in claim["rows"]:
            if label in got or (kind is not None and kind != _kind(doc)) or n not in doc["settings"].get("arg_counts", ()):
                continue
            ratios = round_ratios(doc, claim["from"], claim["to"], n)
            if len(ratios) >= 2:
                m, lo, hi = stats.mean_ci(ratios)
                got[label] = (m, lo, hi, len(ratios), claimed)
                if place not in where:
                    where.append(place)
    if not got:
        return None
    cells = [f"{label}: {m:.2f}x [{lo:.2f}, {hi:.2f}] ({n} rounds; claimed {c:.2f}x)"
             for label, (m, lo, hi, n, c) in got.items()]
    missing = [label for label, *_ in claim["rows"] if label not in got]
    faster = sum(1 for m, lo, hi, n, c in got.values() if lo > 1)
    measured = (f"{claim['from']} / {claim['to']} per-launch cost, empty kernels launched [1, 1], mean over rounds of "
                f"each round's ratio of medians, 95% CI: " + "; ".join(cells) + " on " + ", ".join(where))
    outside = [label for label, (m, lo, hi, n, c) in got.items() if not lo <= c <= hi]
    why = (f"rows measured: {', '.join(got)}" + (f"; not measured: {', '.join(missing)}" if missing else "") +
           f"; mlir faster (CI wholly above 1x) at {faster} of {len(got)}; the claimed ratio lies outside our 95% CI at "
           f"{len(outside)} of {len(got)}" + (f" ({', '.join(outside)})" if outside else "") +
           "; the claim's GPU was an RTX PRO 6000, ours another: the verdict is for this GPU")
    return measured, "disagree" if outside else "agree", why


def lock_verdict(point: dict) -> tuple[str, str]:
    """#243 at the release that claims it: every kernel with a planner registered launches while the
    lock is held (agree), one of them waits (disagree), or none could be probed (undecided)."""
    kernels = {k["kernel"]: k for k in point.get("kernels", [])}
    planned = [kernels[k] for k in ("plain-planner", "lcs-planner") if k in kernels]
    forms = [f for k in planned for f in k["forms"].values()]
    if point.get("error") or "lcs-planner" not in kernels:
        return "undecided", f"no LC-S kernel probed at {point['point']}: {point.get('error') or point.get('note')}"
    if any(f.get("error") for f in forms):
        return "undecided", "a probed launch failed: " + next(f["error"] for f in forms if f.get("error"))
    if all(f["completed_while_held"] for f in forms):
        return "agree", (f"at {point['point']} every hot launch with a planner registered (plain and LC-S, both forms) "
                         "completed while another thread held the global compiler lock")
    return "disagree", f"at {point['point']} a hot launch with a planner registered waited for the global compiler lock"


def _never_waited(point: dict) -> bool:
    """Every probed launch of *point* completed while the lock was held (and at least one was probed)."""
    forms = [f for k in point.get("kernels", []) for f in k["forms"].values()]
    return bool(forms) and all(f.get("completed_while_held") and not f.get("error") for f in forms)


def lock_row(claim: dict, docs: list, sources: dict):
    """(measured, verdict, why) of #243 from the newest lock-probe document probing its release, or None."""
    for doc in _measured(docs, "lock-probe"):
        at = [p for p in doc["points"] if _same(p["point"], claim["to"])]
        if not at:
            continue
        v, why = lock_verdict(at[0])
        before = [p for p in doc["points"] if _same(p["point"], claim["from"])]
        if before:
            why += f"; before, {before[0]['point']}: " + reading(before[0])
            if v == "agree" and _never_waited(before[0]):
                why += ("; so the end state agrees but the change itself is not seen: no probed launch waited "
                        "for the lock before either")
        dev = next(((p.get("device") or {}).get("name") for p in doc["points"] if (p.get("device") or {}).get("name")),
                   "GPU")
        measured = ("; ".join(f"{p['point']}: {reading(p)}" for p in doc["points"]) +
                    f" (held {doc['settings']['timeout_s']} s each; on {dev}; {sources.get(id(doc), doc['created'])})")
        return measured, v, why
    return None


def rows(docs: list, sources: dict | None = None) -> list:
    """One row per claim: claim, source, measured, verdict, why. *sources*: id(doc) -> its path."""
    out = []
    for c in CLAIMS:
        if c["expect"] in ("ratio", "lock"):
            got = (ratio_row if c["expect"] == "ratio" else lock_row)(c, docs, sources or {})
            measured, v, why = got or ("not measured yet", "not measured yet", f"needs {c['run']}")
            out.append({"claim": c["claim"], "source": c["source"], "measured": measured, "verdict": v, "why": why})
            continue
        got = find_step(c, docs)
        if got is None:
            out.append({"claim": c["claim"], "source": c["source"], "measured": "not measured yet",
                        "verdict": "not measured yet", "why": f"needs {c['run']}"})
            continue
        doc, steps, before = got
        cstep = counts_step(doc, c["from"], c["to"])
        v, why = verdict(c, steps, before, doc["settings"]["threshold_us"], cstep)
        where = (sources or {}).get(id(doc), doc.get("created", ""))
        dev = (doc.get("device") or {}).get("name") or "GPU"
        kernel = KERNEL if _kind(doc) == "array" else arguments_text(doc["settings"]) + ", launched [1, 1]"
        why += f"; {c['note']}" if c.get("note") else ""
        counted = counts_text(cstep)
        measured = f"{c['from']} -> {c['to']}, {kernel}, on {dev}: {_cell(steps, before)}"
        out.append({"claim": c["claim"], "source": c["source"], "verdict": v, "why": why,
                    "measured": measured + (f"; {counted}" if counted else "") + f" ({where})"})
    return out


def markdown_cell(text: str) -> str:
    """*text* as one table cell: a ``|`` would end it, and ``k[1, 1](out)`` (the lock probe's launch form) would be
    read as a link."""
    return text.replace("|", "\\|").replace("](", "]\\(")


def render(docs: list, sources: dict | None = None) -> str:
    """The page."""
    lines = ["# Upstream launch-latency claims, checked",
             "",
             ("Generated by `launchbench claims` from committed `launchbench releases` and `lock-probe` documents (it lists the "
              "files it read); do not edit by hand. Each row: the claim and its source, what launchbench "
              "measured (µs per launch with 95% CIs and rounds, the kernel and arguments, and the exact counts step where "
              "the run counted: bytecodes and calls per launch, the functions that moved), and the verdict. "
              "\"not measured yet\" names the run that would measure it."),
             "",
             "| claim | source | launchbench measured | verdict | why |",
             "|---|---|---|---|---|"]
    for r in rows(docs, sources):
        lines.append("| " + " | ".join(markdown_cell(str(r[k])) for k in
                                       ("claim", "source", "measured", "verdict", "why")) + " |")
    read = sorted(set((sources or {}).values()))
    lines += ["", "Documents read: " + (", ".join(f"`{p}`" for p in read) if read else "none yet."), ""]
    return "\n".join(lines)
