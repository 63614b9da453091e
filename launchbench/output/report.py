"""``launchbench report``: Markdown, self-contained HTML and a PNG from compare JSON.

Why one content model: the Markdown and HTML reports must say the same
thing, so the report is built once as a list of blocks (headings,
paragraphs, tables, lists) and rendered twice. Levels and their intervals
are computed the way the deltas are (launchbench.engine.stats): per round, the
median of a variant's samples; the interval is over rounds, because rounds
are the independent units on a machine whose level drifts between rounds.

matplotlib (Agg, no pyplot state) is imported only when a plot is drawn, so
``launchbench --help`` stays light.
"""
from __future__ import annotations

import base64
import html as _html
import io
import os
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..base.atomic import write_bytes_atomic
from ..engine import stats
from . import counts as counts_out
from . import documents, schema
from .lanes import render as render_lanes

SMOKE_BANNER = "SMOKE RUN under the CUDA simulator: NOT A MEASUREMENT of GPU launch cost"


# ----------------------------------------------------------------- numbers
@dataclass(frozen=True)
class Level:
    """A variant's (or peer's) launch cost at one arg count."""

    center: float  # mean over rounds of the per-round median (µs)
    low: float
    high: float
    rounds: int
    units: str  # what the interval is over: "rounds" or "samples"


def _by_round(samples, key: str) -> dict:
    """{(name, nargs): {round: [us, ...]}} from raw sample records."""
    out: dict = defaultdict(lambda: defaultdict(list))
    for s in samples:
        if s.get("us") is None:
            continue
        out[(s[key], s["nargs"])][s["round"]].append(float(s["us"]))
    return out


def _level(rounds: dict, confidence: float) -> Level | None:
    if not rounds:
        return None
    if len(rounds) >= 2:
        medians = [statistics.median(v) for _, v in sorted(rounds.items())]
        mean, lo, hi = stats.mean_ci(medians, confidence)
        return Level(mean, lo, hi, len(medians), "rounds")
    (only,) = rounds.values()
    mean, lo, hi = stats.mean_ci(only, confidence)
    return Level(statistics.median(only), lo, hi, 1, "samples")


def levels(result: dict) -> dict:
    """{(variant, nargs): Level} over the complete rounds' samples."""
    conf = result.get("confidence", stats.CONFIDENCE)
    grouped = _by_round(result["samples"], "variant")
    return {k: lvl for k, rounds in grouped.items() if (lvl := _level(rounds, conf))}


def peer_levels(result: dict) -> dict:
    """{(peer, nargs): Level}; peers whose samples are all null are left out."""
    if not result.get("peers"):
        return {}
    conf = result.get("confidence", stats.CONFIDENCE)
    grouped = _by_round(result["peers"]["samples"], "peer")
    return {k: lvl for k, rounds in grouped.items() if (lvl := _level(rounds, conf))}


def variant_names(result: dict) -> list[str]:
    """Reference first, then the others in the order they were given."""
    names = [v["name"] for v in result["variants"]]
    ref = result["reference"]
    return [ref] + [n for n in names if n != ref]


def peer_names(result: dict) -> list[str]:
    if not result.get("peers"):
        return []
    seen: list[str] = []
    for rec in result["peers"]["stats"] + result["peers"]["samples"]:
        if rec["peer"] not in seen:
            seen.append(rec["peer"])
    return seen


def unavailable_peers(result: dict) -> list[str]:
    have = {p for p, _ in peer_levels(result)}
    return [p for p in peer_names(result) if p not in have]


def _fmt_level(lvl: Level | None) -> str:
    if lvl is None:
        return "—"
    return f"{lvl.center:.2f} [{lvl.low:.2f}, {lvl.high:.2f}]"


def _signed(x: float, digits: int = 1) -> str:
    return f"{x:+.{digits}f}"


# ----------------------------------------------------------------- content
@dataclass
class Block:
    kind: str  # "h1" | "h2" | "p" | "warn" | "table" | "list" | "code" | "image"
    text: str = ""
    rows: list | None = None  # table rows (first row = header) or list items


def verdict_lines(result: dict) -> list[str]:
    """The compare tool's own one-line verdicts, grouped per variant, arg counts in order."""
    deltas = sorted(result["deltas"], key=lambda d: (variant_names(result).index(d["variant"]), d["nargs"]))
    return [f"{d['nargs']} args: {d['summary']}" for d in deltas]


