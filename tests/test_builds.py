"""launchbench.environments.builds on a small stand-in numba-cuda repository made here (CI has no clone)."""
import json
import os
import subprocess
import zipfile

import pytest

from launchbench.base.errors import UserError
from launchbench.environments import builds

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}

SETUP_PY = """\
import pathlib
from setuptools import setup
version = (pathlib.Path(__file__).parent / "numba_cuda" / "VERSION").read_text().strip()
setup(name="numba-cuda", version=version, packages=["numba_cuda"],
      package_data={"numba_cuda": ["VERSION"]})
"""


def git(repo, *args):
    env = dict(os.environ, **GIT_ENV)
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def commit(repo, message, files):
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """main: v1 -> tests-only -> VERSION-only -> code -> merge(side) -> top-level tests; tag v1 and v2."""
    r = tmp_path_factory.mktemp("stand-in") / "numba-cuda"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    shas = {}
    shas["v1"] = commit(r, "initial", {
        "setup.py": SETUP_PY, "numba_cuda/VERSION": "0.1.0\n",
        "numba_cuda/__init__.py": "X = 1\n",
        "numba_cuda/numba/cuda/tests/test_x.py": "def test(): pass\n",
        "numba_cuda/numba/cuda/__init__.py": "", "numba_cuda/numba/cuda/dispatcher.py": "",
        "tests/test_top.py": "def test(): pass\n",
    })
    git(r, "tag", "v1")
    shas["tests"] = commit(r, "tests only", {"numba_cuda/numba/cuda/tests/test_x.py": "def test(): assert 1\n"})
    shas["version"] = commit(r, "bump version", {"numba_cuda/VERSION": "0.2.0\n"})
    shas["code"] = commit(r, "code change", {"numba_cuda/__init__.py": "X = 2\n"})
    git(r, "checkout", "-q", "-b", "side")
    shas["side"] = commit(r, "side change", {"numba_cuda/side.py": "Y = 1\n"})
    git(r, "checkout", "-q", "main")
    shas["main2"] = commit(r, "main change", {"numba_cuda/other.py": "Z = 1\n"})
    env = dict(os.environ, **GIT_ENV)
    subprocess.run(["git", "-C", str(r), "merge", "-q", "--no-ff", "-m", "merge side", "side"],
                   check=True, env=env, capture_output=True)
    shas["merge"] = git(r, "rev-parse", "HEAD")
    shas["toptests"] = commit(r, "top-level tests", {"tests/test_top.py": "def test(): assert 1\n"})
    git(r, "tag", "v2")
    return str(r), shas


# ---------------------------------------------------------------- ranges and history

@pytest.mark.parametrize("text", ["A", "..B", "A...B", "A..", "", "..", "A..B..C", "A....B"])
def test_parse_range_rejects(text):
    with pytest.raises(UserError) as exc:
        builds.parse_range(text)
    assert "\n" not in str(exc.value) and "A..B" in str(exc.value)


def test_parse_range():
    assert builds.parse_range("v0.29.0..v0.30.4") == ("v0.29.0", "v0.30.4")
    assert builds.parse_range(" a1b2..HEAD~1 ") == ("a1b2", "HEAD~1")


def test_first_parent_order_skips_merged_branch(repo):
    clone, shas = repo
    commits = builds.first_parent_commits(clone, "v1", "v2")
    assert [c.sha for c in commits] == [shas[k] for k in ("v1", "tests", "version", "code", "main2", "merge", "toptests")]
    assert shas["side"] not in [c.sha for c in commits]
    first = commits[0]
    assert first.subject == "initial" and first.short == first.sha[:8]
    assert first.date[:4].isdigit() and "T" in first.date
    assert builds.resolve(clone, "v2") == commits[-1]


@pytest.mark.parametrize("a,b,words", [
    ("nope", "v2", "unknown revision"),
    ("v1", "nope", "unknown revision"),
    ("v2", "v1", "not an ancestor"),
    ("v1", "v1", "empty"),
])
def test_first_parent_errors(repo, a, b, words):
    with pytest.raises(UserError) as exc:
        builds.first_parent_commits(repo[0], a, b)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_first_parent_off_main_line(repo):
    clone, shas = repo
    with pytest.raises(UserError, match="first-parent"):
        builds.first_parent_commits(clone, shas["side"], "v2")


