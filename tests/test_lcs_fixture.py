"""CPU checks of the LC-S fixture, the LC-S benchmarks' discovery and skip logic.

``cuda.compile_ptx`` runs the same compiler pipeline (and so the registered
rewrite) as a launch, but is not launch-triggered: there is no current
launch config, so the rewrite must leave kernels untouched. A stand-in
config (``lcs.current_config`` monkeypatched) shows what a launch-triggered
compile bakes and marks.
"""
import json
import os
import struct
import subprocess
import sys
import types

import pytest

from launchbench.workloads.lcs import fixture as lcs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CC = (9, 0)


@pytest.fixture(scope="module")
def markers():
    pytest.importorskip("numba.cuda.launchconfig", reason="numba-cuda < 0.30 has no launch-config API")
    return lcs.install()


@pytest.fixture(autouse=True)
def clean_log():
    lcs.clear_seen()
    yield
    lcs.clear_seen()


class StandInDispatcher:
    def __init__(self):
        self.marked = 0

    def mark_launch_config_sensitive(self):
        self.marked += 1


@pytest.fixture
def stand_in(monkeypatch):
    cfg = types.SimpleNamespace(
        dispatcher=StandInDispatcher(), griddim=(3, 1, 1), blockdim=(96, 2, 1), sharedmem=512, args=("arg",)
    )
    monkeypatch.setattr(lcs, "current_config", lambda: cfg)
    return cfg


def ptx_of(kernel, sig):
    from numba import cuda

    ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=CC)
    return ptx


def immediates(ptx):
    """Integer immediates moved into registers (where baked constants appear)."""
    values = set()
    for line in ptx.splitlines():
        parts = line.replace(",", " ").replace(";", " ").split()
        if parts and parts[0].startswith("mov."):
            try:
                values.add(int(parts[-1]))
            except ValueError:
                pass
    return values


def probe_sig():
    from numba import int64

    return (int64[:],)


def test_without_a_launch_config_the_kernel_is_untouched(markers):
    ptx = ptx_of(lcs.make_probe_kernel("lcs"), probe_sig())
    assert lcs.UNBAKED in immediates(ptx)
    assert lcs.SEEN == []


def test_with_a_launch_config_the_rewrite_bakes_records_and_marks(markers, stand_in):
    ptx = ptx_of(lcs.make_probe_kernel("lcs"), probe_sig())
    assert {3, 192, 512} <= immediates(ptx)
    assert lcs.UNBAKED not in immediates(ptx)
    assert stand_in.dispatcher.marked == 1  # once per compilation, not per marker
    (record,) = lcs.SEEN
    assert record["func_name"] == "lcs_probe"
    assert record["dispatcher"] is stand_in.dispatcher
    assert (record["griddim"], record["blockdim"], record["sharedmem"]) == ((3, 1, 1), (96, 2, 1), 512)
    assert record["args"] == ("arg",)
    assert sorted(record["baked"]) == sorted(lcs.MARKERS)


def test_twin_and_unrelated_kernels_are_never_touched(markers, stand_in):
    from numba import cuda

    ptx = ptx_of(lcs.make_probe_kernel("twin"), probe_sig())
    assert lcs.UNBAKED in immediates(ptx) and 192 not in immediates(ptx)
    # A kernel calling a *different* function of the same name is not ours.
    impostor = lcs._unbaked_intrinsic("launch_blockdim")

    def unrelated(out):
        out[0] = impostor()

    ptx2, _ = cuda.compile_ptx(unrelated, probe_sig(), cc=CC)
    assert 192 not in immediates(ptx2)
    assert stand_in.dispatcher.marked == 0 and lcs.SEEN == []


def test_compile_hooks_run_inside_the_rewrite(markers, stand_in, monkeypatch):
    seen = []
    monkeypatch.setattr(lcs, "COMPILE_HOOKS", [seen.append])
    ptx_of(lcs.make_probe_kernel("lcs"), probe_sig())
    assert seen == lcs.SEEN and len(seen) == 1


@pytest.mark.parametrize("nargs", [0, 1, 4])
def test_bench_kernels_compile_and_only_lcs_is_marked(markers, stand_in, nargs):
    from numba import float32

    sig = (float32[:],) * nargs
    ptx_of(lcs.make_bench_kernel(nargs, "twin"), sig)
    assert stand_in.dispatcher.marked == 0
    ptx = ptx_of(lcs.make_bench_kernel(nargs, "lcs"), sig)
    assert stand_in.dispatcher.marked == 1
    assert [r["baked"] for r in lcs.SEEN] == [["blockdim"]]
    if nargs:  # a0[0] = 192.0, stored as its float32 bit pattern
        assert struct.unpack("<I", struct.pack("<f", 192.0))[0] in immediates(ptx)


