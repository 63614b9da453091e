"""launchbench asv-series: releases documents filed as asv results, one series per project and stack, read
back by the real asv (``Results.load``, ``asv publish``) on a synthetic document and the committed fixture; and the
release-series page (``series-page``, output/seriespage.py): a panel per series, a line per argument count, refused
releases in the tables and never drawn, the committed page and chart equal to what the renderer makes.

The synthetic document holds three series: numba-cuda on its newest stacks (0.28.0 refused, 0.29.0 and
0.30.0 measured, 0.30.1 neither: an interrupted run), numba-cuda pinned to numba 0.65.1 (0.30.0), and
numba-cuda-mlir on its newest stacks (0.5.0, 0.6.0). CPU only; asv publish takes a few seconds.
"""
import copy
import glob
import json
import math
import os
import re
from pathlib import Path

import pytest

from launchbench import cli
from launchbench.base.atomic import read_json
from launchbench.base.errors import UserError
from launchbench.engine.stats import t_quantile
from launchbench.environments import ledger
from launchbench.output import asvresults, seriespage

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "releases" / "history-1.json.gz"
RUN = ROOT / "lab" / "results" / "h100" / "2026-11-27-releases"
#: The second lease's run: all ten numba-cuda-mlir releases, and the two series filed as asv results and published.
SECOND = ROOT / "lab" / "results" / "h100" / "2026-11-27-claims-mlir-prebuilt"
#: The counted run (a third lease): both series again, each step with its exact counts, filed and published.
COUNTED = ROOT / "lab" / "results" / "h100" / "2026-11-27-releases-counts"
#: (archive, the documents filed into it), each as its run README's "Published as asv series" made it
ARCHIVES = [(SECOND / "asv-series.tar.gz", [SECOND / "mlir-series.json.gz", RUN / "numba-cuda-series.json.gz"]),
            (COUNTED / "asv-series.tar.gz", [COUNTED / "mlir-series.json.gz", COUNTED / "numba-cuda-series.json.gz"])]
ROUNDS = 20
PIN = {"numba": "0.65.1"}


def _point(project, version, pins=None, measured=True, refused=None):
    label = f"{project}=={version}" + "".join(f"+{d}=={v}" for d, v in (pins or {}).items())
    return {"sha": label, "short": label, "subject": label, "date": None, "measured": measured, "aa": False,
            "identical_to": None, "variant": f"v-{label}" if measured else None, "wheel": None, "project": project,
            "version": version, "build": {"ok": True} if measured else None,
            "stack": {"numba": "0.65.1", "numpy": "2.3.5"} if measured else None, "refused": refused,
            "user_pins": dict(pins or {})}


def _levels(base):
    """0, 1 and 4 args: base, base + 10, base + 40 us, each with a 95% interval of +/- 0.5 us."""
    return [{"nargs": n, "us": base + d, "ci_us": [base + d - 0.5, base + d + 0.5], "rounds": ROUNDS}
            for n, d in ((0, 0.0), (1, 10.0), (4, 40.0))]


def synthetic():
    doc = copy.deepcopy(read_json(FIXTURE))
    points = [_point("numba-cuda", "0.28.0", measured=False, refused="does not import: ImportError: x"),
              _point("numba-cuda", "0.30.0"), _point("numba-cuda", "0.29.0"),
              _point("numba-cuda", "0.30.1", measured=False),
              _point("numba-cuda", "0.30.0", PIN),
              _point("numba-cuda-mlir", "0.5.0"), _point("numba-cuda-mlir", "0.6.0")]
    base = {"numba-cuda==0.29.0": 15.0, "numba-cuda==0.30.0": 16.0, "numba-cuda==0.30.0+numba==0.65.1": 16.5,
            "numba-cuda-mlir==0.5.0": 19.0, "numba-cuda-mlir==0.6.0": 20.0}
    doc.update(points=points, levels={label: _levels(us) for label, us in base.items()},
               refused=[{"point": points[0]["sha"], "reason": points[0]["refused"]}], established=[])
    doc["settings"]["arg_counts"] = [0, 1, 4]
    doc["host"]["hostname"] = "gpubox"
    return doc


