"""The anchor reference (benchmarks/anchor.py): its settings, the server's line protocol with fake
launchers, the sample scaled by A0, a server shared by two benchmark processes under the simulator,
its idle exit and the restart of a server running other anchor code. CPU only; no wall-clock bounds."""
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from benchmarks import anchor, bench_launch, normalize

ROOT = Path(__file__).resolve().parents[1]
KIND = {"mode": "pre", "args": 0, "config": "[1, 1]"}


@pytest.fixture
def short_dir():
    """A server folder whose socket path fits AF_UNIX's ~100 bytes (tmp_path is often too long)."""
    folder = tempfile.mkdtemp(prefix="lba")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _wait(predicate, deadline_s):
    deadline = time.monotonic() + deadline_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.1)
    return predicate()


def _cpus():
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


# ---------------------------------------------------------------- settings


def test_anchor_is_the_default_reference_once_an_anchor_python_is_named():
    assert normalize.reference_kind({normalize.ANCHOR_ENV: sys.executable}) == "anchor"
    assert normalize.reference_kind({normalize.ANCHOR_ENV: sys.executable, normalize.REF_ENV: "bindings"}) == "bindings"


def test_anchor_reference_without_anchor_python_names_the_variable():
    with pytest.raises(normalize.ConfigError, match=normalize.ANCHOR_ENV):
        normalize.reference_kind({normalize.REF_ENV: "anchor"})


@pytest.mark.parametrize("make", ["missing", "not-executable"])
def test_anchor_python_must_be_an_executable_file(tmp_path, make):
    path = tmp_path / "python"
    if make == "not-executable":
        path.write_text("#!/bin/sh\n")
        path.chmod(0o644)
    with pytest.raises(normalize.ConfigError, match="executable") as info:
        normalize.reference_kind({normalize.ANCHOR_ENV: str(path)})
    assert normalize.ANCHOR_ENV in str(info.value)


# ---------------------------------------------------------------- server protocol with fake launchers


class FakeRun:
    def __init__(self, seconds=2e-6):
        self.seconds, self.calls = seconds, []

    def __call__(self, n):
        self.calls.append(n)
        return self.seconds


def _prefilled(server, run):
    """A server that needs no GPU work for KIND: its launcher and A0 are already there."""
    server.launchers[anchor.kind_key(KIND)] = run
    server.a0[f"{server.version}|{anchor.kind_key(KIND)}"] = 9.5
    return server


def test_server_answers_prepare_run_and_quit(tmp_path):
    run = FakeRun()
    server = _prefilled(anchor.Server(str(tmp_path)), run)
    assert json.loads(server.handle("run 100")) == {"error": "run before prepare"}  # the server lives on
    reply = json.loads(server.handle("prepare " + json.dumps({"kind": KIND, "cpus": _cpus()})))
    assert reply["a0_us"] == 9.5 and reply["digest"] == anchor.code_digest() and reply["pid"] == os.getpid()
    assert server.handle("run 100") == repr(2e-6) and run.calls == [100]
    assert server.handle("quit") is None
    assert "error" in json.loads(server.handle("launch 3"))


@pytest.mark.parametrize("kind", [{**KIND, "mode": "graph"}, {**KIND, "config": "[7, 7]"}],
                         ids=["unknown-mode", "unknown-config"])
def test_server_reports_an_unknown_kind_in_its_reply(tmp_path, kind):
    """The client turns the reply into one AnchorError line; an exception would kill the server."""
    server = anchor.Server(str(tmp_path))
    reply = json.loads(server.handle("prepare " + json.dumps({"kind": kind, "cpus": []})))
    assert "unknown kind" in reply["error"]


# ---------------------------------------------------------------- the sample


def test_sample_is_scaled_by_the_anchors_a0_and_uses_its_batch():
    numba, ref = FakeRun(2e-6), FakeRun(1e-6)
    ref.r0_us, ref.batch = 10.0, 100  # native.REFERENCE_BATCH (300) would be the default
    timing = bench_launch._Timing()
    timing.settings = {"slots": 4, "r0": 3.7}
    before = bench_launch.CLOCK.now()
    timing._sample(numba, ref)
    assert bench_launch.CLOCK.now() - before == pytest.approx(20e-6)  # median(2.0) * A0 10 µs, not * 3.7
    assert ref.calls == [100] * 4 and len(numba.calls) == 4


# ---------------------------------------------------------------- real servers under the simulator


def _sim_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAUNCHBENCH_", "PYTHON"))}
    return {**env, "NUMBA_ENABLE_CUDASIM": "1", "LAUNCHBENCH_SMOKE": "1", "PYTHONPATH": str(ROOT), **extra}


