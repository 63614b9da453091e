"""The anchor: a fixed numba-cuda in a process of its own, the reference that cancels a VM's state.

Why: the same-process reference (native.bindings_reference) shares the
process's speed state, but the state moves numba-cuda's launch and that
lighter loop by different factors, so normalized samples stayed bimodal at
3-4 arguments on the H200 VMs (results/h200/2026-11-25-asv-native-*).
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
sample is ``median_s(n_s / a_s) * A0``, where ``A0`` is the anchor's own
µs per launch of that kind, measured once against the bindings reference
(lever 1: ``median(a/r) * R0``) and kept in an A0 table beside asv's
results (``LAUNCHBENCH_ASV_A0_DIR``, default ``RESULTS/anchor-a0``), one
table per machine, anchor build and R0, never re-measured. The table's id,
the anchor's version and build and R0 go into every value's ``reference``
parameter (normalize.reference_label), so asv keys the results by them.
The server leaves after ``idle`` seconds without a client.

One anchor per run: asv's discovery records the server it reached
(``run.json`` in the server's folder); a later contact with another server
(one that died and was started again) fails the row in one line.

Protocol (one line each way): ``identify`` -> ``{json}``; ``prepare {json kind, table}`` -> ``{json}``;
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

#: Seconds a server waits for its next client before it leaves.
IDLE_S = 900
#: Seconds a client waits for a new server (import, CUDA context, first kernels).
START_S = 180
#: Seconds a client waits for one reply (prepare may measure A0 first).
REPLY_S = 120
#: Slots of the one-time A0 measurement (anchor batch vs bindings reference batch).
A0_SLOTS = 200
#: Launches per anchor batch: numba-cuda's batch (native.NUMBA_BATCH), the same kind of launch.
BATCH = 100

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


# ---------------------------------------------------------------- server side


def _kind_runner(kind, launchers):
    """``run(n)`` for one kind of launch with the anchor's numba-cuda, warmed up (bench_launch's own builder)."""
    from . import bench_launch

    if kind["mode"] not in ("pre", "cpl") or kind["config"] not in bench_launch.LAUNCH_CONFIGS:
        raise AnchorError(f"unknown kind {kind!r}")
    state = bench_launch.launch_runner(int(kind["args"]), kind["config"], kind["mode"] == "cpl")
    run = state["run"]
    run.keepalive = state
    launchers[kind_key(kind)] = run
    return run


def measure_a0(run, r0_us, slots=A0_SLOTS):
    """The anchor's µs per launch of one kind, its state divided out against the bindings reference."""
    from . import common, native, normalize

    if common.smoke_mode():
        return 1.0  # the simulator has no driver to launch a reference with (its tables say "simulator")
    try:
        ref = native.bindings_reference(0)
    except native.ReferenceUnavailable as exc:
        raise AnchorError(f"the anchor cannot measure A0: {exc}") from None
    for _ in range(3):
        ref(native.REFERENCE_BATCH)
    numba_s, ref_s = native.slot_loop(run, ref, slots, BATCH, native.REFERENCE_BATCH)
    return normalize.normalized_us(numba_s, ref_s, r0_us)


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
    table = {**header, "id": os.urandom(4).hex(), "a0_us": {}}
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
    return table


def _save_table(path, table):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(table, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


# ---------------------------------------------------------------- one anchor per run


def run_record(folder) -> str:
    return os.path.join(folder, "run.json")


def begin_run(folder, server):
    """Record which server this run measures against (asv's discovery: the start of an asv run)."""
    os.makedirs(folder, exist_ok=True)
    _save_table(run_record(folder), {"token": server["token"], "pid": server["pid"], "started": server["started"]})


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
        from . import common

        self.folder = folder
        self.launchers = {}
        self.module = common.cuda_module_name()
        self.version = _numba_cuda_version(self.module)
        self.build = common.build_fingerprint(self.module)
        self.smoke = common.smoke_mode()
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
            data["a0_us"][key] = measure_a0(run, r0_us)
            data.setdefault("measured", {})[key] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            _save_table(table, data)
        self.current = run
        return {**self.identity(), "a0_us": data["a0_us"][key], "table": data["id"]}

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
            proc = subprocess.Popen([self.python, "-m", "benchmarks.anchor", "--dir", self.folder,
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
    from . import normalize

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
    parser = argparse.ArgumentParser(description="launchbench's anchor server for native asv (benchmarks/anchor.py)")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--idle", type=float, default=IDLE_S)
    opts = parser.parse_args(argv)
    serve(opts.dir, opts.idle)


if __name__ == "__main__":
    sys.exit(main())
