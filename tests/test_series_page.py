"""The release-series page (output/seriespage.py): a panel per series, a line per argument count, refused
releases in the tables and never drawn, and the committed page and chart equal to what the renderer makes."""
import json
import os
import re

from launchbench import cli
from launchbench.base.atomic import read_json
from launchbench.output import seriespage
from test_asv_series import synthetic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "release-series.md")


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
