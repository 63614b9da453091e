"""The committed GPU results keep loading (CPU only): every compare JSON renders through
`launchbench report`, every mechanisms JSON loads, and lab/README.md indexes every run."""
import re
from pathlib import Path

import pytest

from launchbench.base import atomic
from launchbench import cli
from launchbench.commands import mechanisms_procs

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"


def _schema(path: Path) -> str:
    doc = atomic.read_json(path)
    return str(doc.get("schema", "")) if isinstance(doc, dict) else ""


def _committed_json() -> dict:
    """{path relative to the repository: schema} for every JSON (plain or gzip) under results/."""
    files = sorted(set(RESULTS.rglob("*.json")) | set(RESULTS.rglob("*.json.gz")))
    return {str(p.relative_to(ROOT)): _schema(p) for p in files}


COMMITTED = _committed_json()
COMPARE = [p for p, s in COMMITTED.items() if s.startswith("launchbench.compare")]
MECHANISMS = [p for p, s in COMMITTED.items() if s.startswith("launchbench.mechanisms")]
BREAKDOWNS = [p for p, s in COMMITTED.items() if s.startswith("launchbench.breakdown/")]


def test_the_committed_results_are_found():
    # a move that hid them from the globs would make the tests below pass on nothing
    assert len(COMPARE) >= 10, COMPARE
    assert len(MECHANISMS) >= 30, MECHANISMS


@pytest.mark.parametrize("path", COMPARE)
def test_compare_json_renders_a_report(path, tmp_path, capsys):
    out = tmp_path / "report.md"
    assert cli.main(["report", str(ROOT / path), "--markdown", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    assert "launchbench" in text and "|" in text, text[:500]


@pytest.mark.parametrize("path", MECHANISMS)
def test_mechanisms_json_loads(path):
    doc = atomic.read_json(ROOT / path)
    assert doc["schema"].startswith("launchbench.mechanisms/")
    if doc.get("analysis_scope") == "processes":
        # what `launchbench mechanisms --pool` reads; runs inside one process predate it
        assert mechanisms_procs.load(str(ROOT / path))["schema"] == doc["schema"]


@pytest.mark.parametrize("path", BREAKDOWNS)
def test_breakdown_json_reanalyses(path, tmp_path, capsys):
    """`launchbench report` renders every breakdown: a paired one re-analysed from its samples with
    today's quantities, a single-environment one from its stored summary."""
    out = tmp_path / "breakdown.txt"
    assert cli.main(["report", str(ROOT / path), "--text", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    assert "Launch breakdown" in text and "driver_launch" in text, text[:500]
    if COMMITTED[path].startswith("launchbench.breakdown/2"):  # paired: re-analysed from the samples
        assert "paired deltas" in text and "additivity" in text and "unexplained parts" in text, text[:500]


def test_the_dispatcher_call_split_reads_from_the_committed_run(tmp_path, capsys):
    # the run that has every level's parts: the gap splits, and the limits are judged by intervals
    path = ROOT / "lab/results/h200/2026-11-23-breakdown-dispatcher-call-in-context/array.json.gz"
    out = tmp_path / "array.txt"
    assert cli.main(["report", str(path), "--text", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    assert "the gap = outside the parts" in text
    assert "interaction:dispatcher_call" in text and "unresolved" in text
    assert text == (path.parent / "array.txt").read_text()  # the committed rendering is today's


def test_results_readme_indexes_every_run_folder():
    """Every folder holding a launchbench JSON is named in lab/README.md's index."""
    index = (RESULTS / "README.md").read_text()
    missing = []
    for path, schema in COMMITTED.items():
        if not schema.startswith("launchbench."):
            continue
        folder = (ROOT / path).parent
        name = folder.name if not re.fullmatch(r"\d+", folder.name) else folder.parent.name  # 3-ab-*/029
        if f"{name}/" not in index:
            missing.append(str(folder.relative_to(ROOT)))
    assert not missing, sorted(set(missing))
