"""The exact counts beside the µs: tables for the terminal, Markdown reports and PR comments.

Rows only (lists of cells): ``output.report`` wraps them in its blocks, ``text`` and
``markdown`` render them on their own (compare's table, breakdown, the ``pr`` comment).
"""
from __future__ import annotations

from ..engine.countdiff import COUNTS_MOVED, FUNCTIONS_ONLY, NOT_VISIBLE, visibility

#: per-function rows shown per diff (the JSON keeps them all)
TOP_FUNCTIONS = 8
#: C callee changes shown per diff, and per function in its cell
TOP_CALLEES = 8
CALLEES_PER_CELL = 3
#: the reading of a diff whose totals are equal but whose functions' counts moved
BETWEEN_FUNCTIONS = FUNCTIONS_ONLY


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


def reading(d: dict, time_delta: dict | None) -> str:
    """The table's reading of a counts diff beside its µs delta: ``visibility``'s, and a move
    between functions (every total equal) said as such."""
    read = visibility(d, established(time_delta))
    if read == COUNTS_MOVED and not any((d.get("per_launch") or {}).values()):
        return BETWEEN_FUNCTIONS
    return read


def callee_text(changes: list, top: int = CALLEES_PER_CELL) -> str:
    """C callee changes in one cell: 'builtins.len -1, builtins.sum +1 (+2 more)'."""
    shown = ", ".join(f"{c['name']} {_signed(c['delta'])}" for c in changes[:top])
    return shown + (f" (+{len(changes) - top} more)" if len(changes) > top else "")


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
                         _signed(pl.get("c_calls")), _signed(pl.get("entries")), us, reading(d, t)])
    return rows


def function_rows(d: dict, top: int = TOP_FUNCTIONS) -> list:
    """The functions that gained or lost bytecodes, calls or C callees, largest first (the C
    callees column where both sides named them)."""
    calls_key = "calls" if "calls" in d["kinds"] else "c_calls"
    label = "calls" if calls_key == "calls" else "C calls"
    named = bool(d.get("callees_compared"))
    rows = [["function", "module", "Δ bytecodes", f"Δ {label}", "bytecodes (ref → variant)", f"{label} (ref → variant)"]
            + (["Δ C callees"] if named else [])]
    for f in d["functions"][:top]:
        ref, other = f["ref"], f["other"]
        rows.append([f["function"], f["module"], _signed(f["delta"].get("bytecodes")),
                     _signed(f["delta"].get(calls_key)),
                     f"{_plain(ref.get('bytecodes'))} → {_plain(other.get('bytecodes'))}",
                     f"{_plain(ref.get(calls_key))} → {_plain(other.get(calls_key))}"]
                    + ([callee_text(f.get("c_callees") or []) or "-"] if named else []))
    return rows


def _callee_moves(d: dict) -> list:
    """(function row, callee change) for every C callee that changed in some function, largest first."""
    moves = [(f, c) for f in d["functions"] for c in f.get("c_callees") or []]
    moves.sort(key=lambda fc: (-abs(fc[1]["delta"]), fc[1]["name"], fc[0]["module"], fc[0]["function"]))
    return moves


def callee_rows(d: dict, top: int = TOP_CALLEES) -> list:
    """The C functions called that changed: per calling function, gained, lost or called more or
    less often per launch, largest first (a C function that moved between callers shows twice)."""
    rows = [["C callee", "Δ per launch", "calls (ref → variant)", "change", "called from"]]
    for f, c in _callee_moves(d)[:top]:
        rows.append([c["name"], _signed(c["delta"]), f"{_plain(c['ref'])} → {_plain(c['other'])}", c["status"],
                     f"{f['function']} ({f['module']})"])
    return rows


