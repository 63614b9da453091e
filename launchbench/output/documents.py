"""Every JSON document launchbench writes: its kind, schema id and version, a validator, one reader.

Why one module: documents are read back by ``launchbench report``, ``pr``'s re-render, ``mechanisms
--pool`` and people months later (results/ keeps them); one table of kinds, each with the versions
this launchbench still reads and a check of the fields its readers use, keeps old files readable and
bad ones loud in one line (as pyperf's ``_bench.py`` and asv's ``results.py`` do).

A kind writes its version in one of three ways (``Kind.style``), kept as the files already in
results/ have them: ``field`` (``"schema": ID, "schema_version": N``), ``suffix`` (``"schema":
"ID/N"``) or ``both``. Four ids are written in a layer below this one and imported from there (a
worker process or the engine may not import output/): history (``engine/history.py``), the
single-environment breakdown (``workloads/breakdown.py``), the mlir breakdown
(``workloads/stages_mlir.py``) and the LC-S bench (``workloads/lcs/fixture.py``).

Writers take their ``schema`` fields from ``stamp(kind)``; readers call ``read(path, kind)``
(``load`` + ``validate``). The layouts: compare in ``output/schema.py``, counts in
``output/countsdoc.py``, the others in their writers.
"""
from __future__ import annotations

import gzip
import json
import math
import os
import stat
import zlib
from dataclasses import dataclass
from typing import Callable

from ..base.atomic import read_json, write_json_atomic
from ..base.errors import UserError
from ..base.outpaths import check_regular
from ..engine import history as history_engine
from ..workloads import breakdown as breakdown_single
from ..workloads import stages_mlir
from ..workloads.lcs import fixture as lcs
from . import countsdoc, schema
from .schema import SchemaError, check_fields

FIELD, SUFFIX, BOTH = "field", "suffix", "both"
#: The breakdown's version written by ``breakdown --variant`` (paired); one environment's is 1.
PAIRED_BREAKDOWN = 2


@dataclass(frozen=True)
class Kind:
    """One kind of document: ``schema`` is its id without the version; ``checks`` maps each version
    this launchbench reads to the check of its fields (the highest is the one written)."""
    name: str
    schema: str
    style: str
    checks: dict
    noun: str      # how errors name the file: "{noun} file PATH ..."
    writer: str    # the command that writes it, PATH where the file goes: the fix in errors

    @property
    def version(self) -> int:
        return max(self.checks)


def _split(text: str) -> tuple:
    """"launchbench.x/3" -> ("launchbench.x", 3), for an id written below this layer."""
    sid, _, version = text.rpartition("/")
    return sid, int(version)


def _body(fields: dict, nested: dict | None = None) -> Callable:
    """A check of top-level *fields* (and of the objects *nested* names: field -> its fields)."""
    def check(doc: dict, where: str) -> None:
        check_fields(doc, fields, where)
        for key, sub in (nested or {}).items():
            if doc[key] is not None:
                check_fields(doc[key], sub, key)
    return check


def _named(key: str, fields: dict) -> Callable:
    """Each record of the list *key* has *fields* and names a variant of the document."""
    def check(doc: dict, where: str) -> None:
        names = set()
        for i, rec in enumerate(doc[key]):
            check_fields(rec, fields, f"{key}[{i}]")
            names.add(rec["name"])
        if doc["reference"] not in names:
            raise SchemaError(f"{where}: reference {doc['reference']!r} is not among the {key} {sorted(names)}")
    return check


def _optional(key: str, fields: dict) -> Callable:
    """The object *key* has *fields* where the document has it (a field later writers added)."""
    def check(doc: dict, where: str) -> None:
        if key in doc:
            check_fields(doc[key], fields, key)
    return check


def _all(*checks) -> Callable:
    def check(doc: dict, where: str) -> None:
        for c in checks:
            c(doc, where)
    return check


def _compare(doc: dict, where: str) -> None:
    schema.check(doc)


def _counts_v1(doc: dict, where: str) -> None:
    countsdoc.check(doc, 1)


def _counts(doc: dict, where: str) -> None:
    countsdoc.check(doc, 2)


_OPT_DICT = (dict, type(None))
_SINGLE_BREAKDOWN = _body({"numba_cuda": (str, type(None)), "arg_counts": list, "settings": dict, "stages": dict,
                           "summary": dict, "samples_us": dict})
_PAIRED_BREAKDOWN = _all(
    _body({"created": str, "command": list, "simulator": bool, "measurement": bool, "settings": dict,
           "reference": str, "variants": list, "samples": list, "partial_samples": list, "rounds_completed": int,
           "interrupted": bool}, {"settings": {"arg_counts": list, "stages": list}}),
    _named("variants", {"name": str, "spec": str}))
