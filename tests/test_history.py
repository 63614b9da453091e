"""history and bisect on a stand-in repository with a known per-commit cost (CPU only).

The stand-in is a tiny git repo made here: a package whose ``launch`` busy-waits a
fixed time. One commit adds 30 us; others change only tests or the version string
(same code) or change code without changing the cost. history must name the slow
commit and only it, the A/A commit's step must contain 0, and bisect must find it.
"""
import os
import subprocess
import textwrap

import pytest

from launchbench import cli
from launchbench.engine import bisection
from launchbench.engine.countdiff import NOT_VISIBLE
from launchbench.engine.history import established
from launchbench.environments.commits import CommitEnvs, commit_records

STEP_US = 30.0


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)


def _write(repo, rel, text):
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def _code(delay_us, comment=""):
    return f'''
        import time
        DELAY_S = {delay_us} * 1e-6  {comment}

        def launch(*args):
            end = time.perf_counter() + DELAY_S
            while time.perf_counter() < end:
                pass
        '''


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    """c0 base, c1 tests only, c2 code change at the same cost, c3 +30 us, c4 version bump."""
    repo = tmp_path_factory.mktemp("standin")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _write(repo, "setup.py", """
        from setuptools import setup
        setup(name="numba-cuda", version=open("numba_cuda/VERSION").read().strip(), packages=["numba_cuda"])
        """)
    _write(repo, "numba_cuda/VERSION", "0.1.0\n")
    _write(repo, "numba_cuda/__init__.py", _code(5))
    _write(repo, "numba_cuda/tests/test_x.py", "X = 1\n")
    _write(repo, "numba_cuda/numba/cuda/__init__.py", "")  # numba-cuda's CUDA package: builds.check_numba_cuda
    _write(repo, "numba_cuda/numba/cuda/dispatcher.py", "")
    steps = [("base", None),
             ("tests only", ("numba_cuda/tests/test_x.py", "X = 2\n")),
             ("same cost, new code", ("numba_cuda/__init__.py", _code(5, "# reworded"))),
             ("slower launch", ("numba_cuda/__init__.py", _code(5 + STEP_US, "# reworded"))),
             ("bump version", ("numba_cuda/VERSION", "0.2.0\n"))]
    shas = []
    for subject, change in steps:
        if change:
            _write(repo, *change)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", subject)
        shas.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                   text=True, check=True).stdout.strip())
    return repo, shas


def _counted_code(py_loops, c_items):
    """A launch with exact counts: *py_loops* iterations of Python bytecode (counts see them) and
    one C call summing *c_items* integers (time in C: counts see one call whatever its size)."""
    return f'''
        PY_LOOPS = {py_loops}
        C_ITEMS = {c_items}

        def launch(*args):
            for _ in range(PY_LOOPS):
                pass
            return sum(range(C_ITEMS))
        '''


PY_STEP_LOOPS, C_STEP_ITEMS = 400, 1500  # each well over the tests' 10 us threshold on a loaded CPU


@pytest.fixture(scope="module")
def counted_standin(tmp_path_factory):
    """c0 base, c1 tests only, c2 a Python-level step (counts move), c3 a larger C-level step
    (time only: counts identical), c4 version bump."""
    repo = tmp_path_factory.mktemp("counted")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    _write(repo, "setup.py", """
        from setuptools import setup
        setup(name="numba-cuda", version=open("numba_cuda/VERSION").read().strip(), packages=["numba_cuda"])
        """)
    _write(repo, "numba_cuda/VERSION", "0.1.0\n")
    _write(repo, "numba_cuda/__init__.py", _counted_code(20, 100))
    _write(repo, "numba_cuda/tests/test_x.py", "X = 1\n")
    _write(repo, "numba_cuda/numba/cuda/__init__.py", "")  # numba-cuda's CUDA package: builds.check_numba_cuda
    _write(repo, "numba_cuda/numba/cuda/dispatcher.py", "")
    steps = [("base", None),
             ("tests only", ("numba_cuda/tests/test_x.py", "X = 2\n")),
             ("python-level step", ("numba_cuda/__init__.py", _counted_code(20 + PY_STEP_LOOPS, 100))),
             ("c-level step", ("numba_cuda/__init__.py", _counted_code(20 + PY_STEP_LOOPS, 100 + C_STEP_ITEMS))),
             ("bump version", ("numba_cuda/VERSION", "0.2.0\n"))]
    shas = []
    for subject, change in steps:
        if change:
            _write(repo, *change)
        if subject == "c-level step":  # its compiled source changes too: the commit bisect times first
            _write(repo, "numba_cuda/_dispatch.c", "/* C_ITEMS */\n")
        if subject == "tests only":  # a test's C source: not a hint
            _write(repo, "numba_cuda/tests/_helper.c", "/* test */\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", subject)
        shas.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                   text=True, check=True).stdout.strip())
    return repo, shas


