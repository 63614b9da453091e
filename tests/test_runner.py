"""runner.run's schedule with a scripted stand-in for the worker processes: prefetched set-up,
pinning just before a round, rotation, and what an interruption keeps and kills."""
import pytest

from launchbench.base.errors import UserError
from launchbench.commands import compare
from launchbench.engine import pinning, progressbar, runner, runplan, workerproc


class FakeWorker:
    """Records every event in a shared log; answers like launchbench.engine.worker would."""

    events: list = []
    fail_on = None  # (round, nargs, variant, exception) raised by that sample request
    instances: list = []

    def __init__(self, variant, python, overlay, log_path, simulator, cpus=None, module=None):
        self.variant, self.cpus, self.module = variant, cpus, module
        self.round = int(log_path.rsplit("worker-r", 1)[1].split("-", 1)[0])
        self.pid = 1000 + len(FakeWorker.instances)
        self.alive, self.pending, self.polls = True, [], 0
        self.proc = FakeWorker._Proc(self)
        FakeWorker.instances.append(self)
        self._log("spawn")

    def _log(self, what, **extra):
        FakeWorker.events.append({"what": what, "round": self.round, "variant": self.variant, **extra})

    def send(self, req):
        self._log(req["cmd"], req=req)
        self.pending.append(req)

    def receive(self):
        req = self.pending.pop(0)
        cmd = req["cmd"]
        if cmd == "setup":
            return {"ok": True, "info": {"pid": self.pid, "numba_cuda_version": "0.0"}}
        if cmd == "prepare":
            return {"ok": True, "affinity": req["affinity"]}
        if cmd == "calibrate":
            return {"ok": True, "loops": 7}
        if cmd == "sample":
            fail = FakeWorker.fail_on
            if fail and (self.round, req["nargs"], self.variant) == fail[:3]:
                raise fail[3]
            return {"ok": True, "us": 10.0 + req["nargs"] + (0.5 if self.variant == "b" else 0.0)}
        raise AssertionError(cmd)

    def request(self, req):
        self.send(req)
        return self.receive()

    class _Proc:
        def __init__(self, worker):
            self.worker = worker

        def poll(self):  # retired workers take one reap to go
            return None if self.worker.alive or not self.worker.reaped_once() else 0

    def reaped_once(self):
        self.polls += 1
        return self.polls > 1

    def retire(self):
        self.alive = False
        self._log("retire")

    def close(self):
        self.alive = False
        self._log("close")

    def kill(self):
        if self.alive:
            self.alive = False
            self._log("kill")


@pytest.fixture
def fake(monkeypatch, tmp_path):
    FakeWorker.events, FakeWorker.instances, FakeWorker.fail_on = [], [], None
    monkeypatch.setattr(runner, "Worker", FakeWorker)
    return tmp_path


def plan(tmp_path, rounds=4, prefetch=2, repeats=2):
    return runplan.Plan(variants=[("a", "py", None), ("b", "py", "tls")], reference="a", arg_counts=[0, 1],
                       loops=None, repeats=repeats, rounds=rounds, warmup=5, sample_target_s=0.004,
                       simulator=True, affinity=[3], peers=False, overlay="o", log_dir=str(tmp_path),
                       prefetch=prefetch, setup_cpus=[0, 1, 2])


def index(what, rnd, variant=None):
    for i, e in enumerate(FakeWorker.events):
        if e["what"] == what and e["round"] == rnd and (variant is None or e["variant"] == variant):
            return i
    raise AssertionError(f"no {what} event for round {rnd}")


