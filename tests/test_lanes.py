"""Lanes (engine/lanes.py): GPU and CPU planning, pooling of the lanes' rounds, the per-lane check,
and compare --gpus end to end under the CUDA simulator."""
import json
import os
import random
import re
import subprocess
import sys
import time

import pytest

from launchbench.base.errors import UserError
from launchbench.engine import lanes, pinning, progressbar, runner, runplan, workerproc
from launchbench.output.lanes import render as render_lanes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE_ENV = f"env:{sys.prefix}"


def no_smt(cpus):
    return set(cpus)


def smt_pairs(half):
    """Siblings like many hosts number them: CPU k and k + half share a core."""
    def siblings(cpus):
        return {c for cpu in cpus for c in (cpu % half, cpu % half + half)}
    return siblings


# ---------------------------------------------------------------- GPUs

def test_visible_gpus_from_cuda_visible_devices_or_the_driver(tmp_path):
    assert lanes.visible_gpus({"CUDA_VISIBLE_DEVICES": "2, 3"}) == ["2", "3"]
    assert lanes.visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []
    for bus in ("0000:18:00.0", "0000:2a:00.0"):
        (tmp_path / bus).mkdir()
    assert lanes.visible_gpus({}, proc_dir=str(tmp_path)) == ["0", "1"]
    assert lanes.visible_gpus({}, proc_dir=str(tmp_path / "missing")) is None


def test_parse_gpus_maps_indices_to_visible_devices():
    assert lanes.parse_gpus(None, ["0", "1"]) is None  # no --gpus: no lanes
    assert lanes.parse_gpus("all", ["0", "1"]) == ["0", "1"]
    assert lanes.parse_gpus("1,0", ["4", "5"]) == ["5", "4"]  # indices into the parent's own list
    assert lanes.parse_gpus("0,1", None) == ["0", "1"]  # no driver to ask (simulator): taken as given


@pytest.mark.parametrize("text, visible, message", [
    ("all", None, "cannot count"), ("all", [], "no GPU is visible"), ("x", ["0"], "--gpus 'x': 'x' is not a whole number"),
    ("0,0", ["0", "1"], "named twice"), ("0,2", ["0", "1"], "not visible"), ("-1", ["0"], "--gpus '-1': '-1' is negative"),
])
def test_parse_gpus_errors_name_the_fix(text, visible, message):
    with pytest.raises(UserError, match=message):
        lanes.parse_gpus(text, visible)


# ---------------------------------------------------------------- CPUs

def test_split_keeps_smt_siblings_in_one_lane():
    shares = lanes.split_cpus(range(8), 2, smt_pairs(4))
    assert shares == [[0, 1, 4, 5], [2, 3, 6, 7]]
    assert lanes.split_cpus(range(5), 2, no_smt) == [[0, 1, 2], [3, 4]]  # as equal as the cores allow


def test_plan_two_lanes_each_measures_on_its_own_core_and_sets_up_on_its_share():
    plan = lanes.plan_lanes(["0", "1"], "auto", range(16), no_smt)
    assert [(lane.gpu, lane.affinity) for lane in plan] == [("0", [7]), ("1", [15])]
    assert plan[0].setup_cpus == list(range(7)) and plan[1].setup_cpus == list(range(8, 15))
    assert plan[1].env() == {"CUDA_VISIBLE_DEVICES": "1"}
    smt = lanes.plan_lanes(["0", "1"], "auto", range(16), smt_pairs(8))
    for lane in smt:  # no set-up on the measuring core's other thread, none on the other lane's CPUs
        core = smt_pairs(8)(lane.affinity)
        assert not core & set(lane.setup_cpus) and set(lane.setup_cpus) <= set(lane.cpus)
    assert not smt_pairs(8)(smt[0].affinity) & smt_pairs(8)(smt[1].affinity)


