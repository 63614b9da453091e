"""launchbench report: content, files, CLI and errors, on documents built by compare's own code."""
import json
import random
import struct

import pytest

from launchbench.cli import main
from launchbench.commands.compare import build_document
from launchbench.engine.runplan import Outcome
from launchbench.output import documents, report

ARGS = [0, 1, 2, 3, 4]
LEVELS = {"baseline": 10.0, "contextvar": 13.0, "v2": 10.05}  # µs at 0 args, +4.5 µs per arg


def _variant(name, spec, kind="wheel", mechanism=None, version="0.29.0"):
    return {"name": name, "spec": spec, "kind": kind, "mechanism": mechanism,
            "base": "numba-cuda==0.29.0" if mechanism else spec, "numba_cuda_version": version,
            "git_sha": "0123456789abcdef0123456789abcdef01234567" if kind == "repo" else None,
            "pins": {"numpy": "2.3.5"}, "installed": {"numba": "0.65.1", "numpy": "2.3.5"},
            "python": "3.12.3", "env": f"/envs/{name}"}


def make_result(*, rounds=4, peers=True, simulator=False, interrupted=False, seed=0):
    """A compare document from synthetic samples, assembled by compare.build_document."""
    rng = random.Random(seed)
    samples, peer_samples = [], []
    for rnd in range(rounds):
        drift = rng.uniform(-0.5, 0.5)  # the whole round moves, as on the GPU machine
        for n in ARGS:
            for name, level in LEVELS.items():
                for rep in range(3):
                    us = level + 4.5 * n + drift + rng.gauss(0, 0.02)
                    samples.append({"variant": name, "nargs": n, "round": rnd, "repeat": rep,
                                    "worker": 100 + rnd, "us": us})
            peer_samples.append({"peer": "cupy", "nargs": n, "round": rnd, "us": 4.3 + 0.1 * n})
            peer_samples.append({"peer": "floor", "nargs": n, "round": rnd, "us": None})
    settings = {"arg_counts": ARGS, "loops": {str(n): 20000 for n in ARGS}, "calibrated": True,
                "sample_target_s": 0.05, "repeats": 3, "rounds": rounds + (2 if interrupted else 0),
                "warmup": 1000, "affinity": [3], "gc_disabled": True, "launch": "[1, 1]",
                "order": "interleaved", "peers": peers}
    variants = [_variant("baseline", "numba-cuda==0.29.0"),
                _variant("contextvar", "contextvar@numba-cuda==0.29.0", "mechanism", "contextvar"),
                _variant("v2", "numba-cuda==0.30.4", version="0.30.4")]
    device = ({"name": "CUDA simulator (not a GPU)", "simulator": True} if simulator else
              {"name": "NVIDIA H200", "compute_capability": "9.0", "driver_version": "13.0",
               "runtime_version": "13.0", "simulator": False})
    outcome = Outcome(samples=samples, peer_samples=peer_samples if peers else [],
                      infos={"baseline": {"device": device}}, rounds_completed=rounds,
                      interrupted=interrupted, reason="KeyboardInterrupt" if interrupted else None)
    host = {"python": "3.12.3", "implementation": "CPython", "platform": "Linux-6.8-x86_64",
            "cpu": "Intel(R) Xeon(R) Platinum 8480C", "cpu_count": 16, "hostname": "gpu-host"}
    doc = build_document(argv=["launchbench", "compare"], simulator=simulator, host=host,
                         settings=settings, reference="baseline", variants=variants, outcome=outcome)
    return documents.validate(doc, "compare")


