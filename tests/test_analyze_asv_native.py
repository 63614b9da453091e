"""lab/recipes/analyze_asv_native.py on a made-up lab/recipes/asv_native.sh folder: the numbers native asv's acceptance reads
(per-row asv ratio vs launchbench's paired %, flags, A/A, the delay read back, per-process cost). CPU only."""
import importlib.util
import json
import math
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAD = ("| Change   | Before [14349d29] <{a}>   | After [0a5a21b4] <{b}>   | Ratio   | Benchmark (Parameter) |\n"
        "|----------|------------|------------|---------|-----------|\n")


def _row(mark, before, after, ratio, bench):
    return f"| {mark:<8} | {before} | {after} | {ratio} | bench_launch.{bench} |\n"


@pytest.fixture
def analyze():
    spec = importlib.util.spec_from_file_location("analyze_asv_native", ROOT / "lab" / "recipes" / "analyze_asv_native.py")
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


def _asv_result(path, commit, rows):
    """One asv result file with samples (seconds): rows = {benchmark: (params, [samples per combo])}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    results = {f"bench_launch.{name}": [None, params, None, None, None, None, samples]
               for name, (params, samples) in rows.items()}
    path.write_text(json.dumps({"commit_hash": commit, "result_columns": [
        "result", "params", "version", "started_at", "duration", "stats_ci_99_a", "samples"], "results": results}))


def test_calibration_reads_the_samples_and_scales_the_delay_by_the_anchor(tmp_path, analyze, capsys):
    launch = "TimeLaunchPreconfigured.time_launch"
    params = [["0", "2"], ["'[1, 1]'"]]
    refs = ("TimeReferenceLaunch.time_launch", ([["0", "2"]], [[10e-6, 10e-6], [20e-6, 20e-6]]))
    cal = tmp_path / "asv-builds" / "m-cal"
    _asv_result(cal / "10eac70a-env-x.json", "10eac70a" + "0" * 32,
                {launch: (params, [[11e-6, 11e-6], [19e-6, 19e-6]]), refs[0]: refs[1]})
    _asv_result(cal / "15286822-env-x.json", "15286822" + "0" * 32,
                {launch: (params, [[11.5e-6, 11.5e-6], [19.9e-6, 19.9e-6]]), refs[0]: refs[1]})
    (cal / "machine.json").write_text("{}")
    (tmp_path / "anchor-calbuilds").mkdir()
    (tmp_path / "anchor-calbuilds" / "a0.json").write_text(json.dumps(
        {"0.29.0|pre|0|[1, 1]": 9.0, "0.29.0|pre|2|[1, 1]": 18.0, "0.29.0|cpl|0|[1, 1]": 99.0}))

    analyze.calibration(str(tmp_path))
    out = capsys.readouterr().out
    # 0 args: +0.5 read, 0.5 x 9 / 10 = 0.45 expected; 2 args: +0.9 read, 0.5 x 18 / 20 = 0.45 expected;
    # every process reads the same, so each bootstrap interval is the point itself
    assert ("0 args: 11.000 -> 11.500 µs; added +0.500 [+0.500, +0.500], expected 0.450, "
            "off +0.050 [+0.050, +0.050] (within ±0.2: interval)") in out
    assert "2 args: 19.000 -> 19.900 µs; added +0.900 [+0.900, +0.900], expected 0.450, off +0.450" in out
    assert "(within ±0.2: NOT)" in out


def test_calibration_judges_the_interval_not_only_the_point(tmp_path, analyze, capsys):
    """A point inside the tolerance whose processes spread beyond it is 'point only'."""
    launch = "TimeLaunchPreconfigured.time_launch"
    params = [["0"], ["'[1, 1]'"]]
    refs = ("TimeReferenceLaunch.time_launch", ([["0"]], [[10e-6] * 5]))
    cal = tmp_path / "asv-builds" / "m-cal"
    _asv_result(cal / "10eac70a-env-x.json", "10eac70a" + "0" * 32,
                {launch: (params, [[x * 1e-6 for x in (10.0, 10.5, 11.0, 11.5, 12.0)]]), refs[0]: refs[1]})
    _asv_result(cal / "15286822-env-x.json", "15286822" + "0" * 32,
                {launch: (params, [[x * 1e-6 for x in (10.5, 11.0, 11.5, 12.0, 12.5)]]), refs[0]: refs[1]})
    (tmp_path / "anchor-calbuilds").mkdir()
    (tmp_path / "anchor-calbuilds" / "a0.json").write_text(json.dumps({"0.29.0|pre|0|[1, 1]": 10.0}))

    analyze.calibration(str(tmp_path))
    out = capsys.readouterr().out
    assert "added +0.500 [" in out and "expected 0.500, off +0.000 [" in out and "(within ±0.2: point only)" in out


def test_bootstrap_interval_and_per_argument_slopes(analyze):
    import statistics

    an = analyze
    lo, hi = an.bootstrap_ci(statistics.median, [[1.0, 2.0, 3.0, 4.0, 100.0]])
    assert 1.0 <= lo < 3.0 < hi <= 100.0
    assert an.bootstrap_ci(statistics.median, [[5.0] * 8]) == (5.0, 5.0)
    # before 10 + 3/arg, after 11 + 3.5/arg: the step is +0.5 µs per argument over 1-4 args (0 args ignored)
    rows = {n: ([10.0 + 3 * n + d for d in (-0.1, 0, 0.1)], [11.0 + 3.5 * n + d for d in (-0.1, 0, 0.1)])
            for n in range(1, 5)}
    rows[0] = ([0.0], [50.0])
    fit = an.per_arg_slopes(rows)
    assert fit["before"][0] == pytest.approx(3.0) and fit["after"][0] == pytest.approx(3.5)
    step, (lo, hi) = fit["step"]
    assert step == pytest.approx(0.5) and lo < 0.5 < hi and hi - lo < 0.2


def test_verdict_reads_the_samples_in_the_tarball_not_the_rounded_printout(tmp_path, analyze, capsys):
    """asv prints 11.0 -> 11.9 (+8.2 %); the samples say 10.964 -> 11.887 (+8.42 %): the samples win."""
    import tarfile

    launch = "TimeLaunchPreconfigured.time_launch"
    params = [["0", "1"], ["'[1, 1]'"]]
    src = tmp_path / "src" / "asv-builds" / "m"
    _asv_result(src / "a8221c7b-env-x.json", "a8221c7b" + "0" * 32,
                {launch: (params, [[10.964e-6] * 3, [17.0e-6] * 3])})
    _asv_result(src / "15286822-env-x.json", "15286822" + "0" * 32,
                {launch: (params, [[11.887e-6] * 3, [18.0e-6] * 3])})
    d = tmp_path / "run"
    d.mkdir()
    with tarfile.open(d / "asv-results.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "src" / "asv-builds", arcname="asv-builds")
    table = "| Change   | Before [a8221c7b] <v0.29.0^0>   | After [15286822] <v0.30.4^0>   | Ratio   | Benchmark (Parameter) |\n"
    table += "|---|---|---|---|---|\n"
    table += _row("+", "11.0±0.1μs", "11.9±0.1μs", "1.08", "TimeLaunchPreconfigured.time_launch(0, '[1, 1]')")
    table += _row("+", "17.0±0.1μs", "18.0±0.1μs", "1.06", "TimeLaunchPreconfigured.time_launch(1, '[1, 1]')")
    (d / "builds-compare.txt").write_text(table)

    analyze.main(str(d))
    out = capsys.readouterr().out
    assert "a8221c7b -> 15286822" in out and "3/3 processes" in out
    assert "10.964   11.887    +8.42% [+8.42, +8.42]" in out
    assert "+8.2%" not in out


def _existing_env_results(folder, results, durations=None):
    """One asv results folder as asv-releases leaves it: machine.json and one commit's file (seconds)."""
    folder.mkdir(parents=True)
    (folder / "machine.json").write_text(json.dumps({"machine": folder.name}))
    doc = {"commit_hash": "4efa3c9a", "results": results,
           "result_columns": ["result", "params", "version", "started_at", "duration", "samples"]}
    if durations:
        doc["durations"] = durations
    (folder / "4efa3c9a-existing.json").write_text(json.dumps(doc))