def test_rounds_are_set_up_ahead_and_pinned_just_before_measuring(fake):
    out = runner.run(plan(fake), progressbar.Progress(1, enabled=False))
    assert out.rounds_completed == 4 and not out.interrupted
    assert len(out.samples) == 4 * 2 * 2 * 2 and out.loops == {0: 7, 1: 7}
    # with prefetch 2, rounds 0..2 are asked to set up before round 0 measures, round 3 before round 1 does
    assert max(index("setup", r) for r in range(3)) < index("sample", 0)
    # ... but rounds 1 and 2 only once round 0 has calibrated, alone on the machine
    assert index("calibrate", 0) < min(index("spawn", r) for r in (1, 2))
    assert index("setup", 3) < index("sample", 1) and index("setup", 3) > index("sample", 0)
    for r in range(4):  # pinned and warmed up after the previous round closed, before its own samples
        assert index("prepare", r) < index("sample", r)
        if r:
            assert index("prepare", r) > index("retire", r - 1)
    prepare = [e["req"] for e in FakeWorker.events if e["what"] == "prepare"]
    assert all(req == {"cmd": "prepare", "affinity": [3], "warmup": 5} for req in prepare)
    assert all(w.cpus == [0, 1, 2] for w in FakeWorker.instances)  # set-up stays off the measuring CPU
    assert out.infos["a"]["affinity"] == [3]
    spawn_order = [[e["variant"] for e in FakeWorker.events if e["what"] == "spawn" and e["round"] == r]
                   for r in range(2)]
    assert spawn_order == [["a", "b"], ["b", "a"]]  # rotated per round
    assert out.timing["wall_s"] >= out.timing["measure_s"] >= 0
    # a round's workers are all asked to exit as soon as it is measured; they leave while the next
    # round is pinned and warmed up, and are waited for before its first sample
    for r in range(4):
        last_retire = max(i for i, e in enumerate(FakeWorker.events) if e["what"] == "retire" and e["round"] == r)
        assert last_retire < index("close", r)
        assert last_retire < min(i for i, e in enumerate(FakeWorker.events) if e["what"] == "close" and e["round"] == r)
        if r < 3:
            last_close = max(i for i, e in enumerate(FakeWorker.events) if e["what"] == "close" and e["round"] == r)
            assert index("retire", r) < index("prepare", r + 1) < last_close < index("sample", r + 1)
    assert sum(e["what"] == "close" for e in FakeWorker.events) == 8
    rounds = out.timing["rounds"]
    assert [rec["round"] for rec in rounds] == [0, 1, 2, 3]
    assert all(rec["measure_s"] >= 0 and rec["setup_wait_s"] >= 0 and rec["teardown_s"] >= 0 for rec in rounds)
    # rounds whose workers were closed at the next round's start know how long exiting took them
    assert all(rounds[r]["exit_s"] >= rounds[r + 1]["teardown_s"] for r in range(3))


def test_pinned_warmup_moves_the_rest_of_the_warmup_into_setup(fake):
    p = plan(fake, rounds=2)
    p.warmup, p.pinned_warmup = 1000, 100
    runner.run(p, progressbar.Progress(1, enabled=False))
    setups = [e["req"] for e in FakeWorker.events if e["what"] == "setup"]
    prepares = [e["req"] for e in FakeWorker.events if e["what"] == "prepare"]
    assert setups and all(req["setup_warmup"] == 900 for req in setups)
    assert prepares and all(req["warmup"] == 100 for req in prepares)


def test_each_variant_worker_gets_its_cuda_module(fake):
    """An mlir variant's workers import numba_cuda_mlir.cuda (launchbench.base.cudamod); the others numba.cuda."""
    p = plan(fake, rounds=1)
    p.modules = {"b": "numba-cuda-mlir"}
    runner.run(p, progressbar.Progress(1, enabled=False))
    got = {(w.variant, w.module) for w in FakeWorker.instances}
    assert got == {("a", None), ("b", "numba-cuda-mlir")}


def test_setup_profile_averages_the_workers_phases():
    infos = {"a": {"setup_phases_s": {"imported": 1.0, "context": 0.5}},
             "b": {"setup_phases_s": {"imported": 3.0, "context": 0.3}}, "c": {}}
    got = runner.setup_profile([(0.0, 2.0), (1.0, 5.0)], infos)
    assert got == {"worker_setup_s": 3.0, "worker_imported_s": 2.0, "worker_context_s": 0.4}
    assert runner.setup_profile([], {}) == {}


def test_setup_overlap_is_the_mean_number_of_workers_setting_up():
    spans = [(0.0, 10.0), (5.0, 6.0), (20.0, 30.0)]
    assert runner.setup_overlap((4.0, 8.0), spans) == pytest.approx((4.0 + 1.0) / 4.0)
    assert runner.setup_overlap((12.0, 18.0), spans) == 0.0
    assert runner.setup_overlap((3.0, 3.0), spans) == 0.0


def test_without_prefetch_each_round_is_set_up_after_the_previous_one(fake):
    runner.run(plan(fake, rounds=3, prefetch=0), progressbar.Progress(1, enabled=False))
    for r in (1, 2):
        assert index("spawn", r) > index("retire", r - 1)


@pytest.mark.parametrize("exc, reason", [(KeyboardInterrupt(), "KeyboardInterrupt"),
                                         (workerproc.WorkerError("b", "died", "worker for b exited"), "b: ")])