def callee_sections(section: dict, arg_counts: list) -> list:
    """(title, rows, more) per variant and arg count whose C callees changed; *more*: rows not shown."""
    out = []
    for name, per in section.get("diffs", {}).items():
        for nargs in arg_counts:
            d = per.get(str(nargs))
            if not d or "error" in d or not d.get("callees_moved"):
                continue
            more = max(0, len(_callee_moves(d)) - TOP_CALLEES)
            out.append((f"{name} vs {section['reference']}, {nargs} args", callee_rows(d), more))
    return out


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
        lines.append("Python < 3.12: bytecodes from sys.settrace opcode events; calls counted for C functions only; "
                     "C callees named for builtin functions and methods only (not Cython functions such as "
                     "cuda-bindings', classes or callable objects).")
    if not any(r.get("c_callee_scope") for r in recs):
        lines.append("These counts name no C callees (counted before launchbench named them): a change of C "
                     "function with the same call shape is not visible in them.")
    lines.append(f"'{NOT_VISIBLE}': the µs moved but no Python bytecode, call or C function called did.")
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
    for title, rows, more in callee_sections(section, arg_counts)[:2]:
        lines += ["", f"C callees that changed ({title}):"] + _grid(rows)
        if more:
            lines.append(f"... and {more} more (the JSON has them all)")
    return "\n".join(lines) + "\n"


def _md_table(rows: list) -> list:
    # "|" would end a cell; "<locals>" in a qualname would be read as an HTML tag and vanish
    esc = [[str(c).replace("|", "\\|").replace("<", "&lt;") for c in r] for r in rows]
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
    for title, rows, more in callee_sections(section, arg_counts):
        out += ["", f"C callees that changed ({title}):", ""] + _md_table(rows)
        if more:
            out.append(f"\n... and {more} more in the JSON.")
    out += [""] + notes(section)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- launchbench counts: where the Python time goes

#: functions ranked per table (``launchbench counts --top``)
TOP_RANKED = 12
#: modules shown in the per-module table
TOP_MODULES = 8


def _calls_key(rec: dict) -> tuple:
    """The calls a record counts ('calls' on 3.12+, 'C calls' where only C calls are seen) and its label."""
    return ("calls", "calls") if "calls" in rec["kinds"] else ("c_calls", "C calls")


def _share(part, total) -> str:
    return f"{100.0 * part / total:.1f} %" if total else "-"


def ranking_rows(rec: dict, top: int = TOP_RANKED) -> list:
    """One variant's functions at one arg count, most bytecodes per launch first: rank, function,
    module, bytecodes, calls, entries and share of the launch's bytecodes; then the rest and the total."""
    key, label = _calls_key(rec)
    funcs = sorted(rec["functions"], key=lambda f: (-f["bytecodes"], -(f.get(key) or 0), f["module"], f["function"]))
    total = sum(f["bytecodes"] for f in funcs)
    rows = [["#", "function", "module", "bytecodes", label, "entries", "share"]]
    for i, f in enumerate(funcs[:top], 1):
        rows.append([str(i), f["function"], f["module"], _plain(f["bytecodes"]), _plain(f.get(key)),
                     _plain(f.get("entries")), _share(f["bytecodes"], total)])
    rest = funcs[top:]
    if rest:
        rest_b = sum(f["bytecodes"] for f in rest)
        rows.append(["", f"the other {len(rest)} functions", "", _plain(rest_b),
                     _plain(sum(f.get(key) or 0 for f in rest)), _plain(sum(f.get("entries") or 0 for f in rest)),
                     _share(rest_b, total)])
    rows.append(["", "total per launch", "", _plain(total), _plain(sum(f.get(key) or 0 for f in funcs)),
                 _plain(sum(f.get("entries") or 0 for f in funcs)), _share(total, total)])
    return rows


def module_rows(rec: dict, top: int = TOP_MODULES) -> list:
    """The same launch per module: functions run, bytecodes and share, most first."""
    by: dict = {}
    for f in rec["functions"]:
        acc = by.setdefault(f["module"], [0, 0])
        acc[0] += 1
        acc[1] += f["bytecodes"]
    total = sum(b for _n, b in by.values())
    ordered = sorted(by.items(), key=lambda kv: (-kv[1][1], kv[0]))
    rows = [["module", "functions", "bytecodes", "share"]]
    for module, (n, b) in ordered[:top]:
        rows.append([module, str(n), _plain(b), _share(b, total)])
    if len(ordered) > top:
        b = sum(v[1] for _m, v in ordered[top:])
        rows.append([f"the other {len(ordered) - top} modules", str(sum(v[0] for _m, v in ordered[top:])),
                     _plain(b), _share(b, total)])
    return rows


