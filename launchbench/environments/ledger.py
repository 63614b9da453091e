"""A release ledger: a tiny git repo standing in for numba-cuda's history.

asv keys every result by a commit of the configured repo. To measure
*released* wheels (already installed in ready environments, e.g. on a
machine with no network), we give asv a repo with one commit per release
(a ``VERSION`` file), a tag ``v<version>`` on each, and named branches such
as ``baseline`` and ``v2``; ``asv run --set-commit-hash`` files each
release's results under its commit and ``asv compare baseline v2`` works as
usual. Re-running reuses the existing commits, so results accumulate.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..base.errors import UserError

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "launchbench", "GIT_AUTHOR_EMAIL": "launchbench@localhost",
    "GIT_COMMITTER_NAME": "launchbench", "GIT_COMMITTER_EMAIL": "launchbench@localhost",
    # Fixed dates: the same releases give the same commit ids on every machine.
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00+0000",
}


def git(repo, *args, check=True) -> str:
    env = {**os.environ, **_GIT_ENV}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise UserError(f"git {' '.join(args)} failed in {repo}: {msg[-1] if msg else 'exit %d' % proc.returncode}")
    return proc.stdout.strip()


def version_key(version: str):
    """Sort key for release numbers such as 0.29.0 or 0.30.4 (numeric parts first)."""
    parts = []
    for piece in version.replace("-", ".").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append((int(digits) if digits else -1, piece))
    return parts


def ensure_ledger(path, versions, branches) -> dict:
    """Create or extend the ledger; return {version: commit sha}.

    *branches* maps a branch name (``baseline``) to a version in *versions*.
    """
    path = Path(path)
    if path.exists() and not (path / ".git").exists():
        raise UserError(f"{path} exists and is not a release ledger (no .git); remove it or pass another --ledger")
    if not path.exists():
        path.mkdir(parents=True)
        git(path, "init", "-q")
        git(path, "checkout", "-q", "-b", "ledger")
    commits = {}
    for version in sorted(set(versions), key=version_key):
        tag = f"v{version}"
        sha = git(path, "rev-parse", "-q", "--verify", f"refs/tags/{tag}^{{commit}}", check=False)
        if not sha:
            (path / "VERSION").write_text(version + "\n", encoding="utf-8")
            git(path, "add", "VERSION")
            git(path, "commit", "-q", "--allow-empty", "-m", f"numba-cuda {version} (released wheel)")
            git(path, "tag", tag)
            sha = git(path, "rev-parse", "HEAD")
        commits[version] = sha
    for name, version in branches.items():
        if version not in commits:
            raise UserError(f"branch {name}: numba-cuda {version} is not in the ledger; give an --env for it")
        current = git(path, "rev-parse", "--abbrev-ref", "HEAD")
        if name == current:
            git(path, "reset", "-q", "--hard", commits[version])
        else:
            git(path, "branch", "-f", name, commits[version])
    return commits
