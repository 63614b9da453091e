"""The ``lanes`` section of a compare or history document (engine/lanes.py's report) as text and
Markdown: each lane's GPU, CPU and rounds, its deltas, and whether the lanes agree."""
from __future__ import annotations


def render(section: dict | None) -> str:
    """Plain text / Markdown lines for the ``lanes`` section (empty without lanes)."""
    if not section:
        return ""
    conn = section.get("cuda_connections")
    conn = f"; workers' CUDA connections: {conn['value'] or 'driver default'} ({conn['source']})" if conn else ""
    lines = ["", f"Lanes: {section['n']} (rounds pooled into every interval{conn})", ""]
    lines.append("| lane | GPU | measuring CPU | rounds | wall s |")
    lines.append("|---|---|---|---|---|")
    for lane in section["lanes"]:
        lines.append(f"| {lane['lane']} | {lane['gpu']} ({lane.get('device') or '?'}) | "
                     f"{lane['affinity']} | {lane['rounds_completed']} | {lane['wall_s']} |")
    if section["deltas"]:
        lines += ["", "| lane | variant | args | delta us [95% CI] | delta % [95% CI] |", "|---|---|---|---|---|"]
        for d in section["deltas"]:
            us, pct = d.get("ci_us") or [None, None], d.get("ci_pct") or [None, None]
            lines.append(f"| {d['lane']} | {d['variant']} | {d['nargs']} | {_num(d['delta_us'])} "
                         f"[{_num(us[0])}, {_num(us[1])}] | {_num(d['delta_pct'])} [{_num(pct[0])}, {_num(pct[1])}] |")
    if section["n"] > 1:
        differ = section["lanes_differ"]
        lines += ["", "Lane check (" + section["check_method"] + "): " +
                  ("lanes agree on every delta" if not differ else "lanes DIFFER on " + ", ".join(differ))]
    return "\n".join(lines) + "\n"


def _num(x) -> str:
    return "n/a" if x is None else f"{x:+.3f}"
