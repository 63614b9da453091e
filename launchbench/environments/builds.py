"""Per-commit wheels of a numba-cuda clone, cached by commit SHA.

Why wheels and not one editable install per commit: a wheel built once can be
installed into any number of environments, carried to an offline GPU machine,
and told apart from its neighbours by its local version (``X.Y.Z+g<sha8>``).

Each commit's tree is exported with ``git archive`` (so the clone's working
tree, dirty or not, never leaks in), its ``numba_cuda/VERSION`` gets the local
version, and ``pip wheel --no-deps --no-build-isolation`` runs inside a *build
venv* (setuptools, wheel, the pinned numpy) made once per (python, pins) under
``cache_dir/build-envs/``: no build isolation means no index access per commit
and the same numpy headers for every commit.

Cache layout: ``cache_dir/<full sha>/<wheel>``, ``build.log`` and
``launchbench-wheel.json``, the marker, written last (atomically): a
directory without it is an unfinished build and is rebuilt. Import-light.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass

from ..base import archives, buildlock, childenv, lifeline
from ..base.atomic import WRITE_ERRNOS, write_json_atomic
from ..base.errors import UserError
from .variants import CUDA_PACKAGE_FILES, DEFAULT_PINS

MARKER = "launchbench-wheel.json"
BUILD_ENV_MARKER = "launchbench-build-env.json"
BUILD_TOOLS = ("setuptools", "wheel", "numpy")
BUILD_FORMAT = 1  # bump when the way wheels are built changes (new cache entries)


@dataclass(frozen=True)
class Commit:
    sha: str
    short: str
    subject: str
    date: str  # ISO-8601 committer date


class BuildFailed(Exception):
    """One commit did not build; callers report it and skip that commit, the others still build."""

    def __init__(self, commit: Commit, log_path: str, message: str):
        super().__init__(message)
        self.commit = commit
        self.log_path = log_path
        self.message = message


# ---------------------------------------------------------------- git

def _git(clone: str, *args: str, check: bool = False) -> subprocess.CompletedProcess:
    try:
        out = subprocess.run(["git", "-C", clone, *args], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=300)
    except OSError as exc:
        raise UserError(f"cannot run git ({exc.strerror}); install git and put it on PATH") from None
    if check and out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"git {' '.join(args[:2])} failed in {clone} ({last}); check the clone")
    return out


def _check_git_repo(clone: str) -> None:
    if not os.path.isdir(clone):
        raise UserError(f"{clone} does not exist; pass the path of a numba-cuda git clone")
    if _git(clone, "rev-parse", "--git-dir").returncode != 0:
        raise UserError(f"{clone} is not a git repository; pass the path of a numba-cuda git clone")


def _rev_sha(clone: str, rev: str) -> str | None:
    if not rev or rev.startswith("-"):
        return None
    out = _git(clone, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    return out.stdout.strip() if out.returncode == 0 else None


def _check_numba_cuda(clone: str, sha: str) -> None:
    if _git(clone, "cat-file", "-e", f"{sha}:numba_cuda").returncode != 0:
        raise UserError(f"{clone} is not a numba-cuda checkout (no numba_cuda/ at {sha[:8]}); "
                        f"pass a clone of https://github.com/NVIDIA/numba-cuda")
    for path in CUDA_PACKAGE_FILES:
        if _git(clone, "cat-file", "-e", f"{sha}:{path}").returncode != 0:
            raise UserError(f"{clone} at {sha[:8]} holds no numba-cuda CUDA package (no {path}), so numba's own "
                            "numba.cuda would be measured; pass a clone of https://github.com/NVIDIA/numba-cuda "
                            "and commits that have it")


def check_numba_cuda(clone: str, *commits: Commit) -> None:
    """Refuse, before any build, a commit whose tree lacks numba-cuda's CUDA package (CUDA_PACKAGE_FILES)."""
    for c in commits:
        _check_numba_cuda(clone, c.sha)


