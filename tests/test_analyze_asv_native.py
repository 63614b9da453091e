"""gpu/analyze_asv_native.py on a made-up gpu/asv_native.sh folder: the numbers issue 20's acceptance reads
(per-row asv ratio vs launchbench's paired %, flags, A/A, the delay read back, per-process cost). CPU only."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAD = ("| Change   | Before [14349d29] <{a}>   | After [0a5a21b4] <{b}>   | Ratio   | Benchmark (Parameter) |\n"
        "|----------|------------|------------|---------|-----------|\n")


def _row(mark, before, after, ratio, bench):
    return f"| {mark:<8} | {before} | {after} | {ratio} | bench_launch.{bench} |\n"


@pytest.fixture
def analyze():
    spec = importlib.util.spec_from_file_location("analyze_asv_native", ROOT / "gpu" / "analyze_asv_native.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_summary_reads_verdict_lbcompare_aa_delay_and_walls(tmp_path, analyze, capsys):
    launch = "TimeLaunchPreconfigured.time_launch({n}, '[1, 1]')"
    verdict = HEAD.format(a="baseline", b="v2")
    for n, (before, after) in enumerate([(10.0, 11.0), (12.0, 13.0), (14.0, 14.9), (16.0, 16.9), (20.0, 21.0)]):
        verdict += _row("+", f"{before}±0.1μs", f"{after}±0.1μs", f"{after / before:.2f}", launch.format(n=n))
    verdict += _row("", "3.70±0.02μs", "3.69±0.02μs", "1.00", "TimeReferenceLaunch.time_launch")
    (tmp_path / "verdict-compare.txt").write_text("## asv compare baseline v2\n" + verdict)
    lb = [{"variant": "v2", "nargs": n, "delta_pct": p, "ci_pct": [p - 0.5, p + 0.5]}
          for n, p in enumerate([9.5, 8.0, 6.0, 5.5, 2.0])]
    (tmp_path / "lbcompare.json").write_text(json.dumps({"deltas": lb}))
    aa = "## asv compare 0.30.4 0.30.4+twin\n" + HEAD.format(a="0.30.4", b="0.30.4+twin")
    aa += _row("", "11.0±0.1μs", "11.1±0.1μs", "1.01", launch.format(n=0))
    aa += "\n## asv compare 0.30.4 0.30.4+delay0.5us\n" + HEAD.format(a="0.30.4", b="0.30.4+delay0.5us")
    aa += _row("+", "11.0±0.1μs", "11.6±0.1μs", "1.05", launch.format(n=0))
    aa += _row("", "3.70±0.02μs", "3.70±0.02μs", "1.00", "TimeReferenceLaunch.time_launch")
    (tmp_path / "aa-compare.txt").write_text(aa)
    (tmp_path / "walls.txt").write_text("cost-forkserver-r2 rc=0 wall=20.0s\ncost-forkserver-r12 rc=0 wall=40.0s\n")

    analyze.main(str(tmp_path))
    out = capsys.readouterr().out
    assert "flagged slower: 5/5; within 2 pp of launchbench: 4/5" in out  # 4 args: +5.0% vs +2.0%
    assert "+10.0%" in out and "+9.5% [+9.0, +10.0]" in out
    assert "0.30.4 vs 0.30.4+twin" in out and "flagged: 0 of 1 rows" in out
    assert "added +0.60 µs, expected 0.50" in out and "off +0.10" in out
    assert "per process (forkserver): 2.00 s" in out


def test_summary_of_an_empty_folder_prints_nothing(tmp_path, analyze, capsys):
    analyze.main(str(tmp_path))
    assert capsys.readouterr().out == ""
