"""Counts records (workloads.counts) summarised per variant and diffed: exact, so no intervals.

A variant's counts are reproducible when every process that counted it gave the same
per-launch totals and the same per-function table (with each function's C callees); a delta
between two variants is then an exact number of bytecodes and calls per launch, per function,
and the C functions called that changed. Where a timing delta is established but nothing
moved, the change lies where counts cannot see: inside C code, in the arguments of C calls,
in the driver or in the machine.
"""
from __future__ import annotations

from ..base.errors import UserError

NOT_VISIBLE = ("not visible to counts: no bytecode, call or C callee moved; the work inside C code, arguments to "
               "C calls, the driver or the machine")
#: the readings of a diff that moved: some count (per launch or per function), or only which C functions are called
COUNTS_MOVED = "counts moved"
CALLEES_MOVED = "C callees moved"


def fingerprint(rec: dict) -> tuple:
    """What must be identical for two counts records to count as the same: the counter, the
    Python, every launch's totals and the per-function table, C callees included."""
    funcs = tuple(sorted((f["module"], f["function"], tuple(f.get(k) for k in rec["kinds"]),
                          tuple(sorted((f.get("c_callees") or {}).items())))
                         for f in rec.get("functions", [])))
    totals = tuple((t["launches"], tuple(t.get(k) for k in rec["kinds"])) for t in rec.get("launch_totals", []))
    return (rec.get("counter"), rec.get("python"), tuple(rec["kinds"]), totals, funcs)


def comparable(a: dict, b: dict) -> str | None:
    """Why two counts records cannot be diffed (another counter or Python minor version), or None."""
    if a.get("counter") != b.get("counter") or a.get("python") != b.get("python"):
        return (f"counts from {a.get('counter')} on Python {a.get('python')} and {b.get('counter')} on Python "
                f"{b.get('python')} do not compare (bytecodes differ between Python versions)")
    return None


def _by_function(rec: dict) -> dict:
    return {(f["module"], f["function"]): f for f in rec.get("functions", [])}


def _num(value) -> float:
    return value if isinstance(value, (int, float)) else 0


def _clean(value):
    """An exact per-launch figure: ints stay ints; floats keep 4 decimals."""
    if isinstance(value, float):
        value = round(value, 4)
        return int(value) if value == int(value) else value
    return value


def callees_compared(a: dict, b: dict) -> bool:
    """Whether both records name their C callees, alike (records before C callees name none)."""
    return bool(a.get("c_callee_scope")) and a.get("c_callee_scope") == b.get("c_callee_scope")


def callee_changes(ref: dict | None, other: dict | None) -> list:
    """The C callees whose calls per launch differ between two {name: calls} maps, largest change
    first: ``gained`` (not called in *ref*), ``lost`` (not called in *other*) or ``changed``."""
    ref, other = ref or {}, other or {}
    out = []
    for name in set(ref) | set(other):
        delta = _clean(_num(other.get(name)) - _num(ref.get(name)))
        if delta:
            out.append({"name": name, "delta": delta, "ref": ref.get(name, 0), "other": other.get(name, 0),
                        "status": "gained" if name not in ref else "lost" if name not in other else "changed"})
    out.sort(key=lambda c: (-abs(c["delta"]), c["name"]))
    return out


def _launch_callees(rec: dict) -> dict:
    """Every C callee of a record's launch, summed over the functions that call it."""
    out: dict = {}
    for f in rec.get("functions", []):
        for name, calls in (f.get("c_callees") or {}).items():
            out[name] = _clean(out.get(name, 0) + calls)
    return out


def diff(ref: dict, other: dict, top: int | None = None) -> dict:
    """*other* minus *ref*: per-launch totals and, per function, the kinds and the C callees that
    moved, largest bytecode change first (then calls, then name); ``c_callees``: the launch's C
    callees that changed, summed over functions. ``moved``: any total, any function's count or
    any function's C callees moved, so a move between functions with equal totals is one
    (``counts_moved``; ``callees_moved``: a C callee moved). Raises UserError when they do not compare."""
    why = comparable(ref, other)
    if why:
        raise UserError(why)
    kinds = [k for k in ref["kinds"] if k in other["kinds"]]
    named = callees_compared(ref, other)
    totals = {k: _clean(_num(other["per_launch"].get(k)) - _num(ref["per_launch"].get(k))) for k in kinds}
    a, b = _by_function(ref), _by_function(other)
    rows = []
    for key in set(a) | set(b):
        fa, fb = a.get(key, {}), b.get(key, {})
        delta = {k: _clean(_num(fb.get(k)) - _num(fa.get(k))) for k in kinds}
        callees = callee_changes(fa.get("c_callees"), fb.get("c_callees")) if named else []
        if any(delta.values()) or callees:
            rows.append({"module": key[0], "function": key[1], "delta": delta,
                         "ref": {k: fa.get(k, 0) for k in kinds}, "other": {k: fb.get(k, 0) for k in kinds},
                         "c_callees": callees,
                         "status": "added" if not fa else "removed" if not fb else "changed"})
    rows.sort(key=lambda r: (-abs(r["delta"].get("bytecodes", 0)), -abs(r["delta"].get("calls", 0) or 0),
                             -abs(r["delta"].get("c_calls", 0)), -len(r["c_callees"]), r["module"], r["function"]))
    counts_moved = any(totals.values()) or any(any(r["delta"].values()) for r in rows)
    callees_moved = any(r["c_callees"] for r in rows)
    return {"kinds": kinds, "per_launch": totals, "functions": rows[:top] if top else rows,
            "functions_changed": len(rows), "callees_compared": named,
            "c_callees": callee_changes(_launch_callees(ref), _launch_callees(other)) if named else [],
            "c_callees_changed": sum(len(r["c_callees"]) for r in rows),
            "counts_moved": counts_moved, "callees_moved": callees_moved, "moved": counts_moved or callees_moved}


