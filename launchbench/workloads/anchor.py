"""The anchor: a fixed numba-cuda in a process of its own, the reference that cancels a VM's state.

Why: the same-process reference (references.bindings_reference) shares the
process's speed state, but the state moves numba-cuda's launch and that
lighter loop by different factors, so normalized samples stayed bimodal at
some argument counts (docs/asv.md).
``launchbench compare`` does not have that problem: it pairs two numba-cuda
builds whose worker processes take turns on one pinned CPU, slot by slot,
and the state moves both alike. The anchor brings that pairing into asv.

``LAUNCHBENCH_ASV_ANCHOR=PYTHON`` names a Python whose numba-cuda is the
anchor (a release env, never the commit under test). The first benchmark
process that needs it starts one anchor server (this module, run by that
Python, detached, in a folder of its own) and every later process connects
to the same server: one anchor for all commits of a run, so the anchor's own
process offset is common to both sides of every ``asv compare``. For each
slot the benchmark process times its batch, then asks the anchor for one
batch of the *same kind* of launch (the same call form, argument count and
configuration), both pinned to the same CPU, in alternating order. The
sample is ``median_s(n_s / a_s) * A0(kind)``, with

    A0(kind) = A0(0) * q(nargs) * rho(kind)

``A0(0)``: the anchor's ``k[1, 1]`` launch with no arguments against the
bindings reference (lever 1: ``median(a/r) * R0``), the median over
``A0_PROCESSES`` fresh anchor processes of ``A0_SLOTS`` slots each (the VM's
state is per process, and one measurement carried it). It is the only number
measured across processes, and every row of a run shares it: µs are derived
once. ``q(nargs)``: the anchor's ``k[1, 1]`` launch with that many arguments
over its launch with none, and ``rho(kind)``: the anchor's launch of that kind
over its ``k[1, 1]`` launch with as many arguments -- both slot by slot in
the server (two numba-cuda launches paired on one CPU, which the state moves
alike; 1 where the kind is its own base). So rows differ only by their own
ratios and these paired ones, across configurations AND argument counts:
format 2 measured one A0 per argument count in fresh processes, and those
spread more than a row's own interval (docs/asv.md).
All are kept, with their precision (every process's value, the spread, the
slots, an interval for each ratio), in an A0 table beside asv's results
(``LAUNCHBENCH_ASV_A0_DIR``, default ``RESULTS/anchor-a0``), one table per
machine, anchor build and R0, never re-measured. The table's id,
the anchor's version and build and R0 go into every value's ``reference``
parameter (normalize.reference_label), so asv keys the results by them.
The server leaves after ``idle`` seconds without a client.

One anchor per run: asv's discovery records the server it reached
(``run.json`` in the server's folder); a later contact with another server
(one that died and was started again) fails the row in one line.

Protocol (one line each way): ``identify`` -> ``{json}``; ``prepare {json kind, table}`` -> ``{json}``
(``a0_us``: A0(kind); ``a0_args_us``: A0(nargs) = A0(0) x q(nargs); ``rho``);
``run N`` -> seconds per launch; ``quit``. Standard library plus the anchor's
numba-cuda; the client side runs inside asv's per-commit envs.
"""
import argparse
import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from ..base import atomic, cudamod
from . import kernels, launchers
from .asvnative import normalize, references
from .asvnative.slots import REFERENCE_BATCH, slot_loop

