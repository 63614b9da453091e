"""launchbench pr on a stand-in repository with planted conformance changes and a known cost (CPU only).

The stand-in is a tiny git repo made here: a package ``numba_cuda`` whose ``OK``
table decides a small pytest suite (passed to ``pr`` through its hidden ``--suite``
in place of the GPU-only LC-S suite) and whose ``launch`` busy-waits a fixed
time. On ``main`` test_a fails (planted), test_c is an expected failure and
test_d runs. Branches off main: ``fix`` makes test_a pass; ``break`` makes
test_b fail, test_c pass (xfail -> xpass) and test_d skip; ``slow`` adds 30 us
per launch; ``both`` breaks test_b and is slow; ``extra`` makes one more Python
call per launch. The report must name each change, and the exit codes must say
0, 3, 1 and 4. The wait is a C busy-wait (launchbench's ``_tls.spin``), so the
launch's exact counts do not depend on the time it takes: ``extra`` moves them
by what ``dis`` says, ``slow`` not at all.
"""
import dis
import json
import subprocess
import textwrap

import pytest

from launchbench import cli
from launchbench.engine import conformance
from launchbench.engine.countdiff import NOT_VISIBLE

STEP_US = 30.0
SUITE = '''
import pytest
import numba_cuda


def test_a():
    assert numba_cuda.OK["a"], "planted failure a"


def test_b():
    assert numba_cuda.OK["b"], "planted failure b"


@pytest.mark.xfail(reason="c is not done yet")
def test_c():
    assert numba_cuda.OK["c"]


def test_d():
    if not numba_cuda.OK["d"]:
        pytest.skip("d is not supported here")
'''


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _code(ok, delay_us, extra=False):
    return textwrap.dedent(f'''
        OK = {ok!r}
        DELAY_NS = {int(delay_us * 1000)}
        try:  # a C busy-wait: the launch's counts stay the same whatever the wait takes
            from launchbench.workloads._tls import spin
        except ImportError:  # conformance runs need no launchbench
            def spin(ns):
                pass

        def _extra():
            return None

        def launch(*args):
            spin(DELAY_NS)
        ''') + ("    _extra()\n" if extra else "")


def _launch_bytecodes(code: str) -> dict:
    """Instructions per call of the stand-in's functions (straight-line: every one but RESUME runs)."""
    space: dict = {}
    exec(compile(code, "numba_cuda", "exec"), space)
    return {name: sum(1 for i in dis.get_instructions(space[name]) if i.opname != "RESUME")
            for name in ("launch", "_extra")}


BASE_OK = {"a": False, "b": True, "c": False, "d": True}


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    repo = tmp_path_factory.mktemp("pr-standin")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "setup.py").write_text('from setuptools import setup\nsetup(name="numba-cuda", version=open('
                                   '"numba_cuda/VERSION").read().strip(), packages=["numba_cuda"])\n')
    (repo / "numba_cuda").mkdir()
    (repo / "numba_cuda" / "VERSION").write_text("0.1.0\n")
    (repo / "numba_cuda" / "numba" / "cuda").mkdir(parents=True)  # numba-cuda's CUDA package: builds.check_numba_cuda
    for name in ("__init__.py", "dispatcher.py"):
        (repo / "numba_cuda" / "numba" / "cuda" / name).write_text("")
    init = repo / "numba_cuda" / "__init__.py"
    init.write_text(_code(BASE_OK, 5))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    branches = {"fix": ({**BASE_OK, "a": True}, 5), "break": ({**BASE_OK, "b": False, "c": True, "d": False}, 5),
                "slow": (BASE_OK, 5 + STEP_US), "both": ({**BASE_OK, "b": False}, 5 + STEP_US),
                "extra": (BASE_OK, 5)}
    for name, (ok, delay) in branches.items():
        _git(repo, "checkout", "-q", "-b", name, "main")
        init.write_text(_code(ok, delay, extra=name == "extra"))
        _git(repo, "commit", "-q", "-am", name)
    _git(repo, "checkout", "-q", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "main moves on")  # the merge base is not main's tip
    suite = repo.parent / "suite_standin.py"
    suite.write_text(SUITE)
    return repo, str(suite)