def test_one_lane_is_the_run_without_lanes():
    (lane,) = lanes.plan_lanes(["0"], "3", range(8), no_smt)
    assert lane.affinity == pinning.parse_affinity("3", range(8)) == [3]
    assert lane.setup_cpus == pinning.setup_cpus([3], range(8), no_smt)
    plan = runplan.Plan(variants=[("a", "py", None)], reference="a", arg_counts=[0], loops=None, repeats=1,
                       rounds=7, warmup=1, sample_target_s=0.001, simulator=True, affinity=[3], peers=False,
                       overlay="o", log_dir="d", prefetch=2, setup_cpus=lane.setup_cpus)
    got = lanes.lane_plan(plan, lane, 1)
    assert (got.rounds, got.prefetch, got.affinity, got.log_prefix) == (7, 2, [3], plan.log_prefix)
    assert got.worker_env == {"CUDA_VISIBLE_DEVICES": "0"}


def test_plan_errors():
    with pytest.raises(UserError, match="at least 3 CPU cores"):
        lanes.plan_lanes(["0", "1", "2"], "auto", [0, 1], no_smt)
    with pytest.raises(UserError, match="'auto'"):
        lanes.plan_lanes(["0", "1"], "3", range(8), no_smt)
    assert [lane.affinity for lane in lanes.plan_lanes(["0", "1"], "none", range(4), no_smt)] == [None, None]


def test_lane_plan_splits_rounds_and_bounds_prefetch_by_its_share():
    plan = runplan.Plan(variants=[("a", "py", None), ("b", "py", None)], reference="a", arg_counts=[0],
                       loops=None, repeats=1, rounds=5, warmup=1, sample_target_s=0.001, simulator=True,
                       affinity=[7], peers=False, overlay="o", log_dir="d", prefetch=4, setup_cpus=None)
    two = lanes.plan_lanes(["0", "1"], "auto", range(8), no_smt)
    got = [lanes.lane_plan(plan, lane, 2, no_smt) for lane in two]
    assert [g.rounds for g in got] == [3, 2]
    assert [g.prefetch for g in got] == [1, 1]  # 3 set-up CPUs per lane host one round of 2 workers
    assert [g.log_prefix for g in got] == ["lane0-worker-r", "lane1-worker-r"]
    assert [g.worker_env["CUDA_VISIBLE_DEVICES"] for g in got] == ["0", "1"]


@pytest.mark.parametrize("setting, n, environ, env, record", [
    ("auto", 1, {}, {}, {"value": None, "source": "the driver's default"}),
    ("auto", 4, {}, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}, {"value": 1, "source": "auto: several lanes"}),
    ("auto", 4, {"CUDA_DEVICE_MAX_CONNECTIONS": "4"}, {},
     {"value": 4, "source": "the environment's CUDA_DEVICE_MAX_CONNECTIONS"}),
    (8, 1, {}, {"CUDA_DEVICE_MAX_CONNECTIONS": "8"}, {"value": 8, "source": "--cuda-connections"}),
    (2, 4, {"CUDA_DEVICE_MAX_CONNECTIONS": "4"}, {"CUDA_DEVICE_MAX_CONNECTIONS": "2"},
     {"value": 2, "source": "--cuda-connections"}),
])
def test_cuda_connections_one_per_worker_with_several_lanes_unless_told(setting, n, environ, env, record):
    assert lanes.cuda_connections(setting, n, environ) == (env, record)


def test_cuda_connections_reach_every_lane_beside_its_gpu():
    env, _ = lanes.cuda_connections("auto", 2, {})
    plan = runplan.Plan(variants=[("a", "py", None)], reference="a", arg_counts=[0], loops=None, repeats=1,
                       rounds=2, warmup=1, sample_target_s=0.001, simulator=True, affinity=None, peers=False,
                       overlay="o", log_dir="d", prefetch=0, setup_cpus=None, worker_env=env)
    got = [lanes.lane_plan(plan, lane, 2, no_smt) for lane in lanes.plan_lanes(["0", "1"], "none", range(4), no_smt)]
    assert [g.worker_env for g in got] == [{"CUDA_DEVICE_MAX_CONNECTIONS": "1", "CUDA_VISIBLE_DEVICES": str(k)}
                                           for k in (0, 1)]


