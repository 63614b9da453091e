"""Per-variant environments: cache keys, reuse, --no-install, build failures, the overlay."""
import base64
import hashlib
import os
import subprocess
import sys
import zipfile

import pytest

from launchbench.base.errors import UserError
from launchbench.environments import envs
from launchbench.environments.variants import Base

WHEEL = Base("wheel", "numba-cuda==0.0.1")


def make_fake_wheel(directory, version="0.0.1"):
    """A stand-in 'numba-cuda' distribution (pure-Python wheel, no build needed)."""
    name = f"numba_cuda-{version}-py3-none-any.whl"
    dist = f"numba_cuda-{version}.dist-info"
    files = {
        "numba_cuda_standin/__init__.py": f"VERSION = {version!r}\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: numba-cuda\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    return str(directory)


def test_key_depends_on_everything_that_matters():
    args = (WHEEL, {"numba": "0.65.1"}, "3.11.9", sys.executable, {"extras": ""})
    key = envs.env_key(*args)
    assert key == envs.env_key(*args)
    assert key != envs.env_key(Base("wheel", "numba-cuda==0.0.2"), *args[1:])
    assert key != envs.env_key(WHEEL, {"numba": "0.66.0"}, *args[2:])
    assert key != envs.env_key(WHEEL, args[1], "3.12.1", *args[3:])
    assert key != envs.env_key(*args[:4], {"extras": "cu13"})
    assert key != envs.env_key(*args, identity="abc")


def test_git_identity_tracks_commits_and_edits(tmp_path):
    run = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)
    run("init", "-q")
    (tmp_path / "f").write_text("1")
    run("add", "f")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    clean = envs.git_identity(str(tmp_path))
    assert len(clean) == 40
    (tmp_path / "f").write_text("2")
    dirty = envs.git_identity(str(tmp_path))
    assert dirty.startswith(clean + "+dirty-")
    assert envs.git_identity(str(tmp_path / "nogit")) is None


def test_no_install_missing_env_is_a_clear_error(tmp_path):
    manager = envs.EnvManager(env_dir=str(tmp_path), pins={}, no_install=True)
    with pytest.raises(UserError, match="no environment for variant base .*--no-install"):
        manager.ensure(WHEEL, "base")


