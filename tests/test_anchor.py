"""The anchor reference (launchbench/workloads/anchor.py): its settings, the server's line protocol with fake
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

from benchmarks import common
from launchbench.workloads import anchor, kernels
from launchbench.workloads.asvnative import normalize

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


def _known(path, a0, kinds=(KIND,), rho=1.0):
    """File A0(nargs) = *a0* and rho for *kinds* in the table at *path*, as the server would have measured."""
    data = anchor.load_table(path)
    for kind in kinds:
        data["a0"][str(kind["args"])] = {"a0_us": a0, "processes": [a0], "slots": 1, "spread_pct": 0.0}
        data["ratios"][anchor.kind_key(kind)] = {"ratio": rho, "slots": 1, "ci95": [rho, rho]}
        data["a0_us"][anchor.kind_key(kind)] = a0 * rho
    anchor.save_table(path, data)


def _table(folder, server, a0=None, r0=3.7):
    """An A0 table for *server*'s build (with *a0* for KIND where given) -> (path, id)."""
    path = anchor.table_path(str(folder), "host", server.build, r0)
    table_id = anchor.ensure_table(path, {"build": server.build, "r0_us": r0})
    if a0 is not None:
        _known(path, a0)
    return path, table_id


def _prefilled(server, run, folder=None):
    """A server that needs no GPU work for KIND: its launcher and A0 (9.5 µs) are already there."""
    server.launchers[anchor.kind_key(KIND)] = run
    server.table = _table(folder or server.folder, server, 9.5)
    return server


def _prepare_line(server, kind=KIND, table=None, r0=3.7):
    path, table_id = table or server.table
    return "prepare " + json.dumps({"kind": kind, "cpus": _cpus(), "table": path, "table_id": table_id, "r0_us": r0})


def test_server_answers_identify_prepare_run_and_quit(tmp_path):
    run = FakeRun()
    server = _prefilled(anchor.Server(str(tmp_path)), run)
    assert json.loads(server.handle("run 100")) == {"error": "run before prepare"}  # the server lives on
    ident = json.loads(server.handle("identify"))
    assert ident["token"] == server.token and ident["pid"] == os.getpid() and ident["build"] == server.build
    reply = json.loads(server.handle(_prepare_line(server)))
    assert reply["a0_us"] == 9.5 and reply["digest"] == anchor.code_digest() and reply["table"] == server.table[1]
    assert server.handle("run 100") == repr(2e-6) and run.calls == [100]
    assert server.handle("quit") is None
    assert "error" in json.loads(server.handle("launch 3"))


def test_an_a0_table_is_made_once_and_its_a0_never_remeasured(tmp_path, monkeypatch):
    """The id names the table in every anchored value's label: a second ensure keeps it; a missing A0 is
    measured once (in fresh processes) and kept; a table made anew (another id) or for another R0 is refused."""
    measured = []
    monkeypatch.setattr(anchor, "_a0_in_fresh_process", lambda n, r0, slots: measured.append((n, r0)) or 12.25)
    server = anchor.Server(str(tmp_path))
    server.launchers[anchor.kind_key(KIND)] = FakeRun()
    path, table_id = _table(tmp_path, server)
    assert anchor.ensure_table(path, {"build": "other"}) == table_id  # never replaced
    for _ in range(2):
        assert json.loads(server.handle(_prepare_line(server, table=(path, table_id))))["a0_us"] == 12.25
    assert measured == [(0, 3.7)] * anchor.a0_processes()
    assert anchor.load_table(path)["a0_us"] == {anchor.kind_key(KIND): 12.25}
    assert "made anew" in json.loads(server.handle(_prepare_line(server, table=(path, "0000"))))["error"]
    assert "R0 3.7" in json.loads(server.handle(_prepare_line(server, table=(path, table_id), r0=4.0)))["error"]


