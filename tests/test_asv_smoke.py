"""The asv suite under real asv, in this environment, on the CUDA simulator.

`asv check`, discovery of the full grid, the GPU guard, and a smoke
`launchbench asv-releases` run whose results `asv compare` and `asv publish`
consume. asv's machine file lives in $HOME, so every asv call gets a
scratch HOME.
"""
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def asv_env(tmp, smoke=True, **extra):
    env = dict(os.environ)
    env["HOME"] = str(tmp)
    env["PATH"] = f"{Path(PY).parent}{os.pathsep}{env.get('PATH', '')}"
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env.pop("LAUNCHBENCH_SMOKE", None)
    if smoke:
        env["LAUNCHBENCH_SMOKE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def run(cmd, env, cwd=ROOT, timeout=600):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_asv_check(tmp_path):
    out = run([PY, "-m", "asv", "check", "--python=same"], asv_env(tmp_path, smoke=False))
    assert "No problems found" in out


def test_suite_preimports_numba_cuda_for_the_forkserver_but_survives_a_broken_one(tmp_path):
    """numba.cuda is imported at discovery (paid once before asv's forkserver forks); a commit whose
    numba-cuda fails to import must still be discovered, its benchmarks failing in setup instead."""
    code = ("import sys; sys.path.insert(0, %r); import benchmarks.bench_launch as b; "
            "print('numba.cuda' in sys.modules, b.common.PREIMPORTED)" % str(ROOT))
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "True True"
    broken = tmp_path / "broken" / "numba"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('this numba-cuda commit does not import')\n")
    env = {**os.environ, "PYTHONPATH": str(broken.parent)}
    out = subprocess.run([PY, "-c", code.replace("b.common.PREIMPORTED", "b.common.PREIMPORTED, len(b.CONFIG_NAMES)")],
                         capture_output=True, text=True, check=True, env=env).stdout.strip()
    assert out == "False False 7"


def test_gpu_guard_without_smoke_switch(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.delenv("LAUNCHBENCH_SMOKE", raising=False)
    from benchmarks import bench_launch

    for bench in (bench_launch.TimeLaunchPreconfigured(), bench_launch.TimeLaunchConfigurePerLaunch()):
        with pytest.raises(NotImplementedError, match="LAUNCHBENCH_SMOKE"):
            bench.setup(0, "[1, 1]")
    with pytest.raises(NotImplementedError, match="LAUNCHBENCH_SMOKE"):
        bench_launch.TrackRunKind().setup()


def test_launch_index_is_what_users_write():
    from launchbench.workloads import launchers as bench_launch

    assert bench_launch.launch_index("[1, 1]") == (1, 1)
    assert bench_launch.launch_index("[(16, 16), (16, 16)]") == ((16, 16), (16, 16))
    assert bench_launch.launch_index("[1, 128] sharedmem=1KiB") == (1, 128, 0, 1024)
    assert bench_launch.launch_index("[1, 128] stream", stream="s") == (1, 128, "s")
    with pytest.raises(ValueError):
        bench_launch.launch_index("[1, 128] stream")
    assert bench_launch.total_threads("[(16, 16), (16, 16)]") == 65536
    assert bench_launch.total_threads("[1024, 256]") == 262144


_SETUP_PROBE = r"""
import sys
sys.path.insert(0, sys.argv[1])
from asv_runner.discovery import get_benchmark_from_name
from benchmarks import bench_launch
from launchbench.workloads import kernels, sampling

compiled, setups, lookups = [], [], []
real_make_kernel = kernels.cached_kernel
kernels.cached_kernel = lambda n, **kw: compiled.append(n) or real_make_kernel(n, **kw)
real_state = sampling.launch_state
sampling.launch_state = lambda settings, *a: setups.append(a) or real_state(settings, *a)
real_prepared = sampling.per_process
sampling.per_process = lambda key, build: lookups.append(key) or real_prepared(key, build)
for cls, idx in (("TimeLaunchPreconfigured", 7), ("TimeLaunchConfigurePerLaunch", 7)):  # (1, '[1, 1]')
    bench = get_benchmark_from_name(sys.argv[1] + "/benchmarks", f"bench_launch.{cls}.time_launch-{idx}",
                                    extra_params={"repeat": 3})
    assert bench._current_params == (1, "[1, 1]", bench_launch.REFERENCE_LABEL), bench._current_params
    assert bench.do_setup() is False
    try:
        result = bench.run(*bench._current_params)
    finally:
        bench.do_teardown()
    assert result["number"] == 1 and len(result["samples"]) == 3, result
    assert all(s > 0 for s in result["samples"]), result
# once per process and parameter set (each class has its own launch loop)
assert compiled == [1, 1] and setups == [(1, "[1, 1]", False), (1, "[1, 1]", True)], (compiled, setups)
assert lookups.count(("launch", 1, "[1, 1]", False)) >= 3, lookups  # setup did re-run between samples
print("setup probe ok")
"""


def test_setup_between_timed_calls_compiles_once(tmp_path):
    """asv_runner >= 0.3 re-runs setup/teardown between every timed call when
    number > 1 (asv#966). The launch benchmarks must then neither recompile
    nor re-warm: that made the first GPU run never finish.

    Runs in a fresh interpreter: the simulator must be chosen before
    numba.cuda is first imported, which other tests in this process may do."""
    proc = subprocess.run([PY, "-c", _SETUP_PROBE, str(ROOT)], env=asv_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "setup probe ok" in proc.stdout


def test_launch_benchmarks_take_one_value_clock_sample_per_process():
    """One sample per process (asv's statistics treat samples as independent), recorded through the
    value clock with number = 1, and a bounded timeout; the mechanism and argument-kind rows too (each of
    their parameter sets runs in processes of its own, so they need the same state-cancelling sample)."""
    from benchmarks import bench_argkinds, bench_launch, bench_mechanisms

    for cls in (bench_launch.TimeLaunchPreconfigured, bench_launch.TimeLaunchConfigurePerLaunch,
                bench_launch.TimeLaunchWithCallback, bench_launch.TimeLaunchRaw, bench_launch.TimeReferenceLaunch,
                bench_mechanisms.TimeMechanismLaunch, bench_argkinds.TimeArgKindLaunch):
        assert 0 < cls.timeout <= 120
        assert cls.number == 1 and cls.repeat == 1 and cls.warmup_time == 0
        assert cls.timer == bench_launch.common.CLOCK.now


def test_no_time_benchmark_reruns_setup_between_its_timed_calls():
    """asv_runner re-runs ``setup`` before every individually timed call when ``number > 1`` (or auto) and
    the class has a setup: a setup that compiles then made bench_argkinds take 10.5 min of the full grid.
    A benchmark with setup either times one call per sample on purpose (a launch of its own, a first
    launch) or batches inside the body with number = 1 (the value clock)."""
    import importlib
    import inspect

    per_call = {"bench_lcs.TimeLCSLaunch", "bench_lcs.TimeLCSCallbacks"}  # one memoized launch per sample
    offenders = []
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        module = importlib.import_module(f"benchmarks.{path.stem}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not any(m.startswith("time_") for m in dir(cls)):
                continue
            if hasattr(cls, "setup") and getattr(cls, "number", 0) != 1 and f"{path.stem}.{name}" not in per_call:
                offenders.append(f"{path.stem}.{name} (number={getattr(cls, 'number', 0)})")
    assert offenders == []


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One smoke asv-releases run (two 'releases', both this venv) shared by the tests below."""
    tmp = tmp_path_factory.mktemp("asvsmoke")
    env = asv_env(tmp)
    selection = ["-b", r"time_launch\(1, '\[1, 1\]'[,)]", "-b", r"time_launch\(0, '\[1, 128\] stream',",
                 "-b", r"time_launch\(2, '\[1024, 256\]'[,)]", "-b", "TrackRunKind"]
    cmd = [PY, "-m", "launchbench", "asv-releases", "--env", f"0.29.0={PY}", "--env", f"0.30.4={PY}",
           "--allow-version-mismatch", "--ledger", str(tmp / "ledger"), "--results-dir", str(tmp / "results"),
           "--html-dir", str(tmp / "html"), "--compare-output", str(tmp / "compare.txt"),
           "--log", str(tmp / "commands.txt"), *selection]
    out = run(cmd, env)
    return {"tmp": tmp, "env": env, "out": out, "config": tmp / "ledger.asv.json"}


def _results(smoke_run):
    machine_dir = smoke_run["tmp"] / "results" / "SIMULATOR-SMOKE"
    files = sorted(p for p in machine_dir.glob("*.json") if p.name != "machine.json")
    return [json.loads(p.read_text()) for p in files]


@pytest.mark.slow
def test_discovery_finds_full_grid(smoke_run):
    from benchmarks import bench_launch

    benchmarks = json.loads((smoke_run["tmp"] / "results" / "benchmarks.json").read_text())
    grid = list(itertools.product(map(repr, [0, 1, 2, 3, 4]), map(repr, bench_launch.CONFIG_NAMES)))
    assert len(grid) == 35
    for cls in ("TimeLaunchPreconfigured", "TimeLaunchConfigurePerLaunch"):
        bench = benchmarks[f"bench_launch.{cls}.time_launch"]
        assert bench["param_names"] == ["args", "config", "reference"]
        assert bench["params"][2] == ["'wall us, no reference'"]  # a smoke run: raw simulator µs
        assert list(itertools.product(*bench["params"][:2])) == grid
    assert benchmarks["bench_launch.TimeLaunchWithCallback.time_launch"]["params"][0] == ["0", "1", "2", "3", "4"]


@pytest.mark.slow
def test_smoke_results_are_labelled_and_present(smoke_run):
    results = _results(smoke_run)
    assert len(results) == 2  # one per ledger commit
    for res in results:
        flag = res["results"]["bench_launch.TrackRunKind.track_cuda_simulator"][0][0]
        assert flag == 1  # recorded simulator flag
        pre = res["results"]["bench_launch.TimeLaunchPreconfigured.time_launch"][0]
        configs = [repr(c) for c in __import__("benchmarks.bench_launch").bench_launch.CONFIG_NAMES]
        values = dict(zip(itertools.product(["0", "1", "2", "3", "4"], configs), pre))
        assert values[("1", "'[1, 1]'")] > 0
        assert values[("0", "'[1, 128] stream'")] > 0
        big = values[("2", "'[1024, 256]'")]
        assert big is None or big != big  # skipped: too big for the simulator


@pytest.mark.slow
def test_each_release_runs_exactly_its_own_commit(smoke_run):
    """One asv pass per release, filed under that release's ledger commit."""
    out = smoke_run["out"]
    assert out.count("(1 commits * 1 environments *") == 2, out[-3000:]
    assert "(2 commits" not in out
    from launchbench.environments import ledger

    ledger_dir = smoke_run["tmp"] / "ledger"
    tags = {v: ledger.git(ledger_dir, "rev-parse", f"v{v}^{{commit}}") for v in ("0.29.0", "0.30.4")}
    sections = out.split("== numba-cuda ")[1:]
    assert [sec.split(" ", 1)[0] for sec in sections] == ["0.29.0", "0.30.4"]
    for sec, version in zip(sections, ("0.29.0", "0.30.4")):
        assert f"commit {tags[version][:8]} <v{version}>" in sec  # asv benchmarks the intended commit only
        other = tags["0.30.4" if version == "0.29.0" else "0.29.0"][:8]
        assert f"commit {other}" not in sec
    assert sorted(r["commit_hash"] for r in _results(smoke_run)) == sorted(tags.values())
    assert "[+" in out  # timestamped asv output, so a hang is visible in the log


@pytest.mark.slow
def test_compare_and_publish_consume_results(smoke_run):
    table = (smoke_run["tmp"] / "compare.txt").read_text()
    assert "TimeLaunchPreconfigured.time_launch(1, '[1, 1]', 'wall us, no reference')" in table
    assert "track_cuda_simulator" in table
    assert "n/a                           | n/a" not in table
    commands = (smoke_run["tmp"] / "commands.txt").read_text()
    assert "--machine SIMULATOR-SMOKE" in commands and "compare" in commands
    out = run([PY, "-m", "asv", "--config", str(smoke_run["config"]), "compare", "--machine", "SIMULATOR-SMOKE",
               "baseline", "v2"], smoke_run["env"])
    assert "time_launch(1, '[1, 1]', 'wall us, no reference')" in out
    run([PY, "-m", "asv", "--config", str(smoke_run["config"]), "publish"], smoke_run["env"])
    html = smoke_run["tmp"] / "html"
    assert (html / "index.html").is_file()
    index = json.loads((html / "index.json").read_text())
    assert "SIMULATOR-SMOKE" in index["params"]["machine"]
    assert "bench_launch.TimeLaunchPreconfigured.time_launch" in index["benchmarks"]
