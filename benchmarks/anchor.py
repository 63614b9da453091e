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
µs per launch of that kind, measured once per machine against the
bindings reference (lever 1: ``median(a/r) * R0``) and kept in the anchor
folder's ``a0.json`` so values stay comparable across runs on one machine.
The server leaves after ``idle`` seconds without a client.

Protocol (one line each way): ``prepare {json kind}`` -> ``{json}``;
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


def measure_a0(run, slots=A0_SLOTS):
    """The anchor's µs per launch of one kind, its state divided out against the bindings reference."""
    from . import common, native, normalize

    if common.smoke_mode():
        return 1.0  # the simulator has no driver to launch a reference with
    try:
        ref = native.bindings_reference(0)
    except native.ReferenceUnavailable as exc:
        raise AnchorError(f"the anchor cannot measure A0: {exc}") from None
    for _ in range(3):
        ref(native.REFERENCE_BATCH)
    numba_s, ref_s = native.slot_loop(run, ref, slots, BATCH, native.REFERENCE_BATCH)
    return normalize.normalized_us(numba_s, ref_s, normalize.REFERENCE_US["bindings"])


def _load_a0(folder):
    try:
        with open(os.path.join(folder, "a0.json")) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def _save_a0(folder, table):
    path = os.path.join(folder, "a0.json")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(table, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class Server:
    """One client at a time; launchers and A0s kept for the server's life."""

    def __init__(self, folder):
        from . import common

        self.folder = folder
        self.launchers = {}
        self.version = _numba_cuda_version(common.cuda_module_name())
        self.smoke = common.smoke_mode()
        self.a0 = {} if self.smoke else _load_a0(folder)
        self.digest = code_digest()
        self.current = None

    def prepare(self, kind, cpus):
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, set(cpus))  # the client's CPU: both take turns on it
        key = kind_key(kind)
        run = self.launchers.get(key) or _kind_runner(kind, self.launchers)
        a0_key = f"{self.version}|{key}"
        if a0_key not in self.a0:
            self.a0[a0_key] = measure_a0(run)
            if not self.smoke:  # a simulator's 1.0 is no A0 for a GPU run in the same folder
                _save_a0(self.folder, self.a0)
        self.current = run
        return {"a0_us": self.a0[a0_key], "numba_cuda": self.version, "digest": self.digest, "pid": os.getpid()}

    def handle(self, line):
        """One request line -> one reply line (None: close the server)."""
        op, _, rest = line.partition(" ")
        if op == "run":
            if self.current is None:
                return json.dumps({"error": "run before prepare"})
            return repr(self.current(int(rest)))
        if op == "prepare":
            request = json.loads(rest)
            try:
                return json.dumps(self.prepare(request["kind"], request.get("cpus") or []))
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

    def prepare(self, kind):
        """Make the server ready for *kind* on this process's CPUs; -> its reply (``a0_us``, version).

        A server running other anchor code is told to quit and a fresh one started.
        """
        self.open()
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        line = "prepare " + json.dumps({"kind": kind, "cpus": cpus})
        reply = json.loads(self.request(line))
        if reply.get("digest") not in (None, code_digest()) and "error" not in reply:
            self.restart()
            reply = json.loads(self.request(line))
        if "error" in reply:
            raise AnchorError(f"the anchor cannot launch {kind_key(kind)}: {reply['error']}")
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
