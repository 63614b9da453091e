"""The command-line options that name variants and say how their environments are found or built,
shared by every command that runs variants (``compare``, ``breakdown --variant``).

``Ordered`` keeps ``--repo`` and ``--variant`` in command-line order; ``add_env_arguments`` adds
the environment options; ``resolve_variant_envs`` builds or reuses each variant base's
environment with them.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from ..base.errors import UserError
from ..base.outputs import check_folder
from . import envs, variants


class Ordered(argparse.Action):
    """--repo and --variant append (option, value) to one list, keeping command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = list(getattr(namespace, self.dest, None) or [])
        items.append((option_string.lstrip("-"), values))
        setattr(namespace, self.dest, items)


def add_env_arguments(e) -> None:
    """The options that say how variant environments are found or built (compare, breakdown)."""
    e.add_argument("--env-dir", help="where variant envs are cached (default ~/.cache/launchbench/envs)")
    e.add_argument("--no-install", action="store_true", help="reuse existing envs only; error if one is missing")
    e.add_argument("--python", help="interpreter for new envs (default: this one)")
    e.add_argument("--wheels", metavar="DIR", help="install offline from DIR (pip --no-index --find-links DIR)")
    e.add_argument("--system-site-packages", action="store_true",
                   help="envs also see the site-packages of --python (after their own): for hosts "
                        "whose CUDA packages are installed there")
    e.add_argument("--constraints", metavar="FILE", help="pins for built envs (default: constraints.txt's)")
    e.add_argument("--extras", default=None,
                   help="numba-cuda extras to install (default cu13, or none with --system-site-packages)")


_EXTRAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(\s*,\s*[A-Za-z0-9][A-Za-z0-9_.-]*)*")


def check_env_options(args) -> dict:
    """The environment options (``add_env_arguments``, and history's ``--wheel-cache``), checked
    before any GPU guard, build or download: one line naming the option for a bad one. Returns
    the pins (``--constraints``)."""
    if args.python is not None:
        full = os.path.abspath(os.path.expanduser(args.python)) if str(args.python).strip() else ""
        if not (full and os.path.isfile(full) and os.access(full, os.X_OK)):
            raise UserError(f"--python {args.python!r} is not an executable file; give a python, e.g. "
                            f"--python {sys.executable}")
    if args.wheels is not None and not (str(args.wheels).strip() and os.path.isdir(args.wheels)):
        raise UserError(f"--wheels {args.wheels!r} is not a directory; pass the folder holding the wheels")
    if args.extras is not None and args.extras.strip() and not _EXTRAS.fullmatch(args.extras.strip()):
        raise UserError(f"--extras {args.extras!r}: expected comma-separated extras names, e.g. --extras cu13 "
                        "(or '' for none)")
    for option in ("env_dir", "wheel_cache"):
        if getattr(args, option, None) is not None:
            check_folder(getattr(args, option), "--" + option.replace("_", "-"))
    return variants.parse_pins(args.constraints)


def resolve_variant_envs(args, vlist: list, log) -> tuple[dict, dict]:
    """({base: Env}, pins): each variant base's environment, built or reused once, with the
    options of ``add_env_arguments``; one place for every command that runs variants."""
    pins = variants.parse_pins(args.constraints)
    python = args.python or sys.executable
    extras = args.extras if args.extras is not None else ("" if args.system_site_packages else "cu13")
    manager = envs.EnvManager(env_dir=args.env_dir, python=python, pins=pins, wheels=args.wheels,
                              site_from=python if args.system_site_packages else None, extras=extras,
                              no_install=args.no_install, log=log)
    manager.check_available([var.base for var in vlist])  # an unknown version: refused before any build
    resolved = {}
    for var in vlist:
        if var.base not in resolved:
            env = manager.ensure(var.base, var.name)
            envs.check_python_matches(env, var.name)
            resolved[var.base] = env
    return resolved, pins
