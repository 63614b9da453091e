"""One builder per folder: an advisory lock (flock) beside each folder a build fills.

Two runs that needed the same environment (or wheel, or build venv) at once built into one folder
together: one failed, and the log it named showed the other's success. Now the second waits for
the first and then finds the build finished (or, where the first died, builds it again itself,
with a log of its own). The kernel drops the lock with the process that holds it, however that
process ends, so a killed build never leaves the folder locked. Import-light.
"""
from __future__ import annotations

import contextlib
import os

try:
    import fcntl
except ImportError:  # not POSIX: no lock (launchbench's builds are Linux's)
    fcntl = None


def lock_path(folder: str) -> str:
    return folder.rstrip(os.sep) + ".lock"


@contextlib.contextmanager
def held(folder: str, what: str, say):
    """Hold *folder*'s lock for the block; *say* the wait (naming *what* and the lock) when another
    process holds it."""
    lock = lock_path(folder)
    os.makedirs(os.path.dirname(lock) or ".", exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                say(f"launchbench: waiting for another launchbench building {what} (lock: {lock})")
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield lock
    finally:
        os.close(fd)  # releases the lock
