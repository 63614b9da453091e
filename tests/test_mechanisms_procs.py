"""``launchbench mechanisms`` across processes: statistics over processes, keeping finished
processes, and a simulator run through real worker processes."""
import json
import os
import subprocess
import sys

import pytest

from launchbench.base.errors import UserError
from launchbench.engine import mechanism_procs as mprocs
from launchbench.engine import mechanism_stats as mstats
from launchbench.engine import progressbar, runner, workerproc

pytest.importorskip("launchbench.workloads._tls", reason="C extension not built (pip install -e .)")


def _rounds(deltas_by_nargs: dict, n_rounds: int = 9, base: float = 10.0, noise: float = 0.002) -> list:
    """Pair rounds of one process whose tls - passthrough is *deltas_by_nargs* (us); contextvar +3 us."""
    rounds = []
    for r in range(n_rounds):
        drift = 0.3 * (r % 3)  # the machine drifts between pair rounds; pairing removes it
        eps = noise * ((r % 5) - 2)
        samples = {str(k): {"stock": [base + drift], "passthrough": [base + 0.1 + drift],
                            "tls": [base + 0.1 + d + drift + eps], "contextvar": [base + 3 + drift]}
                   for k, d in deltas_by_nargs.items()}
        rounds.append({"round": r, "order": {}, "samples": samples, "class_modified": {}, "complete": True})
    return rounds


SPECS = ["stock", "passthrough", "tls", "contextvar"]


def test_across_is_the_mean_over_processes_with_a_t_interval():
    per = [{"delta_us": d, "delta_pct": 10 * d} for d in (0.02, 0.04, 0.06, 0.08)]
    got = mstats.across(per)
    assert got["units"] == "processes" and got["processes"] == 4
    assert got["delta_us"] == pytest.approx(0.05)
    # t(0.975, 3) = 3.182; sd = 0.02582
    half = 3.182446 * 0.0258199 / 2
    assert got["ci_us"] == pytest.approx([0.05 - half, 0.05 + half], rel=1e-4)
    assert got["sd_between_processes_us"] == pytest.approx(0.0258199, rel=1e-4)
    assert got["per_process_us"] == [0.02, 0.04, 0.06, 0.08]
    assert got["delta_pct"] == pytest.approx(0.5)


def test_analyze_judges_across_processes_not_within_one():
    # three processes, each tight inside, but their tls costs sit 0.12 us apart: process 0 alone
    # would meet the 0.1 us target; across processes the interval covers the spread
    processes = [{"rounds": _rounds({0: d, 1: d})} for d in (0.0, 0.12, 0.24)]
    out = mstats.analyze_processes(processes, SPECS, [0, 1])
    tls = out["per_args"]["0"]["vs_passthrough"]["tls"]
    assert tls["delta_us"] == pytest.approx(0.12, abs=0.005)
    assert tls["ci_us"][0] < 0.0 and tls["ci_us"][1] > 0.24
    assert out["tls_target"]["verdict"] == "inconclusive"
    assert out["tls_target"]["scope"].startswith("3 processes")
    one = mstats.analyze(processes[0]["rounds"], SPECS, [0, 1])
    assert one["tls_target"]["verdict"] == "met"
    cv = out["per_args"]["1"]["vs_stock"]["contextvar"]
    assert cv["delta_us"] == pytest.approx(3.0, abs=0.01) and cv["processes"] == 3
    assert out["per_args"]["0"]["median_us"]["stock"] == pytest.approx(10.3, abs=0.01)


def test_analyze_verdicts_met_missed_and_not_judged():
    close = [{"rounds": _rounds({0: d})} for d in (0.03, 0.04, 0.05, 0.04)]
    assert mstats.analyze_processes(close, SPECS, [0])["tls_target"]["verdict"] == "met"
    far = [{"rounds": _rounds({0: d})} for d in (0.30, 0.31, 0.29, 0.30)]
    assert mstats.analyze_processes(far, SPECS, [0])["tls_target"]["verdict"] == "missed"
    assert mstats.analyze_processes(close, SPECS, [0], judge=False)["tls_target"]["verdict"] == "not judged (simulator)"
    assert mstats.analyze_processes(close[:1], SPECS, [0])["tls_target"]["verdict"].startswith("not measured")


