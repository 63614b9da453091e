"""The ``launchbench`` command line.

Each subcommand lives in a module of launchbench.commands that exposes
``register(subparsers)``; that function adds a parser whose ``func`` default
takes the parsed arguments and returns an exit code. Modules listed here
must stay import-light (no numba, numpy or matplotlib at import time) so
``launchbench --help`` is instant and works without a GPU.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .base import atomic, childenv, device, outpaths, signals
from .base.errors import UserError

# Order is the order shown in --help.
SUBCOMMAND_MODULES = (
    "launchbench.commands.compare",
    "launchbench.commands.counts",
    "launchbench.commands.history",
    "launchbench.commands.releases",
    "launchbench.commands.claims",
    "launchbench.commands.lockprobe",
    "launchbench.commands.pr",
    "launchbench.commands.asv",
    "launchbench.commands.asvplan",
    "launchbench.commands.asvseries",
    "launchbench.commands.refs",
    "launchbench.commands.mechanisms_procs",  # the mechanisms command (its parser: mechanisms_cli)
    "launchbench.commands.peers",
    "launchbench.commands.breakdown",
    "launchbench.commands.report",
    "launchbench.commands.site",
    "launchbench.commands.info",
    "launchbench.commands.wheelhouse",
)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose mistakes are one line (the usage is a --help away), as every
    other refusal of launchbench is; the subcommands' parsers are of this class too."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="launchbench",
        description="What a numba-cuda kernel launch costs, what launch-config "
        "capture adds, and whether LC-S kernels behave as promised.",
    )
    parser.add_argument("--version", action="version", version=f"launchbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    atomic.new_run()
    childenv.set_passed(getattr(args, "pass_env", None) or ())  # this invocation's, never an earlier one's
    outpaths.release()  # a plan left by a command called outside main (tests) is not this run's
    try:
        return _run(args)
    finally:
        outpaths.release()  # this run's output locks, so the next run on the same outputs may start


def _run(args) -> int:
    try:
        with signals.sigterm_as_interrupt():
            device.check_simulator_env()  # what --simulator sets, checked as an option is
            return signals.exit_status(int(args.func(args) or 0))
    except UserError as exc:
        print(f"launchbench: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a write outside the atomic helper (logs, plots, caches) the file system refused
        if exc.errno not in atomic.WRITE_ERRNOS:
            raise
        print(f"launchbench: error: {atomic.describe_write_error(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"launchbench: {signals.stopped_by()}", file=sys.stderr)
        return signals.exit_status(130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
