"""The hoist-imports what-if on CPU: the transform on a stand-in package with imports inside its
functions (the results stay the same; the counts drop by exactly the import machinery), the
statements it must leave in place, uninstall, and the mechanism's wiring on the installed
numba-cuda (its real ``args.py``; under the simulator the launch never reaches it)."""
import dis
import importlib
import sys
import textwrap

import pytest

from launchbench.engine import countdiff
from launchbench.workloads import counts, hoist
from launchbench.workloads.capture import mechanisms

HINTS = '''
"""A stand-in for numba-cuda's args.py: functions that import inside their bodies."""
import functools

TAG = "the module's own"


class Hint:
    def __init__(self, value):
        self.value = value

    def to_device(self, retr, stream=0):
        """Imports a function, a submodule of a package and a top-level module, every call."""
        from .sub.leaf import convert
        from .sub import leaf
        import json

        out = convert(self.value) + stream
        retr.append(lambda: (leaf.NAME, json.dumps(out)))
        return out


class Child(Hint):
    def to_device(self, retr, stream=0):
        from .sub.leaf import convert
        return super().to_device(retr, stream) + convert(1)


def plain(x):
    from .sub.leaf import convert
    return convert(x) + 1


def assigns(x):
    import json
    json = json.dumps(x)
    return json


def conditional(x):
    if x:
        from .sub.leaf import convert
        return convert(x)
    return 0


def clashing():
    from .sub.leaf import TAG
    return TAG


def optional():
    import launchbench_no_such_module
    return 1


def two_on_a_line(x):
    import json; from .sub.leaf import convert
    return json.dumps(convert(x))


@functools.lru_cache(maxsize=None)
def cached(x):
    from .sub.leaf import convert
    return convert(x)
'''


@pytest.fixture
def pkg(tmp_path, monkeypatch):
    root = tmp_path / "hoist_standin"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "leaf.py").write_text("NAME = 'leaf'\nTAG = 'leaf tag'\n\n\ndef convert(v):\n    return v * 2\n")
    (root / "hints.py").write_text(textwrap.dedent(HINTS))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n.startswith("hoist_standin")]:
        monkeypatch.delitem(sys.modules, name)
    module = importlib.import_module("hoist_standin.hints")
    yield module
    hoist.uninstall()
    for name in [n for n in sys.modules if n.startswith("hoist_standin")]:
        del sys.modules[name]


def _results(m) -> list:
    retr = []
    out = [m.Hint(3).to_device(retr), m.Hint(3).to_device(retr, 1), m.Child(2).to_device(retr), m.plain(4),
           m.assigns([1]), m.conditional(5), m.conditional(0), m.clashing(), m.two_on_a_line(2), m.cached(7)]
    return out + [f() for f in retr]


def test_results_stay_the_same_and_uninstall_restores_everything(pkg):
    m = pkg
    for _ in range(60):  # specialized (quickened) code first: the check compares the code objects
        _results(m)
    before = _results(m)
    functions = {q: f for q, f in [("Hint.to_device", m.Hint.to_device), ("Child.to_device", m.Child.to_device),
                                   ("plain", m.plain), ("cached", m.cached.__wrapped__)]}
    codes = {q: f.__code__ for q, f in functions.items()}
    names_before = set(vars(m))
    hoist.install([m])
    assert hoist.installed()
    assert _results(m) == before
    for qualname, func in functions.items():
        assert func.__code__ is not codes[qualname], qualname  # the same function object, new code
        assert func.__code__.co_qualname == codes[qualname].co_qualname
        assert not {"IMPORT_NAME", "IMPORT_FROM"} & {i.opname for i in dis.get_instructions(func)}, qualname
    assert set(vars(m)) - names_before == {"convert", "leaf", "json"}
    with pytest.raises(ModuleNotFoundError):  # an import that fails still fails, at the call
        m.optional()
    hoist.uninstall()
    assert not hoist.installed() and set(vars(m)) == names_before
    assert all(f.__code__ is codes[q] for q, f in functions.items())
    assert _results(m) == before


def test_what_is_hoisted_and_what_stays(pkg):
    by_fn = {r["function"]: r for r in (hoist.install([pkg]) and hoist.report())}
    assert set(by_fn) == {"Hint.to_device", "Child.to_device", "plain", "assigns", "clashing", "optional",
                          "two_on_a_line", "cached"}  # conditional: its import is not at the top level
    assert by_fn["Hint.to_device"]["names"] == ["convert", "leaf", "json"]
    assert by_fn["Child.to_device"]["names"] == ["convert"] and by_fn["Child.to_device"]["refused"] is None
    assert by_fn["two_on_a_line"]["names"] == ["json", "convert"]
    assert by_fn["cached"]["names"] == ["convert"]
    assert by_fn["assigns"]["names"] == [] and "also assigns json" in by_fn["assigns"]["kept"][0]
    assert by_fn["clashing"]["names"] == [] and "already binds TAG" in by_fn["clashing"]["kept"][0]
    assert by_fn["optional"]["names"] == [] and "fails at set-up (ModuleNotFoundError)" in by_fn["optional"]["kept"][0]
    assert pkg.TAG == "the module's own"


