"""launchbench.output.documents: one table of document kinds. Each kind's validator accepts a real
document (a fixture cut from a committed run, or a writer's output) and refuses a broken one in one line
naming the file; the reader words file errors, another kind and a newer version in one line; writers take
their ids from the table. Every committed document is checked by `python lab/check.py` (opt-in)."""
import ast
import copy
import gzip
import json
import os
import re
from pathlib import Path

import pytest

from launchbench.base.atomic import read_json
from launchbench.engine import asvplan
from launchbench.output import asvplan as asvplan_output
from launchbench.output import documents
from launchbench.output import lockprobe as lockprobe_output
from launchbench.output.documents import SchemaError
from launchbench.workloads import stages_mlir

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def _mlir_document() -> dict:
    """The mlir breakdown as its writer builds it (no run of it is committed)."""
    names = ("loop", *stages_mlir.LEVELS, *stages_mlir.OUTSIDE, *stages_mlir.STAGES)
    samples = {"0": {name: [0.1 + i, 0.2 + i] for i, name in enumerate(names)}}
    return stages_mlir.document(samples, [0], {"loops": 10, "repeats": 2, "rounds": 1}, "0.1.0")


def _asv_plan_document() -> dict:
    """asv-plan's JSON as its writer builds it (its runs go with the GPU recipe's results)."""
    commits = [{"sha": f"{i:x}" * 40, "short": f"{i:x}" * 8, "subject": "s", "date": "d"} for i in range(3)]
    chosen = asvplan.choose(["a", "b", "b"], [2], 12)
    return asvplan_output.document("/clone", "a..b", commits, chosen, {}, {"every": 12}, 1.0, "now", ["launchbench"])


def _lock_probe_document() -> dict:
    """lock-probe's JSON as its writer builds it (its runs go with the GPU recipe's results)."""
    form = {"completed_while_held": True, "completed_after_release": True, "error": None, "timeout_s": 2.0,
            "us": 2.5, "samples_us": [2.4, 2.5, 2.6]}
    point = {"point": "numba-cuda-mlir==0.5.0", "version": "0.5.0", "stack": {}, "planner_api": "lcs", "note": None,
             "lock": "lock", "device": {"name": "x"},
             "kernels": [{"kernel": "lcs-planner", "label": "LC-S", "baked": True, "forms": {"k[1, 1](out)": form}}]}
    return lockprobe_output.document("numba-cuda-mlir==0.5.0", [point], [],
                                     {"timeout_s": 2.0, "loops": 2000, "repeats": 5}, True, ["launchbench"], "now")


#: kind -> (a real document: a fixture under tests/fixtures/ or a writer's output, a field every reader needs)
REAL = {
    "compare": ("compare-1.json.gz", "samples"),
    "counts/1": ("counts-1.json.gz", "settings"),
    "counts/2": ("counts-2.json.gz", "settings"),
    "breakdown/1": ("breakdown-1.json.gz", "stages"),
    "breakdown/2": ("breakdown-2.json.gz", "samples"),
    "breakdown-mlir": (None, "stages"),
    "history": ("history-1.json.gz", "commits"),
    "bisect": ("bisect-1.json.gz", "stages"),
    "pr": ("pr-1.json.gz", "verdicts"),
    "mechanisms/2": ("mechanisms-2.json.gz", "params"),
    "mechanisms/3": ("mechanisms-3.json.gz", "params"),
    "mechanisms/4": ("mechanisms-4.json.gz", "analysis"),
    "peers": ("peers-1.json.gz", "results"),
    "lcs-bench": ("lcs-bench-1.json.gz", "results"),
    "asv-plan": (None, "commits"),
    "lock-probe": (None, "points"),
}


def _real(case: str):
    """(path, document, kind) of a case of REAL."""
    rel, _ = REAL[case]
    if rel is None and case == "asv-plan":
        return "plan.txt.json", _asv_plan_document(), "asv-plan"
    if rel is None and case == "lock-probe":
        return "lock.json", _lock_probe_document(), "lock-probe"
    if rel is None:
        return "mlir.json", _mlir_document(), "breakdown-mlir"
    path = FIXTURES / rel
    return str(path), read_json(path), case.split("/")[0]


def test_every_kind_has_a_case():
    assert {case.split("/")[0] for case in REAL} == set(documents.KINDS)


@pytest.mark.parametrize("case", sorted(REAL))
def test_a_real_document_is_accepted(case):
    path, doc, kind = _real(case)
    assert documents.kind_of(doc) == kind
    assert documents.validate(doc, kind, path) is doc