def test_every_row_shares_one_a0_and_differs_by_paired_ratios(tmp_path, monkeypatch):
    """A0(0) is the only number measured in fresh processes (the anchor's k[1, 1] launch
    with no arguments); A0(nargs) = A0(0) x q(nargs), q paired in the server against that launch, and every
    kind is scaled by A0(nargs) times its own rho, paired against the anchor's k[1, 1] launch with as many
    arguments. A kind whose anchor launch costs the same as k[1, 1] (stream here) reads exactly A0(0);
    one that costs 1.5x (sharedmem) reads 1.5 x A0(0); 4 arguments cost the anchor 2x (q) and configuring
    per launch 1.25x more (rho) -- whatever noise each fresh process had (12, 10, 11, ...), none of it is a
    row's own, and none is an argument count's own."""
    draws = iter([12.0, 10.0, 11.0, 10.5, 11.5, 20.0, 22.0, 21.0, 20.5, 21.5])
    calls = []
    monkeypatch.setattr(anchor, "A0_PROCESSES", 5)
    monkeypatch.setattr(anchor, "SMOKE_A0_PROCESSES", 5)
    monkeypatch.setattr(anchor, "_a0_in_fresh_process", lambda n, r0, slots: calls.append(n) or next(draws))
    server = anchor.Server(str(tmp_path))
    base, stream, shared = KIND, {**KIND, "config": "[1, 128] stream"}, {**KIND, "config": "[1, 128] sharedmem=1KiB"}
    cpl4, base4 = {"mode": "cpl", "args": 4, "config": "[1, 128]"}, {"mode": "pre", "args": 4, "config": "[1, 1]"}
    runs = {anchor.kind_key(base): FakeRun(2e-6), anchor.kind_key(stream): FakeRun(2e-6),
            anchor.kind_key(shared): FakeRun(3e-6), anchor.kind_key(base4): FakeRun(4e-6),
            anchor.kind_key(cpl4): FakeRun(5e-6)}
    server.launchers.update(runs)
    path, table_id = _table(tmp_path, server)
    monkeypatch.delenv("LAUNCHBENCH_SMOKE", raising=False)  # rho is measured (the simulator's is 1.0)
    replies = {anchor.kind_key(k): json.loads(server.handle(_prepare_line(server, k, (path, table_id))))
               for k in (stream, shared, base, cpl4)}
    assert calls == [0] * 5  # one A0 for the run, the median of 5 fresh processes
    assert {r["a0_args_us"] for k, r in replies.items() if k.split("|")[1] == "0"} == {11.0}
    assert replies[anchor.kind_key(stream)]["a0_us"] == replies[anchor.kind_key(base)]["a0_us"] == 11.0
    assert replies[anchor.kind_key(shared)]["a0_us"] == pytest.approx(1.5 * 11.0)
    assert replies[anchor.kind_key(cpl4)]["a0_args_us"] == pytest.approx(2.0 * 11.0)
    assert replies[anchor.kind_key(cpl4)]["a0_us"] == pytest.approx(1.25 * 2.0 * 11.0)
    # the base's rho is 1 by definition (never measured against itself), the others ran paired slots
    assert runs[anchor.kind_key(stream)].calls == [anchor.BATCH] * anchor.A0_SLOTS
    table = anchor.load_table(path)
    assert table["ratios"][anchor.kind_key(base)]["base"] is True


def test_an_a0_table_records_its_precision(tmp_path, monkeypatch):
    """Every A0(nargs) keeps what each fresh process read, the slots per process and the spread; every rho
    its slots and a 95 % interval; the table says in words what these are."""
    draws = iter([10.0, 12.0, 11.0])
    monkeypatch.setattr(anchor, "_a0_in_fresh_process", lambda n, r0, slots: next(draws))
    server = anchor.Server(str(tmp_path))
    other = {**KIND, "config": "[128, 128]"}
    kind_times = iter([3e-6] * 10 + [3.3e-6] * 10)  # against the base's 2 µs: slot ratios 1.5 and 1.65
    server.launchers[anchor.kind_key(KIND)] = FakeRun(2e-6)
    server.launchers[anchor.kind_key(other)] = lambda n: next(kind_times)
    monkeypatch.delenv("LAUNCHBENCH_SMOKE", raising=False)
    monkeypatch.setattr(anchor, "A0_SLOTS", 20)
    monkeypatch.setattr(anchor, "A0_PROCESSES", 3)
    path, table_id = _table(tmp_path, server)
    assert "error" not in json.loads(server.handle(_prepare_line(server, other, (path, table_id))))
    table = anchor.load_table(path)
    assert table["format"] == anchor.TABLE_FORMAT and set(table["precision"]) == {"a0", "ratios", "a0_us"}
    a0 = table["a0"]["0"]
    assert a0["processes"] == [10.0, 12.0, 11.0] and a0["a0_us"] == 11.0 and a0["slots"] == anchor.A0_SLOTS
    assert a0["spread_pct"] == pytest.approx(100 * 2 / 11)
    rho = table["ratios"][anchor.kind_key(other)]
    assert rho["slots"] == 20 and rho["ratio"] == pytest.approx(1.575)
    assert rho["ci95"] == [pytest.approx(1.5), pytest.approx(1.65)]
    assert table["a0_us"][anchor.kind_key(other)] == pytest.approx(11.0 * 1.575)