def test_grid_durations_add_up_per_benchmark_and_setup_cache_longest_first(tmp_path, analyze, capsys):
    _existing_env_results(tmp_path / "grid-results" / "h200-grid", {
        "bench_launch.TimeLaunchPreconfigured.time_launch": [None, [], None, None, 120.5, None],
        "bench_lcs.TimeLCSLaunch.time_launch": [None, [], None, None, 60.0, None],
        "bench_launch.TrackRunKind.track_cuda_simulator": [None, [], None, None, None, None]},
        durations={"<setup_cache bench_lcs:226>": 9.5})

    got = analyze.grid_durations(str(tmp_path / "grid-results"))
    assert list(got) == ["bench_launch.TimeLaunchPreconfigured.time_launch", "bench_lcs.TimeLCSLaunch.time_launch",
                         "<setup_cache bench_lcs:226>"]
    assert got["<setup_cache bench_lcs:226>"] == 9.5
    analyze.main(str(tmp_path))
    out = capsys.readouterr().out
    assert "== grid: 190 s" in out and "  120.5 s   63.4 %  bench_launch.TimeLaunchPreconfigured" in out


def test_mechanism_costs_from_the_rows_next_to_launchbench_mechanisms(tmp_path, analyze, capsys):
    """A mechanism's cost is the difference of two rows' medians over processes, in µs and in % of the
    row it is taken from; launchbench mechanisms' paired deltas sit beside it, sign-matched."""
    specs = ["'stock'", "'passthrough'", "'contextvar'", "'tls'", "'delay:0.5us'"]
    level = {"'stock'": 10.0, "'passthrough'": 10.2, "'contextvar'": 13.0, "'tls'": 10.3, "'delay:0.5us'": 10.7}
    # two processes per row, 0 and 1 args; at 1 arg every row is 10 µs higher
    samples = [[(level[m] + 10 * n + d) * 1e-6 for d in (-0.1, 0.1)] for m in specs for n in (0, 1)]
    _existing_env_results(tmp_path / "asv-results-mech-anchor" / "m-mech-anchor", {
        "bench_mechanisms.TimeMechanismLaunch.time_launch": [None, [specs, ["0", "1"]], None, None, 30.0, samples]})
    lb = tmp_path / "lbmechanisms"
    lb.mkdir()
    per_args = {str(n): {"vs_passthrough": {"stock": {"delta_us": -0.2, "delta_pct": -2.0},
                                            "tls": {"delta_us": 0.05, "delta_pct": 0.5},
                                            "delay:500ns": {"delta_us": 0.5, "delta_pct": 4.9}},
                         "vs_stock": {"contextvar": {"delta_us": 3.5, "delta_pct": 35.0}}} for n in (0, 1)}
    (lb / "mechanisms-030.json").write_text(json.dumps({"analysis": {"per_args": per_args}}))

    rows = analyze.mechanism_rows(str(tmp_path / "asv-results-mech-anchor"))
    assert rows[("tls", 1)] == pytest.approx([20.2, 20.4])
    costs = analyze.mechanism_costs(rows)
    assert costs["contextvar-stock"][0] == pytest.approx((3.0, 30.0))
    assert costs["tls-passthrough"][1] == pytest.approx((0.1, 100 * (20.3 / 20.2 - 1)))
    lbc = analyze.lb_mechanism_costs(str(lb / "mechanisms-030.json"))
    assert lbc["passthrough-stock"][0] == (0.2, 2.0)  # stock vs passthrough, turned around
    analyze.mechanisms(str(tmp_path))
    out = capsys.readouterr().out
    assert "reference anchor: 10 rows, process spread 1.3 %" in out
    assert "contextvar-stock   µs 0: +3.00 (+3.50)  1: +3.00 (+3.50)   worst off 0.50" in out
    assert "delay-passthrough  µs 0: +0.50 (+0.50)  1: +0.50 (+0.50)   worst off 0.00" in out


