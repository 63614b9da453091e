"""Which dependency moves the launch cost between two stacks of one release (pure).

``chain`` walks from stack A to stack B changing one dependency at a time (numba and llvmlite
together: a numba release pins its llvmlite), so each measured step of the series differs from the
previous point in exactly one pin; ``attribute`` reads the series' steps (``history.steps``) back
onto those pins: a dependency is *named* when its step is established (its interval wholly beyond
+/- the threshold) at some argument count; ``counts_reading`` says at which steps the exact counts of a
launch change, which names a dependency that changes what a launch executes even where its time step
is too small to establish. The order is a choice: a change that only matters in
combination with a later one shows at the later one's step (the docs say so).
"""
from __future__ import annotations

#: dependencies that move together (numba X pins llvmlite Y exactly)
COUPLED = (("numba", "llvmlite"),)
ORDER = ("numba", "llvmlite", "numpy", "cuda-core", "cuda-bindings")


def groups(a: dict, b: dict, order=ORDER, coupled=COUPLED) -> list:
    """The dependency groups that differ between *a* and *b*, in *order* (coupled ones together)."""
    names = [d for d in order if d in a or d in b] + sorted(set(a) | set(b) - set(order))
    out, seen = [], set()
    for d in names:
        if d in seen:
            continue
        group = next((tuple(x for x in g if x in a or x in b) for g in coupled if d in g), (d,))
        seen.update(group)
        if any(a.get(x) != b.get(x) for x in group):
            out.append(group)
    return out


def chain(a: dict, b: dict, order=ORDER, coupled=COUPLED) -> list:
    """[(stack, changed group)]: A first (group ()), then one group of A moved to B's versions per
    point, ending at B. A dependency only one side names is added or dropped in its step."""
    out = [(dict(a), ())]
    cur = dict(a)
    for group in groups(a, b, order, coupled):
        cur = dict(cur)
        for d in group:
            if d in b:
                cur[d] = b[d]
            else:
                cur.pop(d, None)
        out.append((cur, group))
    return out


def attribute(points: list, step_recs: list) -> dict:
    """*points*: [(point id, changed group)] in chain order; *step_recs*: the series' steps (each
    with ``commit`` = point id, ``nargs``, ``delta_us``, ``ci_us``, ``established``). Returns
    per group its steps and whether it is named, and the named groups in order."""
    by: dict = {}
    for s in step_recs:
        by.setdefault(s["commit"], []).append(s)
    rows = []
    for pid, group in points[1:]:
        ss = sorted(by.get(pid, []), key=lambda s: s["nargs"])
        rows.append({"point": pid, "dependencies": list(group),
                     "steps": [{k: s[k] for k in ("nargs", "delta_us", "ci_us", "n", "established") if k in s}
                               for s in ss],
                     "measured": bool(ss), "named": any(s["established"] for s in ss)})
    named = [r["dependencies"] for r in rows if r["named"]]
    unmeasured = [r["dependencies"] for r in rows if not r["measured"]]
    if named:
        verdict = "moved by " + "; ".join("+".join(g) for g in named)
    elif unmeasured:
        verdict = "undecided: not measured at " + "; ".join("+".join(g) for g in unmeasured)
    else:
        verdict = "no single dependency's step is established"
    return {"steps": rows, "named": named, "verdict": verdict}


def counted(sb: dict, count_steps: list) -> list:
    """[(dependencies, counts step or None)] per chain step of a stack bisect *sb* (``attribute``'s
    result), from the series' counts steps (``commitcounts.steps``: ``commit`` = point id)."""
    by = {c["commit"]: c for c in count_steps}
    return [(r["dependencies"], by.get(r["point"])) for r in sb["steps"]]


def counts_reading(pairs: list) -> str:
    """Where the exact counts change along the chain (*pairs*: ``counted``'s), or "" when nothing was
    counted."""
    usable = [(g, c) for g, c in pairs if c and "error" not in c]
    if not usable:
        return ""
    moved = ["+".join(g) for g, c in usable if c.get("moved")]
    if not moved:
        text = "exact counts identical at every step"
    else:
        text = ("exact counts change only at " if len(moved) == 1 else "exact counts change at ") + "; ".join(moved)
    unknown = ["+".join(g) for g, c in pairs if not c or "error" in c]
    return text + ("; not comparable at " + "; ".join(unknown) if unknown else "")
