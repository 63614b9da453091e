"""One virtualenv per variant base, cached by a hash of what goes into it.

Why own environments: installing several numba-cuda checkouts into one
shared environment lets an earlier editable install shadow the next (the old
script's trap). Each base (wheel or checkout) gets a venv under ``env_dir``
named ``<slug>-<hash>``, where the hash covers the spec (a checkout's git SHA
and uncommitted changes included), the pins, the Python and the install
options; a ``launchbench-env.json`` marker is written last, so a half-built
env is rebuilt, never used.

``site_from`` (``--system-site-packages``) makes an env see another Python's
site-packages *after* its own, through a ``.pth`` that calls
``site.addsitedir``: on the offline GPU machine the heavy CUDA packages
(cuda-bindings, NVVM) come from the host while the pins win.

launchbench reaches the workers through an *overlay*: a directory holding
only a ``launchbench`` symlink to the running package (C extensions
included), put on the worker's PYTHONPATH; nothing else of the parent leaks.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from ..base import buildlock, childenv, lifeline
from ..base.atomic import write_json_atomic
from ..base.errors import UserError
from ..base.outpaths import check_folder
from .variants import MLIR_PIN_NAMES, Base, env_python

MARKER = "launchbench-env.json"
#: The ``.pth`` that appends the host's site-packages after an env's own (asv's offline envs use it too).
HOST_SITE_PTH = "zz_launchbench_host_site.pth"
ENV_FORMAT = 1  # bump when the layout of built envs changes


def default_env_dir() -> str:
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "launchbench", "envs")


@dataclass
class Env:
    base: Base
    path: str
    python: str
    built: bool  # True if this call built it
    git_sha: str | None = None
    python_version: str | None = None


def python_facts(python: str) -> dict:
    """Version and site directories of *python* (one subprocess)."""
    code = (
        "import json, site, sys, sysconfig\n"
        "paths = list(site.getsitepackages()) if hasattr(site, 'getsitepackages') else []\n"
        "paths += [sysconfig.get_paths()['purelib'], sysconfig.get_paths()['platlib']]\n"
        "print(json.dumps({'version': sys.version.split()[0], 'minor': list(sys.version_info[:2]),"
        " 'executable': sys.executable, 'site': list(dict.fromkeys(paths))}))\n"
    )
    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60,
                             env=childenv.child_environ())  # the env's .pth files run: code under test
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot run python {python} ({exc}); pass a working interpreter with --python") from None
    if out.returncode != 0:
        raise UserError(f"python {python} failed to start ({out.stderr.strip().splitlines()[-1:] or 'no output'}); "
                        "pass a working interpreter with --python")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _dist_dir(python: str, dist: str) -> str:
    """The site folder *python* loads distribution *dist* from ('' if none)."""
    code = ("import importlib.metadata as m, sys\n"
            "try:\n    print(m.distribution(sys.argv[1]).locate_file(''))\n"
            "except m.PackageNotFoundError:\n    print('')\n")
    out = subprocess.run([python, "-c", code, dist], capture_output=True, text=True, timeout=120,
                         env=childenv.child_environ())
    return os.path.realpath(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else ""


def git_identity(path: str) -> str | None:
    """HEAD SHA of a checkout, with ``+dirty-<hash>`` when it has uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", "-C", path, *args], capture_output=True, text=True, timeout=60)

    try:
        head = git("rev-parse", "HEAD")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    sha = head.stdout.strip()
    status = git("status", "--porcelain", "--untracked-files=normal").stdout
    if status.strip():
        diff = git("diff", "HEAD").stdout
        digest = hashlib.sha256((status + diff).encode()).hexdigest()[:10]
        sha += f"+dirty-{digest}"
    return sha


def file_digest(path: str) -> str:
    """sha256 of a file (a per-commit wheel: its env is rebuilt when the wheel is)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def env_key(base: Base, pins: dict, python_version: str, python_exe: str, options: dict,
            identity: str | None = None) -> str:
    """Stable hash of everything that decides an environment's contents."""
    payload = {
        "format": ENV_FORMAT,
        "kind": base.kind,
        "target": base.target,
        "identity": identity,
        "pins": sorted((k.lower(), v) for k, v in pins.items()),
        "python": python_version,
        "python_exe": os.path.realpath(python_exe),
        "options": sorted(options.items()),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]


def slug(base: Base) -> str:
    if base.kind == "wheelfile":
        text = os.path.basename(base.target)[:-len(".whl")].split("-")[1]  # the version: X.Y.Z+g<sha8>
    else:
        text = base.target if base.kind == "wheel" else f"repo-{os.path.basename(base.target.rstrip('/'))}"
    return "".join(c if c.isalnum() or c in ".-" else "-" for c in text.replace("==", "-"))[:48]