def _common(tmp_path):
    cache = tmp_path.parent / "shared-cache"  # wheels and envs shared by the tests of this module
    return ["--target", "numba_cuda:launch", "--wheel-cache", str(cache / "wheels"), "--env-dir",
            str(cache / "envs"), "--args", "0,1", "--repeats", "5", "--sample-time", "0.002", "--warmup", "20",
            "--threshold", "10", "--quiet"]


def test_commit_records_mark_identical_code_and_aa():
    class C:
        def __init__(self, sha):
            self.sha, self.short, self.subject, self.date = sha, sha[:7], "s " + sha, "2026-01-01"
    commits = [C(s * 40) for s in "abcde"]
    ident = {"a": 1, "b": 1, "c": 2, "d": 2, "e": 3}
    recs = commit_records("/nowhere", commits, aa=1, identity=lambda sha: ident[sha[0]])
    assert [r["measured"] for r in recs] == [True, True, True, False, True]
    assert recs[1]["aa"] and recs[1]["identical_to"] == "a" * 40
    assert recs[3]["identical_to"] == "c" * 40 and not recs[3]["aa"]
    assert commit_records("/nowhere", commits, aa=0, identity=lambda sha: ident[sha[0]])[1]["measured"] is False


def test_stage_points_spread_over_the_segment():
    assert bisection.stage_points(0, 10, 5) == [0, 2, 5, 8, 10]
    assert bisection.stage_points(3, 5, 5) == [3, 4, 5]
    assert bisection.stage_points(0, 2, 2) == [0, 1, 2]  # never only the two ends of a longer segment


def test_established_needs_the_whole_interval_beyond_the_threshold():
    assert established({"ci_us": [0.25, 0.4], "n": 10}, 0.2)
    assert not established({"ci_us": [0.1, 0.4], "n": 10}, 0.2)
    assert established({"ci_us": [-0.5, -0.3], "n": 10}, 0.2)
    assert not established({"ci_us": [0.25, 0.4], "n": 1}, 0.2)


@pytest.mark.slow
def test_history_names_the_slow_commit_and_caches_wheels(standin, tmp_path, capsys, timing_checks):
    repo, shas = standin
    out = tmp_path / "h.json"
    rc = cli.main(["history", str(repo), f"{shas[0]}..{shas[-1]}", "--rounds", "4", "--aa", "1",
                   "-o", str(out), "--no-report", *_common(tmp_path)])
    assert rc == 0
    from launchbench.base.atomic import read_json

    doc = read_json(out)
    measured = [c["sha"] for c in doc["commits"] if c["measured"]]
    assert measured == shas[:4]  # c4 shares c3's code; c1 is the A/A check
    assert shas[3] in doc["culprits"]
    by = {(s["commit"], s["nargs"]): s for s in doc["steps"]}
    for n in (0, 1):
        # a busy-wait is never early, so the lower bound holds under any load; preemption only
        # inflates, so the upper bound is a quiet-machine check (tests/conftest.py)
        assert STEP_US * 0.5 < by[(shas[3], n)]["delta_us"]
        if timing_checks:
            assert by[(shas[3], n)]["delta_us"] < STEP_US * 2
            # "no step" is an upper bound on the noise: load that inflates one commit's rounds can move it
            aa = by[(shas[1], n)]
            assert aa["ci_us"][0] < STEP_US / 3 and aa["ci_us"][1] > -STEP_US / 3 and not aa["established"]
    if timing_checks:
        assert doc["culprits"] == [shas[3]]  # only it: the A/A (c1) and same-cost (c2) steps are not established
    assert doc["commits"][4]["identical_to"] == shas[3]
    text = capsys.readouterr().out
    foot = next(ln for ln in text.splitlines() if ln.startswith("Commits carrying an established step"))
    assert "g" + shas[3][:8] in foot and "<==" in text
    assert "Counts steps (exact" in text  # what a busy-wait's counts say depends on the clock: not checked here
    # a second run builds nothing: every wheel comes from the cache keyed by SHA
    cache = tmp_path.parent / "shared-cache" / "wheels"
    mtimes = {p: os.path.getmtime(p) for p in cache.rglob("*.whl")}
    assert len(mtimes) == 4
    rc = cli.main(["history", str(repo), f"{shas[0]}..{shas[2]}", "--rounds", "2", "-o", str(tmp_path / "h2.json"),
                   "--no-report", *_common(tmp_path)])
    assert rc == 0
    assert {p: os.path.getmtime(p) for p in cache.rglob("*.whl")} == mtimes