def summarize(records: list, reference: str, names: list) -> dict:
    """compare's and breakdown's ``counts`` section from the engine's records ({variant, round,
    worker, nargs, counts}): per variant and arg count the counts and whether every process
    agreed; per non-reference variant and arg count the exact diff against the reference."""
    grouped: dict = {}
    for rec in records:
        grouped.setdefault((rec["variant"], rec["nargs"]), []).append(rec)
    per_variant: dict = {}
    for (name, nargs), recs in sorted(grouped.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        prints = {fingerprint(r["counts"]) for r in recs}
        first = recs[0]["counts"]
        per_variant.setdefault(name, {})[str(nargs)] = {
            "counter": first["counter"], "python": first["python"], "kinds": first["kinds"],
            **({"c_callee_scope": first["c_callee_scope"]} if first.get("c_callee_scope") else {}),
            "per_launch": first["per_launch"], "steady": all(r["counts"].get("steady") for r in recs),
            "processes": len(recs), "reproducible": len(prints) == 1,
            "functions": first["functions"],
        }
    diffs: dict = {}
    for name in names:
        if name == reference or name not in per_variant or reference not in per_variant:
            continue
        for nargs, mine in per_variant[name].items():
            ref = per_variant[reference].get(nargs)
            if ref is None:
                continue
            why = comparable(ref, mine)
            diffs.setdefault(name, {})[nargs] = ({"error": why} if why else diff(ref, mine))
    return {"reference": reference, "variants": per_variant, "diffs": diffs,
            "reproducible": all(v["reproducible"] for per in per_variant.values() for v in per.values())}


def section(records: list, reference: str, names: list) -> dict | None:
    """A document's ``counts`` (compare, counts): ``summarize``, plus each process's per-launch
    totals (``records``), so that a reader sees every process's numbers; None without records."""
    if not records:
        return None
    out = summarize(records, reference, names)
    out["records"] = [{"variant": r["variant"], "round": r["round"], "worker": r["worker"], "nargs": r["nargs"],
                       "per_launch": r["counts"]["per_launch"], "steady": r["counts"]["steady"]}
                      for r in records]
    return out


def moved_reading(diffs: list) -> str | None:
    """What moved in some of *diffs* (one per arg count): COUNTS_MOVED where a count moved,
    CALLEES_MOVED where only C callees did; None where nothing did. A diff from before C
    callees (no ``counts_moved``) that moved reads COUNTS_MOVED."""
    moved = [d for d in diffs if d and d.get("moved")]
    if not moved:
        return None
    return COUNTS_MOVED if any(d.get("counts_moved", True) for d in moved) else CALLEES_MOVED


#: the reading where some functions' counts moved and every per-launch total stayed the same
FUNCTIONS_ONLY = "counts moved between functions (totals equal)"


def visibility(count_delta: dict | None, time_established: bool) -> str:
    """How a timing delta and a counts delta read together, in words for the tables:
    ``counts moved``, ``C callees moved`` (the same counts, other C functions called),
    FUNCTIONS_ONLY (every total the same, some functions' counts moved), the NOT_VISIBLE note (time
    moved, nothing counted did) or ``no change``."""
    moved = moved_reading([count_delta])
    totals = (count_delta or {}).get("per_launch")
    if moved == COUNTS_MOVED and isinstance(totals, dict) and totals and not any(totals.values()):
        # which functions ran shifted (the simulator's threading rows do, by chance) but every total
        # is the same: "counts moved" beside a row of zeros would contradict itself
        return FUNCTIONS_ONLY
    if moved:
        return moved
    if time_established:
        return NOT_VISIBLE
    return "no change"
