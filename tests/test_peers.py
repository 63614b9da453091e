"""launchbench.workloads.peers and launchbench peers: PTX, statistics, tables and JSON on CPU; real launches on a GPU."""
import json
import os
import re

import pytest

from launchbench.base.atomic import write_json_atomic
from launchbench.base.errors import UserError
from launchbench.cli import main
from launchbench.commands import peers as peers_cmd
from launchbench.engine import stats
from launchbench.workloads import kernels, peers


@pytest.mark.parametrize(
    "cc, expected",
    [((9, 0), ("7.8", "sm_90")), ((8, 6), ("7.1", "sm_86")), ((7, 5), ("6.3", "sm_75")),
     ((9, 5), ("7.8", "sm_90")), ((13, 0), ("8.8", "sm_121")), ((10, 0), ("8.6", "sm_100"))],
)
def test_ptx_target_is_the_device_or_the_nearest_older_target(cc, expected):
    assert peers.ptx_target(cc) == expected


def test_ptx_target_refuses_ancient_devices():
    with pytest.raises(ValueError, match="older than any"):
        peers.ptx_target((3, 5))


def test_empty_kernels_have_the_right_parameters():
    ptx = peers.empty_kernels_ptx((9, 0), 4)
    assert ".target sm_90" in ptx and ".version 7.8" in ptx
    for nargs in range(5):
        body = re.search(r"\.entry %s\((.*?)\)" % peers.kernel_name(nargs), ptx, re.S).group(1)
        assert body.count(".param .u64") == nargs
    assert ptx.count(".visible .entry") == 5 and ptx.count("ret;") == 5


def _nvjitlink_or_skip():
    """Skip only where the optional linker is missing; nothing about the PTX is tried here."""
    nvjitlink = pytest.importorskip("cuda.bindings.nvjitlink")
    try:
        nvjitlink.version()
    except Exception as exc:  # noqa: BLE001 - the binding is there but libnvJitLink is not
        pytest.skip(f"nvJitLink unavailable: {exc}")


@pytest.mark.parametrize("cc", [(7, 5), (8, 0), (9, 0), (10, 0), (12, 0)])
def test_ptx_assembles_for_its_target(cc):
    """nvJitLink assembles PTX without a GPU: the hand-written kernels are valid (invalid PTX fails here)."""
    cc_ns = pytest.importorskip("cuda.core")
    _nvjitlink_or_skip()
    ptx = peers.empty_kernels_ptx(cc, 4)
    obj = cc_ns.ObjectCode.from_ptx(ptx.encode())
    linker = cc_ns.Linker(obj, options=cc_ns.LinkerOptions(arch="sm_%d%d" % cc))
    assert len(linker.link("cubin").code) > 0


def test_the_slope_fit_recovers_a_known_line():  # peerstats.analyze's per-arg slope
    assert stats.lsq_line([0, 1, 2, 3, 4], [3, 5, 7, 9, 11]) == pytest.approx((2.0, 3.0))
    slope, intercept = stats.lsq_line([0, 1, 2], [1.0, 1.5, 3.5])
    assert slope == pytest.approx(1.25) and intercept == pytest.approx(0.75)


@pytest.mark.parametrize("xs, ys", [([1], [1]), ([1, 2], [1]), ([2, 2], [1, 3])])
def test_the_slope_fit_rejects_underdetermined_input(xs, ys):
    with pytest.raises(ValueError):
        stats.lsq_line(xs, ys)


def test_summarize():
    s = peers_cmd.summarize([4.0, 1.0, 3.0, 2.0, 10.0])
    assert s == {"median_us": 3.0, "mad_us": 1.0, "min_us": 1.0, "n": 5}


MEDIANS = {
    "numba_cuda": {0: 10.0, 1: 14.5, 2: 19.0},
    "cupy": {0: 4.0, 1: 4.2, 2: 4.4},
    "floor": {0: 2.0, 1: 2.0, 2: 2.5},
}


def test_analyze_overhead_and_per_arg_cost():
    a = peers_cmd.analyze(MEDIANS)
    assert a["overhead_vs_floor"][0] == {"us": 8.0, "ratio": 5.0}
    assert a["overhead_vs_floor"][2]["us"] == pytest.approx(16.5)
    assert a["per_arg"]["numba_cuda"]["us_per_arg"] == pytest.approx(4.5)
    assert a["per_arg"]["cupy"]["us_per_arg"] == pytest.approx(0.2)
    assert a["per_arg"]["cupy"]["intercept_us"] == pytest.approx(4.0)


def test_analyze_without_floor_or_single_count():
    a = peers_cmd.analyze({"numba_cuda": {1: 5.0}})
    assert a == {"overhead_vs_floor": {}, "per_arg": {}}


def _doc():
    samples = {name: {n: [v, v + 0.2, v - 0.2] for n, v in per.items()} for name, per in MEDIANS.items()}
    settings = {"loops": 100, "repeats": 3, "rounds": 1}
    return peers_cmd.build_document(samples, [0, 1, 2], settings, {"cuda_core": "not importable"}, {"extra": 1})


def test_document_is_json_and_table_shows_every_launcher():
    doc = json.loads(json.dumps(_doc()))
    assert doc["results"]["numba_cuda"]["1"]["median_us"] == 14.5
    assert doc["analysis"]["overhead_vs_floor"]["0"]["ratio"] == 5.0
    assert doc["extra"] == 1
    table = peers_cmd.format_table(doc)
    lines = table.splitlines()
    assert "numba-cuda" in lines[1] and "CuPy" in lines[1] and "floor (C)" in lines[1]
    assert "cuda.core" not in lines[1]
    row0 = lines[2].split()
    assert row0 == ["0", "10.00", "4.00", "2.00", "8.00", "5.0x"]
    assert "4.500" in table and "cuda.core: not measured (not importable)" in table


