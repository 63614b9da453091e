"""The counts channel on CPU: exact counts of stand-ins whose bytecodes are known from ``dis``,
the diff's arithmetic and ordering, reproducibility across processes, and both counters
(sys.monitoring on 3.12+, settrace on 3.11; the other Python runs in a subprocess when present)."""
import dis
import glob
import json
import os
import subprocess
import sys

import pytest

from launchbench.base.errors import UserError
from launchbench.engine import countdiff
from launchbench.output import counts as counts_out
from launchbench.workloads import callees, counts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def leaf():
    return None


def straight(x):
    y = x + 1
    z = y * 2  # noqa: F841 - counted: the bytecodes of an assignment
    return leaf()


def straight_plus_two_calls(x):
    y = x + 1
    z = y * 2  # noqa: F841 - counted: the bytecodes of an assignment
    leaf()
    leaf()
    return leaf()


def expected_bytecodes(func) -> int:
    """Instructions a straight-line function executes per call: every one but RESUME, which
    neither counter sees (sys.monitoring does not instrument it; settrace has no opcode event)."""
    return sum(1 for ins in dis.get_instructions(func) if ins.opname != "RESUME")


def test_straight_line_bytecodes_match_dis():
    rec = counts.count(straight, (1,), launches=7, warmup=1)
    by_fn = {f["function"]: f for f in rec["functions"]}
    assert by_fn["straight"]["bytecodes"] == expected_bytecodes(straight)
    assert by_fn["leaf"]["bytecodes"] == expected_bytecodes(leaf)
    assert rec["per_launch"]["bytecodes"] == expected_bytecodes(straight) + expected_bytecodes(leaf)
    assert rec["per_launch"]["entries"] == 2
    assert rec["steady"] and rec["launch_totals"] == [{"launches": 7, **rec["per_launch"]}]


def test_the_harness_itself_is_not_counted():
    """Only what the launch executes: no loop, bookkeeping or counter code."""
    rec = counts.count(leaf, (), launches=5, warmup=0)
    assert [f["function"] for f in rec["functions"]] == ["leaf"]
    assert rec["per_launch"]["bytecodes"] == expected_bytecodes(leaf)


def test_unsteady_launches_are_reported():
    state = {"n": 0}

    def sometimes():
        state["n"] += 1
        if state["n"] % 2:
            leaf()

    rec = counts.count(sometimes, (), launches=6, warmup=0)
    assert not rec["steady"]
    assert sorted(t["launches"] for t in rec["launch_totals"]) == [3, 3]
    # the mean per launch is the exact average, not a rounded guess
    per = sorted(t["bytecodes"] for t in rec["launch_totals"])
    assert rec["mean_per_launch"]["bytecodes"] == sum(per) / 2


def test_counting_leaves_no_hook_behind():
    counts.count(straight, (1,), launches=3)
    assert sys.gettrace() is None and sys.getprofile() is None
    if hasattr(sys, "monitoring"):
        assert all(sys.monitoring.get_tool(i) is None for i in (3, 4))


def test_diff_names_the_function_and_the_exact_delta():
    a = counts.count(straight, (1,), launches=4)
    b = counts.count(straight_plus_two_calls, (1,), launches=4)
    a["functions"] = [dict(f, function=f["function"].replace("straight", "launch")) for f in a["functions"]]
    b["functions"] = [dict(f, function=f["function"].replace("straight_plus_two_calls", "launch")) for f in b["functions"]]
    d = countdiff.diff(a, b)
    extra = expected_bytecodes(straight_plus_two_calls) - expected_bytecodes(straight)
    assert d["per_launch"]["bytecodes"] == extra + 2 * expected_bytecodes(leaf)
    assert d["per_launch"]["entries"] == 2
    assert d["moved"]
    # largest bytecode change first; each row carries both sides
    assert [f["function"] for f in d["functions"]] == ["launch", "leaf"]
    assert d["functions"][0]["delta"]["bytecodes"] == extra
    assert d["functions"][1]["other"]["entries"] - d["functions"][1]["ref"]["entries"] == 2


