"""The text and Markdown of a ``launchbench releases`` document: per point its stack, its cost and its
step to the previous point (95 % CIs, rounds beside) with its exact counts step beside, the refusals
one line each, and the stack bisect's reading."""
from __future__ import annotations

import os

from ..base.atomic import write_text_atomic
from ..base.errors import UserError
from ..engine import stackbisect
from ..environments.ledger import version_key
from .history import counts_cell, counts_where

STACK_ABBREV = {"numba": "nb", "llvmlite": "llvm", "numpy": "np", "cuda-core": "core", "cuda-bindings": "bind"}


def ci_text(v: float, ci: list, signed: bool = False) -> str:
    f = "{:+.2f}" if signed else "{:.2f}"
    return f"{f.format(v)} [{f.format(ci[0])}, {f.format(ci[1])}]"


def stack_cell(stack: dict | None) -> str:
    if not stack:
        return "-"
    return " ".join(f"{STACK_ABBREV.get(k, k)} {v}" for k, v in stack.items())


#: The stack of a series whose points pinned nothing: each release on the newest stack it resolved.
NEWEST = "newest"


def require_releases(doc, where: str, fix: str) -> dict:
    """*doc* when it is a ``launchbench releases`` document, else one line naming *where*, its kind and *fix*."""
    if not isinstance(doc, dict) or doc.get("kind") != "releases":
        kind = doc.get("kind") if isinstance(doc, dict) else None
        raise UserError(f"{where} is not a launchbench releases document (kind {kind!r}); {fix}")
    return doc


def group_series(points: list) -> list[dict]:
    """A document's points as series, ``{project, pins, stack, points}``: one project on one stack, i.e. the
    points that share their project and the pins the run asked for (``user_pins``; none: each release on
    the newest stack it resolves, ``stack`` NEWEST), each series in version order, in order of first
    appearance. Points without a project and version (none are written so) are left out."""
    groups: dict = {}
    for point in points:
        if point.get("project") and point.get("version"):
            pins = tuple(sorted((point.get("user_pins") or {}).items()))
            groups.setdefault((point["project"], pins), []).append(point)
    return [{"project": project, "pins": dict(pins), "points": sorted(found, key=lambda p: version_key(p["version"])),
             "stack": " ".join(f"{dep}=={version}" for dep, version in pins) or NEWEST}
            for (project, pins), found in groups.items()]


#: --arg-kind -> what the empty kernels take (``workloads/argkinds``)
ARG_KINDS = {"array": "float32[1] device arrays", "scalar": "Python floats (float64)",
             "mixed": "arrays and floats alternating", "cupy": "float32[1] CuPy arrays",
             "torch": "float32[1] torch CUDA tensors"}


def arguments_text(settings: dict) -> str:
    """What the series' kernels took: ``empty, N float32[1] CuPy arrays (arg kind cupy)``; a document from
    before --arg-kind took device arrays."""
    kind = settings.get("arg_kind") or "array"
    eager = ", eager dispatch" if settings.get("dispatch") == "eager" else ""
    return f"empty, N {ARG_KINDS.get(kind, kind)} (arg kind {kind}{eager})"


def rows(doc: dict) -> tuple[list, list]:
    """The table; a counts column only where the run counted (documents from before counts, or
    ``--no-counts``, have none)."""
    counts = doc["settings"]["arg_counts"]
    steps = {(s["commit"], s["nargs"]): s for s in doc["steps"]}
    counted = "counts" in doc
    csteps = {c["commit"]: c for c in (doc.get("counts") or {}).get("steps", [])}
    head = ["point", "stack"] + [f"{n} args: µs [95% CI]" for n in counts] + [f"step {n} args (µs)" for n in counts]
    head += ["counts step"] if counted else []
    out = []
    for p in doc["points"]:
        if p.get("refused"):
            continue
        lv = {d["nargs"]: d for d in doc["levels"].get(p["sha"], [])}
        cells = [ci_text(lv[n]["us"], lv[n]["ci_us"]) + f" ({lv[n]['rounds']} r)" if n in lv else "" for n in counts]
        if p.get("variant") == doc["reference"]:
            st = ["first"] + [""] * (len(counts) - 1)
        else:
            st = []
            for n in counts:
                s = steps.get((p["sha"], n))
                st.append(ci_text(s["delta_us"], s["ci_us"], True) + (" <==" if s["established"] else "") if s else "")
        cc = [counts_cell(csteps.get(p["sha"]))] if counted else []
        out.append([p["sha"], stack_cell(p.get("stack"))] + cells + st + cc)
    return head, out


def counts_foot(doc: dict) -> list:
    """One line per point whose counts are unusable, with why (its counts steps read n/a)."""
    return [f"counts unusable: {point}: {why}" for point, why in ((doc.get("counts") or {}).get("unusable") or {}).items()]


def render(doc: dict, markdown: bool = False) -> str:
    head, body = rows(doc)
    title = (f"Launch cost per point, {doc['range']}: {doc['rounds_completed']} rounds; µs per launch "
             f"(mean over rounds of each round's median, 95% CI, rounds); step = paired delta vs the previous "
             f"point, 95% CI; <== established beyond +/-{doc['settings']['threshold_us']} µs; kernels: "
             f"{arguments_text(doc['settings'])}")
    if "counts" in doc:
        title += ("; counts step: Δ bytecodes (bc) and calls per launch vs the previous point, over the arg counts "
                  "(exact; = identical; n/a: unusable)")
    if doc.get("simulator"):
        title = "CUDA SIMULATOR SMOKE RUN -- NOT A MEASUREMENT\n" + title
    est = doc.get("established") or []
    foot = ["Points carrying an established step: " + ", ".join(est) if est else
            "No point carries an established step."]
    for r in doc.get("refused") or []:
        foot.append(f"refused: {r['point']}: {r['reason']}")
    foot += counts_foot(doc)
    sb = doc.get("stack_bisect")
    if sb:
        pairs = stackbisect.counted(sb, (doc.get("counts") or {}).get("steps", []))
        reading = stackbisect.counts_reading(pairs)
        foot.append(f"stack bisect: {sb['verdict']}" + (f"; {reading}" if reading else ""))
        for r, (_group, cstep) in zip(sb["steps"], pairs):
            foot.append(f"  {'+'.join(r['dependencies'])}: " + (", ".join(
                f"{s['nargs']} args {ci_text(s['delta_us'], s['ci_us'], True)}" + (" <==" if s["established"] else "")
                for s in r["steps"]) or "not measured") + (f"; counts {counts_where(cstep)}" if "counts" in doc else ""))
    if markdown:
        lines = [f"# {title}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
        return "\n".join(lines + [""] + [f + "  " for f in foot] + [""])
    widths = [max(len(str(r[i])) for r in body + [head]) for i in range(len(head))]
    fmt = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([title, fmt(head)] + [fmt(r) for r in body] + foot + [""])


def export(doc: dict, output: str) -> list:
    """The Markdown next to the JSON."""
    stem = output[:-len(".json.gz")] if output.endswith(".json.gz") else os.path.splitext(output)[0]
    return [write_text_atomic(stem + ".md", render(doc, markdown=True))]
