"""Faults: no worker outlives launchbench, lanes keep their rounds on a signal, SIGTERM and a
second signal and a full disk are reported truthfully. Unit checks with stand-in workers, then compare
end to end under the CUDA simulator (kept short: --args 0, 2 repeats, loops 3)."""
import errno
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from launchbench import cli
from launchbench.base import atomic, lifeline, signals
from launchbench.commands import compare
from launchbench.engine import lanes, pinning, progressbar, runner, runplan, workerproc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE_ENV = f"env:{sys.prefix}"
FAST = ["--args", "0", "--loops", "3", "--repeats", "2", "--warmup", "1", "--target-ci", "0", "--max-time", "0"]
LINUX = sys.platform.startswith("linux") and os.path.isdir("/proc/self")


# ---------------------------------------------------------------- processes, found through /proc

def _proc_fields(pid: int):
    """(state, ppid, session, cmdline) of a live, non-zombie process; None otherwise."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return fields[0], int(fields[1]), int(fields[3]), cmd


def workers_of(parent: int) -> set:
    """Live ``launchbench.engine.worker`` processes whose parent is *parent*."""
    found = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = _proc_fields(int(name))
            if info and info[1] == parent and "launchbench.engine.worker" in info[3]:
                found.add(int(name))
    return found


def still_alive(pids: set, sessions: set) -> set:
    """Of *pids*, those still running a worker, plus any worker in one of their *sessions*."""
    alive = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            info = _proc_fields(int(name))
            if info and "launchbench.engine.worker" in info[3] and (int(name) in pids or info[2] in sessions):
                alive.add(int(name))
    return alive


def wait_until_gone(pids: set, limit_s: float = 30.0) -> set:
    """Poll until none of *pids* runs a worker (a liveness check, not a speed bound); what is left."""
    sessions = set(pids)  # workers lead their own sessions (start_new_session)
    deadline = time.monotonic() + limit_s
    left = still_alive(pids, sessions)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = still_alive(pids, sessions)
    for pid in left:  # never leave them to the next test
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


# ---------------------------------------------------------------- the death signal and the reaper

@pytest.mark.skipif(not LINUX, reason="PR_SET_PDEATHSIG and /proc are Linux")
def test_a_child_dies_with_its_parent_even_on_sigkill():
    """A middle process starts a child in its own session that arms the death signal, then is
    SIGKILLed: no finally, no atexit, yet the child ends."""
    middle = textwrap.dedent("""
        import os, subprocess, sys, time
        from launchbench.base import lifeline
        child = subprocess.Popen([sys.executable, "-c",
            "from launchbench.base import lifeline; import sys, time; "
            "print(lifeline.die_with_parent(), flush=True); time.sleep(600)"],
            env=lifeline.child_env(dict(os.environ)), stdout=subprocess.PIPE, text=True, start_new_session=True)
        print(child.pid, child.stdout.readline().strip(), flush=True)
        time.sleep(600)
        """)
    proc = subprocess.Popen([sys.executable, "-c", middle], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    pid, armed = proc.stdout.readline().split()
    pid = int(pid)
    assert armed == "True" and _proc_fields(pid) is not None
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    while _proc_fields(pid) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _proc_fields(pid) is not None
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the child outlived its SIGKILLed parent"


def test_a_child_whose_parent_is_already_gone_exits_at_once():
    code = "from launchbench.base import lifeline; lifeline.die_with_parent(); print('ran on')"
    env = dict(os.environ, **{lifeline.PARENT_ENV: "999999999"})  # not this child's parent
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 1 and "ran on" not in proc.stdout
    env.pop(lifeline.PARENT_ENV)  # without it (a test importing the worker): nothing happens
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "ran on" in proc.stdout


def test_the_reaper_kills_tracked_children_and_ignores_stand_ins():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    lifeline.track(proc)
    lifeline.track(type("Fake", (), {"pid": 1})())  # a test's stand-in with pid 1: never tracked
    assert proc.pid in lifeline.tracked() and 1 not in lifeline.tracked()
    assert lifeline.reap() == 1
    assert proc.poll() == -signal.SIGKILL and lifeline.tracked() == []


def test_rounds_set_up_ahead_are_bounded_by_construction():
    made = []
    ahead = runner.Ahead(1000, 1000, made.append, lambda item: None)
    ahead.take(0)
    assert len(made) == pinning.PREFETCH_LIMIT + 1
    ahead.ahead = 10 ** 6  # raised later (after calibration): still bounded
    ahead.take(1)
    assert len(made) == pinning.PREFETCH_LIMIT + 2


# ---------------------------------------------------------------- a reply awaited until a deadline

def _silent_worker():
    """A Worker whose process never answers (a sample with a huge loop count, say)."""
    w = workerproc.Worker.__new__(workerproc.Worker)
    w.variant, w.log_path = "a", os.devnull
    w.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    w._log = open(os.devnull, "ab")
    return w


def test_a_reply_is_awaited_only_until_the_deadline_or_a_cancel():
    w = _silent_worker()
    try:
        w.deadline = time.monotonic() + 0.3
        with pytest.raises(workerproc.Halted) as info:
            w.receive()
        assert info.value.why == "deadline"
        w.deadline, w.cancel = None, threading.Event()
        threading.Timer(0.3, w.cancel.set).start()
        with pytest.raises(workerproc.Halted) as info:
            w.receive()
        assert info.value.why == "cancel"
    finally:
        w.kill()
    assert w.proc.poll() is not None


class SlowWorker:
    """A stand-in for workerproc.Worker whose samples never end (a huge loop count): it answers set-up
    and warm-up, then waits for its deadline as Worker.receive does, and raises Halted."""

    spawned_with: list = []
    deadline = cancel = None

    def __init__(self, variant, python, overlay, log_path, simulator, cpus=None, extra_env=None, module=None):
        self.variant, self.pending, self.pid, self.spawned = variant, [], 7, 0.0
        self.proc = type("P", (), {"poll": staticmethod(lambda: 0)})()
        self.killed = False
        SlowWorker.spawned_with.append(self)

    def send(self, req):
        self.pending.append(req)

    def receive(self):
        req = self.pending.pop(0)
        if req["cmd"] == "setup":
            return {"ok": True, "info": {}}
        if req["cmd"] == "prepare":
            return {"ok": True, "affinity": None}
        if self.pending_samples() > 2:
            while self.deadline is None or time.monotonic() < self.deadline:
                time.sleep(0.01)
            raise workerproc.Halted("deadline")
        return {"ok": True, "us": 1.0}

    def pending_samples(self):
        SlowWorker.count = getattr(SlowWorker, "count", 0) + 1
        return SlowWorker.count

    def request(self, req):
        self.send(req)
        return self.receive()

    def retire(self):
        pass

    def close(self):
        pass

    def kill(self):
        self.killed = True


def test_max_time_ends_a_round_in_progress(monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "Worker", SlowWorker)
    monkeypatch.setattr(SlowWorker, "spawned_with", [])
    monkeypatch.setattr(SlowWorker, "count", 0, raising=False)
    monkeypatch.setattr(runplan, "MIN_GRACE_S", 0.2)
    plan = runplan.Plan(variants=[("a", "py", None), ("b", "py", None)], reference="a", arg_counts=[0],
                       loops={0: 5}, repeats=3, rounds=5, warmup=1, sample_target_s=0.001, simulator=True,
                       affinity=None, peers=False, overlay="o", log_dir=str(tmp_path), prefetch=1, max_time=0.1)
    out = runner.run(plan, progressbar.Progress(1, enabled=False))
    assert out.rounds_completed == 0 and not out.interrupted
    assert out.stopped.startswith("time cap: 0.1 s of measurement reached; round 1 was still running")
    assert len(out.partial_samples) == 2  # the two samples before the endless one, kept apart
    workers = SlowWorker.spawned_with
    assert len(workers) == 4  # round 1's and round 2's, set up ahead
    assert all(w.deadline is not None for w in workers[:2])  # the measuring round's wait until the cap
    assert all(w.killed for w in workers)  # the round's and the round set up ahead


def test_hard_deadline_is_the_cap_plus_a_bounded_grace():
    plan = runplan.Plan(variants=[], reference="a", arg_counts=[0], loops=None, repeats=1, rounds=1, warmup=1,
                       sample_target_s=0.001, simulator=True, affinity=None, peers=False, overlay="o", log_dir="l")
    assert plan.hard_deadline(100.0) is None
    plan.max_time = 3.0
    assert plan.hard_deadline(100.0) == 100.0 + 3.0 + runplan.MIN_GRACE_S
    plan.max_time = 1000.0
    assert plan.hard_deadline(0.0) == 1100.0


# ---------------------------------------------------------------- lanes keep their rounds on a signal

class LaneWorker:
    """A thread-safe stand-in for workerproc.Worker (as in test_lanes.py), honouring a cancel."""

    def __init__(self, variant, python, overlay, log_path, simulator, cpus=None, extra_env=None, module=None):
        self.variant, self.pending, self.pid, self.spawned = variant, [], 1, 0.0
        self.proc = type("P", (), {"poll": staticmethod(lambda: 0)})()

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
        time.sleep(0.02)
        if getattr(self, "cancel", None) is not None and self.cancel.is_set():
            raise workerproc.Halted("cancel")
        return {"ok": True, "us": 10.0 + (0.5 if self.variant == "b" else 0.0)}

    def request(self, req):
        self.send(req)
        return self.receive()

    def retire(self):
        pass

    close = kill = retire


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_lanes_keep_every_lanes_rounds_on_a_signal(monkeypatch, tmp_path, signum):
    """The signal lands in the main thread while it waits for the lanes (a lane's stop rule sends
    it once 6 pooled rounds are done): every lane's finished rounds are in the merged outcome.
    A Thread.join cut by the KeyboardInterrupt used to drop a lane still running."""
    monkeypatch.setattr(runner, "Worker", LaneWorker)
    plan = runplan.Plan(variants=[("a", "py", None), ("b", "py", None)], reference="a", arg_counts=[0],
                       loops=None, repeats=3, rounds=200, warmup=1, sample_target_s=0.001, simulator=True,
                       affinity=None, peers=False, overlay="o", log_dir=str(tmp_path), prefetch=1)
    sent = []

    def stop(out):
        if out.rounds_completed >= 6 and not sent:
            sent.append(out.rounds_completed)
            os.kill(os.getpid(), signum)
        return None

    plan.stop = stop
    two = lanes.plan_lanes(["0", "1"], "none", range(4), lambda cpus: set(cpus))
    with signals.sigterm_as_interrupt():
        out = lanes.run(plan, two, progressbar.Progress(1, enabled=False))
    assert sent, "the signal was never sent"
    assert out.interrupted and out.reason == ("SIGTERM" if signum == signal.SIGTERM else "KeyboardInterrupt")
    per_lane = [lane["rounds_completed"] for lane in out.lanes]
    assert out.rounds_completed == sum(per_lane) >= 6 and all(n >= 1 for n in per_lane), per_lane
    assert len(out.samples) == out.rounds_completed * 3 * 2
    assert {s["lane"] for s in out.samples} == {0, 1}


# ---------------------------------------------------------------- signals: a second one is only noted

def test_a_second_signal_is_noted_and_a_third_stops():
    code = textwrap.dedent("""
        import os, signal, sys, time
        from launchbench.base import signals
        with signals.sigterm_as_interrupt():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            except signals.Terminated:
                print("first raised", signals.reason(), flush=True)
            os.kill(os.getpid(), signal.SIGINT)  # the second (of either kind): the clean-up goes on
            time.sleep(0.1)
            print("second noted", signals.signals_received(), signals.terminated(), flush=True)
            os.kill(os.getpid(), signal.SIGTERM)  # the third: the default action
            time.sleep(5)
            print("not reached", flush=True)
        """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines() == ["first raised SIGTERM", "second noted 2 True"], proc.stdout + proc.stderr
    assert proc.returncode == -signal.SIGTERM
    assert "a third signal stops at once" in proc.stderr


def test_by_signal_and_reason():
    assert signals.by_signal("SIGTERM") and signals.by_signal("KeyboardInterrupt")
    assert not signals.by_signal("a: worker died") and not signals.by_signal(None)
    assert signals.reason(signals.Terminated()) == "SIGTERM" and signals.reason(KeyboardInterrupt()) == "KeyboardInterrupt"
    assert signals.reason(signals.Terminated(signal.SIGHUP)) == "SIGHUP" and signals.by_signal("SIGHUP")


# ---------------------------------------------------------------- compare end to end under the simulator

def _launch(tmp_path, *extra):
    out = tmp_path / "r.json"
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    proc = subprocess.Popen([sys.executable, "-m", "launchbench", "compare", "--simulator", *FAST, "--rounds", "200",
                             "-o", str(out), *extra, "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, out


def _start(tmp_path, *extra):
    """A run with at least one finished round on disk."""
    proc, out = _launch(tmp_path, *extra)
    deadline = time.monotonic() + 180
    while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    if not out.exists():
        proc.kill()
        pytest.fail("no round finished: " + proc.communicate()[1][-2000:])
    return proc, out


@pytest.mark.skipif(not LINUX, reason="finds workers through /proc")
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGTERM twice", "SIGHUP", "SIGKILL"])
def test_no_worker_outlives_a_stopped_run(tmp_path, how):
    """Workers busy setting up (an endless set-up warm-up: they never read their stdin again, so
    its end does not stop them), the current round's and two rounds set up ahead: none survives
    launchbench, however it is stopped; a signal still leaves the reason, the JSON and Markdown."""
    proc, out = _launch(tmp_path, "--prefetch", "2", "--warmup", "10000000", "--pinned-warmup", "1")
    seen: set = set()
    deadline = time.monotonic() + 120
    while len(seen) < 6 and time.monotonic() < deadline and proc.poll() is None:  # 3 rounds of 2
        time.sleep(0.1)
        seen |= workers_of(proc.pid)
    assert len(seen) >= 6, f"workers found: {seen}; " + (proc.communicate()[1][-2000:] if proc.poll() is not None else "")
    time.sleep(1.0)  # let the last one read its set-up request
    if how == "SIGKILL":
        proc.kill()
    elif how == "SIGINT":
        proc.send_signal(signal.SIGINT)
    elif how == "SIGHUP":
        proc.send_signal(signal.SIGHUP)
    else:
        proc.send_signal(signal.SIGTERM)
        if how == "SIGTERM twice":
            time.sleep(0.3)  # the first is being handled: the second lands in its clean-up
            proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert not wait_until_gone(seen), f"workers left after {how}"
    if how == "SIGKILL":
        return
    assert "Traceback" not in stderr, stderr
    assert proc.returncode == {"SIGINT": 130, "SIGHUP": 129}.get(how, 143), stderr
    reason = {"SIGINT": "KeyboardInterrupt", "SIGHUP": "SIGHUP"}.get(how, "SIGTERM")
    if how != "SIGINT":
        assert f"launchbench: terminated ({reason})" in stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["interrupt_reason"] == reason
    md = (tmp_path / "r.md").read_text()
    assert f"Interrupted after 0 of 200 rounds ({reason})" in md


@pytest.mark.skipif(not LINUX, reason="finds workers through /proc")
def test_a_second_sigterm_keeps_the_finished_rounds_and_the_reports(tmp_path):
    proc, out = _start(tmp_path, "--prefetch", "1")
    seen = workers_of(proc.pid)
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "Traceback" not in stderr, stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["interrupt_reason"] == "SIGTERM" and doc["rounds_completed"] >= 1
    assert len(doc["samples"]) == doc["rounds_completed"] * 2 * 2
    md = (tmp_path / "r.md").read_text()
    assert f"Interrupted after {doc['rounds_completed']} of 200 rounds (SIGTERM)" in md
    assert (tmp_path / "r.png").is_file()
    assert not wait_until_gone(seen | {int(s["worker"]) for s in doc["samples"]})


@pytest.mark.skipif(not LINUX, reason="finds workers through /proc")
def test_a_hang_up_keeps_the_finished_rounds_and_every_report(tmp_path):
    """SIGHUP (a closed terminal or ssh session) is SIGTERM's twin: rounds kept, JSON, Markdown and
    PNG written, interrupted true, exit 129, no worker left; it once killed the run outright."""
    proc, out = _start(tmp_path, "--prefetch", "1")
    seen = workers_of(proc.pid)
    proc.send_signal(signal.SIGHUP)
    _stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 129 and "Traceback" not in stderr, stderr
    assert "launchbench: terminated (SIGHUP)" in stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["interrupt_reason"] == "SIGHUP" and doc["rounds_completed"] >= 1
    md = (tmp_path / "r.md").read_text()
    assert f"Interrupted after {doc['rounds_completed']} of 200 rounds (SIGHUP)" in md
    assert (tmp_path / "r.png").is_file()
    assert not wait_until_gone(seen | {int(s["worker"]) for s in doc["samples"]})


def test_a_hang_up_is_raised_as_terminated_and_its_terminal_writes_are_dropped():
    code = textwrap.dedent("""
        import os, signal, sys, time
        from launchbench.base import signals
        with signals.sigterm_as_interrupt():
            try:
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(5)
            except signals.Terminated:
                print("raised", signals.reason(), signals.exit_status(130), signals.stopped_by(), flush=True)
            os.close(2)  # the terminal is gone: writing to it fails
            sys.stderr.write("dropped\\n")
            print("went on", flush=True)
        """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.stdout.splitlines() == ["raised SIGHUP 129 terminated (SIGHUP)", "went on"], proc.stdout + proc.stderr
    assert proc.returncode == 0


@pytest.mark.skipif(not LINUX, reason="finds workers through /proc")
def test_a_second_run_on_the_same_output_is_refused_and_the_first_keeps_its_rounds(tmp_path):
    """Two runs started with one -o once both exited 0, one's rounds lost and their logs mixed: the
    second is refused in one line naming the first's pid, before any work, and the first, stopped,
    keeps its rounds and reports; no worker of either is left."""
    first, out = _start(tmp_path, "--prefetch", "1")
    second, _ = _launch(tmp_path)
    _stdout, stderr = second.communicate(timeout=120)
    assert second.returncode == 2, stderr
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert lines == [(f"launchbench: error: --output {out} is being written by another launchbench run "
                      f"(pid {first.pid}); wait for it to end or give --output another name")], stderr
    assert first.poll() is None, "the first run was disturbed"
    seen = workers_of(first.pid)
    first.send_signal(signal.SIGTERM)
    _stdout, stderr = first.communicate(timeout=120)
    assert first.returncode == 143, stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["rounds_completed"] >= 1
    assert len({s["worker"] for s in doc["samples"]}) == doc["rounds_completed"] * 2  # one run's workers only
    assert (tmp_path / "r.md").is_file() and not list(tmp_path.glob(".*launchbench-lock"))
    assert not wait_until_gone(seen | {int(s["worker"]) for s in doc["samples"]})


@pytest.mark.skipif(not LINUX, reason="finds workers through /proc")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_two_lanes_interrupted_keep_their_rounds(tmp_path, signum):
    proc, out = _start(tmp_path, "--gpus", "0,1", "--affinity", "none", "--prefetch", "0")
    deadline = time.monotonic() + 120
    while json.loads(out.read_text())["rounds_completed"] < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    seen = workers_of(proc.pid)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == (130 if signum == signal.SIGINT else 143), stderr
    doc = json.loads(out.read_text())
    per_lane = [lane["rounds_completed"] for lane in doc["lanes"]["lanes"]]
    assert doc["interrupted"] is True and doc["rounds_completed"] == sum(per_lane) >= 2, per_lane
    assert len(doc["samples"]) == doc["rounds_completed"] * 2 * 2  # rounds x repeats x variants
    assert doc["deltas"][0]["rounds"] == doc["rounds_completed"]
    md = (tmp_path / "r.md").read_text()
    assert f"Interrupted after {doc['rounds_completed']} of 200 rounds" in md
    for lane, n in enumerate(per_lane):  # the lanes table of the Markdown holds each lane's rounds
        assert re.search(rf"\| {lane} \| {lane} \(.*?\) \| .*? \| {n} \|", md), md
    assert (tmp_path / "r.png").is_file() and (tmp_path / "r.png").stat().st_size > 0
    seen |= {int(s["worker"]) for s in doc["samples"]}
    assert not wait_until_gone(seen)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_a_file_size_limit_mid_run_writes_what_fits(tmp_path, capsys, monkeypatch):
    """Every file is refused (EFBIG, as under ulimit -f) once larger than the first checkpoint:
    the run stops there, the JSON that fits says why, the Markdown fits, the PNG may not; one line
    says what was kept."""
    pytest.importorskip("numba")
    out = tmp_path / "r.json"
    real, limit, tried = atomic.os.fsync, [], {}

    def fsync(fd):
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        size = os.fstat(fd).st_size
        if name.startswith(".r.json.") and not limit:
            limit.append(size)
        tried.setdefault(name.split(".")[1] + "." + name.split(".")[2], []).append(size)
        if limit and size > limit[0]:
            raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))
        return real(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(compare, "WRITE_EVERY_S", 0.0)  # a checkpoint after every round
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    rc = cli.main(["compare", "--simulator", *FAST, "--rounds", "6", "--prefetch", "0", "-o", str(out),
                   "--variant", f"a={HERE_ENV}", "--variant", "b=passthrough@a"])
    stdout, stderr = capsys.readouterr()
    assert rc == 2 and "Traceback" not in stdout + stderr, stderr
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and "File too large" in doc["interrupt_reason"]
    assert doc["interrupt_reason"].startswith(f"output refused: cannot write {out}")
    assert 1 <= doc["rounds_completed"] < 6  # stopped at the refused checkpoint, not at the planned end
    assert len(doc["samples"]) == doc["rounds_completed"] * 2 * 2
    errors = [ln for ln in stderr.splitlines() if ln.startswith("launchbench: error:")]
    assert len(errors) == 1 and "File too large" in errors[0] and "ulimit -f" in errors[0], stderr
    assert f"kept: {out} (" in errors[0]
    md, png = tmp_path / "r.md", tmp_path / "r.png"
    assert md.is_file() and "output refused" in md.read_text()  # the Markdown is smaller: it fits
    assert str(md) in errors[0].split("; not written")[0]
    png_fits = tried["r.png"][-1] <= limit[0]
    assert png.is_file() == png_fits
    unwritten = errors[0].split("not written: ", 1)[1] if "not written: " in errors[0] else ""
    assert (str(png) in unwritten) == (not png_fits)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