def _commit(clone: str, sha: str) -> Commit:
    out = _git(clone, "-c", "core.abbrev=8", "log", "-1", "--format=%H%x00%h%x00%cI%x00%s", sha, check=True)
    full, short, date, subject = out.stdout.rstrip("\n").split("\x00", 3)
    return Commit(full, short, subject, date)


def parse_range(text: str) -> tuple[str, str]:
    """``"A..B"`` -> ``(A, B)``; only the two-dot form, because the builds follow B's first parents back to A."""
    a, sep, b = (text or "").strip().partition("..")
    if not sep or not a or not b or b.startswith(".") or a.endswith(".") or ".." in b:
        raise UserError(f"commit range {text!r}: expected A..B (two dots, both ends given), e.g. v0.29.0..v0.30.4")
    return a, b


def resolve(clone: str, rev: str) -> Commit:
    """The commit a rev (tag, branch, SHA) names in *clone*."""
    _check_git_repo(clone)
    sha = _rev_sha(clone, rev)
    if sha is None:
        raise UserError(f"unknown revision {rev!r} in {clone}; pass a tag, branch or SHA of that clone "
                        f"(git -C {clone} fetch --tags if it is new)")
    return _commit(clone, sha)


def is_ancestor(clone: str, older: Commit, newer: Commit) -> bool:
    """*older* is an ancestor of *newer* (``git merge-base --is-ancestor``)."""
    return _git(clone, "merge-base", "--is-ancestor", older.sha, newer.sha).returncode == 0


MAIN_LINES = ("main", "origin/main", "upstream/main", "master", "origin/master")


def merge_base(clone: str, head: Commit, main: str | None = None) -> Commit:
    """Where *head* left the main line (``git merge-base``): the commit a pull request is judged against.

    *main* names the main line; by default the first of MAIN_LINES the clone has.
    """
    _check_git_repo(clone)
    names = [main] if main else [m for m in MAIN_LINES if _rev_sha(clone, m)]
    if not names or _rev_sha(clone, names[0]) is None:
        raise UserError(f"no main line in {clone} (tried {', '.join([main] if main else MAIN_LINES)}); "
                        "pass --base REF")
    out = _git(clone, "merge-base", head.sha, names[0])
    if out.returncode != 0 or not out.stdout.strip():
        raise UserError(f"{head.short} shares no history with {names[0]} in {clone}; pass --base REF")
    return _commit(clone, out.stdout.strip())


def first_parent_commits(clone: str, a: str, b: str) -> list[Commit]:
    """``[A] + A..B`` along B's first parents, oldest first.

    First parents because those are the states the main branch was in: a merged
    branch's inner commits never shipped on their own. A is included as the
    reference every later commit is compared with.
    """
    _check_git_repo(clone)
    sha_b = _rev_sha(clone, b)
    if sha_b is not None:
        _check_numba_cuda(clone, sha_b)
    else:
        head = _rev_sha(clone, "HEAD")
        if head is not None:
            _check_numba_cuda(clone, head)
    start, end = resolve(clone, a), resolve(clone, b)
    check_numba_cuda(clone, start, end)
    if _git(clone, "merge-base", "--is-ancestor", start.sha, end.sha).returncode != 0:
        raise UserError(f"{a} is not an ancestor of {b} in {clone}; give the older commit first (A..B)")
    out = _git(clone, "rev-list", "--first-parent", "--reverse", f"{start.sha}..{end.sha}", check=True)
    shas = out.stdout.split()
    if not shas:
        raise UserError(f"range {a}..{b} is empty (both name {start.short}); pass two different commits")
    if start.sha not in _first_parent_chain(clone, end.sha, len(shas) + 1):
        # A is an ancestor but off B's first-parent line (e.g. inside a merged branch).
        raise UserError(f"{a} is not on the first-parent history of {b}; pick A from {b}'s main line "
                        f"(git log --first-parent {b})")
    return [start] + [_commit(clone, sha) for sha in shas]


def _first_parent_chain(clone: str, sha: str, count: int) -> set[str]:
    out = _git(clone, "rev-list", "--first-parent", f"--max-count={count + 1}", sha, check=True)
    return set(out.stdout.split())


