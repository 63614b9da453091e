"""The exact counts beside the µs: tables for the terminal, Markdown reports and PR comments.

Rows only (lists of cells): ``output.report`` wraps them in its blocks, ``text`` and
``markdown`` render them on their own (compare's table, breakdown, the ``pr`` comment).
"""
from __future__ import annotations

from ..engine.countdiff import NOT_VISIBLE, visibility

#: per-function rows shown per diff (the JSON keeps them all)
TOP_FUNCTIONS = 8


def _signed(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float) and value != int(value):
        return f"{value:+.2f}"
    return f"{int(value):+d}"


signed = _signed  # public: the pr comment's counts line (output.prreport)


def _plain(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float) and value != int(value):
        return f"{value:.2f}"
    return str(int(value))


def _calls(rec: dict) -> str:
    """Calls as 'all (C)' where the counter sees every call, 'C only' on Python < 3.12."""
    per = rec["per_launch"]
    if per.get("calls") is None:
        return f"{_plain(per.get('c_calls'))} C"
    return f"{_plain(per['calls'])} ({_plain(per.get('c_calls'))} C)"


def totals_rows(section: dict, arg_counts: list) -> list:
    """args x variant: bytecodes / calls (C calls) / function entries per launch."""
    names = list(section["variants"])
    rows = [["args"] + [f"{n}: bytecodes / calls / entries" for n in names]]
    for nargs in arg_counts:
        cells = []
        for name in names:
            rec = section["variants"][name].get(str(nargs))
            if rec is None:
                cells.append("-")
                continue
            mark = "" if rec["reproducible"] and rec["steady"] else " (varies)"
            cells.append(f"{_plain(rec['per_launch']['bytecodes'])} / {_calls(rec)} / "
                         f"{_plain(rec['per_launch']['entries'])}{mark}")
        rows.append([str(nargs)] + cells)
    return rows


def _time_delta(deltas: list, name: str, nargs: int) -> dict | None:
    for d in deltas or []:
        if d.get("variant") == name and d.get("nargs") == nargs:
            return d
    return None


def established(delta: dict | None) -> bool:
    """A timing delta whose interval excludes zero."""
    if not delta or not delta.get("ci_us"):
        return False
    low, high = delta["ci_us"]
    return low > 0 or high < 0


def diff_rows(section: dict, deltas: list, arg_counts: list) -> list:
    """Per variant and arg count: the exact count deltas next to the µs delta, and how they read together."""
    rows = [["args", "variant", "Δ bytecodes", "Δ calls", "Δ C calls", "Δ entries", "Δ µs [95% CI]", "reading"]]
    for name, per in section.get("diffs", {}).items():
        for nargs in arg_counts:
            d = per.get(str(nargs))
            if d is None:
                continue
            t = _time_delta(deltas, name, nargs)
            us = (f"{t['delta_us']:+.2f} [{t['ci_us'][0]:+.2f}, {t['ci_us'][1]:+.2f}]" if t else "-")
            if "error" in d:
                rows.append([str(nargs), name, "-", "-", "-", "-", us, d["error"]])
                continue
            pl = d["per_launch"]
            rows.append([str(nargs), name, _signed(pl.get("bytecodes")), _signed(pl.get("calls")),
                         _signed(pl.get("c_calls")), _signed(pl.get("entries")), us,
                         visibility(d, established(t))])
    return rows


def function_rows(d: dict, top: int = TOP_FUNCTIONS) -> list:
    """The functions that gained or lost bytecodes or calls, largest first."""
    calls_key = "calls" if "calls" in d["kinds"] else "c_calls"
    label = "calls" if calls_key == "calls" else "C calls"
    rows = [["function", "module", "Δ bytecodes", f"Δ {label}", "bytecodes (ref → variant)", f"{label} (ref → variant)"]]
    for f in d["functions"][:top]:
        ref, other = f["ref"], f["other"]
        rows.append([f["function"], f["module"], _signed(f["delta"].get("bytecodes")),
                     _signed(f["delta"].get(calls_key)),
                     f"{_plain(ref.get('bytecodes'))} → {_plain(other.get('bytecodes'))}",
                     f"{_plain(ref.get(calls_key))} → {_plain(other.get(calls_key))}"])
    return rows


