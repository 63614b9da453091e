"""The parent's side of a worker process: starting one (fresh or forked from a zygote), its
environment, its JSON-lines requests with their deadline and cancel flag, and the check that it
imported the CUDA package its environment was built with. The worker's own side is worker.py."""
from __future__ import annotations

import json
import os
import select
import subprocess
import time

from ..base import childenv, cudamod, lifeline
from . import zygote as zygote_mod

#: How often a wait for a worker's reply looks at the run's deadline and cancel flag (seconds)
POLL_S = 0.25


class WorkerError(Exception):
    def __init__(self, variant: str, kind: str, message: str):
        super().__init__(message)
        self.variant = variant
        self.kind = kind


class Halted(Exception):
    """A wait for a worker ended from outside: the run's hard deadline passed (*why* "deadline")
    or the run was cancelled (*why* "cancel": another lane's signal)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def worker_environment(overlay: str, simulator: bool, module: str | None = None,
                       extra_env: dict | None = None) -> dict:
    """A worker's (or a zygote's) environment: this one less its credentials (it runs the code under
    test: base/childenv.py), with only launchbench on PYTHONPATH."""
    env = childenv.child_environ()
    env["PYTHONPATH"] = overlay  # only launchbench; nothing else of the parent
    env["PYTHONNOUSERSITE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
    env.pop(cudamod.ENV, None)
    if module and module != "numba-cuda":  # numba-cuda-mlir: launchbench.base.cudamod
        env[cudamod.ENV] = module
    env.update(extra_env or {})  # a lane's CUDA_VISIBLE_DEVICES (lanes.py)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    return lifeline.child_env(env)


class Worker:
    """One ``python -m launchbench.engine.worker`` process of one variant, or one forked by the
    variant's zygote (``zygote``: engine/zygote.py).

    It dies with launchbench (``base/lifeline.py``). A reply is awaited until ``deadline``
    (monotonic seconds) or until ``cancel`` (a threading.Event) is set, then ``Halted`` is
    raised: a huge loop count or warm-up cannot hold the run past its time cap or a signal."""

    deadline: float | None = None
    cancel = None

    def __init__(self, variant: str, python: str, overlay: str, log_path: str, simulator: bool,
                 cpus: list | None = None, module: str | None = None, extra_env: dict | None = None,
                 zygote=None):
        self.variant = variant
        self.log_path = log_path
        self.cpus = cpus
        self._log = open(log_path, "ab")
        self.spawned = time.monotonic()  # CLOCK_MONOTONIC: comparable with the worker's own clock
        if zygote is not None:  # forked, its imports done (engine/zygote.py)
            try:
                self.proc = zygote.fork(log_path, Halted)
            except zygote_mod.ZygoteError as exc:
                self._log.close()
                raise WorkerError(variant, "died", str(exc)) from None
            except BaseException:
                self._log.close()
                raise
            self.pid = self.proc.pid
            return
        self.proc = subprocess.Popen(
            [python, "-m", "launchbench.engine.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, env=worker_environment(overlay, simulator, module, extra_env), text=True, bufsize=1,
            start_new_session=True,  # Ctrl-C reaches the parent only; it ends the workers
        )
        lifeline.track(self.proc)
        self.pid = self.proc.pid
        if cpus and hasattr(os, "sched_setaffinity"):  # set up away from the measuring CPU
            try:
                os.sched_setaffinity(self.pid, set(cpus))
            except OSError:  # it died already; receive() reports why
                pass

    def send(self, request: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def _await_reply(self) -> None:
        """Wait until the reply can be read, or raise ``Halted`` (deadline passed, run cancelled).
        One request is outstanding at a time, so nothing is left in the pipe's read buffer."""
        if self.deadline is None and self.cancel is None:
            return
        fd = self.proc.stdout.fileno()
        while True:
            wait = POLL_S
            if self.cancel is not None and self.cancel.is_set():
                raise Halted("cancel")
            if self.deadline is not None:
                wait = min(wait, self.deadline - time.monotonic())
                if wait <= 0:
                    raise Halted("deadline")
            if select.select([fd], [], [], wait)[0]:
                return

    def receive(self) -> dict:
        self._await_reply()
        line = self.proc.stdout.readline()
        if not line:
            raise self._died()
        reply = json.loads(line)
        if not reply.get("ok"):
            raise WorkerError(self.variant, reply.get("kind", "error"), reply.get("error", "unknown failure"))
        return reply

    def request(self, request: dict) -> dict:
        self.send(request)
        return self.receive()

    def _died(self) -> WorkerError:
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            rc = None
        tail = ""
        try:
            with open(self.log_path, "rb") as fh:
                lines = [ln for ln in fh.read().decode(errors="replace").splitlines() if ln.strip()]
            tail = lines[-1].strip()[:200] if lines else ""
        except OSError:
            pass
        return WorkerError(self.variant, "died",
                           f"worker for {self.variant} exited (code {rc}){': ' + tail if tail else ''}; log: {self.log_path}")

    def retire(self) -> None:
        """Ask the worker to exit without waiting, so a round's workers tear down their CUDA
        contexts together, on the set-up CPUs (``close`` then waits)."""
        if self.proc.poll() is None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "exit", "cpus": self.cpus}) + "\n")
                self.proc.stdin.close()
            except (OSError, ValueError):
                self.kill()

    def close(self, timeout: float = 10.0) -> None:
        """Retire, wait up to *timeout* s for the exit (then kill), release the log."""
        self.retire()
        lifeline.end(self.proc, grace=timeout)
        self._log.close()

    def kill(self) -> None:
        lifeline.end(self.proc)
        self._log.close()