def _png_size(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_levels_are_means_of_per_round_medians_with_interval_over_rounds():
    result = make_result()
    lv = report.levels(result)
    import statistics

    for (name, n), level in lv.items():
        per_round = {}
        for s in result["samples"]:
            if s["variant"] == name and s["nargs"] == n:
                per_round.setdefault(s["round"], []).append(s["us"])
        medians = [statistics.median(v) for v in per_round.values()]
        assert level.center == pytest.approx(statistics.fmean(medians))
        assert level.low < level.center < level.high
        assert level.rounds == 4 and level.units == "rounds"
    assert set(lv) == {(v, n) for v in LEVELS for n in ARGS}


def test_markdown_has_verdicts_tables_environment_and_plot_link(tmp_path):
    result = make_result()
    md, png = tmp_path / "out" / "r.md", tmp_path / "r.png"
    written = report.export(result, markdown=md, plot=png)
    assert written == [str(png), str(md)]
    text = md.read_text()
    assert "![launch overhead plot](../r.png)" in text  # relative to the Markdown file
    assert "contextvar vs baseline: slower at 5 arg counts (0, 1, 2, 3, 4)" in text
    for d in result["deltas"]:
        assert d["summary"] in text
    assert "| GPU | NVIDIA H200 |" in text and "| CUDA driver | 13.0 |" in text
    assert "Intel(R) Xeon(R) Platinum 8480C" in text
    assert "contextvar@numba-cuda==0.29.0 (mechanism contextvar on numba-cuda==0.29.0)" in text
    assert "## Peers and floor" in text and "cupy" in text
    assert "Not available on this machine: floor." in text
    assert "NOT A MEASUREMENT" not in text
    # the 0-arg baseline cell is the level computed from the samples
    lvl = report.levels(result)[("baseline", 0)]
    assert f"| 0 | {lvl.center:.2f} [{lvl.low:.2f}, {lvl.high:.2f}] |" in text
    w, h = _png_size(png.read_bytes())
    assert w >= 1500 and h >= 400  # three panels side by side


def test_html_is_self_contained_and_escaped(tmp_path):
    result = make_result()
    result["variants"][2]["spec"] = "numba-cuda==0.30.4 <b>"
    out = tmp_path / "r.html"
    assert report.export(result, html=out) == [str(out)]
    text = out.read_text()
    assert '<img alt="launch overhead plot" src="data:image/png;base64,' in text
    assert "numba-cuda==0.30.4 &lt;b&gt;" in text and "<b>" not in text
    assert "http://" not in text and "https://" not in text  # nothing to fetch
    assert not (tmp_path / "r.png").exists()


def test_two_panels_without_peers(tmp_path):
    result = make_result(peers=False)
    png = tmp_path / "p.png"
    report.export(result, plot=png)
    w, _ = _png_size(png.read_bytes())
    assert 1300 <= w < 1600
    md = report.render_markdown(report.build_blocks(result, None))
    assert "Peers and floor" not in md and "![" not in md


def test_smoke_and_interrupted_runs_are_labelled():
    result = make_result(simulator=True, interrupted=True, rounds=2)
    md = report.render_markdown(report.build_blocks(result, None))
    assert f"> **{report.SMOKE_BANNER}**" in md
    assert "Interrupted after 2 of 4 rounds (KeyboardInterrupt)" in md


def test_single_round_interval_is_over_samples():
    result = make_result(rounds=1)
    level = report.levels(result)[("v2", 3)]
    assert level.rounds == 1 and level.units == "samples"
    assert level.low <= level.center <= level.high


def test_cli_default_outputs_sit_next_to_the_json(tmp_path, capsys):
    path = tmp_path / "run1" / "compare.json"
    documents.write(str(path), make_result(), "compare")
    assert main(["report", str(path)]) == 0
    for ext in ("md", "html", "png"):
        assert (tmp_path / "run1" / f"compare.{ext}").stat().st_size > 500
    assert "wrote" in capsys.readouterr().out
    # regenerating gives byte-identical files (committed reports do not churn)
    before = {ext: (tmp_path / "run1" / f"compare.{ext}").read_bytes() for ext in ("md", "png")}
    assert main(["report", str(path)]) == 0
    assert before == {ext: (tmp_path / "run1" / f"compare.{ext}").read_bytes() for ext in ("md", "png")}


def test_default_outputs_of_a_gzipped_json_drop_both_suffixes():
    from launchbench.output.report import default_outputs

    assert default_outputs("r/default.json.gz") == {"markdown": "r/default.md", "html": "r/default.html",
                                                    "plot": "r/default.png"}
    assert default_outputs("r/default.json") == default_outputs("r/default.json.gz")


def test_cli_only_requested_outputs(tmp_path):
    path = tmp_path / "c.json"
    documents.write(str(path), make_result(), "compare")
    assert main(["report", str(path), "--markdown", str(tmp_path / "only.md")]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "only.md"]


@pytest.mark.parametrize("content, needle", [
    (None, "does not exist"),
    ("{not json", "not valid JSON"),
    (json.dumps({"schema": "something.else"}), "not a launchbench.compare document"),
])
def test_cli_bad_input_is_one_line(tmp_path, capsys, content, needle):
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_output_that_is_a_directory(tmp_path, capsys):
    path = tmp_path / "c.json"
    documents.write(str(path), make_result(), "compare")
    assert main(["report", str(path), "--html", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_report_module_is_import_light():
    import subprocess
    import sys

    code = ("import sys, launchbench.output.report, launchbench.output.site, launchbench.commands.report, "
            "launchbench.commands.site; "
            "bad = [m for m in ('matplotlib', 'numpy', 'numba', 'asv') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_export_without_matplotlib_writes_markdown_and_says_so(tmp_path, monkeypatch, capsys):
    import builtins
    import glob
    import os

    from launchbench.base import atomic
    from launchbench.output import report

    path = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "fixtures", "compare-1.json.gz")))[0]
    doc = atomic.read_json(path)
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    written = report.export(doc, markdown=str(tmp_path / "r.md"), plot=str(tmp_path / "r.png"))
    assert written == [str(tmp_path / "r.md")] and not (tmp_path / "r.png").exists()
    assert "matplotlib is not installed" in capsys.readouterr().err