def test_bench_kernel_source_shape():
    src = lcs.bench_kernel_source(2, "lcs", "k")
    assert src.startswith("def k(a0, a1):") and "launch_blockdim()" in src and "a0[0] = b" in src
    assert "a0" not in lcs.bench_kernel_source(0, "twin", "k") and "plain_blockdim()" in lcs.bench_kernel_source(0, "twin", "k")
    with pytest.raises(ValueError, match="kind"):
        lcs.bench_kernel_source(1, "other", "k")


def test_expected_probe_and_normalisation():
    assert lcs.normalise_launch(2, (16, 4), 8) == [[2, 1, 1], [16, 4, 1], 8]
    assert lcs.expected_probe("lcs", (2, 3), (16, 4), 256) == {
        "baked_griddim": 6, "baked_blockdim": 64, "baked_sharedmem": 256, "griddim": 6, "blockdim": 64,
    }
    twin = lcs.expected_probe("twin", 1, 32)
    assert (twin["baked_blockdim"], twin["blockdim"]) == (lcs.UNBAKED, 32)
    assert tuple(lcs.expected_probe("lcs", 1, 1)) == lcs.PROBE_SLOTS


def test_cache_module_loads_the_fixture_and_names_its_marker(markers, stand_in, tmp_path, monkeypatch):
    """The generated cache=True module imports on CPU, shares this fixture,
    and its kernels' .lcs marker is where marker_files() looks."""
    path = lcs.write_cache_module(str(tmp_path))
    assert os.path.basename(path) == lcs.CACHE_MODULE + ".py"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, lcs.CACHE_MODULE, raising=False)
    import importlib

    mod = importlib.import_module(lcs.CACHE_MODULE)
    try:
        assert mod.FIXTURE is lcs
        ptx = ptx_of(mod.lcs_cached, probe_sig())
        assert 192 in immediates(ptx)
        for kind, name in lcs.CACHED_KERNELS.items():
            kernel = getattr(mod, name)
            kernel.enable_caching()
            marker = kernel._cache._launch_config_marker_path
            os.makedirs(os.path.dirname(marker), exist_ok=True)
            open(marker, "w").close()
            assert lcs.marker_files(os.path.dirname(marker), kind) == [marker]
    finally:
        sys.modules.pop(lcs.CACHE_MODULE, None)


def test_child_bootstrap_loads_the_fixture_by_path():
    code = lcs.child_bootstrap("normalise_launch", 2, [8], 16)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.returncode == 0, proc.stderr
    (line,) = [l for l in proc.stdout.splitlines() if l.startswith("LCS-RESULT ")]
    assert json.loads(line.split(" ", 1)[1]) == [[2, 1, 1], [8, 1, 1], 16]


# --- --bench command line ----------------------------------------------------


def test_bench_variants_cover_both_kinds_configs_and_callbacks():
    names = [v[0] for v in lcs.bench_variants([0, 2])]
    assert len(names) == len(set(names)) == 2 * 4 + len(lcs.CALLBACK_COUNTS)
    assert "lcs-second/2" in names and "twin-default/0" in names and "lcs-callbacks4/1" in names


def test_format_bench_table():
    results = [
        {"name": v[0], "nargs": v[3], "callbacks": v[4], "compilations": 1, "us_per_launch": 10.0 + i}
        for i, v in enumerate(lcs.bench_variants([1]))
    ]
    text = lcs.format_bench({"repeats": 3, "launches": 100, "results": results})
    assert "lcs-default" in text and "pre_launch_callbacks" in text
    row = [l for l in text.splitlines() if l.startswith("1 ")][0].split()
    # columns: lcs-default, lcs-second, twin-default, twin-second, lcs vs twin
    assert row[1:5] == ["10.00", "11.00", "12.00", "13.00"] and row[5] == f"{(10 / 12 - 1) * 100:+.1f}%"


