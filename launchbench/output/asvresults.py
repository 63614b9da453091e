"""launchbench's paired per-commit values, written as asv results.

Why: a native ``asv run`` on the noisy GPU VM measures each commit on its
own, in a few processes, one commit after the other, so spells and
per-process offsets of several percent go straight into the difference.
``launchbench history`` (and ``compare``) measure commits in interleaved
rounds of fresh processes and give each commit's difference to a reference
commit with an interval over rounds. This module files those values where
``asv compare`` and ``asv publish`` read them, under the suite's own
benchmark name, so asv's tables and graphs show the precise values.

What is written (asv 0.6 formats: results api_version 2 with asv's
``result_columns``, ``machine.json`` api_version 1, ``benchmarks.json``
api_version 2), for ``bench_launch.TimeLaunchPreconfigured.time_launch``
(launchbench times the same thing: a preconfigured ``k[1, 1]`` called with
0..4 device arrays):

* value of commit C at n args = L_n + d_C,n seconds, where L_n is the
  reference commit's level and d_C,n its paired delta to the reference;
  the reference has d = 0. A commit not measured but ``identical_to`` one
  gets that commit's values; a commit whose build failed gets asv's
  "failed" (None), as ``asv run`` records it.
* parameter combinations not measured (other configurations, other arg
  counts) are NaN, which is how asv itself records a skipped combination:
  asv shows NaN as "n/a" and None as "failed".
* ``ci_99_a``/``ci_99_b`` = L_n + the paired 99% interval of d_C,n (the
  reference: [L_n, L_n]); ``samples`` is None. Without samples,
  ``asv compare`` calls a pair significant only when these two intervals
  do not overlap (``asv._stats.is_different``), so against the reference
  its test is exactly "the paired 99% interval excludes 0"; between two
  non-reference commits it is conservative (disjoint intervals).
* ``q_25``/``q_75`` = L_n + the paired 95% interval, so the ``±`` that asv
  prints (half their distance) is the 95% half-width of the difference to
  the reference (the reference prints ±0); ``repeat`` = the number of
  rounds (asv ignores the intervals when it is 1); ``number`` = launches
  per sample where known.
* version None: asv then matches the result to any ``benchmarks.json``
  version, so a later native ``asv run`` that rewrites benchmarks.json does
  not orphan these results.

asv compare flags a change only if it is significant AND the ratio is
beyond ``--factor`` (default 1.1): a real +4% step is "same" at the default
factor however tight its interval. Pass ``--factor 1.01`` to let the
intervals decide for any change over 1%.
"""
from __future__ import annotations

import datetime as _dt
import itertools
import json
import math
import os
import re
import statistics

from ..base import atomic
from ..base.errors import UserError
from ..engine import analysis, stats
from ..engine.runplan import key_id, launch_keys
from ..engine.stats import t_quantile
from ..environments import ledger
from . import documents
from .asvtools import SMOKE_MACHINE, check_machine_label
from .releases import NEWEST, group_series, require_releases

#: The suite benchmark launchbench's values stand for, and its parameter grid
#: (tests check these against benchmarks/bench_launch.py).
BENCHMARK = "bench_launch.TimeLaunchPreconfigured.time_launch"
PARAM_NAMES = ["args", "config"]
ARG_COUNTS = [0, 1, 2, 3, 4]
CONFIG_NAMES = ["[1, 1]", "[1, 128]", "[128, 128]", "[1024, 256]", "[(16, 16), (16, 16)]",
                "[1, 128] sharedmem=1KiB", "[1, 128] stream"]
#: The only launch configuration launchbench measures.
LAUNCH = "[1, 1]"

#: asv 0.6 file formats written here.
RESULTS_API_VERSION = 2
MACHINE_API_VERSION = 1
BENCHMARKS_API_VERSION = 2
RESULT_COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a",
                  "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat",
                  "samples", "profile"]

DEFAULT_ENV_NAME = "launchbench-history"
#: Results parameter that keeps these values in their own asv publish graph
#: (without it, publish would average them with native runs of equal params).
SOURCE_PARAM = "measured_by"
#: Results parameter of a release series' stack. Its project is the ledger branch its commits are on,
#: asv publish's own ``branch`` parameter: asv graphs each branch and stack apart.
STACK_PARAM = "stack"