def _atomic_json(path: str, data: dict) -> None:
    write_json_atomic(path, data)


class EnvManager:
    """Finds or builds the environment of each base; see the module docstring."""

    def __init__(self, env_dir: str | None = None, python: str | None = None, pins: dict | None = None,
                 wheels: str | None = None, site_from: str | None = None, extras: str = "",
                 no_install: bool = False, log=None):
        self.env_dir = os.path.abspath(os.path.expanduser(env_dir or default_env_dir()))
        self.python = python or sys.executable
        self.pins = dict(pins or {})
        self.wheels = os.path.abspath(wheels) if wheels else None
        self.site_from = site_from
        self.extras = extras
        self.no_install = no_install
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._facts = None
        if self.wheels and not os.path.isdir(self.wheels):
            raise UserError(f"--wheels {wheels} is not a directory; pass the folder holding the wheels")

    @property
    def facts(self) -> dict:
        if self._facts is None:
            self._facts = python_facts(self.python)
        return self._facts

    def options(self) -> dict:
        return {"site_from": bool(self.site_from), "extras": self.extras}

    def location(self, base: Base) -> tuple[str, str | None]:
        identity = git_identity(base.target) if base.kind == "repo" else None
        if base.kind == "wheelfile":
            identity = file_digest(base.target)
        key = env_key(base, self.pins, self.facts["version"], self.facts["executable"], self.options(), identity)
        return os.path.join(self.env_dir, f"{slug(base)}-{key}"), identity

    def ensure(self, base: Base, label: str) -> Env:
        """The ready environment of *base*, building it unless ``no_install``."""
        if base.kind == "env":
            python = env_python(base.target)
            return Env(base, base.target, python, built=False,
                       git_sha=None)
        path, identity = self.location(base)
        python = os.path.join(path, "bin", "python")
        if os.path.isfile(os.path.join(path, MARKER)) and os.path.exists(python):
            return Env(base, path, python, built=False, git_sha=identity, python_version=self.facts["version"])
        if self.no_install:
            raise UserError(
                f"no environment for variant {label} ({base.label}) in {self.env_dir} (--no-install); "
                f"run once without --no-install to build it, or pass the --env-dir used before"
            )
        check_folder(self.env_dir, "--env-dir")  # one line, not a traceback halfway through a build
        os.makedirs(self.env_dir, exist_ok=True)
        with buildlock.held(path, f"the environment of {label} ({base.label})", self.log):
            if os.path.isfile(os.path.join(path, MARKER)) and os.path.exists(python):  # built while we waited
                return Env(base, path, python, built=False, git_sha=identity, python_version=self.facts["version"])
            self._build(base, path, label)
        return Env(base, path, python, built=True, git_sha=identity, python_version=self.facts["version"])

    def check_available(self, bases) -> None:
        """Before any environment is built: refuse a ``NAME==VERSION`` base that would be built
        but whose version the package index (or, offline, the ``--wheels`` folder) lacks, in one
        line. Where the index cannot be asked, say so and go on (pip reports it, if it must)."""
        wanted: dict = {}
        for base in bases:
            if base.kind != "wheel" or self.no_install:
                continue
            path, _ = self.location(base)
            if os.path.isfile(os.path.join(path, MARKER)):
                continue  # built before: nothing to fetch
            name, _, version = base.target.partition("==")
            wanted.setdefault(name, []).append(version)
        for name, versions in wanted.items():
            if self.wheels:
                have, where = folder_versions(self.wheels, name), f"in --wheels {self.wheels}"
                fix = "pick one it holds, or add that wheel to the folder (launchbench wheelhouse)"
            else:
                have, where = index_versions(self.python, name), "on the package index"
                fix = "pick a released version"
                if have is None:
                    self.log(f"launchbench: warning: could not ask the package index which {name} versions "
                             f"exist ({', '.join(versions)} unchecked); building anyway")
                    continue
            for version in versions:
                if not any(same_version(version, h) for h in have):
                    latest = f"latest: {newest(have)}" if have else f"no {name} there at all"
                    raise UserError(f"{name}=={version} is not {where} ({latest}); {fix}")

    # ------------------------------------------------------------ building

    def requirements(self, base: Base) -> list[str]:
        extras = f"[{self.extras}]" if self.extras else ""
        if base.kind == "wheel":
            name, _, version = base.target.partition("==")
            main = f"{name}{extras}=={version}"
        elif base.kind == "wheelfile":
            main = f"{base.target}{extras}"
        else:
            main = f"{base.target}{extras}" if not extras else f"numba-cuda{extras} @ file://{base.target}"
        pins = sorted(self.pins.items())
        if base.module == "numba-cuda-mlir":  # no numba dependency: only the pins it shares
            pins = [(k, v) for k, v in pins if k in MLIR_PIN_NAMES]
        return [main] + [f"{k}=={v}" for k, v in pins]

    def _pip(self, python: str, args: list[str], log_path: str) -> int:
        cmd = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
        if self.wheels:
            cmd += ["--no-index", "--find-links", self.wheels]
        cmd += args
        with open(log_path, "a") as log:
            log.write("$ " + " ".join(cmd) + "\n")
            log.flush()
            # a checkout's setup.py runs here: no credentials, and nothing outlives launchbench
            return lifeline.run_group(cmd, stdout=log, stderr=subprocess.STDOUT, env=childenv.child_environ())

    def _build(self, base: Base, path: str, label: str) -> None:
        """Build *path* (its lock held). A folder there without the marker is an unfinished build
        (a killed or failed run): removed first, never used."""
        if os.path.lexists(path):
            self.log(f"launchbench: removing the unfinished environment {path} (its build did not finish)")
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
        os.makedirs(self.env_dir, exist_ok=True)
        log_path = os.path.join(self.env_dir, os.path.basename(path) + ".build.log")
        with open(log_path, "w") as log:
            log.write(f"# launchbench env for {label}: {base.label}\n")
        self.log(f"launchbench: building the environment for {label} ({base.label}); log: {log_path}")
        start = time.monotonic()
        with open(log_path, "a") as log:
            rc = lifeline.run_group([self.python, "-m", "venv", path], stdout=log, stderr=subprocess.STDOUT,
                                    env=childenv.child_environ())
        if rc != 0:
            raise UserError(f"creating a virtualenv for {label} failed (python -m venv exit {rc}); see the log: {log_path}")
        python = os.path.join(path, "bin", "python")
        if self.site_from:
            self._add_host_site(python, path)
        reqs = self.requirements(base)
        rc = self._pip(python, reqs, log_path)
        if rc != 0 and self.wheels:
            # Offline: the host site may hold a dependency in a form pip's resolver rejects;
            # install exactly the named distributions and let the host site supply the rest.
            with open(log_path, "a") as log:
                log.write("# retrying without dependency resolution (--no-deps)\n")
            rc = self._pip(python, ["--no-deps"] + reqs + self._folder_needs(python, reqs), log_path)
        if rc != 0:
            raise UserError(f"building variant {label} ({base.label}) failed (pip exit {rc}); see the log: {log_path}")
        if self.site_from:
            self._own_copy(python, path, base, reqs[0], log_path, label)
        _atomic_json(os.path.join(path, MARKER), {
            "base": {"kind": base.kind, "target": base.target},
            "pins": self.pins, "python": self.facts["version"], "options": self.options(),
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seconds": round(time.monotonic() - start, 1), "log": log_path,
        })
        self.log(f"launchbench: built {label} in {time.monotonic() - start:.0f} s")

    def _folder_needs(self, python: str, reqs: list) -> list:
        """What the offline ``--no-deps`` retry must add from the wheel folder (releases.folder_closure),
        markers read for the env's own interpreter."""
        from . import releases  # lazy: releases reads wheels' metadata only here
        if not os.path.isdir(self.wheels or ""):
            return []
        marker_env = None
        out = subprocess.run([python, "-c", "import json; from pip._vendor.packaging.markers import "
                              "default_environment as d; print(json.dumps(d()))"], capture_output=True, text=True,
                             check=False, env=childenv.child_environ())
        if out.returncode == 0:
            marker_env = json.loads(out.stdout)
        try:
            return releases.folder_closure(reqs, releases.FolderIndex(self.wheels), marker_env)
        except UserError:  # a file there that is no wheel: pip's own error says more than ours would
            return []

    def _own_copy(self, python: str, path: str, base: Base, main: str, log_path: str, label: str) -> None:
        """The env holds its own copy of the measured package.

        Why: pip sees the host's site-packages through the ``.pth`` and calls a
        requirement the host already has at that version "satisfied", installing
        nothing; the env would then measure the host's copy (docs/asv.md: asv's
        own build once measured the machine's numba-cuda that way).
        """
        dist, own = base.module, os.path.realpath(path) + os.sep
        if _dist_dir(python, dist).startswith(own):
            return
        rc = self._pip(python, ["--no-deps", "--ignore-installed", main], log_path)
        where = _dist_dir(python, dist)
        if rc != 0 or not where.startswith(own):
            raise UserError(f"variant {label}: {dist} resolves to {where or 'nothing'}, not to its own env "
                            f"(the host site shadows it); see the log: {log_path}")

    def _add_host_site(self, python: str, path: str) -> None:
        host = python_facts(self.site_from)["site"]
        own = python_facts(python)["site"]
        target = next((p for p in own if p.startswith(path) and p.endswith("site-packages")), own[-1])
        lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in host if os.path.isdir(p))
        with open(os.path.join(target, HOST_SITE_PTH), "w") as fh:
            fh.write(lines)