#: numba-cuda's CUDA package inside its distribution; numba's own bundled copy is ``numba/cuda/``
NUMBA_CUDA_PACKAGE = os.path.join("numba_cuda", "numba", "cuda", "__init__.py")


def _release_text(version: str) -> str:
    """``0.30`` and ``0.30.0`` alike (PEP 440 trailing zeros); the local part kept."""
    public, plus, local = version.strip().lower().partition("+")
    parts = public.split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts) + plus + local


def import_mismatch(info: dict, expect: dict | None) -> str | None:
    """Why a worker's imported CUDA module is not what its environment was built with, or None.

    numba-cuda's must be its own package (a tree without it leaves numba's bundled ``numba.cuda``
    in its place, recorded under the clone's version); in an environment launchbench built
    (*expect*'s ``prefix``) it must come from that environment, at the version installed there."""
    if "cuda_module" not in info:  # a target callable or the stand-in path: no CUDA module
        return None
    path = info.get("cuda_module_file")
    if not path:
        return "no CUDA module file recorded"
    if info["cuda_module"] == "numba-cuda" and not path.endswith(NUMBA_CUDA_PACKAGE):
        return (f"numba.cuda came from {path}, numba's own bundled copy, not numba-cuda's package "
                f"(numba_cuda/numba/cuda/)")
    expect = expect or {}
    prefix = expect.get("prefix")
    if prefix:
        root = os.path.realpath(prefix) + os.sep
        if not path.startswith(root):
            return f"{info['cuda_module']} came from {path}, not from its environment {prefix}"
    version, have = expect.get("version"), info.get("numba_cuda_version")
    if version and _release_text(have or "") != _release_text(version):
        return f"{info['cuda_module']} {have} was imported where {version} was installed"
    return None


def worker_error_message(exc: WorkerError) -> str:
    """The one-line user error for a worker that could not set up."""
    if exc.kind == "import":
        return f"variant {exc.variant} cannot import numba-cuda: {exc}"
    if exc.kind == "nogpu":
        return f"{exc} (variant {exc.variant})"
    if exc.kind == "mismatch":
        return f"variant {exc.variant} measures the wrong package: {exc}"
    return f"variant {exc.variant}: {exc}"