_US = 1e-6
_MACHINE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


# ---------------------------------------------------------------- public API

def write_history(results_dir: str, doc: dict, machine: str | None = None,
                  env_name: str = DEFAULT_ENV_NAME, confidence_asv: float = 0.99) -> list[str]:
    """Write a ``launchbench history`` document as asv results under *results_dir*.

    Returns the paths written (results files, then machine.json and
    benchmarks.json where they were created or extended). *machine*
    defaults to the host name, which is also asv's default, so native runs
    on that host land beside these. *confidence_asv* is the level of the
    intervals asv's significance test sees (asv's own are 99%).
    """
    _check_installed_asv()
    if not 0.5 < confidence_asv < 1.0:
        raise UserError(f"confidence_asv={confidence_asv} must be between 0.5 and 1; use 0.99 (asv's own level)")
    if not _MACHINE_RE.fullmatch(env_name or ""):
        raise UserError(f"env name {env_name!r} is not a plain name; use letters, digits, '.', '_' or '-'")
    settings = doc.get("settings") or {}
    _check_suite_grid(settings, [])
    machine = _machine_name(doc, machine)
    per_variant = _variant_values(doc, confidence_asv)
    commits = doc.get("commits") or []
    if not commits:
        raise UserError("the document has no commits; pass a history JSON written by `launchbench history`")
    by_sha = {c.get("sha"): c for c in commits}
    started_at = _js_ms(doc.get("created")) if doc.get("created") else _js_ms(None)
    common = _common_params(doc, machine)
    written = []
    for commit in commits:
        sha = commit.get("sha") or ""
        if not re.fullmatch(r"[0-9a-f]{40}", sha):
            raise UserError(f"commit {sha!r} is not a full 40-digit SHA; write the history with full SHAs")
        source = _source_commit(commit, by_sha)
        if source is None:
            if (commit.get("build") or {}).get("ok") is False:
                values = None  # asv's "failed", as asv run records a build failure
            else:
                continue  # never measured: no results (asv shows a gap)
        else:
            variant = source.get("variant")
            if variant not in per_variant:
                raise UserError(f"commit {source['sha'][:12]} is measured as variant {variant!r}, which has no "
                                "level or deltas in the document; rerun `launchbench history` for it")
            values = per_variant[variant]
        data = _results_data(commit, doc, values, common, env_name, started_at, settings)
        path = os.path.join(results_dir, machine, f"{sha[:8]}-{env_name}.json")
        written.append(atomic.write_text_atomic(path, json.dumps(data)))
    if not written:
        raise UserError("no commit in the document was measured or failed to build; nothing to write")
    written += _ensure_machine_json(results_dir, machine, doc)
    written += _ensure_benchmarks_json(results_dir)
    return written


def write_compare(results_dir: str, compare_doc: dict, commits: dict, dates: dict | None = None,
                  machine: str | None = None, env_name: str = "launchbench-compare",
                  confidence_asv: float = 0.99) -> list[str]:
    """Write a ``launchbench compare`` document as asv results: one commit per variant.

    *commits* maps variant names to the full SHAs they were built from (a
    compare document knows versions, not commits); *dates* maps SHAs to
    ISO 8601 commit dates (default: the document's creation time). The
    reference level is rebuilt from the raw samples the same way history
    computes it: mean over rounds of the reference's per-round medians.
    """
    reference = compare_doc.get("reference")
    names = [v["name"] for v in compare_doc.get("variants") or []]
    missing = [n for n in names if n not in commits]
    if reference not in commits or missing:
        raise UserError(f"no commit given for variant(s) {', '.join(missing or [str(reference)])}; "
                        "pass one full SHA per variant of the compare document")
    shas = [commits[n] for n in names]
    if len(set(shas)) != len(shas):
        raise UserError("two variants map to the same commit (asv keeps one result per commit); "
                        "leave mechanism variants such as contextvar out of the mapping")
    arg_counts = (compare_doc.get("settings") or {}).get("arg_counts") or ARG_COUNTS
    by = analysis.group_rounds(compare_doc.get("samples") or [], launch_keys(arg_counts))
    level = []
    for n in arg_counts:
        rounds = by.get((reference, key_id({"nargs": n}))) or {}
        medians = [statistics.median(v) for _r, v in sorted(rounds.items()) if v]
        if medians:
            mean, lo, hi = stats.mean_ci(medians)
            level.append({"nargs": n, "us": mean, "ci_us": [lo, hi], "n": len(medians)})
    created = compare_doc.get("created")
    history = {
        **{k: compare_doc.get(k) for k in ("device", "host", "settings", "reference", "deltas", "created")},
        "level": level,
        "commits": [{"sha": commits[n], "variant": n, "measured": True, "identical_to": None,
                     "build": {"ok": True}, "date": (dates or {}).get(commits[n], created),
                     "version": _variant_version(compare_doc, n)}
                    for n in names],
    }
    return write_history(results_dir, history, machine=machine, env_name=env_name,
                         confidence_asv=confidence_asv)


