"""launchbench.output.documents: one table of document kinds. Each kind's validator accepts a committed
(or freshly written) document and refuses a broken one in one line naming the file; the reader words
file errors, another kind and a newer version in one line; writers take their ids from the table."""
import ast
import copy
import gzip
import json
import re
from pathlib import Path

import pytest

from launchbench.base.atomic import read_json
from launchbench.engine import asvplan
from launchbench.output import asvplan as asvplan_output
from launchbench.output import documents
from launchbench.output.documents import SchemaError
from launchbench.workloads import stages_mlir

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"


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


#: kind -> (a real document: a committed file or a writer's output, a field every reader needs)
REAL = {
    "compare": ("h200/2026-11-22-compare-default/default.json.gz", "samples"),
    "counts": ("h200/2026-11-26-counts-shapes-whatif/counts-cupy.json.gz", "settings"),
    "breakdown/1": ("h200/2026-11-22-peers-breakdown/breakdown-env029.json", "stages"),
    "breakdown/2": ("h100/2026-11-23-breakdown-dev/array.json.gz", "samples"),
    "breakdown-mlir": (None, "stages"),
    "history": ("h200/2026-11-23-history-v0.29.0-v0.30.4/history.json.gz", "commits"),
    "bisect": ("h200/2026-11-26-counts-history-bisect-pr/bisect-planted-a.json.gz", "stages"),
    "pr": ("h200/2026-11-24-pr/pr897/pr.json.gz", "verdicts"),
    "mechanisms/2": ("h200/2026-11-22-mechanisms-one-process/c-interceptor/mechanisms-029.json.gz", "params"),
    "mechanisms/4": ("h100/2026-11-25-asv-mechanism-rows/lbmechanisms/mechanisms-030.json.gz", "analysis"),
    "peers": ("h200/2026-11-22-peers-breakdown/peers-env029.json", "results"),
    "lcs-bench": ("h200/2026-11-22-lcs/lcs-bench.json", "results"),
    "asv-plan": (None, "commits"),
}


def _real(case: str):
    """(path, document, kind) of a case of REAL."""
    rel, _ = REAL[case]
    if rel is None and case == "asv-plan":
        return "plan.txt.json", _asv_plan_document(), "asv-plan"
    if rel is None:
        return "mlir.json", _mlir_document(), "breakdown-mlir"
    path = RESULTS / rel
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


def test_every_committed_document_of_a_known_kind_reads():
    """What `launchbench report`, `mechanisms --pool` and the gpu/ scripts read back from results/."""
    files = sorted(set(RESULTS.rglob("*.json")) | set(RESULTS.rglob("*.json.gz")))
    seen = {}
    for path in files:
        doc = read_json(path)
        kind = documents.kind_of(doc)
        if kind is not None:
            documents.read(str(path), kind)
            seen[kind] = seen.get(kind, 0) + 1
    assert seen.get("compare", 0) >= 10 and {"counts", "breakdown", "history", "bisect", "pr", "mechanisms",
                                              "peers", "lcs-bench"} <= set(seen), seen


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
