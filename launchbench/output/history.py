"""The text, Markdown and plot of a ``launchbench history`` document, and bisect's summary."""
from __future__ import annotations

import io
import os

from ..base.atomic import write_bytes_atomic, write_text_atomic
from ..engine.countdiff import NOT_VISIBLE
from .counts import callee_text

#: functions named per counts step (the JSON has them all)
TOP_FUNCTIONS = 3


def _ci(d: dict) -> str:
    return f"{d['delta_us']:+.2f} [{d['ci_us'][0]:+.2f}, {d['ci_us'][1]:+.2f}]"


def _signed(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:+.2f}" if isinstance(v, float) and v != int(v) else f"{int(v):+d}"


def _over_args(values: list) -> str:
    """One figure where every arg count agrees, else 'first..last' (0..max args)."""
    shown = [_signed(v) for v in values]
    return shown[0] if len(set(shown)) == 1 else f"{shown[0]}..{shown[-1]}"


def _calls_kind(cstep: dict) -> str:
    d = next(iter(cstep["per_nargs"].values()))
    return "calls" if "calls" in d["kinds"] else "c_calls"


def callees_cell(cstep: dict | None) -> str:
    """The C callees that changed at the largest arg count where any did ('builtins.len -1,
    builtins.sum +1'), 'moved between functions' where only their callers changed, or ''."""
    if not cstep or "error" in cstep or not cstep.get("moved"):
        return ""
    changed = [d for d in cstep["per_nargs"].values() if d.get("callees_moved")]
    if not changed:
        return ""
    return callee_text(changed[-1].get("c_callees") or []) or "moved between functions"


def counts_cell(cstep: dict | None) -> str:
    """A commit's counts step in one cell: '=' (identical counts and C callees), the deltas (and
    the C callees that changed), or why none."""
    if not cstep:
        return ""
    if "error" in cstep:
        return "n/a"
    if not cstep["moved"]:
        return "="
    per = list(cstep["per_nargs"].values())
    ck = _calls_kind(cstep)
    parts = []
    if any(d.get("moved") and d.get("counts_moved", True) for d in per):
        equal = not any(v for d in per for v in d["per_launch"].values())
        parts.append(f"{_over_args([d['per_launch'].get('bytecodes') for d in per])} bc, "
                     f"{_over_args([d['per_launch'].get(ck) for d in per])} {'calls' if ck == 'calls' else 'C calls'}"
                     + (" (moved between functions)" if equal else ""))
    callees = callees_cell(cstep)
    if callees:
        parts.append(f"C callees {callees}")
    return "; ".join(parts)


def counts_where(cstep: dict | None) -> str:
    """A counts step with the functions that moved: '+1 bc, +0 calls (_Kernel.launch +1 bc)'."""
    where = top_functions(cstep)
    return counts_cell(cstep) + (f" ({where})" if where else "")


def top_functions(cstep: dict, top: int = TOP_FUNCTIONS) -> str:
    """The functions that moved most at the largest arg count: 'Dispatcher.call +47 bc'."""
    if not cstep or "error" in cstep or not cstep.get("moved"):
        return ""
    d = cstep["per_nargs"][list(cstep["per_nargs"])[-1]]
    names = [f"{f['function']} {_signed(f['delta'].get('bytecodes'))} bc" if any(f["delta"].values())
             else f"{f['function']} (C callees)" for f in d["functions"][:top]]
    more = d["functions_changed"] - len(names)
    return ", ".join(names) + (f" (+{more} more)" if more > 0 else "")


def counts_rows(csteps: list, subjects: dict, timing: dict) -> list:
    """One row per commit whose counts moved: Δbytecodes and Δcalls per launch over the arg
    counts, the top functions, and its µs step beside them (*timing*: commit -> text)."""
    rows = [["commit", "subject", "Δ bytecodes", "Δ calls", "top functions", "Δ C callees", "µs step"]]
    for c in csteps:
        if "error" in c or not c.get("moved"):
            continue
        per = list(c["per_nargs"].values())
        ck = _calls_kind(c)
        calls = _over_args([d["per_launch"].get(ck) for d in per]) + ("" if ck == "calls" else " (C)")
        rows.append(["g" + c["commit"][:8], (subjects.get(c["commit"]) or "")[:40],
                     _over_args([d["per_launch"].get("bytecodes") for d in per]), calls, top_functions(c),
                     callees_cell(c) or "-", timing.get(c["commit"], "")])
    return rows


def _grid(rows: list) -> list:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _md(rows: list) -> list:
    esc = [[str(c).replace("|", "\\|") for c in r] for r in rows]
    return ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])] + ["| " + " | ".join(r) + " |" for r in esc[1:]]