def test_interruption_keeps_finished_rounds_and_kills_every_worker(fake, exc, reason):
    FakeWorker.fail_on = (1, 1, "b", exc)
    saved = []
    out = runner.run(plan(fake, rounds=5, prefetch=2), progressbar.Progress(1, enabled=False),
                     on_round=lambda o: saved.append(o.rounds_completed))
    assert out.interrupted and out.reason.startswith(reason) and saved == [1]
    assert out.rounds_completed == 1 and len(out.samples) == 2 * 2 * 2
    assert out.partial_samples and {s["round"] for s in out.partial_samples} == {1}
    assert not any(w.alive for w in FakeWorker.instances)  # the current and the prefetched rounds
    killed = {e["round"] for e in FakeWorker.events if e["what"] == "kill"}
    assert killed == {1, 2, 3}


def test_setup_cpus_leave_out_the_measuring_ones_and_their_smt_siblings():
    alone = lambda cpus: set(cpus)  # noqa: E731 - no SMT
    assert pinning.setup_cpus([3], {0, 1, 2, 3}, siblings=alone) == [0, 1, 2]
    assert pinning.setup_cpus([0], {0}, siblings=alone) is None        # nothing left: no split
    assert pinning.setup_cpus(None, {0, 1}, siblings=alone) is None    # unpinned: no split
    pairs = lambda cpus: {c for cpu in cpus for c in (cpu % 8, cpu % 8 + 8)}  # noqa: E731 - cpu n and n+8 share a core
    assert pinning.setup_cpus([15], set(range(16)), siblings=pairs) == list(range(7)) + list(range(8, 15))
    assert pinning.setup_cpus([1], {1, 9}, siblings=pairs) == [9]       # only the sibling left: use it


def test_parse_cpu_list_and_smt_siblings():
    assert pinning.parse_cpu_list("0-3,8, 10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert pinning.parse_cpu_list("7") == {7}
    topo = {3: "3,11", 5: "5"}

    def read(cpu):
        if cpu not in topo:
            raise OSError("no such file")
        return topo[cpu]

    assert pinning.smt_siblings([3], read) == {3, 11}
    assert pinning.smt_siblings([3, 5, 6], read) == {3, 5, 6, 11}


@pytest.mark.parametrize("variants, affinity, available, expected", [
    (3, [15], set(range(16)), 4), (3, [7], set(range(8)), 2), (2, [1], {0, 1}, 0), (3, None, set(range(4)), 1),
])
def test_default_prefetch_fits_the_spare_cpus(variants, affinity, available, expected):
    assert pinning.default_prefetch(variants, affinity, available) == expected


def test_parse_prefetch():
    assert compare.parse_prefetch("3", 3, [1]) == 3 and compare.parse_prefetch(" 0 ", 3, [1]) == 0
    for bad in ("-1", "x", "1.5"):
        with pytest.raises(UserError, match="bad --prefetch"):
            compare.parse_prefetch(bad, 3, [1])


def test_ahead_makes_items_ahead_and_discards_the_untaken():
    made, discarded = [], []
    ahead = runner.Ahead(5, 2, lambda i: made.append(i) or f"w{i}", discarded.append)
    assert ahead.take(0) == "w0" and made == [0, 1, 2]
    assert ahead.take(1) == "w1" and made == [0, 1, 2, 3]
    ahead.close()
    assert discarded == ["w2", "w3"] and made == [0, 1, 2, 3]
    no_ahead = runner.Ahead(3, 0, lambda i: i, discarded.append)
    assert [no_ahead.take(i) for i in range(3)] == [0, 1, 2]


def test_spin_cpus_parse_and_refuse_measuring_ones():
    assert pinning.parse_spin("none", [15], [0, 1]) == []
    assert pinning.parse_spin("auto", [15], [2, 3]) == [2]
    assert pinning.parse_spin("auto", None, None) == []
    assert pinning.parse_spin("1,0", [15], [0, 1], available=range(16)) == [0, 1]
    with pytest.raises(UserError, match="also measure"):
        pinning.parse_spin("15", [15], [0, 1])
    with pytest.raises(UserError, match="--spin 'x': 'x' is not a whole number"):
        pinning.parse_spin("x", [15], [0, 1])
    assert pinning.parse_spin("0-1", [15], [0, 1], available=range(16)) == [0, 1]
    with pytest.raises(UserError, match=r"--spin 999: CPU\(s\) 999 not available to this process \(allowed: 0-3\)"):
        pinning.parse_spin("999", [3], [0, 1], available={0, 1, 2, 3})  # once, a worker's traceback and a hang


def test_spinners_busy_until_stopped():
    import os
    cpu = min(os.sched_getaffinity(0))
    spin = pinning.Spinners([cpu])
    try:
        assert len(spin.procs) == 1 and spin.procs[0].poll() is None
    finally:
        spin.stop()
    assert spin.procs == []