@pytest.mark.slow
def test_bisect_finds_the_slow_commit(standin, tmp_path, capsys):
    repo, shas = standin
    out = tmp_path / "b.json"
    rc = cli.main(["bisect", str(repo), shas[0], shas[-1], "--rounds", "4", "--points", "3", "-o", str(out),
                   *_common(tmp_path)])
    assert rc == 0
    from launchbench.base.atomic import read_json

    doc = read_json(out)
    assert doc["culprit"]["sha"] == shas[3] and doc["culprit"]["previous"] == shas[2]
    # a busy-wait on the clock usually runs a different number of bytecodes every launch (then no
    # counts to bisect on); timing finds the step either way
    assert doc["counts_note"]
    assert "culprit: g" + shas[3][:8] in capsys.readouterr().out


@pytest.mark.slow
def test_history_reports_counts_steps_beside_the_us_steps(counted_standin, tmp_path, capsys, timing_checks):
    """Every commit counted once before any timing: the A/A commit's counts are identical, c2's
    move (exactly, in ``launch``), c3's do not, and its µs step is called not visible to counts."""
    repo, shas = counted_standin
    out = tmp_path / "h.json"
    rc = cli.main(["history", str(repo), f"{shas[0]}..{shas[-1]}", "--rounds", "3", "--aa", "1", "-o", str(out),
                   *_common(tmp_path)])
    text = capsys.readouterr().out
    assert rc == 0, text
    from launchbench.base.atomic import read_json

    doc = read_json(out)
    sec = doc["counts"]
    assert sec["processes"] == 4 and sec["moved"] == [shas[2]]
    by = {c["commit"]: c for c in sec["steps"]}
    assert by[shas[1]]["moved"] is False  # A/A: the same code counts the same, exactly
    assert all(v == 0 for d in by[shas[1]]["per_nargs"].values() for v in d["per_launch"].values())
    per = by[shas[2]]["per_nargs"]
    assert per["0"]["per_launch"] == per["1"]["per_launch"]  # the step does not depend on the arguments
    assert [f["function"] for f in per["1"]["functions"]] == ["launch"]
    assert by[shas[3]]["moved"] is False
    steps = {(s["commit"], s["nargs"]): s for s in doc["steps"]}
    assert steps[(shas[2], 0)]["counts_reading"] == "counts moved"
    # c3's reading follows its timing: not visible to counts once its µs step is established
    c3 = steps[(shas[3], 0)]
    assert c3["counts_reading"] == (NOT_VISIBLE if c3["established"] else "no change")
    if timing_checks:  # on a quiet machine the C step's ~100 us is established at 3 rounds
        assert c3["established"]
    md = (tmp_path / "h.md").read_text()
    for rendered in (text, md):
        assert "Counts steps (exact" in rendered
        row = next(ln for ln in rendered.splitlines() if "g" + shas[2][:8] in ln and "launch +" in ln)
        assert f"+{per['0']['per_launch']['bytecodes']}" in row
        # the line names a commit established at any arg count (0 or 1); c3 is read above at 0 args
        any_established = any(steps[(shas[3], n)]["established"] for n in (0, 1))
        assert ("with identical counts (" + NOT_VISIBLE + "): g" + shas[3][:8] in rendered) == any_established