def verdict_overview(result: dict) -> list[str]:
    """One line per variant: how many arg counts got which verdict."""
    lines = []
    for name in variant_names(result)[1:]:
        counts: dict = defaultdict(list)
        for d in result["deltas"]:
            if d["variant"] == name:
                counts[d["verdict"]].append(d["nargs"])
        if not counts:
            continue
        parts = [f"{verdict} at {len(ns)} arg count{'s' if len(ns) != 1 else ''} ({', '.join(map(str, sorted(ns)))})"
                 for verdict, ns in sorted(counts.items(), key=lambda kv: schema.VERDICTS.index(kv[0]))]
        lines.append(f"{name} vs {result['reference']}: " + "; ".join(parts))
    return lines


def environment_rows(result: dict) -> list[list[str]]:
    dev, host = result.get("device", {}), result.get("host", {})
    rows = [["field", "value"]]
    for label, value in (
        ("GPU", dev.get("name")),
        ("compute capability", dev.get("compute_capability")),
        ("CUDA driver", dev.get("driver_version")),
        ("CUDA runtime", dev.get("runtime_version")),
        ("host CPU", f"{host.get('cpu')} ({host.get('cpu_count')} logical CPUs)" if host.get("cpu") else None),
        ("platform", host.get("platform")),
        ("host", host.get("hostname")),
        ("Python (parent)", host.get("python")),
        ("created", result.get("created")),
        ("command", " ".join(result.get("command", []))),
    ):
        rows.append([label, "—" if value in (None, "") else str(value)])
    return rows


def variant_rows(result: dict) -> list[list[str]]:
    rows = [["variant", "spec", "kind", "numba-cuda", "git SHA", "Python", "installed"]]
    order = variant_names(result)
    for v in sorted(result["variants"], key=lambda v: order.index(v["name"])):
        name = v["name"] + (" (reference)" if v["name"] == result["reference"] else "")
        spec = v["spec"] + (f" (mechanism {v['mechanism']} on {v['base']})" if v.get("mechanism") else "")
        installed = ", ".join(f"{k} {val}" for k, val in sorted(v.get("installed", {}).items())) or "—"
        rows.append([name, spec, v["kind"], v.get("numba_cuda_version") or "—",
                     v.get("git_sha") or "—", v.get("python") or "—", installed])
    return rows


def settings_text(result: dict) -> str:
    s = result["settings"]
    loops = ", ".join(f"{k} args: {v}" for k, v in sorted(s["loops"].items(), key=lambda kv: int(kv[0])))
    pinned = f"pinned to CPUs {s['affinity']}" if s.get("affinity") else "not pinned to CPUs"
    return (
        f"Kernels launched as {s['launch']}; launches per sample ({'calibrated' if s['calibrated'] else 'given'}): "
        f"{loops}. {s['repeats']} samples per variant and arg count in each of "
        f"{result['rounds_completed']} completed rounds (of {result['rounds_planned']} planned), "
        f"order {s['order']}; {s['warmup']} warm-up launches; garbage collector "
        f"{'off' if s['gc_disabled'] else 'on'} while timing; workers {pinned}."
    )