# ---------------------------------------------------------------- releases documents

def release_series(doc: dict, where: str = "the document") -> list[dict]:
    """The series of a ``launchbench releases`` document, each ``{project, pins, stack, env_name, points}``.

    A series is one project on one stack: the points that share their project and the pins the run
    asked for (``user_pins``; none: each release on the newest stack it resolves, ``stack`` NEWEST),
    in version order. Its results go under one asv environment name that names both, are filed under
    commits of the project's ledger branch and carry ``stack`` as a results param, so asv publish
    graphs each series apart (its ``branch`` the project, its ``stack`` the stack). Checked
    here, before anything is written: the document's kind, that its values map onto the suite's
    benchmark, and that no series holds a release twice (one ledger commit per release).
    """
    require_releases(doc, where, "give the JSON `launchbench releases` wrote (a history files its own: history "
                                 "--asv-results DIR)")
    documents.validate(doc, "history", where)  # the fields read below, each of its type
    settings = doc.get("settings") or {}
    _check_suite_grid(settings, settings.get("arg_counts") or [], where)
    missing = [p for p in doc["points"] if not isinstance(p, dict) or not p.get("project") or not p.get("version")]
    if missing:
        raise UserError(f"{where}: point {str(missing[0])[:80]!r} names no project and version; give the JSON "
                        "`launchbench releases` wrote, unchanged")
    out = []
    for one in group_series(doc["points"]):
        versions = [p["version"] for p in one["points"]]
        twice = sorted({v for v in versions if versions.count(v) > 1}, key=ledger.version_key)
        if twice:
            raise UserError(f"{where}: {one['project']} {twice[0]} is two points of one series (stack {one['stack']}); "
                            "asv keeps one result per release and stack: file the points' documents apart")
        pins = "-".join(f"{dep}-{version}" for dep, version in one["pins"].items()) or NEWEST
        out.append({**one, "env_name": re.sub(r"[^A-Za-z0-9._-]+", "-", f"{one['project']}-{pins}")})
    if not out:
        raise UserError(f"{where} holds no points; give a finished `launchbench releases` JSON")
    return out


def check_releases(named: list, machine: str | None = None) -> dict:
    """What ``write_releases`` would refuse, refused for every ``(where, doc)`` pair of *named* before the
    ledger or any result is written; returns {project: [versions]}, the commits the ledger needs.
    Two documents that hold one release on one stack are refused too: asv keeps one result per release
    and environment, so one would silently replace the other."""
    _check_installed_asv()
    seen, versions = {}, {}
    for where, doc in named:
        found = release_series(doc, where)
        _machine_name(doc, machine)
        levels = doc.get("levels") or {}
        for series in found:
            for point in series["points"]:
                if not _filed(point, levels)[0]:
                    continue
                key = (series["env_name"], point["version"])
                if key in seen and seen[key] != where:
                    raise UserError(f"{seen[key]} and {where} both hold {series['project']} {point['version']} on "
                                    f"stack {series['stack']}; asv keeps one result per release and stack: file "
                                    "them into separate --results-dir")
                seen[key] = where
                versions.setdefault(series["project"], []).append(point["version"])
    return versions


