"""The JSON document ``launchbench compare`` writes: its layout and the check of its fields, and the
checks every document kind shares (``check_fields``, ``check_variants``). Its id and version, the
reader and the writer: ``launchbench.output.documents``.

Why a hand-written schema: the document is read back by ``launchbench.output.report``
(Markdown/HTML/plot) and by people months later; a version number plus a
validator that names the first bad field keeps old files readable and bad
files loud, without a jsonschema dependency in variant environments.

Schema ``launchbench.compare`` version 1 (all times in microseconds per launch)::

    {
      "schema": "launchbench.compare",     # documents.KINDS["compare"]
      "schema_version": 1,                 # bump on breaking change (and keep reading the old)
      "created": "YYYY-MM-DDThh:mm:ssZ",   # UTC, ISO 8601
      "command": ["launchbench", "compare", ...],   # argv as run
      "simulator": false,                  # true: CUDA simulator smoke run
      "measurement": true,                 # false whenever simulator is true
      "label": "...",                      # human label; says "NOT A MEASUREMENT" in smoke runs
      "host": {...},                       # launchbench.base.device.host_info() of the parent
      "device": {...},                     # device.device_info() from the reference worker:
                                           #   name, compute_capability, driver_version,
                                           #   runtime_version, simulator
      "settings": {
        "arg_counts": [0, 1, 2, 3, 4],
        "loops": {"0": 20000, ...},        # launches per sample, keyed by str(arg count)
        "calibrated": true,                # loops chosen by timing, not given with --loops
        "sample_target_s": 0.004,          # calibration target per sample
        "repeats": 20,                     # samples per variant, arg count and round
        "rounds": 100,                     # rounds planned
        "warmup": 1000,                    # launches per arg count before timing
        "affinity": [15] | null,           # CPUs the workers are pinned to while timing (null: unpinned)
        "prefetch": 4,                     # rounds set up ahead (optional; absent: 0)
        "gc_disabled": true,               # gc off while timing
        "launch": "[1, 1]",                # launch configuration of the timed kernels
        "order": "interleaved: ...",       # how samples are ordered (see runner.py)
        "peers": false                     # --peers asked for
      },
      "reference": "baseline",             # variant name deltas are taken against
      "variants": [
        {"name": "baseline", "spec": "numba-cuda==0.29.0",
         "kind": "wheel" | "repo" | "env" | "mechanism",
         "mechanism": null | "contextvar" | "delay:0.5us" ...,
         "base": "numba-cuda==0.29.0",     # what the environment holds
         "numba_cuda_version": "0.29.0",   # as imported in the worker
         "git_sha": null | "abc123...",    # repo variants; "+dirty" suffix if modified
         "pins": {"numba": "0.65.1", ...}, # versions requested for the env
         "installed": {"numba": "0.65.1", ...},  # versions imported in the worker
         "python": "3.12.3",
         "env": "/path/to/venv",
         "affinity": [15] | null}          # CPUs the worker was pinned to (optional field)
      ],
      "samples": [                         # every raw sample, complete rounds only; samples of
                                           # one (round, nargs, repeat) are adjacent in time
        {"variant": "v2", "nargs": 0, "round": 0, "repeat": 0, "worker": 12345,
         "us": 11.66}
      ],
      "partial_samples": [...],            # same shape: the unfinished round, if interrupted
      "stats": [                           # per variant and arg count, over all samples
        {"variant": "v2", "nargs": 0, "n": 50, "mean": 11.7, "stdev": 0.1,
         "median": 11.66, "min": 11.5, "max": 12.1}
      ],
      "deltas": [                          # per non-reference variant and arg count; per round the
                                           # median of paired (same repeat) differences
        {"variant": "v2", "nargs": 0, "rounds": 10,
         "n": 10, "units": "rounds" | "pairs",     # what the CI is over (pairs: 1 round, order statistics)
         "delta_us": 1.02, "ci_us": [0.95, 1.09],
         "delta_pct": 9.7, "ci_pct": [9.0, 10.4],
         "verdict": "slower" | "faster" | "indistinguishable" | "inconclusive",
         "summary": "v2: +9.7% [+9.0, +10.4] slower"}
      ],
      "confidence": 0.95,
      "method": "...",                     # one sentence on how deltas/CIs are computed
      "peers": null | {                    # --peers: measured in the reference worker
        "samples": [{"peer": "cupy", "nargs": 0, "round": 0, "us": 4.29 | null}],
        "stats": [{"peer": "cupy", "nargs": 0, "n": 10, "mean": ..., "stdev": ...,
                   "median": ..., "min": ..., "max": ...}]   # n == 0 -> unavailable, values null
      },
      "rounds_planned": 10,
      "rounds_completed": 10,
      "interrupted": false,
      "interrupt_reason": null | "KeyboardInterrupt" | "SIGTERM" | "SIGHUP" | "worker v2 died: ..." |
                          "output refused: cannot write PATH: No space left on device",
      "counts": null | {                   # optional (absent from older documents): exact Python-level counts
        "reference": "baseline",           #   per launch (engine/countdiff.py, workloads/counts.py)
        "reproducible": true,              #   every process of every variant counted the same
        "variants": {"v2": {"0": {"counter": "sys.monitoring", "python": "3.12", "kinds": [...],
                                  "per_launch": {"bytecodes": 929, "calls": 88, ...}, "steady": true,
                                  "processes": 2, "reproducible": true, "functions": [...],
                                  "c_callee_scope": "..."}}},   # since C callees: functions carry c_callees
        "diffs": {"v2": {"0": {"per_launch": {"bytecodes": 65, ...}, "functions": [...], "moved": true,
                               "counts_moved": true, "callees_moved": false, "c_callees": [...]}}},
        "records": [{"variant", "round", "worker", "nargs", "per_launch", "steady"}]
      },
      "timing": {"wall_s": 170.2,          # optional: seconds from the first worker's start,
                 "setup_wait_s": 6.1,      #   waiting for workers' set-up and warm-up,
                 "measure_s": 160.3,       #   measuring (incl. calibration),
                 "teardown_s": 40.2}       #   and waiting for finished workers to exit
    }
"""
from __future__ import annotations

