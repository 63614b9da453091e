"""The launch breakdown's text: the single-environment table (``format_breakdown``), the paired
stage deltas' tables (``format_text``) with the exact counts of each variant's full launch beside
the paired µs of ``full`` (output.counts), a stored document's text (``breakdown_text``: a paired
one re-analysed from its samples by launchbench.engine.breakdown) and its Markdown
(``breakdown_markdown``)."""
from __future__ import annotations

from ..engine import breakdown
from ..workloads import stages
from ..workloads.breakdown import NOTES, STAGES
from . import counts as counts_out
from . import documents


def format_breakdown(doc: dict) -> str:
    """A stage-by-arg-count table of µs per launch from a breakdown document."""
    counts = [str(n) for n in doc["arg_counts"]]
    by = doc["stages"]
    lines = [
        f"Launch breakdown, numba-cuda {doc.get('numba_cuda') or '?'} "
        f"(launch path: call(args, {'launch_config' if doc['launch_path'] == 'launch_config' else 'griddim, ...'})), us/launch:",
        "stage".ljust(22) + "".join(f"{n + ' args':>10}" for n in counts),
    ]

    def row(label, values):
        cells = ["-".rjust(10) if v is None else f"{v:10.3f}" for v in values]
        lines.append(label.ljust(22) + "".join(cells))

    for stage in STAGES:
        row(stage, [by[n].get(stage) for n in counts])
    row("sum (excl. configure)", [doc["summary"][n]["sum_of_stages"] for n in counts])
    row("full cfg(*args)", [by[n].get("full") for n in counts])
    row("remainder", [doc["summary"][n]["remainder"] for n in counts])
    row("full k[1, 1](*args)", [by[n].get("full_with_configure") for n in counts])
    lines.append(f"(empty-loop cost subtracted from every stage: {doc['loop_overhead_us']:.3f} us)")
    for key, note in NOTES.items():
        lines.append(f"  {key}: {note}")
    return "\n".join(lines)


LIMIT_FLAGS = {"over": "OVER (interval above the limit)", "under": "ok (every interval below)",
               "unresolved": "unresolved (an interval reaches the limit)",
               "not limited": "(the parts' in-context costs)"}


def _tree_rows(present: list) -> list:
    """(label, quantity) in tree order, children indented under their level."""
    have = set(present)
    rows = []

    def walk(stage, depth, tree):
        if stage not in have:
            return
        rows.append(("  " * depth + stage, stage))
        for kid in tree.get(stage, ()):
            walk(kid, depth + 1, tree)
        if stage in tree and any(k in have for k in tree[stage]):
            rows.append(("  " * (depth + 1) + f"rest:{stage}", f"rest:{stage}"))

    tree = dict(stages.TREE)
    tree.update(stages.SUBTREE)
    for s in stages.OUTSIDE:
        if s in have:
            rows.append((s, s))
    walk("full", 0, tree)
    shown = {qn for _, qn in rows}
    for s in present:  # stages timed without their level (--stages)
        if (s not in shown and s not in (stages.BASELINE, stages.INSITU_BASELINE) and not s.endswith("+launch")
                and not stages.is_parts_stage(s)):
            rows.append((s, s))
    for s in stages.INSITU:
        if f"{s}+launch" in have:
            rows.append((f"insitu:{s}", f"insitu:{s}"))
    for extra in ("remainder", "rest:insitu"):
        rows.append((extra, extra))
    for level in stages.PARTS_LEVELS:
        whole = stages.parts_of(level)
        if whole in have:
            kids = stages.parts_children(level)
            rows.append((whole, whole))
            rows += [(f"  incontext:{c}", f"incontext:{c}") for c in kids]
            rows += [(f"  incontext_extra:{c}", f"incontext_extra:{c}") for c in kids]
            rows += [(f"  {n}:{level}", f"{n}:{level}") for n in ("rest:parts", "interaction", "joint")]
    return rows