_HISTORY_COMMON = {"kind": str, "command": list, "created": str, "simulator": bool, "measurement": bool,
                   "range": str, "settings": dict, "reference": str, "samples": list, "stats": list, "deltas": list,
                   "steps": list, "rounds_completed": int, "interrupted": bool}
_HISTORY_COMMITS = _body({**_HISTORY_COMMON, "clone": str, "commits": list}, {"settings": {"arg_counts": list}})
# launchbench releases writes history's layout with released versions or wheels for commits: no clone
_HISTORY_RELEASES = _all(
    _body({**_HISTORY_COMMON, "clone": type(None), "points": list, "levels": dict, "refused": list,
           "established": list}, {"settings": {"arg_counts": list}}),
    _optional("counts", {"per_commit": dict, "steps": list, "unusable": dict}))  # absent: not counted (or older)


def _HISTORY(doc: dict, where: str) -> None:
    (_HISTORY_RELEASES if doc.get("kind") == "releases" else _HISTORY_COMMITS)(doc, where)
_BISECT = _body({"kind": str, "command": list, "created": str, "simulator": bool, "clone": str, "good": str,
                 "bad": str, "commits": list, "stages": list, "culprit": _OPT_DICT})  # settings: absent from older ones
_PR = _body({"schema_version": int, "command": list, "created": str, "simulator": bool, "clone": str,
             "head": dict, "base": dict, "conformance": _OPT_DICT, "measurement": _OPT_DICT, "gate": _OPT_DICT,
             "verdicts": dict, "exit_code": int},
            {"head": {"sha": str, "short": str}, "base": {"sha": str, "short": str},
             "measurement": {"samples": list, "stats": list, "deltas": list}})
_MECHANISMS = _body({"tool": str, "command": list, "params": dict, "analysis": dict},
                    {"params": {"mechanisms": list, "arg_counts": list}})
_PEERS = _body({"arg_counts": list, "settings": dict, "results": dict, "samples_us": dict, "analysis": dict,
                "unavailable": dict})
_MLIR_BREAKDOWN = _body({"numba_cuda_mlir": (str, type(None)), "arg_counts": list, "settings": dict,
                         "stages": dict, "summary": dict, "samples_us": dict})
_LCS_BENCH = _body({"launches": int, "repeats": int, "results": list})
_LOCK_PROBE = _body({"kind": str, "command": list, "created": str, "measurement": bool, "series": str,
                     "settings": dict, "points": list, "refused": list},
                    {"settings": {"timeout_s": (int, float), "loops": int, "repeats": int}})
_ASV_PLAN = _body({"command": list, "created": str, "clone": str, "range": str, "settings": dict, "commits": list,
                   "timed": list})

_HISTORY_ID = history_engine.SCHEMA
_BREAKDOWN_ID, _BREAKDOWN_SINGLE = _split(breakdown_single.SCHEMA)
_MLIR_ID, _MLIR_VERSION = _split(stages_mlir.SCHEMA)
_LCS_ID, _LCS_VERSION = _split(lcs.BENCH_SCHEMA)

KINDS = {k.name: k for k in (
    Kind("compare", "launchbench.compare", FIELD, {1: _compare}, "results", "launchbench compare --output PATH"),
    # 2: C callees per function (c_callees, c_callee_scope) and in the diffs (counts_moved, callees_moved, ...)
    Kind("counts", "launchbench.counts", FIELD, {1: _counts_v1, 2: _counts}, "counts", "launchbench counts -o PATH"),
    # version 1: one environment's stages (launchbench breakdown); 2: paired (breakdown --variant)
    Kind("breakdown", _BREAKDOWN_ID, SUFFIX, {_BREAKDOWN_SINGLE: _SINGLE_BREAKDOWN, PAIRED_BREAKDOWN: _PAIRED_BREAKDOWN},
         "breakdown", "launchbench breakdown --output PATH"),
    Kind("breakdown-mlir", _MLIR_ID, SUFFIX, {_MLIR_VERSION: _MLIR_BREAKDOWN}, "mlir breakdown",
         "python -m launchbench.workloads.stages_mlir --output PATH"),
    Kind("history", _HISTORY_ID, BOTH, {history_engine.SCHEMA_VERSION: _HISTORY}, "history",
         "launchbench history --output PATH"),
    Kind("bisect", f"{_HISTORY_ID}-bisect", SUFFIX, {history_engine.SCHEMA_VERSION: _BISECT}, "bisect",
         "launchbench bisect --output PATH"),
    Kind("pr", "launchbench.pr", BOTH, {1: _PR}, "pr", "launchbench pr REF --out DIR (DIR/pr.json)"),
    # 2: deltas are medians of paired differences (order-statistic CI)
    # 3: mechanisms switched in place between blocks (no uninstall in between), per-block class_modified,
    #    a longer warm-up after a class write (params.warmup_class_write); samples and analysis as in 2
    # 4: measured in params.processes fresh processes (`processes`: each with its own rounds), deltas and
    #    levels are means over processes with t intervals; analysis_scope "process" or "processes"; stock
    #    is measured only with contextvar
    Kind("mechanisms", "launchbench.mechanisms", SUFFIX, {2: _MECHANISMS, 3: _MECHANISMS, 4: _MECHANISMS},
         "mechanisms", "launchbench mechanisms -o PATH"),
    Kind("peers", "launchbench.peers", SUFFIX, {1: _PEERS}, "peers", "launchbench peers --output PATH"),
    Kind("lcs-bench", _LCS_ID, SUFFIX, {_LCS_VERSION: _LCS_BENCH}, "LC-S bench",
         "python -m launchbench.workloads.lcs --bench --json PATH"),
    Kind("asv-plan", "launchbench.asv-plan", SUFFIX, {1: _ASV_PLAN}, "asv plan",
         "launchbench asv-plan CLONE A..B -o PLAN (PLAN.json)"),
    # per numba-cuda-mlir release: does a hot launch complete while the global compiler lock is held
    # (a plain kernel, then with a planner registered a plain and an LC-S one), and its cost
    Kind("lock-probe", "launchbench.lock-probe", SUFFIX, {1: _LOCK_PROBE}, "lock probe",
         "launchbench lock-probe SERIES -o PATH"),
)}


