"""Per-commit builds for real: asv builds numba-cuda from source in its own virtualenv.

A git repository is made from numba-cuda's real source distribution (0.24.0,
the newest sdist on the package index) plus a second commit on top; asv,
configured by the project's asv.conf.json (only repo and the output
directories changed, through launchbench's derived config), creates a
virtualenv with the matrix pins, builds each commit's wheel with the
configured build command (C extensions included), installs it with the cu13
extra and smoke-runs a slice of the suite under the simulator. Needs the
package index (CI has it); about a minute with a warm pip cache.
"""
import json
import os
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

from launchbench.output import asvtools

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
SDIST_VERSION = "0.24.0"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


def numba_cuda_source_repo(tmp: Path) -> Path:
    """A git repo whose two commits are numba-cuda 0.24.0's sdist and a trivial change."""
    dl = tmp / "sdist"
    proc = subprocess.run([PY, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", "numba-cuda",
                           f"numba-cuda=={SDIST_VERSION}", "-d", str(dl)], capture_output=True, text=True)
    assert proc.returncode == 0, f"pip download of the numba-cuda sdist failed (needs the package index): {proc.stderr[-2000:]}"
    (archive,) = dl.glob("numba_cuda-*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp / "x", filter="data")
    (src,) = (tmp / "x").iterdir()
    repo = tmp / "numba-cuda"
    src.rename(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"numba-cuda {SDIST_VERSION} sdist")
    with open(repo / "README.md", "a") as fh:
        fh.write("\nlaunchbench test commit\n")
    git(repo, "commit", "-q", "-am", "a second commit")
    return repo


@pytest.mark.slow
def test_asv_builds_each_commit_and_runs(tmp_path):
    repo = numba_cuda_source_repo(tmp_path)
    conf = asvtools.derive_config(asvtools.load_config(ROOT / "asv.conf.json"), ROOT, repo=str(repo),
                                  results_dir=tmp_path / "results", env_dir=tmp_path / "env",
                                  html_dir=tmp_path / "html")
    config = asvtools.write_asv_config(conf, tmp_path / "asv.json")
    env = {**os.environ, "HOME": str(tmp_path), "NUMBA_ENABLE_CUDASIM": "1", "LAUNCHBENCH_SMOKE": "1",
           "PATH": f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    cache = Path(os.environ.get("PIP_CACHE_DIR", Path.home() / ".cache" / "pip"))
    env["PIP_CACHE_DIR"] = str(cache)  # HOME moved; keep the real pip cache
    asv = [PY, "-m", "asv", "--config", str(config)]
    subprocess.run([*asv, "machine", "--yes", "--machine", "SIMULATOR-SMOKE"], env=env, check=True, capture_output=True)
    proc = subprocess.run([*asv, "run", "--machine", "SIMULATOR-SMOKE", "--show-stderr",
                           "-b", r"time_launch\(1, '\[1, 1\]'[,)]", "-b", "TrackRunKind", "ALL"],
                          env=env, capture_output=True, text=True, timeout=900)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    heads = [git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")]
    for sha in heads:
        assert f"Building {sha[:8]}" in log or f"For numba-cuda commit {sha[:8]}" in log

    # One virtualenv with the matrix pins, holding the numba-cuda asv built (with its C extensions).
    (envdir,) = [p for p in (tmp_path / "env").iterdir() if (p / "bin" / "python").exists()]
    probe = subprocess.run([str(envdir / "bin" / "python"), "-c",
                            "import importlib.metadata as m, numba_cuda.numba.cuda.cext._dispatcher as d; "
                            "print(m.version('numba-cuda'), d.__file__)"],
                           capture_output=True, text=True, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"})
    assert probe.returncode == 0, probe.stderr[-2000:]
    version, ext = probe.stdout.split()
    assert version == SDIST_VERSION and ext.endswith(".so") and str(envdir) in ext

    machine = tmp_path / "results" / "SIMULATOR-SMOKE"
    for sha in heads:
        (result_file,) = machine.glob(f"{sha[:8]}-virtualenv-*.json")
        for pin in ("numba0.65.1", "numpy2.3.5", "cuda-core0.7.0"):
            assert pin in result_file.name
        results = json.loads(result_file.read_text())["results"]
        assert results["bench_launch.TrackRunKind.track_cuda_simulator"][0] == [1]
        timings = results["bench_launch.TimeLaunchPreconfigured.time_launch"][0]
        measured = [t for t in timings if t is not None and t == t]
        assert len(measured) == 1 and measured[0] > 0

    out = subprocess.run([*asv, "compare", "--machine", "SIMULATOR-SMOKE", heads[0], heads[1]],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert "TimeLaunchPreconfigured.time_launch(1, '[1, 1]', 'wall us, no reference')" in out


@pytest.mark.slow
def test_asv_builds_each_commit_offline_from_a_wheel_folder(tmp_path):
    """The GPU machine's path (no network): ``launchbench wheelhouse --asv-builds`` fills a folder once,
    then asv builds and runs each commit with every pip call local (``asv-config --offline``), the commit's
    wheel installed without its CUDA wheels and the host site appended (``--host-site``). A package
    missing from the folder fails the env creation or the build here."""
    repo = numba_cuda_source_repo(tmp_path)
    wheels = tmp_path / "wheels"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    fill = subprocess.run([PY, "-m", "launchbench", "wheelhouse", str(wheels), "--asv-builds", "--quiet",
                           "--python-version", version, "--variant", f"repo:{repo}"],
                          capture_output=True, text=True)
    assert fill.returncode == 0, f"wheelhouse needs the package index once: {fill.stderr[-2000:]}"
    host_site = sysconfig.get_paths()["purelib"]
    config = tmp_path / "asv.json"
    made = subprocess.run([PY, "-m", "launchbench", "asv-config", "--repo", str(repo), "--offline", str(wheels),
                           "--host-site", host_site, "--results-dir", str(tmp_path / "results"),
                           "--env-dir", str(tmp_path / "env"), "--html-dir", str(tmp_path / "html"),
                           "-o", str(config)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    env = {**os.environ, "HOME": str(tmp_path), "NUMBA_ENABLE_CUDASIM": "1", "LAUNCHBENCH_SMOKE": "1",
           "PATH": f"{Path(PY).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    asv = [PY, "-m", "asv", "--config", str(config)]
    subprocess.run([*asv, "machine", "--yes", "--machine", "SIMULATOR-SMOKE"], env=env, check=True, capture_output=True)
    proc = subprocess.run([*asv, "run", "--machine", "SIMULATOR-SMOKE", "--show-stderr", "--record-samples",
                           "-b", r"TimeLaunchPreconfigured.time_launch\(1, '\[1, 1\]'[,)]", "-b", "TrackRunKind", "ALL"],
                          env=env, capture_output=True, text=True, timeout=900)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    heads = [git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")]
    machine = tmp_path / "results" / "SIMULATOR-SMOKE"
    for sha in heads:
        found = sorted(machine.glob(f"{sha[:8]}-*.json"))
        assert len(found) == 1, f"{sorted(p.name for p in machine.glob('*'))}\n{log[-4000:]}"
        results = json.loads(found[0].read_text())["results"]
        assert results["bench_launch.TrackRunKind.track_cuda_simulator"][0] == [1]
        timings = results["bench_launch.TimeLaunchPreconfigured.time_launch"][0]
        assert [t for t in timings if t is not None and t == t], timings
    out = subprocess.run([*asv, "compare", "--machine", "SIMULATOR-SMOKE", "--factor", "1.02", heads[0], heads[1]],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert "TimeLaunchPreconfigured.time_launch(1, '[1, 1]', 'wall us, no reference')" in out