#: Seconds a server waits for its next client before it leaves.
IDLE_S = 900
#: Seconds a client waits for a new server (import, CUDA context, first kernels).
START_S = 180
#: Seconds a client waits for one reply (prepare may measure A0 first).
REPLY_S = 120
#: Slots of each one-time measurement: an A0 process (anchor batch vs bindings reference batch) and a
#: rho (anchor batch of the kind vs its ``k[1, 1]`` batch).
A0_SLOTS = 200
#: Fresh anchor processes whose median is A0(0) (2 under the simulator: smoke runs prove plumbing).
A0_PROCESSES = 5
SMOKE_A0_PROCESSES = 2
#: A0 table format: 3 = one A0 (no arguments) from fresh processes, a paired ratio per argument count and
#: per kind (format 2 had one A0 per argument count from fresh processes, format 1 one A0 per kind).
TABLE_FORMAT = 3
#: What the table's numbers are, written into every table.
PRECISION = {
    "a0": "A0(nargs). For 0 arguments: the anchor's k[1, 1] pre-configured launch against the bindings "
          "reference, median(a/r) over 'slots' slots x R0 in each of 'processes' fresh anchor processes; "
          "a0_us is their median, spread_pct (max - min) / median. For nargs > 0 (derived_from 0): "
          "A0(0) x q, where 'ratio' q is the anchor's k[1, 1] launch with nargs arguments over its launch "
          "with none, median over 'slots' paired slots in the anchor server, 'ci95' the distribution-free "
          "95 % interval of that median",
    "ratios": "rho(kind): the anchor's launch of the kind over its k[1, 1] launch with as many arguments, "
              "median over 'slots' paired slots in the anchor server; ci95: the distribution-free 95 % "
              "interval of that median (order statistics); 1 for k[1, 1] itself",
    "a0_us": "A0(kind) = A0(0) x q(nargs) x rho(kind): what an anchored sample of that kind is scaled by",
}
#: Launches per anchor batch: numba-cuda's batch (slots.NUMBA_BATCH), the same kind of launch.
BATCH = 100

#: The checkout (or site-packages folder) holding the ``launchbench`` package: the anchor's PYTHONPATH.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: ``python -m`` target of the server and of its A0 processes.
MODULE = "launchbench.workloads.anchor"


class AnchorError(RuntimeError):
    """The anchor cannot serve (the message says why and what to do)."""


def code_digest() -> str:
    """Which anchor code a server runs: a client restarts a server whose code differs from its own."""
    with open(os.path.abspath(__file__), "rb") as fh:
        return hashlib.sha1(fh.read()).hexdigest()[:12]


