"""launchbench refs on scratch git repositories standing in for numba-cuda."""
import subprocess

import pytest

from launchbench.base.errors import UserError
from launchbench.cli import main
from launchbench.environments import refs

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(repo, *args):
    import os

    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                         env={**os.environ, **ENV})
    return out.stdout.strip()


def commit(repo, name, text):
    (repo / "numba_cuda").mkdir(exist_ok=True)
    (repo / "numba_cuda" / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def clone(tmp_path):
    """origin (bare, with refs/pull/288/head) and a clone with a merge commit on main."""
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    base = commit(work, "a.py", "a")
    git(work, "checkout", "-q", "-b", "feature")
    feature = commit(work, "b.py", "b")
    git(work, "checkout", "-q", "main")
    main_tip = commit(work, "c.py", "c")
    git(work, "merge", "-q", "--no-ff", "-m", "merge v2", "feature")
    merge = git(work, "rev-parse", "HEAD")
    git(work, "checkout", "-q", "-b", "pr", base)
    pr_head = commit(work, "contextvar.py", "cv")
    git(work, "checkout", "-q", "main")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    git(origin, "update-ref", "refs/pull/288/head", pr_head)
    git(origin, "branch", "-D", "pr")
    user = tmp_path / "user-clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(user)], check=True)
    return {"path": user, "merge": merge, "parent": main_tip, "feature": feature, "pr": pr_head}


def branch(repo, name):
    return git(repo, "rev-parse", f"refs/heads/{name}")


def test_creates_three_branches(clone):
    out = refs.make_refs(clone["path"], v2=clone["merge"][:10])
    repo = clone["path"]
    assert branch(repo, "v2") == clone["merge"]
    assert branch(repo, "baseline") == clone["parent"]  # first parent, not the feature side
    assert branch(repo, "contextvar") == clone["pr"]
    assert {name: note for name, (_, note) in out.items()} == {
        "baseline": "created", "v2": "created", "contextvar": "created"}


def test_rerun_is_unchanged(clone):
    refs.make_refs(clone["path"], v2=clone["merge"])
    out = refs.make_refs(clone["path"], v2=clone["merge"])
    assert all(note == "unchanged" for _, note in out.values())


def test_baseline_override(clone):
    refs.make_refs(clone["path"], v2=clone["merge"], baseline=clone["feature"], fetch=False)
    assert branch(clone["path"], "baseline") == clone["feature"]


def test_unfetchable_pull_request_is_reported_not_fatal(clone):
    out = refs.make_refs(clone["path"], v2=clone["merge"], pr=9999)
    sha, note = out["contextvar"]
    assert sha is None
    assert "pull/9999/head" in note and "\n" not in note
    assert branch(clone["path"], "v2") == clone["merge"]


def test_existing_branch_elsewhere_needs_force(clone):
    git(clone["path"], "branch", "v2", clone["parent"])
    with pytest.raises(UserError, match="--force"):
        refs.make_refs(clone["path"], v2=clone["merge"], fetch=False)
    out = refs.make_refs(clone["path"], v2=clone["merge"], fetch=False, force=True)
    assert out["v2"][1] == "moved"
    assert branch(clone["path"], "v2") == clone["merge"]


def test_missing_commit(clone):
    with pytest.raises(UserError, match="v2 commit 05922fc4 is not in"):
        refs.make_refs(clone["path"])


def test_not_a_git_repo(tmp_path):
    with pytest.raises(UserError, match="not a git repository"):
        refs.make_refs(tmp_path)


def test_missing_path(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        refs.make_refs(tmp_path / "nope")


def test_not_a_numba_cuda_clone(tmp_path):
    repo = tmp_path / "other"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "x").write_text("x")
    git(repo, "add", "x")
    git(repo, "commit", "-q", "-m", "x")
    with pytest.raises(UserError, match="not a numba-cuda clone"):
        refs.make_refs(repo)


def test_cli(clone, capsys):
    assert main(["refs", str(clone["path"]), "--v2", clone["merge"]]) == 0
    out = capsys.readouterr().out
    assert "baseline" in out and clone["merge"][:10] in out and "contextvar" in out


def test_cli_error_is_one_line(tmp_path, capsys):
    assert main(["refs", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("launchbench: error:") and "\n" not in err
