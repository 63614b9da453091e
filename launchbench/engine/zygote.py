"""A variant's zygote: imports numba-cuda once, without a CUDA context, and forks each round's worker.

Why: a fresh worker spends about half of its 4-5 s set-up importing numba-cuda and warming
numba's compiler (``setup_phases_s`` in compare's JSON), on the same CPUs the other lanes set
up on; with several GPUs the set-up, not the GPUs, bounds the rounds (docs/scaling.md). A
forked worker starts with the imports done and creates its own CUDA context, kernels and
arguments, then speaks the worker's protocol (engine/worker.py) as a fresh one does.

What a fork shares with its zygote is the process state set before the fork: the hash seed,
the memory layout of everything imported. So the forks of one zygote are not independent
draws of a process's offset, and the engine never treats them as such: a zygote serves
``Plan.fork_rounds`` consecutive rounds, those rounds form one *cluster*, and every interval
is over clusters (engine/analysis.py). How much of a process's offset a fork keeps is measured,
not assumed (``noise`` in the JSON, docs/scaling.md).

Protocol: the zygote gets a Unix SEQPACKET socket (its fd in ``FD_ENV``). When its imports are
done it sends one JSON message ``{"ok": true, "pid", "warm": {...}}``. Each ``fork`` message
carries three file descriptors (the worker's stdin, stdout, stderr) and is answered with
``{"ok": true, "pid": N}``. The socket's end ends the zygote, and its forks die with it.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

from ..base import cudamod, lifeline
from . import worker

#: the environment variable naming the zygote's control socket
FD_ENV = "LAUNCHBENCH_ZYGOTE_FD"
#: what a forked worker's ``poll`` returns once it is gone: its status went to the zygote
UNKNOWN_EXIT = -1
#: the compute capability the zygote's warm-up compiles PTX for (no device is asked)
WARM_CC = (8, 0)
MESSAGE = 65536


# ---------------------------------------------------------------- inside the variant's environment

def warm_up(simulator: bool) -> dict:
    """Import numba-cuda (the worker's own imports come with this module) and compile one
    empty kernel to PTX (``compile_ptx`` asks no device: no CUDA context), so that numba's
    typing, lowering and NVVM are loaded before the fork. Failures are recorded, not raised: the forked worker reports them."""
    marks = {"started": time.monotonic()}
    out: dict = {}
    try:
        cuda = cudamod.import_cuda()
        import numpy  # noqa: F401
        marks["imported"] = time.monotonic()
        if not simulator and hasattr(cuda, "compile_ptx"):
            def k(a):
                pass

            cuda.compile_ptx(k, "void(float32[::1])", cc=WARM_CC)
            marks["compiled"] = time.monotonic()
    except Exception as exc:  # noqa: BLE001 - the forked worker's set-up says what is wrong
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    names = list(marks)
    out["phases_s"] = {b: round(marks[b] - marks[a], 4) for a, b in zip(names, names[1:])}
    return out


def _become_worker(fds: list, zygote: int) -> None:
    """In the forked child: its own session, death with the zygote, the three descriptors as
    stdin/stdout/stderr, then the worker's loop; never returns."""
    code = 1
    try:
        os.setsid()  # like a fresh worker: its own group, which kill_group ends
        lifeline.die_with(zygote)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sys.stdin = open(0, "r", closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        code = worker.main()
    except BaseException:  # noqa: BLE001 - the parent reads the log and the closed pipe
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(sock: socket.socket, simulator: bool) -> int:
    warm = warm_up(simulator)
    sock.send(json.dumps({"ok": True, "pid": os.getpid(), "warm": warm}).encode())
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped by the kernel
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, MESSAGE, 3)
        except OSError:
            return 0
        if not msg:
            return 0
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"ok": False, "error": f"a fork request needs 3 descriptors, got {len(fds)}"}).encode())
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            sock.close()
            _become_worker(fds, os.getppid())
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"ok": True, "pid": pid}).encode())


