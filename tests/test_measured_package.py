"""The measured package is the one built (CPU only).

A clone whose numba_cuda/ holds no CUDA package builds a wheel of metadata only; ``numba.cuda``
then resolves to numba's own bundled copy and that is what would be timed, recorded under the
clone's version. repo:/--repo, history, bisect and pr refuse such a clone in one line before any
build; a worker whose imported CUDA module is not its environment's own fails the run in one line.
"""
import os
import subprocess
import sys

import pytest

from launchbench import cli
from launchbench.engine import progressbar, runner, runplan, workerproc
from launchbench.environments import variants

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETUP_PY = ('from setuptools import setup\nsetup(name="numba-cuda", version=open("numba_cuda/VERSION").read().strip(), '
            'packages=["numba_cuda"])\n')


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _fake_clone(path, with_cuda: bool):
    """Two commits of a package called numba_cuda, with or without numba-cuda's CUDA package."""
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    _git(path, "config", "user.email", "t@example.com")
    _git(path, "config", "user.name", "t")
    (path / "setup.py").write_text(SETUP_PY)
    (path / "numba_cuda").mkdir()
    (path / "numba_cuda" / "VERSION").write_text("0.0.1\n")
    (path / "numba_cuda" / "__init__.py").write_text("X = 1\n")
    if with_cuda:
        for rel in variants.CUDA_PACKAGE_FILES:
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            (path / rel).write_text("")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "one")
    (path / "numba_cuda" / "__init__.py").write_text("X = 2\n")
    _git(path, "commit", "-q", "-am", "two")
    _git(path, "branch", "feature")
    _git(path, "reset", "-q", "--hard", "HEAD~1")
    _git(path, "commit", "-q", "--allow-empty", "-m", "main moves on")
    return path


@pytest.fixture(scope="module")
def clones(tmp_path_factory):
    root = tmp_path_factory.mktemp("clones")
    return _fake_clone(root / "no-cuda", False), _fake_clone(root / "with-cuda", True)


def _argvs(clone, tmp_path):
    caches = ["--wheel-cache", str(tmp_path / "wheels"), "--env-dir", str(tmp_path / "envs")]
    return {
        "compare --repo": ["compare", "--simulator", "--repo", f"a={clone}", "--variant", f"b=env:{sys.prefix}",
                           "--env-dir", str(tmp_path / "envs"), "-o", str(tmp_path / "c.json")],
        "compare repo:": ["compare", "--simulator", "--variant", f"a=repo:{clone}", "--variant", f"b=env:{sys.prefix}",
                          "--env-dir", str(tmp_path / "envs"), "-o", str(tmp_path / "c.json")],
        "history": ["history", str(clone), "main~1..main", "--simulator", "-o", str(tmp_path / "h.json"), *caches],
        "bisect": ["bisect", str(clone), "main~1", "main", "--simulator", "-o", str(tmp_path / "b.json"), *caches],
        "pr": ["pr", str(clone), "feature", "--simulator", "--out", str(tmp_path / "pr"), *caches],
    }


@pytest.mark.parametrize("command", ["compare --repo", "compare repo:", "history", "bisect", "pr"])
def test_a_clone_without_numba_cudas_cuda_package_is_refused_before_any_build(clones, tmp_path, capsys, command):
    no_cuda, _ = clones
    rc = cli.main(_argvs(no_cuda, tmp_path)[command] + ["--quiet"])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "no numba-cuda CUDA package" in lines[0] and "numba_cuda/numba/cuda/" in lines[0], lines[0]
    assert not (tmp_path / "wheels").exists() and not (tmp_path / "envs").exists()  # nothing built


@pytest.mark.parametrize("command", ["compare repo:", "history", "pr"])
def test_the_same_clone_with_the_cuda_package_passes_that_check(clones, tmp_path, capsys, command, monkeypatch):
    """The control: with the package the run gets past the check and on to the build (stopped there)."""
    from launchbench.environments import builds, envs

    class Stop(Exception):
        pass

    def stop(*_a, **_k):
        raise Stop()

    monkeypatch.setattr(builds.WheelCache, "build", stop)
    monkeypatch.setattr(envs.EnvManager, "ensure", stop)
    _, with_cuda = clones
    with pytest.raises(Stop):
        cli.main(_argvs(with_cuda, tmp_path)[command] + ["--quiet"])
    assert "no numba-cuda CUDA package" not in capsys.readouterr().err


# ---------------------------------------------------------------- the imported module

def _info(file, version="0.30.4", module="numba-cuda"):
    return {"cuda_module": module, "cuda_module_file": file, "numba_cuda_version": version}


def test_import_check_accepts_the_envs_own_package(tmp_path):
    env = str(tmp_path / "env")
    own = f"{env}/lib/python3.11/site-packages/numba_cuda/numba/cuda/__init__.py"
    assert workerproc.import_mismatch(_info(own), {"prefix": env, "version": "0.30.4"}) is None
    assert workerproc.import_mismatch(_info(own, "0.30.4+g1234abcd"), {"prefix": env, "version": "0.30.4+g1234abcd"}) is None
    assert workerproc.import_mismatch(_info(own), None) is None  # env: bases: only numba's bundled copy is refused


