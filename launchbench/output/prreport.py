"""The ``launchbench pr`` report: a Markdown PR comment and the terminal summary.

Verdicts first (a reviewer reads two lines and knows whether to look
further), then the conformance changes and the cost table, with failure text
and method details folded into ``<details>`` blocks so the comment stays short.
The exact counts (bytecodes, calls and function entries per launch, per side, the
functions that moved and the C callees that changed) sit beside the cost: one verdict line and a section
rendered by output.counts. Pure functions of the pr document (commands/pr.py).
"""
from __future__ import annotations

from ..engine import conformance
from ..engine.countdiff import NOT_VISIBLE
from . import counts as counts_out

CHANGE_TITLES = {
    "broken": "broken (did not fail on the base, fails on the head)",
    "fixed": "fixed (failed on the base, passes on the head)",
    "xfail_to_xpass": "xfail -> xpass (an expected failure now passes: drop its xfail?)",
    "xpass_to_xfail": "xpass -> xfail",
    "newly_skipped": "newly skipped",
    "newly_run": "newly run (skipped on the base)",
    "added": "added",
    "removed": "removed",
}
MAX_TEXT = 3000


def _conformance_line(doc: dict) -> str:
    if doc.get("verdicts", {}).get("build"):
        return f"conformance: BROKEN -- the head {doc['head']['short']} does not build"
    conf = doc.get("conformance")
    if not conf:
        return "conformance: not run"
    ch = conf["changes"]
    counts = ", ".join(f"{len(ch[k])} {k.replace('_', ' ')}" for k in ch if ch[k]) or "no test changed outcome"
    if conf["verdict"] == "unknown":
        why = conf["head"]["reason"] if not conf["head"]["ok"] else conf["base"]["reason"]
        return f"conformance: UNKNOWN -- the suite did not report tests ({why})"
    if conf["verdict"] == conformance.NOT_RUN:
        n = len(conf["head"].get("tests", {}))
        return (f"conformance: not run -- all {n} tests skipped on the head" if n
                else "conformance: not run -- the suite holds no tests")
    return f"conformance: {'BROKEN' if conf['verdict'] == 'broken' else 'ok'} -- {counts}"


def _head_deltas(doc: dict) -> list:
    m = doc.get("measurement")
    if not m:
        return []
    head = doc["head"]["variant"]
    return sorted((d for d in m["deltas"] if d["variant"] == head), key=lambda d: d["nargs"])


def _pct(lo_hi) -> str:
    return f"[{lo_hi[0]:+.1f}, {lo_hi[1]:+.1f}] %" if lo_hi else "[unbounded]"


def _cost_line(doc: dict) -> str:
    ds = _head_deltas(doc)
    if not ds:
        return "cost: not measured"
    us = sorted(d["delta_us"] for d in ds)
    pct = sorted(d["delta_pct"] for d in ds)
    span = (f"{us[0]:+.2f} us per launch ({pct[0]:+.1f} %)" if len(ds) == 1 else
            f"{us[0]:+.2f} to {us[-1]:+.2f} us per launch ({pct[0]:+.1f} to {pct[-1]:+.1f} %) over "
            f"{ds[0]['nargs']}..{ds[-1]['nargs']} args")
    gate = doc.get("gate")
    if not gate:
        return f"cost: {span} vs the base (no gate)"
    word = {"pass": "ok, below", "fail": "SLOWER than", "undecided": "undecided against"}[gate["verdict"]]
    return f"cost: {word} the {gate['fail_if_slower_pct']:g} % gate -- {span}"


def _sides(doc: dict) -> dict:
    """variant name -> 'base (abc1234)' / 'head (def5678)': the counts tables' labels."""
    return {doc[side]["variant"]: f"{side} ({doc[side]['short']})" for side in ("base", "head")
            if doc[side].get("variant")}


def counts_view(doc: dict) -> tuple:
    """(section, deltas) of the measurement's counts with the sides named base and head, or (None, [])."""
    m = doc.get("measurement") or {}
    section = m.get("counts")
    if not section:
        return None, []
    label = _sides(doc)

    def rename(per: dict) -> dict:
        return {label.get(k, k): v for k, v in per.items()}

    view = dict(section, reference=label.get(section["reference"], section["reference"]),
                variants=rename(section["variants"]), diffs=rename(section.get("diffs") or {}))
    deltas = [dict(d, variant=label.get(d["variant"], d["variant"])) for d in m.get("deltas", [])]
    return view, deltas