def test_a_count_of_the_same_code_diffs_to_zero():
    a = counts.count(straight, (1,), launches=3)
    b = counts.count(straight, (1,), launches=5)
    d = countdiff.diff(a, b)
    assert not d["moved"] and d["functions"] == [] and set(d["per_launch"].values()) == {0}


def test_different_pythons_do_not_compare():
    a = counts.count(straight, (1,), launches=2)
    b = dict(a, python="3.99")
    assert countdiff.comparable(a, b)
    with pytest.raises(UserError, match="do not compare"):
        countdiff.diff(a, b)


def _records(variant, rnd, rec, nargs=0):
    return {"variant": variant, "round": rnd, "worker": 100 + rnd, "nargs": nargs, "counts": rec}


def test_summarize_flags_processes_that_disagree():
    a = counts.count(straight, (1,), launches=3)
    b = counts.count(straight_plus_two_calls, (1,), launches=3)
    same = countdiff.summarize([_records("ref", 0, a), _records("ref", 1, a), _records("v", 0, b), _records("v", 1, b)],
                               "ref", ["ref", "v"])
    assert same["reproducible"] and same["variants"]["v"]["0"]["processes"] == 2
    assert same["diffs"]["v"]["0"]["per_launch"]["entries"] == 2
    mixed = countdiff.summarize([_records("ref", 0, a), _records("ref", 1, b)], "ref", ["ref"])
    assert not mixed["reproducible"] and not mixed["variants"]["ref"]["0"]["reproducible"]


def test_visibility_reads_time_and_counts_together():
    moved = {"moved": True}
    still = {"moved": False}
    assert countdiff.visibility(moved, True) == "counts moved"
    # per-function rows moved, every total did not (the simulator's threading rows): never "counts moved"
    shifted = {"moved": True, "per_launch": {"bytecodes": 0, "calls": 0}, "functions": [{"function": "f"}]}
    assert countdiff.visibility(shifted, False) == countdiff.visibility(shifted, True) == countdiff.FUNCTIONS_ONLY
    assert countdiff.visibility({"moved": True, "per_launch": {"bytecodes": 2, "calls": 0}}, False) == "counts moved"
    assert countdiff.visibility(still, True) == countdiff.NOT_VISIBLE
    assert countdiff.visibility(still, False) == "no change"
    delta = {"variant": "v", "nargs": 0, "ci_us": [0.1, 0.4], "delta_us": 0.25}
    assert counts_out.established(delta) and not counts_out.established(dict(delta, ci_us=[-0.1, 0.4]))


def test_rendered_tables_carry_the_diff():
    a = counts.count(straight, (1,), launches=3)
    b = counts.count(straight_plus_two_calls, (1,), launches=3)
    section = countdiff.summarize([_records("ref", 0, a), _records("v", 0, b)], "ref", ["ref", "v"])
    deltas = [{"variant": "v", "nargs": 0, "delta_us": 0.3, "ci_us": [0.2, 0.4]}]
    md = counts_out.markdown(section, deltas, [0])
    extra = b["per_launch"]["bytecodes"] - a["per_launch"]["bytecodes"]
    assert f"| 0 | v | +{extra} |" in md and "counts moved" in md
    assert "straight_plus_two_calls" in md  # the function that moved is named
    text = counts_out.text(section, deltas, [0])
    assert f"+{extra}" in text


def _other_pythons():
    mine = "%d.%d" % sys.version_info[:2]
    found = {}
    for path in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[1-9]*/bin/python3"))):
        ver = os.path.basename(os.path.dirname(os.path.dirname(path)))[:4].rstrip(".")
        if ver != mine:
            found.setdefault(ver, path)
    return found


SCRIPT = """
import dis, json, sys
sys.path.insert(0, sys.argv[1])
from launchbench.workloads import callees, counts
def leaf():
    return None
def straight(x):
    y = x + 1
    return leaf()
rec = counts.count(straight, (1,), launches=5)
want = sum(1 for f in (straight, leaf) for i in dis.get_instructions(f) if i.opname != "RESUME")
print(json.dumps({"rec": rec, "want": want}))
"""