def code_identity(clone: str, sha: str) -> str:
    """Hash of what the installed package runs: two commits with equal identity build the same code.

    Covers the git blob ids of ``numba_cuda/`` (minus test folders and VERSION,
    which every release bump changes) and ``setup.py``; so a commit that only
    touches CI, docs, tests or the version can be skipped or grouped with its
    predecessor. Not covered: ``pyproject.toml`` (dependency metadata) and
    ``site-packages/`` (the editable-install redirector).
    """
    _check_git_repo(clone)
    full = _rev_sha(clone, sha)
    if full is None:
        raise UserError(f"unknown revision {sha!r} in {clone}; pass a SHA of that clone")
    out = _git(clone, "ls-tree", "-r", "--full-tree", full, "--", "numba_cuda", "setup.py", check=True)
    h = hashlib.sha256()
    for line in sorted(out.stdout.splitlines(), key=lambda ln: ln.split("\t", 1)[-1]):
        meta, path = line.split("\t", 1)
        if path == "numba_cuda/VERSION" or "tests" in path.split("/")[:-1]:
            continue
        mode, _type, blob = meta.split()
        h.update(f"{mode} {blob} {path}\n".encode())
    return h.hexdigest()[:16]


#: Files whose change can change compiled code (and so a cost counts cannot see): C, C++ and CUDA
#: sources and headers, Cython, and setup.py (compiler flags, which extensions are built)
COMPILED_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".cu", ".cuh", ".pyx", ".pxd")


def compiled_changes(clone: str, shas: list) -> list:
    """Indices i >= 1 of *shas* (consecutive builds) whose compiled sources differ from those of
    ``shas[i - 1]``: where a C-level step can be (bisect times these first; tests excluded)."""
    _check_git_repo(clone)
    return [i for i in range(1, len(shas)) if compiled_change_files(clone, shas[i - 1], shas[i])]


def compiled_change_files(clone: str, older: str, newer: str) -> list:
    """The compiled sources (``COMPILED_SUFFIXES``, setup.py; tests excluded) that differ between two commits."""
    diff = _git(clone, "diff", "--name-only", older, newer, "--", "numba_cuda", "setup.py", check=True)
    return [path for path in diff.stdout.splitlines() if "tests" not in path.split("/")[:-1]
            and (path == "setup.py" or path.endswith(COMPILED_SUFFIXES))]


# ---------------------------------------------------------------- building

def default_cache_dir() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "launchbench", "wheels")


def local_version(version: str, sha: str) -> str:
    """``0.30.0`` -> ``0.30.0+g<sha8>``: a unique version per commit, so pip reinstalls and reports tell commits apart."""
    version = version.strip()
    return f"{version}{'.' if '+' in version else '+'}g{sha[:8]}"


def _python_tag(python: str) -> str:
    code = ("import sys, sysconfig; print(f'cp{sys.version_info[0]}{sys.version_info[1]}'"
            " + ('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))")
    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, env=childenv.child_environ())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot run python {python} ({exc}); pass a working interpreter") from None
    if out.returncode != 0:
        raise UserError(f"python {python} failed to start; pass a working interpreter")
    return out.stdout.strip()


