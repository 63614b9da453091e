"""A release ledger: a tiny git repo standing in for numba-cuda's history.

asv keys every result by a commit of the configured repo. To measure
*released* wheels (already installed in ready environments, e.g. on a
machine with no network), we give asv a repo with one commit per release
(a ``VERSION`` file), a tag ``v<version>`` on each, and named branches such
as ``baseline`` and ``v2``; ``asv run --set-commit-hash`` files each
release's results under its commit and ``asv compare baseline v2`` works as
usual. Re-running reuses the existing commits, so results accumulate.

A *series* ledger (``ensure_series_ledger``, for ``launchbench asv-series``) holds several
projects: one branch per project, named after it, each a chain of that project's releases in
version order, tagged ``<project>-v<version>``; ``asv publish`` graphs each branch's commits.
Its commits are built with git's plumbing (no work tree is touched) from fixed contents and
dates, so the same releases give the same commit ids on every machine, and results filed
under them can be published again from a rebuilt ledger.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import subprocess
from pathlib import Path

from ..base.errors import UserError

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "launchbench", "GIT_AUTHOR_EMAIL": "launchbench@localhost",
    "GIT_COMMITTER_NAME": "launchbench", "GIT_COMMITTER_EMAIL": "launchbench@localhost",
    # Fixed dates: the same releases give the same commit ids on every machine.
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00+0000",
}


def git(repo, *args, check=True, stdin: str | None = None, date: str | None = None) -> str:
    env = {**os.environ, **_GIT_ENV, **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, input=stdin)
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


def _open(path: Path, bare: bool = False) -> bool:
    """Make *path* a git repository (*bare*: without a work tree) unless it is one; True when created."""
    if path.exists() and not ((path / ".git").exists() or (path / "objects").is_dir()):
        raise UserError(f"{path} exists and is not a release ledger (no .git); remove it or pass another --ledger")
    if path.exists():
        return False
    path.mkdir(parents=True)
    git(path, "init", "-q", *(["--bare"] if bare else []))
    return True


def ensure_ledger(path, versions, branches) -> dict:
    """Create or extend the ledger; return {version: commit sha}.

    *branches* maps a branch name (``baseline``) to a version in *versions*.
    """
    path = Path(path)
    if _open(path):
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


#: what a project name or version may be to name a branch or tag (git check-ref-format's rules, narrowed)
_REF_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")


def series_tag(project: str, version: str) -> str:
    return f"{project}-v{version}"


def series_date(project: str, index: int) -> str:
    """The fixed date of a project's *index*-th release commit: a second apart from a day of the project's
    own (from its name). asv numbers commits in date order, so each project's releases stay together and
    the graph of one shows no other project's tags; these are no release dates."""
    day = int(hashlib.sha1(project.encode("utf-8")).hexdigest(), 16) % 365
    when = _dt.datetime(2025, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(days=day, seconds=index)
    return when.isoformat()


def ensure_series_ledger(path, project: str, versions) -> dict:
    """Create or extend branch *project* of the series ledger (a bare repository) at *path*; return
    {version: commit sha}.

    A release already tagged keeps its commit. New releases are appended in version order, so one
    older than the branch's newest is refused: the branch would no longer run in release order.
    """
    path = Path(path)
    bad = [t for t in (project, *versions) if not _REF_PART.fullmatch(t) or ".." in t or t.endswith(".")]
    if bad:
        raise UserError(f"{bad[0]!r} cannot name a ledger branch or tag; give a project such as numba-cuda and "
                        "versions such as 0.30.4")
    created = _open(path, bare=True)
    branch = f"refs/heads/{project}"
    tip = git(path, "rev-parse", "-q", "--verify", branch + "^{commit}", check=False)
    commits, new = {}, []
    for version in sorted(set(versions), key=version_key):
        sha = git(path, "rev-parse", "-q", "--verify", f"refs/tags/{series_tag(project, version)}^{{commit}}",
                  check=False)
        if sha:
            commits[version] = sha
        else:
            new.append(version)
    if new and tip:
        newest = git(path, "show", f"{tip}:VERSION").split()[-1]
        if version_key(new[0]) < version_key(newest):
            raise UserError(f"ledger {path}: branch {project} ends at {newest}, and {new[0]} is older; the branch "
                            "must run in release order: pass a new --ledger (the same releases give the same commits)")
    for version in new:
        blob = git(path, "hash-object", "-w", "--stdin", stdin=f"{project} {version}\n")
        tree = git(path, "mktree", stdin=f"100644 blob {blob}\tVERSION\n")
        parent = ["-p", tip] if tip else []
        sha = git(path, "commit-tree", tree, *parent, "-m", f"{project} {version} (released wheel)",
                  date=series_date(project, int(git(path, "rev-list", "--count", tip)) if tip else 0))
        git(path, "update-ref", branch, sha, *([tip] if tip else []))
        git(path, "tag", series_tag(project, version), sha)
        commits[version] = tip = sha
    if created:
        git(path, "symbolic-ref", "HEAD", branch)
    return commits


def branches(path) -> list[str]:
    """The ledger's branches (asv publish graphs the commits of the branches its config names)."""
    return git(path, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()