def _history_counts(doc: dict, markdown: bool) -> list:
    """history's counts block: the commits whose counts moved, and the timed steps counts cannot see."""
    sec = doc.get("counts")
    if not sec:
        return []
    subjects = {r["sha"]: r["subject"] for r in doc["commits"]}
    timing: dict = {}
    for s in doc["steps"]:
        timing.setdefault(s["commit"], []).append(s)
    cell = {c: ", ".join(f"{s['nargs']}a {_ci(s)}" + (" <==" if s["established"] else "") for s in ss[:2]) +
            (" ..." if len(ss) > 2 else "") for c, ss in timing.items()}
    rows = counts_rows(sec["steps"], subjects, cell)
    errors = [c for c in sec["steps"] if "error" in c]
    hidden = sorted({s["commit"] for s in doc["steps"] if s["established"] and s.get("counts_reading") == NOT_VISIBLE})
    title = (f"Counts steps (exact, per launch; {sec['processes']} commits counted in {sec['seconds']:.0f} s, "
             "one process each, before any timing):")
    out = [""]
    if markdown:
        out += [f"## {title}", ""] + (_md(rows) if len(rows) > 1 else ["No commit moved the counts."])
    else:
        out += [title] + (_grid(rows) if len(rows) > 1 else ["No commit moved the counts."])
    if hidden:
        out += ["", "Established µs steps with identical counts (" + NOT_VISIBLE + "): " +
                ", ".join("g" + c[:8] for c in hidden)]
    if errors:
        out += ["", f"Counts not compared at {len(errors)} commit(s): " + "; ".join(
            f"g{c['commit'][:8]}: {c['error']}" for c in errors[:3]) + (" ..." if len(errors) > 3 else "")]
    return out


def render(doc: dict, markdown: bool = False) -> str:
    """Per commit: step vs the previous measured commit per arg count (us, 95 % CI)."""
    counts = doc["settings"]["arg_counts"]
    steps_by = {(s["commit"], s["nargs"]): s for s in doc["steps"]}
    deltas_by = {(d["variant"], d["nargs"]): d for d in doc["deltas"]}
    csteps = {c["commit"]: c for c in (doc.get("counts") or {}).get("steps", [])}
    head = ["commit", "subject"] + [f"step {n} args (us)" for n in counts] + ["vs first, 0..max args (us)"]
    if doc.get("counts"):
        head.append("counts step")
    rows = []
    for rec in doc["commits"]:
        subject = rec["subject"][:44]
        if rec.get("build") and not rec["build"].get("ok"):
            cells = ["build failed"] + [""] * len(counts) + [""]
        elif not rec["measured"] and rec.get("identical_to"):
            cells = ["0 (same code as g" + rec["identical_to"][:8] + ")"] + [""] * (len(counts) - 1) + [""]
        elif rec.get("variant") == doc["reference"]:
            cells = ["reference"] + [""] * (len(counts) - 1) + [""]
        else:
            cells = []
            for n in counts:
                s = steps_by.get((rec["sha"], n))
                mark = " <==" if s and s["established"] else (" *" if s and s["significant"] else "")
                cells.append(_ci(s) + mark if s else "")
            ds = [deltas_by.get((rec.get("variant"), n)) for n in counts]
            cells.append(" ".join(f"{d['delta_us']:+.2f}" for d in ds if d))
        if rec.get("aa"):
            subject = "(A/A) " + subject
        if doc.get("counts"):
            cells.append(counts_cell(csteps.get(rec["sha"])))
        rows.append(["g" + rec["sha"][:8], subject] + cells)
    title = (f"Per-commit launch overhead, {doc['range']}: {doc['rounds_completed']} rounds; step = paired delta vs "
             f"the previous measured commit, 95% CI; <== established beyond +/-{doc['settings']['threshold_us']} us, "
             "* CI excludes 0")
    if doc.get("simulator"):
        title = "CUDA SIMULATOR SMOKE RUN -- NOT A MEASUREMENT\n" + title
    cul = doc.get("culprits") or []
    foot = ("Commits carrying an established step: " + ", ".join("g" + c[:8] for c in cul)) if cul else \
        "No commit carries an established step."
    if doc.get("counts"):
        title += "; counts step: Δ bytecodes and calls per launch vs the previous measured commit (exact; = identical)"
    if markdown:
        lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines + ["", foot] + _history_counts(doc, True) + [""])
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([title, fmt(head)] + [fmt(r) for r in rows] + [foot] + _history_counts(doc, False) + [""])


def _pooled(seg: dict | None) -> str:
    if not seg:
        return "-"
    lo, hi = seg["ci_us"]
    if lo is None or hi is None:
        return f"{seg['mean_us']:+.2f} us pooled, interval not bounded yet ({seg['rounds']} rounds), {seg['state']}"
    return f"{seg['mean_us']:+.2f} [{lo:+.2f}, {hi:+.2f}] us pooled, {seg['state']}"


