"""launchbench.output.asvresults: history values as asv results, read back by the real asv.

A synthetic history (reference, a +1 us step, a commit identical to the
step) is written into a scratch results directory of a tiny git repo whose
commits carry those SHAs; then `asv compare` and `asv publish` run on it.
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench.base.errors import UserError
from launchbench.output import asvresults

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
LEVEL = {0: 11.0, 1: 16.0, 2: 20.0, 3: 25.0, 4: 30.0}  # reference us per launch
ROUNDS = 40


def git(repo, *args, env=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@localhost", **(env or {})}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def make_repo(path, n=3):
    """n commits on branch main, one a day; returns [(sha, iso date)] oldest first."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    out = []
    for i in range(n):
        (path / "VERSION").write_text(f"{i}\n")
        git(path, "add", "VERSION")
        date = f"2026-01-0{i + 1}T00:00:00+00:00"
        git(path, "commit", "-q", "-m", f"c{i}", env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
        out.append((git(path, "rev-parse", "HEAD"), date))
    return out


def history_doc(commits):
    """c00 reference; c01 +1 us at 0..3 args (tight), +0.1 [-0.2, +0.4] at 4 args; c02 identical to c01."""
    (s0, d0), (s1, d1), (s2, d2) = commits
    deltas = []
    for n in range(5):
        if n < 4:
            deltas.append({"variant": "c01", "nargs": n, "delta_us": 1.0, "ci_us": [0.95, 1.05], "n": ROUNDS,
                           "ci99_us": [0.93, 1.07]})
        else:  # no ci99_us: widened from the 95% interval by the t ratio
            deltas.append({"variant": "c01", "nargs": n, "delta_us": 0.1, "ci_us": [-0.2, 0.4], "n": ROUNDS})
    return {
        "created": "2026-02-01T00:00:00Z",
        "device": {"name": "NVIDIA H200"},
        "host": {"hostname": "gpuvm", "cpu": "Xeon", "platform": "Linux-6", "python": "3.12.3", "cpu_count": 16},
        "settings": {"arg_counts": [0, 1, 2, 3, 4], "launch": "[1, 1]", "rounds": ROUNDS,
                     "loops": {str(n): 400 for n in range(5)}},
        "reference": "c00",
        "commits": [
            {"sha": s0, "short": s0[:8], "subject": "c0", "date": d0, "measured": True, "variant": "c00",
             "identical_to": None, "build": {"ok": True}, "version": "0.30.5.dev1"},
            {"sha": s1, "short": s1[:8], "subject": "c1", "date": d1, "measured": True, "variant": "c01",
             "identical_to": None, "build": {"ok": True}},
            {"sha": s2, "short": s2[:8], "subject": "c2", "date": d2, "measured": False, "variant": None,
             "identical_to": s1, "build": {"ok": True}},
        ],
        "level": [{"nargs": n, "us": us, "ci_us": [us - 0.2, us + 0.2], "n": ROUNDS} for n, us in LEVEL.items()],
        "deltas": deltas,
    }


@pytest.fixture
def written(tmp_path):
    repo = tmp_path / "repo"
    commits = make_repo(repo)
    doc = history_doc(commits)
    results = tmp_path / "results"
    paths = asvresults.write_history(str(results), doc)
    conf = {"version": 1, "project": "numba-cuda", "project_url": "", "repo": str(repo), "dvcs": "git",
            "branches": ["main"], "environment_type": "virtualenv", "benchmark_dir": str(tmp_path / "bench"),
            "results_dir": str(results), "html_dir": str(tmp_path / "html"), "env_dir": str(tmp_path / "env")}
    config = tmp_path / "asv.conf.json"
    config.write_text(json.dumps(conf))
    return {"tmp": tmp_path, "repo": repo, "commits": [s for s, _ in commits], "doc": doc, "results": results,
            "paths": paths, "config": config}


def asv(written, *args):
    env = {**os.environ, "HOME": str(written["tmp"])}
    proc = subprocess.run([PY, "-m", "asv", "--config", str(written["config"]), *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def rows(table: str) -> dict:
    """asv compare table -> {(nargs, config): (mark, before, after, ratio)}."""
    out = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[4].startswith(asvresults.BENCHMARK + "("):
            n, _, config = cells[4][len(asvresults.BENCHMARK) + 1:-1].partition(", ")
            out[(int(n), config.strip("'"))] = tuple(cells[:4])
    return out


def test_constants_match_the_suite():
    sys.path.insert(0, str(ROOT))
    from benchmarks import bench_launch

    cls, method = asvresults.BENCHMARK.split(".")[1:]
    assert hasattr(getattr(bench_launch, cls), method)
    assert bench_launch.CONFIG_NAMES == asvresults.CONFIG_NAMES
    assert bench_launch.common.ARG_COUNTS == asvresults.ARG_COUNTS
    # the suite's rows also name their reference; launchbench's paired values are a series of their own
    assert bench_launch.TimeLaunchPreconfigured.param_names == asvresults.PARAM_NAMES + ["reference"]


def test_files_are_asv_0_6_format_and_values(written):
    from asv.results import Results

    s0, s1, s2 = written["commits"]
    machine_dir = written["results"] / "gpuvm"
    assert json.loads((machine_dir / "machine.json").read_text())["version"] == 1
    assert json.loads((written["results"] / "benchmarks.json").read_text())["version"] == 2
    loaded = {}
    for sha in (s0, s1, s2):
        path = machine_dir / f"{sha[:8]}-launchbench-history.json"
        raw = json.loads(path.read_text())
        assert raw["version"] == Results.api_version and raw["result_columns"][:2] == ["result", "params"]
        assert raw["params"]["measured_by"] == "launchbench history" and raw["python"] == "3.12"
        res = Results.load(str(path), machine_name="gpuvm")
        params = res.get_result_params(asvresults.BENCHMARK)
        grid = [(int(a), c.strip("'")) for a in params[0] for c in params[1]]
        values = res.get_result_value(asvresults.BENCHMARK, params)
        stats = res.get_result_stats(asvresults.BENCHMARK, params)
        loaded[sha] = {g: (v, st) for g, v, st in zip(grid, values, stats)}
        assert res.get_result_samples(asvresults.BENCHMARK, params) == [None] * len(grid)
    assert json.loads((machine_dir / f"{s0[:8]}-launchbench-history.json").read_text())[
        "requirements"]["numba-cuda"] == f"0.30.5.dev1+g{s0[:8]}"
    for n, us in LEVEL.items():
        ref, ref_st = loaded[s0][(n, "[1, 1]")]
        assert ref == pytest.approx(us * 1e-6) and ref_st["ci_99_a"] == ref_st["ci_99_b"] == ref
        assert ref_st["repeat"] == ROUNDS and ref_st["number"] == 400
        step, st = loaded[s1][(n, "[1, 1]")]
        if n < 4:
            assert step == pytest.approx((us + 1.0) * 1e-6)
            assert (st["ci_99_a"], st["ci_99_b"]) == pytest.approx(((us + 0.93) * 1e-6, (us + 1.07) * 1e-6))
        else:
            from launchbench.engine.stats import t_quantile

            widen = 0.3 * t_quantile(0.995, ROUNDS - 1) / t_quantile(0.975, ROUNDS - 1)
            assert (st["ci_99_a"], st["ci_99_b"]) == pytest.approx(((us + 0.1 - widen) * 1e-6,
                                                                    (us + 0.1 + widen) * 1e-6))
        ci95 = (0.95, 1.05) if n < 4 else (-0.2, 0.4)  # q_25/q_75 carry the 95% interval: asv prints its half-width
        assert (st["q_25"], st["q_75"]) == pytest.approx(((us + ci95[0]) * 1e-6, (us + ci95[1]) * 1e-6))
        assert loaded[s2][(n, "[1, 1]")] == loaded[s1][(n, "[1, 1]")]  # identical_to: same values
        other, other_st = loaded[s1][(n, "[1, 128]")]
        assert math.isnan(other) and not other_st  # not measured: NaN (asv's n/a), not None (failed)


def test_asv_compare_flags_the_step_with_the_right_ratio(written):
    s0, s1, s2 = written["commits"]
    table = rows(asv(written, "compare", "--factor", "1.01", s0, s1))
    for n in range(4):
        mark, before, after, ratio = table[(n, "[1, 1]")]
        assert mark == "+", table[(n, "[1, 1]")]
        assert float(ratio) == pytest.approx((LEVEL[n] + 1.0) / LEVEL[n], abs=0.006)
    assert table[(4, "[1, 1]")][0] == ""  # +0.1 us [-0.2, +0.4]: intervals overlap
    assert table[(0, "[1, 128]")] == ("", "n/a", "n/a", "n/a")  # not measured: n/a, not failed
    # identical commit: same values, nothing flagged even at a 1% factor
    same = rows(asv(written, "compare", "--factor", "1.01", s1, s2))
    assert all(mark == "" for mark, *_ in same.values()), same
    assert same[(0, "[1, 1]")][3].strip() == "1.00"


def test_default_factor_hides_a_significant_step_below_10_percent(written):
    s0, s1, _ = written["commits"]
    table = rows(asv(written, "compare", s0, s1))
    assert all(mark == "" for mark, *_ in table.values()), table  # ratios 1.03..1.09 < 1.1
    assert table[(0, "[1, 1]")][3].strip() == "1.09"


def test_asv_publish_reads_the_results(written):
    out = asv(written, "publish")
    html = written["tmp"] / "html"
    assert (html / "index.html").is_file(), out
    index = json.loads((html / "index.json").read_text())
    assert asvresults.BENCHMARK in index["benchmarks"]
    assert index["params"]["measured_by"] == ["launchbench history"]
    graphs = list(html.glob("graphs/**/bench_launch.TimeLaunchPreconfigured.time_launch.json"))
    assert graphs
    points = json.loads(graphs[0].read_text())
    assert len(points) == 3  # one point per commit, the identical one included


def test_existing_benchmarks_json_is_extended_not_replaced(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "benchmarks.json").write_text(json.dumps({"other.bench": {"name": "other.bench"}, "version": 2}))
    doc = history_doc([("a" * 40, "2026-01-01T00:00:00Z"), ("b" * 40, "2026-01-02T00:00:00Z"),
                       ("c" * 40, "2026-01-03T00:00:00Z")])
    asvresults.write_history(str(results), doc, machine="h200")
    data = json.loads((results / "benchmarks.json").read_text())
    assert "other.bench" in data and data[asvresults.BENCHMARK]["unit"] == "seconds"
    assert (results / "h200" / "machine.json").is_file()


def test_build_failure_is_failed_and_unmeasured_is_absent(tmp_path):
    doc = history_doc([("a" * 40, "2026-01-01T00:00:00Z"), ("b" * 40, "2026-01-02T00:00:00Z"),
                       ("c" * 40, "2026-01-03T00:00:00Z")])
    doc["commits"][2].update(identical_to=None, build={"ok": False})
    doc["commits"].append({"sha": "d" * 40, "date": "2026-01-04T00:00:00Z", "measured": False,
                           "variant": None, "identical_to": None, "build": {"ok": True}})
    paths = asvresults.write_history(str(tmp_path), doc)
    names = {Path(p).name for p in paths}
    assert "cccccccc-launchbench-history.json" in names and "dddddddd-launchbench-history.json" not in names
    failed = json.loads((tmp_path / "gpuvm" / "cccccccc-launchbench-history.json").read_text())
    assert failed["results"][asvresults.BENCHMARK][0] is None


def test_user_errors_are_one_line(tmp_path):
    doc = history_doc([("a" * 40, "2026-01-01T00:00:00Z"), ("b" * 40, "2026-01-02T00:00:00Z"),
                       ("c" * 40, "2026-01-03T00:00:00Z")])
    bad_launch = {**doc, "settings": {**doc["settings"], "launch": "[1, 128]"}}
    with pytest.raises(UserError, match=r"only \[1, 1\]"):
        asvresults.write_history(str(tmp_path), bad_launch)
    short = {**doc, "commits": [{**doc["commits"][0], "sha": "abc123"}]}
    with pytest.raises(UserError, match="full 40-digit SHA"):
        asvresults.write_history(str(tmp_path), short)
    with pytest.raises(UserError, match="--machine"):
        asvresults.write_history(str(tmp_path), doc, machine="a/b")
    with pytest.raises(UserError) as err:
        asvresults.write_history(str(tmp_path), bad_launch)
    assert "\n" not in str(err.value)


def test_write_compare_maps_variants_to_commits(tmp_path):
    samples = []
    for rnd in range(6):
        for rep in range(5):
            for n in (0, 1):
                base = 10.0 + n + 0.01 * rep
                samples.append({"variant": "baseline", "nargs": n, "round": rnd, "repeat": rep, "us": base})
                samples.append({"variant": "v2", "nargs": n, "round": rnd, "repeat": rep, "us": base + 1.0})
    cdoc = {"created": "2026-02-01T00:00:00Z", "reference": "baseline", "device": {"name": "NVIDIA H200"},
            "host": {"hostname": "gpuvm"}, "settings": {"arg_counts": [0, 1], "launch": "[1, 1]", "rounds": 6},
            "variants": [{"name": "baseline", "installed": {"numba-cuda": "0.29.0"}},
                         {"name": "v2", "installed": {"numba-cuda": "0.30.4"}}],
            "samples": samples,
            "deltas": [{"variant": "v2", "nargs": n, "delta_us": 1.0, "ci_us": [1.0, 1.0], "n": 6} for n in (0, 1)]}
    paths = asvresults.write_compare(str(tmp_path), cdoc, {"baseline": "a" * 40, "v2": "b" * 40})
    v2 = json.loads(Path([p for p in paths if "bbbbbbbb" in p][0]).read_text())
    result = v2["results"][asvresults.BENCHMARK][0]
    assert result[0] == pytest.approx(11.02e-6) and result[7] == pytest.approx(12.02e-6)
    assert v2["requirements"]["numba-cuda"] == "0.30.4+gbbbbbbbb"
    with pytest.raises(UserError, match="no commit given"):
        asvresults.write_compare(str(tmp_path), cdoc, {"baseline": "a" * 40})


def test_simulator_documents_are_filed_as_smoke(tmp_path):
    doc = history_doc([("a" * 40, "2026-01-01T00:00:00Z"), ("b" * 40, "2026-01-02T00:00:00Z"),
                       ("c" * 40, "2026-01-03T00:00:00Z")])
    doc["simulator"] = True
    asvresults.write_history(str(tmp_path), doc)
    assert (tmp_path / "SIMULATOR-SMOKE" / "machine.json").is_file()
    with pytest.raises(UserError, match="SIMULATOR-SMOKE"):
        asvresults.write_history(str(tmp_path), doc, machine="h200")


def test_history_shaped_fields(tmp_path):
    """What `launchbench history` writes: env interpreter paths, level 'rounds', installed packages."""
    doc = history_doc([("a" * 40, "2026-01-01T00:00:00Z"), ("b" * 40, "2026-01-02T00:00:00Z"),
                       ("c" * 40, "2026-01-03T00:00:00Z")])
    doc["commits"][0].pop("version")
    for rec in doc["commits"]:
        rec["python"] = "/tmp/lbenvs/numba-cuda-0.29.0-abc/bin/python"
    doc["installed"] = {"numba-cuda": "0.30.5.dev2", "numba": "0.65.1"}
    for lev in doc["level"]:
        lev["rounds"] = lev.pop("n") - 1
    asvresults.write_history(str(tmp_path), doc)
    ref = json.loads((tmp_path / "gpuvm" / "aaaaaaaa-launchbench-history.json").read_text())
    assert ref["python"] == "3.12"
    assert ref["requirements"] == {"numba": "0.65.1", "numba-cuda": "0.30.5.dev2+gaaaaaaaa"}
    assert ref["results"][asvresults.BENCHMARK][-1][0] == ROUNDS - 1  # stats_repeat from the level's rounds