def build_blocks(result: dict, plot_ref: str | None) -> list[Block]:
    """The whole report as blocks; *plot_ref* is the image's link or data URI (None: no plot)."""
    ref = result["reference"]
    names = variant_names(result)
    lv = levels(result)
    conf_pct = round(100 * result.get("confidence", stats.CONFIDENCE))
    arg_counts = result["settings"]["arg_counts"]
    gpu = result.get("device", {}).get("name") or "unknown GPU"
    blocks = [Block("h1", f"Launch overhead: {', '.join(names)} on {gpu}")]
    if result["simulator"] or not result["measurement"]:
        blocks.append(Block("warn", SMOKE_BANNER))
    if result.get("label"):
        blocks.append(Block("p", result["label"]))
    if result["interrupted"]:
        blocks.append(Block("warn", f"Interrupted after {result['rounds_completed']} of {result['rounds_planned']} "
                                    f"rounds ({result.get('interrupt_reason') or 'no reason recorded'}); "
                                    "the numbers below use the complete rounds only."))

    blocks.append(Block("h2", "Verdict"))
    blocks.append(Block("list", rows=verdict_overview(result) or ["no deltas (only one variant)"]))
    if result["deltas"]:
        blocks.append(Block("code", "\n".join(verdict_lines(result))))

    if plot_ref:
        blocks.append(Block("image", plot_ref))

    blocks.append(Block("h2", f"Launch overhead (µs per launch; mean over rounds [{conf_pct}% CI])"))
    rows = [["args"] + names]
    for n in arg_counts:
        rows.append([str(n)] + [_fmt_level(lv.get((name, n))) for name in names])
    blocks.append(Block("table", rows=rows))
    blocks.append(Block("p", f"Each cell: mean over rounds of the per-round median, with its {conf_pct}% "
                             "confidence interval over rounds (one round: over its samples)."))

    if result["deltas"]:
        blocks.append(Block("h2", f"Deltas vs {ref}"))
        rows = [["args", "variant", "Δ µs", f"{conf_pct}% CI (µs)", "Δ %", f"{conf_pct}% CI (%)", "rounds", "verdict"]]
        for d in sorted(result["deltas"], key=lambda d: (d["nargs"], names.index(d["variant"]))):
            rows.append([str(d["nargs"]), d["variant"], _signed(d["delta_us"], 2),
                         f"[{_signed(d['ci_us'][0], 2)}, {_signed(d['ci_us'][1], 2)}]",
                         _signed(d["delta_pct"]), f"[{_signed(d['ci_pct'][0])}, {_signed(d['ci_pct'][1])}]",
                         str(d["rounds"]), d["verdict"]])
        blocks.append(Block("table", rows=rows))
        blocks.append(Block("p", f"Method: {result['method']}."))

    if result.get("per_arg"):
        blocks.extend(per_arg_blocks(result, conf_pct))

    if result.get("counts"):
        blocks.extend(counts_blocks(result))

    if result.get("peers"):
        pl = peer_levels(result)
        peers = [p for p in peer_names(result) if p not in unavailable_peers(result)]
        blocks.append(Block("h2", "Peers and floor (µs per launch)"))
        if peers:
            rows = [["args", f"{ref} (numba-cuda)"] + peers]
            for n in arg_counts:
                rows.append([str(n), _fmt_level(lv.get((ref, n)))] + [_fmt_level(pl.get((p, n))) for p in peers])
            blocks.append(Block("table", rows=rows))
            blocks.append(Block("p", f"Peers were timed in the {ref} worker, in the same rounds."))
        missing = unavailable_peers(result)
        if missing:
            blocks.append(Block("p", "Not available on this machine: " + ", ".join(missing) + "."))

    if result.get("lanes"):  # rounds spread over GPUs (engine/lanes.py)
        blocks.append(Block("h2", "Lanes (one GPU each)"))
        blocks.append(Block("code", render_lanes(result["lanes"]).rstrip()))
    blocks.append(Block("h2", "Environment"))
    blocks.append(Block("table", rows=environment_rows(result)))
    blocks.append(Block("table", rows=variant_rows(result)))
    blocks.append(Block("h2", "Settings"))
    blocks.append(Block("p", settings_text(result)))
    return blocks


def counts_blocks(result: dict) -> list[Block]:
    """Exact counts beside the µs: totals per variant, count deltas next to the timing deltas, the
    functions that moved and the C callees that changed (output/counts.py makes the rows)."""
    section, arg_counts = result["counts"], result["settings"]["arg_counts"]
    blocks = [Block("h2", "Exact counts per launch"), Block("table", rows=counts_out.totals_rows(section, arg_counts))]
    if section.get("diffs"):
        blocks.append(Block("h3", f"Count deltas vs {section['reference']}, beside the µs"))
        blocks.append(Block("table", rows=counts_out.diff_rows(section, result["deltas"], arg_counts)))
    for title, rows, more in counts_out.function_sections(section, arg_counts):
        blocks.append(Block("h3", f"Functions that moved: {title}"))
        blocks.append(Block("table", rows=rows))
        if more:
            blocks.append(Block("p", f"... and {more} more in the JSON."))
    for title, rows, more in counts_out.callee_sections(section, arg_counts):
        blocks.append(Block("h3", f"C callees that changed: {title}"))
        blocks.append(Block("table", rows=rows))
        if more:
            blocks.append(Block("p", f"... and {more} more in the JSON."))
    blocks.append(Block("list", rows=counts_out.notes(section)))
    return blocks