def test_not_a_repo_or_not_numba_cuda(tmp_path):
    with pytest.raises(UserError, match="not a git repository"):
        builds.first_parent_commits(str(tmp_path), "a", "b")
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    commit(other, "one", {"README": "x"})
    commit(other, "two", {"README": "y"})
    with pytest.raises(UserError, match="not a numba-cuda checkout"):
        builds.first_parent_commits(str(other), "HEAD~1", "HEAD")


def test_code_identity(repo):
    clone, shas = repo
    ident = {k: builds.code_identity(clone, v) for k, v in shas.items()}
    assert ident["tests"] == ident["v1"]      # numba_cuda/**/tests/ only
    assert ident["version"] == ident["v1"]    # numba_cuda/VERSION only
    assert ident["code"] != ident["version"]  # real code change
    assert ident["main2"] != ident["code"]
    assert ident["merge"] != ident["main2"]   # brings side.py in
    assert ident["toptests"] == ident["merge"]  # top-level tests/ is not installed
    with pytest.raises(UserError, match="unknown revision"):
        builds.code_identity(clone, "0" * 40)


# ---------------------------------------------------------------- the cache

class FakeBuilder:
    """Writes a wheel named from the exported VERSION, or fails on request."""

    def __init__(self, fail=False):
        self.calls = []
        self.fail = fail

    def __call__(self, src, out_dir, log):
        version = open(os.path.join(src, "numba_cuda", "VERSION")).read().strip()
        self.calls.append(version)
        log.write("fake build\n")
        if self.fail:
            log.write("error: boom\n")
            return 1
        name = f"numba_cuda-{version}-py3-none-any.whl"
        with zipfile.ZipFile(os.path.join(out_dir, name), "w") as zf:
            zf.writestr("numba_cuda/VERSION", version)
        return 0


def test_cache_keyed_by_sha(repo, tmp_path):
    clone, shas = repo
    fake = FakeBuilder()
    cache = builds.WheelCache(cache_dir=str(tmp_path / "wheels"), builder=fake, log=lambda m: None)
    c = builds.resolve(clone, shas["code"])
    assert cache.path_for(c.sha) is None
    wheel = cache.build(clone, c)
    assert fake.calls == [f"0.2.0+g{c.sha[:8]}"]
    assert os.path.dirname(wheel) == str(tmp_path / "wheels" / c.sha)
    assert os.path.basename(wheel) == f"numba_cuda-0.2.0+g{c.sha[:8]}-py3-none-any.whl"
    marker = json.load(open(os.path.join(os.path.dirname(wheel), builds.MARKER)))
    assert marker["sha"] == c.sha and marker["wheel"] == os.path.basename(wheel)
    assert os.path.isfile(os.path.join(os.path.dirname(wheel), "build.log"))
    assert cache.path_for(c.sha) == wheel
    # a second call (and a new cache object on the same folder) builds nothing
    assert cache.build(clone, c) == wheel
    again = builds.WheelCache(cache_dir=str(tmp_path / "wheels"), builder=fake, log=lambda m: None)
    assert again.build(clone, c) == wheel
    assert len(fake.calls) == 1
    # another SHA is another entry
    other = builds.resolve(clone, shas["v1"])
    assert cache.build(clone, other) != wheel and len(fake.calls) == 2


def test_unfinished_build_is_rebuilt(repo, tmp_path):
    clone, shas = repo
    fake = FakeBuilder()
    cache = builds.WheelCache(cache_dir=str(tmp_path), builder=fake, log=lambda m: None)
    c = builds.resolve(clone, shas["v1"])
    wheel = cache.build(clone, c)
    os.unlink(os.path.join(tmp_path, c.sha, builds.MARKER))  # as if killed before the marker
    assert cache.path_for(c.sha) is None
    assert cache.build(clone, c) == wheel and len(fake.calls) == 2


def test_wheel_of_another_python_is_not_returned(repo, tmp_path):
    clone, shas = repo
    fake = FakeBuilder()
    cache = builds.WheelCache(cache_dir=str(tmp_path), builder=fake, log=lambda m: None)
    c = builds.resolve(clone, shas["v1"])
    cache.build(clone, c)
    other = builds.WheelCache(cache_dir=str(tmp_path), builder=fake, log=lambda m: None)
    other._tag = "cp399"
    assert other.path_for(c.sha) is None