class WheelCache:
    """Builds and caches one wheel per commit.

    The wheel is for the build venv's Python (``python``, default this one):
    its C extensions are compiled for that version, so build with the Python
    that will run it. A cached wheel built by another Python version is not
    returned; it is rebuilt in place.

    ``builder(src, out_dir, log)`` may replace the pip build (tests): it gets
    the exported source tree, the folder the wheel goes to and the open log,
    and returns an exit code.
    """

    def __init__(self, cache_dir: str | None = None, python: str | None = None, wheels: str | None = None,
                 pins: dict | None = None, log=None, builder=None):
        self.cache_dir = os.path.abspath(os.path.expanduser(cache_dir or default_cache_dir()))
        self.python = python or sys.executable
        self.wheels = os.path.abspath(os.path.expanduser(wheels)) if wheels else None
        self.pins = {k.lower(): v for k, v in (pins if pins is not None else DEFAULT_PINS).items()}
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.builder = builder
        self._tag = None
        self._build_python = None
        if self.wheels and not os.path.isdir(self.wheels):
            raise UserError(f"--wheels {wheels} is not a directory; pass the folder holding the wheels")

    @property
    def python_tag(self) -> str:
        if self._tag is None:
            self._tag = _python_tag(self.python)
        return self._tag

    # -------------------------------------------------------- cache

    def _dir(self, sha: str) -> str:
        return os.path.join(self.cache_dir, sha)

    def path_for(self, sha: str) -> str | None:
        """The cached wheel of *sha* (a full SHA) for this Python, or None."""
        try:
            with open(os.path.join(self._dir(sha), MARKER)) as fh:
                marker = json.load(fh)
        except (OSError, ValueError):
            return None
        if marker.get("format") != BUILD_FORMAT or marker.get("python_tag") != self.python_tag:
            return None
        path = os.path.join(self._dir(sha), marker.get("wheel", ""))
        return path if marker.get("wheel") and os.path.isfile(path) else None

    def build(self, clone: str, commit: Commit) -> str:
        """The wheel of *commit*; cached => returned at once, nothing built. Raises BuildFailed.
        One build per commit at a time (a second run waits for the first: base/buildlock.py)."""
        cached = self.path_for(commit.sha)
        if cached:
            return cached
        with buildlock.held(self._dir(commit.sha), f"the wheel of {commit.short}", self.log):
            return self.path_for(commit.sha) or self._build(clone, commit)

    def _build(self, clone: str, commit: Commit) -> str:
        final = self._dir(commit.sha)
        os.makedirs(final, exist_ok=True)
        try:
            os.unlink(os.path.join(final, MARKER))  # another Python's build: never half-valid
        except FileNotFoundError:
            pass
        log_path = os.path.join(final, "build.log")
        label = f"{commit.short} ({commit.subject[:60]})"
        self.log(f"launchbench: building the wheel of {label}; log: {log_path}")
        start = time.monotonic()
        with open(log_path, "w") as log, tempfile.TemporaryDirectory(prefix="launchbench-build-") as tmp:
            log.write(f"# launchbench wheel of {commit.sha} {commit.date} {commit.subject}\n")
            log.flush()
            src, out_dir = os.path.join(tmp, "src"), os.path.join(tmp, "out")
            os.makedirs(src)
            os.makedirs(out_dir)
            try:
                reason = self._export(clone, commit, src, log)
                if reason is None:
                    rc = (self.builder or self._pip_wheel)(src, out_dir, log)
                    reason = None if rc == 0 else f"pip wheel exit {rc}"
            except OSError as exc:
                if exc.errno in WRITE_ERRNOS:  # a full disk is no fault of the commit: every build would
                    raise                      # "fail"; one line (cli.main) instead of skipping them all
                reason = f"{type(exc).__name__}: {exc}"
            wheels = sorted(f for f in os.listdir(out_dir) if f.endswith(".whl"))
            if reason is None and len(wheels) != 1:
                reason = f"expected one wheel, got {len(wheels)}"
            if reason is not None:
                log.write(f"# FAILED: {reason}\n")
                raise BuildFailed(commit, log_path,
                                  f"building the wheel of {label} failed ({reason}); see the log: {log_path}")
            for old in os.listdir(final):
                if old.endswith(".whl"):
                    os.unlink(os.path.join(final, old))
            shutil.move(os.path.join(out_dir, wheels[0]), os.path.join(final, wheels[0]))
            seconds = round(time.monotonic() - start, 1)
            log.write(f"# built {wheels[0]} in {seconds} s\n")
        write_json_atomic(os.path.join(final, MARKER), {
            "format": BUILD_FORMAT, "sha": commit.sha, "subject": commit.subject, "date": commit.date,
            "wheel": wheels[0], "python_tag": self.python_tag, "pins": self.pins,
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": seconds,
        })
        self.log(f"launchbench: built {wheels[0]} in {seconds:.0f} s")
        return os.path.join(final, wheels[0])

    def _export(self, clone: str, commit: Commit, src: str, log) -> str | None:
        """The commit's tree into *src* with its local version; a failure reason or None."""
        archive = subprocess.Popen(["git", "-C", clone, "archive", "--format=tar", commit.sha],
                                   stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        try:
            archives.extract_tar_stream(archive.stdout, src)  # refuses a member that would land outside src
            while archive.stdout.read(1 << 16):  # the tar's end padding: git exits by itself, not by SIGPIPE
                pass
            unpacked = None
        except (archives.UnsafeArchive, tarfile.TarError) as exc:
            unpacked = str(exc)
        finally:
            archive.stdout.close()
            if archive.wait() != 0 and unpacked is None:
                unpacked = f"git archive exit {archive.returncode}"
        if unpacked is not None:
            return unpacked
        version_file = os.path.join(src, "numba_cuda", "VERSION")
        if not os.path.isfile(version_file):
            return "no numba_cuda/VERSION in the commit"
        with open(version_file) as fh:
            version = local_version(fh.read(), commit.sha)
        with open(version_file, "w") as fh:
            fh.write(version + "\n")
        log.write(f"# version {version}\n")
        log.flush()
        return None

    # -------------------------------------------------------- pip

    def _pip(self, python: str, command: str, args: list[str], log) -> int:
        cmd = [python, "-m", "pip", command, "--disable-pip-version-check", "--no-input"]
        if self.wheels:
            cmd += ["--no-index", "--find-links", self.wheels]
        cmd += args
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        # the code under test runs here (setup.py): no credentials, and nothing outlives launchbench
        return lifeline.run_group(cmd, stdout=log, stderr=subprocess.STDOUT, env=childenv.child_environ())

    def _pip_wheel(self, src: str, out_dir: str, log) -> int:
        python = self.build_python()
        return self._pip(python, "wheel", ["--no-deps", "--no-build-isolation", "-w", out_dir, src], log)

    def build_requirements(self) -> list[str]:
        return [f"{name}=={self.pins[name]}" if name in self.pins else name for name in BUILD_TOOLS]

    def build_python(self) -> str:
        """The python of the build venv for (python, pins), made on first use."""
        if self._build_python:
            return self._build_python
        reqs = self.build_requirements()
        key = hashlib.sha256(json.dumps({
            "python": os.path.realpath(shutil.which(self.python) or self.python),
            "tag": self.python_tag, "reqs": reqs,
        }, sort_keys=True).encode()).hexdigest()[:12]
        path = os.path.join(self.cache_dir, "build-envs", f"{self.python_tag}-{key}")
        python = os.path.join(path, "bin", "python")
        if not os.path.isfile(os.path.join(path, BUILD_ENV_MARKER)):
            with buildlock.held(path, "the build venv", self.log):
                self._make_build_env(path, python, reqs)
        self._build_python = python
        return python

    def _make_build_env(self, path: str, python: str, reqs: list) -> None:
        """The build venv at *path* (its lock held), unless another run finished it meanwhile."""
        if not os.path.isfile(os.path.join(path, BUILD_ENV_MARKER)):
            if os.path.exists(path):
                shutil.rmtree(path)  # half-built
            os.makedirs(os.path.dirname(path), exist_ok=True)
            log_path = path + ".log"
            self.log(f"launchbench: making the build venv ({', '.join(reqs)}); log: {log_path}")
            with open(log_path, "w") as log:
                rc = lifeline.run_group([self.python, "-m", "venv", path], stdout=log, stderr=subprocess.STDOUT,
                                        env=childenv.child_environ())
                if rc == 0:
                    rc = self._pip(python, "install", reqs, log)
            if rc != 0:
                hint = f"check that {self.wheels} holds them" if self.wheels else "check the network or pass wheels=DIR"
                raise UserError(f"making the build venv ({', '.join(reqs)}) failed (exit {rc}); {hint}; see the log: {log_path}")
            write_json_atomic(os.path.join(path, BUILD_ENV_MARKER), {"python": self.python, "requirements": reqs})