def write_releases(results_dir: str, doc: dict, commits: dict, machine: str | None = None,
                   where: str = "the document") -> list[str]:
    """Write a ``launchbench releases`` document as asv results under *results_dir*: per series
    (``release_series``) one results file per release, filed under its ledger commit (*commits*:
    {project: {version: sha}}, from ``ledger.ensure_series_ledger``).

    A measured point's values are its levels (``_level_values``); a refused point (it did not
    install, import or launch) is asv's "failed", with no value; a point neither measured nor
    refused (an interrupted run) is absent. Returns the paths written, machine.json and
    benchmarks.json last where they were created or extended.
    """
    _check_installed_asv()
    series = release_series(doc, where)
    machine = _machine_name(doc, machine)
    started_at = _js_ms(doc.get("created"), what=f"{where}: created")
    levels = doc.get("levels") or {}
    written = []
    for one in series:
        params = {**_common_params(doc, machine, "launchbench releases"), STACK_PARAM: one["stack"]}
        for point in one["points"]:
            filed, values = _filed(point, levels)
            if not filed:
                continue
            sha = commits[one["project"]][point["version"]]
            requirements = {one["project"]: point["version"], **(point.get("stack") or one["pins"])}
            python = _python_version(point, doc)
            data = _results_file(sha, one["env_name"], started_at, {**params, "python": python}, requirements,
                                 _row(values, started_at))
            path = os.path.join(results_dir, machine, f"{sha[:8]}-{one['env_name']}.json")
            written.append(atomic.write_text_atomic(path, json.dumps(data)))
    if not written:
        raise UserError(f"{where}: no point was measured or refused; nothing to write")
    written += _ensure_machine_json(results_dir, machine, doc)
    written += _ensure_benchmarks_json(results_dir)
    return written


def _filed(point: dict, levels: dict) -> tuple:
    """(filed, values) of a point: a measured one its levels, a refused one None (asv's "failed": it did not
    install, import or launch), one neither measured nor refused (an interrupted run) is not filed."""
    if point.get("refused"):
        return True, None
    if point.get("measured") and levels.get(point["sha"]):
        return True, _level_values(levels[point["sha"]])
    return False, None


def _level_values(levels: list) -> dict:
    """{nargs: record of seconds} of one point: its cost (mean over rounds of each round's median), the
    95% t interval over rounds as q_25/q_75 (asv prints half their distance as the ±), the same interval
    at 99% for asv's significance test (``_ci_at``: the t ratio); ``repeat`` the rounds, no samples."""
    out = {}
    for rec in levels:
        us, ci95 = float(rec["us"]), tuple(float(x) for x in rec["ci_us"])
        rounds = rec.get("rounds") or rec.get("n")
        ci99 = _ci_at({}, us, ci95, rounds, 0.99)
        out[int(rec["nargs"])] = {"value": us * _US, "ci_99_a": ci99[0] * _US, "ci_99_b": ci99[1] * _US,
                                  "q_25": ci95[0] * _US, "q_75": ci95[1] * _US, "number": None,
                                  "repeat": int(rounds) if rounds else None}
    return out


# ---------------------------------------------------------------- values

def _variant_values(doc: dict, confidence: float) -> dict:
    """variant -> {nargs: record of seconds} from the reference level plus paired deltas."""
    reference = doc.get("reference")
    if not reference:
        raise UserError("the document names no reference variant; pass a history JSON written by "
                        "`launchbench history`")
    level = {}
    for rec in doc.get("level") or []:
        level[int(rec["nargs"])] = rec
    if not level:
        raise UserError("the document has no reference level; pass a finished `launchbench history` JSON")
    _check_suite_grid(doc.get("settings") or {}, level)
    rounds = (doc.get("settings") or {}).get("rounds")
    loops = (doc.get("settings") or {}).get("loops") or {}
    deltas = {}
    for rec in doc.get("deltas") or []:
        deltas[(rec["variant"], int(rec["nargs"]))] = rec
    variants = {reference} | {v for v, _n in deltas}
    out = {}
    for variant in variants:
        per_n = {}
        for n, lev in level.items():
            rec = deltas.get((variant, n))
            if rec is None and variant != reference:
                continue  # this arg count was not measured for the variant: n/a
            if rec is None:
                d, ci95, ci99 = 0.0, (0.0, 0.0), (0.0, 0.0)
                units = lev.get("n") or lev.get("rounds") or rounds
            else:
                d = float(rec["delta_us"])
                ci95 = tuple(float(x) for x in rec["ci_us"])
                units = rec.get("n") or rec.get("rounds") or rounds
                ci99 = _ci_at(rec, d, ci95, units, confidence)
            base = float(lev["us"])
            per_n[n] = {
                "value": (base + d) * _US,
                "ci_99_a": (base + ci99[0]) * _US,
                "ci_99_b": (base + ci99[1]) * _US,
                "q_25": (base + ci95[0]) * _US,
                "q_75": (base + ci95[1]) * _US,
                "number": loops.get(str(n), loops.get(n)),
                "repeat": int(units) if units else None,
            }
        out[variant] = per_n
    return out