def _argv(standin, tmp_path, ref, *extra):
    repo, suite = standin
    cache = tmp_path.parent / "pr-shared-cache"
    return ["pr", str(repo), ref, "--suite", suite, "--target", "numba_cuda:launch",
            "--wheel-cache", str(cache / "wheels"), "--env-dir", str(cache / "envs"), "--args", "0",
            "--repeats", "5", "--sample-time", "0.002", "--warmup", "20", "--quiet",
            "--out", str(tmp_path / "out"), *extra]


def _doc(tmp_path):
    return json.loads((tmp_path / "out" / "pr.json").read_text()), (tmp_path / "out" / "pr.md").read_text()


# ---------------------------------------------------------------- pure parts

def test_classify_names_each_kind_of_change():
    assert conformance.classify("passed", "failed") == "broken"
    assert conformance.classify("xfailed", "error") == "broken"
    assert conformance.classify(None, "failed") == "broken"
    assert conformance.classify("failed", "passed") == "fixed"
    assert conformance.classify("xfailed", "xpassed") == "xfail_to_xpass"
    assert conformance.classify("passed", "skipped") == "newly_skipped"
    assert conformance.classify("skipped", "passed") == "newly_run"
    assert conformance.classify("passed", "passed") is None
    assert conformance.classify("failed", "failed") is None  # still failing: not this PR's doing
    assert conformance.classify("passed", None) == "removed"


def test_exit_codes():
    assert conformance.exit_code("ok", None) == 0
    assert conformance.exit_code("ok", {"verdict": "undecided"}) == 0
    assert conformance.exit_code("unknown", {"verdict": "pass"}) == 0
    assert conformance.exit_code("ok", {"verdict": "fail"}) == 1
    assert conformance.exit_code("broken", {"verdict": "pass"}) == 3
    assert conformance.exit_code("ok", None, head_built=False) == 3
    assert conformance.exit_code("broken", {"verdict": "fail"}) == 4


# ---------------------------------------------------------------- end to end on the stand-in

@pytest.mark.slow
def test_a_fix_is_named_and_passes(standin, tmp_path, capsys):
    rc = cli.main(_argv(standin, tmp_path, "fix", "--no-measure"))
    out = capsys.readouterr().out
    assert rc == 0, out
    doc, md = _doc(tmp_path)
    changes = doc["conformance"]["changes"]
    assert [c["test"] for c in changes["fixed"]] == ["test_a"]
    assert "planted failure a" in changes["fixed"][0]["text"]  # the base's failure text
    assert not changes["broken"] and doc["conformance"]["verdict"] == "ok"
    assert doc["base"]["sha"] == _git(standin[0], "rev-parse", "main~1")  # the merge base, not main's tip
    assert out.splitlines()[0].startswith("conformance: ok")
    assert "| fixed | `test_a` | failed | passed |" in md
    assert md.startswith("## launchbench pr:")


@pytest.mark.slow
def test_a_break_is_named_with_its_failure_text_and_exits_3(standin, tmp_path, capsys):
    rc = cli.main(_argv(standin, tmp_path, "break", "--no-measure"))
    assert rc == 3
    doc, md = _doc(tmp_path)
    ch = doc["conformance"]["changes"]
    assert [c["test"] for c in ch["broken"]] == ["test_b"]
    assert "planted failure b" in ch["broken"][0]["text"]
    assert [c["test"] for c in ch["xfail_to_xpass"]] == ["test_c"]
    assert [c["test"] for c in ch["newly_skipped"]] == ["test_d"]
    assert "d is not supported here" in ch["newly_skipped"][0]["text"]
    assert not ch["fixed"]
    assert capsys.readouterr().out.startswith("conformance: BROKEN")
    assert "<details><summary>broken" in md and "planted failure b" in md