from ..base.errors import UserError

VERDICTS = ("slower", "faster", "indistinguishable", "inconclusive")
VARIANT_KINDS = ("wheel", "repo", "env", "mechanism")

_NUM = (int, float)
MAX_US = 1e9  # a launch's time above this (over 16 minutes) is no measurement
_OPT_NUM = (int, float, type(None))

# field -> allowed types, for each record list; nested checks are in validate().
_TOP = {
    "schema": str,
    "schema_version": int,
    "created": str,
    "command": list,
    "simulator": bool,
    "measurement": bool,
    "label": str,
    "host": dict,
    "device": dict,
    "settings": dict,
    "reference": str,
    "variants": list,
    "samples": list,
    "partial_samples": list,
    "stats": list,
    "deltas": list,
    "confidence": float,
    "method": str,
    "peers": (dict, type(None)),
    "rounds_planned": int,
    "rounds_completed": int,
    "interrupted": bool,
    "interrupt_reason": (str, type(None)),
}
_SETTINGS = {
    "arg_counts": list,
    "loops": dict,
    "calibrated": bool,
    "sample_target_s": _OPT_NUM,
    "repeats": int,
    "rounds": int,
    "warmup": int,
    "affinity": (list, type(None)),
    "gc_disabled": bool,
    "launch": str,
    "order": str,
}
_VARIANT = {
    "name": str,
    "spec": str,
    "kind": str,
    "mechanism": (str, type(None)),
    "base": str,
    "numba_cuda_version": (str, type(None)),
    "git_sha": (str, type(None)),
    "pins": dict,
    "installed": dict,
    "python": (str, type(None)),
    "env": (str, type(None)),
}
_SAMPLE = {"variant": str, "nargs": int, "round": int, "repeat": int, "worker": int, "us": _NUM}
_STAT = {
    "variant": str, "nargs": int, "n": int, "mean": _NUM, "stdev": _NUM,
    "median": _NUM, "min": _NUM, "max": _NUM,
}
_DELTA = {
    "variant": str, "nargs": int, "rounds": int, "delta_us": _NUM, "ci_us": list,
    "delta_pct": _NUM, "ci_pct": list, "verdict": str, "summary": str,
}
_PEER_SAMPLE = {"peer": str, "nargs": int, "round": int, "us": _OPT_NUM}
_PEER_STAT = {
    "peer": str, "nargs": int, "n": int, "mean": _OPT_NUM, "stdev": _OPT_NUM,
    "median": _OPT_NUM, "min": _OPT_NUM, "max": _OPT_NUM,
}