def _ci_at(rec: dict, d: float, ci95: tuple, n, confidence: float) -> tuple:
    """The delta's interval at *confidence*: the document's 99% one, else the 95% one widened.

    Widening by the Student t ratio t(conf, n-1) / t(0.975, n-1) is exact
    for the t interval over rounds that history reports; one round (n < 2)
    has no t interval and keeps its width (asv then ignores it: repeat 1).
    """
    if abs(confidence - 0.99) < 1e-12 and rec.get("ci99_us"):
        lo, hi = rec["ci99_us"]
        return float(lo), float(hi)
    if not n or int(n) < 2:
        return ci95
    ratio = t_quantile(0.5 + confidence / 2.0, int(n) - 1) / t_quantile(0.975, int(n) - 1)
    return d - (d - ci95[0]) * ratio, d + (ci95[1] - d) * ratio


def _source_commit(commit: dict, by_sha: dict) -> dict | None:
    """The measured commit whose values *commit* carries (itself, or along identical_to)."""
    seen = set()
    while commit is not None and commit.get("sha") not in seen:
        if commit.get("measured") and commit.get("variant"):
            return commit
        seen.add(commit.get("sha"))
        commit = by_sha.get(commit.get("identical_to")) if commit.get("identical_to") else None
    return None


# ---------------------------------------------------------------- files

def _grid() -> list:
    """asv's params for the benchmark: repr() strings, as asv's discovery stores them."""
    return [[repr(n) for n in ARG_COUNTS], [repr(c) for c in CONFIG_NAMES]]


def _results_data(commit, doc, values, common, env_name, started_at, settings) -> dict:
    python = _python_version(commit, doc)
    requirements = dict(_pins(doc))
    version = _numba_cuda_version(commit, doc)
    if version:
        requirements["numba-cuda"] = version
    date = _js_ms(commit.get("date") or doc.get("created"), what=f"commit {commit['sha'][:12]} date")
    return _results_file(commit["sha"], env_name, date, {**common, "python": python}, requirements,
                         _row(values, started_at))


def _row(values: dict | None, started_at: int) -> list:
    """asv's row of the benchmark: *values* ({nargs: record of seconds}) in the launch column, NaN (n/a)
    in every other cell; None: asv's "failed" (no value at all)."""
    grid = list(itertools.product(ARG_COUNTS, CONFIG_NAMES))
    if values is None:
        row = [None, _grid(), None, started_at]
    else:
        cells = [values.get(n) if c == LAUNCH else None for n, c in grid]
        result = [cell["value"] if cell else math.nan for cell in cells]

        def column(key):
            col = [cell[key] if cell else None for cell in cells]
            return None if all(x is None for x in col) else col

        row = [result, _grid(), None, started_at, None,
               column("ci_99_a"), column("ci_99_b"), column("q_25"), column("q_75"),
               column("number"), column("repeat"), None, None]
    while row and row[-1] is None:  # asv drops trailing empty columns too
        row.pop()
    return row


def _results_file(sha: str, env_name: str, date: int, params: dict, requirements: dict, row: list) -> dict:
    """One asv results file (format RESULTS_API_VERSION): one commit, one environment, the benchmark's row."""
    return {
        "commit_hash": sha,
        "env_name": env_name,
        "date": date,
        "params": params,
        "python": params.get("python", ""),
        "requirements": requirements,
        "env_vars": {},
        "result_columns": RESULT_COLUMNS,
        "results": {BENCHMARK: row},
        "durations": {},
        "version": RESULTS_API_VERSION,
    }