@pytest.mark.parametrize("case", sorted(REAL))
def test_a_document_missing_a_field_is_refused_in_one_line(case):
    path, doc, kind = _real(case)
    field = REAL[case][1]
    broken = copy.deepcopy(doc)
    del broken[field]
    with pytest.raises(SchemaError) as info:
        documents.validate(broken, kind, path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(path) and repr(field) in msg and "wrote" in msg, msg


@pytest.mark.parametrize("case", sorted(REAL))
def test_a_field_of_the_wrong_type_is_refused(case):
    path, doc, kind = _real(case)
    field = REAL[case][1]
    broken = dict(doc, **{field: "not that"})
    with pytest.raises(SchemaError, match=re.escape(field)) as info:
        documents.validate(broken, kind, path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kind", sorted(documents.KINDS))
def test_a_newer_version_and_another_kind_are_refused_in_one_line(kind, tmp_path):
    k = documents.KINDS[kind]
    newer = documents.stamp(kind, k.version + 1)
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(newer))
    with pytest.raises(SchemaError, match="newer than this launchbench reads") as info:
        documents.read(str(path), kind)
    assert str(info.value).startswith(str(path)) and "upgrade launchbench" in str(info.value)
    other = "compare" if kind != "compare" else "counts"
    path.write_text(json.dumps(documents.stamp(other)))
    with pytest.raises(SchemaError, match=f"not a {re.escape(k.schema)} document") as info:
        documents.read(str(path), kind)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kind", sorted(documents.KINDS))
def test_the_stamp_is_read_back_as_its_version(kind):
    k = documents.KINDS[kind]
    stamp = documents.stamp(kind)
    assert documents.kind_of(stamp) == kind and documents.version_of(stamp, kind) == k.version
    assert ("schema_version" in stamp) == (k.style != documents.SUFFIX)


def test_file_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.json.gz"
    with gzip.open(bad, "wt") as fh:
        fh.write("{not json")
    (tmp_path / "list.json").write_text("[1, 2]")
    for path, needle in ((tmp_path / "none.json", "does not exist; run `launchbench mechanisms -o"),
                         (bad, "not valid JSON"), (tmp_path, "is a directory"),
                         (tmp_path / "list.json", "expected a JSON object")):
        with pytest.raises(SchemaError, match=re.escape(needle)) as info:
            documents.read(str(path), "mechanisms")
        assert "\n" not in str(info.value)


def test_every_fixture_reads_as_the_kind_and_version_its_name_says():
    """tests/fixtures/KIND-VERSION.json.gz: one per kind and schema version the committed runs hold; each
    reads through the one reader, and each kind's current version has one (breakdown-mlir, asv-plan: built above)."""
    found = {}
    for path in sorted(FIXTURES.glob("*.json.gz")):
        kind, version = path.name[:-len(".json.gz")].rsplit("-", 1)
        doc = documents.read(str(path), kind)
        assert documents.version_of(doc, kind) == int(version), path.name
        found.setdefault(kind, set()).add(int(version))
    built = {case for case, (rel, _) in REAL.items() if rel is None}  # kinds whose real case a writer builds
    current = {name: k.version for name, k in documents.KINDS.items() if name not in built}
    assert all(current[kind] in found.get(kind, ()) for kind in current), (found, current)
    assert {f"{kind}/{v}" if len(found[kind]) > 1 else kind for kind in found for v in found[kind]} \
        == {case for case in REAL if REAL[case][0]}


def test_a_releases_document_reads_as_history_with_points_for_commits():
    """launchbench releases writes history's layout with released versions (or wheels) for commits and no clone
    (tests/fixtures/releases/: a GPU run's stack bisect, cut to two rounds): read as history, and its own fields
    are required, not the commits' (the committed releases runs once failed lab/check.py so)."""
    path = FIXTURES / "releases" / "history-1.json.gz"
    doc = documents.read(str(path), "history")
    assert doc["kind"] == "releases" and doc["clone"] is None and doc["points"]
    for field in ("points", "levels", "refused"):
        broken = copy.deepcopy(doc)
        del broken[field]
        with pytest.raises(SchemaError, match=re.escape(repr(field))):
            documents.validate(broken, "history", str(path))
    commits_doc = read_json(FIXTURES / "history-1.json.gz")  # a history run still needs its clone and commits
    with pytest.raises(SchemaError, match="clone"):
        documents.validate(dict(commits_doc, clone=None), "history", "h.json")


def _schema_strings(path: Path) -> list:
    """(line, text) of string constants in *path* that are a document's schema id (with or without /N)."""
    ids = {k.schema for k in documents.KINDS.values()}
    return [(n.lineno, n.value) for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split("/")[0] in ids]


def test_writers_take_their_ids_from_the_table():
    """No module but documents.py writes a schema id, except the four below output/ it reads them from."""
    below = {"engine/history.py", "workloads/breakdown.py", "workloads/stages_mlir.py", "workloads/lcs/fixture.py"}
    package = ROOT / "launchbench"
    found = {str(p.relative_to(package)): _schema_strings(p) for p in sorted(package.rglob("*.py"))}
    stray = {p: hits for p, hits in found.items() if hits and p not in below | {"output/documents.py"}}
    assert not stray, stray
    assert all(found[p] for p in below), {p: found[p] for p in below}


# ---------------------------------------------------------------- documents read defensively

def _first_interval(doc, path=()):
    """The path of the first [low, high] interval (ci, ci_us, ci_pct, ...) of low < high in *doc*, or None."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        if (isinstance(key, str) and (key == "ci" or key.startswith("ci_")) and isinstance(value, list)
                and len(value) == 2 and all(isinstance(v, (int, float)) for v in value) and value[0] < value[1]):
            return path + (key,)
        found = _first_interval(value, path + (key,)) if isinstance(value, (dict, list)) else None
        if found:
            return found
    return None


def _corruptions(doc):
    """(name, JSON text, what the one line must say) for a real document *doc*: a generator of the
    inconsistencies every kind is refused for, whatever its fields."""
    yield "NaN", json.dumps({**doc, "x": [1.0, float("nan")]}), "NaN, which is not a finite number"
    yield "Infinity", json.dumps({**doc, "x": float("inf")}), "Infinity, which is not a finite number"
    yield "overflow", json.dumps({**doc, "x": 1.0})[:-1] + ', "y": 1e400}', "1e400, which is not a finite number"
    yield "surrogate", json.dumps({**doc, "label": "caf\ud800"}), "label holds a lone surrogate"
    deep = json.dumps({**doc, "x": 0})
    yield "deep", deep.replace('"x": 0', '"x": ' + "[" * 100 + "]" * 100), "nests deeper than"
    yield "deeper than the parser", deep.replace('"x": 0', '"x": ' + "[" * 200000 + "]" * 200000), "nests deeper"
    where = _first_interval(doc)
    if where:
        bad = copy.deepcopy(doc)
        node = bad
        for part in where[:-1]:
            node = node[part]
        node[where[-1]] = node[where[-1]][::-1]
        yield "reversed interval", json.dumps(bad), "whose lower bound lies above its upper"


CORRUPTED = [pytest.param(case, name, text, needle, id=f"{case}-{name}")
             for case in REAL for name, text, needle in _corruptions(_real(case)[1])]


@pytest.mark.parametrize("case, name, text, needle", CORRUPTED)
def test_an_inconsistent_document_is_refused_in_one_line_naming_the_file(case, name, text, needle, tmp_path):
    path = tmp_path / "doc.json"
    path.write_text(text)
    with pytest.raises(SchemaError) as info:
        documents.read(str(path), _real(case)[2])
    line = str(info.value)
    assert "\n" not in line and str(path) in line and needle in line, line


def test_every_kind_with_intervals_gets_a_reversed_one():
    reversed_kinds = {c for c, name, *_ in (p.values for p in CORRUPTED) if name == "reversed interval"}
    assert {"compare", "history", "pr"} <= reversed_kinds, reversed_kinds


@pytest.mark.parametrize("change, needle", [
    (lambda d: d.update(samples=[], partial_samples=[]), "beside no samples"),
    (lambda d: d["samples"][0].update(us=-1e308), "is not a time a launch can take"),
    (lambda d: d["stats"][0].update(mean=-1.0), "is not a time a launch can take"),
])
def test_a_compare_document_whose_numbers_contradict_it_is_refused(change, needle, tmp_path):
    _path, doc, _ = _real("compare")
    assert any(d["verdict"] != "inconclusive" for d in doc["deltas"])
    change(doc)
    with pytest.raises(SchemaError) as info:
        documents.validate(doc, "compare", "x.json")
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_odd_files_are_refused_without_reading(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opened for reading, it would block until a writer comes: none will
    for path, needle in ((str(fifo), "is a FIFO, not a file"), ("/dev/zero", "is a character device, not a file")):
        with pytest.raises(SchemaError) as info:
            documents.read(path, "compare")
        assert needle in str(info.value) and path in str(info.value)
    big = tmp_path / "big.json.gz"
    with gzip.open(big, "wt") as fh:
        fh.write('{"x": "' + "a" * 5000 + '"}')
    monkeypatch.setattr(documents, "MAX_BYTES", 4096)  # the bound is on what is read, gzip'd or not
    with pytest.raises(SchemaError, match="more than"):
        documents.read(str(big), "compare")
