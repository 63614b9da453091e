"""The release-series page: launch cost per release, one line per argument count, a panel per series.

Why a page of its own: asv publish graphs each series (``launchbench asv-series``), but its site needs
a server and the ledger; this page is plain Markdown and one SVG, rendered from committed ``launchbench
releases`` documents by pure functions (``render_svg``, ``render_markdown``), so a test can re-render
the committed page from the documents it names and compare byte for byte. The SVG is written by hand
(no plotting library): one panel per series (a project on a stack, ``releases.group_series``), the
measured releases in version order on the x axis, µs per launch from 0 on the y axis, a line per
argument count with its 95 % interval as whiskers. Refused releases are named in the tables, never drawn.
"""
from __future__ import annotations

import math
from xml.sax.saxutils import escape

from .history import counts_cell
from .releases import NEWEST, arguments_text, ci_text, group_series, stack_cell

#: Line colours by argument count (n % 8: one count, one colour in every panel; colour-blind safe, Okabe-Ito).
COLOURS = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#d55e00", "#56b4e9", "#000000", "#f0e442")
WIDTH, PANEL_HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 58, 96, 36, 62


def series_of(doc: dict) -> list[dict]:
    """Per series of a releases document: ``{project, stack, counts, rows}``, a row per release in version
    order: ``{version, stack, levels: {nargs: level record}, refused, established, counts_step}`` (the exact
    counts step from the series' previous measured release; none before the first, or where the run did
    not count: ``counted``)."""
    counts = list((doc.get("settings") or {}).get("arg_counts") or [])
    levels = doc.get("levels") or {}
    established = set(doc.get("established") or [])
    csteps = {(c["previous"], c["commit"]): c for c in (doc.get("counts") or {}).get("steps", [])}
    out = []
    for one in group_series(doc.get("points") or []):
        rows, previous = [], None
        for p in one["points"]:
            lv = {int(r["nargs"]): r for r in levels.get(p["sha"]) or []} if p.get("measured") else {}
            rows.append({"version": p["version"], "stack": p.get("stack"), "refused": p.get("refused"), "levels": lv,
                         "established": p["sha"] in established, "counts_step": csteps.get((previous, p["sha"]))})
            previous = p["sha"] if lv else previous
        out.append({"project": one["project"], "stack": one["stack"], "counts": counts, "rows": rows,
                    "simulator": bool(doc.get("simulator")), "counted": "counts" in doc})
    return out


def stack_words(stack: str) -> str:
    return "each release on its newest stack" if stack == NEWEST else f"pinned {stack}"


def _title(series: dict) -> str:
    smoke = "CUDA simulator smoke run, not a measurement: " if series["simulator"] else ""
    return f"{smoke}{series['project']}, {stack_words(series['stack'])}"


def _nice_step(top: float) -> float:
    """A tick step of 1, 2 or 5 times a power of ten giving four to eight ticks up to *top*."""
    raw = top / 5.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _num(x: float) -> str:
    return f"{x:.1f}"