@pytest.mark.slow
def test_bisect_names_the_python_step_from_counts_and_finds_the_c_step_by_timing(counted_standin, tmp_path, capsys,
                                                                                timing_checks):
    """Counts locate c2 (its Python loop) with no timing spent on locating; the one timing stage
    measures GOOD, c2's neighbours and BAD, follows the larger step (c3, C-level) and reports it
    not visible to counts, checked by counting the pair."""
    repo, shas = counted_standin
    out = tmp_path / "b.json"
    rc = cli.main(["bisect", str(repo), shas[0], shas[-1], "--rounds", "4", "--points", "3", "-o", str(out),
                   *_common(tmp_path)])
    text = capsys.readouterr().out
    from launchbench.base.atomic import read_json

    doc = read_json(out)
    assert rc == (0 if doc["culprit"] else 1), text
    kinds = [st["kind"] for st in doc["stages"]]
    assert kinds == ["counts", "counts", "timing"], kinds
    assert doc["stages"][2]["points"] == [shas[0], shas[2], shas[3]]  # distinct builds: c1 ~ c0, c4 ~ c3
    assert doc["hints"] == [shas[3]] and doc["settings"]["hints"] is True  # c1's C file is a test's
    (cstep,) = doc["counts"]["steps"]
    assert (cstep["previous"], cstep["commit"]) == (shas[0], shas[2]) and cstep["moved"]
    per = cstep["per_nargs"]["0"]
    assert per["per_launch"]["bytecodes"] >= 2 * PY_STEP_LOOPS  # every loop iteration's bytecodes
    assert per["functions"][0]["function"] == "launch"
    assert "launch +" in text.split("counts steps")[1]  # the counts step, beside its pooled µs
    c = doc["culprit"]
    if c is None:  # a loaded machine may leave the stage undecided: never a wrong commit
        assert doc["result"].startswith("undecided between") and "no culprit" not in text
        assert not timing_checks
        return
    # both steps are in the range's direction; the search follows the clearer one, c3 (~4x c2)
    assert (c["previous"], c["sha"]) in ((shas[0], shas[2]), (shas[2], shas[3]))
    if c["sha"] == shas[3]:
        assert c["reading"] == NOT_VISIBLE and c["counts"]["moved"] is False and "not visible to counts" in text
        assert c["hinted"] is True and "a hint bisect timed first" in text
    else:
        assert c["reading"] == "counts moved" and not timing_checks


@pytest.mark.slow
def test_history_on_two_lanes_pools_their_rounds(standin, tmp_path, capsys):
    """--gpus 0,1 (lanes.py): each lane's rounds on its own GPU and CPUs, one interval over all."""
    repo, shas = standin
    out = tmp_path / "h.json"
    rc = cli.main(["history", str(repo), f"{shas[0]}..{shas[3]}", "--rounds", "4", "--aa", "0", "--gpus", "0,1",
                   "--affinity", "none", "-o", str(out), "--no-report", *_common(tmp_path)])
    assert rc == 0
    from launchbench.base.atomic import read_json

    doc = read_json(out)
    assert doc["culprits"] == [shas[3]] and doc["rounds_completed"] == 4
    assert doc["lanes"]["n"] == 2 and [lane["rounds_completed"] for lane in doc["lanes"]["lanes"]] == [2, 2]
    assert {(s["lane"], s["round"]) for s in doc["samples"]} == {(0, 0), (1, 1), (0, 2), (1, 3)}
    assert "Lane check" in capsys.readouterr().out


def test_bad_ranges_and_clones_are_one_line_errors(standin, tmp_path, capsys):
    repo, shas = standin
    for argv in (["history", str(repo), "nope..also-nope"], ["history", str(tmp_path / "missing"), "a..b"],
                 ["history", str(repo), shas[0]], ["bisect", str(repo), shas[3], shas[0]]):
        rc = cli.main(argv + ["-o", str(tmp_path / "x.json"), "--quiet"])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("launchbench: error:") == 1 and "Traceback" not in err, (argv, err)