def test_process_seeds_differ_and_are_reproducible():
    seeds = [mprocs.process_seed(7, i) for i in range(50)]
    assert len(set(seeds)) == 50 and seeds == [mprocs.process_seed(7, i) for i in range(50)]


class _FakeWorker:
    """Stands in for workerproc.Worker: replies like a worker; the process numbered `dies` dies."""
    dies = None
    spawned: list = []

    def __init__(self, variant, python, overlay, log_path, simulator, cpus=None, module=None):
        self.variant, self.pid = variant, 1000 + len(self.spawned)
        self.index = int(log_path.rsplit("worker-p", 1)[1].split("-")[0])  # the engine's round = the process
        self.killed = self.closed = False
        self.requests = []
        _FakeWorker.spawned.append(self)

    def send(self, request):
        self.requests.append(request)

    def receive(self):
        if self.index == self.dies:
            raise workerproc.WorkerError(self.variant, "died", f"worker for {self.variant} exited (code -9)")
        return {"ok": True, "info": {"pid": self.pid, "numba_cuda_version": "0.30.4", "device": {"name": "fake"}}}

    def request(self, request):
        self.send(request)
        if request["cmd"] == "prepare":
            return {"ok": True, "affinity": request["affinity"]}
        assert request["cmd"] == "mechanisms"
        return {"ok": True, "rounds": _rounds({0: 0.05}, n_rounds=3), "signature": "call(args, launch_config)",
                "delay": {}, "elapsed_s": 0.1}

    def retire(self):
        pass

    def close(self):
        self.closed = True

    def kill(self):
        self.killed = True


def _plan(tmp_path, n, prefetch=2):
    return mprocs.Plan(processes=n, seconds_each=1.0, rounds=10, specs=SPECS, arg_counts=[0], samples=1,
                      launches=100, warmup=10, warmup_class_write=120, seed=3, affinity=[0], simulator=False,
                      overlay=str(tmp_path), log_dir=str(tmp_path), prefetch=prefetch, setup_cpus=[1])


def test_run_keeps_finished_processes_when_a_worker_dies(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "Worker", _FakeWorker)
    monkeypatch.setattr(_FakeWorker, "spawned", [])
    monkeypatch.setattr(_FakeWorker, "dies", 2)
    seen = []
    out = mprocs.run(_plan(tmp_path, 5), progressbar.Progress(5, enabled=False),
                    on_process=lambda o: seen.append(len(o.processes)))
    assert [p["index"] for p in out.processes] == [0, 1] and seen == [1, 2]
    assert out.interrupted and "process" in out.reason and out.error.kind == "died"
    # prefetch 2: processes up to index 4 were set up ahead; the unfinished ones are killed
    assert len(_FakeWorker.spawned) == 5
    assert all(w.closed for w in _FakeWorker.spawned[:2])
    assert all(w.killed for w in _FakeWorker.spawned[2:])
    mech = [r for r in _FakeWorker.spawned[0].requests if r["cmd"] == "mechanisms"][0]
    assert mech["seed"] == mprocs.process_seed(3, 0) and mech["max_time"] == 1.0 and mech["specs"] == SPECS
    setup = _FakeWorker.spawned[0].requests[0]
    assert setup["cmd"] == "setup" and setup["mechanism"] is None


def test_run_sets_up_ahead_but_measures_one_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "Worker", _FakeWorker)
    monkeypatch.setattr(_FakeWorker, "spawned", [])
    monkeypatch.setattr(_FakeWorker, "dies", None)
    out = mprocs.run(_plan(tmp_path, 3, prefetch=0), progressbar.Progress(3, enabled=False))
    assert not out.interrupted and len(out.processes) == 3
    assert out.processes[0]["rounds_complete"] == 3 and out.info["device"]["name"] == "fake"
    assert mstats.analyze_processes(out.processes, SPECS, [0])["tls_target"]["verdict"] == "met"