def test_import_check_refuses_numbas_bundled_cuda_another_site_or_another_version(tmp_path):
    env = str(tmp_path / "env")
    bundled = f"{env}/lib/python3.11/site-packages/numba/cuda/__init__.py"
    why = workerproc.import_mismatch(_info(bundled, "0.0.1"), {"prefix": env, "version": "0.0.1"})
    assert why and "numba's own" in why and bundled in why
    assert "numba's own" in workerproc.import_mismatch(_info(bundled), None)  # whatever the env
    elsewhere = "/host/site-packages/numba_cuda/numba/cuda/__init__.py"
    why = workerproc.import_mismatch(_info(elsewhere), {"prefix": env, "version": "0.30.4"})
    assert why and "not from its environment" in why and env in why
    own = f"{env}/lib/site-packages/numba_cuda/numba/cuda/__init__.py"
    why = workerproc.import_mismatch(_info(own, "0.30.3"), {"prefix": env, "version": "0.30.4"})
    assert why and "0.30.3" in why and "0.30.4" in why
    assert "no CUDA module" in workerproc.import_mismatch(_info(None), {"prefix": env})


def _plan(tmp_path, expect):
    overlay = os.path.join(tmp_path, "overlay")
    os.makedirs(overlay)
    os.symlink(os.path.join(ROOT, "launchbench"), os.path.join(overlay, "launchbench"))
    return runplan.Plan(variants=[("v", sys.executable, None)], reference="v", arg_counts=[0], loops={0: 5},
                       repeats=1, rounds=1, warmup=1, sample_target_s=0.0, simulator=True, affinity=None,
                       peers=False, overlay=overlay, log_dir=str(tmp_path), expect=expect)


def test_a_worker_whose_import_is_not_its_envs_build_fails_the_run_in_one_line(tmp_path):
    """A real worker under the simulator imports this interpreter's numba-cuda; told its env is
    elsewhere, the run fails at set-up with one line naming both; told the truth, it runs."""
    out = runner.run(_plan(tmp_path / "wrong", {"v": {"prefix": str(tmp_path / "built-env")}}),
                     progressbar.Progress(1, enabled=False))
    assert out.rounds_completed == 0 and out.error is not None and out.error.kind == "mismatch"
    with pytest.raises(runner.UserError) as exc:
        runplan.raise_setup_failure(out)
    msg = str(exc.value)
    assert "\n" not in msg and "not from its environment" in msg and str(tmp_path / "built-env") in msg, msg
    ok = runner.run(_plan(tmp_path / "right", {"v": {"prefix": sys.prefix}}), progressbar.Progress(1, enabled=False))
    assert ok.error is None and ok.rounds_completed == 1, ok.reason
    info = ok.infos["v"]
    import numba.cuda

    assert info["cuda_module_file"] == os.path.realpath(numba.cuda.__file__)


def test_what_each_environment_must_import(tmp_path):
    from launchbench.engine.history import built_import
    from launchbench.environments import envs
    from launchbench.environments.variants import Base

    def env(kind, target):
        return envs.Env(Base(kind, target), str(tmp_path / "e"), str(tmp_path / "e/bin/python"), built=False)

    assert envs.expected_import(env("wheel", "numba-cuda==0.30.4")) == {"prefix": str(tmp_path / "e"), "version": "0.30.4"}
    whl = "/c/numba_cuda-0.2.0+g1234abcd-cp311-cp311-linux_x86_64.whl"
    assert envs.expected_import(env("wheelfile", whl))["version"] == "0.2.0+g1234abcd"
    assert envs.expected_import(env("repo", "/src/numba-cuda")) == {"prefix": str(tmp_path / "e"), "version": None}
    assert envs.expected_import(env("env", str(tmp_path))) is None  # used as it is
    assert built_import({"wheel": whl, "env": "/envs/x"}) == {"prefix": "/envs/x", "version": "0.2.0+g1234abcd"}
    own = str(tmp_path / "e/lib/site-packages/numba_cuda/numba/cuda/__init__.py")
    assert workerproc.import_mismatch(_info(own, "0.30.4"), {"prefix": str(tmp_path / "e"), "version": "0.30.4.0"}) is None


# ---------------------------------------------------------------- conformance with nothing run

def _suite_run(outcomes):
    tests = {f"test_{i}": {"outcome": o, "text": ""} for i, o in enumerate(outcomes)}
    return {"ok": True, "returncode": 0, "reason": None, "tests": tests}


def test_a_suite_whose_every_test_skipped_is_not_run_never_ok():
    from launchbench.engine import conformance
    from launchbench.output import prreport

    skipped = _suite_run(["skipped"] * 16)
    verdict = conformance.verdict(skipped, skipped, conformance.diff(skipped["tests"], skipped["tests"]))
    assert verdict == conformance.NOT_RUN == "not run"
    empty = _suite_run([])
    assert conformance.verdict(empty, empty, conformance.diff({}, {})) == "not run"
    one_ran = _suite_run(["skipped"] * 15 + ["passed"])
    assert conformance.verdict(skipped, one_ran, conformance.diff(skipped["tests"], one_ran["tests"])) == "ok"
    failed = _suite_run(["skipped"] * 15 + ["failed"])
    assert conformance.verdict(skipped, failed, conformance.diff(skipped["tests"], failed["tests"])) == "broken"
    assert conformance.exit_code(verdict, None) == 0  # nothing checked is no failure either
    conf = {"verdict": verdict, "base": skipped, "head": skipped,
            "changes": conformance.diff(skipped["tests"], skipped["tests"])}
    doc = {"head": {"short": "abc"}, "conformance": conf, "measurement": None, "gate": None}
    line = prreport.verdict_lines(doc)[0]
    assert line == "conformance: not run -- all 16 tests skipped on the head", line
    assert conformance.reclassify(conf)["verdict"] == "not run"
