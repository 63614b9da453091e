"""The text, Markdown and plot of a ``launchbench history`` document, and bisect's summary."""
from __future__ import annotations

import io
import os

from ..base.atomic import write_bytes_atomic, write_text_atomic


def _ci(d: dict) -> str:
    return f"{d['delta_us']:+.2f} [{d['ci_us'][0]:+.2f}, {d['ci_us'][1]:+.2f}]"


def render(doc: dict, markdown: bool = False) -> str:
    """Per commit: step vs the previous measured commit per arg count (us, 95 % CI)."""
    counts = doc["settings"]["arg_counts"]
    steps_by = {(s["commit"], s["nargs"]): s for s in doc["steps"]}
    deltas_by = {(d["variant"], d["nargs"]): d for d in doc["deltas"]}
    head = ["commit", "subject"] + [f"step {n} args (us)" for n in counts] + ["vs first, 0..max args (us)"]
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
        rows.append(["g" + rec["sha"][:8], subject] + cells)
    title = (f"Per-commit launch overhead, {doc['range']}: {doc['rounds_completed']} rounds; step = paired delta vs "
             f"the previous measured commit, 95% CI; <== established beyond +/-{doc['settings']['threshold_us']} us, "
             "* CI excludes 0")
    if doc.get("simulator"):
        title = "CUDA SIMULATOR SMOKE RUN -- NOT A MEASUREMENT\n" + title
    cul = doc.get("culprits") or []
    foot = ("Commits carrying an established step: " + ", ".join("g" + c[:8] for c in cul)) if cul else \
        "No commit carries an established step."
    if markdown:
        lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines + ["", foot, ""])
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([title, fmt(head)] + [fmt(r) for r in rows] + [foot, ""])


def render_bisect(doc: dict) -> str:
    lines = []
    if doc.get("simulator"):
        lines.append("CUDA SIMULATOR SMOKE RUN -- NOT A MEASUREMENT")
    for i, st in enumerate(doc["stages"], 1):
        steps_txt = "; ".join(f"g{s['commit'][:8]} {s['nargs']}a {_ci(s)}" for s in st["steps"] if s["nargs"] == st["steps"][0]["nargs"])
        lines.append(f"stage {i}: {len(st['points'])} commits, {st['rounds']} rounds, "
                     f"{st['timing'].get('wall_s', 0):.0f} s; steps at {st['steps'][0]['nargs'] if st['steps'] else '-'} args: {steps_txt}")
    c = doc.get("culprit")
    if c:
        lines.append(f"culprit: g{c['sha'][:8]} {c['subject']}")
        lines.append("  step vs g" + c["previous"][:8] + ": " + ", ".join(f"{s['nargs']} args {_ci(s)} us" for s in c["steps"]))
    else:
        lines.append(f"no culprit: {doc.get('result', 'interrupted')}")
    lines.append(f"measurement wall time: {doc.get('gpu_seconds', 0):.0f} s over {len(doc['stages'])} stages")
    return "\n".join(lines) + "\n"


def export(doc: dict, output: str) -> list:
    """Markdown table and a plot of delta vs commit next to the JSON."""
    stem = output[:-len(".json.gz")] if output.endswith(".json.gz") else os.path.splitext(output)[0]
    md = write_text_atomic(stem + ".md", render(doc, markdown=True))
    written = [md]
    try:
        written.append(plot(doc, stem + ".png"))
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