def test_median_interval_is_the_order_statistics_around_the_middle():
    xs = list(range(1, 201))  # 200 values: ranks 86 and 115
    assert anchor.median_ci95(xs) == [86, 115]
    assert anchor.median_ci95([5.0]) == [5.0, 5.0]
    assert anchor.median_ci95([3.0, 1.0, 2.0]) == [1.0, 3.0]


def test_a_table_of_the_old_format_is_refused_in_one_line(tmp_path):
    """Format 1 kept one A0 per kind, each with its own noise: its values would not compare across rows."""
    path = tmp_path / "a0-host-abc-r0-3.70.table"
    path.write_text(json.dumps({"id": "0123abcd", "a0_us": {"pre|0|[1, 1]": 9.0}}))
    with pytest.raises(anchor.AnchorError, match="format 1.*move it away") as info:
        anchor.load_table(str(path))
    assert "\n" not in str(info.value)
    path.write_text(json.dumps({"id": "0123abcd", "format": 2, "a0_us": {"pre|0|[1, 1]": 9.0}}))
    with pytest.raises(anchor.AnchorError, match="format 2 .one A0 per argument count.*move it away"):
        anchor.load_table(str(path))


def test_a_later_contact_with_another_server_fails_in_one_line(tmp_path):
    first = {"token": "1-aa", "pid": 1, "started": "t1"}
    anchor.check_run(str(tmp_path), first)  # no record: the first contact records it
    anchor.check_run(str(tmp_path), first)
    with pytest.raises(anchor.AnchorError, match=r"changed during this run \(pid 1 started t1, now pid 2") as info:
        anchor.check_run(str(tmp_path), {"token": "2-bb", "pid": 2, "started": "t2"})
    assert "\n" not in str(info.value)
    anchor.begin_run(str(tmp_path), {"token": "2-bb", "pid": 2, "started": "t2"})  # asv's discovery: a new run
    anchor.check_run(str(tmp_path), {"token": "2-bb", "pid": 2, "started": "t2"})


@pytest.mark.parametrize("kind", [{**KIND, "mode": "graph"}, {**KIND, "config": "[7, 7]"}],
                         ids=["unknown-mode", "unknown-config"])
def test_server_reports_an_unknown_kind_in_its_reply(tmp_path, kind):
    """The client turns the reply into one AnchorError line; an exception would kill the server."""
    server = anchor.Server(str(tmp_path))
    reply = json.loads(server.handle(_prepare_line(server, kind, _table(tmp_path, server))))
    assert "unknown kind" in reply["error"]


# ---------------------------------------------------------------- the sample


def test_sample_is_scaled_by_the_anchors_a0_and_uses_its_batch():
    numba, ref = FakeRun(2e-6), FakeRun(1e-6)
    ref.r0_us, ref.batch = 10.0, 100  # slots.REFERENCE_BATCH (300) would be the default
    timing = common.NativeTiming()
    timing.settings = {"slots": 4, "r0": 3.7}
    before = common.CLOCK.now()
    timing.sample(numba, ref)
    assert common.CLOCK.now() - before == pytest.approx(20e-6)  # median(2.0) * A0 10 µs, not * 3.7
    assert ref.calls == [100] * 4 and len(numba.calls) == 4


# ---------------------------------------------------------------- real servers under the simulator


def _sim_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAUNCHBENCH_", "PYTHON"))}
    return {**env, "NUMBA_ENABLE_CUDASIM": "1", "LAUNCHBENCH_SMOKE": "1", "PYTHONPATH": str(ROOT), **extra}


