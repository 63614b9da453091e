"""How variant environments are found or built (``EnvOptions``: the environment options of
compare, counts, breakdown, history, bisect and pr, declared in ``commands/common_args``),
checked before any work (``check_env_options``) and resolved per variant base
(``resolve_variant_envs``).
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import sys

from ..base.errors import UserError
from ..base.outpaths import check_folder
from . import envs, variants


@dataclasses.dataclass(frozen=True)
class EnvOptions:
    """The environment options, as given (None: the option's default)."""
    env_dir: str | None = None
    python: str | None = None
    wheels: str | None = None
    system_site_packages: bool = False
    constraints: str | None = None
    extras: str | None = None
    no_install: bool = False
    wheel_cache: str | None = None


_EXTRAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(\s*,\s*[A-Za-z0-9][A-Za-z0-9_.-]*)*")


#: the extras numba-cuda's releases declare (pyproject's optional-dependencies): CUDA 12 and 13 bindings
#: and the test dependencies; pip installs without an extra a package lacks, warning only
KNOWN_EXTRAS = ("cu12", "cu13", "test", "test-cu12", "test-cu13")

#: seconds a --python gets to say its version: a python answers in well under a second
PROBE_S = 10.0
_PROBE = "import sys; print(sys.version_info[0])"


def python_path(text: str | None) -> str:
    """``--python``'s interpreter: a path, or a bare name (``python3``) found on PATH as a shell
    would; a one-line UserError where neither is an executable file."""
    text = "" if text is None else str(text)
    full = ""
    if text.strip():
        found = shutil.which(text) if os.sep not in text else None
        full = found or os.path.abspath(os.path.expanduser(text))
    if not (full and os.path.isfile(full) and os.access(full, os.X_OK)):
        raise UserError(f"--python {text!r} is not an executable file (nor a program on PATH); give a python, "
                        f"e.g. --python {sys.executable}")
    return full


def probe_python(full: str, given: str, timeout: float = PROBE_S) -> None:
    """*full* answers as a Python 3 within *timeout* seconds, or a one-line UserError; a program that
    never answers is killed with everything it started (its own session)."""
    try:
        proc = subprocess.Popen([full, "-I", "-c", _PROBE], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as exc:
        raise UserError(f"--python {given!r} cannot be run ({exc.strerror}); give a python, e.g. "
                        f"--python {sys.executable}") from None
    try:
        out, _err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        raise UserError(f"--python {given!r} did not answer within {timeout:g} s (is it a python?); give a "
                        f"python, e.g. --python {sys.executable}") from None
    except BaseException:
        _kill_session(proc)
        raise
    if proc.returncode != 0 or out.strip() != "3":
        raise UserError(f"--python {given!r} is not a Python 3 interpreter (it answered "
                        f"{(out.strip() or 'nothing')[:40]!r}, exit {proc.returncode}); give a python, e.g. "
                        f"--python {sys.executable}")


def _kill_session(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the probe and whatever it started
    except OSError:
        proc.kill()
    proc.communicate()


def check_env_options(opts: EnvOptions) -> dict:
    """The environment options (with history's ``--wheel-cache``), checked
    before any GPU guard, build or download: one line naming the option for a bad one. Returns
    the pins (``--constraints``)."""
    if opts.python is not None:
        probe_python(python_path(opts.python), opts.python)
    if opts.wheels is not None and not (str(opts.wheels).strip() and os.path.isdir(opts.wheels)):
        raise UserError(f"--wheels {opts.wheels!r} is not a directory; pass the folder holding the wheels")
    if opts.extras is not None and opts.extras.strip() and not _EXTRAS.fullmatch(opts.extras.strip()):
        raise UserError(f"--extras {opts.extras!r}: expected comma-separated extras names, e.g. --extras cu13 "
                        "(or '' for none)")
    unknown = [e.strip() for e in (opts.extras or "").split(",") if e.strip() and e.strip() not in KNOWN_EXTRAS]
    if unknown:  # pip only warns about an extra a package lacks, and installs without it
        raise UserError(f"--extras {opts.extras!r}: numba-cuda has no extra {', '.join(map(repr, unknown))} (its extras: "
                        f"{', '.join(KNOWN_EXTRAS)}); e.g. --extras cu13, or '' for none")
    for option in ("env_dir", "wheel_cache"):
        if getattr(opts, option) is not None:
            check_folder(getattr(opts, option), "--" + option.replace("_", "-"))
    return variants.parse_pins(opts.constraints)


def resolve_variant_envs(opts: EnvOptions, vlist: list, log) -> tuple[dict, dict]:
    """({base: Env}, pins): each variant base's environment, built or reused once, with the
    environment options; one place for every command that runs variants."""
    pins = variants.parse_pins(opts.constraints)
    python = python_path(opts.python) if opts.python else sys.executable
    extras = opts.extras if opts.extras is not None else ("" if opts.system_site_packages else "cu13")
    manager = envs.EnvManager(env_dir=opts.env_dir, python=python, pins=pins, wheels=opts.wheels,
                              site_from=python if opts.system_site_packages else None, extras=extras,
                              no_install=opts.no_install, log=log)
    manager.check_available([var.base for var in vlist])  # an unknown version: refused before any build
    resolved = {}
    for var in vlist:
        if var.base not in resolved:
            env = manager.ensure(var.base, var.name)
            envs.check_python_matches(env, var.name)
            resolved[var.base] = env
    return resolved, pins