class SchemaError(UserError):
    """A file that is not a valid launchbench document of the kind asked for (output/documents.py)."""


def check_fields(obj, fields: dict, where: str) -> None:
    """*obj* has every field of *fields* with one of its types (the documents' validators share it)."""
    if not isinstance(obj, dict):
        raise SchemaError(f"{where}: expected an object, got {type(obj).__name__}")
    for key, types in fields.items():
        if key not in obj:
            raise SchemaError(f"{where}: missing field {key!r}")
        value = obj[key]
        # bool is an int subclass: refuse it where a number is meant.
        if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
            raise SchemaError(f"{where}.{key}: expected {types}, got a boolean")
        if types is float and isinstance(value, int):
            continue
        if not isinstance(value, types):
            raise SchemaError(f"{where}.{key}: expected {types}, got {type(value).__name__}")


def check_variants(doc: dict, fields: dict, kinds: tuple) -> set:
    """The document's variants have *fields* and a kind of *kinds*, and its reference is one of them;
    returns their names (the compare and counts documents share it)."""
    names = set()
    for i, v in enumerate(doc["variants"]):
        check_fields(v, fields, f"variants[{i}]")
        if v["kind"] not in kinds:
            raise SchemaError(f"variants[{i}].kind: {v['kind']!r} is not one of {kinds}")
        names.add(v["name"])
    if doc["reference"] not in names:
        raise SchemaError(f"reference {doc['reference']!r} is not among the variants {sorted(names)}")
    return names


def check(doc: dict) -> None:
    """The fields of a compare document (its id and version: documents.validate); SchemaError if one is wrong."""
    check_fields(doc, _TOP, "results")
    check_fields(doc["settings"], _SETTINGS, "settings")
    names = check_variants(doc, _VARIANT, VARIANT_KINDS)
    for key, fields in (("samples", _SAMPLE), ("partial_samples", _SAMPLE), ("stats", _STAT)):
        for i, rec in enumerate(doc[key]):
            check_fields(rec, fields, f"{key}[{i}]")
            if rec["variant"] not in names:
                raise SchemaError(f"{key}[{i}].variant: unknown variant {rec['variant']!r}")
            for field in ("us", "mean", "median", "min", "max"):  # times per launch: finite, not negative
                value = rec.get(field)
                if isinstance(value, (int, float)) and not 0 <= value < MAX_US:
                    raise SchemaError(f"{key}[{i}].{field}: {value!r} us is not a time a launch can take")
    for i, rec in enumerate(doc["deltas"]):
        check_fields(rec, _DELTA, f"deltas[{i}]")
        if rec["verdict"] not in VERDICTS:
            raise SchemaError(f"deltas[{i}].verdict: {rec['verdict']!r} is not one of {VERDICTS}")
        for key in ("ci_us", "ci_pct"):
            if len(rec[key]) != 2:
                raise SchemaError(f"deltas[{i}].{key}: expected [low, high]")
            low, high = rec[key]
            if all(isinstance(v, (int, float)) for v in (low, high)) and low > high:
                raise SchemaError(f"deltas[{i}].{key}: the lower bound {low} lies above the upper {high}")
        if rec["verdict"] != "inconclusive" and not doc["samples"]:
            raise SchemaError(f"deltas[{i}].verdict: {rec['verdict']!r} beside no samples (a verdict needs "
                              "the samples it was drawn from)")
    if doc["peers"] is not None:
        check_fields(doc["peers"], {"samples": list, "stats": list}, "peers")
        for i, rec in enumerate(doc["peers"]["samples"]):
            check_fields(rec, _PEER_SAMPLE, f"peers.samples[{i}]")
        for i, rec in enumerate(doc["peers"]["stats"]):
            check_fields(rec, _PEER_STAT, f"peers.stats[{i}]")
    if doc.get("counts") is not None:
        check_fields(doc["counts"], {"reference": str, "variants": dict, "diffs": dict, "reproducible": bool}, "counts")
    if doc["simulator"] and doc["measurement"]:
        raise SchemaError("results: a simulator run cannot be marked as a measurement")
