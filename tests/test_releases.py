"""Release series, stacks and prebuilt wheels on stand-in wheels made here (CPU only).

The stand-in folder holds tiny ``numba-cuda`` wheels whose METADATA requires stand-in ``numba``,
``llvmlite``, ``numpy`` and ``cuda-core`` wheels (their modules are named ``standin_*``, so nothing real
is shadowed): the grammar expands against it, the resolver picks the newest stack its metadata allows,
a release that does not import on the newest stack is tried on an older one, and every refusal is
one line.
"""
import base64
import contextlib
import hashlib
import io
import itertools
import os
import sys
import zipfile
from pathlib import Path

import pytest

from launchbench import cli
from launchbench.base.atomic import read_json
from launchbench.base.errors import UserError
from launchbench.engine import stackbisect
from launchbench.environments import releases as rel

PY = "py3-none-any"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def make_wheel(folder, name, version, requires=(), files=None, tag=PY):
    """A minimal valid wheel (METADATA, WHEEL, RECORD with hashes)."""
    dist = name.replace("-", "_")
    path = os.path.join(folder, f"{dist}-{version}-{tag}.whl")
    info = f"{dist}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires) + "\n"
    members = dict(files or {})
    members[f"{info}/METADATA"] = meta
    members[f"{info}/WHEEL"] = f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"
    record = []
    for arc, text in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(text.encode())}")
    members[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as z:
        for arc, text in members.items():
            z.writestr(arc, text)
    return path


def launch_code(delay_us, fails_with=None):
    """A stand-in numba_cuda: ``launch`` busy-waits; *fails_with* (a condition on the installed
    stand-in numba's version, and the error text) makes the import fail."""
    check = ""
    if fails_with:
        cond, text = fails_with
        check = f"import standin_numba\nif {cond}:\n    raise ImportError({text!r})\n"
    return check + (f"import time\nDELAY_S = {delay_us} * 1e-6\n\ndef launch(*args):\n"
                    "    end = time.perf_counter() + DELAY_S\n    while time.perf_counter() < end:\n        pass\n")


def dep_wheel(folder, name, version, requires=()):
    mod = "standin_" + name.replace("-", "_")
    return make_wheel(folder, name, version, requires,
                      {f"{mod}/__init__.py": f"VERSION = {tuple(int(x) for x in version.split('.'))!r}\n"})


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    """numba-cuda 0.1.0..0.5.0 and their stand-in dependencies.

    0.3.0 fails to import with numba >= 0.68 (the error names numba.core): its newest working stack
    has numba 0.65.1. 0.4.0 has only a wheel for another Python. 0.5.0 never imports."""
    d = str(tmp_path_factory.mktemp("wheels"))
    for v, req in (("0.60.0", ["llvmlite==0.43.*", "numpy<2.1"]), ("0.65.1", ["llvmlite==0.47.*", "numpy<2.5"]),
                   ("0.68.1", ["llvmlite==0.50.*", "numpy<2.6"])):
        dep_wheel(d, "numba", v, req)
    for v in ("0.43.0", "0.47.0", "0.50.0"):
        dep_wheel(d, "llvmlite", v)
    for v in ("2.0.2", "2.3.5", "2.4.4", "2.5.5"):
        dep_wheel(d, "numpy", v)
    for v in ("0.7.0", "1.2.2"):
        dep_wheel(d, "cuda-core", v)
    base = ["numba>=0.60", 'cuda-core>=0.5; extra == "cu13"', "cuda-core<2"]
    specs = {"0.1.0": (base, launch_code(5)), "0.2.0": (base, launch_code(5)),
             "0.3.0": (base, launch_code(5, ("standin_numba.VERSION >= (0, 68)",
                                              "cannot import name 'NPDatetime' from 'numba.core.types'"))),
             "0.5.0": (base, launch_code(5, ("True", "broken release")))}
    for v, (req, code) in specs.items():
        make_wheel(d, "numba-cuda", v, req, {"numba_cuda/__init__.py": code})
    make_wheel(d, "numba-cuda", "0.4.0", base, {"numba_cuda/__init__.py": launch_code(5)},
               tag="cp27-cp27mu-manylinux1_x86_64")
    return d


TAGS = ["py3-none-any", "cp311-cp311-manylinux_2_17_x86_64"]


# ---------------------------------------------------------------- grammar


def test_the_range_grammar_expands_to_every_final_release_in_order():
    have = ["0.3.0", "0.4.0", "0.4.1", "0.4.2", "0.5.0rc1", "0.5.0", "0.6.0", "0.10.0"]
    item = rel.parse_item("numba-cuda-mlir==0.4.0..0.6.0")
    assert item.is_range and item.project == "numba-cuda-mlir"
    assert rel.expand(item, have) == ["0.4.0", "0.4.1", "0.4.2", "0.5.0", "0.6.0"]  # no rc, 0.10 > 0.6
    assert rel.expand(rel.parse_item("numba-cuda-mlir==0.6.0.."), have) == ["0.6.0", "0.10.0"]
    assert rel.expand(rel.parse_item("numba_cuda==0.4.2,0.3.0"), have) == ["0.4.2", "0.3.0"]  # as given
    stack = rel.parse_item("numba-cuda==0.30.4+cuda-core==1.2.2+numba==0.68.1+pinned")
    assert stack.pins == (("cuda-core", "1.2.2"), ("numba", "0.68.1")) and stack.pinned


@pytest.mark.parametrize("text, words", [
    ("numba-cuda==0.6.0..0.3.0", "write the older release first"),
    ("numba-cuda==0.3.0..x", "is not a version"),
    ("numba==0.65.1", "is not understood"),
    ("numba-cuda==0.30.4+numba==0.65.1+numba==0.68.1", "conflicting pins numba==0.65.1 and numba==0.68.1"),
    ("numba-cuda==0.30.4+cuda-core", "is not DEP==VERSION"),
    ("/nowhere/x.whl", "does not exist"),
])
def test_bad_series_are_one_line_errors(text, words):
    with pytest.raises(UserError) as exc:
        rel.parse_item(text)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_an_unknown_version_is_refused_naming_its_neighbours():
    with pytest.raises(UserError) as exc:
        rel.expand(rel.parse_item("numba-cuda==0.29.0,0.29.5"), ["0.28.0", "0.29.0", "0.30.0"])
    assert str(exc.value) == ("series 'numba-cuda==0.29.0,0.29.5': numba-cuda 0.29.5 was never released (nearest "
                              "older 0.29.0, nearest newer 0.30.0; 3 known); pick a released version")
    with pytest.raises(UserError, match="0.2.9 was never released"):
        rel.expand(rel.parse_item("numba-cuda==0.2.9..0.30.0"), ["0.28.0", "0.30.0"])


# ---------------------------------------------------------------- resolution


def test_pins_resolve_to_the_newest_stack_the_metadata_allows(wheelhouse):
    index = rel.FolderIndex(wheelhouse)
    reqs = index.requires("numba-cuda", "0.2.0")
    got = rel.resolve(reqs, index, TAGS)
    # numba 0.68.1 is newest; its own metadata picks llvmlite 0.50 and numpy < 2.6
    assert got == {"numba": "0.68.1", "llvmlite": "0.50.0", "numpy": "2.5.5", "cuda-core": "1.2.2"}
    # a pin is kept and constrains the rest through numba's metadata
    got = rel.resolve(reqs, index, TAGS, pins={"numba": "0.65.1"})
    assert got == {"numba": "0.65.1", "llvmlite": "0.47.0", "numpy": "2.4.4", "cuda-core": "1.2.2"}
    # a cap (step_down's) drops a whole series
    got = rel.resolve(reqs, index, TAGS, caps={"numba": rel.series_cap("0.68.1")})
    assert got["numba"] == "0.65.1"
    # without the cu13 extra, only the unconditional cuda-core<2 holds: the same newest
    assert rel.resolve(reqs, index, TAGS, extras=())["cuda-core"] == "1.2.2"


def test_conflicting_pins_name_the_requirement_that_forbids_them(wheelhouse):
    index = rel.FolderIndex(wheelhouse)
    reqs = index.requires("numba-cuda", "0.2.0")
    with pytest.raises(rel.Conflict) as exc:
        rel.resolve(reqs, index, TAGS, pins={"numba": "0.50.0"})
    assert str(exc.value) == "pin numba==0.50.0 conflicts with the release's requirement numba>=0.60"
    with pytest.raises(rel.Conflict) as exc:  # numpy 2.5.5 with numba 0.65.1 (numpy<2.5)
        rel.resolve(reqs, index, TAGS, pins={"numba": "0.65.1", "numpy": "2.5.5"})
    assert str(exc.value) == "pin numpy==2.5.5 conflicts with numba==0.65.1's requirement numpy<2.5"
    with pytest.raises(rel.Conflict, match="no such version in --wheels"):
        rel.resolve(reqs, index, TAGS, pins={"cuda-core": "1.9.9"})


def test_the_offline_no_deps_retry_adds_what_the_folder_holds_transitively(tmp_path):
    """An offline install whose resolver fails (an extra names a package only the host has) retries with
    --no-deps: the retry must still bring the folder's transitive needs (cuda-bindings 13.5 did not import
    without cuda-pathfinder), each once, markers and extras read, nothing already named."""
    d = str(tmp_path)
    make_wheel(d, "numba-cuda", "0.30.4", ['cuda-bindings>=13; extra == "cu13"', 'cuda-toolkit==13.*; extra == "cu13"',
                                           "packaging", 'winonly; sys_platform == "win32"'])
    make_wheel(d, "cuda-bindings", "13.5.0", ["cuda-pathfinder>=1.1"])
    for v in ("1.0.0", "1.9.1"):
        make_wheel(d, "cuda-pathfinder", v)
    make_wheel(d, "packaging", "26.4")
    make_wheel(d, "winonly", "1.0")
    index = rel.FolderIndex(d)
    env = {"sys_platform": "linux", "python_version": "3.12"}
    got = rel.folder_closure(["numba-cuda[cu13]==0.30.4", "cuda-bindings==13.5.0"], index, env)
    assert sorted(got) == ["cuda-pathfinder==1.9.1", "packaging==26.4"]
    # without the extra, the extra's requirements (and what they pull in) stay out
    assert rel.folder_closure(["numba-cuda==0.30.4"], index, env) == ["packaging==26.4"]


def test_step_down_lowers_the_dependency_an_import_error_says_is_too_new():
    """numba-cuda-mlir 0.3.0 on the GPU: "Numba needs NumPy 2.4 or less. Got NumPy 2.5." lowered cuda-core (the
    capitalized NumPy matched nothing) and the release was refused; the dependency needed older is the one."""
    err = "does not import: ImportError: Numba needs NumPy 2.4 or less. Got NumPy 2.5."
    mlir_stack = {"llvmlite": "0.50.0", "numpy": "2.5.5", "cuda-core": "1.2.2", "cuda-bindings": "13.5.0"}
    assert rel.step_down(mlir_stack, err, {}, []) == "numpy"
    assert rel.step_down(dict(mlir_stack, numba="0.68.1"), err, {}, []) == "numpy"  # not numba, which complains
    assert rel.step_down(dict(mlir_stack, numba="0.68.1"), err, {"numpy": "2.5.5"}, []) == "numba"  # numpy pinned
    assert rel.step_down(mlir_stack, "ModuleNotFoundError: No module named 'cuda.core._x'", {}, []) == "cuda-core"


def test_step_down_lowers_the_dependency_the_error_names_else_numba_first():
    stack = {"numba": "0.68.1", "llvmlite": "0.50.0", "numpy": "2.5.5", "cuda-core": "1.2.2"}
    assert rel.step_down(stack, "ImportError: cannot import name 'GraphBuilder' from 'cuda.core'", {}, []) == "cuda-core"
    assert rel.step_down(stack, "AttributeError: module 'numpy' has no attribute 'row_stack'", {}, []) == "numpy"
    assert rel.step_down(stack, "something else", {}, []) == "numba"
    assert rel.step_down(stack, "something else", {"numba": "0.68.1"}, []) == "cuda-core"  # never a user pin
    assert rel.step_down({"numba": "1"}, "x", {"numba": "1"}, []) is None


# ---------------------------------------------------------------- stack bisect (pure)


def test_the_stack_chain_changes_one_dependency_per_point_and_names_the_mover():
    a = {"numba": "0.65.1", "llvmlite": "0.47.0", "numpy": "2.3.5", "cuda-core": "0.7.0"}
    b = {"numba": "0.68.1", "llvmlite": "0.50.0", "numpy": "2.3.5", "cuda-core": "1.2.2", "cuda-bindings": "13.5.0"}
    chain = stackbisect.chain(a, b)
    assert [g for _s, g in chain] == [(), ("numba", "llvmlite"), ("cuda-core",), ("cuda-bindings",)]
    assert chain[-1][0] == b and chain[1][0]["cuda-core"] == "0.7.0" and chain[2][0]["numba"] == "0.68.1"
    pts = [(f"p{i}", g) for i, (_s, g) in enumerate(chain)]

    def step(pid, lo, hi, est):
        return {"commit": pid, "nargs": 0, "delta_us": (lo + hi) / 2, "ci_us": [lo, hi], "n": 10, "established": est}
    got = stackbisect.attribute(pts, [step("p1", -0.1, 0.1, False), step("p2", 0.6, 0.9, True),
                                      step("p3", -0.2, 0.1, False)])
    assert got["named"] == [["cuda-core"]] and got["verdict"] == "moved by cuda-core"
    got = stackbisect.attribute(pts, [step("p1", -0.1, 0.1, False)])
    assert got["verdict"].startswith("undecided: not measured at cuda-core; cuda-bindings")


def _cstep(pid, moved=None, error=None, bc=0):
    """A counts step of point *pid* (``commitcounts.step``'s shape at 0 args; none: *error*)."""
    if error:
        return {"commit": pid, "error": error}
    d = {"per_launch": {"bytecodes": bc, "calls": 0}, "moved": moved, "counts_moved": moved, "c_callees": [],
         "functions": [{"function": "_Kernel.launch", "delta": {"bytecodes": bc}, "status": "changed"}] if moved else [],
         "functions_changed": int(bool(moved)), "kinds": ["bytecodes", "calls"], "c_callees_changed": 0}
    return {"commit": pid, "moved": moved, "per_nargs": {"0": d}}


def test_the_stack_bisect_says_where_the_exact_counts_change():
    """A pin whose time step is too small to establish still changes what a launch executes: the counts
    name it (numba-cuda's #877 branch on cuda-core >= 1.0 is one bytecode in _Kernel.launch)."""
    pts = [("p0", ()), ("p1", ("numba", "llvmlite")), ("p2", ("numpy",)), ("p3", ("cuda-core",))]

    def step(pid):
        return {"commit": pid, "nargs": 0, "delta_us": 0.1, "ci_us": [-0.1, 0.3], "n": 20, "established": False}
    sb = stackbisect.attribute(pts, [step("p1"), step("p2"), step("p3")])
    assert sb["verdict"] == "no single dependency's step is established"
    counts = [_cstep("p1", False), _cstep("p2", False), _cstep("p3", True, bc=1)]
    pairs = stackbisect.counted(sb, counts)
    assert [(g, c["commit"]) for g, c in pairs] == [(["numba", "llvmlite"], "p1"), (["numpy"], "p2"), (["cuda-core"], "p3")]
    assert stackbisect.counts_reading(pairs) == "exact counts change only at cuda-core"
    both = stackbisect.counted(sb, [_cstep("p1", True, bc=4), _cstep("p2", False), _cstep("p3", True, bc=1)])
    assert stackbisect.counts_reading(both) == "exact counts change at numba+llvmlite; cuda-core"
    none = stackbisect.counted(sb, [_cstep("p1", False), _cstep("p2", False), _cstep("p3", error="no counter")])
    assert stackbisect.counts_reading(none) == "exact counts identical at every step; not comparable at cuda-core"
    assert stackbisect.counts_reading(stackbisect.counted(sb, [])) == ""  # not counted: nothing said

    from launchbench.output import releases as out

    doc = {"range": "a b", "rounds_completed": 20, "settings": {"threshold_us": 0.2, "arg_counts": [0]},
           "points": [], "levels": {}, "steps": [], "stack_bisect": sb,
           "counts": {"steps": counts, "per_commit": {}, "unusable": {}}}
    text = out.render(doc)
    assert "stack bisect: no single dependency's step is established; exact counts change only at cuda-core" in text
    assert "  cuda-core: 0 args +0.10 [-0.10, +0.30]; counts +1 bc, +0 calls (_Kernel.launch +1 bc)" in text
    assert "  numpy: 0 args +0.10 [-0.10, +0.30]; counts =" in text
    uncounted = out.render({k: v for k, v in doc.items() if k != "counts"})
    assert "stack bisect: no single dependency's step is established\n" in uncounted and "; counts" not in uncounted


# ---------------------------------------------------------------- end to end (stand-in wheels)


def _common(tmp_path, wheels):
    cache = tmp_path.parent / "releases-cache"
    return ["--target", "numba_cuda:launch", "--simulator", "--wheels", wheels, "--env-dir", str(cache / "envs"),
            "--args", "0", "--repeats", "3", "--sample-time", "0.002", "--warmup", "10", "--threshold", "10",
            "--rounds", "2", "--quiet", "--no-report"]


@pytest.mark.slow
def test_a_series_resolves_each_stack_and_refuses_in_one_line_each(wheelhouse, tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = cli.main(["releases", "numba-cuda==0.1.0..0.5.0", "numba-cuda==0.2.0+numba==0.50.0", "-o", str(out),
                   *_common(tmp_path, wheelhouse)])
    text, err = capsys.readouterr()
    assert rc == 0, err
    doc = read_json(out)
    by = {p["sha"]: p for p in doc["points"]}
    assert [p["sha"] for p in doc["points"] if p["measured"]] == ["numba-cuda==0.1.0", "numba-cuda==0.2.0",
                                                                  "numba-cuda==0.3.0"]
    assert by["numba-cuda==0.1.0"]["stack"] == {"numba": "0.68.1", "llvmlite": "0.50.0", "numpy": "2.5.5",
                                                "cuda-core": "1.2.2"}
    # 0.3.0 does not import with numba 0.68: the error names numba.core, so numba is lowered
    r3 = by["numba-cuda==0.3.0"]
    assert r3["stack"]["numba"] == "0.65.1" and r3["stack"]["llvmlite"] == "0.47.0"
    assert [t["stack"]["numba"] for t in r3["tried"]] == ["0.68.1", "0.65.1"]
    assert r3["tried"][0]["error"].startswith("does not import: ImportError: cannot import name 'NPDatetime'")
    refused = {r["point"]: r["reason"] for r in doc["refused"]}
    py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert refused["numba-cuda==0.4.0"] == f"no wheel for {py} in --wheels {wheelhouse} (its files: cp27)"
    assert refused["numba-cuda==0.5.0"].startswith("does not import: ImportError: broken release")
    assert refused["numba-cuda==0.2.0+numba==0.50.0"] == (
        "conflicting pins: pin numba==0.50.0 conflicts with the release's requirement numba>=0.60")
    # one line each on stderr, the run went on; each measured point has a level and a step with a CI
    for point in refused:
        lines = [ln for ln in err.splitlines() if ln.startswith(f"launchbench: {point}: ")]
        assert len(lines) == 1 and lines[0].endswith("; skipped"), err
    assert set(doc["levels"]) == {"numba-cuda==0.1.0", "numba-cuda==0.2.0", "numba-cuda==0.3.0"}
    assert {(s["previous"], s["commit"]) for s in doc["steps"]} == {
        ("numba-cuda==0.1.0", "numba-cuda==0.2.0"), ("numba-cuda==0.2.0", "numba-cuda==0.3.0")}
    assert "refused: numba-cuda==0.5.0: does not import" in text
    (tmp_path.parent / "releases-text.txt").write_text(text)


def test_an_unknown_version_or_a_doubled_pin_is_exit_2_before_any_env(wheelhouse, tmp_path, capsys):
    for series in (["numba-cuda==0.1.0,0.9.9"], ["numba-cuda==0.1.0+numba==0.65.1+numba==0.68.1", "numba-cuda==0.2.0"],
                   ["numba-cuda==0.1.0"]):
        rc = cli.main(["releases", *series, "-o", str(tmp_path / "x.json"), *_common(tmp_path, wheelhouse)])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and err.startswith("launchbench: error: "), err
    assert not (tmp_path.parent / "releases-cache-unused").exists()
    assert sorted(os.listdir(tmp_path)) == []


@pytest.mark.slow
def test_prebuilt_wheels_are_history_points_in_the_order_given(tmp_path, capsys, timing_checks):
    """Bring your own builds: five CI-artifact-like wheels of one version with local versions, one of
    them 40 us slower, measured offline in the order given; the slow one's step is named."""
    d = tmp_path / "artifacts"
    d.mkdir()
    delays = {"a1": 5, "b2": 5, "c3": 45, "d4": 45, "e5": 45}
    order = []
    for sha, delay in delays.items():
        order.append(make_wheel(str(d), "numba-cuda", f"0.31.0+g{sha}", [],
                                {"numba_cuda/__init__.py": launch_code(delay)}))
    out = tmp_path / "byo.json"
    argv = _common(tmp_path, str(d))
    argv[argv.index("--rounds") + 1] = "4"
    rc = cli.main(["releases", *order, "-o", str(out), *argv])
    assert rc == 0, capsys.readouterr().err
    doc = read_json(out)
    names = [os.path.basename(p) for p in order]
    assert [p["sha"] for p in doc["points"]] == names and all(p["measured"] for p in doc["points"])
    assert all(p["stack"] == {} for p in doc["points"])  # no tracked dependency required
    assert [(s["previous"], s["commit"]) for s in doc["steps"]] == list(itertools.pairwise(names))
    step = next(s for s in doc["steps"] if s["commit"] == names[2])
    # a busy-wait is never early, so the lower bound holds under any load (tests/test_history.py)
    assert step["delta_us"] > 20
    if timing_checks:  # preemption only inflates: naming only it is a quiet-machine check
        assert doc["established"] == [names[2]]
    assert doc["range"] == " ".join(names)


@pytest.mark.slow
def test_stack_bisect_measures_the_one_pin_chain_between_two_stacks(wheelhouse, tmp_path, capsys):
    """numba-cuda 0.2.0 on numba 0.65.1 vs its newest stack: the chain moves numba+llvmlite, then numpy,
    each point one group of pins from the previous; the stand-in's cost does not depend on them."""
    out = tmp_path / "sb.json"
    rc = cli.main(["releases", "--stack-bisect", "numba-cuda==0.2.0+numba==0.65.1", "numba-cuda==0.2.0", "-o",
                   str(out), *_common(tmp_path, wheelhouse)])
    assert rc == 0, capsys.readouterr().err
    doc = read_json(out)
    stacks = [p["stack"] for p in doc["points"]]
    assert stacks[0] == {"numba": "0.65.1", "llvmlite": "0.47.0", "numpy": "2.4.4", "cuda-core": "1.2.2"}
    assert stacks[-1] == {"numba": "0.68.1", "llvmlite": "0.50.0", "numpy": "2.5.5", "cuda-core": "1.2.2"}
    assert [p["changed"] for p in doc["points"]] == [[], ["numba", "llvmlite"], ["numpy"]]
    sb = doc["stack_bisect"]
    assert [r["dependencies"] for r in sb["steps"]] == [["numba", "llvmlite"], ["numpy"]]
    assert all(r["measured"] for r in sb["steps"]) and sb["verdict"]
    assert "stack bisect: " in capsys.readouterr().out


def test_a_numba_cuda_mlir_point_launches_through_mlir():
    """Each point's workers import its own project's CUDA module: an mlir point measured through numba.cuda
    (numba's bundled copy, or a numba-cuda beside it) would be another package's launch."""
    from launchbench.engine import history, workerproc

    recs = [{"variant": "r01", "python": "/e1/bin/python", "project": "numba-cuda"},
            {"variant": "r02", "python": "/e2/bin/python", "project": "numba-cuda-mlir"},
            {"variant": "c03", "python": "/e3/bin/python"}]  # a commit of history: numba-cuda
    modules = history.plan_modules(recs)
    assert modules == {"r02": "numba-cuda-mlir"}
    env = workerproc.worker_environment("/overlay", False, modules.get("r02"))
    assert env["LAUNCHBENCH_CUDA_MODULE"] == "numba-cuda-mlir"
    assert "LAUNCHBENCH_CUDA_MODULE" not in workerproc.worker_environment("/overlay", False, modules.get("r01"))


@pytest.mark.slow
def test_arg_kind_reaches_every_worker_and_the_documents(tmp_path, capsys, monkeypatch):
    """--arg-kind scalar (up to 256 arguments): each worker's set-up carries it, the JSON's settings and
    the Markdown's title name it; an array kind is refused past 32 in one line before any env."""
    from launchbench.engine import runner

    d = tmp_path / "artifacts"
    d.mkdir()
    order = [make_wheel(str(d), "numba-cuda", f"0.31.0+g{sha}", [], {"numba_cuda/__init__.py": launch_code(5)})
             for sha in ("a1", "b2")]
    argv = _common(tmp_path, str(d))
    argv[argv.index("--args") + 1] = "0,256"
    argv.remove("--no-report")
    seen = []
    real = runner.run
    monkeypatch.setattr(runner, "run", lambda plan, *a, **k: seen.append(plan.setup) or real(plan, *a, **k))
    out = tmp_path / "scalar.json"
    rc = cli.main(["releases", *order, "--arg-kind", "scalar", "-o", str(out), *argv])
    assert rc == 0, capsys.readouterr().err
    assert seen and all(s.get("arg_kind") == "scalar" for s in seen)
    doc = read_json(out)
    assert doc["settings"]["arg_kind"] == "scalar" and doc["settings"]["arg_counts"] == [0, 256]
    assert "arg kind scalar" in (tmp_path / "scalar.md").read_text()
    capsys.readouterr()
    argv[argv.index("--args") + 1] = "0,40"
    rc = cli.main(["releases", *order, "--arg-kind", "cupy", "-o", str(tmp_path / "x.json"), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--args '0,40': 40 is more than 32" in err, err


# ---------------------------------------------------------------- counts beside the steps (stand-in wheels)


def counted_code(extra_call=False, refuse_counting=False):
    """A stand-in launch with exact counts (no busy-wait: a loop of fixed length and one C call);
    *extra_call* plants one more Python call, *refuse_counting* raises while a counter watches."""
    guard = ("    if any(sys.monitoring.get_tool(i) for i in range(6)):\n"
             "        raise RuntimeError('this launch refuses to be counted')\n") if refuse_counting else ""
    return ("import sys\n\ndef _extra():\n    pass\n\ndef launch(*args):\n" + guard +
            "    for _ in range(20):\n        pass\n" + ("    _extra()\n" if extra_call else "") +
            "    return sum(range(100))\n")


@pytest.fixture(scope="module")
def counted_run(tmp_path_factory):
    """One releases run over three prebuilt wheels, shared by the counts tests: g0 the base, g1 one
    planted Python call more, g2 a launch whose counting fails; scalar arguments, so the counts pass's
    set-up (recorded) can be told from the default."""
    from launchbench.engine import commitcounts

    base = tmp_path_factory.mktemp("counted")
    d = base / "artifacts"
    d.mkdir()
    codes = {"0": counted_code(), "1": counted_code(extra_call=True), "2": counted_code(True, refuse_counting=True)}
    order = [make_wheel(str(d), "numba-cuda", f"0.31.0+g{k}", [], {"numba_cuda/__init__.py": c}) for k, c in codes.items()]
    argv = _common(base / "run", str(d))
    argv.remove("--no-report")
    out = base / "counted.json"
    seen = []
    real = commitcounts.count_commits
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(commitcounts, "count_commits", lambda *a, **k: seen.append(k) or real(*a, **k))
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = cli.main(["releases", *order, "-o", str(out), "--arg-kind", "scalar", *argv])
    return {"rc": rc, "doc": read_json(out) if out.exists() else None, "text": stdout.getvalue(),
            "err": stderr.getvalue(), "md": (base / "counted.md").read_text() if rc == 0 else "", "seen": seen,
            "names": [os.path.basename(p) for p in order], "order": order, "base": base, "argv": argv}


def _row(rendered: str, point: str) -> str:
    return next(ln for ln in rendered.splitlines() if ln.lstrip("| ").startswith(point))


@pytest.mark.slow
def test_every_measured_point_is_counted_once_into_the_document(counted_run):
    """One counting process per point before the timing, with the timed launch's set-up; the
    per-launch totals land in the document keyed by variant, as history's."""
    assert counted_run["rc"] == 0, counted_run["err"]
    doc = counted_run["doc"]
    variants = [p["variant"] for p in doc["points"]]
    assert len(counted_run["seen"]) == 1  # one pass over every point
    assert counted_run["seen"][0]["setup"]["arg_kind"] == doc["settings"]["arg_kind"] == "scalar"  # as timed
    sec = doc["counts"]
    assert sec["processes"] == 3 and sorted(sec["per_commit"]) == sorted(variants)
    first = sec["per_commit"][variants[0]]["0"]
    assert first["steady"] and first["per_launch"]["calls"] > 0
    from launchbench.output import documents
    documents.validate(doc, "history")


@pytest.mark.slow
def test_a_planted_python_call_is_its_exact_counts_step_beside_the_us_step(counted_run):
    assert counted_run["rc"] == 0, counted_run["err"]
    doc, names = counted_run["doc"], counted_run["names"]
    by = {c["commit"]: c for c in doc["counts"]["steps"]}
    step = by[names[1]]
    assert step["previous"] == names[0] and step["moved"] is True
    d = step["per_nargs"]["0"]["per_launch"]
    assert d["calls"] == 1 and d["entries"] == 1 and d["bytecodes"] > 0  # exactly the one call, and its body
    us = next(s for s in doc["steps"] if s["commit"] == names[1])
    assert us["counts_reading"] == "counts moved"
    for rendered in (counted_run["text"], counted_run["md"]):
        row = _row(rendered, names[1])
        assert f"+{d['bytecodes']} bc, +1 calls" in row and f"{us['delta_us']:+.2f} [" in row, row
        assert _row(rendered, names[0]).rstrip(" |").endswith("first")  # no counts step before the first point


@pytest.mark.slow
def test_a_point_whose_counting_fails_is_unusable_and_still_timed(counted_run):
    assert counted_run["rc"] == 0, counted_run["err"]
    doc, names = counted_run["doc"], counted_run["names"]
    bad = names[2]
    why = doc["counts"]["unusable"][bad]
    assert "refuses to be counted" in why and list(doc["counts"]["unusable"]) == [bad]
    variant = next(p["variant"] for p in doc["points"] if p["sha"] == bad)
    assert "error" in doc["counts"]["per_commit"][variant]
    assert {c["commit"]: c for c in doc["counts"]["steps"]}[bad]["error"]
    assert bad in doc["levels"] and any(s["commit"] == bad for s in doc["steps"])  # timed all the same
    for rendered in (counted_run["text"], counted_run["md"]):
        assert _row(rendered, bad).rstrip(" |").endswith("n/a")
        assert f"counts unusable: {bad}: " in rendered


def test_a_document_from_before_counts_renders_without_the_counts_column():
    """Committed releases runs predate counts: their table is as it was, no empty column."""
    import gzip
    import json

    from launchbench.output import releases as out

    doc = json.loads(gzip.decompress((FIXTURES / "releases" / "history-1.json.gz").read_bytes()))
    assert "counts" not in doc
    head, body = out.rows(doc)
    assert "counts step" not in head and all(len(r) == len(head) for r in body)
    text = out.render(doc, markdown=True)
    assert "counts step" not in text and "counts unusable" not in text and "| point | stack |" in text
    counted = dict(doc, counts={"per_commit": {}, "steps": [], "unusable": {}})
    head, body = out.rows(counted)
    assert head[-1] == "counts step" and all(len(r) == len(head) for r in body)


@pytest.mark.slow
def test_no_counts_skips_the_pass_for_releases_as_for_history(counted_run):
    """The environments of the counted run, timed again without counting: no counts section, no column."""
    out = counted_run["base"] / "uncounted.json"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = cli.main(["releases", *counted_run["order"][:2], "-o", str(out), "--no-counts", *counted_run["argv"]])
    assert rc == 0, stderr.getvalue()
    doc = read_json(out)
    assert "counts" not in doc and "counts step" not in stdout.getvalue()
    assert not (counted_run["base"] / "uncounted.logs" / "counts").exists()


def test_report_renders_a_committed_releases_document_with_todays_renderer(tmp_path, capsys):
    """The counted GPU run's stack bisect (lab README): ``report`` prints its table with the counts beside
    the bisect, which the renderer of the day it ran did not write; --markdown writes the Markdown; a
    compare-only option is one line."""
    doc = str(Path(__file__).resolve().parent.parent / "lab" / "results" / "h100" / "2026-11-27-releases-counts"
              / "stack-bisect.json.gz")
    assert cli.main(["report", doc]) == 0
    out = capsys.readouterr().out
    assert "stack bisect: no single dependency's step is established; exact counts change only at cuda-core" in out
    assert "; counts +1 bc, +0 calls (_Kernel.launch +1 bc)" in out
    md = tmp_path / "sb.md"
    assert cli.main(["report", doc, "--markdown", str(md)]) == 0
    assert md.read_text().startswith("# Launch cost per point, numba-cuda==0.30.4+pinned numba-cuda==0.30.4")
    capsys.readouterr()
    assert cli.main(["report", doc, "--plot", str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--plot is for a compare JSON" in err and not (tmp_path / "p.png").exists()