def _panel(series: dict, y0: float) -> list[str]:
    """The SVG elements of one series' panel, its top at *y0*."""
    rows = [r for r in series["rows"] if r["levels"]]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, PANEL_HEIGHT - TOP - BOTTOM
    highs = [lv["ci_us"][1] for r in rows for lv in r["levels"].values()] or [1.0]
    step = _nice_step(max(highs) * 1.05)
    top = step * math.ceil(max(highs) * 1.05 / step)
    x = lambda i: LEFT + (i + 0.5) * plot_w / max(len(rows), 1)
    y = lambda us: y0 + TOP + plot_h * (1.0 - us / top)
    title = _title(series)
    out = [f'<text x="{LEFT}" y="{_num(y0 + 22)}" class="title">{escape(title)}</text>',
           f'<text x="14" y="{_num(y0 + TOP + plot_h / 2)}" class="axis" transform="rotate(-90 14 '
           f'{_num(y0 + TOP + plot_h / 2)})" text-anchor="middle">µs per launch</text>']
    ticks = int(round(top / step))
    for k in range(ticks + 1):
        us = k * step
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{_num(y(us))}" y2="{_num(y(us))}" class="grid"/>')
        out.append(f'<text x="{LEFT - 6}" y="{_num(y(us) + 4)}" class="tick" text-anchor="end">{us:g}</text>')
    for i, r in enumerate(rows):
        out.append(f'<text x="{_num(x(i))}" y="{_num(y0 + TOP + plot_h + 14)}" class="tick" text-anchor="end" '
                   f'transform="rotate(-45 {_num(x(i))} {_num(y0 + TOP + plot_h + 14)})">{escape(r["version"])}</text>')
    out.append(f'<rect x="{LEFT}" y="{_num(y0 + TOP)}" width="{plot_w}" height="{plot_h}" class="frame"/>')
    for j, n in enumerate(series["counts"]):
        colour = COLOURS[n % len(COLOURS)]
        points = [(x(i), r["levels"][n]) for i, r in enumerate(rows) if n in r["levels"]]
        if not points:
            continue
        path = " ".join(f"{_num(px)},{_num(y(lv['us']))}" for px, lv in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        for px, lv in points:
            lo, hi = lv["ci_us"]
            out.append(f'<line x1="{_num(px)}" x2="{_num(px)}" y1="{_num(y(lo))}" y2="{_num(y(hi))}" '
                       f'stroke="{colour}" stroke-width="1"/>')
            out.append(f'<circle cx="{_num(px)}" cy="{_num(y(lv["us"]))}" r="2.6" fill="{colour}"/>')
        ly = y0 + TOP + 10 + 18 * j
        out.append(f'<line x1="{LEFT + plot_w + 12}" x2="{LEFT + plot_w + 32}" y1="{_num(ly)}" y2="{_num(ly)}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{LEFT + plot_w + 37}" y="{_num(ly + 4)}" class="tick">{n} arg{"" if n == 1 else "s"}'
                   '</text>')
    return out


def render_svg(docs: list) -> str:
    """One SVG: a panel per series of *docs*, in the documents' order."""
    series = [one for doc in docs for one in series_of(doc) if any(r["levels"] for r in one["rows"])]
    height = PANEL_HEIGHT * max(len(series), 1)
    body = [line for k, one in enumerate(series) for line in _panel(one, k * PANEL_HEIGHT)]
    style = ("text{font-family:sans-serif;fill:#222}.title{font-size:14px;font-weight:bold}.tick{font-size:11px}"
             ".axis{font-size:12px}.grid{stroke:#ddd;stroke-width:1}.frame{fill:none;stroke:#888;stroke-width:1}")
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
                      f'viewBox="0 0 {WIDTH} {height}">', f"<style>{style}</style>",
                      f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>', *body, "</svg>", ""])


def _table(series: dict) -> list[str]:
    counts = series["counts"]
    head = ["release", "stack"] + [f"{n} args: µs [95% CI]" for n in counts] + ["rounds", "step"]
    head += ["counts step"] if series.get("counted") else []
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in series["rows"]:
        if r["refused"]:
            lines.append(f"| {r['version']} | refused: {r['refused'].replace('|', '/')} |" + " |" * (len(head) - 2))
            continue
        if not r["levels"]:
            continue
        cells = [ci_text(r["levels"][n]["us"], r["levels"][n]["ci_us"]) if n in r["levels"] else "" for n in counts]
        rounds = sorted({lv.get("rounds") for lv in r["levels"].values()} - {None})
        row = [r["version"], stack_cell(r["stack"]), *cells, "/".join(map(str, rounds)),
               "established" if r["established"] else ""]
        row += [counts_cell(r["counts_step"]).replace("|", "/")] if series.get("counted") else []
        lines.append("| " + " | ".join(row) + " |")
    return lines


def render_markdown(docs: list, sources: list, svg_name: str) -> str:
    """The page: what was measured, the chart (*svg_name*, beside the page), a table per series, the documents."""
    lines = ["# Launch cost per release", "",
             "Rendered by `launchbench series-page` from the `launchbench releases` documents named at the end "
             "(`tests/test_asv_series.py` renders it again and compares): do not edit it by hand. A panel per "
             "series (one project on one stack), the releases in version order, a line per argument count. Each "
             "point is µs per launch, the mean over rounds of each round's median, with its 95 % t interval over "
             "rounds (the whiskers). The releases of one series were measured in the same rounds, interleaved, so "
             "their steps are paired ([Releases](releases.md)); levels from different documents carry their own "
             "runs' conditions. Refused releases (they did not install, import or launch) are in the tables, not "
             "in the chart; \"established\" marks a release whose step from the previous one has a 95 % interval "
             "wholly beyond the document's threshold at some argument count; \"counts step\" (where the run counted) is the "
             "exact change in bytecodes and calls per launch from the previous measured release, over the argument "
             "counts (= identical). The same values as asv results: "
             "`launchbench asv-series`.", "",
             f"![Launch cost per release, one line per argument count]({svg_name})", ""]
    for doc, source in zip(docs, sources):
        device = (doc.get("device") or {}).get("name") or "an unnamed device"
        for one in series_of(doc):
            lines += [f"## {_title(one)}", "",
                      f"Kernels: {arguments_text(doc.get('settings') or {})}, launched `[1, 1]`; "
                      f"{device}, {str(doc.get('created', ''))[:10]}; `{source}`.", ""]
            lines += _table(one) + [""]
    lines.append("Documents read: " + ", ".join(f"`{s}`" for s in sources))
    return "\n".join(lines) + "\n"