def _common_params(doc: dict, machine: str, source: str = "launchbench history") -> dict:
    """Results params (asv graphs split on these): machine, GPU, and where the values come from."""
    device = (doc.get("device") or {}).get("name") or ""
    return {"machine": machine, "gpu": device, SOURCE_PARAM: source}


def _read_existing(path: str, fix: str) -> dict:
    """An asv file already in the results directory, or a one-line error saying *fix*."""
    try:
        return atomic.read_json(path)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} is not readable JSON ({exc}); {fix}") from None


def _ensure_machine_json(results_dir: str, machine: str, doc: dict) -> list[str]:
    """machine.json for *machine* unless one exists (asv's own, from `asv machine`, wins)."""
    path = os.path.join(results_dir, machine, "machine.json")
    if os.path.exists(path):
        existing = _read_existing(path, "delete it or pick another --machine")
        if existing.get("machine") != machine:
            raise UserError(f"{path} names machine {existing.get('machine')!r}, not {machine!r}; "
                            "pick that machine name or another results directory")
        return []
    host = doc.get("host") or {}
    data = {
        "machine": machine,
        "os": str(host.get("platform") or host.get("os") or ""),
        "arch": str(host.get("arch") or host.get("machine") or ""),
        "cpu": str(host.get("cpu") or ""),
        "num_cpu": str(host.get("cpu_count") or host.get("num_cpu") or ""),
        "ram": str(host.get("ram") or ""),
        "gpu": str((doc.get("device") or {}).get("name") or ""),
        "version": MACHINE_API_VERSION,
    }
    return [atomic.write_text_atomic(path, json.dumps(data, indent=4, sort_keys=True))]


def _ensure_benchmarks_json(results_dir: str) -> list[str]:
    """benchmarks.json holding the suite's entry (asv compare takes the unit from it,
    asv publish only shows results whose benchmark is listed). An existing file from a
    native run is kept; an entry is added only where it is missing."""
    path = os.path.join(results_dir, "benchmarks.json")
    data = {"version": BENCHMARKS_API_VERSION}
    if os.path.exists(path):
        data = _read_existing(path, "delete it (asv run rewrites it)")
        if data.get("version") != BENCHMARKS_API_VERSION:
            raise UserError(f"{path} has format version {data.get('version')}, not {BENCHMARKS_API_VERSION}; "
                            "run `asv update` or use a fresh results directory")
        entry = data.get(BENCHMARK)
        if entry is not None:
            grid = {combo[:2] for combo in itertools.product(*entry.get("params", []))}  # native rows add a reference
            need = {(repr(n), repr(LAUNCH)) for n in ARG_COUNTS}
            if not need <= grid or entry.get("unit") != "seconds":
                raise UserError(f"{path} lists {BENCHMARK} without the {LAUNCH} grid in seconds; "
                                "use a results directory of this suite")
            return []
    code = ("# Values written by launchbench (launchbench.output.asvresults), not timed by asv:\n"
            "# a preconfigured k[1, 1] called with 0..4 float32 device arrays, measured in\n"
            "# interleaved rounds of fresh processes; see benchmarks/bench_launch.py.\n")
    data[BENCHMARK] = {
        "code": code,
        "min_run_count": 2,
        "name": BENCHMARK,
        "number": 0,
        "param_names": PARAM_NAMES,
        "params": _grid(),
        "rounds": 1,
        "sample_time": 0.01,
        "timeout": 120,
        "type": "time",
        "unit": "seconds",
        "version": "launchbench-" + BENCHMARK,
        "warmup_time": -1,
    }
    return [atomic.write_text_atomic(path, json.dumps(data, indent=4, sort_keys=True))]


# ---------------------------------------------------------------- small helpers