def main() -> int:
    lifeline.die_with_parent()
    sock = socket.socket(fileno=int(os.environ.pop(FD_ENV)))
    return serve(sock, os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"))


# ---------------------------------------------------------------- in launchbench


class ZygoteError(Exception):
    pass


class Forked:
    """A forked worker, seen through the part of ``subprocess.Popen`` the engine uses. It is the
    zygote's child, not ours: it is gone when signal 0 cannot reach it, and its exit status
    stays with the zygote (``UNKNOWN_EXIT``)."""

    def __init__(self, pid: int, stdin_fd: int, stdout_fd: int):
        self.pid = pid
        self.stdin = os.fdopen(stdin_fd, "w", buffering=1)
        self.stdout = os.fdopen(stdout_fd, "r")
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.returncode = UNKNOWN_EXIT
            except PermissionError:  # the pid now belongs to someone else's process: ours is gone
                self.returncode = UNKNOWN_EXIT
        return self.returncode

    def wait(self, timeout: float | None = None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout)
            time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


class Zygote:
    """One zygote process of one variant (``python -m launchbench.engine.zygote`` in its
    environment, with a worker's environment variables). ``fork`` waits for its imports
    (until ``deadline``/``cancel``, as a worker's reply does), then returns a ``Forked``."""

    deadline: float | None = None
    cancel = None

    def __init__(self, variant: str, python: str, env: dict, log_path: str, cpus: list | None = None):
        self.variant = variant
        self.log_path = log_path
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(env)
        env[FD_ENV] = str(theirs.fileno())
        self._log = open(log_path, "ab")
        try:
            self.proc = subprocess.Popen([python, "-m", "launchbench.engine.zygote"], stdin=subprocess.DEVNULL,
                                         stdout=self._log, stderr=self._log, env=env, pass_fds=(theirs.fileno(),),
                                         start_new_session=True)
        finally:
            theirs.close()
        lifeline.track(self.proc)
        self.sock = ours
        self.ready: dict | None = None
        self.forks = 0
        if cpus and hasattr(os, "sched_setaffinity"):
            try:
                os.sched_setaffinity(self.proc.pid, set(cpus))
            except OSError:
                pass

    def _receive(self, halted) -> dict:
        while True:
            wait = 0.25
            if self.cancel is not None and self.cancel.is_set():
                raise halted("cancel")
            if self.deadline is not None:
                wait = min(wait, self.deadline - time.monotonic())
                if wait <= 0:
                    raise halted("deadline")
            if select.select([self.sock], [], [], wait)[0]:
                break
        data = self.sock.recv(MESSAGE)
        if not data:
            raise ZygoteError(f"the zygote of {self.variant} exited (code {self.proc.poll()}); log: {self.log_path}")
        reply = json.loads(data)
        if not reply.get("ok"):
            raise ZygoteError(f"the zygote of {self.variant}: {reply.get('error')}")
        return reply

    def fork(self, log_path: str, halted) -> Forked:
        """A fresh worker forked from this zygote, its stderr appended to *log_path*. *halted*:
        the exception class raised when the deadline passes or the run is cancelled."""
        if self.ready is None:
            self.ready = self._receive(halted)
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            try:
                socket.send_fds(self.sock, [b'{"cmd": "fork"}'], [stdin_r, stdout_w, log_fd])
            except OSError as exc:
                raise ZygoteError(f"the zygote of {self.variant} is gone ({exc}); log: {self.log_path}") from None
        finally:
            for fd in (stdin_r, stdout_w, log_fd):
                os.close(fd)
        try:
            reply = self._receive(halted)
        except BaseException:
            os.close(stdin_w)
            os.close(stdout_r)
            raise
        self.forks += 1
        return Forked(int(reply["pid"]), stdin_w, stdout_r)

    def close(self, grace: float = 5.0) -> None:
        """End the zygote: its socket's end tells it to leave (after *grace* s it is killed; its forks
        die with it: call once they are done)."""
        try:
            self.sock.close()
        except OSError:
            pass
        lifeline.end(self.proc, grace=grace)
        self._log.close()

    def kill(self) -> None:
        self.close(grace=0.0)

if __name__ == "__main__":
    sys.exit(main())
