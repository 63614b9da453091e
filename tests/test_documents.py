"""launchbench.output.documents: one table of document kinds. Each kind's validator accepts a real
document (a fixture cut from a committed run, or a writer's output) and refuses a broken one in one line
naming the file; the reader words file errors, another kind and a newer version in one line; writers take
their ids from the table. Every committed document is checked by `python lab/check.py` (opt-in)."""
import ast
import copy
import gzip
import json
import re
from pathlib import Path

import pytest

from launchbench.base.atomic import read_json
from launchbench.output import documents
from launchbench.output.documents import SchemaError
from launchbench.workloads import stages_mlir

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def _mlir_document() -> dict:
    """The mlir breakdown as its writer builds it (no run of it is committed)."""
    names = ("loop", *stages_mlir.LEVELS, *stages_mlir.OUTSIDE, *stages_mlir.STAGES)
    samples = {"0": {name: [0.1 + i, 0.2 + i] for i, name in enumerate(names)}}
    return stages_mlir.document(samples, [0], {"loops": 10, "repeats": 2, "rounds": 1}, "0.1.0")


#: kind -> (a real document: a fixture under tests/fixtures/ or a writer's output, a field every reader needs)
REAL = {
    "compare": ("compare-1.json.gz", "samples"),
    "counts": ("counts-1.json.gz", "settings"),
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
}


def _real(case: str):
    """(path, document, kind) of a case of REAL."""
    rel, _ = REAL[case]
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
    reads through the one reader, and each kind's current version has one (breakdown-mlir: built above)."""
    found = {}
    for path in sorted(FIXTURES.glob("*.json.gz")):
        kind, version = path.name[:-len(".json.gz")].rsplit("-", 1)
        doc = documents.read(str(path), kind)
        assert documents.version_of(doc, kind) == int(version), path.name
        found.setdefault(kind, set()).add(int(version))
    current = {name: k.version for name, k in documents.KINDS.items() if name != "breakdown-mlir"}
    assert all(current[kind] in found.get(kind, ()) for kind in current), (found, current)
    assert {f"{kind}/{v}" if len(found[kind]) > 1 else kind for kind in found for v in found[kind]} \
        == {case for case in REAL if REAL[case][0]}


def _schema_strings(path: Path) -> list:
    """(line, text) of string constants in *path* that are a document's schema id (with or without /N)."""
    ids = {k.schema for k in documents.KINDS.values()}
    return [(n.lineno, n.value) for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.split("/")[0] in ids]


def test_writers_take_their_ids_from_the_table():
    """No module but documents.py writes a schema id, except the four below output/ it reads them from."""
    below = {"engine/history.py", "workloads/breakdown.py", "workloads/stages_mlir.py", "workloads/lcs.py"}
    package = ROOT / "launchbench"
    found = {str(p.relative_to(package)): _schema_strings(p) for p in sorted(package.rglob("*.py"))}
    stray = {p: hits for p, hits in found.items() if hits and p not in below | {"output/documents.py"}}
    assert not stray, stray
    assert all(found[p] for p in below), {p: found[p] for p in below}