def function_sections(section: dict, arg_counts: list) -> list:
    """(title, rows, more) per variant and arg count whose counts moved; *more*: rows not shown."""
    out = []
    for name, per in section.get("diffs", {}).items():
        for nargs in arg_counts:
            d = per.get(str(nargs))
            if not d or "error" in d or not d["moved"]:
                continue
            more = max(0, d["functions_changed"] - TOP_FUNCTIONS)
            out.append((f"{name} vs {section['reference']}, {nargs} args", function_rows(d), more))
    return out


def notes(section: dict) -> list:
    """What a reader must know to trust the counts: counter, Python, reproducibility."""
    recs = [r for per in section["variants"].values() for r in per.values()]
    if not recs:
        return []
    counters = sorted({f"{r['counter']} (Python {r['python']})" for r in recs})
    procs = sorted({r["processes"] for r in recs})
    lines = [f"Counted with {', '.join(counters)}, in {'/'.join(map(str, procs))} fresh process(es) per variant, "
             "after the round's samples (counting slows the launches it counts)."]
    if section.get("reproducible"):
        lines.append("Every process gave identical counts: the deltas are exact, with no interval.")
    else:
        bad = [f"{name} ({n} args)" for name, per in section["variants"].items() for n, r in per.items()
               if not r["reproducible"]]
        lines.append("Counts differed between processes for " + ", ".join(bad) + ": read those deltas as approximate.")
    if any(r["per_launch"].get("calls") is None for r in recs):
        lines.append("Python < 3.12: bytecodes from sys.settrace opcode events; calls counted for C functions only.")
    lines.append(f"'{NOT_VISIBLE}': the µs moved but no Python bytecode or call did.")
    return lines


def _grid(rows: list) -> list:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def text(section: dict | None, deltas: list, arg_counts: list) -> str:
    """The terminal's counts block (compare, breakdown)."""
    if not section or not section.get("variants"):
        return ""
    lines = ["", "Exact counts per launch (bytecodes / calls / Python function entries):"]
    lines += _grid(totals_rows(section, arg_counts))
    if section.get("diffs"):
        lines += ["", f"Count deltas vs {section['reference']} (exact) beside the µs:"]
        lines += _grid(diff_rows(section, deltas, arg_counts))
    for title, rows, more in function_sections(section, arg_counts)[:2]:
        lines += ["", f"Functions that moved ({title}):"] + _grid(rows)
        if more:
            lines.append(f"... and {more} more (the JSON has them all)")
    return "\n".join(lines) + "\n"


def _md_table(rows: list) -> list:
    esc = [[str(c).replace("|", "\\|") for c in r] for r in rows]
    return ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(esc[0])] + ["| " + " | ".join(r) + " |" for r in esc[1:]]


def markdown(section: dict | None, deltas: list, arg_counts: list, heading: str = "###") -> str:
    """The counts as Markdown (the ``pr`` comment; report.py has its own blocks)."""
    if not section or not section.get("variants"):
        return ""
    out = [f"{heading} Exact counts per launch", ""] + _md_table(totals_rows(section, arg_counts))
    if section.get("diffs"):
        out += ["", f"{heading} Count deltas vs {section['reference']}", ""] + _md_table(diff_rows(section, deltas, arg_counts))
    for title, rows, more in function_sections(section, arg_counts):
        out += ["", f"Functions that moved ({title}):", ""] + _md_table(rows)
        if more:
            out.append(f"\n... and {more} more in the JSON.")
    out += [""] + notes(section)
    return "\n".join(out) + "\n"
