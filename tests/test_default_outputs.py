"""What a default run writes into the folder it runs in is git-ignored: a run in the checkout
must not leave files that `git add -A` would commit."""
import argparse
import os
import shutil
import subprocess

import pytest

from launchbench import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _defaults() -> set:
    parser = cli.build_parser()
    out = set()
    for action in parser._actions:  # noqa: SLF001 - argparse keeps subparsers here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for sub in action.choices.values():
                for a in sub._actions:  # noqa: SLF001
                    if set(a.option_strings) & {"--output", "--out"} and isinstance(a.default, str):
                        out.add(a.default)
    return out


@pytest.mark.skipif(shutil.which("git") is None or not os.path.isdir(os.path.join(ROOT, ".git")),
                    reason="needs git and a checkout")
def test_default_outputs_are_ignored():
    defaults = _defaults()
    assert {"launchbench-compare.json", "launchbench-counts.json", "launchbench-pr"} <= defaults, defaults
    paths = []
    for d in defaults:
        if os.path.isabs(d):  # asv-config's config inside the checkout's .asv/
            d = os.path.relpath(d, ROOT)
            if d.startswith(".."):
                continue
        stem = os.path.splitext(d)[0]
        paths += [d, stem + ".md", stem + ".png", stem + ".logs/worker.log"] if d.endswith(".json") else [d + "/pr.md"]
    for path in paths:
        rc = subprocess.run(["git", "-C", ROOT, "check-ignore", "-q", "--no-index", path]).returncode
        assert rc == 0, f"{path} (a default output) is not git-ignored"