def series_by_env(doc):
    return {s["env_name"]: s for s in asvresults.release_series(doc)}


# ---------------------------------------------------------------- series and values

def test_points_split_into_one_series_per_project_and_stack():
    found = series_by_env(synthetic())
    assert sorted(found) == ["numba-cuda-mlir-newest", "numba-cuda-newest", "numba-cuda-numba-0.65.1"]
    newest = found["numba-cuda-newest"]
    assert (newest["project"], newest["stack"]) == ("numba-cuda", "newest")
    assert [p["version"] for p in newest["points"]] == ["0.28.0", "0.29.0", "0.30.0", "0.30.1"]  # version order
    assert found["numba-cuda-numba-0.65.1"]["stack"] == "numba==0.65.1"
    # the committed fixture (a stack bisect): one release on four stacks is four series of one point
    bisect = asvresults.release_series(read_json(FIXTURE))
    assert len(bisect) == 4 and all(len(s["points"]) == 1 for s in bisect)
    assert len({s["env_name"] for s in bisect}) == 4


def _write(tmp_path, docs, machine=None):
    named = [(f"doc{i}", d) for i, d in enumerate(docs)]
    versions = asvresults.check_releases(named, machine)
    commits = {p: ledger.ensure_series_ledger(tmp_path / "ledger", p, v) for p, v in versions.items()}
    paths = [p for where, d in named for p in asvresults.write_releases(str(tmp_path / "results"), d, commits,
                                                                        machine, where=where)]
    return commits, paths


def _load(tmp_path, sha, env, machine="gpubox"):
    from asv.results import Results

    res = Results.load(str(tmp_path / "results" / machine / f"{sha[:8]}-{env}.json"), machine_name=machine)
    params = res.get_result_params(asvresults.BENCHMARK)
    grid = [(int(a), c.strip("'")) for a in params[0] for c in params[1]]
    values = res.get_result_value(asvresults.BENCHMARK, params)
    stats = res.get_result_stats(asvresults.BENCHMARK, params)
    return res, {g: (v, st) for g, v, st in zip(grid, values, stats)}


def test_values_are_the_levels_with_their_intervals_and_no_samples(tmp_path):
    commits, _paths = _write(tmp_path, [synthetic()])
    res, cells = _load(tmp_path, commits["numba-cuda"]["0.29.0"], "numba-cuda-newest")
    widen = 0.5 * t_quantile(0.995, ROUNDS - 1) / t_quantile(0.975, ROUNDS - 1)
    for n, us in ((0, 15.0), (1, 25.0), (4, 55.0)):
        value, st = cells[(n, "[1, 1]")]
        assert value == pytest.approx(us * 1e-6)
        assert (st["q_25"], st["q_75"]) == pytest.approx(((us - 0.5) * 1e-6, (us + 0.5) * 1e-6))  # the 95% CI
        assert (st["ci_99_a"], st["ci_99_b"]) == pytest.approx(((us - widen) * 1e-6, (us + widen) * 1e-6))
        assert st["repeat"] == ROUNDS
    assert math.isnan(cells[(2, "[1, 1]")][0]) and math.isnan(cells[(0, "[1, 128]")][0])  # not measured: n/a
    assert res.get_result_samples(asvresults.BENCHMARK, res.get_result_params(asvresults.BENCHMARK)) == [None] * 35
    assert res.params["stack"] == "newest" and "project" not in res.params  # the project: the ledger branch
    assert res.params["measured_by"] == "launchbench releases"
    raw = json.loads((tmp_path / "results" / "gpubox" / f"{commits['numba-cuda']['0.29.0'][:8]}-numba-cuda-newest.json")
                     .read_text())
    assert raw["requirements"] == {"numba-cuda": "0.29.0", "numba": "0.65.1", "numpy": "2.3.5"}