def per_arg_blocks(result: dict, conf_pct: int) -> list[Block]:
    """The "Per added argument" table: the fitted µs/argument per variant and per delta."""
    settings = result["settings"]
    kind = f"{settings.get('arg_kind', 'array')} arguments, {settings.get('dispatch', 'lazy')} dispatch"
    rows = [["variant / delta", "µs per argument", f"{conf_pct}% CI (µs)", "rounds", "fit"]]
    for name, rec in result["per_arg"].items():
        rows.append([name, _signed(rec["us"], 3), f"[{_signed(rec['ci'][0], 3)}, {_signed(rec['ci'][1], 3)}]",
                     str(rec["n"]), rec["method"]])
    return [Block("h2", "Per added argument"), Block("table", rows=rows),
            Block("p", f"Least-squares slope of launch time over the arg counts ({kind}); a delta's slope is "
                       "fitted to the paired per-round differences, so it keeps the rounds' pairing.")]


# ----------------------------------------------------------------- renderers
def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: list[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if b.kind == "h1":
            out.append(f"# {b.text}")
        elif b.kind == "h2":
            out.append(f"## {b.text}")
        elif b.kind == "h3":
            out.append(f"### {b.text}")
        elif b.kind == "p":
            out.append(b.text)
        elif b.kind == "warn":
            out.append(f"> **{b.text}**")
        elif b.kind == "list":
            out.append("\n".join(f"- {item}" for item in b.rows))
        elif b.kind == "code":
            out.append(f"```\n{b.text}\n```")
        elif b.kind == "image":
            out.append(f"![launch overhead plot]({b.text})")
        elif b.kind == "table":
            header, *body = b.rows
            lines = ["| " + " | ".join(_md_cell(c) for c in header) + " |",
                     "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in body]
            out.append("\n".join(lines))
        else:  # pragma: no cover - programming error
            raise ValueError(b.kind)
    return "\n\n".join(out) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
pre{background:#f6f8fa;padding:1em;overflow-x:auto}
.warn{background:#fff3cd;border:1px solid #e0b000;padding:.7em 1em;font-weight:bold}
img{max-width:100%}
""".strip()


def render_html(blocks: list[Block], title: str) -> str:
    e = _html.escape
    out = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(title)}</title>"
           f"<style>{_CSS}</style></head><body>"]
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            out.append(f"<{b.kind}>{e(b.text)}</{b.kind}>")
        elif b.kind == "p":
            out.append(f"<p>{e(b.text)}</p>")
        elif b.kind == "warn":
            out.append(f"<p class=\"warn\">{e(b.text)}</p>")
        elif b.kind == "list":
            out.append("<ul>" + "".join(f"<li>{e(i)}</li>" for i in b.rows) + "</ul>")
        elif b.kind == "code":
            out.append(f"<pre>{e(b.text)}</pre>")
        elif b.kind == "image":
            out.append(f"<p><img alt=\"launch overhead plot\" src=\"{e(b.text)}\"></p>")
        elif b.kind == "table":
            header, *body = b.rows
            rows = "<tr>" + "".join(f"<th>{e(str(c))}</th>" for c in header) + "</tr>"
            rows += "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in body)
            out.append(f"<table>{rows}</table>")
        else:  # pragma: no cover
            raise ValueError(b.kind)
    out.append("</body></html>\n")
    return "\n".join(out)


# ----------------------------------------------------------------- plot
def plot_png(result: dict) -> bytes:
    """Per-arg bars with CI whiskers, the deltas panel and (if any) the peers panel, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = variant_names(result)
    args = result["settings"]["arg_counts"]
    lv = levels(result)
    pl = peer_levels(result)
    peers = [p for p in peer_names(result) if any((p, n) in pl for n in args)]
    panels = 2 + (1 if peers else 0)
    conf_pct = round(100 * result.get("confidence", stats.CONFIDENCE))

    fig = Figure(figsize=(7.5 * panels if panels < 3 else 18, 5.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, panels)
    title = f"launch overhead on {result.get('device', {}).get('name') or 'unknown GPU'}"
    if result["simulator"] or not result["measurement"]:
        title = "SIMULATOR SMOKE RUN - NOT A MEASUREMENT - " + title
    fig.suptitle(title, fontsize=12, color="firebrick" if result["simulator"] else "black")

    # One colour per variant or peer across all panels.
    palette = matplotlib.colormaps["tab10"].colors
    colors = {name: palette[i % len(palette)] for i, name in enumerate(names + peers)}

    def bars(ax, series: list[tuple[str, dict]], ylabel: str, heading: str, zero_line=False):
        width = 0.8 / max(1, len(series))
        for i, (label, values) in enumerate(series):
            xs, ys, err_lo, err_hi = [], [], [], []
            for j, n in enumerate(args):
                val = values.get(n)
                if val is None:
                    continue
                center, lo, hi = val
                xs.append(j - 0.4 + width * (i + 0.5))
                ys.append(center)
                err_lo.append(max(0.0, center - lo))
                err_hi.append(max(0.0, hi - center))
            if xs:
                ax.bar(xs, ys, width=width * 0.95, label=label, yerr=[err_lo, err_hi], capsize=3,
                       error_kw={"elinewidth": 1}, color=colors.get(label.split(" (")[0]))
        ax.set_xticks(range(len(args)), [str(n) for n in args])
        ax.set_xlabel("device-array arguments")
        ax.set_ylabel(ylabel)
        ax.set_title(heading, fontsize=11)
        if zero_line:
            ax.axhline(0.0, color="black", linewidth=0.8)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)

    level_series = [(name, {n: (l.center, l.low, l.high) for (v, n), l in lv.items() if v == name}) for name in names]
    bars(axes[0], level_series, "µs per launch", f"per-launch cost, {conf_pct}% CI whiskers")

    delta_series = []
    for name in names[1:]:
        values = {d["nargs"]: (d["delta_pct"], d["ci_pct"][0], d["ci_pct"][1])
                  for d in result["deltas"] if d["variant"] == name}
        delta_series.append((name, values))
    if delta_series:
        bars(axes[1], delta_series, f"% vs {result['reference']}",
             f"delta vs {result['reference']}, {conf_pct}% CI whiskers", zero_line=True)
    else:
        axes[1].text(0.5, 0.5, "one variant: no deltas", ha="center", va="center", transform=axes[1].transAxes)
        axes[1].set_axis_off()

    if peers:
        ref = result["reference"]
        series = [(f"{ref} (numba-cuda)", {n: (l.center, l.low, l.high) for (v, n), l in lv.items() if v == ref})]
        series += [(p, {n: (l.center, l.low, l.high) for (q, n), l in pl.items() if q == p}) for p in peers]
        bars(axes[2], series, "µs per launch", "peers and floor (same rounds)")

    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


# ----------------------------------------------------------------- files
def _write_atomic(path: Path, data: bytes) -> None:
    write_bytes_atomic(path, data)


def export(result: dict, *, markdown=None, html=None, plot=None) -> list[str]:
    """Write the requested report files for a compare result; return their paths.

    The Markdown links the PNG (relative path) when *plot* is written too;
    the HTML always embeds the plot (base64), so it is one file to mail.
    """
    documents.validate(result, "compare")
    written: list[str] = []
    try:
        png = plot_png(result) if (plot or html) else None
    except ImportError:  # an environment without matplotlib (e.g. a bare GPU box): text reports only
        print("launchbench: matplotlib is not installed here; writing the Markdown report without a plot "
              "(pip install matplotlib for the PNG and HTML)", file=sys.stderr)
        png, plot, html = None, None, None
    if plot:
        path = Path(plot)
        _write_atomic(path, png)
        written.append(str(path))
    title = f"launchbench report: {', '.join(variant_names(result))}"
    if markdown:
        path = Path(markdown)
        link = os.path.relpath(Path(plot).resolve(), path.resolve().parent) if plot else None
        _write_atomic(path, render_markdown(build_blocks(result, link)).encode("utf-8"))
        written.append(str(path))
    if html:
        path = Path(html)
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        _write_atomic(path, render_html(build_blocks(result, uri), title).encode("utf-8"))
        written.append(str(path))
    return written


def default_outputs(results_path: str) -> dict:
    """results/<run>/compare.json (or .json.gz) -> results/<run>/compare.{md,html,png}."""
    stem = Path(results_path)
    for suffix in (".gz", ".json"):
        stem = stem.with_suffix("") if stem.suffix == suffix else stem
    return {"markdown": f"{stem}.md", "html": f"{stem}.html", "plot": f"{stem}.png"}
