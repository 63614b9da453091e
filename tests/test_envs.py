"""Per-variant environments: cache keys, reuse, --no-install, build failures, the overlay."""
import base64
import hashlib
import os
import subprocess
import sys
import zipfile

import pytest

from launchbench.environments import envs
from launchbench.base.errors import UserError
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


def test_existing_env_is_used_as_is():
    env = envs.EnvManager(env_dir="/nonexistent").ensure(Base("env", sys.prefix), "here")
    assert os.path.samefile(env.python, sys.executable) or os.path.exists(env.python)
    assert not env.built


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
