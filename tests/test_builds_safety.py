"""Builds and workers that run the code under test (CPU only): no credentials reach them, a killed
build leaves no process behind and no environment that looks finished, two runs building one
environment do not collide, and an archive cannot unpack outside its folder.

The builds run a stand-in interpreter made here (a shell script): ``-m venv DIR`` makes DIR with
itself as DIR/bin/python, ``-m pip`` records its environment, its pid and its parent's and, while
a ``hold`` file exists, starts a grandchild (``sleep``) and waits for a ``go`` file; anything else
runs the real Python.
"""
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from launchbench.base import archives, childenv
from launchbench.engine import progressbar, runner, runplan
from launchbench.environments import builds, envs
from launchbench.environments.variants import Base

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINUX = sys.platform.startswith("linux") and os.path.isdir("/proc/self")
SECRETS = {"GITHUB_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "y"}
CONTROL = "LAUNCHBENCH_TEST_CONTROL"  # an ordinary variable: it must pass
#: how long a test waits for something that must happen (a failure if it does not; not a speed bound)
PATIENCE_S = 120.0

FAKE_PYTHON = r"""#!/bin/sh
STATE={state}
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  env > "$STATE/venv-env.$$"
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0
fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  env > "$STATE/pip-env.$$"
  echo "$$ $PPID" >> "$STATE/pids"
  if [ -e "$STATE/hold" ]; then
    sleep 1000 &
    echo "$!" >> "$STATE/pids"
    echo started >> "$STATE/held"
    while [ ! -e "$STATE/go" ]; do sleep 0.05; done
    kill $!
  fi
  echo run >> "$STATE/pip-runs"
  exit 0
fi
exec {real} "$@"
"""


@pytest.fixture
def fake(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    exe = tmp_path / "python-standin"
    exe.write_text(FAKE_PYTHON.format(state=state, real=os.path.realpath(sys.executable)))
    exe.chmod(0o755)
    return str(exe), state


def _wait(predicate, what):
    deadline = time.monotonic() + PATIENCE_S
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Running and not a zombie (/proc)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _pids(state) -> set:
    path = state / "pids"
    return {int(p) for p in path.read_text().split()} if path.exists() else set()


def _lines(path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _ensure_script(env_dir, python):
    return ("import sys\n"
            "from launchbench.environments import envs\n"
            "from launchbench.environments.variants import Base\n"
            f"env = envs.EnvManager(env_dir={str(env_dir)!r}, python={python!r}, pins={{}}).ensure("
            "Base('wheel', 'numba-cuda==0.30.4'), 'v')\n"
            "print('ENV', env.path, env.built, flush=True)\n")


def _start_ensure(env_dir, python, err_path):
    """A run that ensures one environment in a process of its own; its stderr goes to *err_path*."""
    env = childenv.scrub(dict(os.environ), allow=())
    with open(err_path, "w") as err:
        return subprocess.Popen([sys.executable, "-c", _ensure_script(env_dir, python)], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=err, text=True)


# ---------------------------------------------------------------- credentials

def test_credential_names_are_told_apart_from_ordinary_ones():
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_PROFILE",
                 "ACTIONS_ID_TOKEN_REQUEST_URL", "NPM_TOKEN", "MY_API_KEY", "DB_PASSWORD", "CLIENT_SECRET_FILE",
                 "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_ID", "SSH_AUTH_SOCK", "hf_token"):
        assert childenv.is_secret(name), name
    for name in ("PATH", "HOME", "CUDA_VISIBLE_DEVICES", "PIP_INDEX_URL", "HTTPS_PROXY", "PYTHONHASHSEED",
                 "LAUNCHBENCH_PARENT_PID", "NUMBA_ENABLE_CUDASIM", "XDG_CACHE_HOME", "KEYBOARD_LAYOUT"):
        assert not childenv.is_secret(name), name
    env = {"PATH": "/bin", **SECRETS}
    assert childenv.scrub(env, allow=()) == {"PATH": "/bin"}
    assert childenv.scrub(env, allow=["GITHUB_TOKEN"]) == {"PATH": "/bin", "GITHUB_TOKEN": "x"}
    assert childenv.record(env, allow=["GITHUB_TOKEN", "NOT_SET_TOKEN"]) == {
        "withheld": ["AWS_SECRET_ACCESS_KEY"], "passed": ["GITHUB_TOKEN"]}


def test_pass_env_takes_names_only(capsys):
    from launchbench import cli

    for bad in ("", "GITHUB_TOKEN=x", "1X", "\u00e9"):
        with pytest.raises(SystemExit) as exc:  # argparse: the option's type refused it
            cli.main(["compare", "--simulator", "--pass-env", bad])
        rc, err = exc.value.code, capsys.readouterr().err
        assert rc == 2 and "--pass-env" in err and "not a variable name" in err, (bad, err)


@pytest.fixture
def secrets(monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(CONTROL, "1")
    childenv.set_passed(())
    yield
    childenv.set_passed(())


PROBE = '''
import json, os
with open({out!r}, "w") as fh:
    json.dump(sorted(os.environ), fh)

def launch(*args):
    return None
'''


def _probe_run(tmp_path, name):
    """One real worker (its target: a module that writes the names of its environment's variables)."""
    overlay = tmp_path / f"overlay-{name}"
    overlay.mkdir()
    os.symlink(os.path.join(ROOT, "launchbench"), overlay / "launchbench")
    out = tmp_path / f"{name}.json"
    (overlay / "envprobe.py").write_text(PROBE.format(out=str(out)))
    plan = runplan.Plan(variants=[("v", sys.executable, None)], reference="v", arg_counts=[0], loops={0: 2},
                       repeats=1, rounds=1, warmup=1, sample_target_s=0.0, simulator=False, affinity=None,
                       peers=False, overlay=str(overlay), log_dir=str(tmp_path), setup={"target": "envprobe:launch"},
                       log_prefix=f"{name}-r")
    outcome = runner.run(plan, progressbar.Progress(1, enabled=False))
    assert outcome.error is None and outcome.rounds_completed == 1, outcome.reason
    return set(json.loads(out.read_text()))


def test_a_worker_sees_no_token_nor_cloud_key_of_the_caller(secrets, tmp_path):
    seen = _probe_run(tmp_path, "plain")
    assert CONTROL in seen and not seen & set(SECRETS), sorted(seen & set(SECRETS))
    childenv.set_passed(["GITHUB_TOKEN"])  # --pass-env GITHUB_TOKEN
    seen = _probe_run(tmp_path, "passed")
    assert "GITHUB_TOKEN" in seen and "AWS_SECRET_ACCESS_KEY" not in seen


def _names(files) -> set:
    out = set()
    for path in files:
        out |= {line.split("=", 1)[0] for line in path.read_text().splitlines() if "=" in line}
    return out


def test_an_environment_build_and_a_wheel_build_see_no_token_nor_cloud_key(secrets, fake, tmp_path):
    python, state = fake
    env = envs.EnvManager(env_dir=str(tmp_path / "envs"), python=python, pins={}, log=lambda m: None).ensure(
        Base("wheel", "numba-cuda==0.30.4"), "v")
    assert env.built and os.path.isfile(os.path.join(env.path, envs.MARKER))
    cache = builds.WheelCache(cache_dir=str(tmp_path / "wheels"), python=python, pins={}, log=lambda m: None)
    cache._tag = "cp3x"
    assert cache.build_python().startswith(str(tmp_path / "wheels"))
    steps = sorted(state.glob("venv-env.*")) + sorted(state.glob("pip-env.*"))
    assert len(steps) == 4  # venv and pip install, for the env and for the build venv
    names = _names(steps)
    assert CONTROL in names and not names & set(SECRETS), sorted(names & set(SECRETS))


def test_compare_records_the_names_withheld_and_passed(secrets, tmp_path, capsys):
    """End to end under the simulator: the document names what the workers did not get, and what
    --pass-env gave them; never a value."""
    from launchbench import cli

    out = tmp_path / "c.json"
    rc = cli.main(["compare", "--simulator", "--variant", f"a=env:{sys.prefix}", "--variant", f"b=env:{sys.prefix}",
                   "--args", "0", "--loops", "3", "--repeats", "2", "--rounds", "2", "--warmup", "1",
                   "--target-ci", "0", "--max-time", "0", "--affinity", "none", "--no-report", "--quiet",
                   "--pass-env", "GITHUB_TOKEN", "-o", str(out)])
    assert rc == 0, capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert all(v["cuda_module_file"].endswith("numba_cuda/numba/cuda/__init__.py") for v in doc["variants"])
    rec = doc["child_env"]
    assert rec["passed"] == ["GITHUB_TOKEN"] and "AWS_SECRET_ACCESS_KEY" in rec["withheld"]
    assert "GITHUB_TOKEN" not in rec["withheld"] and not set(SECRETS.values()) & set(rec["withheld"] + rec["passed"])


# ---------------------------------------------------------------- a killed build, two builds at once

@pytest.mark.skipif(not LINUX, reason="process checks read /proc")
def test_a_killed_build_leaves_no_process_and_its_environment_is_rebuilt(fake, tmp_path):
    python, state = fake
    (state / "hold").write_text("")
    env_dir = tmp_path / "envs"
    parent = _start_ensure(env_dir, python, tmp_path / "err")
    try:
        _wait(lambda: _lines(state / "held") == 1, "the stand-in pip to start")
        pids = _pids(state)  # pip (a shell), its parent (the keeper) and the grandchild (sleep)
        assert len(pids) == 3 and all(_alive(p) for p in pids), pids
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        _wait(lambda: not any(_alive(p) for p in pids), f"the build's processes {sorted(pids)} to end")
    finally:
        parent.kill()
        parent.communicate()
        for pid in _pids(state):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    (state / "hold").unlink()
    (folder,) = [p for p in env_dir.iterdir() if p.is_dir()]
    assert not (folder / envs.MARKER).exists()  # unfinished: never taken for a built env
    said = []
    env = envs.EnvManager(env_dir=str(env_dir), python=python, pins={}, log=said.append).ensure(
        Base("wheel", "numba-cuda==0.30.4"), "v")
    assert env.built and env.path == str(folder) and (folder / envs.MARKER).exists()
    assert any("removing the unfinished environment" in s for s in said), said


@pytest.mark.skipif(not LINUX, reason="process checks read /proc")
def test_two_runs_building_one_environment_build_it_once(fake, tmp_path):
    python, state = fake
    (state / "hold").write_text("")
    env_dir = tmp_path / "envs"
    first = _start_ensure(env_dir, python, tmp_path / "err1")
    second = None
    try:
        _wait(lambda: _lines(state / "held") == 1, "the first build's pip to start")
        second = _start_ensure(env_dir, python, tmp_path / "err2")
        _wait(lambda: "waiting for another" in (tmp_path / "err2").read_text() or _lines(state / "held") > 1,
              "the second run to wait, or to build too")
        waited = (tmp_path / "err2").read_text()
        assert "waiting for another launchbench building the environment of v" in waited, waited
        (state / "go").write_text("")
        out1, _ = first.communicate(timeout=PATIENCE_S)
        out2, _ = second.communicate(timeout=PATIENCE_S)
    finally:
        (state / "go").write_text("")
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    err1, err2 = (tmp_path / "err1").read_text(), (tmp_path / "err2").read_text()
    assert first.returncode == 0 and second.returncode == 0, (err1, err2)
    path1, built1 = out1.split()[1:3]
    path2, built2 = out2.split()[1:3]
    assert path1 == path2 and (built1, built2) == ("True", "False")
    assert _lines(state / "pip-runs") == 1  # one pip install, not two into one folder
    assert "launchbench: building the environment" in err1 and "launchbench: building" not in err2
    log = [w for w in err1.split() if w.endswith(".build.log")]
    with open(log[0]) as fh:  # the log it names is its own
        assert fh.read().count("# launchbench env for v") == 1
    assert not any(_alive(p) for p in _pids(state))


# ---------------------------------------------------------------- archives

def _tar(members) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, target in members:
            info = tarfile.TarInfo(name)
            if kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, target
                tar.addfile(info)
            elif kind == "hardlink":
                info.type, info.linkname = tarfile.LNKTYPE, target
                tar.addfile(info)
            else:
                data = b"x"
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


@pytest.mark.parametrize("members, why", [
    ([("/tmp/launchbench-abs", "file", "")], "absolute path"),
    ([("a/../../escape", "file", "")], "'..' component"),
    ([("../escape", "file", "")], "'..' component"),
    ([("link", "symlink", "/etc")], "absolute path"),
    ([("a/link", "symlink", "../../outside")], "out of the folder"),
    ([("hard", "hardlink", "../outside")], "out of the folder"),
])
def test_an_archive_member_outside_its_folder_is_refused_before_it_is_written(tmp_path, members, why):
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(archives.UnsafeArchive, match=why):
        archives.extract_tar_stream(_tar([("ok.txt", "file", "")] + members), str(dest))
    assert not (tmp_path / "escape").exists() and not (tmp_path / "outside").exists()
    assert os.listdir(tmp_path) == ["dest"]


def test_an_ordinary_tree_unpacks(tmp_path):
    n = archives.extract_tar_stream(_tar([("a/b.txt", "file", ""), ("a/link", "symlink", "b.txt"),
                                          ("c/up", "symlink", "../a/b.txt")]), str(tmp_path))
    assert n == 3 and (tmp_path / "a" / "link").read_text() == "x" and (tmp_path / "c" / "up").read_text() == "x"


def test_a_commit_whose_tree_would_escape_does_not_build(tmp_path, monkeypatch):
    """The export of a commit goes through the same check (a stand-in ``git archive`` stream)."""
    class Archive:
        def __init__(self, *a, **k):
            self.stdout, self.returncode = _tar([("numba_cuda/VERSION", "file", ""), ("../evil", "file", "")]), 0

        def wait(self):
            return 0

    monkeypatch.setattr(builds.subprocess, "Popen", Archive)
    cache = builds.WheelCache(cache_dir=str(tmp_path / "c"), builder=lambda *a: 0, log=lambda m: None)
    src = tmp_path / "src"
    src.mkdir()
    with open(tmp_path / "log", "w") as log:
        why = cache._export("/clone", builds.Commit("a" * 40, "aaaaaaaa", "s", "d"), str(src), log)
    assert why and "'..' component" in why and not (tmp_path / "evil").exists()
