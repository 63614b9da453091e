"""The command-line options that name variants and say how their environments are found or built,
shared by every command that runs variants (``compare``, ``breakdown --variant``).

``Ordered`` keeps ``--repo`` and ``--variant`` in command-line order; ``add_env_arguments`` adds
the environment options; ``resolve_variant_envs`` builds or reuses each variant base's
environment with them.
"""
from __future__ import annotations

import argparse
import sys

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