def test_worker_gets_the_lane_environment(monkeypatch, tmp_path):
    seen = {}

    class FakePopen:
        pid = 1

        def __init__(self, cmd, env, **kw):
            seen.update(env)

    monkeypatch.setattr(workerproc.subprocess, "Popen", FakePopen)
    workerproc.Worker("a", sys.executable, "overlay", str(tmp_path / "w.log"), True,
                  extra_env={"CUDA_VISIBLE_DEVICES": "1"})
    assert seen["CUDA_VISIBLE_DEVICES"] == "1" and seen["NUMBA_ENABLE_CUDASIM"] == "1"


# ---------------------------------------------------------------- pooling

def samples_for(lane_shift: float, rounds: int, spread=(0.0, 0.2, -0.2, 0.1, -0.1)):
    """Reference at 10 us and variant at 10.5 + shift (+ a per-round wiggle), 3 repeats a round."""
    out = []
    for r in range(rounds):
        for rep in range(3):
            out.append({"variant": "ref", "nargs": 0, "round": r, "repeat": rep, "us": 10.0})
            out.append({"variant": "v", "nargs": 0, "round": r, "repeat": rep,
                        "us": 10.5 + lane_shift + spread[r % len(spread)]})
    return out


def outcome(samples, rounds, wall, stopped=None):
    out = runplan.Outcome(samples=samples, rounds_completed=rounds, stopped=stopped, loops={0: 10})
    out.timing.update(wall_s=wall, measure_s=wall / 2, rounds=[{"round": r} for r in range(rounds)])
    return out


def test_merge_pools_rounds_with_distinct_ids_and_keeps_lanes_apart():
    plan = lanes.plan_lanes(["0", "1"], "auto", range(4), no_smt)
    merged = lanes.merge([outcome(samples_for(0, 3), 3, 9.0), outcome(samples_for(0, 2), 2, 7.0, "cap")], plan)
    assert merged.rounds_completed == 5 and merged.stopped == "cap" and not merged.stopped_by_rule
    assert merged.timing["wall_s"] == 9.0 and merged.timing["measure_s"] == 8.0
    assert sorted({s["round"] for s in merged.samples}) == [0, 1, 2, 3, 4]  # r * 2 + lane
    assert {s["round"] for s in merged.samples if s["lane"] == 1} == {1, 3}
    assert [lane["rounds_completed"] for lane in merged.lanes] == [3, 2]
    assert [r["round"] for r in merged.timing["rounds"]] == [0, 1, 2, 3, 4]
    from launchbench.engine.analysis import analyze
    _stats, deltas = analyze(merged.samples, ["ref", "v"], "ref", [0])
    assert deltas[0]["rounds"] == 5  # one interval over every lane's rounds


def test_pool_renumbers_only_new_samples_and_matches_a_fresh_merge():
    plan = lanes.plan_lanes(["0", "1"], "auto", range(4), no_smt)
    a, b = outcome(samples_for(0, 2), 2, 1.0), outcome(samples_for(0, 1), 1, 1.0)
    pool = lanes.Pool(plan)
    lanes.merge([a, b], plan, pool)
    a.samples.extend({**x, "round": 2} for x in samples_for(0, 1))  # lane 0 finishes another round
    a.rounds_completed = 3
    assert lanes.merge([a, b], plan, pool).samples == lanes.merge([a, b], plan).samples
    assert len(pool.done[0]) == len(a.samples)


