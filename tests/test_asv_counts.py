"""The asv counts rows (benchmarks/bench_counts.py): exact counts per launch under real asv.

One smoke ``launchbench asv-releases`` run on the CUDA simulator with two "releases": this
venv, and this venv with a stand-in change of known bytecodes (a sitecustomize that wraps the
simulator's kernel call). The recorded values must be integers equal to a direct
``counts.count`` of the same launch, the stand-in must show as exactly its known step, and
``asv compare`` must show both. The rest checks the rows' shape and failure modes directly.
"""
import dis
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_asv_smoke import PY, ROOT, asv_env, run

#: What the stand-in "release" adds to every simulator launch: two Python functions, straight line.
STANDIN = textwrap.dedent("""
    def standin_extra():
        a = 1
        b = a + 1
        return b


    def standin_call(self, *args):
        standin_extra()
        return _ORIG_CALL(self, *args)
""")
SITECUSTOMIZE = STANDIN + textwrap.dedent("""

    import os
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        from numba.cuda.simulator import kernel as _kernel
        _ORIG_CALL = _kernel.FakeCUDAKernel.__call__
        _kernel.FakeCUDAKernel.__call__ = standin_call
    """)

NARGS = 2
KINDS = ("bytecodes", "calls", "c_calls", "entries")
STYLES = {"preconfigured": "Preconfigured", "configure-per-launch": "ConfigurePerLaunch"}


def row_class(style, kind):
    """The class holding *kind*'s rows: calls have their own (only sys.monitoring counts them)."""
    return ("TrackCalls" if kind == "calls" else "TrackCounts") + STYLES[style]


def standin_step():
    """The stand-in's exact added counts per launch, from ``dis`` (every instruction but RESUME runs once)."""
    namespace = {"_ORIG_CALL": None}
    exec(STANDIN, namespace)
    bytecodes = sum(1 for f in ("standin_extra", "standin_call")
                    for ins in dis.get_instructions(namespace[f]) if ins.opname != "RESUME")
    # two more Python functions start; calls from Python: standin_call calls two Python functions
    # (sys.monitoring counts them; settrace counts no calls); no C function is called. Before 3.12.3
    # sys.monitoring reported no CALL for a Python function called with *args (CPython gh-116626),
    # so there the call to _ORIG_CALL(self, *args) is not counted
    calls = 2 if sys.version_info >= (3, 12, 3) else 1
    return {"bytecodes": bytecodes, "entries": 2, "c_calls": 0, "calls": calls}


_DIRECT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import benchmarks  # noqa: F401 - the checkout's launchbench, as asv imports it
from launchbench.base import cudamod
from launchbench.workloads import counts, kernels, launchers

def configure_per_launch(kernel, index):  # the same one-line caller the per-launch rows count
    def launch(*args):
        return kernel[index](*args)
    return launch

nargs = int(sys.argv[2])
kernel, args = kernels.empty_kernel(cudamod.import_cuda(), nargs), kernels.device_arrays(nargs)
out = {}
for style, launch in (("preconfigured", kernel[1, 1]), ("configure-per-launch", configure_per_launch(kernel, (1, 1)))):
    launch(*args)
    rec = counts.count(launch, args, sync=launchers.synchronize)
    out[style] = {"kinds": rec["kinds"], "launch_totals": rec["launch_totals"], "counter": rec["counter"],
                  "python": rec["python"]}
