"""``launchbench refs PATH``: named branches for the three implementations.

asv takes git refs (``asv run baseline..v2``, ``asv compare baseline v2``),
so in the user's numba-cuda clone we create plain branches:

- ``v2``: the merge of pull request #804 (upstream commit 05922fc4),
- ``baseline``: its first parent (the main line just before v2),
- ``contextvar``: the head of pull request #288, fetched from the remote.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from ..base.errors import UserError

V2_COMMIT = "05922fc4"
CONTEXTVAR_PR = 288
#: A path every numba-cuda commit has; tells a numba-cuda clone from another repo.
MARKER_PATH = "numba_cuda"


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def _last_line(proc) -> str:
    lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


def check_clone(path) -> Path:
    """The clone's top level, or a one-line UserError saying what is wrong."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise UserError(f"{path} {'is not a folder' if path.exists() else 'does not exist'}; pass the path of a "
                        "numba-cuda clone (git clone https://github.com/NVIDIA/numba-cuda)")
    proc = _git(path, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise UserError(f"{path} is not a git repository; pass the path of a numba-cuda clone (git clone https://github.com/NVIDIA/numba-cuda)")
    top = Path(proc.stdout.strip())
    if _git(top, "cat-file", "-e", f"HEAD:{MARKER_PATH}").returncode != 0:
        raise UserError(f"{top} is not a numba-cuda clone (HEAD has no {MARKER_PATH}/); pass the path of a numba-cuda clone")
    return top


def resolve_commit(repo, rev: str, what: str) -> str:
    proc = _git(repo, "rev-parse", "-q", "--verify", f"{rev}^{{commit}}")
    if proc.returncode != 0:
        raise UserError(f"{what} commit {rev} is not in {repo}; update the clone (git -C {repo} fetch origin) "
                        f"or pass --{what.split()[0]} SHA")
    return proc.stdout.strip()


def fetch_pull_head(repo, remote: str, pr: int) -> tuple[str | None, str]:
    """Fetch ``pull/<pr>/head`` from *remote*: (sha, "") or (None, why not)."""
    proc = _git(repo, "fetch", "--no-tags", remote, f"pull/{pr}/head")
    if proc.returncode != 0:
        return None, _last_line(proc)
    sha = _git(repo, "rev-parse", "-q", "--verify", "FETCH_HEAD^{commit}")
    if sha.returncode != 0:
        return None, "FETCH_HEAD is not a commit"
    return sha.stdout.strip(), ""


def set_branch(repo, name: str, sha: str, force: bool) -> str:
    """Create (or move, with *force*) branch *name* at *sha*; returns what happened."""
    existing = _git(repo, "rev-parse", "-q", "--verify", f"refs/heads/{name}")
    if existing.returncode == 0:
        old = existing.stdout.strip()
        if old == sha:
            return "unchanged"
        if not force:
            raise UserError(f"branch {name} already exists in {repo} at {old[:10]}, not {sha[:10]}; pass --force to move it")
        current = _git(repo, "symbolic-ref", "-q", "--short", "HEAD").stdout.strip()
        if current == name:
            raise UserError(f"branch {name} is checked out in {repo}; switch to another branch before moving it")
    proc = _git(repo, "branch", "-f", name, sha)
    if proc.returncode != 0:
        raise UserError(f"could not create branch {name} in {repo}: {_last_line(proc)}")
    return "moved" if existing.returncode == 0 else "created"


def make_refs(path, v2=V2_COMMIT, baseline=None, remote="origin", pr=CONTEXTVAR_PR,
              fetch=True, force=False) -> dict:
    """Create the branches; returns {name: (sha or None, note)}."""
    repo = check_clone(path)
    v2_sha = resolve_commit(repo, v2, "v2")
    if baseline is None:
        proc = _git(repo, "rev-parse", "-q", "--verify", f"{v2_sha}^1")
        if proc.returncode != 0:
            raise UserError(f"v2 commit {v2_sha[:10]} has no parent in {repo} (shallow clone?); "
                            f"run git -C {repo} fetch --unshallow")
        baseline_sha = proc.stdout.strip()
    else:
        baseline_sha = resolve_commit(repo, baseline, "baseline")
    out = {
        "baseline": (baseline_sha, set_branch(repo, "baseline", baseline_sha, force)),
        "v2": (v2_sha, set_branch(repo, "v2", v2_sha, force)),
    }
    if not fetch:
        out["contextvar"] = (None, "skipped (--no-fetch)")
        return out
    sha, why = fetch_pull_head(repo, remote, pr)
    if sha is None:
        out["contextvar"] = (None, f"not created: could not fetch pull/{pr}/head from {remote} ({why}); "
                                   f"fetch it by hand: git fetch <github remote> pull/{pr}/head:contextvar")
    else:
        out["contextvar"] = (sha, set_branch(repo, "contextvar", sha, force))
    return out