def count_diff_rows(section: dict, arg_counts: list) -> list:
    """Per variant and arg count: bytecodes (reference → variant) and the exact deltas (no µs: counts only)."""
    rows = [["args", "variant", "bytecodes (ref → variant)", "Δ bytecodes", "Δ calls", "Δ C calls", "Δ entries",
             "functions changed", "C callees changed"]]
    ref = section["variants"].get(section["reference"], {})
    for name, per in section.get("diffs", {}).items():
        for nargs in arg_counts:
            d = per.get(str(nargs))
            if d is None:
                continue
            if "error" in d:
                rows.append([str(nargs), name, "-", "-", "-", "-", "-", d["error"], "-"])
                continue
            mine = section["variants"][name][str(nargs)]["per_launch"]["bytecodes"]
            base = ref.get(str(nargs), {}).get("per_launch", {}).get("bytecodes")
            pl = d["per_launch"]
            rows.append([str(nargs), name, f"{_plain(base)} → {_plain(mine)}", _signed(pl.get("bytecodes")),
                         _signed(pl.get("calls")), _signed(pl.get("c_calls")), _signed(pl.get("entries")),
                         str(d["functions_changed"]),
                         str(d["c_callees_changed"]) if d.get("callees_compared") else "not named"])
    return rows


def callee_ranking_rows(rec: dict, top: int = TOP_RANKED) -> list:
    """One variant's C callees at one arg count, most calls per launch first: the C function,
    its calls per launch and the functions that call it."""
    by: dict = {}
    for f in rec["functions"]:
        for name, calls in (f.get("c_callees") or {}).items():
            acc = by.setdefault(name, [0, []])
            acc[0] += calls
            acc[1].append(f["function"])
    ordered = sorted(by.items(), key=lambda kv: (-kv[1][0], kv[0]))
    rows = [["#", "C callee", "calls", "called from"]]
    for i, (name, (calls, callers)) in enumerate(ordered[:top], 1):
        rows.append([str(i), name, _plain(calls), ", ".join(callers[:3]) + (" ..." if len(callers) > 3 else "")])
    rest = ordered[top:]
    if rest:
        rows.append(["", f"the other {len(rest)} C callees", _plain(sum(v[0] for _n, v in rest)), ""])
    rows.append(["", "C calls per launch", _plain(sum(v[0] for _n, v in ordered)), ""])
    return rows


def rank_nargs(doc: dict) -> int:
    """The arg count the rankings are shown at: the largest counted (per-argument costs show most)."""
    return max(doc["settings"]["arg_counts"])


def _whatif_lines(doc: dict) -> list:
    """What each what-if variant changed (hoist-imports: the functions whose imports now run once)."""
    lines = []
    for v in doc["variants"]:
        for rec in v.get("mechanism_details") or []:
            if rec.get("names"):
                lines.append(f"{v['name']} ({v['mechanism']}): {rec['module']} {rec['function']}: "
                             f"{', '.join(rec['names'])} imported once, at set-up")
            for why in rec.get("kept") or []:
                lines.append(f"{v['name']} ({v['mechanism']}): {rec['module']} {rec['function']}: kept {why}")
            if rec.get("refused"):
                lines.append(f"{v['name']} ({v['mechanism']}): {rec['module']} {rec['function']} left as it "
                             f"was: {rec['refused']}")
    return lines