def _counts_line(doc: dict) -> str | None:
    """One line: how the head's launch differs from the base's in exact counts, or None if not counted."""
    m = doc.get("measurement") or {}
    section = m.get("counts")
    head = doc["head"].get("variant")
    if not section:
        return None if not m else "counts: not counted"
    per = (section.get("diffs") or {}).get(head) or {}
    diffs = sorted(((int(n), d) for n, d in per.items()), key=lambda nd: nd[0])
    if not diffs:
        return "counts: not counted for both sides"
    bad = [d["error"] for _n, d in diffs if "error" in d]
    if bad:
        return f"counts: {bad[0]}"
    exact = "exact" if section.get("reproducible") else "NOT reproducible across processes: approximate"
    moved = [(n, d) for n, d in diffs if d["moved"]]
    if not moved:
        timed = {d["nargs"]: d for d in _head_deltas(doc)}
        if any(counts_out.established(timed.get(n)) for n, _d in diffs):
            return f"counts: identical per launch ({exact}); the cost moved: {NOT_VISIBLE}"
        return f"counts: identical per launch ({exact})"
    changed = [(n, d) for n, d in moved if d.get("callees_moved")]
    callees = ""
    if changed:  # the launch's C callees that changed at the largest arg count, or a move between callers
        changes = changed[-1][1].get("c_callees") or []
        callees = (f"C callees {counts_out.callee_text(changes) if changes else 'moved between functions'} "
                   f"at {', '.join(str(n) for n, _d in changed)} args")
    counted = [(n, d) for n, d in moved if d.get("counts_moved", True)]
    if not counted:
        return f"counts: identical per launch; {callees} ({exact})"
    calls = "calls" if "calls" in counted[0][1]["kinds"] else "c_calls"
    parts = [(f"{counts_out.signed(d['per_launch'].get('bytecodes'))} bytecodes / "
              f"{counts_out.signed(d['per_launch'].get(calls))} {'calls' if calls == 'calls' else 'C calls'} "
              f"at {n} args") if any(d["per_launch"].values()) else
             f"equal totals at {n} args but counts moved between functions" for n, d in counted]
    top = next((f for _n, d in counted for f in d["functions"] if any(f["delta"].values())), None)
    where = (f"; most in {top['function']} ({counts_out.signed(top['delta'].get('bytecodes'))} bytecodes)"
             if top else "")
    return (f"counts: head - base {', '.join(parts)} per launch ({exact}{where})"
            + (f"; {callees}" if callees else ""))


def verdict_lines(doc: dict) -> list:
    lines = [_conformance_line(doc), _cost_line(doc)]
    counted = _counts_line(doc)
    lines += ([counted] if counted else []) + [f"exit: {doc.get('exit_code')}"]
    if doc.get("simulator"):
        lines.insert(0, "CUDA SIMULATOR SMOKE RUN -- the cost is NOT a measurement")
    return lines


def render_text(doc: dict) -> str:
    """Terminal summary: the verdict lines, a blank line, then each changed test."""
    lines = verdict_lines(doc) + [""]
    conf = doc.get("conformance")
    if conf:
        for kind, items in conf["changes"].items():
            for it in items:
                lines.append(f"  {kind}: {it['test']} ({it['base']} -> {it['head']})")
    for d in _head_deltas(doc):
        lines.append(f"  {d['nargs']} args: {d['delta_us']:+.2f} us [{d['ci_us'][0]:+.2f}, {d['ci_us'][1]:+.2f}], "
                     f"{d['delta_pct']:+.1f} % {_pct(d.get('gate_ci_pct', d['ci_pct']))}")
    section, deltas = counts_view(doc)
    text = "\n".join(lines) + "\n"
    if section:
        text += counts_out.text(section, deltas, doc["measurement"]["settings"]["arg_counts"])
    return text