class LaneWorker:
    """A thread-safe stand-in for workerproc.Worker: remembers its lane's environment; the variant
    'b' is 0.5 us slower; a worker of the GPU in ``fail_gpu`` dies at its first sample."""

    envs: list = []
    fail_gpu = None

    def __init__(self, variant, python, overlay, log_path, simulator, cpus=None, extra_env=None, module=None):
        self.variant, self.env, self.pending = variant, dict(extra_env or {}), []
        self.pid, self.spawned = 1, 0.0
        self.proc = type("P", (), {"poll": staticmethod(lambda: 0)})()
        LaneWorker.envs.append(self.env)

    def send(self, req):
        self.pending.append(req)

    def receive(self):
        req = self.pending.pop(0)
        if req["cmd"] == "setup":
            return {"ok": True, "info": {"device": {"name": "fake"}}}
        if req["cmd"] == "prepare":
            return {"ok": True, "affinity": req["affinity"]}
        if req["cmd"] == "calibrate":
            return {"ok": True, "loops": 5}
        if self.env.get("CUDA_VISIBLE_DEVICES") == LaneWorker.fail_gpu:
            raise workerproc.WorkerError(self.variant, "died", "worker exited")
        time.sleep(0.05)  # rounds last long enough for the pooled on_round to see some
        return {"ok": True, "us": 10.0 + (0.5 if self.variant == "b" else 0.0)}

    def request(self, req):
        self.send(req)
        return self.receive()

    def retire(self):
        pass

    close = kill = retire


@pytest.fixture
def lane_workers(monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "Worker", LaneWorker)
    monkeypatch.setattr(LaneWorker, "envs", [])
    monkeypatch.setattr(LaneWorker, "fail_gpu", None)
    return runplan.Plan(variants=[("a", "py", None), ("b", "py", None)], reference="a", arg_counts=[0],
                       loops=None, repeats=3, rounds=40, warmup=1, sample_target_s=0.001, simulator=True,
                       affinity=None, peers=False, overlay="o", log_dir=str(tmp_path), prefetch=1)


def test_a_pooled_stop_rule_ends_every_lane(lane_workers):
    plan = lane_workers
    plan.stop = lambda out: "enough" if out.rounds_completed >= 6 else None
    seen = []
    two = lanes.plan_lanes(["0", "1"], "none", range(4), no_smt)
    out = lanes.run(plan, two, progressbar.Progress(1, enabled=False), on_round=lambda o: seen.append(o.rounds_completed))
    assert 6 <= out.rounds_completed <= 8 and out.stopped == "enough" and not out.interrupted
    assert out.stopped_by_rule  # the rule chose the last round: precision mode keeps its corrected interval
    assert all(lane["stopped"] == "enough" for lane in out.lanes)
    assert {e["CUDA_VISIBLE_DEVICES"] for e in LaneWorker.envs} == {"0", "1"}
    assert seen == sorted(seen) and seen[-1] <= out.rounds_completed
    from launchbench.engine.analysis import analyze
    _stats, deltas = analyze(out.samples, ["a", "b"], "a", [0])
    assert deltas[0]["delta_us"] == pytest.approx(0.5) and deltas[0]["rounds"] == out.rounds_completed


def test_a_failing_lane_stops_the_others_and_is_reported(lane_workers):
    LaneWorker.fail_gpu = "1"
    two = lanes.plan_lanes(["0", "1"], "none", range(4), no_smt)
    out = lanes.run(lane_workers, two, progressbar.Progress(1, enabled=False))
    assert out.interrupted and out.reason.startswith("lane 1: ") and "worker exited" in out.reason
    assert out.lanes[1]["rounds_completed"] == 0 and out.lanes[0]["rounds_completed"] < 20


# ---------------------------------------------------------------- the per-lane check

def test_welch_and_holm_against_hand_values():
    t, p = lanes.welch([1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0, 6.0])
    # means 2.5 and 4.0, variances 5/3 and 5/2: t = -1.5 / sqrt(5/12 + 1/2), df = 6.97
    assert t == pytest.approx(-1.5666989, rel=1e-6) and p == pytest.approx(0.1614, abs=2e-3)
    assert lanes.welch([1.0], [1.0, 2.0]) is None and lanes.welch([1.0, 1.0], [1.0, 1.0]) is None
    adj = lanes.holm([0.01, 0.04, None, 0.03])
    assert adj[0] == pytest.approx(0.03) and adj[3] == pytest.approx(0.06) and adj[1] == pytest.approx(0.06)
    assert adj[2] is None


