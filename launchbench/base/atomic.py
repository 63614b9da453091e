"""Atomic file writes (a temp file in the same folder, then os.replace) and reading them back.

Readers (and an interrupted run) never see half a file: results already on
disk stay whole until the new version is complete.
"""
from __future__ import annotations

import gzip
import json
import os
import tempfile


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_bytes_atomic(path, data: bytes) -> str:
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
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
