"""The JSON document ``launchbench counts`` writes: its layout and the check of its fields (its id,
version, reader and writer: ``launchbench.output.documents``).

Schema ``launchbench.counts`` version 2 (every count is per launch)::

    {
      "schema": "launchbench.counts", "schema_version": 2,
      "created": "YYYY-MM-DDThh:mm:ssZ", "command": ["launchbench", "counts", ...],
      "simulator": false,                 # true: the simulator's launch path was counted
      "label": "...",                     # what was counted, in words
      "host": {...},                      # device.host_info() of the parent
      "device": {...},                    # the reference worker's device.device_info()
      "settings": {"arg_counts": [0, 2], "arg_kind": "array", "dispatch": "lazy",
                   "processes": 2,        # fresh processes per variant
                   "launches": 20,        # launches counted one by one per process and arg count
                   "top": 12},            # functions ranked in the tables
      "reference": "base",                # the variant the diffs are taken against
      "variants": [{"name", "spec", "kind", "mechanism", "base", "numba_cuda_version", "python",
                    "installed", "env", "git_sha",
                    "mechanism_details": [...]}],   # optional: what a what-if changed (hoist-imports)
      "counts": {                         # engine.countdiff.section
        "reference": "base", "reproducible": true,
        "variants": {"base": {"2": {"counter", "python", "kinds", "per_launch", "steady",
                                    "processes", "reproducible",
                                    "c_callee_scope": "...",   # which C callables the counter names
                                    "functions": [{"module", "function", "bytecodes", ...,
                                                   "c_callees": {"builtins.len": 1}}]}}},
        "diffs": {"v2": {"2": {"kinds", "per_launch", "functions_changed", "moved",
                               "counts_moved", "callees_moved",   # what moved: a count, a C callee
                               "callees_compared": true,          # both sides named their C callees
                               "c_callees": [{"name", "delta", "ref", "other", "status"}],  # the launch's
                               "c_callees_changed": 2,            # per-function C callee changes
                               "functions": [{"module", "function", "delta", "ref", "other", "status",
                                              "c_callees": [...]}]}}},
        "records": [{"variant", "round", "worker", "nargs", "per_launch", "steady"}]
      } | null,                           # null: no process finished counting
      "rounds_completed": 2, "interrupted": false, "interrupt_reason": null,
      "timing": {...}                     # runplan.timing_json
    }

Version 1 (before C callees): no ``c_callee_scope``, ``c_callees``, ``counts_moved``,
``callees_moved``, ``callees_compared`` or ``c_callees_changed``; still read and rendered (its
reports say that it names no C callees).

Counts are exact: no samples, intervals or verdicts. documents.read refuses another schema or
version with one line.
"""
from __future__ import annotations

from .schema import SchemaError, check_fields, check_variants

VARIANT_KINDS = ("wheel", "repo", "env", "mechanism", "wheelfile")

_TOP = {"created": str, "command": list, "simulator": bool, "label": str, "host": dict, "device": dict,
        "settings": dict, "reference": str, "variants": list, "rounds_completed": int, "interrupted": bool,
        "timing": dict}
_SETTINGS = {"arg_counts": list, "arg_kind": str, "dispatch": str, "processes": int, "launches": int, "top": int}
_VARIANT = {"name": str, "spec": str, "kind": str, "base": str}
_PER_NARGS = {"counter": str, "python": str, "kinds": list, "per_launch": dict, "steady": bool, "processes": int,
              "reproducible": bool, "functions": list}
_FUNCTION = {"module": str, "function": str}
_NUM = (int, float)
#: what version 2 adds: per arg count, per function and per diff
_CALLEES_PER_NARGS = {"c_callee_scope": str}
_CALLEES_FUNCTION = {"c_callees": dict}
_CALLEES_DIFF = {"counts_moved": bool, "callees_moved": bool, "callees_compared": bool, "c_callees": list,
                 "c_callees_changed": int}


def _check_callee_map(named: dict, where: str) -> None:
    for name, calls in named.items():
        if not isinstance(calls, _NUM) or isinstance(calls, bool):
            raise SchemaError(f"{where}.c_callees[{name!r}]: expected calls per launch (a number)")


def _check_counts(section: dict, names: set, version: int) -> None:
    check_fields(section, {"reference": str, "variants": dict, "diffs": dict, "reproducible": bool}, "counts")
    for name, per in section["variants"].items():
        if name not in names:
            raise SchemaError(f"counts.variants: unknown variant {name!r}")
        if not isinstance(per, dict):
            raise SchemaError(f"counts.variants.{name}: expected an object per arg count")
        for nargs, rec in per.items():
            where = f"counts.variants.{name}.{nargs}"
            check_fields(rec, _PER_NARGS, where)
            if version >= 2:
                check_fields(rec, _CALLEES_PER_NARGS, where)
            if "bytecodes" not in rec["kinds"] or not isinstance(rec["per_launch"].get("bytecodes"), (int, float)):
                raise SchemaError(f"{where}: no bytecodes per launch")
            for i, f in enumerate(rec["functions"]):
                check_fields(f, _FUNCTION, f"{where}.functions[{i}]")
                if version >= 2:
                    check_fields(f, _CALLEES_FUNCTION, f"{where}.functions[{i}]")
                    _check_callee_map(f["c_callees"], f"{where}.functions[{i}]")
    for name, per in section["diffs"].items():
        if name not in names:
            raise SchemaError(f"counts.diffs: unknown variant {name!r}")
        for nargs, d in per.items():
            if not isinstance(d, dict) or not ("error" in d or {"per_launch", "functions", "moved"} <= set(d)):
                raise SchemaError(f"counts.diffs.{name}.{nargs}: expected a diff (per_launch, functions, moved) "
                                  "or an error")
            if version >= 2 and "error" not in d:
                check_fields(d, _CALLEES_DIFF, f"counts.diffs.{name}.{nargs}")


def check(doc: dict, version: int = 2) -> None:
    """The fields of a counts document of *version* (its id and version: documents.validate);
    SchemaError if one is wrong."""
    check_fields(doc, _TOP, "counts")
    check_fields(doc["settings"], _SETTINGS, "settings")
    names = check_variants(doc, _VARIANT, VARIANT_KINDS)
    if "counts" not in doc:
        raise SchemaError("counts: missing field 'counts'")
    if doc["counts"] is not None:
        _check_counts(doc["counts"], names, version)