def test_a_source_that_does_not_match_the_running_code_is_refused(pkg, tmp_path):
    path = tmp_path / "hoist_standin" / "hints.py"
    path.write_text(path.read_text().replace("return convert(x) + 1", "return convert(x) + 2"))
    by_fn = {r["function"]: r for r in (hoist.install([pkg]) and hoist.report())}
    assert by_fn["plain"]["refused"] == "its installed source does not compile to the code that runs"
    assert pkg.plain(1) == 3  # untouched
    assert by_fn["Hint.to_device"]["refused"] is None  # the rest of the file still matches


def _straight_line(func) -> int:
    """Instructions a straight-line function executes per call: those after RESUME (the cell set-up
    before it is not counted, test_counts' stand-ins have none)."""
    ops = [i.opname for i in dis.get_instructions(func)]
    return len(ops) - ops.index("RESUME") - 1


def test_counts_drop_by_exactly_the_import_machinery(pkg):
    """The function's own bytecodes drop by exactly what ``dis`` says its code lost (the import
    statements; a call of a hoisted name needs no PUSH_NULL, LOAD_GLOBAL pushes it; a closure no
    longer loads the hoisted names' cells), importlib's frames (ModuleSpec.parent,
    _handle_fromlist) vanish, and nothing else moves."""
    h = pkg.Hint(3)
    retr = []

    def launch():
        h.to_device(retr)

    before = counts.count(launch, launches=10, warmup=3)
    own_before = _straight_line(pkg.Hint.to_device)
    hoist.install([pkg])
    after = counts.count(launch, launches=10, warmup=3)
    own_drop = own_before - _straight_line(pkg.Hint.to_device)
    assert own_drop >= 3 * 3  # three import statements, each at least LOAD_CONST, IMPORT_NAME, STORE
    d = countdiff.diff(before, after)
    rows = {(r["module"], r["function"]): r for r in d["functions"]}
    importlib_rows = {k: r for k, r in rows.items() if k[0].startswith("importlib")}
    assert {k[1] for k in importlib_rows} >= {"ModuleSpec.parent", "_handle_fromlist"}
    assert all(r["status"] == "removed" for r in importlib_rows.values())
    (own,) = [r for k, r in rows.items() if k[1] == "Hint.to_device"]
    assert own["delta"]["bytecodes"] == -own_drop
    assert set(rows) == set(importlib_rows) | {(own["module"], "Hint.to_device")}  # nothing else moved
    machinery = sum(r["ref"]["bytecodes"] for r in importlib_rows.values())
    assert d["per_launch"]["bytecodes"] == -(own_drop + machinery)
    assert d["per_launch"]["entries"] == -sum(r["ref"]["entries"] for r in importlib_rows.values())
    assert before["steady"] and after["steady"]


def test_the_mechanism_rewrites_the_installed_numba_cuda_and_restores_it():
    pytest.importorskip("numba.cuda")
    args = importlib.import_module("numba.cuda.args")

    class Dispatcher:
        def call(self, args, launch_config):
            return "launched"

    code = args.Out.to_device.__code__
    call = Dispatcher.__dict__["call"]
    mechanisms.install("hoist-imports", target=Dispatcher)
    try:
        assert mechanisms.active() == "hoist-imports"
        assert Dispatcher.__dict__["call"] is call  # no class is written
        assert args.Out.to_device.__code__ is not code
        details = {r["function"]: r for r in mechanisms.details()}
        assert "_to_strided_memory_view" in details["Out.to_device"]["names"] or \
            "auto_device" in details["Out.to_device"]["names"]  # the simulator's args.py
    finally:
        mechanisms.uninstall()
    assert args.Out.to_device.__code__ is code and mechanisms.details() is None
    assert Dispatcher.__dict__["call"] is call


def test_the_spec_parses_like_any_mechanism():
    assert mechanisms.validate("hoist-imports") == "hoist-imports"
    assert mechanisms.validate(" Hoist-Imports ") == "hoist-imports"
    with pytest.raises(Exception, match="takes no argument"):
        mechanisms.validate("hoist-imports:all")