def kind(name: str) -> Kind:
    return KINDS[name]


def schema_id(name: str, version: int | None = None) -> str:
    """What a writer puts in ``schema`` (the id, with ``/N`` unless the version is a field of its own)."""
    k = KINDS[name]
    return k.schema if k.style == FIELD else f"{k.schema}/{version or k.version}"


def stamp(name: str, version: int | None = None) -> dict:
    """The ``schema`` fields a writer starts its document with."""
    k = KINDS[name]
    out = {"schema": schema_id(name, version)}
    if k.style != SUFFIX:
        out["schema_version"] = version or k.version
    return out


def kind_of(doc) -> str | None:
    """The kind whose id *doc*'s ``schema`` names (any version), or None."""
    got = str(doc.get("schema", "")) if isinstance(doc, dict) else ""
    for k in KINDS.values():
        if got == k.schema or got.startswith(k.schema + "/"):
            return k.name
    return None


def version_of(doc: dict, name: str) -> int | None:
    """The version *doc* says it is, as its kind writes it (None: not this kind, or unreadable)."""
    k, got = KINDS[name], str(doc.get("schema", ""))
    if k.style == FIELD:
        return doc.get("schema_version") if got == k.schema else None
    sid, _, version = got.rpartition("/")
    return int(version) if sid == k.schema and version.isdigit() else None


def validate(doc, name: str, where: str | None = None) -> dict:
    """*doc* if it is a document of kind *name* in a version this launchbench reads, else one line
    (SchemaError) naming *where* (the file; by default the kind), the problem and the fix."""
    k = KINDS[name]
    label = where or k.noun
    if not isinstance(doc, dict):
        raise SchemaError(f"{label}: expected a JSON object at the top level; pass a file `{k.writer}` wrote")
    version = version_of(doc, name)
    if version is None and (k.style != FIELD or doc.get("schema") != k.schema):
        raise SchemaError(f"{label}: not a {k.schema} document (schema={doc.get('schema')!r}); "
                          f"pass a file `{k.writer}` wrote")
    if not isinstance(version, int) or isinstance(version, bool) or version not in k.checks:
        given = f"schema_version {version!r}" if k.style == FIELD else f"schema {doc.get('schema')!r}"
        reads = ", ".join(map(str, sorted(k.checks)))
        if isinstance(version, int) and not isinstance(version, bool) and version > k.version:
            raise SchemaError(f"{label}: {given} is newer than this launchbench reads (version {reads}); "
                              "upgrade launchbench to read it")
        raise SchemaError(f"{label}: {given} is not supported (this launchbench reads version {reads}); "
                          "use the launchbench that wrote it")
    if k.style == BOTH and doc.get("schema_version", version) != version:
        raise SchemaError(f"{label}: schema {doc['schema']!r} and schema_version {doc['schema_version']!r} "
                          f"disagree; pass a file `{k.writer}` wrote, unchanged")
    try:
        k.checks[version](doc, k.noun)
    except SchemaError as exc:
        if where is None:
            raise
        raise SchemaError(f"{where}: {exc}; pass a file `{k.writer}` wrote, unchanged") from None
    return doc


#: bounds on what a document may be: the largest committed one is a few MB uncompressed, its deepest
#: nesting under 10 levels; beyond these a file is not a document (a deep array, /dev/zero)
MAX_BYTES = 1 << 30
MAX_DEPTH = 64
_FILE_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"))


class _Bad(ValueError):
    """What is wrong inside a document's JSON (the reader words it with the file)."""