def test_argkind_rows_per_reference_give_per_argument_cost_and_process_spread(tmp_path, analyze, capsys):
    # torch, lazy: 100 µs at 1 arg, 1350 at 26 (50 µs per argument); two processes each, 2 % and 4 % apart
    samples = [[99e-6, 101e-6], [1323e-6, 1377e-6]]
    _existing_env_results(tmp_path / "asv-results-ak-bindings" / "m-ak-bindings", {
        "bench_argkinds.TimeArgKindLaunch.time_launch": [None, [["'torch'"], ["1", "26"], ["'lazy'"]], None, None, 9.0,
                                                         samples]})

    rows = analyze.argkind_rows(str(tmp_path / "asv-results-ak-bindings"))
    assert rows[("torch", 26, "lazy")] == pytest.approx([1323.0, 1377.0])
    analyze.argkinds(str(tmp_path))
    out = capsys.readouterr().out
    assert "reference bindings: 2 rows, process spread 3.0 % (median over rows)" in out
    assert "torch lazy  1 arg   100.00 µs  26 args  1350.00 µs  per arg  50.00 µs [+48.88, +51.12]  processes apart 2.0 / 4.0 %" in out


# ---------------------------------------------------------------- results with the reference parameter

LABEL = "'normalized to anchor numba-cuda 0.29.0 build 1a2b3c4d5e6f, A0 table 9f8e7d6c, R0 3.70 us'"