def test_refused_points_are_failed_and_unmeasured_ones_absent(tmp_path):
    commits, paths = _write(tmp_path, [synthetic()])
    names = {Path(p).name for p in paths}
    refused = commits["numba-cuda"]["0.28.0"]
    assert f"{refused[:8]}-numba-cuda-newest.json" in names
    assert "0.30.1" not in commits["numba-cuda"]  # neither measured nor refused: no commit, no result
    raw = json.loads((tmp_path / "results" / "gpubox" / f"{refused[:8]}-numba-cuda-newest.json").read_text())
    row = raw["results"][asvresults.BENCHMARK]
    assert row[0] is None and len(row) == 4  # asv's "failed": no value, no interval, no invented number
    assert raw["requirements"] == {"numba-cuda": "0.28.0"}
    # one ledger commit per release of each project, whatever the stack: 0.30.0 is one commit for two series
    assert sorted(commits["numba-cuda"]) == ["0.28.0", "0.29.0", "0.30.0"]
    assert {f"{commits['numba-cuda']['0.30.0'][:8]}-numba-cuda-newest.json",
            f"{commits['numba-cuda']['0.30.0'][:8]}-numba-cuda-numba-0.65.1.json"} <= names


def test_the_ledger_is_one_branch_per_project_in_version_order_and_the_same_everywhere(tmp_path):
    a = ledger.ensure_series_ledger(tmp_path / "a", "numba-cuda", ["0.30.0", "0.29.0"])
    m = ledger.ensure_series_ledger(tmp_path / "a", "numba-cuda-mlir", ["0.6.0"])
    b = ledger.ensure_series_ledger(tmp_path / "b", "numba-cuda", ["0.29.0", "0.30.0"])
    assert a == b  # fixed contents and dates: another machine rebuilds the same commits
    assert ledger.branches(tmp_path / "a") == ["numba-cuda", "numba-cuda-mlir"]
    assert ledger.git(tmp_path / "a", "rev-parse", f"{a['0.30.0']}^") == a["0.29.0"]
    assert ledger.git(tmp_path / "a", "rev-parse", "numba-cuda-mlir-v0.6.0^{commit}") == m["0.6.0"]
    assert ledger.git(tmp_path / "a", "show", f"{m['0.6.0']}:VERSION") == "numba-cuda-mlir 0.6.0"
    again = ledger.ensure_series_ledger(tmp_path / "a", "numba-cuda", ["0.29.0", "0.30.0", "0.30.4"])
    assert again["0.29.0"] == a["0.29.0"] and ledger.git(tmp_path / "a", "rev-parse", f"{again['0.30.4']}^") == a["0.30.0"]
    with pytest.raises(UserError, match="ends at 0.30.4, and 0.20.0 is older"):
        ledger.ensure_series_ledger(tmp_path / "a", "numba-cuda", ["0.20.0"])
    # asv numbers commits in date order: each project's releases stay together
    order = ledger.git(tmp_path / "a", "rev-list", "--all", "--date-order", "--reverse").split()
    projects = [ledger.git(tmp_path / "a", "show", f"{c}:VERSION").split()[0] for c in order]
    assert projects in (["numba-cuda"] * 3 + ["numba-cuda-mlir"], ["numba-cuda-mlir"] + ["numba-cuda"] * 3)


def test_one_release_on_one_stack_in_two_documents_is_refused(tmp_path):
    other = synthetic()
    other["points"] = [p for p in other["points"] if p["version"] in ("0.29.0", "0.30.1")]  # 0.30.1: not filed
    with pytest.raises(UserError, match=r"doc0 and doc1 both hold numba-cuda 0.29.0 on stack newest"):
        _write(tmp_path, [synthetic(), other])
    other["points"] = [p for p in other["points"] if p["version"] == "0.30.1"]
    assert asvresults.check_releases([("doc0", synthetic()), ("doc1", other)])  # nothing of doc1's is filed
    twice = synthetic()
    twice["points"].append(_point("numba-cuda", "0.29.0"))
    with pytest.raises(UserError, match="0.29.0 is two points of one series"):
        asvresults.release_series(twice)
    assert not (tmp_path / "ledger").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize("change, needle", [
    (lambda d: d.update(kind="history"), r"is not a launchbench releases document \(kind 'history'\)"),
    (lambda d: d["settings"].update(arg_counts=[0, 16]), r"arg counts \[16\] are not in the asv suite's grid"),
    (lambda d: d["settings"].update(arg_kind="scalar"), "the kernels took scalar arguments"),
    (lambda d: d["settings"].update(launch="[1, 128]"), r"only \[1, 1\] maps onto the asv suite"),
    (lambda d: d.pop("levels"), "missing field 'levels'"),
])
def test_documents_that_do_not_map_onto_the_suite_are_refused(change, needle):
    doc = synthetic()
    change(doc)
    with pytest.raises(UserError, match=needle):
        asvresults.check_releases([("doc.json", doc)])


