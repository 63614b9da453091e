"""Every archive launchbench unpacks goes through here: members that would land outside the folder
are refused.

The one archive today is a commit's tree (``git archive`` of a clone, history/bisect/pr), and the
clone is the code under test: a member with an absolute path, a ``..`` component, a link out of
the tree or a device node could write anywhere the user can. Import-light.
"""
from __future__ import annotations

import posixpath
import tarfile


class UnsafeArchive(Exception):
    """A member that would land outside the folder; the message names it."""


def unsafe_member(name: str, linkname: str = "", kind: str = "file") -> str | None:
    """Why a member (its *name*, *kind* "file", "dir", "symlink", "hardlink" or "device", and a
    link's target) may not be unpacked into a folder; None when it may."""
    path = name.replace("\\", "/")
    if path.startswith("/") or posixpath.isabs(path) or (len(path) > 1 and path[1] == ":"):
        return "an absolute path"
    if ".." in path.split("/"):
        return "a '..' component"
    if kind == "device":
        return "a device or FIFO"
    if kind in ("symlink", "hardlink"):
        target = linkname.replace("\\", "/")
        if target.startswith("/") or posixpath.isabs(target):
            return f"a link to the absolute path {linkname}"
        base = posixpath.dirname(path) if kind == "symlink" else ""
        joined = posixpath.normpath(posixpath.join(base, target))
        if joined == ".." or joined.startswith("../"):
            return f"a link out of the folder ({linkname})"
    return None


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    if member.isdev():
        return "device"
    return "dir" if member.isdir() else "file"


def extract_tar_stream(fileobj, dest: str) -> int:
    """Unpack the tar read from *fileobj* (a pipe: read once, in order) into *dest*; the members
    unpacked. Raises UnsafeArchive at the first member that would land outside *dest*, before
    writing it."""
    count = 0
    with tarfile.open(fileobj=fileobj, mode="r|") as tar:
        for member in tar:
            why = unsafe_member(member.name, member.linkname, _kind(member))
            if why:
                raise UnsafeArchive(f"archive member {member.name!r} is {why}; nothing is unpacked outside {dest}")
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4, 3.12: the library's own checks too
                tar.extract(member, dest, filter="data")
            else:
                tar.extract(member, dest)
            count += 1
    return count
