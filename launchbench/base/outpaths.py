"""Output paths checked before any work: a run that measures for minutes must not
end in a traceback because its -o folder cannot be written.

``check_writable`` (a file) and ``check_folder`` (a folder) prove the folder
can be written by creating (and removing) a probe in it, or, when it does not
exist yet, in its nearest existing ancestor; nothing is left behind. A file
system with less than ``MIN_FREE`` bytes free is refused too: the probe (an
empty file) would pass on a full disk, and the results would not.

Every output of a run is also part of one plan (``check_outputs``, ``check_folder(...,
output=True)``, ``add_inputs``): each path resolved through its symlinks (a loop or a dangling
link refused), none the same file as another output or as an input (``report in.json --markdown
in.json`` once replaced the results with Markdown), none a FIFO or device, and each locked
(``fcntl.flock`` on a lock file beside it, released when the run ends or its process dies) so a
second run on the same output is refused instead of mixing the two runs' rounds and logs. The
lock file holds its owner's pid, for the message; one left by a killed run holds no lock and is
taken over. ``release()`` (``cli.main``, and at exit) drops the locks and forgets the plan.
Import-light.
"""
from __future__ import annotations

import atexit
import errno
import hashlib
import os
import stat
import tempfile

try:
    import fcntl
except ImportError:  # Windows: no flock; outputs are checked but not locked
    fcntl = None

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


def shown(text) -> str:
    """*text* (a path) printable whatever bytes it holds: undecodable bytes as \\xNN."""
    return os.fsencode(text).decode("utf-8", "backslashreplace")


def _kind(mode: int) -> str | None:
    """What a file that is neither regular nor a folder is, in words (None: regular or folder)."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None


def check_regular(path, option: str) -> None:
    """Refuse input *path* (given with *option*) in one line when it is a FIFO, device or socket: a
    reader would block or never end. A missing file is left to the reader's own message (OSError)."""
    odd = _kind(os.stat(path).st_mode)
    if odd:
        raise UserError(f"{option} {shown(path)} is {odd}, not a file; give a file")


def resolve(path, option: str, empty: str = "give a file name") -> tuple:
    """``(absolute, real)`` for *path*: refused in one line where it is empty, not valid UTF-8, a
    symlink loop or a dangling symlink, or passes through one; *real* has every symlink resolved."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if not text.strip():
        raise UserError(f"{option} is empty; {empty}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{option} {shown(text)} is not valid UTF-8 (the results record their file names); "
                        "choose a name in UTF-8") from None
    full = os.path.abspath(os.path.expanduser(text))
    part = full
    while True:  # the given path and each folder above it: no loop, no dangling link
        if os.path.islink(part):
            try:
                os.stat(part)
            except OSError as exc:
                what = "a symlink loop" if exc.errno == errno.ELOOP else f"a dangling symlink (to {shown(os.readlink(part))})"
                where = f"{option} {shown(text)}" + ("" if part == full else f": {shown(part)}")
                raise UserError(f"{where} is {what}; remove the link or give another path") from None
        parent = os.path.dirname(part)
        if parent == part:
            break
        part = parent
    return full, os.path.realpath(full)


def check_writable(path: str, option: str) -> str:
    """The absolute path of output *path* (given with *option*, e.g. ``--output``),
    or a one-line UserError if it is a directory, a FIFO or device, read-only, behind a broken
    symlink, or its folder cannot be created or written."""
    text = os.fspath(path)
    full, real = resolve(path, option, f"give a file name, e.g. {option} results.json")
    if os.path.isdir(real):
        raise UserError(f"{option} {shown(text)} is a directory; give a file name inside it, e.g. "
                        f"{option} {shown(os.path.join(text, 'results.json'))}")
    if os.path.exists(real):
        odd = _kind(os.stat(real).st_mode)
        if odd:
            raise UserError(f"{option} {shown(text)} is {odd}, not a file; give a file name")
        if not os.access(real, os.W_OK):
            raise UserError(f"{option} {shown(text)} is read-only; make it writable or choose another name")
    _probe(os.path.dirname(real), f"{option} {shown(text)}")
    return full


def check_folder(path: str, option: str, output: bool = False) -> str:
    """The absolute path of output folder *path*: an existing folder that can be written, or one
    that can be created; else a one-line UserError. *output*: this run's own output (a report
    folder, not a shared cache): part of the run's plan, distinct and locked as files are."""
    text = os.fspath(path)
    full, real = resolve(path, option, "give a folder")
    if os.path.exists(real) and not os.path.isdir(real):
        raise UserError(f"{option} {shown(text)} is a file, not a folder; give a folder")
    _probe(real, f"{option} {shown(text)}")
    if output:
        _claim(real, option, text, folder=True)
    return full


def check_outputs(pairs, inputs=()) -> list:
    """``check_writable`` for each ``(path, option)`` pair whose path is given (None skipped), each
    then claimed for this run (``_claim``: distinct from every other output and input, locked);
    *inputs* (``(path, what)`` pairs) are added first. The absolute paths, in order (None where none
    was given)."""
    add_inputs(inputs)
    out = []
    for path, option in pairs:
        if path is None:
            out.append(None)
            continue
        full = check_writable(path, option)
        _claim(os.path.realpath(full), option, os.fspath(path))
        out.append(full)
    return out