# ---------------------------------------------------------------- the command, through asv publish

def _cli(tmp_path, *docs, extra=()):
    out = tmp_path / "out"
    return cli.main(["asv-series", *map(str, docs), "--ledger", str(out / "ledger"), "--results-dir",
                     str(out / "results"), "--html-dir", str(out / "html"), *extra])


def _graphs(html: Path) -> dict:
    """{(project, stack): [(revision, {nargs: us})]} from asv publish's graph files of the launch benchmark
    (a series' project is its ledger branch)."""
    index = json.loads((html / "index.json").read_text())
    out = {}
    for params in index["graph_param_list"]:
        path = "graphs/" + "/".join(f"{k}-{params[k]}" for k in sorted(params)) + f"/{asvresults.BENCHMARK}.json"
        points = json.loads((html / path).read_text())
        cols = len(asvresults.CONFIG_NAMES)
        out[(params["branch"], params["stack"])] = [
            (rev, {n: round(vals[i * cols] * 1e6, 3) for i, n in enumerate(asvresults.ARG_COUNTS)
                   if vals[i * cols] is not None}) for rev, vals in points]
    return out


def test_asv_publish_shows_a_series_per_project_and_stack_with_a_point_per_release(tmp_path, capsys):
    doc = tmp_path / "synthetic.json"
    doc.write_text(json.dumps(synthetic()))
    assert _cli(tmp_path, doc, extra=["--publish"]) == 0, capsys.readouterr().err
    html = tmp_path / "out" / "html"
    index = json.loads((html / "index.json").read_text())
    assert sorted(index["params"]["branch"]) == ["numba-cuda", "numba-cuda-mlir"]  # a branch per project
    assert sorted(index["params"]["stack"]) == ["newest", "numba==0.65.1"]
    graphs = _graphs(html)
    assert sorted(graphs) == [("numba-cuda", "newest"), ("numba-cuda", "numba==0.65.1"), ("numba-cuda-mlir", "newest")]
    newest = graphs[("numba-cuda", "newest")]  # refused 0.28.0 failed (dropped at the edge), 0.30.1 absent
    assert [v for _rev, v in newest] == [{0: 15.0, 1: 25.0, 4: 55.0}, {0: 16.0, 1: 26.0, 4: 56.0}]
    assert newest[0][0] < newest[1][0]  # release order on the x axis
    assert [v[0] for _rev, v in graphs[("numba-cuda-mlir", "newest")]] == [19.0, 20.0]
    assert [v[0] for _rev, v in graphs[("numba-cuda", "numba==0.65.1")]] == [16.5]
    assert {"numba-cuda-v0.29.0", "numba-cuda-mlir-v0.6.0"} <= set(index["tags"])
    assert (html / "launchbench-vendor").is_dir()  # the site works offline
    conf = json.loads((tmp_path / "out" / "ledger.asv.json").read_text())
    assert conf["repo"] == str(tmp_path / "out" / "ledger") and conf["branches"] == ["numba-cuda", "numba-cuda-mlir"]


def test_the_fixture_publishes_four_series_of_one_point(tmp_path, capsys):
    assert _cli(tmp_path, FIXTURE, extra=["--publish"]) == 0, capsys.readouterr().err
    graphs = _graphs(tmp_path / "out" / "html")
    assert len(graphs) == 4 and {k[0] for k in graphs} == {"numba-cuda"}
    assert all(len(points) == 1 and sorted(points[0][1]) == [0, 1, 2, 3, 4] for points in graphs.values())
    assert "numba-cuda on stack cuda-bindings==13.5.0 cuda-core==0.7.0 llvmlite==0.47.0" in capsys.readouterr().out