# ---------------------------------------------------------------- overlay

def _release(version: str) -> tuple | None:
    parts = version.strip().lower().lstrip("v").split(".")
    if not all(p.isdigit() for p in parts):
        return None
    nums = [int(p) for p in parts]
    while len(nums) > 1 and nums[-1] == 0:
        nums.pop()
    return tuple(nums)


def same_version(a: str, b: str) -> bool:
    """``0.30`` is ``0.30.0`` (PEP 440 release segments); other versions compare as text."""
    ra, rb = _release(a), _release(b)
    return ra == rb if ra is not None and rb is not None else a.strip().lower() == b.strip().lower()


def newest(versions: list) -> str:
    """The highest plain release of *versions* (pre-releases only where there is nothing else)."""
    releases = [v for v in versions if _release(v) is not None]
    return max(releases, key=_release) if releases else versions[0]


def _dist_name(name: str) -> str:
    return "-".join(p for p in name.replace("_", "-").replace(".", "-").lower().split("-") if p)


def folder_versions(folder: str, name: str) -> list:
    """The versions of distribution *name* among the wheels and sdists in *folder* (pip's
    ``--find-links`` view: file names only)."""
    out = []
    for entry in sorted(os.listdir(folder)):
        if entry.endswith(".whl"):
            fields = entry[:-4].split("-")
        else:
            stem = next((entry[:-len(ext)] for ext in (".tar.gz", ".zip") if entry.endswith(ext)), None)
            fields = stem.rsplit("-", 1) if stem else []
        if len(fields) >= 2 and _dist_name(fields[0]) == _dist_name(name):
            out.append(fields[1])
    return out