def render_bisect(doc: dict) -> str:
    """Stages (counts, then timing with each segment's pooled step and the decision), the culprit
    beside its counts step, the counts steps beside their µs, or 'undecided between A and B'."""
    lines = []
    if doc.get("simulator"):
        lines.append("CUDA SIMULATOR SMOKE RUN -- NOT A MEASUREMENT")
    timed = 0
    for i, st in enumerate(doc["stages"], 1):
        if st.get("kind") == "counts":
            bad = st.get("unusable") or {}
            lines.append(f"stage {i} (counts): {len(st['points'])} commit(s) counted, {st.get('seconds', 0):.0f} s"
                         + (f"; {len(bad)} without usable counts" if bad else ""))
            continue
        timed += 1
        dec = st.get("decision") or {}
        lines.append(f"stage {i} (timing): {len(st['points'])} commits, {st['rounds']} rounds, "
                     f"{st['timing'].get('wall_s', 0):.0f} s; {dec.get('action', '?')}: {dec.get('reason', '')}")
        for seg in dec.get("segments", []):
            mark = " <== followed" if dec.get("follow") == [seg["previous"], seg["commit"]] else ""
            lines.append(f"  g{seg['previous'][:8]}..g{seg['commit'][:8]}: {_pooled(seg)}{mark}")
    if doc.get("counts_note"):
        lines.append(f"counts: {doc['counts_note']}")
    if doc.get("hints"):
        lines.append("compiled sources changed at: " + " ".join("g" + h[:8] for h in doc["hints"])
                     + " (timed first, beside their predecessors)")
    csteps = (doc.get("counts") or {}).get("steps") or []
    if csteps:
        timing = {c["commit"]: _pooled((c.get("timing") or {}).get("pooled")) for c in csteps}
        rows = counts_rows(csteps, {c["commit"]: c.get("subject") for c in csteps}, timing)
        if len(rows) > 1:
            lines.append("counts steps (exact, per launch) beside their µs:")
            lines += ["  " + r for r in _grid(rows)]
    c = doc.get("culprit")
    if c:
        lines.append(f"culprit: g{c['sha'][:8]} {c['subject']}")
        if c.get("steps"):
            lines.append("  step vs g" + c["previous"][:8] + ": " +
                         ", ".join(f"{s['nargs']} args {_ci(s)} us" for s in c["steps"]))
        if c.get("pooled"):
            lines.append(f"  pooled over arg counts: {_pooled(c['pooled'])}")
        if c.get("hinted"):
            lines.append("  its compiled sources changed (a hint bisect timed first)")
        cs = c.get("counts")
        if cs and "error" not in cs:
            lines.append("  counts: " + (f"{counts_cell(cs)} per launch; {top_functions(cs)}" if cs["moved"]
                                         else NOT_VISIBLE))
        elif cs:
            lines.append(f"  counts: not compared ({cs['error']})")
    else:
        lines.append(f"no culprit: {doc.get('result', 'interrupted')}" if not str(doc.get("result", "")).startswith(
            "undecided") else doc["result"])
    lines.append(f"measurement wall time: {doc.get('gpu_seconds', 0):.0f} s over {timed} timing stage(s)"
                 f" (counting {doc.get('count_seconds', 0):.0f} s of it)")
    return "\n".join(lines) + "\n"


def report_paths(output: str) -> tuple:
    """The Markdown and PNG ``export`` writes beside the JSON *output*."""
    stem = output[:-len(".json.gz")] if output.endswith(".json.gz") else os.path.splitext(output)[0]
    return stem + ".md", stem + ".png"


def export(doc: dict, output: str) -> list:
    """Markdown table and a plot of delta vs commit next to the JSON."""
    md_path, png_path = report_paths(output)
    md = write_text_atomic(md_path, render(doc, markdown=True))
    written = [md]
    try:
        written.append(plot(doc, png_path))
    except ImportError:
        pass
    return written


def plot(doc: dict, path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counts = doc["settings"]["arg_counts"]
    deltas_by = {(d["variant"], d["nargs"]): d for d in doc["deltas"]}
    recs = doc["commits"]
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(recs) + 3), 4.5))
    xs = list(range(len(recs)))
    for n in counts:
        ys, lo, hi, last = [], [], [], (0.0, 0.0, 0.0)
        for rec in recs:
            name = rec.get("variant")
            if rec["measured"] and name:
                d = deltas_by.get((name, n))
                last = (0.0, 0.0, 0.0) if name == doc["reference"] or d is None else (d["delta_us"], *d["ci_us"])
            ys.append(last[0]), lo.append(last[0] - last[1]), hi.append(last[2] - last[0])
        ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2, label=f"{n} args", drawstyle="steps-mid")
    ax.set_xticks(xs)
    ax.set_xticklabels([r["sha"][:8] for r in recs], rotation=70, fontsize=7)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel(f"launch time vs {recs[0]['sha'][:8]} (us, 95% CI)")
    ax.set_title(("SIMULATOR SMOKE -- " if doc.get("simulator") else "") + f"launch overhead per commit, {doc['range']}")
    for c in doc.get("culprits") or []:
        i = next(i for i, r in enumerate(recs) if r["sha"] == c)
        ax.axvline(i, color="red", lw=0.8, ls="--")
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()  # rendered first, then written whole: a full disk leaves no half PNG
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return write_bytes_atomic(path, buf.getvalue())
