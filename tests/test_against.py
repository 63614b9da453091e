"""``launchbench against`` offline on a local clone: never a mirror clone into the checkout, never a
write into the package, one-line errors; asv itself is stubbed (no benchmark runs)."""
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import launchbench
from launchbench import cli
from launchbench.base import device
from launchbench.commands import asv
from launchbench.output import asvtools

PACKAGE = Path(launchbench.__file__).resolve().parent
GPU_GUARD = device.refuse_without_gpu


def inside(path, folder) -> bool:
    path, folder = Path(path).resolve(), Path(folder).resolve()
    return path == folder or folder in path.parents


@pytest.fixture
def clone(tmp_path):
    """A tiny local repository with branches baseline and v2."""
    repo = tmp_path / "numba-cuda"
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for branch in ("baseline", "v2"):
        (repo / "VERSION").write_text(branch)
        subprocess.run(git + ["add", "VERSION"], check=True)
        subprocess.run(git + ["commit", "-q", "-m", branch], check=True)
        subprocess.run(git + ["branch", branch], check=True)
    return repo


@pytest.fixture
def stub(tmp_path, monkeypatch):
    """asv recorded, not run; no subprocess at all (so no git clone, no network); run elsewhere."""
    calls = []

    class Done:
        returncode = 0

    def no_subprocess(*a, **k):
        raise AssertionError(f"against started a process: {a[:1]}")

    monkeypatch.setattr(asv, "run_asv", lambda cmd, **kw: calls.append(cmd) or Done())
    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    monkeypatch.setattr(device, "refuse_without_gpu", lambda **kw: None)  # as on a GPU machine
    monkeypatch.setattr(asv, "default_local_config", lambda: tmp_path / "dot-asv" / "asv.local.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # "from any working directory"
    return calls


def package_files():
    return sorted(str(p) for p in PACKAGE.rglob("*") if "__pycache__" not in p.parts)


def test_against_on_a_local_clone_builds_asv_continuous(clone, stub, tmp_path, capsys):
    before = package_files()
    rc = cli.main(["against", "baseline", "v2", "--repo", str(clone), "-b", "TimeLaunch", "-a", "repeat=3",
                   "--factor", "1.1", "--machine", "box"])
    assert rc == 0, capsys.readouterr().err
    (cmd,) = stub
    config = Path(cmd[cmd.index("--config") + 1])
    assert cmd[:3] == [sys.executable, "-m", "asv"] and cmd[cmd.index("--config") + 2] == "continuous"
    assert cmd[cmd.index("continuous") + 1:] == ["--factor", "1.1", "-b", "TimeLaunch", "-a", "repeat=3",
                                                 "--machine", "box", "baseline", "v2"]
    assert config == tmp_path / "dot-asv" / "asv.local.json"
    conf = json.loads(config.read_text())
    assert conf["repo"] == str(clone.resolve())  # a local path: asv uses it in place, no mirror clone
    for key in ("env_dir", "results_dir", "benchmark_dir"):
        assert os.path.isabs(conf[key]), key
    for key in ("env_dir", "results_dir"):
        assert not inside(conf[key], PACKAGE), (key, conf[key])
    assert not inside(config, PACKAGE)
    assert package_files() == before
    assert not (Path.cwd() / "numba-cuda").exists() and not (asv.ROOT / "numba-cuda").exists()


def test_against_uses_the_configs_local_repo_without_repo_option(clone, stub, tmp_path):
    base = asvtools.load_config(asv.DEFAULT_CONFIG)
    base["repo"] = os.path.relpath(clone, tmp_path)  # relative to the config's folder, as asv reads it
    base["benchmark_dir"] = str(asv.ROOT / "benchmarks")
    config = tmp_path / "my.asv.json"
    config.write_text(json.dumps(base))
    assert cli.main(["against", "baseline", "v2", "--config", str(config)]) == 0
    (cmd,) = stub
    conf = json.loads(Path(cmd[cmd.index("--config") + 1]).read_text())
    assert conf["repo"] == str(clone.resolve())
    assert conf["env_dir"] == str(tmp_path / ".asv" / "env")  # next to that config, not in the package


@pytest.mark.parametrize("argv, needle", [
    ([], "needs a local numba-cuda clone"),  # the checkout's config names the upstream URL
    (["--repo", "https://github.com/NVIDIA/numba-cuda.git"], "needs a local numba-cuda clone"),
    (["--repo", "git@github.com:NVIDIA/numba-cuda.git"], "needs a local numba-cuda clone"),
    (["--repo", "/no/such/clone"], "is not a git repository"),
    (["--repo", "{clone}", "--factor", "fast"], "--factor"),
])
def test_against_refuses_in_one_line_without_touching_anything(argv, needle, clone, stub, tmp_path, capsys):
    before = package_files()
    argv = [a.replace("{clone}", str(clone)) for a in argv]
    try:
        rc = cli.main(["against", "baseline", "v2", *argv])
    except SystemExit as exc:  # argparse: --factor's type (base/options.FACTOR) refused it
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith(("launchbench: error: ", "launchbench against: error: ")) and err.count("\n") == 1 \
        and needle in err, err
    assert stub == [] and not (tmp_path / "dot-asv").exists() and package_files() == before


def test_against_range_is_refused(clone, stub, capsys):
    assert cli.main(["against", "baseline..v2", "v2", "--repo", str(clone)]) == 2
    assert "not a single ref" in capsys.readouterr().err and stub == []


def test_installed_copy_writes_its_config_to_the_cache(tmp_path, monkeypatch):
    """Not run from the checkout (ROOT is site-packages): the config goes under ~/.cache/launchbench."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(asv, "ROOT", site)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert asv.against_config_path() == tmp_path / "cache" / "launchbench" / "asv" / "against.asv.json"


@pytest.mark.parametrize("simulator, needle", [
    ("0", "launchbench: error: no CUDA GPU is available (numba.cuda.is_available() is False); run on a machine "
          "with an NVIDIA GPU and driver\n"),
    ("1", "launchbench: error: the CUDA simulator is enabled (NUMBA_ENABLE_CUDASIM=1): its timings are not GPU "
          "launch costs; unset it\n"),
])
def test_against_without_a_gpu_stops_in_one_line_before_asv(simulator, needle, clone, stub, tmp_path, capsys,
                                                            monkeypatch):
    cuda = types.ModuleType("numba.cuda")
    cuda.is_available = lambda: False  # numba-cuda installed, no GPU (CI)
    numba = types.ModuleType("numba")
    numba.cuda = cuda
    monkeypatch.setitem(sys.modules, "numba", numba)
    monkeypatch.setitem(sys.modules, "numba.cuda", cuda)
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", simulator)
    monkeypatch.delenv("LAUNCHBENCH_CUDA_MODULE", raising=False)
    monkeypatch.setattr(device, "refuse_without_gpu", GPU_GUARD)
    before = package_files()
    assert cli.main(["against", "baseline", "v2", "--repo", str(clone)]) == 2
    assert capsys.readouterr().err == needle
    assert stub == [] and not (tmp_path / "dot-asv").exists() and package_files() == before