def _format2_table(folder, a0, ratios=None, table_id="9f8e7d6c"):
    """A format-2 A0 table (launchbench/workloads/anchor.py) in *folder*: {nargs: A0}, {kind key: (rho, lo, hi)}."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"id": table_id, "format": 2, "precision": {"a0": "median over fresh processes"},
           "a0": {str(n): {"a0_us": v, "processes": [v - 0.1, v, v + 0.1], "slots": 200,
                           "spread_pct": 100 * 0.2 / v} for n, v in a0.items()},
           "ratios": {k: {"ratio": r, "slots": 200, "ci95": [lo, hi]} for k, (r, lo, hi) in (ratios or {}).items()},
           "a0_us": {}}
    (folder / f"a0-host-1a2b3c4d5e6f-r0-3.70-{table_id}.table").write_text(json.dumps(doc))


def test_calibration_reads_rows_with_a_reference_and_a_format_2_table(tmp_path, analyze, capsys):
    """Newer rows carry a third parameter (the reference label) and TimeReferenceLaunch a second; the A0
    comes from the .table whose id the label names (another table beside it is ignored)."""
    launch = "TimeLaunchPreconfigured.time_launch"
    params = [["0", "2"], ["'[1, 1]'"], [LABEL]]
    refs = ("TimeReferenceLaunch.time_launch", ([["0", "2"], [LABEL]], [[10e-6, 10e-6], [20e-6, 20e-6]]))
    cal = tmp_path / "asv-builds" / "m-cal"
    _asv_result(cal / "10eac70a-env-x.json", "10eac70a" + "0" * 32,
                {launch: (params, [[11e-6, 11e-6], [19e-6, 19e-6]]), refs[0]: refs[1]})
    _asv_result(cal / "15286822-env-x.json", "15286822" + "0" * 32,
                {launch: (params, [[11.5e-6, 11.5e-6], [19.9e-6, 19.9e-6]]), refs[0]: refs[1]})
    _format2_table(tmp_path / "anchor-calbuilds", {0: 9.0, 2: 18.0})
    _format2_table(tmp_path / "anchor-calbuilds", {0: 99.0, 2: 99.0}, table_id="00000000")

    analyze.calibration(str(tmp_path))
    out = capsys.readouterr().out
    assert ("0 args: 11.000 -> 11.500 µs; added +0.500 [+0.500, +0.500], expected 0.450, "
            "off +0.050 [+0.050, +0.050] (within ±0.2: interval)") in out
    assert "2 args: 19.000 -> 19.900 µs; added +0.900 [+0.900, +0.900], expected 0.450" in out


def test_launch_pairs_match_rows_with_a_reference_and_refuse_two_references(analyze):
    other = "'normalized to bindings reference, R0 3.70 us'"
    samples = {("m", "aaaaaaaa", analyze.LAUNCH, ("0", "'[1, 1]'", LABEL)): [1.0],
               ("m", "bbbbbbbb", analyze.LAUNCH, ("0", "'[1, 1]'", LABEL)): [2.0],
               ("m", "aaaaaaaa", analyze.LAUNCH, ("0", "'[1, 128]'", LABEL)): [9.0],
               ("m", "bbbbbbbb", analyze.LAUNCH, ("1", "'[1, 1]'", other)): [3.0]}
    assert analyze.launch_pairs(samples, "aaaaaaaa", "bbbbbbbb") == {0: ([1.0], [2.0])}
    samples[("m", "aaaaaaaa", analyze.LAUNCH, ("0", "'[1, 1]'", other))] = [5.0]
    samples[("m", "bbbbbbbb", analyze.LAUNCH, ("0", "'[1, 1]'", other))] = [6.0]
    with pytest.raises(ValueError, match="two references"):
        analyze.launch_pairs(samples, "aaaaaaaa", "bbbbbbbb")


def _grid(tmp_path, level, spread=0.05):
    """A grid-results folder of TimeLaunchPreconfigured rows (2 processes each, ±spread µs) at 0 and 4 args
    for three configurations, levels from *level*[(nargs, config)] in µs."""
    configs = ["'[1, 1]'", "'[1, 128]'", "'[1, 128] stream'"]
    samples = [[(level[(n, c.strip("'"))] + d) * 1e-6 for d in (-spread, spread)] for n in (0, 4) for c in configs]
    _existing_env_results(tmp_path / "grid-results" / "h200-native-grid", {
        "bench_launch.TimeLaunchPreconfigured.time_launch": [None, [["0", "4"], configs, [LABEL]], None, None,
                                                             100.0, samples]})


def test_grid_rows_agree_across_configurations_when_they_cost_the_same(tmp_path, analyze, capsys):
    """Item 2's 'Done when' on a grid: at 0 args the three configurations read 11.0 ± 0.05 (agree); at
    4 args stream reads 32.3 where the others read 27.8 (the old per-kind A0's error) and is named; each
    row's rho interval widens its own interval, and the A0 table's precision is printed."""
    level = {(0, "[1, 1]"): 11.0, (0, "[1, 128]"): 11.02, (0, "[1, 128] stream"): 10.98,
             (4, "[1, 1]"): 27.8, (4, "[1, 128]"): 27.7, (4, "[1, 128] stream"): 32.3}
    _grid(tmp_path, level)
    _format2_table(tmp_path / "grid-results" / "anchor-a0", {0: 11.0, 4: 27.8},
                   {"pre|4|[1, 128] stream": (1.0, 0.99, 1.01)})

    analyze.grid_rows(str(tmp_path))
    out = capsys.readouterr().out
    assert "TimeLaunchPreconfigured, normalized to anchor numba-cuda 0.29.0" in out
    assert "widened by each row's rho interval" in out
    assert "0 args: agree (means 10.98-11.02 µs, 0.4 % apart" in out
    assert "4 args: DO NOT agree (means 27.70-32.30 µs" in out
    # each row's t interval uses the spread pooled over all six rows (2 processes each, ±0.05 µs: df 6)
    sd = math.sqrt(sum(2 * (0.05 / v) ** 2 for v in level.values()) / 6)
    assert f"relative SD {100 * sd:.2f} %, df 6" in out
    half = analyze.stats.t_quantile(0.975, 6) * sd * 32.3 / math.sqrt(2)
    lo, hi = (32.3 - half) * 0.99, (32.3 + half) * 1.01  # widened by its rho interval [0.99, 1.01]
    assert re.search(rf"\[1, 128\] stream +32\.30 \[{lo:.2f}, {hi:.2f}\]", out)
    assert "agree within their intervals at 1 of 2 argument counts" in out
    assert "0 args: A0 11.000 µs, 3 processes x 200 slots (10.90, 11.00, 11.10), spread 1.8 %" in out
    assert "rho: 1 kinds, 95 % interval widths 2.0-2.0 %" in out


def test_a_rho_interval_can_make_rows_agree(tmp_path, analyze, capsys):
    """A row 2 % off whose rho is known only to ±3 % agrees: its interval includes the others'."""
    level = {(n, c): 20.0 for n in (0, 4) for c in ("[1, 1]", "[1, 128]")}
    level.update({(0, "[1, 128] stream"): 20.0, (4, "[1, 128] stream"): 20.4})
    _grid(tmp_path, level)
    _format2_table(tmp_path / "anchor-grid", {0: 20.0, 4: 20.0}, {"pre|4|[1, 128] stream": (1.0, 0.97, 1.03)})
    analyze.grid_rows(str(tmp_path))
    assert "agree within their intervals at 2 of 2 argument counts" in capsys.readouterr().out


def test_mechanism_and_argkind_rows_drop_the_reference_parameter(tmp_path, analyze):
    samples = [[10e-6, 10.2e-6]]
    _existing_env_results(tmp_path / "asv-results-mech-anchor" / "m", {
        "bench_mechanisms.TimeMechanismLaunch.time_launch": [None, [["'stock'"], ["0"], [LABEL]], None, None, 3.0,
                                                             samples]})
    assert analyze.mechanism_rows(str(tmp_path / "asv-results-mech-anchor")) == {("stock", 0): pytest.approx([10.0, 10.2])}


def test_a_format_3_table_derives_every_a0_from_one_and_prints_each_ratio(tmp_path, analyze, capsys):
    """Format 3: A0(0) from fresh processes, A0(4) = A0(0) x q with q paired in the anchor server; the
    analysis prints q and its interval, and how wide a row's own interval is, to compare them."""
    level = {(n, c): v for n, v in ((0, 11.0), (4, 27.8)) for c in ("[1, 1]", "[1, 128]", "[1, 128] stream")}
    _grid(tmp_path, level)
    folder = tmp_path / "grid-results" / "anchor-a0"
    folder.mkdir(parents=True)
    doc = {"id": "9f8e7d6c", "format": 3, "precision": {"a0": "A0(0) and q"}, "ratios": {}, "a0_us": {},
           "a0": {"0": {"a0_us": 11.0, "processes": [10.9, 11.0, 11.1], "slots": 200, "spread_pct": 1.8},
                  "4": {"a0_us": 27.5, "ratio": 2.5, "ci95": [2.49, 2.52], "slots": 200, "derived_from": "0"}}}
    (folder / "a0-host-1a2b3c4d5e6f-r0-3.70-9f8e7d6c.table").write_text(json.dumps(doc))
    analyze.grid_rows(str(tmp_path))
    out = capsys.readouterr().out
    assert "4 args: A0 27.500 µs = A0(0) x q 2.5000 [2.4900, 2.5200] (200 paired slots; up to 0.8 %)" in out
    assert "0 args: A0 11.000 µs, 3 processes x 200 slots" in out
    assert re.search(r"TimeLaunchPreconfigured: a row's own 95 % interval is \+/- [0-9.]+ % \(2 processes", out)