def check_derived(path: str, option: str, folder: bool = False) -> str:
    """An output the run names itself (compare's ``NAME.logs`` folder beside its JSON): claimed
    like the others, so ``--markdown`` cannot be it. No lock: the output it derives from holds one."""
    full = os.path.abspath(path)
    _claim(os.path.realpath(full), option, path, folder=folder, lock=False)
    return full


# ---------------------------------------------------------------- the run's plan and its locks

_planned: dict = {}   # real path -> (option, as given, is_folder) of each output of this run
_inputs: dict = {}    # real path -> (what, as given) of each input of this run
_held: dict = {}      # real path -> (fd, lock path, owner pid)
_made: list = []      # folders created to hold a lock file (removed again when left empty)
LOCK_SUFFIX = ".launchbench-lock"


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)  # hard links too
    except OSError:
        return False


def add_inputs(inputs) -> None:
    """Record the files (or folders) this run reads, ``(path, what)`` pairs (None skipped): no
    output may be one of them."""
    for path, what in inputs:
        if path is None:
            continue
        real = os.path.realpath(os.path.abspath(os.path.expanduser(os.fspath(path))))
        try:
            odd = _kind(os.stat(real).st_mode)
        except OSError:  # missing or unreadable: its reader says so
            odd = None
        if odd:  # a FIFO would block its reader, a device never end
            raise UserError(f"{what} {shown(path)} is {odd}, not a file; give a file")
        for out, (option, text, _folder) in _planned.items():
            if out == real or _same_file(out, real):
                raise UserError(f"{option} {shown(text)} is {what} {shown(path)} itself: the run would overwrite "
                                f"its input; give {option} another name")
        _inputs[real] = (what, os.fspath(path))


def _claim(real: str, option: str, text: str, folder: bool = False, lock: bool = True) -> None:
    """Add output *real* to this run's plan: refused where another output or an input is the same
    file (by path or inode); then locked (``lock``)."""
    for other, (other_option, other_text, _f) in _planned.items():
        if (other == real or _same_file(other, real)) and (other_option, folder) != (option, _f):
            raise UserError(f"{option} {shown(text)} and {other_option} {shown(other_text)} are the same "
                            f"{'path' if folder or _f else 'file'}: one would overwrite the other; give each "
                            "its own name")
    for other, (what, given) in _inputs.items():
        if other == real or _same_file(other, real):
            raise UserError(f"{option} {shown(text)} is {what} {shown(given)} itself: the run would overwrite "
                            f"its input; give {option} another name")
    _planned[real] = (option, text, folder)
    if lock:
        _lock(real, option, text)


def lock_path(real: str) -> str:
    """The lock file of output *real*: beside it, hidden, named after it (hashed when too long)."""
    folder, name = os.path.split(real.rstrip(os.sep) or os.sep)
    base = f".{name}{LOCK_SUFFIX}"
    if len(os.fsencode(base)) > 200:
        base = f".{hashlib.sha1(os.fsencode(name)).hexdigest()[:16]}{LOCK_SUFFIX}"
    return os.path.join(folder, base)


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        pid = os.read(fd, 32).decode("ascii", "replace").strip()
    except OSError:
        pid = ""
    return f" (pid {pid})" if pid.isdigit() else ""


def _lock(real: str, option: str, text: str) -> None:
    """An exclusive, non-blocking flock on *real*'s lock file, held until ``release``; a held one is
    refused in one line naming the other run's pid."""
    if fcntl is None or real in _held:
        return
    path = lock_path(real)
    folder = os.path.dirname(path)
    missing = []
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for made in reversed(missing):
        try:
            os.mkdir(made)
            _made.append(made)
        except FileExistsError:
            pass
        except OSError as exc:
            raise UserError(f"{option} {shown(text)}: cannot create {shown(made)}: {_why(exc)}; "
                            "choose a writable folder") from None
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UserError(f"{option} {shown(text)}: cannot create its lock file {shown(path)}: {_why(exc)}; "
                            "choose a writable folder") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            who = _holder(fd)
            os.close(fd)
            raise UserError(f"{option} {shown(text)} is being written by another launchbench run{who}; wait for "
                            f"it to end or give {option} another name") from None
        try:  # the file locked is still the one at *path* (not one a finishing run just removed)
            current = os.stat(path).st_ino == os.fstat(fd).st_ino
        except OSError:
            current = False
        if not current:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        _held[real] = (fd, path, os.getpid())
        return


def holds(real: str) -> bool:
    """True when this process holds the lock of output *real* (tests)."""
    return os.path.realpath(real) in _held


def release() -> None:
    """Drop this run's locks (their files removed), the folders made only for them, and its plan.
    A forked child never releases its parent's locks."""
    pid = os.getpid()
    for real, (fd, path, owner) in list(_held.items()):
        if owner != pid:
            continue
        try:
            os.unlink(path)  # removed while still locked: a waiting run then locks a fresh file
        except OSError:
            pass
        try:
            os.close(fd)
        except OSError:
            pass
        del _held[real]
    for made in reversed(_made):
        try:
            os.rmdir(made)  # only when empty: the run wrote nothing there
        except OSError:
            pass
    _made.clear()
    _planned.clear()
    _inputs.clear()


atexit.register(release)