@pytest.mark.slow
def test_a_cost_is_measured_and_gated(standin, tmp_path, capsys):
    rc = cli.main(_argv(standin, tmp_path, "slow", "--fail-if-slower", "50", "--rounds", "12",
                        "--min-rounds", "3"))
    out = capsys.readouterr().out
    assert rc == 1, out
    doc, md = _doc(tmp_path)
    assert doc["conformance"]["verdict"] == "ok"
    assert doc["gate"]["verdict"] == "fail"
    (d,) = [d for d in doc["measurement"]["deltas"] if d["variant"] == doc["head"]["variant"]]
    assert d["ci_us"][0] > 0 and d["delta_us"] > STEP_US / 2
    assert "cost: SLOWER than the 50 % gate" in out
    assert "### Launch cost" in md
    # a C-level wait: the time moved (asserted above), no count did, and the comment says so
    counts = doc["measurement"]["counts"]
    head = doc["head"]["variant"]
    assert counts["reproducible"] and not counts["diffs"][head]["0"]["moved"]
    assert f"counts: identical per launch (exact); the cost moved: {NOT_VISIBLE}" in out
    assert f"| 0 | head ({doc['head']['short']}) | +0 |" in md and NOT_VISIBLE in md


@pytest.mark.slow
def test_one_more_python_call_shows_exactly_in_the_counts(standin, tmp_path, capsys):
    """The head calls one more Python function per launch: the counts say by how many bytecodes,
    entries and calls, exactly, in the JSON, the terminal and the PR comment; the exit code
    does not change (no gate, conformance unchanged)."""
    rc = cli.main(_argv(standin, tmp_path, "extra", "--no-conformance", "--rounds", "2", "--counts", "2"))
    out = capsys.readouterr().out
    assert rc == 0, out
    doc, md = _doc(tmp_path)
    base_code, head_code = _launch_bytecodes(_code(BASE_OK, 5)), _launch_bytecodes(_code(BASE_OK, 5, extra=True))
    in_launch = head_code["launch"] - base_code["launch"]
    want = in_launch + head_code["_extra"]
    counts = doc["measurement"]["counts"]
    head, base = doc["head"]["variant"], doc["base"]["variant"]
    assert counts["reference"] == base and counts["reproducible"]
    assert sorted(r["round"] for r in counts["records"] if r["variant"] == head) == [0, 1]  # two fresh processes
    assert len({r["worker"] for r in counts["records"]}) == 4
    d = counts["diffs"][head]["0"]
    assert d["moved"] and d["per_launch"]["bytecodes"] == want
    assert d["per_launch"]["entries"] == 1 and d["per_launch"]["c_calls"] == 0
    rows = {f["function"]: f["delta"] for f in d["functions"]}
    assert set(rows) == {"launch", "_extra"} and [f["function"] for f in d["functions"]] == ["launch", "_extra"]
    assert rows["launch"]["bytecodes"] == in_launch and rows["launch"]["entries"] == 0
    assert rows["_extra"]["bytecodes"] == head_code["_extra"] and rows["_extra"]["entries"] == 1
    label = f"head ({doc['head']['short']})"
    assert f"| 0 | {label} | +{want} |" in md and "### Exact counts per launch" in md
    assert f"| launch | numba_cuda | +{in_launch} |" in md
    calls = "+1 calls" if "calls" in d["kinds"] else "+0 C calls"  # sys.monitoring sees Python calls too
    assert f"counts: head - base +{want} bytecodes / {calls} at 0 args per launch (exact; most in launch" in out


@pytest.mark.slow
def test_broken_and_slower_exits_4_and_base_can_be_given(standin, tmp_path, capsys):
    repo, _ = standin
    rc = cli.main(_argv(standin, tmp_path, "both", "--base", "fix", "--fail-if-slower", "50", "--rounds", "12",
                        "--min-rounds", "3"))
    assert rc == 4, capsys.readouterr().out
    doc, _md = _doc(tmp_path)
    assert doc["base"]["sha"] == _git(repo, "rev-parse", "fix")
    ch = doc["conformance"]["changes"]
    # against fix (a and b pass) both break on both; against main's merge base (a already fails) only b would
    assert [c["test"] for c in ch["broken"]] == ["test_a", "test_b"]
    assert ch["fixed"] == []