def pooled(shift_lane1: float, rounds: int = 10):
    plan = lanes.plan_lanes(["0", "1"], "auto", range(4), no_smt)
    return lanes.merge([outcome(samples_for(0, rounds), rounds, 1.0),
                        outcome(samples_for(shift_lane1, rounds), rounds, 1.0)], plan)


def test_lane_check_passes_lanes_that_agree_and_flags_a_lane_that_differs():
    same = lanes.lane_check(pooled(0.0).samples, ["ref", "v"], "ref", [0], 2)
    assert not same[0]["differs"] and same[0]["lane_rounds"] == [10, 10]
    assert same[0]["lane_mean_pct"][0] == pytest.approx(same[0]["lane_mean_pct"][1])
    off = lanes.lane_check(pooled(0.3).samples, ["ref", "v"], "ref", [0], 2)
    assert off[0]["differs"] and min(off[0]["p_holm"]) < 0.05
    assert off[0]["lane_mean_pct"][1] - off[0]["lane_mean_pct"][0] == pytest.approx(3.0)


def _null_run(rng, n_lanes=4, rounds=30, shift=None):
    """Samples of a three-way-like run: 2 variants x 5 arg counts vs ref, every lane measuring the
    same deltas (round noise 1 %), except *shift*: (lane, percent) added to one lane's variants."""
    out = []
    for lane in range(n_lanes):
        for r in range(rounds):
            level = 10.0 * (1 + rng.gauss(0, 0.1))  # the VM's speed state moves every variant
            for n in range(5):
                out.append({"variant": "ref", "nargs": n, "round": r * n_lanes + lane, "repeat": 0,
                            "us": level, "lane": lane})
                for v, true in (("a", 0.3), ("b", 0.1)):
                    extra = shift[1] / 100 if shift and shift[0] == lane else 0.0
                    out.append({"variant": v, "nargs": n, "round": r * n_lanes + lane, "repeat": 0,
                                "us": level * (1 + true + extra + rng.gauss(0, 0.01)), "lane": lane})
    return out


def test_lane_check_is_family_wise_over_the_run_yet_finds_a_lane_that_differs():
    rng = random.Random(7)
    checks = [lanes.lane_check(_null_run(rng), ["ref", "a", "b"], "ref", list(range(5)), 4) for _ in range(100)]
    flagged = sum(any(c["differs"] for c in check) for check in checks)
    assert flagged <= 10  # family-wise 5 % over 10 deltas x 4 lanes: 3-7 of 100
    # the control: Holm over each delta's lanes alone flags lanes that agree in about 30 runs of 100
    per_delta = sum(any(p is not None and p < 0.05 for c in check for p in lanes.holm(c["p"])) for check in checks)
    assert per_delta >= 20, per_delta
    off = lanes.lane_check(_null_run(rng, shift=(2, 1.5)), ["ref", "a", "b"], "ref", list(range(5)), 4)
    assert all(c["differs"] for c in off) and all(min(c["p_holm"]) == c["p_holm"][2] for c in off)


def test_report_gives_each_lane_its_deltas_and_names_differing_deltas():
    rep = lanes.report(pooled(0.3), ["ref", "v"], "ref", [0])
    assert rep["n"] == 2 and rep["lanes_differ"] == ["v/0"]
    assert [(d["lane"], d["rounds"]) for d in rep["deltas"]] == [(0, 10), (1, 10)]
    assert rep["deltas"][1]["delta_us"] == pytest.approx(0.8)
    text = render_lanes(rep)
    assert "lanes DIFFER on v/0" in text and "| 1 | v | 0 |" in text
    assert lanes.report(runplan.Outcome(), ["ref", "v"], "ref", [0]) is None and render_lanes(None) == ""


# ---------------------------------------------------------------- end to end (simulator)