def test_simulator_run_across_worker_processes(tmp_path):
    out = tmp_path / "mech.json"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    proc = subprocess.run([sys.executable, "-m", "launchbench", "mechanisms", "--simulator", "--processes", "2",
                           "--args", "0,1", "--rounds", "2", "--seed", "5", "-o", str(out)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "not a measurement" in proc.stdout and "across 2 processes" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["schema"] == "launchbench.mechanisms/4" and doc["analysis_scope"] == "processes"
    assert doc["params"]["processes"] == 2 and not doc["interrupted"]
    assert [p["index"] for p in doc["processes"]] == [0, 1]
    assert len({p["pid"] for p in doc["processes"]} | {os.getpid()}) == 3, "each process is a fresh one"
    assert {p["seed"] for p in doc["processes"]} == {mprocs.process_seed(5, 0), mprocs.process_seed(5, 1)}
    for p in doc["processes"]:
        assert p["rounds_complete"] == 2 and set(p["rounds"][0]["samples"]) == {"0", "1"}
        assert set(p["rounds"][0]["samples"]["0"]) == set(doc["params"]["mechanisms"])
    tls = doc["analysis"]["per_args"]["0"]["vs_passthrough"]["tls"]
    assert tls["units"] == "processes" and len(tls["per_process_us"]) == 2
    assert doc["analysis"]["tls_target"]["verdict"] == "not judged (simulator)"
    assert doc["rounds_complete"] == 4 and doc["class_writes"]["blocks"] == 2 * 2 * 2 * 5
    assert "launchbench: process 2/2" in proc.stderr


def _doc(deltas, numba_cuda="0.30.4", launches=100):
    processes = [{"index": i, "rounds": _rounds({0: d}), "rounds_complete": 9} for i, d in enumerate(deltas)]
    return {"schema": "launchbench.mechanisms/4", "tool": "launchbench mechanisms", "analysis": {},
            "analysis_scope": "processes", "numba_cuda": numba_cuda,
            "signature": "call(args, launch_config)", "simulator": False, "created": "x", "command": ["lb"],
            "params": {"mechanisms": SPECS, "arg_counts": [0], "samples": 1, "launches": launches, "warmup": 10,
                       "warmup_class_write": 120, "processes": len(deltas)},
            "processes": processes, "timing": {"wall_s": 10.0, "measure_s": 8.0}, "interrupted": False}


def test_pool_analyses_the_processes_of_several_runs_together():
    a, b = _doc([0.02, 0.12, 0.05]), _doc([0.04, 0.06])
    out = mstats.pool([a, b], ["a.json", "b.json"])
    assert [p["run"] for p in out["processes"]] == [0, 0, 0, 1, 1]
    assert out["params"]["processes"] == 5 and out["rounds_complete"] == 45
    tls = out["analysis"]["per_args"]["0"]["vs_passthrough"]["tls"]
    assert tls["processes"] == 5 and tls["delta_us"] == pytest.approx(0.058, abs=0.003)
    assert [r["processes"] for r in out["pooled_from"]] == [3, 2] and out["timing"]["wall_s"] == 20.0
    assert out["analysis"]["tls_target"]["scope"].startswith("5 processes")
    assert "processes" in a and len(a["processes"]) == 3, "the inputs are left as they were"


@pytest.mark.parametrize("other, what", [(dict(numba_cuda="0.29.0"), "numba_cuda differs"),
                                         (dict(launches=50), "--launches differs")])
def test_pool_refuses_runs_that_measured_differently(other, what):
    with pytest.raises(UserError, match=what):
        mstats.pool([_doc([0.1]), _doc([0.1], **other)], ["a.json", "b.json"])


def test_pool_command_reads_gzip_and_explains_bad_input(tmp_path):
    import gzip

    a, b = tmp_path / "a.json.gz", tmp_path / "b.json"
    with gzip.open(a, "wt") as fh:
        json.dump(_doc([0.02, 0.03]), fh)
    b.write_text(json.dumps(_doc([0.04, 0.05])))
    out = tmp_path / "pooled.json"
    proc = subprocess.run([sys.executable, "-m", "launchbench", "mechanisms", "--pool", str(a), str(b), "-o", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "across 4 processes: MET" in proc.stdout
    assert json.loads(out.read_text())["params"]["processes"] == 4
    (tmp_path / "one.json").write_text(json.dumps({"schema": "launchbench.compare/2"}))
    for bad, why in (([str(a)], "two or more"), ([str(a), str(tmp_path / "none.json")], "does not exist"),
                     ([str(a), str(tmp_path / "one.json")], "not a `launchbench mechanisms` run")):
        proc = subprocess.run([sys.executable, "-m", "launchbench", "mechanisms", "--pool", *bad, "-o", str(out)],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert proc.returncode == 2 and why in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