@pytest.mark.parametrize("archive, docs", ARCHIVES, ids=["second-lease", "counted"])
def test_the_committed_asv_results_are_what_asv_series_writes_from_the_committed_documents(archive, docs, tmp_path):
    """An archive's results/ is generated (its run README, "Published as asv series"): filing the two series
    documents again rebuilds the ledger's commits and every file byte for byte."""
    import tarfile

    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "committed", members=[m for m in tar.getmembers() if m.name.startswith("results/")],
                       filter="data")
    committed = tmp_path / "committed" / "results"
    assert cli.main(["asv-series", *map(str, docs), "--ledger", str(tmp_path / "ledger"),
                     "--results-dir", str(tmp_path / "results")]) == 0
    made = sorted(os.path.relpath(p, tmp_path / "results") for p in glob.glob(str(tmp_path / "results" / "**" / "*.json"),
                                                                               recursive=True))
    have = sorted(os.path.relpath(p, committed) for p in glob.glob(str(committed / "**" / "*.json"), recursive=True))
    assert made == have and len(made) == 10 + 21 + 5 + 2  # mlir releases, numba-cuda measured and refused, machine, benchmarks
    for rel in made:
        assert (tmp_path / "results" / rel).read_bytes() == (committed / rel).read_bytes(), rel


# ---------------------------------------------------------------- one-line refusals