print(json.dumps(out))
"""


def direct_counts(tmp_path, nargs):
    """A direct counts.count of the rows' launches, in a fresh simulator process.

    The simulator runs the kernel in a thread of its own, and one or two launches in twenty
    take a shorter hand-off in the calling thread; the value both sides read is the launch total
    most launches gave (asv records the median launch's, which is that one)."""
    proc = subprocess.run([PY, "-c", _DIRECT, str(ROOT), str(nargs)], env=asv_env(tmp_path), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for rec in out.values():
        rec["majority"] = rec["launch_totals"][0]
        assert rec["majority"]["launches"] > 10, rec["launch_totals"]
    return out


@pytest.fixture(scope="module")
def counts_run(tmp_path_factory):
    """asv-releases on the simulator: 0.29.0 = this venv, 0.30.4 = this venv with the stand-in."""
    tmp = tmp_path_factory.mktemp("asvcounts")
    site = tmp / "standin"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    wrapper = tmp / "standin-python"
    wrapper.write_text(f"#!/bin/sh\nexport PYTHONPATH={site}${{PYTHONPATH:+:$PYTHONPATH}}\nexec {PY} \"$@\"\n")
    wrapper.chmod(0o755)
    env = asv_env(tmp)
    selection = ["-b", rf"bench_counts\..*\({NARGS}, '\[1, 1\]'\)", "-b", r"bench_counts\..*track_bytecodes\(0, '\[1, 128\]'\)"]
    cmd = [PY, "-m", "launchbench", "asv-releases", "--env", f"0.29.0={PY}", "--env", f"0.30.4={wrapper}",
           "--allow-version-mismatch", "--ledger", str(tmp / "ledger"), "--results-dir", str(tmp / "results"),
           "--html-dir", str(tmp / "html"), "--compare-output", str(tmp / "compare.txt"), *selection]
    out = run(cmd, env)
    from launchbench.environments import ledger

    commits = {v: ledger.git(tmp / "ledger", "rev-parse", f"v{v}^{{commit}}") for v in ("0.29.0", "0.30.4")}
    results = {}
    for path in (tmp / "results" / "SIMULATOR-SMOKE").glob("*.json"):
        if path.name != "machine.json":
            data = json.loads(path.read_text())
            results[data["commit_hash"]] = data
    return {"tmp": tmp, "env": env, "out": out, "config": tmp / "ledger.asv.json",
            "base": results[commits["0.29.0"]], "standin": results[commits["0.30.4"]]}


def recorded(result, style, kind, nargs=NARGS, config="[1, 1]"):
    """The value asv recorded for one row (None: failed; NaN: skipped)."""
    entry = result["results"][f"bench_counts.{row_class(style, kind)}.track_{kind}"]
    columns = result["result_columns"]
    params = entry[columns.index("params")]
    index = [(a, c) for a in params[0] for c in params[1]].index((repr(nargs), repr(config)))
    return entry[columns.index("result")][index]


@pytest.mark.slow
def test_recorded_counts_are_integers_equal_to_a_direct_count(counts_run, tmp_path):
    direct = direct_counts(tmp_path, NARGS)
    checked = 0
    for style, rec in direct.items():
        for kind in KINDS:
            value = recorded(counts_run["base"], style, kind)
            if kind not in rec["kinds"]:  # settrace (3.11) counts no calls: the row skips, with its reason
                assert value != value, (style, kind, value)
                continue
            assert type(value) is int, (style, kind, value)
            assert value == rec["majority"][kind], (style, kind, value, rec["launch_totals"])
            checked += 1
    assert checked >= 6
    assert "does not count calls" in counts_run["out"] or "calls" in direct["preconfigured"]["kinds"]


@pytest.mark.slow
def test_a_standin_change_shows_as_its_exact_step(counts_run):
    step = standin_step()
    for style in STYLES:
        for kind in KINDS:
            base, changed = recorded(counts_run["base"], style, kind), recorded(counts_run["standin"], style, kind)
            if base != base:  # not counted by this Python's counter
                assert changed != changed
                continue
            assert changed - base == step[kind], (style, kind, base, changed)


@pytest.mark.slow
def test_smoke_skips_multi_thread_configs_with_their_reason(counts_run):
    value = recorded(counts_run["base"], "preconfigured", "bytecodes", 0, "[1, 128]")
    assert value != value  # NaN: skipped, not failed (None)
    assert "simulator threads per launch" in counts_run["out"]


@pytest.mark.slow
def test_version_keeps_counts_of_other_pythons_and_counting_code_apart(counts_run):
    from benchmarks import bench_counts

    for result in (counts_run["base"], counts_run["standin"]):
        entry = result["results"]["bench_counts.TrackCountsPreconfigured.track_bytecodes"]
        version = entry[result["result_columns"].index("version")]
        assert version == bench_counts.counts_version()
        assert f"py{sys.version_info[0]}.{sys.version_info[1]}" in version


@pytest.mark.slow
def test_asv_compare_shows_the_exact_step(counts_run):
    step = standin_step()
    base = recorded(counts_run["base"], "preconfigured", "bytecodes")
    name = f"TrackCountsPreconfigured.track_bytecodes({NARGS}, '[1, 1]')"
    table = (counts_run["tmp"] / "compare.txt").read_text()  # asv-releases' own compare (--factor 1.02)
    row = next(line for line in table.splitlines() if name in line)
    assert f" {base} " in row and f" {base + step['bytecodes']} " in row, row
    # with --factor 1 every count that moved is marked worse (+): the step is never "the same"
    out = run([PY, "-m", "asv", "--config", str(counts_run["config"]), "compare", "--machine", "SIMULATOR-SMOKE",
               "--factor", "1", "--split", "baseline", "v2"], counts_run["env"])
    worse = out.split("got worse", 1)[1]
    for row_name in (name, f"TrackCountsPreconfigured.track_entries({NARGS}, '[1, 1]')"):
        row = next(line for line in worse.splitlines() if row_name in line)
        assert [c.strip() for c in row.strip().strip("|").split("|")][0] == "+", row


def test_publish_lists_every_step_of_a_counts_series():
    """asv publish's regression detection on a counts series: exact values, so threshold 0
    (asv.conf.json) lists a step of 5 in about 3000 that the default 5 % would hide."""
    import json5
    from asv import step_detect

    conf = json5.loads((ROOT / "asv.conf.json").read_text())
    name = "bench_counts.TrackCountsPreconfigured.track_bytecodes(2, '[1, 1]')"
    import re

    matching = [float(t) for rx, t in conf.get("regressions_thresholds", {}).items() if re.match(rx, name)]
    threshold = max(matching) if matching else 0.05  # asv's rule (plugins/regressions.py)
    series = [3140] * 6 + [3145] * 5
    latest, best, found = step_detect.detect_regressions(step_detect.detect_steps(series), threshold=threshold)
    assert (latest, best) == (3145, 3140) and found == [(5, 6, 3140.0, 3145.0)]


# ------------------------------------------------------------------ the rows themselves
def test_rows_take_the_launch_rows_parameters_and_units():
    from benchmarks import bench_counts, bench_launch, common
    from launchbench.workloads import countgrid

    units = {"bytecodes": "bytecodes per launch", "calls": "calls per launch",
             "c_calls": "C calls per launch", "entries": "function entries per launch"}
    per_launch_configure = {"Preconfigured": bench_launch.TimeLaunchPreconfigured.per_launch_configure,
                            "ConfigurePerLaunch": bench_launch.TimeLaunchConfigurePerLaunch.per_launch_configure}
    for style in STYLES:
        for kind in KINDS:
            cls = getattr(bench_counts, row_class(style, kind))
            # the launch rows' arguments and configurations (not their reference: counts are not normalized)
            assert cls.params == [common.ARG_COUNTS, bench_launch.CONFIG_NAMES] == bench_launch.TimeLaunchPreconfigured.params[:2]
            assert cls.param_names == ["args", "config"] == bench_launch.TimeLaunchPreconfigured.param_names[:2]
            assert cls.rounds == common.SURVEY_ROUNDS == 1
            assert cls.setup_cache is bench_counts.count_all  # one counting process for every class
            assert getattr(cls, f"track_{kind}").unit == units[kind]
            assert kind in cls.needs and cls.style == style
            assert countgrid.STYLES[style] == per_launch_configure[STYLES[style]]


def test_counts_come_from_launchbench_counts_of_this_checkout():
    from benchmarks import bench_counts

    module = bench_counts.counts
    assert os.path.samefile(module.__file__, ROOT / "launchbench" / "workloads" / "counts.py")
    assert module.count.__code__.co_filename == module.__file__


def test_setup_skips_with_the_reason():
    from benchmarks import bench_counts

    bench = bench_counts.TrackCountsPreconfigured()
    with pytest.raises(NotImplementedError, match="no CUDA GPU"):
        bench.setup({"skip": "no CUDA GPU available"}, 0, "[1, 1]")
    with pytest.raises(NotImplementedError, match="smoke run"):
        bench.setup({"rows": {("preconfigured", 0, "[1, 128]"): {"skip": "smoke run: ..."}}}, 0, "[1, 128]")
    row = {"counter": "sys.settrace", "python": "3.11", "kinds": ["bytecodes", "c_calls", "entries"],
           "per_launch": {"bytecodes": 938, "c_calls": 40, "entries": 30}, "steady": True}
    cached = {"rows": {("preconfigured", 1, "[1, 1]"): row}}
    bench.setup(cached, 1, "[1, 1]")
    assert bench.track_bytecodes(cached, 1, "[1, 1]") == 938
    assert bench.track_c_calls(cached, 1, "[1, 1]") == 40
    assert bench.track_entries(cached, 1, "[1, 1]") == 30
    with pytest.raises(NotImplementedError, match=r"sys.settrace \(Python 3.11\) does not count calls"):
        bench_counts.TrackCallsPreconfigured().setup(cached, 1, "[1, 1]")  # in setup: skipped, not failed
    calls = bench_counts.TrackCallsPreconfigured()
    monitored = {**row, "counter": "sys.monitoring", "kinds": ["bytecodes", "calls", "c_calls", "entries"],
                 "per_launch": {**row["per_launch"], "calls": 82}}
    cached = {"rows": {("preconfigured", 1, "[1, 1]"): monitored}}
    calls.setup(cached, 1, "[1, 1]")
    assert calls.track_calls(cached, 1, "[1, 1]") == 82
    with pytest.raises(KeyError):  # never another style's row
        bench_counts.TrackCountsConfigurePerLaunch().setup(cached, 1, "[1, 1]")


def test_a_launch_that_cannot_be_counted_fails_loudly(monkeypatch):
    """Not a skip: a skipped row would leave a silent hole in an exact series."""
    from benchmarks import bench_counts
    from launchbench.workloads import countgrid, sampling

    def broken(*args):
        raise RuntimeError("this launch cannot be counted")

    monkeypatch.setattr(sampling, "gpu_or_skip", lambda: None)
    monkeypatch.setattr(countgrid, "count_one", broken)
    with pytest.raises(RuntimeError, match="cannot be counted"):
        bench_counts.count_all()


def test_version_follows_the_counting_code(monkeypatch, tmp_path):
    from benchmarks import bench_counts

    source = Path(bench_counts.counts.__file__).read_text()
    before = bench_counts.counts_version()
    assert before == bench_counts.TrackCountsPreconfigured.version
    edited = tmp_path / "counts.py"
    edited.write_text(source + "\n# counted differently\n")
    monkeypatch.setattr(bench_counts, "VERSIONED_FILES", (str(edited),) + bench_counts.VERSIONED_FILES[1:])
    after = bench_counts.counts_version()
    assert after != before and after.split(" ", 2)[2] == before.split(" ", 2)[2]  # same counter and Python


def test_few_launches_are_counted_after_a_short_warm_up(monkeypatch):
    """count_all counts COUNT_LAUNCHES launches after COUNT_WARMUP per parameter set (counts are exact: a few
    launches show an unsteady path as well as many), the kernels built once per argument count."""
    from benchmarks import bench_counts
    from launchbench.workloads import countgrid, counts, kernels, launchers, sampling

    counted, warmed, built = [], [], []
    monkeypatch.setattr(sampling, "gpu_or_skip", lambda: None)
    monkeypatch.setattr(kernels, "cached_kernel", lambda nargs: built.append(nargs) or _Kernel())
    monkeypatch.setattr(kernels, "device_arrays", lambda nargs, cuda: [])
    monkeypatch.setattr(launchers, "warm_up", lambda fn, args, launches: warmed.append(launches))

    def count(launch, args, launches, sync):
        counted.append(launches)
        return {"counter": "c", "python": "3", "kinds": ["bytecodes"], "per_launch": {"bytecodes": 1}, "steady": True}

    monkeypatch.setattr(counts, "count", count)
    monkeypatch.setattr(countgrid, "smoke_skip", lambda config: None)
    monkeypatch.setattr(countgrid.cudamod, "import_cuda", lambda: _Cuda())
    cached = bench_counts.count_all()
    assert len(cached["rows"]) == len(counted) == len(warmed) > 0
    assert set(counted) == {countgrid.COUNT_LAUNCHES} and set(warmed) == {countgrid.COUNT_WARMUP}
    assert countgrid.COUNT_LAUNCHES >= 3  # enough launches that an unsteady path shows as unsteady
    assert sorted(built) == bench_counts.common.ARG_COUNTS  # one kernel per argument count, not per row


class _Kernel:
    def __getitem__(self, index):
        return lambda *args: None


class _Cuda:
    def stream(self):
        return object()


def test_module_files_are_resolved_once_per_process(monkeypatch, tmp_path):
    """Each count maps the files of every imported module; resolving them all again per count was most of
    a commit's count rows. The same path is resolved once; the map still names each module."""
    from launchbench.workloads import counts

    resolved = []
    real = counts.os.path.realpath
    monkeypatch.setattr(counts.os.path, "realpath", lambda p: resolved.append(p) or real(p))
    counts._realpath.cache_clear()
    first = counts._module_names()
    n = len(resolved)
    assert counts._module_names() == first and len(resolved) == n > 0
    assert first[real(counts.__file__)] == "launchbench.workloads.counts"