#: pip's words for an index it could not reach (then "No matching distribution" says nothing).
_UNREACHABLE = ("Retrying", "Could not fetch", "NewConnectionError", "ConnectTimeout", "ProxyError",
                "SSLError", "Max retries", "timed out", "Network is unreachable")


def index_versions(python: str, name: str, timeout: float = 60.0) -> list | None:
    """The versions of *name* on the package index, as ``python -m pip index versions`` (pip >=
    21.2, with *python*'s pip configuration: index URL, proxy) lists them; [] where the index
    answered without *name*; None where it could not be asked."""
    cmd = [python, "-m", "pip", "index", "versions", name, "--pre", "--disable-pip-version-check", "--no-input",
           "--retries", "1", "--timeout", "15"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    for line in proc.stdout.splitlines():
        if line.startswith("Available versions:"):
            return [v.strip() for v in line.partition(":")[2].split(",") if v.strip()]
    text = proc.stdout + proc.stderr
    if "No matching distribution found" in text and not any(word in text for word in _UNREACHABLE):
        return []
    return None


def package_dir() -> str:
    """The running launchbench package (this module lives in its environments/)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_overlay(root: str) -> str:
    """A directory containing only ``launchbench`` -> the running package; for worker PYTHONPATH."""
    os.makedirs(root, exist_ok=True)
    overlay = tempfile.mkdtemp(prefix="overlay-", dir=root)
    link = os.path.join(overlay, "launchbench")
    try:
        os.symlink(package_dir(), link)
    except OSError:
        shutil.copytree(package_dir(), link)
    return overlay


def expected_import(env: Env) -> dict | None:
    """What a worker of *env* must import (runplan.Plan's ``expect``): for an environment launchbench
    built, its own copy at the version installed (a wheel's, known from its spec or file name);
    None for an ``env:`` base, used as it is (an editable install may live anywhere)."""
    base = env.base
    if base.kind == "env":
        return None
    version = None
    if base.kind == "wheel":
        version = base.target.partition("==")[2] or None
    elif base.kind == "wheelfile":
        version = os.path.basename(base.target)[:-len(".whl")].split("-")[1]
    return {"prefix": env.path, "version": version}


def check_python_matches(env: Env, label: str) -> str:
    """The env's Python version; error if its minor differs from ours (C extensions would not load)."""
    facts = python_facts(env.python)
    if tuple(facts["minor"]) != tuple(sys.version_info[:2]):
        ours = "%d.%d" % sys.version_info[:2]
        theirs = "%d.%d" % tuple(facts["minor"])
        raise UserError(
            f"variant {label} runs Python {theirs} but launchbench runs on Python {ours}, so its C "
            f"extensions cannot load there; run launchbench with Python {theirs} "
            f"(python{theirs} -m launchbench compare ...) or build the env with --python python{ours}"
        )
    env.python_version = facts["version"]
    return facts["version"]