BENCH_SCRIPT = """import json, statistics
from benchmarks import bench_launch as b
x = b.TimeLaunchPreconfigured()
x.setup(0, "[1, 1]", b.REFERENCE_LABEL)
seen = {"n": [], "a": []}
run, ref = x.run, x.ref
def n_run(k):
    seen["n"].append(run(k)); return seen["n"][-1]
def a_run(k):
    seen["a"].append(ref(k)); return seen["a"][-1]
a_run.r0_us, a_run.batch = ref.r0_us, ref.batch
x.run, x.ref = n_run, a_run
before = b.common.CLOCK.now()
x.time_launch(0, "[1, 1]")
ratio = statistics.median(n / a for n, a in zip(seen["n"], seen["a"]))
print(json.dumps({"value": b.common.CLOCK.now() - before, "ratio": ratio, "slots": len(seen["a"]),
                  "pid": x.ref.anchor["pid"] if hasattr(x.ref, "anchor") else ref.anchor["pid"],
                  "label": b.REFERENCE_LABEL}))
"""

#: The A0 the tests file for the anchor's ``[1, 1]`` 0-argument launch: not 1.0 (the simulator's own).
KNOWN_A0 = 7.25


def _known_a0_table(folder, kinds=(KIND,)):
    """The simulator anchor's A0 table (this venv's numba-cuda) with KNOWN_A0 for *kinds* -> its id."""
    build = kernels.build_fingerprint()
    path = anchor.table_path(str(folder), normalize.host_name(), build, 3.7, simulator=True)
    table_id = anchor.ensure_table(path, {"build": build, "r0_us": 3.7, "simulator": True})
    _known(path, KNOWN_A0, kinds)
    return table_id


def _started_servers(folder):
    """The pids of the servers that announced themselves in the folder's anchor.log."""
    log = Path(folder, "anchor.log")
    text = log.read_text(errors="replace") if log.exists() else ""
    return [int(pid) for pid in re.findall(r"^anchor (\d+) numba-cuda", text, re.M)]


