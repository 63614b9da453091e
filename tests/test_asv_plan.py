"""asv-plan: which commits of a range asv times (pure choice), the hash file asv reads, the
config that installs the plan's wheels, and one-line refusals (CPU only).

The choice is tested on stand-in counts keys and compiled-source changes; the command on a
stand-in repository whose ``numba_cuda.launch`` has exact counts (``--target``: the counts pass
counts that function per commit), with Python-level steps, a compiled-source edit that changes
no count, and docs-only commits. asv's own code reads the hash file (``asv run HASHFILE:``,
stopped before any environment is built) and formats the generated build command.
"""
import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from itertools import pairwise

import pytest

from launchbench import cli
from launchbench.engine import asvplan
from launchbench.environments import builds
from launchbench.output import asvplan as plan_output
from launchbench.output import asvtools

# ---------------------------------------------------------------- the choice (pure)

def test_each_counts_step_and_compiled_change_is_timed_with_its_predecessor_and_the_ends():
    keys = ["a"] * 4 + ["b"] * 6       # counts change at 4
    chosen = asvplan.choose(keys, compiled=[7], every=100)
    assert chosen == {0: [("start",)], 3: [("before-counts-step", 4)], 4: [("counts-step", 3)],
                      6: [("before-compiled", 7)], 7: [("compiled",)], 9: [("end",)]}


def test_a_step_at_the_second_commit_merges_its_reasons_with_the_start():
    chosen = asvplan.choose(["a", "b", "b"], compiled=[1], every=100)
    assert chosen == {0: [("start",), ("before-counts-step", 1), ("before-compiled", 1)],
                      1: [("counts-step", 0), ("compiled",)], 2: [("end",)]}


def test_a_change_across_unusable_counts_is_found_and_the_unusable_commit_timed():
    chosen = asvplan.choose(["a", "a", None, "b", "b"], compiled=[], every=100)
    assert chosen[3] == [("counts-step", 1)]  # compared with the last usable commit
    assert chosen[2] == [("before-counts-step", 3), ("unusable",)]
    assert set(chosen) == {0, 2, 3, 4}


def test_flat_stretches_get_an_even_sample_no_wider_than_every():
    for n, every in ((40, 10), (41, 10), (12, 5), (100, 7), (9, 100)):
        chosen = asvplan.choose(["a"] * n, compiled=[], every=every)
        points = sorted(chosen)
        gaps = [b - a for a, b in pairwise(points)]
        assert max(gaps) <= every, (n, every, points)
        samples = [i for i, r in chosen.items() if r[0][0] == "sample"]
        assert len(samples) == -(-(n - 1) // every) - 1, (n, every, points)  # the fewest that do it
    # a sample fills the gaps between points, not only between the ends
    chosen = asvplan.choose(["a"] * 20 + ["b"] * 20, compiled=[], every=8)
    points = sorted(chosen)
    assert max(b - a for a, b in pairwise(points)) <= 8 and {19, 20} <= set(points)


def test_change_points_step_over_unusable_keys():
    assert asvplan.change_points(["a", None, "a", "b", None, None, "c"]) == [(2, 3), (3, 6)]
    assert asvplan.change_points([None, None]) == []


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError):
        asvplan.choose([], [], 5)
    with pytest.raises(ValueError):
        asvplan.choose(["a", "a"], [2], 5)
    with pytest.raises(ValueError):
        asvplan.even_sample({0, 9}, 0)


def test_reason_lines_name_commits_and_details():
    commits = [{"sha": f"{i:x}" * 40} for i in range(6)]
    chosen = asvplan.choose(["a", "a", "b", None, "b", "b"], compiled=[4], every=100)
    lines = plan_output.reason_lines(commits, chosen, {("counts", 2): "+6 bytecodes at 0 args",
                                                       ("unusable", 3): "not counted",
                                                       ("compiled", 4): "_dispatcher.cpp"})
    assert lines[2] == "counts change here vs g11111111: +6 bytecodes at 0 args"
    assert lines[1] == "the commit before the counts change at g22222222"
    assert "counts unusable (not counted)" in lines[3] and "before the compiled-source change" in lines[3]
    assert lines[4] == "compiled sources change here (_dispatcher.cpp)"
    assert lines[0] == "range start (A)" and lines[5] == "range end (B)"
    assert all("\n" not in line for line in lines.values())