def _fence(text: str) -> str:
    text = text[-MAX_TEXT:].replace("```", "'''")
    return f"```\n{text.rstrip()}\n```"


def render(doc: dict) -> str:
    """The Markdown PR comment."""
    h, b = doc["head"], doc["base"]
    out = [f"## launchbench pr: `{h['short']}` vs base `{b['short']}`", ""]
    out += [f"- **{line}**" for line in verdict_lines(doc)]
    out += ["", f"Head: `{h['sha']}` {h['subject']}  ", f"Base: `{b['sha']}` {b['subject']}"]
    if doc.get("same_code"):
        out += ["", "The head's runtime code is identical to the base's (only tests, CI, docs or the version "
                    "differ): the cost measurement is an A/A check."]
    conf = doc.get("conformance")
    if conf:
        out += ["", "### LC-S conformance", "",
                f"Base: {_counts(conf['base'])}; head: {_counts(conf['head'])}.", ""]
        rows = [(k, it) for k, items in conf["changes"].items() for it in items]
        if rows:
            out += ["| change | test | base | head |", "|---|---|---|---|"]
            out += [f"| {k.replace('_', ' ')} | `{it['test']}` | {it['base'] or '-'} | {it['head'] or '-'} |"
                    for k, it in rows]
            for k, it in rows:
                if it["text"] and k in ("broken", "fixed", "newly_skipped"):
                    side = "head" if k != "fixed" else "base"
                    out += ["", f"<details><summary>{CHANGE_TITLES[k]}: <code>{it['test']}</code> "
                                f"({side} output)</summary>", "", _fence(it["text"]), "", "</details>"]
        else:
            out.append("No test changed outcome.")
    m = doc.get("measurement")
    if m:
        ds = _head_deltas(doc)
        level = {x["nargs"]: x for x in m.get("level", [])}
        out += ["", "### Launch cost (us per launch; head - base, 95 % CI)", "",
                "| args | base (us) | head - base (us) | head - base (%) | gate |", "|---|---|---|---|---|"]
        sides = (doc.get("gate") or {}).get("deltas", {})
        for d in ds:
            lv = level.get(d["nargs"])
            side = sides.get(f"{d['variant']}/{d['nargs']}", "-")
            out.append(f"| {d['nargs']} | {lv['us']:.2f} | " if lv else f"| {d['nargs']} | - | ")
            out[-1] += (f"{d['delta_us']:+.2f} [{d['ci_us'][0]:+.2f}, {d['ci_us'][1]:+.2f}] | "
                        f"{d['delta_pct']:+.1f} {_pct(d.get('gate_ci_pct', d['ci_pct']))} | {side} |")
        section, deltas = counts_view(doc)
        counted = counts_out.markdown(section, deltas, m["settings"]["arg_counts"], heading="###")
        if counted:
            out += ["", counted.rstrip("\n")]
        s = m["settings"]
        out += ["", "<details><summary>How this was measured</summary>", "",
                f"Device: {(m.get('device') or {}).get('name')}. {m['rounds_completed']} of {m['rounds_planned']} "
                f"rounds of fresh worker processes, {s['repeats']} interleaved samples of {s['sample_target_s']} s "
                f"per commit, arg count and round, pinned to CPU {s['affinity']}; deltas are medians of paired "
                "sample differences, intervals over rounds (launchbench compare's method)"
                + ("; with the gate, a confidence sequence valid at the stopping round" if doc.get("gate") else "")
                + ".", "", f"Command: `{' '.join(doc['command'])}`", "", "</details>"]
    if conf:
        out += ["", "<details><summary>Conformance runs</summary>", ""]
        for side in ("base", "head"):
            r = conf[side]
            out.append(f"- {side}: `{' '.join(r['command'][1:4])}` exit {r['returncode']}"
                       + (f" ({r['reason']})" if r.get("reason") else "") + f"; log `{r['log']}`")
        out += ["", "</details>"]
    return "\n".join(out) + "\n"


def _counts(run: dict) -> str:
    if not run["ok"]:
        return f"no result ({run['reason']})"
    return ", ".join(f"{n} {k}" for k, n in run["counts"].items()) or "no tests"