def _cell(rec: dict | None, signed: bool = False) -> str:
    if not rec:
        return "-".rjust(15)
    half = (rec["ci"][1] - rec["ci"][0]) / 2
    return (f"{rec['us']:+.3f}" if signed else f"{rec['us']:.3f}").rjust(8) + f"±{half:.3f}".ljust(7)


def full_deltas(analysis: dict | None) -> list:
    """The paired delta of the full launch (stage ``full``) per variant and arg count, shaped as
    compare's deltas ({variant, nargs, delta_us, ci_us}): what the counts' deltas sit beside."""
    out = []
    for name, by_n in ((analysis or {}).get("stage_deltas") or {}).items():
        for n, cell in by_n.items():
            if cell.get("full"):
                out.append({"variant": name, "nargs": int(n), "delta_us": cell["full"]["us"],
                            "ci_us": list(cell["full"]["ci"])})
    return out


COUNTS_NOTE = "(Δ µs: the paired delta of the full launch, stage full; the counts are of that launch)"


def counts_text(doc: dict) -> str:
    """The counts block of a paired breakdown document (empty when it has none)."""
    block = counts_out.text(doc.get("counts"), full_deltas(doc.get("analysis")), doc["settings"]["arg_counts"])
    return block + (COUNTS_NOTE + "\n" if doc.get("counts") and doc["counts"].get("diffs") else "")


def format_text(doc: dict) -> str:
    """Levels per variant, deltas against the reference, additivity, unexplained parts, per-argument
    costs, and the exact counts of each variant's full launch."""
    a = doc["analysis"]
    if not a:
        return "Launch breakdown: no complete round, nothing to report\n" + counts_text(doc)
    counts = doc["settings"]["arg_counts"]
    present = doc["settings"]["stages"]
    rows = _tree_rows(present)
    head = "stage".ljust(34) + "".join(f"{str(n) + ' args':>15}" for n in counts)
    out = []
    if doc.get("simulator"):
        out.append("CUDA SIMULATOR smoke run on a stand-in launch path: NOT A MEASUREMENT")
    out.append(f"Launch breakdown, {doc['rounds_completed']} rounds, arguments: {doc['settings']['arg_kind']}"
               f"{', eager dispatch' if doc['settings'].get('dispatch') == 'eager' else ''} "
               f"(us per launch, mean over rounds ± 95% half-width)")
    for v in doc["variants"]:
        name = v["name"]
        what = ("stand-in launch path" if (v.get("stages") or {}).get("standin")
                else f"numba-cuda {v.get('numba_cuda_version') or '?'}")
        out += ["", f"[{name}] {v.get('spec')} ({what}{', mechanism ' + v['mechanism'] if v.get('mechanism') else ''})", head]
        for label, qn in rows:
            cells = [a["levels"][name].get(str(n), {}).get(qn) for n in counts]
            if any(cells):
                out.append(label.ljust(34) + "".join(_cell(c) for c in cells))
    ref = doc["reference"]
    for name, by_n in a["stage_deltas"].items():
        out += ["", f"[{name} - {ref}] paired deltas", head]
        for label, qn in rows:
            cells = [by_n.get(str(n), {}).get(qn) for n in counts]
            if any(cells):
                out.append(label.ljust(34) + "".join(_cell(c, signed=True) for c in cells))
        out.append("additivity (stage deltas vs the full delta):")
        for n, rec in a["additivity"].get(name, {}).items():
            f, s = rec["full"], rec["sum_of_stages"]
            line = (f"  {n} args: stages sum to {s['us']:+.3f} us, full moved {f['us']:+.3f} "
                    f"[{f['ci'][0]:+.3f}, {f['ci'][1]:+.3f}]: ")
            if rec["adds_up"]:
                g = rec["gap"]
                line += f"adds up (gap {g['us']:+.3f} [{g['ci'][0]:+.3f}, {g['ci'][1]:+.3f}])"
            else:
                gap = rec["gap"]
                line += (f"DOES NOT add up: {gap['us']:+.3f} [{gap['ci'][0]:+.3f}, {gap['ci'][1]:+.3f}] us "
                         f"of the delta is in no stage" + (f" (moved: {', '.join(rec['moved'])})" if rec.get("moved") else ""))
            out.append(line)
            if rec.get("gap_split"):
                o, i = rec["gap_split"]["outside_parts"], rec["gap_split"]["interaction"]
                out.append(f"      the gap = outside the parts {o['us']:+.3f} [{o['ci'][0]:+.3f}, {o['ci'][1]:+.3f}]"
                           f" + the parts' interaction {i['us']:+.3f} [{i['ci'][0]:+.3f}, {i['ci'][1]:+.3f}] us")
    out += ["", f"unexplained parts (a level's rest; limit {stages.UNEXPLAINED_LIMIT_US} us at any arg count):"]
    for name, parts in a["unexplained"].items():
        for part, rec in parts.items():
            flag = "(old remainder)" if part == "remainder" else LIMIT_FLAGS.get(rec.get("verdict"), "")
            lo, hi = rec["ci"]
            out.append(f"  {name:12.12} {part:27} max {rec['max_us']:+.3f} [{lo:+.3f}, {hi:+.3f}] us at "
                       f"{rec['at_nargs']} args  {flag}")
    pa_rows = ["type_dispatch", "typeof", "rest:type_dispatch", "marshal_args", *dict(stages.SUBTREE)["marshal_args"],
               "marshal_imports", "marshal_view", "rest:marshal_to_device", "rest:marshal_args", "param_pack",
               "driver_launch", "rest:kernel_launch", "rest:dispatcher_call", "rest:full", "full"]
    cols = list(a["per_arg"])
    out += ["", "per added argument (us, least-squares slope over arg counts, ± 95% half-width):",
            "stage".ljust(28) + "".join(f"{c[:21]:>22}" for c in cols)]
    for qn in pa_rows:
        cells = [a["per_arg"][c].get(qn) for c in cols]
        if any(cells):
            out.append(qn.ljust(28) + "".join(_cell(c, signed=True).rjust(22) for c in cells))
    return "\n".join(out) + "\n" + counts_text(doc)