def test_two_benchmark_processes_share_one_anchor_server_and_scale_by_its_a0(short_dir, tmp_path):
    """Each value is median(numba/anchor) over the slots times the A0 of the run's table (KNOWN_A0, not
    the simulator's 1.0 or R0), and the label names that table."""
    table_id = _known_a0_table(tmp_path)
    env = _sim_env(LAUNCHBENCH_ASV_ANCHOR=sys.executable, LAUNCHBENCH_ASV_ANCHOR_DIR=short_dir,
                   LAUNCHBENCH_ASV_A0_DIR=str(tmp_path))
    sock = os.path.join(short_dir, "sock")
    pids = []
    try:
        for _ in range(2):
            proc = subprocess.run([sys.executable, "-c", BENCH_SCRIPT], cwd=ROOT, env=env,
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            assert out["slots"] == 2 and out["ratio"] > 0
            assert out["value"] == pytest.approx(out["ratio"] * KNOWN_A0 * 1e-6, rel=1e-9)
            assert f"A0 table {table_id}, R0 3.70 us" in out["label"]
            pids.append(out["pid"])
        assert pids[0] == pids[1]  # the second process reused the running server
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


CONFIGS_SCRIPT = """import json, statistics
from benchmarks import bench_launch as b
out = {}
for config in ("[1, 1]", "[1, 128] stream"):
    x = b.TimeLaunchPreconfigured()
    x.setup(0, config, b.REFERENCE_LABEL)
    seen = {"n": [], "a": []}
    run, ref = x.run, x.ref
    def n_run(k, run=run):
        seen["n"].append(run(k)); return seen["n"][-1]
    def a_run(k, ref=ref):
        seen["a"].append(ref(k)); return seen["a"][-1]
    a_run.r0_us, a_run.batch = ref.r0_us, ref.batch
    x.run, x.ref = n_run, a_run
    before = b.common.CLOCK.now()
    x.time_launch(0, config)
    ratio = statistics.median(n / a for n, a in zip(seen["n"], seen["a"]))
    out[config] = {"value": b.common.CLOCK.now() - before, "ratio": ratio, "a0_args_us": ref.anchor["a0_args_us"],
                   "a0_us": ref.r0_us, "pid": ref.anchor["pid"]}
print(json.dumps(out))
"""


def test_configurations_at_one_argument_count_are_scaled_by_one_a0_under_the_simulator(short_dir, tmp_path):
    """Through the benchmark classes, a real anchor server and its table: the ``[1, 1]`` row and the
    ``[1, 128] stream`` row at 0 args are both ``median(n/a) x A0(0)`` with the one A0(0) the table holds
    (KNOWN_A0; the simulator's rho is 1), so their values differ only by their own ratios. Before, each
    kind got an A0 of its own (the stream row would have measured 1.0 here)."""
    build = kernels.build_fingerprint()
    path = anchor.table_path(str(tmp_path), normalize.host_name(), build, 3.7, simulator=True)
    anchor.ensure_table(path, {"build": build, "r0_us": 3.7, "simulator": True})
    data = anchor.load_table(path)
    data["a0"]["0"] = {"a0_us": KNOWN_A0, "processes": [KNOWN_A0], "slots": 1, "spread_pct": 0.0}
    anchor.save_table(path, data)  # A0(0) only: no kind has its A0 yet
    env = _sim_env(LAUNCHBENCH_ASV_ANCHOR=sys.executable, LAUNCHBENCH_ASV_ANCHOR_DIR=short_dir,
                   LAUNCHBENCH_ASV_A0_DIR=str(tmp_path))
    pids = []
    try:
        proc = subprocess.run([sys.executable, "-c", CONFIGS_SCRIPT], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        pids = _started_servers(short_dir)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        for row in out.values():
            assert row["a0_args_us"] == row["a0_us"] == KNOWN_A0
            assert row["value"] == pytest.approx(row["ratio"] * KNOWN_A0 * 1e-6, rel=1e-9)
        table = anchor.load_table(path)
        assert table["a0"]["0"]["processes"] == [KNOWN_A0]  # A0(0) was not measured again
        assert set(table["a0_us"]) == {"pre|0|[1, 1]", "pre|0|[1, 128] stream"}
        assert set(table["a0_us"].values()) == {KNOWN_A0}
    finally:
        for pid in set(pids + _started_servers(short_dir)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


MECH_SCRIPT = """import json
from benchmarks import bench_mechanisms as b
x = b.TimeMechanismLaunch()
x.setup("tls", 2, b.common.REFERENCE_LABEL)
before = b.common.CLOCK.now()
x.time_launch("tls", 2)
x.teardown("tls", 2)
client = b.sampling.per_process("anchor", None)
print(json.dumps({"value": b.common.CLOCK.now() - before, "pid": x.ref.anchor["pid"], "kind": client.current}))
"""


def test_mechanism_rows_divide_by_the_anchors_launch_of_the_same_kind(short_dir, tmp_path):
    """With the anchor set, a mechanism row's reference is the anchor launching ``k[1, 1]`` with as
    many arguments: the launch the mechanism wraps, so the VM's state moves both alike."""
    env = _sim_env(LAUNCHBENCH_ASV_ANCHOR=sys.executable, LAUNCHBENCH_ASV_ANCHOR_DIR=short_dir,
                   LAUNCHBENCH_ASV_A0_DIR=str(tmp_path))
    pids = []
    try:
        proc = subprocess.run([sys.executable, "-c", MECH_SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True)
        pids = _started_servers(short_dir)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["value"] > 0 and out["pid"] in pids
        assert out["kind"] == {"mode": "pre", "args": 2, "config": "[1, 1]"}
        # A0(0) came from fresh anchor processes (the simulator's each read 1.0), recorded with its precision;
        # A0(2) is derived from it by a ratio paired in the server (the simulator's is 1)
        (table,) = [anchor.load_table(str(p)) for p in tmp_path.glob("*.table")]
        assert table["a0"]["0"]["processes"] == [1.0] * anchor.SMOKE_A0_PROCESSES
        assert table["a0"]["2"]["derived_from"] == "0" and table["a0"]["2"]["a0_us"] == 1.0
    finally:
        for pid in set(pids + _started_servers(short_dir)):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_server_leaves_after_its_idle_time(short_dir):
    proc = subprocess.Popen([sys.executable, "-m", "launchbench.workloads.anchor", "--dir", short_dir, "--idle", "1"],
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
        assert _wait(client._connect, 60)  # connected to the first server: identify() starts none
        reply = client.identify()
        assert reply["digest"] == anchor.code_digest()
        first.join(60)
        assert not first.is_alive() and len(started) == 1  # the first server was told to quit
    finally:
        if client.sock is not None:
            with contextlib.suppress(anchor.AnchorError):  # quit closes the connection without a reply
                client.request("quit")
        client.close()
    started[0].join(60)
    assert not started[0].is_alive()