def test_hash_file_round_trips_through_asvs_reading():
    shas = ["a" * 40, "b" * 40]
    assert plan_output.parse_hashfile(plan_output.hashfile_text(shas)) == shas
    assert plan_output.parse_hashfile("\n  " + "a" * 40 + "  \n\n") == ["a" * 40]


# ---------------------------------------------------------------- a stand-in range

def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _write(repo, rel, text):
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def _launch(loops):
    return f'''
        LOOPS = {loops}

        def launch(*args):
            for _ in range(LOOPS):
                pass
        '''


#: (subject, files): c0 base, c1 docs, c2 a Python step, c3-c5 docs (c3 adds a test's C file), c6 a compiled-source edit that moves  # noqa: E501
#: no count (a decoy), c7-c9 docs, c10 a Python step, c11 docs (B)
STANDIN = [
    ("base", {"numba_cuda/__init__.py": _launch(20), "numba_cuda/_x.c": "/* 1 */\n"}),
    ("docs", {"README.md": "1\n"}),
    ("python step", {"numba_cuda/__init__.py": _launch(30)}),
    ("docs", {"README.md": "3\n", "numba_cuda/tests/_t.c": "/* a test's C source: no compiled change */\n"}),
    ("docs", {"README.md": "4\n"}),
    ("docs", {"README.md": "5\n"}),
    ("compiled decoy", {"numba_cuda/_x.c": "/* 2 */\n"}),
    ("docs", {"README.md": "7\n"}),
    ("docs", {"README.md": "8\n"}),
    ("docs", {"README.md": "9\n"}),
    ("python step", {"numba_cuda/__init__.py": _launch(45)}),
    ("docs", {"README.md": "11\n"}),
]
#: what asv-plan times with --sample 100 (nothing sampled): ends, each step and compiled change and the commit before
POINTED = [0, 1, 2, 5, 6, 9, 10, 11]


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    repo = tmp_path_factory.mktemp("asvplan") / "clone"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _write(repo, "setup.py", """
        from setuptools import setup
        setup(name="numba-cuda", version=open("numba_cuda/VERSION").read().strip(), packages=["numba_cuda"])
        """)
    _write(repo, "numba_cuda/VERSION", "0.1.0\n")
    _write(repo, "numba_cuda/numba/cuda/__init__.py", "")  # numba-cuda's CUDA package: builds.check_numba_cuda
    _write(repo, "numba_cuda/numba/cuda/dispatcher.py", "")
    shas = []
    for subject, files in STANDIN:
        for rel, text in files.items():
            _write(repo, rel, text)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", subject)
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return repo, shas


def _cache_args(tmp_path):
    cache = tmp_path.parent / "asvplan-cache"  # shared by this module's tests
    return ["--target", "numba_cuda:launch", "--wheel-cache", str(cache / "wheels"), "--env-dir", str(cache / "envs"),
            "--args", "0", "--quiet"]