def test_write_json_atomic_replaces_whole_files_only(tmp_path):
    path = tmp_path / "sub" / "peers.json"
    write_json_atomic(str(path), {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    with pytest.raises(TypeError):
        write_json_atomic(str(path), {"a": object()})
    assert json.loads(path.read_text()) == {"a": 1}
    assert os.listdir(path.parent) == ["peers.json"]


def test_collect_interleaves_and_converts_to_us():
    calls = []

    def fake(name):
        def run(n):
            calls.append(name)
            return n * {"a": 1e-6, "b": 2e-6}[name]
        return run

    runs = {"a": {0: fake("a"), 1: fake("a")}, "b": {0: fake("b"), 1: fake("b")}}
    samples = peers.collect(runs, [0, 1], loops=10, repeats=2, rounds=2)
    assert samples["a"][0] == pytest.approx([1.0] * 4) and samples["b"][1] == pytest.approx([2.0] * 4)
    assert calls[:2] == ["a", "b"] and calls[8:10] == ["b", "a"]  # order rotates per round


def test_parsers_give_user_errors():
    assert peers_cmd.parse_launchers("floor,cupy") == ["cupy", "floor"]
    assert peers_cmd.parse_launchers(None) == list(peers.LAUNCHERS)
    with pytest.raises(UserError, match="unknown launcher"):
        peers_cmd.parse_launchers("numba,floor")
    with pytest.raises(UserError, match="--repeats must be >= 1"):
        kernels.check_counts(10, 0, 1)


def test_measure_validates_input():
    with pytest.raises(ValueError):
        peers.measure(-1, 10)
    with pytest.raises(ValueError):
        peers.measure(1, 0)


def test_measure_under_the_simulator_is_all_none(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert peers.measure(2, 10) == {"numba_cuda_mlir": None, "cupy": None, "cuda_core": None, "floor": None}
    assert peers.unavailable()["floor"] == "CUDA simulator run"


def test_measure_without_a_gpu_returns_none_with_reasons():
    from launchbench.workloads import _floor

    if _floor.available():
        pytest.skip("a CUDA driver is present")
    assert peers.measure(1, 10) == {"numba_cuda_mlir": None, "cupy": None, "cuda_core": None, "floor": None}
    assert set(peers.unavailable()) == set(peers.PEERS)


def test_cli_refuses_without_a_gpu(capsys, monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert main(["peers", "--loops", "10"]) == 2
    assert "simulator" in capsys.readouterr().err
    assert main(["breakdown", "--loops", "10"]) == 2
    assert main(["peers", "--args", "x"]) == 2
    assert "--args" in capsys.readouterr().err


@pytest.mark.gpu
def test_measure_on_a_gpu_gives_the_floor():
    result = peers.measure(2, 200, repeats=2)
    assert set(result) == set(peers.PEERS)
    assert result["floor"] is not None and 0 < result["floor"] < 1000


@pytest.mark.gpu
def test_peers_cli_on_a_gpu(tmp_path, capsys):
    out = tmp_path / "peers.json"
    assert main(["peers", "--loops", "200", "--repeats", "1", "--rounds", "1", "--args", "0,1",
                 "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert "numba_cuda" in doc["results"] and "floor" in doc["results"]
    assert doc["analysis"]["overhead_vs_floor"]["0"]["us"] > 0
    assert "us per extra arg" in capsys.readouterr().out


def _bench_peers(monkeypatch):
    monkeypatch.syspath_prepend(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from benchmarks import bench_peers

    return bench_peers


@pytest.mark.parametrize("smoke", ["0", "1"])
def test_asv_suite_skips_under_the_simulator(monkeypatch, smoke):
    bench = _bench_peers(monkeypatch)
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    monkeypatch.setenv("LAUNCHBENCH_SMOKE", smoke)
    for launcher in bench.LAUNCHERS:
        with pytest.raises(NotImplementedError):
            bench.TrackPeerLaunch().setup(launcher, 1)


def test_asv_suite_skips_without_a_gpu(monkeypatch):
    from launchbench.base.device import gpu_available

    if gpu_available():
        pytest.skip("a GPU is present")
    bench = _bench_peers(monkeypatch)
    with pytest.raises(NotImplementedError, match="no CUDA GPU"):
        bench.TrackPeerLaunch().setup("floor", 0)


@pytest.mark.gpu
def test_asv_suite_tracks_the_floor(monkeypatch):
    bench = _bench_peers(monkeypatch)
    case = bench.TrackPeerLaunch()
    case.setup("floor", 2)
    assert 0 < case.track_us_per_launch("floor", 2) < 1000


def test_peers_rounds_from_the_engine_merge_in_round_order():
    from launchbench.commands.peers import merge_rounds

    units = [{"samples": {"numba_cuda": {"0": [1.0, 2.0], "1": [3.0]}, "floor": {"0": [0.1], "1": [0.2]}},
              "unavailable": {"cupy": "no module named cupy"}},
             {"samples": {"numba_cuda": {"0": [4.0], "1": [5.0]}, "floor": {"0": [0.3], "1": [0.4]}},
              "unavailable": {}}]
    samples, reasons = merge_rounds(units, ["numba_cuda", "cupy", "floor"], [0, 1])
    assert samples == {"numba_cuda": {0: [1.0, 2.0, 4.0], 1: [3.0, 5.0]}, "floor": {0: [0.1, 0.3], 1: [0.2, 0.4]}}
    assert reasons == {"cupy": "no module named cupy"}
    # a launcher missing from one round is dropped from the table rather than reported on fewer rounds
    units[1]["samples"].pop("floor")
    assert list(merge_rounds(units, ["numba_cuda", "floor"], [0, 1])[0]) == ["numba_cuda"]
