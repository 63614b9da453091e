"""launchbench site: merging committed asv results, offline assets, ledgers, errors (no browser)."""
import json
import shutil
from pathlib import Path

import pytest

from launchbench.cli import main
from launchbench.environments import ledger
from launchbench.output import site


def _results_dir(path: Path, machine="h200", commit="a" * 40, benchmarks=("b.T.time_x",), value=1.0):
    (path / machine).mkdir(parents=True, exist_ok=True)
    (path / machine / "machine.json").write_text(json.dumps({"machine": machine, "version": 1}))
    (path / machine / f"{commit[:8]}-existing.json").write_text(json.dumps({"commit_hash": commit, "v": value}))
    bench = {name: {"name": name, "version": "1"} for name in benchmarks}
    (path / "benchmarks.json").write_text(json.dumps({**bench, "version": 2}))
    return path


def test_merge_copies_keeps_local_and_unions_benchmarks(tmp_path):
    src = _results_dir(tmp_path / "committed", benchmarks=("b.T.time_x", "b.T.time_y"))
    dest = _results_dir(tmp_path / "local", machine="laptop", benchmarks=("b.T.time_x", "b.L.time_z"))
    s = site.merge_results(src, dest)
    assert sorted(s.copied) == ["h200/aaaaaaaa-existing.json", "h200/machine.json"]
    assert s.benchmarks_added == 1
    merged = json.loads((dest / "benchmarks.json").read_text())
    assert set(merged) == {"b.T.time_x", "b.T.time_y", "b.L.time_z", "version"}
    # second merge: nothing new
    again = site.merge_results(src, dest)
    assert again.copied == [] and len(again.identical) == 2 and again.benchmarks_added == 0
    # the same machine re-ran the same commit locally: the local (newer) file wins
    (dest / "h200" / "aaaaaaaa-existing.json").write_text(json.dumps({"commit_hash": "a" * 40, "v": 2.0}))
    third = site.merge_results(src, dest)
    assert third.kept_local == ["h200/aaaaaaaa-existing.json"]
    assert json.loads((dest / "h200" / "aaaaaaaa-existing.json").read_text())["v"] == 2.0
    assert "1 kept local" in third.line(src)


def test_merge_refuses_other_folders_and_benchmark_versions(tmp_path):
    (tmp_path / "junk").mkdir()
    with pytest.raises(site.UserError, match="not an asv results directory"):
        site.merge_results(tmp_path / "junk", tmp_path / "dest")
    src = _results_dir(tmp_path / "src")
    dest = _results_dir(tmp_path / "dest", machine="m2")
    (dest / "benchmarks.json").write_text(json.dumps({"version": 1}))
    with pytest.raises(site.UserError, match="benchmarks.json version 2"):
        site.merge_results(src, dest)


def test_find_committed_results_finds_nested_dirs(tmp_path):
    a = _results_dir(tmp_path / "results" / "asv")
    b = _results_dir(tmp_path / "results" / "2026-11-22" / "asv")
    (tmp_path / "results" / "compare").mkdir()
    (tmp_path / "results" / "compare" / "benchmarks.json").write_text("{}")  # no machine folder
    assert site.find_committed_results(tmp_path / "results") == sorted([a, b])
    assert site.find_committed_results(tmp_path / "missing") == []


ASV_INDEX = Path(__import__("asv").__file__).parent / "www" / "index.html"


def test_localize_assets_rewrites_every_cdn_tag_of_asv(tmp_path):
    shutil.copy(ASV_INDEX, tmp_path / "index.html")
    assert "https://" in ASV_INDEX.read_text()
    assert site.localize_assets(tmp_path) == []
    text = (tmp_path / "index.html").read_text()
    tags = [line for line in text.splitlines() if "<script" in line or "<link" in line]
    assert not any("https://" in t or "integrity=" in t for t in tags)
    for local in set(site.CDN_FILES.values()):
        assert f'"{site.VENDOR_DEST}/{local}"' in text
        assert (tmp_path / site.VENDOR_DEST / local).stat().st_size > 1000
    assert '<link rel="stylesheet" href="launchbench-vendor/bootstrap.min.css">' in text


def test_localize_assets_reports_unknown_remote_scripts(tmp_path):
    (tmp_path / "index.html").write_text(
        '<script src="https://cdn.example.org/new-lib.js" integrity="x"></script>\n'
        '<a href="https://github.com/airspeed-velocity/asv/">asv</a>\n')
    assert site.localize_assets(tmp_path) == ["https://cdn.example.org/new-lib.js"]


def test_release_ledger_rebuilds_the_measuring_ledger(tmp_path):
    commits = ledger.ensure_ledger(tmp_path / "orig", ["0.29.0", "0.30.4"], site.DEFAULT_RELEASES)
    res = _results_dir(tmp_path / "res", commit=commits["0.30.4"])
    path, branches = site.release_ledger(res, tmp_path / "work")  # defaults match
    assert branches == site.DEFAULT_RELEASES
    assert ledger.git(path, "rev-parse", "v2") == commits["0.30.4"]
    # a ledger of other releases needs the manifest
    only = ledger.ensure_ledger(tmp_path / "orig2", ["0.30.4"], {"v2": "0.30.4"})
    res2 = _results_dir(tmp_path / "res2", commit=only["0.30.4"])
    assert site.release_ledger(res2, tmp_path / "work") is None
    site.write_ledger_manifest(res2, {"v2": "0.30.4"})
    assert site.release_ledger(res2, tmp_path / "work")[1] == {"v2": "0.30.4"}
    site.write_ledger_manifest(res2, {"v2": "0.29.0"})
    with pytest.raises(site.UserError, match="does not match the results' commits"):
        site.release_ledger(res2, tmp_path / "work")


@pytest.mark.parametrize("argv, needle", [
    (["site", "--config", "/nonexistent/asv.conf.json"], "not found"),
    (["site", "--results", "/nonexistent/dir"], "no such directory"),
])
def test_cli_errors_are_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_cli_refuses_a_folder_that_is_not_results(tmp_path, capsys):
    cfg = tmp_path / "asv.conf.json"
    cfg.write_text(json.dumps({"version": 1, "repo": ".", "results_dir": "r", "html_dir": "h"}))
    (tmp_path / "notresults").mkdir()
    assert main(["site", "--config", str(cfg), "--results", str(tmp_path / "notresults")]) == 2
    assert "is not an asv results directory" in capsys.readouterr().err


def test_cli_with_nothing_to_publish(tmp_path, capsys):
    cfg = tmp_path / "asv.conf.json"
    cfg.write_text(json.dumps({"version": 1, "repo": ".", "results_dir": "r", "html_dir": "h"}))
    assert main(["site", "--config", str(cfg)]) == 2
    assert "no asv results in" in capsys.readouterr().err