def asv_hashes(repo, hashfile, tmp_path, monkeypatch):
    """The commits asv 0.6's ``asv run HASHFILE:FILE`` would benchmark: its own Run.run, stopped when
    it hands them to benchmark discovery (nothing built, no machine file)."""
    from asv import config, environment, machine
    from asv.commands import run as asv_run

    conf_path = tmp_path / "asv-hashfile.json"
    conf_path.write_text(json.dumps({"version": 1, "project": "numba-cuda", "repo": str(repo), "dvcs": "git",
                                     "branches": ["main"], "environment_type": "virtualenv",
                                     "env_dir": str(tmp_path / "asv-env"), "results_dir": str(tmp_path / "asv-res"),
                                     "benchmark_dir": str(tmp_path)}))
    conf = config.Config.load(str(conf_path))

    class Stop(Exception):
        pass

    class Env:
        name = "stand-in"

        def can_install_project(self):
            return True

    class Machine:
        def save(self, _path):
            pass

    got = {}

    def discover(conf, repo, environments, commit_hashes, regex=None):
        got["hashes"] = list(commit_hashes)
        raise Stop

    monkeypatch.setattr(machine.Machine, "load", staticmethod(lambda **kw: Machine()))
    monkeypatch.setattr(environment, "get_environments", lambda conf, spec: [Env()])
    monkeypatch.setattr(asv_run.Setup, "perform_setup", staticmethod(lambda envs, parallel=1: None))
    monkeypatch.setattr(asv_run.Benchmarks, "discover", staticmethod(discover))
    try:
        rc = asv_run.Run.run(conf, range_spec=f"HASHFILE:{hashfile}", machine="stand-in")
    except Stop:
        return got["hashes"]
    raise AssertionError(f"asv run returned {rc} before discovery (no commit selected)")


