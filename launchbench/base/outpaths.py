"""Output paths checked before any work: a run that measures for minutes must not
end in a traceback because its -o folder cannot be written.

``check_writable`` (a file) and ``check_folder`` (a folder) prove the folder
can be written by creating (and removing) a probe in it, or, when it does not
exist yet, in its nearest existing ancestor; nothing is left behind. A file
system with less than ``MIN_FREE`` bytes free is refused too: the probe (an
empty file) would pass on a full disk, and the results would not.
Import-light.
"""
from __future__ import annotations

import os
import tempfile

from .errors import UserError

_PROBE = ".launchbench-probe-"
MIN_FREE = 1 << 20  # bytes: less cannot hold a results JSON; a full disk has 0


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _probe(folder: str, what: str) -> None:
    """Prove *folder* can be written (created first, where missing), leaving nothing behind."""
    existing = folder
    while not os.path.exists(existing):  # the nearest ancestor that exists
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError(f"{what}: {existing} is a file, not a folder; choose another path")
    try:
        if existing == folder:
            fd, probe = tempfile.mkstemp(prefix=_PROBE, dir=folder)
            os.close(fd)
            os.unlink(probe)
        else:  # the folder would be created: prove its first missing level can be
            os.rmdir(tempfile.mkdtemp(prefix=_PROBE, dir=existing))
    except OSError as exc:
        where = folder if existing == folder else f"{folder} (cannot create it in {existing})"
        raise UserError(f"{what}: cannot write to {where}: {_why(exc)}; choose a writable folder") from None
    try:
        st = os.statvfs(existing)
    except (OSError, AttributeError):  # no statvfs (Windows) or none for this file system: the write will tell
        return
    free = st.f_bavail * st.f_frsize
    if free < MIN_FREE and st.f_blocks:  # f_blocks 0: a pseudo file system that reports no sizes
        raise UserError(f"{what}: only {free // 1024} KiB free on the file system of {existing} (at least "
                        f"{MIN_FREE // 1024} KiB needed); free space or choose another folder")


def check_writable(path: str, option: str) -> str:
    """The absolute path of output *path* (given with *option*, e.g. ``--output``),
    or a one-line UserError if it is a directory or its folder cannot be created or written."""
    text = os.fspath(path)
    if not str(text).strip():
        raise UserError(f"{option} is empty; give a file name, e.g. {option} results.json")
    full = os.path.abspath(os.path.expanduser(text))
    if os.path.isdir(full):
        raise UserError(f"{option} {text} is a directory; give a file name inside it, e.g. "
                        f"{option} {os.path.join(text, 'results.json')}")
    _probe(os.path.dirname(full), f"{option} {text}")
    return full


def check_folder(path: str, option: str) -> str:
    """The absolute path of output folder *path*: an existing folder that can be written, or one
    that can be created; else a one-line UserError."""
    text = os.fspath(path)
    if not str(text).strip():
        raise UserError(f"{option} is empty; give a folder")
    full = os.path.abspath(os.path.expanduser(text))
    if os.path.exists(full) and not os.path.isdir(full):
        raise UserError(f"{option} {text} is a file, not a folder; give a folder")
    _probe(full, f"{option} {text}")
    return full


def check_outputs(pairs) -> list:
    """``check_writable`` for each ``(path, option)`` pair whose path is given (None skipped);
    the absolute paths, in order (None where none was given)."""
    return [check_writable(path, option) if path is not None else None for path, option in pairs]