def _constant(text: str):
    raise _Bad(f"it holds {text}, which is not a finite number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Bad(f"it holds {text}, which is not a finite number")
    return value


def _read_bounded(path: str) -> bytes:
    """The bytes of *path*, decompressed when gzip'd, refusing more than ``MAX_BYTES``; never opens
    anything but a regular file (a FIFO would block, /dev/zero never end)."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(path)
    for test, what in _FILE_KINDS:
        if test(st.st_mode):
            raise _Bad(f"it is {what}, not a file")
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise _Bad(f"it holds more than {MAX_BYTES >> 20} MiB of JSON, more than any document")
    return data


def _where(parts) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".") or "the top level"


def _is_interval(key, value) -> bool:
    """A confidence interval, as every kind writes one: ``ci``, ``ci_us``, ``ci_pct`` ... as [low, high]."""
    return (isinstance(key, str) and (key == "ci" or key.startswith("ci_")) and isinstance(value, list)
            and len(value) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value))


def check_sane(doc) -> None:
    """*doc* nests at most ``MAX_DEPTH`` levels, every string (keys too) is valid Unicode (a lone
    surrogate cannot be printed or written) and every interval is ordered; else ``_Bad`` naming where.
    Numbers were checked as read."""
    stack = [(doc, ())]
    while stack:
        obj, parts = stack.pop()
        if len(parts) > MAX_DEPTH:
            raise _Bad(f"it nests deeper than {MAX_DEPTH} levels (at {_where(parts[:4])}...)")
        items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
        for key, value in items:
            for text in (key, value):
                if isinstance(text, str):
                    try:
                        text.encode("utf-8")
                    except UnicodeEncodeError:
                        raise _Bad(f"{_where(parts + (key,))} holds a lone surrogate "
                                   f"({text.encode('utf-8', 'backslashreplace').decode('ascii', 'replace')[:40]}), "
                                   "not text") from None
            if _is_interval(key, value) and value[0] > value[1]:
                raise _Bad(f"{_where(parts + (key,))} is the interval {value}, whose lower bound lies above its "
                           "upper")
            if isinstance(value, (dict, list)):
                stack.append((value, parts + (key,)))


def parse(data: bytes):
    """JSON text as a document: NaN, Infinity and overflowing numbers, lone surrogates and deep
    nesting refused (``_Bad``, ``UnicodeDecodeError`` or ``json.JSONDecodeError``)."""
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_constant, parse_float=_finite)
    except RecursionError:
        raise _Bad(f"it nests deeper than {MAX_DEPTH} levels") from None
    check_sane(doc)
    return doc


def load(path: str, name: str):
    """The JSON in *path* (plain or gzip-compressed) unchecked but sane (``parse``), with one-line errors
    worded for kind *name*."""
    k = KINDS[name]
    try:
        return parse(_read_bounded(path))
    except _Bad as exc:
        raise SchemaError(f"{k.noun} file {path}: {exc}; pass a file `{k.writer}` wrote, unchanged") from None
    except FileNotFoundError:
        raise SchemaError(f"{k.noun} file {path} does not exist; run `{k.writer.replace('PATH', path)}` "
                          "first") from None
    except IsADirectoryError:
        raise SchemaError(f"{k.noun} file {path} is a directory; pass the JSON file `{k.writer}` wrote") from None
    except (ValueError, EOFError, gzip.BadGzipFile, zlib.error) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise SchemaError(f"{k.noun} file {path} is not valid JSON ({str(exc)[:200]}); re-run `{k.writer}`") from None
    except OSError as exc:
        raise SchemaError(f"cannot read {k.noun} file {path} ({exc.strerror}); pass a file `{k.writer}` "
                          "wrote") from None


def read_inputs(paths, option: str, fix: str) -> list:
    """``(path, JSON)`` pairs of the files a command takes as *option*, of any kind (the caller checks
    which it takes); an empty name, a FIFO or device, a missing or unreadable file and one that is not
    JSON are refused in one line naming it and ending in *fix*."""
    out = []
    for path in paths:
        if not path.strip():
            raise UserError(f"{option} is empty; {fix}")
        if os.path.exists(path):
            check_regular(path, option)  # a FIFO would block the reader, /dev/zero never end
        try:
            out.append((path, read_json(path)))
        except (OSError, ValueError, EOFError) as exc:
            raise UserError(f"{option} {path!r}: cannot read it ({exc}); {fix}") from None
    return out


def read(path: str, name: str) -> dict:
    """Load and validate a document of kind *name*; every failure is one line naming *path*."""
    return validate(load(path, name), name, where=path)


def write(path: str, doc: dict, name: str) -> str:
    """Validate and write *doc* atomically (temp file + os.replace): readers never see half a file."""
    validate(doc, name)
    return write_json_atomic(path, doc)