def test_failed_build_raises_with_log(repo, tmp_path):
    clone, shas = repo
    cache = builds.WheelCache(cache_dir=str(tmp_path), builder=FakeBuilder(fail=True), log=lambda m: None)
    c = builds.resolve(clone, shas["code"])
    with pytest.raises(builds.BuildFailed) as exc:
        cache.build(clone, c)
    err = exc.value
    assert err.commit == c and err.log_path == os.path.join(tmp_path, c.sha, "build.log")
    assert "\n" not in err.message and err.log_path in err.message and c.short in err.message
    assert "error: boom" in open(err.log_path).read()
    assert cache.path_for(c.sha) is None


def test_a_full_disk_while_building_is_not_a_failed_commit(repo, tmp_path):
    """ENOSPC while exporting or building stops the run (cli.main words it in one line)
    instead of marking every commit "does not build" and going on."""
    import errno

    def full(src, out_dir, log):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.path.join(out_dir, "x.whl"))

    clone, shas = repo
    cache = builds.WheelCache(cache_dir=str(tmp_path), builder=full, log=lambda m: None)
    c = builds.resolve(clone, shas["code"])
    with pytest.raises(OSError) as exc:
        cache.build(clone, c)
    assert exc.value.errno == errno.ENOSPC and not isinstance(exc.value, builds.BuildFailed)
    assert cache.path_for(c.sha) is None


def test_commit_without_version_file_fails(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q")
    commit(r, "one", {"numba_cuda/__init__.py": "", "setup.py": SETUP_PY})
    fake = FakeBuilder()
    cache = builds.WheelCache(cache_dir=str(tmp_path / "c"), builder=fake, log=lambda m: None)
    with pytest.raises(builds.BuildFailed, match="VERSION"):
        cache.build(str(r), builds.resolve(str(r), "HEAD"))
    assert fake.calls == []


def test_local_version():
    assert builds.local_version("0.30.0\n", "abcdef0123456789") == "0.30.0+gabcdef01"
    assert builds.local_version("0.30.0+dev", "abcdef0123456789") == "0.30.0+dev.gabcdef01"


def test_default_cache_dir_respects_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert builds.default_cache_dir() == os.path.join(str(tmp_path), "launchbench", "wheels")
    assert builds.WheelCache(log=lambda m: None).cache_dir == os.path.join(str(tmp_path), "launchbench", "wheels")


def test_offline_pip_commands(tmp_path, monkeypatch):
    """wheels=DIR makes every pip call offline (--no-index --find-links DIR)."""
    seen = []

    def fake_run(cmd, **kw):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    wheels = tmp_path / "wh"
    wheels.mkdir()
    cache = builds.WheelCache(cache_dir=str(tmp_path / "c"), wheels=str(wheels), pins={"numpy": "2.3.5"},
                              log=lambda m: None)
    cache._tag = "cp311"
    monkeypatch.setattr(builds.subprocess, "run", fake_run)
    monkeypatch.setattr(builds.lifeline, "run_group", lambda cmd, **kw: fake_run(cmd, **kw).returncode)  # build steps
    with open(tmp_path / "log", "w") as log:
        cache._pip_wheel(str(tmp_path / "src"), str(tmp_path / "out"), log)
    venv, install, wheel = seen
    assert venv[1:3] == ["-m", "venv"]
    assert install[1:4] == ["-m", "pip", "install"] and install[-3:] == ["setuptools", "wheel", "numpy==2.3.5"]
    assert wheel[3] == "wheel" and "--no-build-isolation" in wheel and "--no-deps" in wheel
    for cmd in (install, wheel):
        i = cmd.index("--no-index")
        assert cmd[i + 1:i + 3] == ["--find-links", str(wheels)]
    assert venv[-1].startswith(str(tmp_path / "c" / "build-envs" / "cp311-"))
    marker = json.load(open(os.path.join(venv[-1], builds.BUILD_ENV_MARKER)))
    assert marker["requirements"][-1] == "numpy==2.3.5"


def test_real_build(repo, tmp_path):
    """One real build: the build venv (setuptools, wheel, numpy from the index) and pip wheel of the stand-in."""
    clone, shas = repo
    cache = builds.WheelCache(cache_dir=str(tmp_path), log=lambda m: None)
    c = builds.resolve(clone, shas["code"])
    wheel = cache.build(clone, c)
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("numba_cuda/VERSION").decode().strip() == f"0.2.0+g{c.sha[:8]}"