def test_asv_plan_times_steps_decoys_and_ends_and_asv_reads_the_plan(standin, tmp_path, capsys, monkeypatch):
    repo, shas = standin
    plan = tmp_path / "plan.txt"
    every = tmp_path / "every.txt"
    rc = cli.main(["asv-plan", str(repo), f"{shas[0]}..{shas[-1]}", "-o", str(plan), "--every", str(every),
                   "--sample", "100", *_cache_args(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    timed = plan.read_text().split()
    assert timed == [shas[i] for i in POINTED]
    doc = plan_output.read_plan(str(plan))
    by = {c["sha"]: c for c in doc["commits"]}
    assert by[shas[2]]["reason"].startswith("counts change here vs g" + shas[1][:8])
    assert re.search(r": \+\d+ bytecodes.* at 0 args$", by[shas[2]]["reason"]), by[shas[2]]["reason"]
    assert by[shas[1]]["reason"] == "the commit before the counts change at g" + shas[2][:8]
    assert by[shas[6]]["reason"] == "compiled sources change here (_x.c)"
    assert by[shas[5]]["reason"] == "the commit before the compiled-source change at g" + shas[6][:8]
    assert by[shas[6]]["counts_key"] == by[shas[5]]["counts_key"] == by[shas[2]]["counts_key"]  # the decoy: flat
    assert by[shas[10]]["counts_key"] != by[shas[9]]["counts_key"]
    assert by[shas[1]]["same_code_as"] == shas[0] and by[shas[1]]["wheel"] == by[shas[0]]["wheel"]
    assert all(c["wheel"] and os.path.isfile(c["wheel"]) for c in doc["commits"])
    assert [c["timed"] for c in doc["commits"]] == [i in POINTED for i in range(len(shas))]
    reasons = (tmp_path / "plan.txt.reasons").read_text().splitlines()
    assert [line.split()[0] for line in reasons] == timed and all("  " in line for line in reasons)
    assert every.read_text().split() == shas
    assert f"{len(POINTED)} of {len(shas)} commits to time" in out
    # asv's own reading of both hash files
    assert asv_hashes(repo, plan, tmp_path, monkeypatch) == timed
    assert asv_hashes(repo, every, tmp_path, monkeypatch) == shas

    # where nothing points, an even sample: --sample 2 adds one commit to each 3-commit gap (c3-c4, c7-c8)
    rc = cli.main(["asv-plan", str(repo), f"{shas[0]}..{shas[-1]}", "-o", str(plan), "--sample", "2",
                   *_cache_args(tmp_path)])
    assert rc == 0
    assert plan.read_text().split() == [shas[i] for i in sorted(POINTED + [4, 8])]
    assert "even sample: nothing points between g" + shas[2][:8] in (tmp_path / "plan.txt.reasons").read_text()

    # asv-config --plan: asv's build step takes the plan's wheel (one pip process installs it, no compiling)
    conf_out = tmp_path / "asv.json"
    rc = cli.main(["asv-config", "--repo", str(repo), "--plan", str(plan), "-o", str(conf_out)])
    assert rc == 0
    conf = json.loads(conf_out.read_text())
    assert conf["install_command"] == ["in-dir={env_dir} python -m pip install --no-compile {wheel_file}[cu13]"]
    assert conf["uninstall_command"] == []
    built = run_build_command(conf, shas[10], tmp_path / "cache10", tmp_path / "src")
    assert built == [os.path.basename(by[shas[10]]["wheel"])]
    built = run_build_command(conf, shas[11], tmp_path / "cache11", tmp_path / "src")  # docs: c10's wheel
    assert built == [os.path.basename(by[shas[10]]["wheel"])]


def run_build_command(conf, commit, cache_dir, build_dir, python=sys.executable):
    """asv's build step as asv runs it: each command formatted by asv's interpolate_command, run by
    *python* (asv runs the env's); returns the wheels left in *cache_dir*."""
    from asv.util import interpolate_command

    cache_dir.mkdir(exist_ok=True)
    for text in conf["build_command"]:
        argv, env, _codes, _cwd = interpolate_command(text, {"commit": commit, "build_cache_dir": str(cache_dir),
                                                           "build_dir": str(build_dir)})
        assert argv[0] == "python"
        proc = subprocess.run([python, *argv[1:]], check=False, capture_output=True, text=True, env={**os.environ, **env})
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return sorted(p.name for p in cache_dir.glob("*.whl"))


def test_a_commit_the_plan_did_not_build_is_built_with_a_version_of_its_own(tmp_path):
    """The fallback: launchbench's no-isolation build of asv's checkout, version stamped with the commit."""
    src = tmp_path / "src"
    _write(src, "setup.py", """
        from setuptools import setup
        setup(name="numba-cuda", version=open("numba_cuda/VERSION").read().strip(), packages=["numba_cuda"])
        """)
    _write(src, "numba_cuda/__init__.py", "X = 1\n")
    _write(src, "numba_cuda/VERSION", "0.30.0\n")
    plan = tmp_path / "plan.txt.json"
    plan.write_text(json.dumps({"commits": [{"sha": "f" * 40, "wheel": str(tmp_path / "missing.whl")}]}))
    conf = asvtools.plan_config({"install_command": ["in-dir={env_dir} python -m pip install {wheel_file}[cu13]"],
                                 "uninstall_command": ["return-code=any python -m pip uninstall -y numba-cuda"]}, plan)
    # a Python with what asv's envs have to build (setuptools with bdist_wheel): launchbench's build venv
    python = builds.WheelCache(cache_dir=str(tmp_path.parent / "asvplan-cache" / "wheels"), pins={}).build_python()
    built = run_build_command(conf, "f" * 40, tmp_path / "cache", src, python)
    assert len(built) == 1 and built[0].startswith("numba_cuda-0.30.0+gffffffff-"), built
    with zipfile.ZipFile(tmp_path / "cache" / built[0]) as z:
        assert "Version: 0.30.0+gffffffff" in z.read("numba_cuda-0.30.0+gffffffff.dist-info/METADATA").decode()


def test_a_plan_config_graphs_the_range_s_branch_so_publish_finds_its_steps(tmp_path):
    """asv publish graphs only commits on the config's branches: a range planted on a branch other than
    main published no regression at all (GPU, 2026-11-27) until the config named the range's tip."""
    assert asvtools.range_tip("v0.30.4..asvrange") == "asvrange"
    assert asvtools.range_tip("main..v2") == "v2"
    assert asvtools.range_tip("a1b2c3d..0123456789abcdef0123456789abcdef01234567") is None  # a SHA is no branch
    assert asvtools.range_tip("main..HEAD~3") is None
    conf = asvtools.plan_config({"branches": ["main"]}, tmp_path / "p.txt.json", branch="asvrange")
    assert conf["branches"] == ["asvrange"]
    assert asvtools.plan_config({"branches": ["main"]}, tmp_path / "p.txt.json")["branches"] == ["main"]


def test_plan_config_keeps_the_host_site_steps_and_drops_pip_uninstall(tmp_path):
    base = {"repo": str(tmp_path), "matrix": {}}
    conf = asvtools.offline_config(base, tmp_path, host_site=tmp_path)
    conf = asvtools.plan_config(conf, tmp_path / "p.txt.json")
    assert conf["install_command"][1] == "in-dir={env_dir} python -m pip install --no-compile --no-deps {wheel_file}"
    assert conf["install_command"][0].endswith(asvtools.REMOVE_HOST_PTH) and len(conf["install_command"]) == 4
    assert conf["uninstall_command"] == [f"return-code=any in-dir={{env_dir}} {asvtools.REMOVE_HOST_PTH}"]
    assert "{commit} {build_cache_dir} {build_dir}" in conf["build_command"][0]


# ---------------------------------------------------------------- refusals

def _one_line(capsys, rc):
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("launchbench: error:"), err
    return lines[0]


def test_refusals_are_one_line_before_any_build(standin, tmp_path, capsys):
    repo, shas = standin
    base = ["-o", str(tmp_path / "p.txt"), *_cache_args(tmp_path)]
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    _git(other, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"repo": str(other)}))
    cases = [
        (["asv-plan", str(repo), "v9.9.9..main"], "unknown revision 'v9.9.9'"),          # not in the clone
        (["asv-plan", str(repo), f"{shas[3]}..{shas[3]}"], "is empty"),                   # no commits
        (["asv-plan", str(repo), f"{shas[3]}..{shas[1]}"], "not an ancestor"),
        (["asv-plan", str(repo), "main"], "expected A..B"),
        (["asv-plan", str(repo), "HEAD~1..HEAD", "--config", str(tmp_path / "none.json")], "not found"),  # unknown config
        (["asv-plan", str(repo), "HEAD~1..HEAD", "--config", str(foreign)], "asv would skip the plan's commits"),
        (["asv-plan", str(repo), "HEAD~1..HEAD", "--every", str(tmp_path)], "--every"),
        (["asv-plan", str(tmp_path / "missing"), "HEAD~1..HEAD"], "does not exist"),
    ]
    for argv, needle in cases:
        rc = cli.main(argv + base)
        line = _one_line(capsys, rc)
        assert needle in line, (argv, line)
    assert not (tmp_path / "p.txt").exists() and not (tmp_path / "p.txt.json").exists()
    # asv-config: an unknown plan, and a plan of another clone
    rc = cli.main(["asv-config", "--repo", str(repo), "--plan", str(tmp_path / "none.txt"), "-o", str(tmp_path / "a.json")])
    assert "--plan" in _one_line(capsys, rc)
    plan = tmp_path / "elsewhere.txt.json"
    plan.write_text(json.dumps({"schema": "launchbench.asv-plan/1", "command": [], "created": "", "clone": str(other),
                                "range": "a..b", "settings": {}, "commits": [], "timed": []}))
    rc = cli.main(["asv-config", "--repo", str(repo), "--plan", str(plan), "-o", str(tmp_path / "a.json")])
    assert "is for " + str(other) in _one_line(capsys, rc)
    assert not (tmp_path / "a.json").exists()


def test_asv_costs_read_back_asvs_own_durations(tmp_path):
    res = tmp_path / "m"
    res.mkdir()
    (res / "machine.json").write_text("{}")
    (res / "abc-env.json").write_text(json.dumps({
        "commit_hash": "abc", "result_columns": ["result", "params", "version", "started_at", "duration"],
        "results": {"a.track_x": [[1, 2], [["0", "1"]], "v", 1000000, 2.5],
                    "a.track_y": [[1, 2], [["0", "1"]], "v", 1004000, 1.5]},
        "durations": {"<build>": 7.25, "<setup_cache a:12>": 3.0}}))
    (got,) = plan_output.asv_costs(str(tmp_path))
    assert got == {"commit": "abc", "file": "m/abc-env.json", "build_s": 7.25, "setup_cache_s": 3.0,
                   "benchmarks_s": 4.0, "parameter_sets": 4, "span_s": 5.5}