def launchbench(*args):
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    return subprocess.run([sys.executable, "-m", "launchbench", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def test_compare_on_two_lanes_under_the_simulator(tmp_path):
    out = tmp_path / "r.json"
    proc = launchbench("compare", "--simulator", "--gpus", "0,1", "--args", "0", "--loops", "3", "--repeats", "2",
                       "--warmup", "1", "--rounds", "4", "--prefetch", "0", "--affinity", "none", "-o", str(out),
                       "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a")
    assert proc.returncode == 0, proc.stderr
    assert "Lanes: 2" in proc.stdout and "Lane check" in proc.stdout
    assert "workers' CUDA connections: 1 (auto: several lanes)" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["settings"]["cuda_connections"] == doc["lanes"]["cuda_connections"] == {"value": 1,
                                                                                       "source": "auto: several lanes"}
    assert doc["rounds_completed"] == 4 and doc["deltas"][0]["rounds"] == 4
    assert {(s["lane"], s["round"]) for s in doc["samples"]} == {(0, 0), (1, 1), (0, 2), (1, 3)}
    assert [lane["gpu"] for lane in doc["lanes"]["lanes"]] == ["0", "1"]
    assert {d["lane"] for d in doc["lanes"]["deltas"]} == {0, 1} and len(doc["lanes"]["check"]) == 1
    logs = sorted(os.listdir(tmp_path / "r.logs"))
    assert any(name.startswith("lane0-") for name in logs) and any(name.startswith("lane1-") for name in logs)
    assert "Lanes (one GPU each)" in (tmp_path / "r.md").read_text()


def test_gpus_errors_are_one_line():
    proc = launchbench("compare", "--simulator", "--gpus", "0,x")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("launchbench: error: --gpus '0,x': 'x' is not a whole number")


@pytest.mark.parametrize("visible_env, visible, simulator, needle", [
    ("garbage", ["garbage"], True, "CUDA_VISIBLE_DEVICES='garbage' names no device ('garbage')"),
    ("0,nope", ["0", "nope"], False, "names no device ('nope')"),
    (None, None, False, "no NVIDIA driver on this host"),
])
def test_gpus_refused_without_a_driver_or_with_garbage_devices(monkeypatch, visible_env, visible, simulator, needle):
    from launchbench.base import device
    from launchbench.base.errors import UserError

    if visible_env is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible_env)
    with pytest.raises(UserError, match=re.escape(needle)):
        device.check_gpu_lanes("0,1", visible, simulator)


def test_gpus_under_the_simulator_need_no_driver(monkeypatch):
    from launchbench.base import device

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    device.check_gpu_lanes("0,1", None, simulator=True)  # the simulated lanes test_lanes runs
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-8d3f1c2a-0b1e-4c5d-9e7f-123456789abc,1")
    device.check_gpu_lanes("0,1", ["GPU-8d3f1c2a-0b1e-4c5d-9e7f-123456789abc", "1"], simulator=False)


def test_set_up_is_the_lanes_of_compare_and_history(monkeypatch):
    """One set-up (lanes.set_up) for compare and history/bisect/pr: no --gpus gives no lanes and
    --affinity's CPUs; --gpus gives a lane per GPU; its run() goes to lanes.run or runner.run."""
    monkeypatch.delenv("CUDA_DEVICE_MAX_CONNECTIONS", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    plain = lanes.set_up(None, "none", "auto", simulator=False)
    assert (plain.lanes, plain.affinity, plain.worker_env) == (None, None, {})
    assert plain.connections == {"value": None, "source": "the driver's default"}
    one = lanes.set_up("0", "none", 4, simulator=True)
    assert [(lane.gpu, lane.affinity) for lane in one.lanes] == [("3", None)] and one.affinity is None
    assert one.worker_env == {"CUDA_DEVICE_MAX_CONNECTIONS": "4"}
    with pytest.raises(UserError, match="not visible"):
        lanes.set_up("1", "none", "auto", simulator=True)
    calls = []
    monkeypatch.setattr(runner, "run", lambda plan, progress, on_round=None: calls.append(("runner", plan)))
    monkeypatch.setattr(lanes, "run", lambda plan, ls, progress, on_round=None: calls.append(("lanes", ls)))
    plain.run("plan", None)
    one.run("plan", None)
    assert calls == [("runner", "plan"), ("lanes", one.lanes)]