def default_dir(python: str) -> str:
    """Short (AF_UNIX paths are limited to ~100 bytes) and one per user and anchor Python."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    digest = hashlib.sha1(os.path.realpath(python).encode()).hexdigest()[:10]
    return os.path.join(tempfile.gettempdir(), f"lb-anchor-{uid}-{digest}")


def kind_key(kind: dict) -> str:
    return f"{kind['mode']}|{kind['args']}|{kind['config']}"


def base_kind(kind: dict) -> dict:
    """The kind whose A0 every kind with as many arguments shares: ``k[1, 1]``, pre-configured."""
    return {"mode": "pre", "args": kind["args"], "config": "[1, 1]"}


# ---------------------------------------------------------------- server side


def _kind_runner(kind, runners):
    """``run(n)`` for one kind of launch with the anchor's numba-cuda, warmed up (the launch rows' own builder)."""
    if kind["mode"] not in ("pre", "cpl") or kind["config"] not in launchers.LAUNCH_CONFIGS:
        raise AnchorError(f"unknown kind {kind!r}")
    state = launchers.launch_runner(int(kind["args"]), kind["config"], kind["mode"] == "cpl")
    run = state["run"]
    run.keepalive = state
    runners[kind_key(kind)] = run
    return run


def measure_a0(run, r0_us, slots=A0_SLOTS):
    """The anchor's µs per launch of one kind in this process, its state divided out against the bindings
    reference (one process: A0 itself is the median of several, ``measure_a0_processes``)."""
    if kernels.smoke_mode():
        return 1.0  # the simulator has no driver to launch a reference with (its tables say "simulator")
    try:
        ref = references.bindings_reference(0)
    except references.ReferenceUnavailable as exc:
        raise AnchorError(f"the anchor cannot measure A0: {exc}") from None
    for _ in range(3):
        ref(REFERENCE_BATCH)
    numba_s, ref_s = slot_loop(run, ref, slots, BATCH, REFERENCE_BATCH)
    return normalize.normalized_us(numba_s, ref_s, r0_us)


def a0_processes():
    return SMOKE_A0_PROCESSES if kernels.smoke_mode() else A0_PROCESSES


def _a0_in_fresh_process(nargs, r0_us, slots):
    """One fresh anchor process (this Python, this CPU affinity) -> its A0 of ``k[1, 1]`` with *nargs* args."""
    cmd = [sys.executable, "-m", MODULE, "--measure-a0", str(nargs), "--r0", repr(r0_us),
           "--slots", str(slots)]
    env = {**os.environ, "PYTHONPATH": ROOT}
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=REPLY_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AnchorError(f"an A0 process ({nargs} args) did not finish within {REPLY_S} s") from None
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise AnchorError(f"an A0 process ({nargs} args) exited with {proc.returncode}: {tail}")
    return float(json.loads(lines[-1])["a0_us"])


def measure_a0_processes(nargs, r0_us, processes=None, slots=None, one=None):
    """A0(nargs) with its precision: the median over *processes* fresh anchor processes, run one after
    another (each samples the VM's state anew), and what each read."""
    import statistics

    processes, one, slots = processes or a0_processes(), one or _a0_in_fresh_process, slots or A0_SLOTS
    values = [one(nargs, r0_us, slots) for _ in range(processes)]
    a0 = statistics.median(values)
    return {"a0_us": a0, "processes": values, "slots": slots, "spread_pct": 100.0 * (max(values) - min(values)) / a0,
            "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def median_ci95(values):
    """The distribution-free 95 % interval of a median: the order statistics of ranks
    floor(n/2 - 0.98 sqrt(n)) and ceil(1 + n/2 + 0.98 sqrt(n)) (1-based, clamped to the sample)."""
    import math

    xs, n = sorted(values), len(values)
    half = 0.98 * math.sqrt(n)
    lo, hi = max(1, math.floor(n / 2 - half)), min(n, math.ceil(1 + n / 2 + half))
    return [xs[lo - 1], xs[hi - 1]]


def measure_ratio(run, base_run, slots=None):
    """rho: the anchor's launch of a kind over its ``k[1, 1]`` launch with as many arguments, paired slot by
    slot in this process (both numba-cuda, on one CPU: the state moves them alike)."""
    import statistics

    if kernels.smoke_mode():  # simulated launches of 128 threads are no launch cost to compare
        return {"ratio": 1.0, "slots": 0, "ci95": [1.0, 1.0], "simulator": True,
                "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    slots = slots or A0_SLOTS
    kind_s, base_s = slot_loop(run, base_run, slots, BATCH, BATCH)
    ratios = [k / b for k, b in zip(kind_s, base_s)]
    return {"ratio": statistics.median(ratios), "slots": slots, "ci95": median_ci95(ratios),
            "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def a0_main(nargs, r0_us, slots):
    """``--measure-a0``: one fresh process's A0 of ``k[1, 1]`` with *nargs* arguments, as a JSON line."""
    state = launchers.launch_runner(int(nargs), "[1, 1]", False)
    print(json.dumps({"a0_us": measure_a0(state["run"], r0_us, slots), "pid": os.getpid()}), flush=True)


# ---------------------------------------------------------------- A0 tables


def table_path(folder, host, build, r0_us, simulator=False) -> str:
    """One A0 table per machine, anchor build and R0 (a simulator's tables apart: their A0 is 1.0)."""
    sim = "-simulator" if simulator else ""
    return os.path.join(folder, f"a0-{host}-{build}-r0-{r0_us:.2f}{sim}.table")


def ensure_table(path, header) -> str:
    """The id of the A0 table at *path*, created (with a fresh id) where none is.

    The id goes into every anchored value's ``reference`` label: a table made anew (a lost folder,
    another machine) measures new A0s, so its values start a series of their own. Created with
    O_EXCL, so two processes racing to create it agree on one id.
    """
    os.makedirs(os.path.dirname(path), exist_ok=True)
    table = {**header, "id": os.urandom(4).hex(), "format": TABLE_FORMAT, "precision": PRECISION,
             "a0": {}, "ratios": {}, "a0_us": {}}
    tmp = f"{path}.{os.getpid()}.new"
    with open(tmp, "w") as fh:
        json.dump(table, fh, indent=1, sort_keys=True)
    try:
        os.link(tmp, path)  # fails if the table exists: never replaces one
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return load_table(path)["id"]


def load_table(path) -> dict:
    try:
        with open(path) as fh:
            table = json.load(fh)
    except (OSError, ValueError) as exc:
        raise AnchorError(f"the A0 table {path} cannot be read ({exc})") from None
    if not isinstance(table, dict) or not isinstance(table.get("a0_us"), dict) or "id" not in table:
        raise AnchorError(f"{path} is not an A0 table (no id or a0_us)")
    if table.get("format") != TABLE_FORMAT:
        what = {1: "one A0 per kind", 2: "one A0 per argument count"}.get(table.get("format", 1), "another layout")
        raise AnchorError(f"{path} is an A0 table of format {table.get('format', 1)} ({what}, each from fresh "
                          f"processes with its own noise), not {TABLE_FORMAT}: move it away and rerun (a new "
                          "table, a new label)")
    return table


def save_table(path, table):
    atomic.write_json_atomic(path, table, sort_keys=True)


# ---------------------------------------------------------------- one anchor per run


def run_record(folder) -> str:
    return os.path.join(folder, "run.json")


def begin_run(folder, server):
    """Record which server this run measures against (asv's discovery: the start of an asv run)."""
    os.makedirs(folder, exist_ok=True)
    save_table(run_record(folder), {"token": server["token"], "pid": server["pid"], "started": server["started"]})


def check_run(folder, server):
    """Fail (one line) when the server differs from the one this run began with.

    Why: every anchored value is a ratio to the anchor's launch in *its* process; a server that
    died and was started again, or was replaced, has a process offset of its own, so mixing
    them moves values with nothing changed. The first contact records the server when no run
    record is there (a run outside asv).
    """
    path = run_record(folder)
    try:
        with open(path) as fh:
            first = json.load(fh)
    except (OSError, ValueError):
        begin_run(folder, server)
        return
    if first.get("token") != server["token"]:
        raise AnchorError(f"the anchor server changed during this run (pid {first.get('pid')} started "
                          f"{first.get('started')}, now pid {server['pid']} started {server['started']}): "
                          "values against two anchors do not compare; rerun the benchmarks")


class Server:
    """One client at a time; launchers and A0 tables kept for the server's life."""

    def __init__(self, folder):
        self.folder = folder
        self.launchers = {}
        self.module = cudamod.distribution()
        self.version = _numba_cuda_version(self.module)
        self.build = kernels.build_fingerprint(self.module)
        self.smoke = kernels.smoke_mode()
        self.digest = code_digest()
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.token = f"{os.getpid()}-{os.urandom(6).hex()}"
        self.current = None

    def identity(self):
        return {"numba_cuda": self.version, "build": self.build, "simulator": self.smoke, "digest": self.digest,
                "pid": os.getpid(), "started": self.started, "token": self.token}

    def prepare(self, kind, cpus, table=None, table_id=None, r0_us=None):
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, set(cpus))  # the client's CPU: both take turns on it
        key = kind_key(kind)
        run = self.launchers.get(key) or _kind_runner(kind, self.launchers)
        if table is None:
            raise AnchorError("prepare names no A0 table")
        data = load_table(table)
        if data["id"] != table_id:
            raise AnchorError(f"the A0 table {table} is {data['id']}, not {table_id} (made anew during the run)")
        if (data.get("build"), data.get("r0_us")) != (self.build, r0_us):
            raise AnchorError(f"the A0 table {table} is for build {data.get('build')} R0 {data.get('r0_us')}, "
                              f"not this anchor's {self.build} R0 {r0_us}")
        if key not in data["a0_us"]:
            self._fill(data, table, kind, run, r0_us)
        self.current = run
        return {**self.identity(), "a0_us": data["a0_us"][key], "table": data["id"],
                "a0_args_us": data["a0"][str(kind["args"])]["a0_us"], "rho": data["ratios"][key]["ratio"]}

    def _runner(self, kind):
        return self.launchers.get(kind_key(kind)) or _kind_runner(kind, self.launchers)

    def _fill(self, data, path, kind, run, r0_us):
        """A0(kind) = A0(0) x q(nargs) x rho(kind) into the table: A0(0) once, in fresh processes (the first
        kind pays it), q once per argument count and rho once per kind, paired in this server; saved after
        each."""
        nargs = str(kind["args"])
        if "0" not in data["a0"]:
            data["a0"]["0"] = measure_a0_processes(0, r0_us)
            save_table(path, data)
        if nargs not in data["a0"]:
            q = measure_ratio(self._runner(base_kind(kind)), self._runner(base_kind({"args": 0})))
            data["a0"][nargs] = {**q, "a0_us": data["a0"]["0"]["a0_us"] * q["ratio"], "derived_from": "0"}
            save_table(path, data)
        key, base = kind_key(kind), base_kind(kind)
        if key == kind_key(base):
            rho = {"ratio": 1.0, "slots": 0, "ci95": [1.0, 1.0], "base": True}
        else:
            rho = measure_ratio(run, self._runner(base))
        data["ratios"][key] = rho
        data["a0_us"][key] = data["a0"][nargs]["a0_us"] * rho["ratio"]
        data.setdefault("measured", {})[key] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        save_table(path, data)

    def handle(self, line):
        """One request line -> one reply line (None: close the server)."""
        op, _, rest = line.partition(" ")
        if op == "run":
            if self.current is None:
                return json.dumps({"error": "run before prepare"})
            return repr(self.current(int(rest)))
        if op == "identify":
            return json.dumps(self.identity())
        if op == "prepare":
            request = json.loads(rest)
            try:
                return json.dumps(self.prepare(request["kind"], request.get("cpus") or [], request.get("table"),
                                               request.get("table_id"), request.get("r0_us")))
            except Exception as exc:  # noqa: BLE001 - the client reports it in one line
                return json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        if op == "quit":
            return None
        return json.dumps({"error": f"unknown request {op!r}"})


def _numba_cuda_version(dist):
    import importlib.metadata as md

    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "unknown"


def serve(folder, idle_s=IDLE_S):
    """Listen on ``folder/sock`` until no client came for *idle_s* seconds (or ``quit``)."""
    os.makedirs(folder, exist_ok=True)
    server = Server(folder)
    path = os.path.join(folder, "sock")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    listener.settimeout(idle_s)
    print(f"anchor {os.getpid()} numba-cuda {server.version} on {path}", flush=True)
    try:
        while True:
            try:
                conn, _ = listener.accept()
            except socket.timeout:
                print(f"anchor idle for {idle_s} s: leaving", flush=True)
                return
            conn.settimeout(None)
            with conn, conn.makefile("rw", buffering=1) as stream:
                for line in stream:
                    reply = server.handle(line.strip())
                    if reply is None:
                        return
                    stream.write(reply + "\n")
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        listener.close()


# ---------------------------------------------------------------- client side


class Client:
    """A benchmark process's connection to the anchor server (started on first use)."""

    def __init__(self, python, folder=None, idle_s=IDLE_S, start_s=START_S, reply_s=REPLY_S):
        self.python = python
        self.folder = folder or default_dir(python)
        self.idle_s, self.start_s, self.reply_s = idle_s, start_s, reply_s
        self.sock = None
        self.stream = None

    def _connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(os.path.join(self.folder, "sock"))
        except OSError:
            sock.close()
            return False
        sock.settimeout(self.reply_s)
        self.sock, self.stream = sock, sock.makefile("rw", buffering=1)
        return True

    def _start(self):
        log = open(os.path.join(self.folder, "anchor.log"), "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ASV_", "LAUNCHBENCH_ASV_", "PYTHON"))}
        env["PYTHONPATH"] = ROOT
        with log:
            proc = subprocess.Popen([self.python, "-m", MODULE, "--dir", self.folder,
                                     "--idle", str(self.idle_s)], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.start_s
        while time.monotonic() < deadline:
            if self._connect():
                return
            if proc.poll() is not None:
                raise AnchorError(f"the anchor server ({self.python}) exited with {proc.returncode}: "
                                  f"{_last_line(os.path.join(self.folder, 'anchor.log'))}")
            time.sleep(0.1)
        proc.kill()
        raise AnchorError(f"the anchor server ({self.python}) did not start within {self.start_s} s; "
                          f"see {self.folder}/anchor.log")

    def open(self):
        """Connect, starting a server if none answers (one starter at a time: a lock file)."""
        if self.sock is not None:
            return
        os.makedirs(self.folder, exist_ok=True)
        import fcntl

        with open(os.path.join(self.folder, "start.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self._connect():
                self._start()

    def request(self, line):
        try:
            self.stream.write(line + "\n")
            reply = self.stream.readline()
        except OSError as exc:
            raise AnchorError(f"the anchor server stopped answering ({exc}); see {self.folder}/anchor.log") from None
        if not reply:
            raise AnchorError(f"the anchor server closed the connection; see {self.folder}/anchor.log")
        return reply.strip()

    def identify(self):
        """The running server's identity (starting one if none answers): version, build, token, pid.

        A server running other anchor code is told to quit and a fresh one started.
        """
        self.open()
        reply = json.loads(self.request("identify"))
        if reply.get("digest") != code_digest():
            self.restart()
            reply = json.loads(self.request("identify"))
        return reply

    def prepare(self, kind, table, table_id, r0_us):
        """Make the server ready for *kind* on this process's CPUs; -> its reply (``a0_us``, identity)."""
        self.open()
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        line = "prepare " + json.dumps({"kind": kind, "cpus": cpus, "table": table, "table_id": table_id,
                                        "r0_us": r0_us})
        reply = json.loads(self.request(line))
        if "error" in reply:
            raise AnchorError(f"the anchor cannot launch {kind_key(kind)}: {reply['error']}")
        check_run(self.folder, reply)
        return reply

    def restart(self):
        with contextlib.suppress(AnchorError):
            self.request("quit")
        self.close()
        deadline = time.monotonic() + 10
        while os.path.exists(os.path.join(self.folder, "sock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.open()

    def run(self, n):
        """Seconds per launch of one anchor batch of *n* launches of the prepared kind."""
        return float(self.request(f"run {n}"))

    def close(self):
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.stream.close()
                self.sock.close()
        self.sock = self.stream = None


def reference(python, folder, a0_folder, r0_us, begin=False):
    """What an anchored value is measured against: the server's identity and its A0 table.

    Starts the server if none answers (so the label names the anchor that will serve), makes the
    machine's A0 table for this anchor build and R0 if there is none, and with *begin* (asv's
    discovery, the start of a run) records this server as the run's anchor. The connection is
    closed again: asv's forkserver forks after import, and children must not share a socket.
    """
    client = Client(python, folder)
    try:
        server = client.identify()
    finally:
        client.close()
    if begin:
        begin_run(client.folder, server)
    path = table_path(a0_folder, normalize.host_name(), server["build"], r0_us, server.get("simulator", False))
    header = {"host": normalize.host_name(), "anchor_python": python, "numba_cuda": server["numba_cuda"],
              "build": server["build"], "r0_us": r0_us, "simulator": server.get("simulator", False)}
    table_id = ensure_table(path, header)
    return {"version": server["numba_cuda"], "build": server["build"], "table": table_id, "table_path": path,
            "r0_us": r0_us, "folder": client.folder}


def _last_line(path):
    try:
        with open(path, errors="replace") as fh:
            lines = [line.strip() for line in fh if line.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "no output"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="launchbench's anchor server for native asv (python -m launchbench.workloads.anchor)")
    parser.add_argument("--dir")
    parser.add_argument("--idle", type=float, default=IDLE_S)
    parser.add_argument("--measure-a0", type=int, metavar="NARGS", help="one A0 process (the server runs these)")
    parser.add_argument("--r0", type=float)
    parser.add_argument("--slots", type=int, default=A0_SLOTS)
    opts = parser.parse_args(argv)
    if opts.measure_a0 is not None:
        return a0_main(opts.measure_a0, opts.r0, opts.slots)
    if not opts.dir:
        parser.error("--dir is required")
    serve(opts.dir, opts.idle)


if __name__ == "__main__":
    sys.exit(main())