def test_existing_env_is_used_as_is(tmp_path):
    """env:DIR runs DIR's own interpreter (not the manager's), built by nobody."""
    import venv

    other = tmp_path / "other-env"
    venv.create(other, with_pip=False)
    env = envs.EnvManager(env_dir="/nonexistent").ensure(Base("env", str(other)), "here")
    assert not env.built
    prefix = subprocess.run([env.python, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert os.path.samefile(prefix, other)


def test_overlay_holds_only_launchbench(tmp_path):
    overlay = envs.make_overlay(str(tmp_path))
    assert os.listdir(overlay) == ["launchbench"]
    assert os.path.samefile(os.path.join(overlay, "launchbench"), envs.package_dir())
    import launchbench

    assert os.path.samefile(envs.package_dir(), os.path.dirname(launchbench.__file__))  # the package, not a layer


def test_python_minor_must_match(tmp_path):
    env = envs.Env(WHEEL, sys.prefix, sys.executable, built=False)
    assert envs.check_python_matches(env, "x") == sys.version.split()[0]


@pytest.mark.slow
def test_build_once_then_reuse_and_failures(tmp_path):
    wheels = make_fake_wheel(tmp_path)
    # site_from: the env sees this interpreter's site-packages (which hold a real numba-cuda)
    # after its own, as on the offline GPU machine; its own stand-in must win.
    manager = envs.EnvManager(env_dir=str(tmp_path / "envs"), pins={}, wheels=wheels, extras="",
                              site_from=sys.executable, log=lambda m: None)
    env = manager.ensure(WHEEL, "standin")
    assert env.built
    code = ("import numba_cuda_standin as m, sys, pytest, importlib.metadata as md; "
            "print(m.VERSION, md.version('numba-cuda'), sys.prefix)")
    out = subprocess.run([env.python, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0.0.1", "0.0.1", env.path]
    marker = os.path.join(env.path, envs.MARKER)
    stamp = os.stat(marker).st_mtime_ns
    again = manager.ensure(WHEEL, "standin")
    assert not again.built and again.path == env.path and os.stat(marker).st_mtime_ns == stamp
    # a different pin set is a different env; --no-install then finds the first one
    assert manager.location(WHEEL)[0] != envs.EnvManager(env_dir=manager.env_dir, pins={"x": "1"}).location(WHEEL)[0]
    reused = envs.EnvManager(env_dir=manager.env_dir, pins={}, wheels=wheels, extras="", site_from=sys.executable,
                             no_install=True).ensure(WHEEL, "standin")
    assert reused.path == env.path
    # a version pip cannot find: one-line error naming the log
    with pytest.raises(UserError) as info:
        manager.ensure(Base("wheel", "numba-cuda==9.9.9"), "missing")
    message = str(info.value)
    assert "failed (pip exit" in message and "\n" not in message
    log = message.rsplit("see the log: ", 1)[1]
    assert os.path.isfile(log) and "numba-cuda==9.9.9" in open(log).read()
    # the failed env has no marker, so it is never reused
    path = manager.location(Base("wheel", "numba-cuda==9.9.9"))[0]
    assert not os.path.exists(os.path.join(path, envs.MARKER))


@pytest.mark.slow
def test_env_gets_its_own_copy_when_the_host_site_has_the_same_version(tmp_path):
    """pip calls numba-cuda==X "already satisfied" when the appended host site has X and installs
    nothing; the env must still hold (and import) its own copy, as asv's envs must (docs/asv.md)."""
    host = tmp_path / "host"
    subprocess.run([sys.executable, "-m", "venv", str(host)], check=True, capture_output=True)
    host_python = str(host / "bin" / "python")
    wheels = make_fake_wheel(tmp_path)
    subprocess.run([host_python, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels,
                    "numba-cuda==0.0.1"], check=True, capture_output=True)
    manager = envs.EnvManager(env_dir=str(tmp_path / "envs"), pins={}, wheels=wheels, extras="",
                              site_from=host_python, log=lambda m: None)
    env = manager.ensure(WHEEL, "standin")
    code = "import numba_cuda_standin as m, os; print(os.path.realpath(m.__file__))"
    loaded = subprocess.run([env.python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded.startswith(os.path.realpath(env.path) + os.sep), loaded
    assert envs._dist_dir(env.python, "numba-cuda").startswith(os.path.realpath(env.path) + os.sep)


# ---------------------------------------------------------------- versions checked before any build

def _manager(tmp_path, **kwargs):
    messages = []
    manager = envs.EnvManager(env_dir=str(tmp_path / "envs"), log=messages.append, **kwargs)
    return manager, messages


def test_unknown_version_is_refused_before_any_env_is_built(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(envs, "index_versions", lambda python, name: asked.append(name) or ["0.30.4", "0.29.0"])
    monkeypatch.setattr(envs.EnvManager, "_build", lambda *a: pytest.fail("an environment was built"))
    manager, _ = _manager(tmp_path)
    bases = [Base("wheel", "numba-cuda==0.29.0"), Base("wheel", "numba-cuda==99.0.0")]
    with pytest.raises(UserError) as exc:
        manager.check_available(bases)
    assert str(exc.value) == ("numba-cuda==99.0.0 is not on the package index (latest: 0.30.4); "
                              "pick a released version")
    assert asked == ["numba-cuda"] and not (tmp_path / "envs").exists()
    manager.check_available([Base("wheel", "numba-cuda==0.29"), Base("wheel", "numba-cuda==0.30.4")])  # 0.29 is 0.29.0


def test_unreachable_index_warns_and_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(envs, "index_versions", lambda python, name: None)
    manager, messages = _manager(tmp_path)
    manager.check_available([Base("wheel", "numba-cuda==99.0.0")])
    assert len(messages) == 1 and "could not ask the package index" in messages[0] and "99.0.0" in messages[0]


def test_built_envs_and_no_install_ask_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(envs, "index_versions", lambda python, name: pytest.fail("the index was asked"))
    manager, _ = _manager(tmp_path, no_install=True)
    manager.check_available([Base("wheel", "numba-cuda==99.0.0")])
    manager, _ = _manager(tmp_path)
    path, _ = manager.location(WHEEL)
    os.makedirs(path)
    open(os.path.join(path, envs.MARKER), "w").close()
    manager.check_available([WHEEL, Base("env", sys.prefix)])


def test_offline_wheels_folder_is_the_index(tmp_path, monkeypatch):
    monkeypatch.setattr(envs, "index_versions", lambda python, name: pytest.fail("the index was asked offline"))
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("numba_cuda-0.30.4-py3-none-any.whl", "numba-cuda-0.29.0.tar.gz", "numba_cuda_mlir-0.6.0-py3-none-any.whl"):
        (wheels / name).write_text("")
    assert envs.folder_versions(str(wheels), "numba-cuda") == ["0.29.0", "0.30.4"]
    manager, _ = _manager(tmp_path, wheels=str(wheels))
    manager.check_available([Base("wheel", "numba-cuda==0.29.0"), Base("wheel", "numba-cuda==0.30.4")])
    with pytest.raises(UserError, match=r"numba-cuda==0.28.0 is not in --wheels .* \(latest: 0.30.4\); pick one it holds"):
        manager.check_available([Base("wheel", "numba-cuda==0.28.0")])
    with pytest.raises(UserError, match=r"numba-cuda-mlir==0.5.0 is not in --wheels .* \(latest: 0.6.0\)"):
        manager.check_available([Base("wheel", "numba-cuda-mlir==0.5.0", module="numba-cuda-mlir")])


def test_index_versions_reads_pip(monkeypatch):
    outputs = {
        "listed": ("numba-cuda (0.30.4)\nAvailable versions: 0.30.4, 0.30.3, 0.29.0\n", ""),
        "absent": ("", "ERROR: No matching distribution found for numba-cuda\n"),
        "offline": ("", "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError'\n"
                        "ERROR: No matching distribution found for numba-cuda\n"),
        "old pip": ("", "ERROR: unknown command \"index\"\n"),
    }
    seen = []

    def fake_run(cmd, **kwargs):
        seen.append(cmd)
        out, err = outputs[case]
        return subprocess.CompletedProcess(cmd, 0 if out else 1, out, err)

    monkeypatch.setattr(envs.subprocess, "run", fake_run)
    expected = {"listed": ["0.30.4", "0.30.3", "0.29.0"], "absent": [], "offline": None, "old pip": None}
    for case, want in expected.items():
        assert envs.index_versions("py", "numba-cuda") == want, case
    assert seen[0][:6] == ["py", "-m", "pip", "index", "versions", "numba-cuda"] and "--pre" in seen[0]


def test_same_version_and_newest():
    assert envs.same_version("0.30", "0.30.0") and not envs.same_version("0.30", "0.30.4")
    assert envs.same_version("0.31.0rc1", "0.31.0RC1") and not envs.same_version("0.31.0rc1", "0.31.0")
    assert envs.newest(["0.9.0", "0.30.4", "0.31.0rc1", "0.10.1"]) == "0.30.4"


def test_commit_environments_are_built_several_at_once_within_the_cpus():
    from launchbench.environments.commits import env_jobs

    assert env_jobs(40, cpus=16) == 8 and env_jobs(3, cpus=16) == 3  # half the CPUs, at most 8, at most the envs
    assert env_jobs(40, cpus=2) == 1 and env_jobs(0, cpus=16) == 1  # CI's two CPUs: one at a time
