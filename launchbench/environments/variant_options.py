"""How variant environments are found or built (``EnvOptions``: the environment options of
compare, counts, breakdown, history, bisect and pr, declared in ``commands/common_args``),
checked before any work (``check_env_options``) and resolved per variant base
(``resolve_variant_envs``).
"""
from __future__ import annotations

import dataclasses
import os
import re
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


def check_env_options(opts: EnvOptions) -> dict:
    """The environment options (with history's ``--wheel-cache``), checked
    before any GPU guard, build or download: one line naming the option for a bad one. Returns
    the pins (``--constraints``)."""
    if opts.python is not None:
        full = os.path.abspath(os.path.expanduser(opts.python)) if str(opts.python).strip() else ""
        if not (full and os.path.isfile(full) and os.access(full, os.X_OK)):
            raise UserError(f"--python {opts.python!r} is not an executable file; give a python, e.g. "
                            f"--python {sys.executable}")
    if opts.wheels is not None and not (str(opts.wheels).strip() and os.path.isdir(opts.wheels)):
        raise UserError(f"--wheels {opts.wheels!r} is not a directory; pass the folder holding the wheels")
    if opts.extras is not None and opts.extras.strip() and not _EXTRAS.fullmatch(opts.extras.strip()):
        raise UserError(f"--extras {opts.extras!r}: expected comma-separated extras names, e.g. --extras cu13 "
                        "(or '' for none)")
    for option in ("env_dir", "wheel_cache"):
        if getattr(opts, option) is not None:
            check_folder(getattr(opts, option), "--" + option.replace("_", "-"))
    return variants.parse_pins(opts.constraints)


def resolve_variant_envs(opts: EnvOptions, vlist: list, log) -> tuple[dict, dict]:
    """({base: Env}, pins): each variant base's environment, built or reused once, with the
    environment options; one place for every command that runs variants."""
    pins = variants.parse_pins(opts.constraints)
    python = opts.python or sys.executable
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
