"""Atomic file writes (a temp file in the same folder, fsync, then os.replace) and reading them back.

Readers (and an interrupted run) never see half a file: results already on
disk stay whole until the new version is complete. A write the file system
refuses (a full disk, a file-size limit, a read-only or forbidden folder) is
raised as ``OutputError``: one line naming the file and why, saying where the
last complete version still is; the temp file is removed. "The last complete version"
is said only of a file this run wrote (``written_here``): a file left from an earlier
run is named as such, never as this run's results.
"""
from __future__ import annotations

import errno
import gzip
import json
import os
import tempfile

from .errors import UserError

# errno values that mean "this output cannot be written here", with what to do about it
_FIXES = {
    errno.ENOSPC: "free space or choose another folder",
    errno.EDQUOT: "free space (disk quota) or choose another folder",
    errno.EFBIG: "the file-size limit (ulimit -f) is below its size; raise it or choose another file system",
    errno.EACCES: "choose a writable folder",
    errno.EPERM: "choose a writable folder",
    errno.EROFS: "choose a folder on a writable file system",
    errno.ENOTDIR: "a part of the path is a file, not a folder; choose another path",
    errno.EISDIR: "it is a folder; give a file name",
    errno.ENAMETOOLONG: "choose a shorter path",
}
WRITE_ERRNOS = frozenset(_FIXES)

_ours: dict = {}  # absolute path -> identity (device, inode, mtime, size) of the file this run wrote there


def _identity(path: str):
    st = os.stat(path)
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def new_run() -> None:
    """Forget what was written so far: files written before now are an earlier run's (``cli.main``)."""
    _ours.clear()


def written_here(path) -> bool:
    """True when *path* is still the file this run last wrote through this module."""
    path = os.path.abspath(os.fspath(path))
    try:
        return _ours.get(path) == _identity(path)
    except OSError:
        return False


def fix_for(code) -> str | None:
    """What to do about a refused write with errno *code* (None: no advice)."""
    return _FIXES.get(code)


class OutputError(UserError, OSError):
    """An output the file system refused: a one-line UserError that is still an OSError
    (``errno``, ``filename``), so callers that tolerate OSError keep doing so."""

    def __str__(self) -> str:  # the line, not OSError's "[Errno N] ..."
        return str(self.args[0]) if self.args else ""


def describe_write_error(exc: OSError, path=None) -> str:
    """One line for an OSError raised while writing *path* (default: the error's filename):
    the file, the errno's meaning, what to do, and where the last complete version is."""
    path = path if path is not None else exc.filename
    why = (exc.strerror or os.strerror(exc.errno)) if exc.errno else str(exc)
    if path is None:  # a write that did not say which file (a plain fh.write)
        line = f"an output could not be written: {why}"
        path = ""
    else:
        path = os.fspath(path)
        line = f"cannot write {path}: {why}"
    fix = _FIXES.get(exc.errno)
    if fix:
        line += f"; {fix}"
    if path and os.path.isfile(path):
        if written_here(path):
            line += f"; the last complete version is still in {path}"
        else:
            line += f"; {path} is left as it was, from before this run"
    return line


def output_error(exc: OSError, path=None) -> OutputError:
    """*exc* as an OutputError naming *path* (chain it: ``raise output_error(exc, p) from None``)."""
    err = OutputError(describe_write_error(exc, path))
    err.errno, err.strerror = exc.errno, exc.strerror
    err.filename = os.fspath(path) if path is not None else exc.filename
    return err


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path, data: bytes) -> str:
    """Write *data* to *path* whole or not at all; an OutputError (one line) where the file
    system refuses it, the previous *path* kept and no temp file left."""
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        if isinstance(exc, FileExistsError):  # makedirs: a file where the folder should be
            exc = NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), directory)
        if exc.errno in WRITE_ERRNOS:
            raise output_error(exc, path) from None
        raise
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())  # whole on disk before it replaces the last good version
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.errno in WRITE_ERRNOS:
            raise output_error(exc, path) from None
        raise
    try:
        _ours[path] = _identity(path)
    except OSError:
        _ours.pop(path, None)
    return path


def write_text_atomic(path, text: str) -> str:
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path, doc, *, indent: int = 1, sort_keys: bool = False) -> str:
    """JSON with NaN refused (it is not JSON); serialisation errors leave *path* untouched."""
    text = json.dumps(doc, indent=indent, sort_keys=sort_keys, allow_nan=False) + "\n"
    return write_text_atomic(path, text)


def read_json(path):
    """A JSON file, plain or gzip-compressed (as committed results are). Raises what open and
    json raise (FileNotFoundError, ValueError, EOFError, OSError); callers word the error."""
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    with (gzip.open(path, "rt") if gz else open(path)) as fh:
        return json.load(fh)