@pytest.mark.parametrize("version", sorted(_other_pythons()) or ["none"])
def test_the_other_counter_on_another_python(version):
    """3.11 counts with settrace, 3.12 (the GPU machine's) with sys.monitoring: both count exactly."""
    pythons = _other_pythons()
    if version not in pythons:
        pytest.skip("no other CPython 3.11+ on this machine")
    out = subprocess.run([pythons[version], "-c", SCRIPT, ROOT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    rec = got["rec"]
    assert rec["per_launch"]["bytecodes"] == got["want"] and rec["steady"]
    if version >= "3.12":
        assert rec["counter"] == "sys.monitoring" and rec["per_launch"]["calls"] == 1
        assert rec["per_launch"]["py_calls"] == 1 and rec["per_launch"]["c_calls"] == 0


# ---------------------------------------------------------------- C callees: which C functions a launch calls

def launch_len(x):
    n = len(x)
    return n


def launch_sum(x):
    n = sum(x)
    return n


def test_each_c_function_called_is_named_and_its_calls_add_up_to_c_calls():
    """Per function, the named C callees' calls are its C calls, on either counter."""
    def launch(x):
        n = len(x)
        x.append(n)
        x.pop()
        return isinstance(n, int)

    rec = callees.count(launch, ([1, 2],), launches=4, warmup=1)
    row = next(f for f in rec["functions"] if f["function"].endswith("launch"))
    assert row["c_callees"] == {"builtins.isinstance": 1, "builtins.len": 1, "builtins.list.append": 1,
                                "builtins.list.pop": 1}
    assert all(sum(f["c_callees"].values()) == f["c_calls"] for f in rec["functions"])
    assert rec["c_callee_scope"] == callees.CALLEE_SCOPES[rec["counter"]]


def test_naming_the_callees_leaves_the_counts_and_no_hook_behind():
    """The callee pass runs after the counts: every total and function row is counts.count's."""
    def launch(x):
        return len(x) + sum(x)

    plain = counts.count(launch, ([1, 2],), launches=3)
    named = callees.count(launch, ([1, 2],), launches=3)
    assert named["per_launch"] == plain["per_launch"] and named["launch_totals"] == plain["launch_totals"]
    assert [{k: v for k, v in f.items() if k != "c_callees"} for f in named["functions"]] == plain["functions"]
    assert sys.gettrace() is None and sys.getprofile() is None
    if hasattr(sys, "monitoring"):
        assert all(sys.monitoring.get_tool(i) is None for i in (2, 3, 4))


def test_callee_names_say_module_and_qualified_name():
    import functools

    class Callable:
        def __call__(self):
            return None

    assert callees.callee_name(len) == "builtins.len"
    assert callees.callee_name([].append) == callees.callee_name(list.append) == "builtins.list.append"
    assert callees.callee_name((1).__add__) == callees.callee_name(int.__add__) == "builtins.int.__add__"
    assert callees.callee_name(dict.fromkeys) == "builtins.dict.fromkeys"
    assert callees.callee_name(tuple) == "builtins.tuple"  # a class called: its construction
    assert callees.callee_name(functools.partial(len)) == "functools.partial.__call__"
    assert callees.callee_name(Callable()).endswith(".test_callee_names_say_module_and_qualified_name.<locals>."
                                                   "Callable.__call__")
    import math
    assert callees.callee_name(math.sqrt) == "math.sqrt"
    import numpy  # a C-typed wrapper names what it wraps; a Python-class instance is not asked
    assert callees.callee_name(numpy.zeros_like) == "numpy._ArrayFunctionDispatcher.__call__(numpy.zeros_like)"
    named = Callable()
    named.__dict__.update(__module__="m", __qualname__="f")
    assert callees.callee_name(named) == callees.callee_name(Callable())


def test_len_becoming_sum_is_a_c_callee_change_with_identical_counts():
    """The same bytecodes, calls and entries: only the C function called differs, and the diff
    says which (not 'not visible to counts'), per function and for the launch."""
    a = callees.count(launch_len, ([1, 2],), launches=4)
    b = callees.count(launch_sum, ([1, 2],), launches=4)
    for rec in (a, b):  # the same name on both sides: only the callee differs
        rec["functions"] = [dict(f, function="launch") for f in rec["functions"]]
    assert a["per_launch"] == b["per_launch"]
    assert countdiff.fingerprint(a) != countdiff.fingerprint(b)
    d = countdiff.diff(a, b)
    assert set(d["per_launch"].values()) == {0}
    assert d["moved"] and d["callees_moved"] and not d["counts_moved"]
    want = [("builtins.len", -1, "lost"), ("builtins.sum", 1, "gained")]
    assert [(c["name"], c["delta"], c["status"]) for c in d["c_callees"]] == want
    [row] = d["functions"]
    assert row["function"] == "launch" and set(row["delta"].values()) == {0}
    assert [(c["name"], c["delta"], c["status"]) for c in row["c_callees"]] == want
    assert countdiff.visibility(d, True) == countdiff.CALLEES_MOVED != countdiff.NOT_VISIBLE
    assert countdiff.visibility(d, False) == countdiff.CALLEES_MOVED


def _fn(name, bytecodes, callees=None):
    return {"module": "m", "function": name, "bytecodes": bytecodes, "calls": 1, "py_calls": 0, "c_calls": 1,
            "entries": 1, "c_callees": callees or {"builtins.len": 1}}


def _rec(functions):
    kinds = ["bytecodes", "calls", "py_calls", "c_calls", "entries"]
    total = {k: sum(f[k] for f in functions) for k in kinds}
    return {"counter": "sys.monitoring", "python": "3.12", "kinds": kinds, "c_callee_scope": "every",
            "per_launch": total, "steady": True, "launch_totals": [{"launches": 4, **total}], "functions": functions}


def test_a_move_between_functions_with_equal_totals_is_flagged():
    """5 bytecodes move from f to g: every total is equal, the per-function rows are not. The
    diff says the counts moved (not 'no change', not 'not visible') and the tables say where."""
    a, b = _rec([_fn("f", 10), _fn("g", 5)]), _rec([_fn("f", 5), _fn("g", 10)])
    assert a["per_launch"] == b["per_launch"]
    d = countdiff.diff(a, b)
    assert set(d["per_launch"].values()) == {0}
    assert d["moved"] and d["counts_moved"] and not d["callees_moved"]
    assert [(f["function"], f["delta"]["bytecodes"]) for f in d["functions"]] == [("f", -5), ("g", 5)]
    assert countdiff.visibility(d, True) == countdiff.FUNCTIONS_ONLY
    assert countdiff.visibility(d, False) == countdiff.FUNCTIONS_ONLY
    section = countdiff.summarize([_records("ref", 0, a), _records("v", 0, b)], "ref", ["ref", "v"])
    timed = [{"variant": "v", "nargs": 0, "delta_us": 0.3, "ci_us": [0.2, 0.4]}]
    rows = counts_out.diff_rows(section, timed, [0])
    assert rows[1][-1] == counts_out.BETWEEN_FUNCTIONS
    md = counts_out.markdown(section, timed, [0])
    assert "Functions that moved (v vs ref, 0 args)" in md and "| f | m | -5 |" in md and "| g | m | +5 |" in md


def test_a_c_callee_moving_between_functions_is_flagged():
    """len called from g instead of f: the launch calls the same C functions, its functions do not."""
    a = _rec([_fn("f", 5), _fn("g", 5, {"builtins.isinstance": 1})])
    b = _rec([_fn("f", 5, {"builtins.isinstance": 1}), _fn("g", 5)])
    d = countdiff.diff(a, b)
    assert d["c_callees"] == [] and d["moved"] and d["callees_moved"] and d["c_callees_changed"] == 4
    assert countdiff.visibility(d, True) == countdiff.CALLEES_MOVED


def test_records_without_c_callees_diff_their_counts_only():
    """A record from before C callees (no c_callee_scope) names none: no callee reads as gained."""
    a = _rec([_fn("f", 5)])
    old = json.loads(json.dumps(a))
    old.pop("c_callee_scope")
    for f in old["functions"]:
        f.pop("c_callees")
    d = countdiff.diff(old, a)
    assert not d["moved"] and not d["callees_compared"] and d["c_callees"] == []
    assert countdiff.visibility(d, True) == countdiff.NOT_VISIBLE
    assert countdiff.visibility({"moved": True}, True) == countdiff.COUNTS_MOVED  # an old stored diff
