"""No child outlives launchbench: a kernel death signal in each child, and a reaper in the parent.

Workers and spinners run in their own sessions (Ctrl-C reaches only launchbench, which ends
them), so nothing else ends them when launchbench dies: a ``finally`` that never runs (SIGKILL,
a signal's default action, a crash) once left hundreds of workers behind, reparented to init.
Two guards: each child asks Linux for SIGKILL when its parent ends (``die_with_parent``:
prctl PR_SET_PDEATHSIG, which fires even on SIGKILL of the parent), and the parent kills every
child it still tracks at interpreter exit (``reap``, via atexit), which covers an exception
that skipped the clean-up and systems without prctl.

PR_SET_PDEATHSIG fires when the *thread* that started the child ends, not the process: a child
must be ended by the thread that started it (runner.run and each lane's thread do).
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading

#: the parent's pid, set in a child's environment by ``child_env``; read (and removed) by ``die_with_parent``
PARENT_ENV = "LAUNCHBENCH_PARENT_PID"
PR_SET_PDEATHSIG = 1  # linux/prctl.h

_lock = threading.Lock()
_children: dict = {}  # pid -> Popen, every child started in its own session and not yet ended
_POPEN = subprocess.Popen  # the real class, even where a test replaces subprocess.Popen later


def child_env(env: dict) -> dict:
    """*env* plus this process's pid, so the child can tell whether it already lost its parent."""
    env[PARENT_ENV] = str(os.getpid())
    return env


def die_with_parent(environ=None) -> bool:
    """In a child: SIGKILL when the parent ends (Linux; True once armed); exit at once if the
    parent named in ``PARENT_ENV`` is gone already (it died before the signal was armed).
    Nothing happens without ``PARENT_ENV`` (e.g. a test importing the worker)."""
    environ = os.environ if environ is None else environ
    parent = environ.pop(PARENT_ENV, None)
    try:
        parent = int(parent) if parent else None
    except ValueError:
        parent = None
    if parent is None:
        return False
    return die_with(parent)


def die_with(parent: int) -> bool:
    """SIGKILL this process when its parent ends (Linux; True once armed); exit at once if the
    parent is no longer *parent*. Also for a worker forked by a zygote (engine/zygote.py)."""
    armed = False
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:
        os._exit(1)
    return armed


#: the same, as source for ``python -c`` children that cannot import launchbench (spinners)
DIE_WITH_PARENT_CODE = (
    "import os, sys, signal\n"
    f"_p = os.environ.pop({PARENT_ENV!r}, '')\n"
    "if sys.platform.startswith('linux'):\n"
    "    try:\n"
    "        import ctypes\n"
    f"        ctypes.CDLL(None).prctl({PR_SET_PDEATHSIG}, int(signal.SIGKILL), 0, 0, 0)\n"
    "    except (OSError, AttributeError):\n"
    "        pass\n"
    "if _p.isdigit() and os.getppid() != int(_p):\n"
    "    os._exit(1)\n"
)


def track(proc) -> None:
    """Remember *proc* (a Popen started with start_new_session=True) until ``forget``; anything
    else (a test's stand-in) is not tracked: the reaper kills only real children."""
    if not isinstance(proc, _POPEN):
        return
    with _lock:
        _children[proc.pid] = proc


def forget(proc) -> None:
    with _lock:
        _children.pop(proc.pid, None)


def tracked() -> list:
    """The pids still tracked (tests)."""
    with _lock:
        return sorted(_children)


def kill_group(proc) -> None:
    """SIGKILL *proc* and its process group (its session's leader: whatever it started too)."""
    if proc.poll() is not None:
        return
    try:
        if proc.pid <= 1 or proc.pid == os.getpgid(0):  # not a group of its own: never ours to end
            raise OSError("not a session leader")
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, AttributeError):
        try:
            proc.kill()
        except OSError:
            pass


def end(proc, grace: float = 0.0) -> None:
    """Wait up to *grace* seconds for *proc* to exit by itself, then SIGKILL its group and wait up
    to 5 s more; forget it once it has ended."""
    for wait, kill in ((grace, False), (5.0, True)):
        if proc.poll() is not None:
            break
        if kill:
            kill_group(proc)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass
    if proc.poll() is not None:
        forget(proc)


def reap() -> int:
    """Kill every tracked child still running and wait for it; returns how many were killed."""
    with _lock:
        procs = list(_children.values())
        _children.clear()
    killed = 0
    for proc in procs:
        if proc.poll() is None:
            kill_group(proc)
            killed += 1
        try:
            proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - at exit: nothing more to do for this one
            pass
    return killed


atexit.register(reap)


#: A build step (venv, pip) runs under a keeper, ``python -c GROUP_KEEPER_CODE CMD...``: the keeper
#: leads a process group of its own, in which the step and everything it starts (setup.py, the
#: compilers) run, and kills that whole group when its parent ends (PR_SET_PDEATHSIG delivered as
#: SIGTERM, which it handles), at once if the parent is already gone, or on SIGTERM/SIGHUP.
GROUP_KEEPER_CODE = (
    "import os, signal, subprocess, sys\n"
    "def _end(*_):\n"
    "    os.killpg(0, signal.SIGKILL)\n"
    "signal.signal(signal.SIGTERM, _end)\n"
    "signal.signal(signal.SIGHUP, _end)\n"
    f"_p = os.environ.pop({PARENT_ENV!r}, '')\n"
    "if sys.platform.startswith('linux'):\n"
    "    try:\n"
    "        import ctypes\n"
    f"        ctypes.CDLL(None).prctl({PR_SET_PDEATHSIG}, int(signal.SIGTERM), 0, 0, 0)\n"
    "    except (OSError, AttributeError):\n"
    "        pass\n"
    "if _p.isdigit() and os.getppid() != int(_p):\n"
    "    _end()\n"
    "sys.exit(subprocess.call(sys.argv[1:]))\n"
)


def run_group(cmd: list, stdout=None, stderr=None, env: dict | None = None, cwd: str | None = None) -> int:
    """Run *cmd* (a build step) to its end in a process group that ends with this process: its
    exit status. Interrupted here (Ctrl-C, SIGTERM), the whole group is killed before the
    interrupt goes on; killed here (SIGKILL), the keeper kills it."""
    proc = _POPEN([sys.executable, "-c", GROUP_KEEPER_CODE, *cmd], stdin=subprocess.DEVNULL, stdout=stdout,
                  stderr=stderr, env=child_env(dict(os.environ if env is None else env)), cwd=cwd,
                  start_new_session=True)
    track(proc)
    try:
        return proc.wait()
    except BaseException:
        kill_group(proc)
        raise
    finally:
        end(proc)