def _check_suite_grid(settings: dict, arg_counts, where: str = "") -> None:
    """Only what the suite's benchmark stands for maps onto it: a ``[1, 1]`` launch of an empty kernel
    taking float32 device arrays, dispatched lazily, at 0..4 arguments. *where*: the file, for the message."""
    at = f"{where}: " if where else ""
    launch = settings.get("launch", LAUNCH)
    if launch != LAUNCH:
        raise UserError(f"{at}the document measured launch {launch}, but only {LAUNCH} maps onto the asv suite; "
                        f"measure with the default launch configuration")
    kind, dispatch = settings.get("arg_kind") or "array", settings.get("dispatch") or "lazy"
    if (kind, dispatch) != ("array", "lazy"):
        raise UserError(f"{at}the kernels took {kind} arguments ({dispatch} dispatch), but the asv suite's benchmark "
                        "launches with float32 device arrays (lazy dispatch); measure with the default --arg-kind")
    bad = sorted(set(int(n) for n in arg_counts) - set(ARG_COUNTS))
    if bad:
        raise UserError(f"{at}arg counts {bad} are not in the asv suite's grid {ARG_COUNTS}; measure 0..4 args")


def _check_installed_asv() -> None:
    """Refuse to write a format the installed asv would not read."""
    try:
        from asv.results import Results
    except ImportError:
        return  # asv reads these files elsewhere; nothing to check here
    if Results.api_version != RESULTS_API_VERSION:
        raise UserError(f"the installed asv reads results format {Results.api_version}, launchbench writes "
                        f"{RESULTS_API_VERSION}; install asv 0.6 (pip install 'asv>=0.6.4,<0.7')")


def _machine_name(doc: dict, machine: str | None) -> str:
    """The asv machine: given, else the host name (asv's default), else the GPU's name.
    Simulator documents go under SIMULATOR-SMOKE, as asv-releases files smoke runs, so
    they can never pass for GPU numbers."""
    smoke = bool(doc.get("simulator"))
    name = machine or (SMOKE_MACHINE if smoke else (doc.get("host") or {}).get("hostname")) or ""
    if not name:
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", (doc.get("device") or {}).get("name") or "").strip("-").lower()
    if not _MACHINE_RE.fullmatch(name):
        raise UserError(f"machine name {name!r} is not usable as an asv machine; pass --machine NAME "
                        "(letters, digits, '.', '_', '-')")
    check_machine_label(name, smoke)
    return name


def _python_version(commit: dict, doc: dict) -> str:
    """X.Y of the interpreter that measured, as asv names environments' pythons. A commit's
    ``python`` may be the env's interpreter path; history checks that its X.Y is the host's."""
    for src in (commit, doc, doc.get("settings") or {}, doc.get("host") or {}):
        m = re.match(r"(\d+)\.(\d+)", str(src.get("python") or ""))
        if m:
            return f"{m.group(1)}.{m.group(2)}"
    return ""


def _pins(doc: dict) -> dict:
    """The envs' pinned packages: the document's pins, else the reference env's installed
    packages (history builds every env with the same pins), numba-cuda left out."""
    pins = doc.get("pins") or (doc.get("settings") or {}).get("pins") or doc.get("installed") or {}
    if not isinstance(pins, dict):
        return {}
    return {str(k): str(v) for k, v in pins.items() if k != "numba-cuda" and v}


def _numba_cuda_version(commit: dict, doc: dict) -> str | None:
    """The commit's numba-cuda version as ``X+g<sha8>``, where the document knows X."""
    version = commit.get("version") or commit.get("numba_cuda_version")
    if not version and commit.get("variant") and commit.get("variant") == doc.get("reference"):
        version = (doc.get("installed") or {}).get("numba-cuda")
    if not version:
        return None
    return str(version) if "+g" in str(version) else f"{version}+g{commit['sha'][:8]}"


def _variant_version(compare_doc: dict, name: str) -> str | None:
    for v in compare_doc.get("variants") or []:
        if v.get("name") == name:
            return (v.get("installed") or {}).get("numba-cuda") or v.get("numba_cuda_version")
    return None


def _js_ms(stamp, what: str = "time") -> int:
    """ISO 8601 (or git's ``2025-01-01 00:00:00 +0000``) -> JavaScript ms, as asv stores dates;
    None -> now. Naive times are taken as UTC."""
    if stamp is None:
        when = _dt.datetime.now(_dt.timezone.utc)
    else:
        text = str(stamp).strip()
        try:
            when = _dt.datetime.fromisoformat(text)
        except ValueError:
            try:
                when = _dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S %z")
            except ValueError:
                raise UserError(f"{what} {text!r} is not an ISO 8601 time; write it like "
                                "2025-01-01T00:00:00+00:00") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.timezone.utc)
    return int(round(when.timestamp() * 1000))