@pytest.mark.parametrize("argv, needle", [
    (["{compare}"], "is not a launchbench releases document (kind None)"),
    (["{fixture}", "--results-dir", "/proc/launchbench-series/results"], "--results-dir"),
    (["{fixture}", "--ledger", "{file}"], "--ledger {file} is a file"),
    (["{fixture}", "--publish"], "--publish needs --html-dir"),
    (["{fixture}", "--machine", "a/b"], "not usable as an asv machine"),
    (["{fixture}", "--machine", " "], "--machine is empty"),
    (["/no/such.json"], "RELEASES.json '/no/such.json': cannot read it"),
])
def test_mistakes_are_one_line_and_write_nothing(argv, needle, tmp_path, capsys):
    (tmp_path / "file.txt").write_text("x\n")
    subs = {"{compare}": str(ROOT / "tests" / "fixtures" / "compare-1.json.gz"), "{fixture}": str(FIXTURE),
            "{file}": str(tmp_path / "file.txt")}
    argv = [subs.get(a, a) for a in argv]
    base = ["asv-series", "--ledger", str(tmp_path / "ledger"), "--results-dir", str(tmp_path / "results")]
    rc = cli.main(base + argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith("launchbench: error: "), err
    assert needle.replace("{file}", subs["{file}"]) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


# ---------------------------------------------------------------- the release-series page

PAGE = os.path.join(ROOT, "docs", "release-series.md")  # the release-series page (output/seriespage.py)


def test_the_committed_page_and_chart_are_what_the_renderer_makes_from_the_committed_documents():
    """docs/release-series.md and .svg are generated: rendering the documents the page's last line lists, in
    that order, gives both byte for byte (a hand edit, or a document changed since, fails here)."""
    with open(PAGE, encoding="utf-8") as fh:
        text = fh.read()
    listed = re.findall(r"`([^`]+\.json(?:\.gz)?)`", text.rsplit("Documents read:", 1)[1])
    assert len(listed) == 2, "the page names the two series documents it was rendered from"
    docs = [read_json(os.path.join(ROOT, rel)) for rel in listed]
    assert {d["points"][0]["project"] for d in docs} == {"numba-cuda", "numba-cuda-mlir"}  # both projects
    assert text == seriespage.render_markdown(docs, listed, "release-series.svg")
    with open(os.path.join(ROOT, "docs", "release-series.svg"), encoding="utf-8") as fh:
        assert fh.read() == seriespage.render_svg(docs)
    assert "(release-series.svg)" in text


def test_a_panel_per_series_a_line_per_argument_count_and_no_refused_release_drawn():
    doc = synthetic()  # numba-cuda newest (0.28.0 refused, 0.29.0, 0.30.0, 0.30.1 unmeasured), pinned, mlir
    svg = seriespage.render_svg([doc])
    titles = re.findall(r'class="title">([^<]+)<', svg)
    assert titles == ["numba-cuda, each release on its newest stack", "numba-cuda, pinned numba==0.65.1",
                      "numba-cuda-mlir, each release on its newest stack"]
    assert len(re.findall("<polyline ", svg)) == 3 * 3  # 0, 1 and 4 args in each panel
    first = svg.split('class="title">')[1]  # the first panel, up to the second's title
    assert len(re.findall("<circle ", first)) == 3 * 2  # 0.29.0 and 0.30.0: the measured releases only
    assert ">0.29.0</text>" in first and ">0.28.0</text>" not in first and ">0.30.1</text>" not in first
    assert re.search(r">0</text>", first)  # the y axis starts at 0 µs
    page = seriespage.render_markdown([doc], ["synthetic.json"], "x.svg")
    assert "| 0.28.0 | refused: does not import: ImportError: x |" in page
    assert "| 0.29.0 | nb 0.65.1 np 2.3.5 | 15.00 [14.50, 15.50] | 25.00 [24.50, 25.50] | 55.00 [54.50, 55.50] | 20 |" in page
    assert "0.30.1" not in page  # neither measured nor refused: nothing to show


def test_series_page_writes_the_page_and_the_chart_beside_it(tmp_path, capsys):
    doc = tmp_path / "synthetic.json"
    doc.write_text(json.dumps(synthetic()))
    assert cli.main(["series-page", str(doc), "-o", str(tmp_path / "page.md")]) == 0
    assert (tmp_path / "page.svg").read_text().startswith("<svg ")
    assert "](page.svg)" in (tmp_path / "page.md").read_text()


def test_series_page_refuses_a_document_of_another_kind_in_one_line(tmp_path, capsys):
    other = tmp_path / "compare.json"
    other.write_text(json.dumps({"kind": "compare"}))
    rc = cli.main(["series-page", str(other), "-o", str(tmp_path / "page.md")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "is not a launchbench releases document (kind 'compare')" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["compare.json"]


def test_a_counted_series_shows_each_releases_exact_counts_step_from_the_previous_measured_one():
    """The counts step of a release is the one from the previous *measured* release of its own series:
    0.30.0 after 0.29.0 (0.29.5, refused, between them), never a step that crosses into another series."""
    doc = synthetic()
    doc["points"].insert(3, _point("numba-cuda", "0.29.5", measured=False, refused="does not launch: x"))
    assert "| counts step |" not in seriespage.render_markdown([doc], ["s.json"], "x.svg")  # not counted: no column
    moved = {"0": {"kinds": ["bytecodes", "calls"], "per_launch": {"bytecodes": 63, "calls": 7}, "moved": True,
                   "counts_moved": True, "c_callees": [], "c_callees_changed": 0}}
    doc["counts"] = {"steps": [
        {"previous": "numba-cuda==0.29.0", "commit": "numba-cuda==0.30.0", "moved": True, "per_nargs": moved},
        {"previous": "numba-cuda==0.30.0", "commit": "numba-cuda==0.30.0+numba==0.65.1", "moved": False,
         "per_nargs": {}},  # across two series: not shown
        {"previous": "numba-cuda-mlir==0.5.0", "commit": "numba-cuda-mlir==0.6.0", "moved": False, "per_nargs": {}}]}
    page = seriespage.render_markdown([doc], ["s.json"], "x.svg")
    assert "| rounds | step | counts step |" in page
    assert re.search(r"\| 0\.30\.0 \| [^\n]* \| 20 \|  \| \+63 bc, \+7 calls \|", page)
    assert re.search(r"\| 0\.29\.0 \| [^\n]* \| 20 \|  \|  \|", page)  # the first measured release: no step
    assert re.search(r"\| 0\.6\.0 \| [^\n]* \| 20 \|  \| = \|", page)
    pinned = page.split("## numba-cuda, pinned")[1].split("##")[0]
    assert re.search(r"\| 0\.30\.0 \| [^\n]* \| 20 \|  \|  \|", pinned)