def pass_notes(doc: dict) -> list:
    """How the counts of a ``launchbench counts`` document were made, and whether processes agreed."""
    section = doc.get("counts")
    if not section:
        return []
    recs = [r for per in section["variants"].values() for r in per.values()]
    counters = sorted({f"{r['counter']} (Python {r['python']})" for r in recs})
    s = doc["settings"]
    lines = [f"Counted with {', '.join(counters)}: {s['launches']} launches counted one by one per process and "
             f"arg count, in {'/'.join(map(str, sorted({r['processes'] for r in recs})))} fresh process(es) per "
             f"variant; arguments: {s['arg_kind']}, {s['dispatch']} dispatch; nothing was timed."]
    if section.get("reproducible"):
        lines.append("Every process gave identical counts: the differences are exact.")
    else:
        bad = [f"{name} ({n} args)" for name, per in section["variants"].items() for n, r in per.items()
               if not (r["reproducible"] and r["steady"])]
        lines.append("Counts varied between processes or launches for " + ", ".join(bad)
                     + ": read those as approximate.")
    if any(r["per_launch"].get("calls") is None for r in recs):
        lines.append("Python < 3.12: bytecodes are sys.settrace opcode events and only C calls are counted; "
                     "they do not compare with 3.12's counts. C callees are named for builtin functions and "
                     "methods only: Cython functions (cuda-bindings'), classes and callable objects are not seen.")
    if not any(r.get("c_callee_scope") for r in recs):
        lines.append("These counts name no C callees (a counts document of version 1).")
    if doc.get("simulator"):
        lines.append("CUDA simulator: these are the simulator's launch path, not numba-cuda's. Its launches start "
                     "threads; when one is already running, Thread.start skips a Condition.wait, so threading's "
                     "rows may vary between launches by chance.")
    return lines


def _sections(doc: dict, top: int) -> list:
    """(title, rows or None, lines) blocks of the counts report, for text and Markdown alike."""
    section = doc.get("counts")
    if not section or not section.get("variants"):
        return [("No counts", None, ["no process finished counting"])]
    arg_counts = doc["settings"]["arg_counts"]
    out = [("Per launch: bytecodes / calls (C calls) / Python function entries", totals_rows(section, arg_counts), [])]
    if section.get("diffs"):
        out.append((f"Exact differences vs {section['reference']}", count_diff_rows(section, arg_counts), []))
        for title, rows, more in function_sections(section, arg_counts):
            out.append((f"Functions that moved ({title})", rows,
                        [f"... and {more} more (the JSON has them all)"] if more else []))
        for title, rows, more in callee_sections(section, arg_counts):
            out.append((f"C callees that changed ({title})", rows,
                        [f"... and {more} more (the JSON has them all)"] if more else []))
    nargs = rank_nargs(doc)
    for name, per in section["variants"].items():
        rec = per.get(str(nargs))
        if rec is None:
            continue
        title = f"Where the Python time goes: {name}, {nargs} args, functions by bytecodes per launch"
        d = section.get("diffs", {}).get(name, {}).get(str(nargs))
        if d is not None and "error" not in d and not d.get("counts_moved", d["moved"]):
            same = f"the same functions and counts as {section['reference']}"
            out.append((title, None, [same + ("; only the C callees above changed" if d["moved"] else "")]))
            if not d["moved"]:
                continue
        else:
            out.append((title, ranking_rows(rec, top), []))
            out.append((f"{name}, {nargs} args, by module", module_rows(rec), []))
        if rec.get("c_callee_scope"):
            out.append((f"{name}, {nargs} args, C functions called from Python, most calls per launch first",
                        callee_ranking_rows(rec, top), []))
    whatif = _whatif_lines(doc)
    if whatif:
        out.append(("What the what-if variants changed", None, whatif))
    return out


def report_text(doc: dict, top: int | None = None) -> str:
    """``launchbench counts``' terminal report."""
    top = top or doc["settings"].get("top") or TOP_RANKED
    lines = [doc["label"]]
    for title, rows, extra in _sections(doc, top):
        lines += ["", title + ":"] + (_grid(rows) if rows else []) + extra
    lines += [""] + pass_notes(doc)
    return "\n".join(lines) + "\n"


def report_markdown(doc: dict, top: int | None = None, heading: str = "##") -> str:
    """``launchbench counts``' Markdown report (the same blocks as the terminal's)."""
    top = top or doc["settings"].get("top") or TOP_RANKED
    out = [f"{heading} Exact counts per launch", "", doc["label"]]
    for title, rows, extra in _sections(doc, top):
        out += ["", f"{heading}# {title}", ""]
        if rows:
            out += _md_table(rows)
        out += [("- " + line) if rows is None else line for line in extra]
    out += [""] + pass_notes(doc)
    return "\n".join(out) + "\n"