def paired(doc: dict) -> bool:
    """A paired breakdown (``--variant``, version 2), not a single environment's (version 1)."""
    return documents.version_of(doc, "breakdown") == documents.PAIRED_BREAKDOWN


def reanalyzed(doc: dict) -> dict:
    """A paired document with its analysis computed afresh from its samples (today's quantities)."""
    settings = doc["settings"]
    names = [v["name"] for v in doc["variants"]]
    analysis = (breakdown.analyze(doc["samples"], names, doc["reference"], settings["arg_counts"], settings["stages"])
                if doc.get("samples") else None)
    return dict(doc, analysis=analysis)


def breakdown_text(doc: dict) -> str:
    """A breakdown document's text: a paired one (``--variant``, schema /2) analysed afresh from its
    samples; a single-environment one (/1) rendered from its stored summary."""
    if not paired(doc):
        return format_breakdown(doc)
    return format_text(reanalyzed(doc))


def breakdown_markdown(doc: dict) -> str:
    """A paired breakdown (with its analysis: ``reanalyzed`` for a stored one) as Markdown: the stage
    tables as text, then the exact counts as tables (totals, count deltas beside the full launch's paired µs with their
    reading, the functions
    that moved, largest first)."""
    if not paired(doc):
        return f"# launchbench breakdown\n\n```\n{format_breakdown(doc)}\n```\n"
    names = ", ".join(f"`{v['name']}` ({v.get('spec')})" for v in doc["variants"])
    out = [f"# launchbench breakdown: {names}", ""]
    if doc.get("simulator"):
        out += ["**CUDA simulator smoke run on a stand-in launch path: NOT A MEASUREMENT**", ""]
    stage_doc = dict(doc, counts=None)  # the counts follow as tables
    out += ["```", format_text(stage_doc).rstrip("\n"), "```", ""]
    counts_md = counts_out.markdown(doc.get("counts"), full_deltas(doc.get("analysis")),
                                    doc["settings"]["arg_counts"], heading="##")
    if counts_md:
        out += [counts_md.rstrip("\n"), "", COUNTS_NOTE]
    return "\n".join(out) + "\n"