def test_a_commit_that_fails_to_build_is_reported_and_skipped(tmp_path, capsys):
    from launchbench.environments import builds

    class Cache:
        cache_dir = str(tmp_path / "wheels")

        def path_for(self, sha):
            return None

        def build(self, clone, commit):
            if commit.sha.startswith("b"):
                raise builds.BuildFailed(commit, str(tmp_path / "b.log"), f"building {commit.short} failed (pip wheel exit 1)")
            return str(tmp_path / f"numba_cuda-0.1+g{commit.sha[:8]}-py3-none-any.whl")

    class Env:
        def __init__(self, path):
            self.path, self.python = path, path + "/bin/python"

    class Manager:
        env_dir = str(tmp_path / "envs")

        def ensure(self, base, label):
            return Env(str(tmp_path / label))

    session = CommitEnvs.__new__(CommitEnvs)
    session.cache, session.manager = Cache(), Manager()
    session.say = lambda msg: print(msg)
    records = [{"sha": s * 40, "short": s * 7, "subject": s, "date": "d", "measured": True}
               for s in "abc"]
    import launchbench.environments.envs as envs_mod
    saved = envs_mod.check_python_matches
    envs_mod.check_python_matches = lambda env, label: "3.12"
    try:
        session.build("/nowhere", records)
    finally:
        envs_mod.check_python_matches = saved
    assert [r["measured"] for r in records] == [True, False, True]
    assert records[1]["build"] == {"ok": False, "error": "building bbbbbbb failed (pip wheel exit 1)",
                                   "log": str(tmp_path / "b.log")}
    assert records[0]["variant"] == "gaaaaaaaaa" and records[2]["build"] == {"ok": True}
    assert "bbbbbbb does not build" in capsys.readouterr().out


@pytest.mark.parametrize("option", ["--wheel-cache", "--env-dir", "--asv-results"])
def test_an_unusable_cache_or_asv_results_folder_is_refused_before_any_build(standin, tmp_path, capsys, option):
    """A file where the folder should be (root can be refused this way too); history used to
    build, or measure for minutes, before failing in a traceback."""
    repo, shas = standin
    afile = tmp_path / "afile"
    afile.write_text("x")
    argv = ["history", str(repo), f"{shas[0]}..{shas[2]}", "--rounds", "2", "-o", str(tmp_path / "h.json")]
    argv += _common(tmp_path)
    if option in argv:
        argv[argv.index(option) + 1] = str(afile)
    else:
        argv += [option, str(afile)]
    if option != "--asv-results":  # nothing cached there: the first build must be refused
        other = "--env-dir" if option == "--wheel-cache" else "--wheel-cache"
        argv[argv.index(other) + 1] = str(tmp_path / other.strip("-"))
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith(f"launchbench: error: {option} {afile} is a file, not a folder"), err
    assert sorted(os.listdir(tmp_path)) == ["afile"]  # nothing built, nothing written


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="runs as root: chmod 0o555 does not stop root writing (the is-a-file case covers it)")
@pytest.mark.parametrize("option", ["--wheel-cache", "--asv-results"])
def test_a_read_only_cache_or_asv_results_folder_is_refused_before_any_build(standin, tmp_path, capsys, option):
    repo, shas = standin
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        argv = ["history", str(repo), f"{shas[0]}..{shas[2]}", "--rounds", "2", "-o", str(tmp_path / "h.json")]
        argv += _common(tmp_path)
        if option == "--wheel-cache":
            argv[argv.index(option) + 1] = str(ro / "wheels")
        else:
            argv += [option, str(ro / "asv")]
        rc = cli.main(argv)
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1, err
        assert err.startswith(f"launchbench: error: {option} {ro}") and "Permission denied" in err, err
        assert os.listdir(ro) == []
    finally:
        ro.chmod(0o755)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_a_full_disk_mid_run_is_one_line_and_keeps_the_last_json(standin, tmp_path, capsys, monkeypatch):
    """ENOSPC on the results JSON after measuring: one line naming it, the previous JSON whole,
    no temp file (history used to end in a traceback with no file name)."""
    import errno

    from launchbench.base import atomic

    repo, shas = standin
    out = tmp_path / "h.json"
    out.write_text('{"previous": true}\n')
    real = atomic.os.fsync

    def fsync(fd):
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".h.json."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    rc = cli.main(["history", str(repo), f"{shas[0]}..{shas[2]}", "--rounds", "2", "-o", str(out),
                   *_common(tmp_path)])
    out_text, err = capsys.readouterr()
    assert rc == 2 and "Traceback" not in out_text + err, err
    # the JSON left there is an earlier run's, not called this run's "last complete version"
    assert err.splitlines()[-1] == (f"launchbench: error: cannot write {out}: No space left on device; free space "
                                    f"or choose another folder; {out} is left as it was, from before this run")
    assert out.read_text() == '{"previous": true}\n'
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]