@pytest.mark.slow
def test_build_only_then_offline(standin, tmp_path, capsys):
    """--build-only fills the wheel cache; a run with --wheels pointing at an empty folder (no index at all)
    then needs nothing it does not have."""
    rc = cli.main(_argv(standin, tmp_path, "fix", "--build-only"))
    lines = capsys.readouterr().out.split("\n")
    assert rc == 0 and all(line.split()[1].endswith(".whl") for line in lines if line)
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    rc = cli.main(_argv(standin, tmp_path, "fix", "--build-only", "--wheels", str(empty)))
    assert rc == 0


def test_user_mistakes_are_one_line_errors(standin, tmp_path, capsys):
    repo, _ = standin
    cases = [(["--fail-if-slower", "-1"], "--fail-if-slower"), (["--rounds", "1"], "--rounds"),
             (["--no-measure", "--no-conformance"], "nothing to do"), (["--base", "nope"], "unknown revision")]
    cases += [(["--rounds", "5", "--min-rounds", "6"], "--min-rounds 6 is more than --rounds 5"),
              (["--base", "fix"], "is older than its base fix")]  # a head behind its base
    for extra, want in cases:
        try:
            rc = cli.main(_argv(standin, tmp_path, "main~1" if "fix" in extra else "fix", *extra))
        except SystemExit as exc:  # argparse: the option's type (base/options.py) refused it
            rc = exc.code
        err = capsys.readouterr().err
        assert rc == 2 and want in err and "Traceback" not in err, (extra, err)
    rc = cli.main(_argv(standin, tmp_path, "main"))
    assert rc == 2 and "its own base" in capsys.readouterr().err
    (tmp_path / "afile").write_text("x")
    argv = _argv(standin, tmp_path, "fix")
    argv[argv.index("--out") + 1] = str(tmp_path / "afile")
    assert cli.main(argv) == 2 and "is a file" in capsys.readouterr().err


def test_a_strict_xfail_that_passes_is_xfail_to_xpass_not_broken():
    """pytest fails a strict xfail that passes ('[XPASS(strict)] ...'); the bug it pins is fixed, so the report
    must say xfail -> xpass (a real run once called this 'broken')."""
    from launchbench.engine import conformance

    base = {"t": {"outcome": "xfailed", "text": "known race"}, "u": {"outcome": "passed", "text": ""}}
    head = {"t": {"outcome": "failed", "text": "[XPASS(strict)] known race"},
            "u": {"outcome": "failed", "text": "AssertionError: wrong kernel"}}
    changes = conformance.diff(base, head)
    assert [c["test"] for c in changes["xfail_to_xpass"]] == ["t"]
    assert [c["test"] for c in changes["broken"]] == ["u"]
    assert conformance.summarize(head) == {"failed": 1, "xpassed": 1}
    run = {"ok": True}
    conf = conformance.reclassify({"base": {**run, "tests": base}, "head": {**run, "tests": {"t": head["t"]}},
                                   "verdict": "broken", "changes": {}})
    assert conf["verdict"] == "ok" and conf["head"]["counts"] == {"xpassed": 1}


def test_no_gpu_is_refused_before_any_build(standin, tmp_path, capsys, monkeypatch):
    """Without --target or --simulator pr measures on a GPU: refused before a wheel is built or the
    conformance suite runs (once, after 34 s of both)."""
    from launchbench.engine import conformance
    from launchbench.environments import builds

    def tripwire(*a, **k):
        raise AssertionError("a build or a conformance run started before the GPU check")

    monkeypatch.setattr(builds.WheelCache, "build", tripwire)
    monkeypatch.setattr(conformance, "run_suite", tripwire)
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    argv = _argv(standin, tmp_path, "fix")
    i = argv.index("--target")
    del argv[i:i + 2]
    rc = cli.main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "NUMBA_ENABLE_CUDASIM=1" in err, err