BENCH_SCRIPT = """import json
from benchmarks import bench_launch as b
x = b.TimeLaunchPreconfigured()
x.setup(0, "[1, 1]")
before = b.CLOCK.now()
x.time_launch(0, "[1, 1]")
print(json.dumps({"value": b.CLOCK.now() - before, "pid": x.ref.anchor["pid"]}))
"""


def _started_servers(folder):
    """The pids of the servers that announced themselves in the folder's anchor.log."""
    log = Path(folder, "anchor.log")
    text = log.read_text(errors="replace") if log.exists() else ""
    return [int(pid) for pid in re.findall(r"^anchor (\d+) numba-cuda", text, re.M)]


def test_two_benchmark_processes_share_one_anchor_server(short_dir):
    env = _sim_env(LAUNCHBENCH_ASV_ANCHOR=sys.executable, LAUNCHBENCH_ASV_ANCHOR_DIR=short_dir)
    sock = os.path.join(short_dir, "sock")
    pids = []
    try:
        for _ in range(2):
            proc = subprocess.run([sys.executable, "-c", BENCH_SCRIPT], cwd=ROOT, env=env,
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            assert out["value"] > 0
            pids.append(out["pid"])
        assert pids[0] == pids[1]  # the second process reused the running server
        assert not os.path.exists(os.path.join(short_dir, "a0.json"))  # a simulator's A0 is not kept
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(sock)
            conn.sendall(b"quit\n")
        assert _wait(lambda: not os.path.exists(sock), 60)
        assert _started_servers(short_dir) == pids[:1]  # and the second started none of its own
    finally:  # no server outlives the test, even one a broken client started besides
        for pid in set(pids + _started_servers(short_dir)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


MECH_SCRIPT = """import json
from benchmarks import bench_mechanisms as b
x = b.TimeMechanismLaunch()
x.setup("tls", 2)
before = b.CLOCK.now()
x.time_launch("tls", 2)
x.teardown("tls", 2)
client = b.common.per_process("anchor", None)
print(json.dumps({"value": b.CLOCK.now() - before, "pid": x.ref.anchor["pid"], "kind": client.current}))
"""


def test_mechanism_rows_divide_by_the_anchors_launch_of_the_same_kind(short_dir):
    """With the anchor set, a mechanism row's reference is the anchor launching ``k[1, 1]`` with as
    many arguments: the launch the mechanism wraps, so the VM's state moves both alike."""
    env = _sim_env(LAUNCHBENCH_ASV_ANCHOR=sys.executable, LAUNCHBENCH_ASV_ANCHOR_DIR=short_dir)
    pids = []
    try:
        proc = subprocess.run([sys.executable, "-c", MECH_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True)
        pids = _started_servers(short_dir)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["value"] > 0 and out["pid"] in pids
        assert out["kind"] == {"mode": "pre", "args": 2, "config": "[1, 1]"}
    finally:
        for pid in set(pids + _started_servers(short_dir)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_server_leaves_after_its_idle_time(short_dir):
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.anchor", "--dir", short_dir, "--idle", "1"],
                            cwd=ROOT, env=_sim_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    assert "idle" in out
    assert not os.path.exists(os.path.join(short_dir, "sock"))


def test_client_restarts_a_server_running_other_anchor_code(short_dir, monkeypatch):
    digests = ["other", anchor.code_digest()]  # the first server's code differs, the restarted one's does not

    class FakeServer(anchor.Server):
        def __init__(self, folder):
            super().__init__(folder)
            self.digest = digests.pop(0)
            _prefilled(self, FakeRun())

    def serve_thread():
        thread = threading.Thread(target=anchor.serve, args=(short_dir, 30), daemon=True)
        thread.start()
        return thread

    started = []

    def fake_start(client):  # a server thread instead of a detached process
        started.append(serve_thread())
        assert _wait(client._connect, 60)

    monkeypatch.setattr(anchor, "Server", FakeServer)
    monkeypatch.setattr(anchor.Client, "_start", fake_start)
    first = serve_thread()
    client = anchor.Client(sys.executable, short_dir)
    try:
        assert _wait(client._connect, 60)  # connected to the first server: prepare() starts none
        reply = client.prepare(KIND)
        assert reply["digest"] == anchor.code_digest() and reply["a0_us"] == 9.5
        first.join(60)
        assert not first.is_alive() and len(started) == 1  # the first server was told to quit
    finally:
        if client.sock is not None:
            with contextlib.suppress(anchor.AnchorError):  # quit closes the connection without a reply
                client.request("quit")
        client.close()
    started[0].join(60)
    assert not started[0].is_alive()