def test_bench_main_refuses_without_a_gpu(capsys, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert lcs.main(["--bench", "--nargs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("launchbench.workloads.lcs: error:") and "simulator" in err and "\n" not in err
    assert lcs.main(["--bench", "--nargs", "9"]) == 2
    assert "--nargs" in capsys.readouterr().err
    assert lcs.main([]) == 2  # --bench is required


def test_the_cache_module_is_written_whole(tmp_path):
    """Through base/atomic (the one atomic write): the module and nothing else, no temp file left."""
    path = lcs.write_cache_module(str(tmp_path))
    assert open(path).read() == lcs.cache_module_source() and os.listdir(tmp_path) == [lcs.CACHE_MODULE + ".py"]


# --- benchmarks: discovery and skip logic ------------------------------------


def discovered():
    sys.path.insert(0, ROOT)
    try:
        from asv_runner.discovery import disc_benchmarks

        found = disc_benchmarks(os.path.join(ROOT, "benchmarks"), ignore_import_errors=True)
        return {b.name: b for b in found if b.name.startswith("bench_lcs.")}
    finally:
        sys.path.remove(ROOT)


def test_asv_discovers_the_lcs_benchmarks():
    found = discovered()
    assert set(found) == {
        "bench_lcs.TimeLCSLaunch.time_launch",
        "bench_lcs.TimeLCSFirstLaunch.time_first_launch",
        "bench_lcs.TimeLCSCallbacks.time_launch",
        "bench_lcs.TrackLCSCompilations.track_compilations",
        "bench_lcs.TimerawLCSDiskCache.timeraw_first_launch",
        "bench_lcs.TrackLCSDiskCache.track_compilations_in_new_process",
        "bench_lcs.TrackLCSDiskCache.track_lcs_marker_exists",
    }
    launch = found["bench_lcs.TimeLCSLaunch.time_launch"]
    assert launch.param_names == ["nargs", "config", "kernel"]
    assert [list(p) for p in launch.params] == [["0", "1", "2", "3", "4"], ["'default'", "'second'"], ["'lcs'", "'twin'"]]
    assert found["bench_lcs.TimeLCSCallbacks.time_launch"].params == [["0", "1", "4"]]
    assert type(found["bench_lcs.TimerawLCSDiskCache.timeraw_first_launch"]).__name__ == "TimerawBenchmark"
    for bench in found.values():
        assert bench.check(os.path.join(ROOT, "benchmarks"))


def test_discovery_needs_no_numba():
    code = (
        "import sys; sys.modules['numba'] = None; sys.path.insert(0, sys.argv[1])\n"
        "import benchmarks.bench_lcs as b\n"
        "print(sorted(n for n in vars(b) if n.startswith(('Time', 'Track'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, ROOT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "TimeLCSLaunch" in proc.stdout and "TrackLCSDiskCache" in proc.stdout


def bench_module():
    sys.path.insert(0, ROOT)
    try:
        import benchmarks.bench_lcs as bench
    finally:
        sys.path.remove(ROOT)
    return bench


def instantiate_and_setup(cls, params):
    obj = cls()
    return obj.setup(*params)


SETUPS = [
    ("TimeLCSLaunch", (1, "default", "lcs")),
    ("TimeLCSFirstLaunch", ("1x64", "twin")),
    ("TimeLCSCallbacks", (4,)),
    ("TrackLCSCompilations", ("lcs", 2)),
]


@pytest.mark.parametrize("name,params", SETUPS)
def test_every_benchmark_skips_without_launchconfig(monkeypatch, name, params):
    bench = bench_module()
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(bench.launchers, "has_launchconfig", lambda: False)
    with pytest.raises(NotImplementedError, match="< 0.30"):
        instantiate_and_setup(getattr(bench, name), params)


def test_disk_cache_benchmarks_skip_without_launchconfig(monkeypatch):
    bench = bench_module()
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(bench.launchers, "has_launchconfig", lambda: False)
    prepared = bench.prepare_disk_cache()  # never raises: asv would call that a failure
    assert "< 0.30" in prepared["skip"]
    for cls in (bench.TimerawLCSDiskCache, bench.TrackLCSDiskCache):
        with pytest.raises(NotImplementedError, match="< 0.30"):
            cls().setup(prepared, "lcs", "cached")


def test_has_launchconfig_false_when_the_module_is_missing(monkeypatch):
    bench = bench_module()
    monkeypatch.setitem(sys.modules, "numba.cuda.launchconfig", None)
    assert bench.launchers.has_launchconfig() is False
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    with pytest.raises(NotImplementedError, match="< 0.30"):
        bench.TimeLCSLaunch().setup(0, "default", "twin")


def test_simulator_skips_even_in_smoke_mode(monkeypatch):
    bench = bench_module()
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setenv("LAUNCHBENCH_SMOKE", "1")
    with pytest.raises(NotImplementedError, match="simulator"):
        bench.TimeLCSLaunch().setup(0, "default", "lcs")


def test_with_launchconfig_but_no_gpu_skips_for_the_gpu(monkeypatch):
    from launchbench.base.device import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    bench = bench_module()
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(bench.launchers, "has_launchconfig", lambda: True)
    with pytest.raises(NotImplementedError, match="GPU"):
        bench.TimeLCSLaunch().setup(0, "default", "lcs")
