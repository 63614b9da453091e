"""The counts channel through the engine, on CPU: real worker processes count stand-ins whose
counts are known from ``dis``, and the records reach compare's, breakdown's, pr's and bisect's
documents and renderings, C callees included.

Each variant is an ``env:`` folder whose ``bin/python`` runs this interpreter with a folder of its
own on PYTHONPATH, so two variants can run the same module name with different code (one more
Python call) or the same code (an A/A pair). Timing deltas are built by hand where a reading
needs one: no test here depends on how long anything took.

Counts depend on the Python minor version by design (sys.monitoring on 3.12+, settrace on
3.11): where they differ, the expectation says which Python it is for.
"""
import dis
import json
import os
import subprocess
import sys
import textwrap

import pytest

from launchbench.engine import commitcounts, countdiff, progressbar, runner, runplan
from launchbench.environments import envs
from launchbench.output import breakdown as breakdown_out
from launchbench.output import counts as counts_out
from launchbench.output import history as history_out
from launchbench.output import prreport
from launchbench.output import report as report_out
from launchbench.workloads import callees, counts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOT_VISIBLE = countdiff.NOT_VISIBLE
#: sys.monitoring (3.12+) counts every call and sees a C interception replace a Python function;
#: sys.settrace (3.11) counts C calls to builtins only
MONITORING = counts.counter_name() == "sys.monitoring"

# the compare/pr stand-in: a target callable (the worker's setup_callable) with a C-level wait
LAUNCH = '''
from launchbench.workloads._tls import spin

X = (1, 2)


def helper():
    return None


def launch(*args):
    spin(WAIT_NS)
    len(X)
    helper()
'''
EXTRA = "    helper()\n"  # one more Python call per launch
SUM = LAUNCH.replace("len(X)", "sum(X)")  # the same bytecodes and calls: another C function

# the breakdown stand-in: standin's stage factory, its Dispatcher.call wrapped in one more Python call
STAGES_PLAIN = '''
from launchbench.workloads import standin
from launchbench.workloads.standin import Dispatcher


def stage_loops(nargs, arg_kind="array"):
    return standin.stage_loops(nargs, arg_kind)
'''
WRAP = '''
def extra():
    return None


def call(self, args, launch_config):
    extra()
    return _call(self, args, launch_config)
'''
STAGES_EXTRA = STAGES_PLAIN + "\n_call = Dispatcher.call\n" + WRAP + "\nDispatcher.call = call\n"


def per_call(code: str, *names) -> dict:
    """Instructions one call of each (straight-line) function executes: all but RESUME."""
    space: dict = {"WAIT_NS": 0}
    exec(compile(textwrap.dedent(code), "standin", "exec"), space)
    return {n: sum(1 for i in dis.get_instructions(space[n]) if i.opname != "RESUME") for n in names}


def variant_env(tmp_path, name: str, module: str, code: str, extra_env: str = "") -> str:
    """An env folder for *name*: this interpreter with *module* (holding *code*) on its path."""
    lib = tmp_path / name / "lib"
    lib.mkdir(parents=True)
    (lib / f"{module}.py").write_text(textwrap.dedent(code))
    bindir = tmp_path / name / "bin"
    bindir.mkdir()
    exe = bindir / "python"
    exe.write_text(f"#!/bin/sh\n{extra_env}export PYTHONPATH=\"$PYTHONPATH:{lib}\"\nexec {sys.executable} \"$@\"\n")
    exe.chmod(0o755)
    return str(tmp_path / name)


# ---------------------------------------------------------------- the engine: records, A/A, exact deltas

@pytest.fixture(scope="module")
def engine_run(tmp_path_factory):
    """One engine run: a and b run the same code (A/A), c makes one more Python call per launch,
    d calls sum where a calls len; 2 rounds, both counted, at 0 and 2 arguments."""
    tmp = tmp_path_factory.mktemp("counts-engine")
    code = LAUNCH.replace("WAIT_NS", "2000")
    pythons = {"a": variant_env(tmp, "a", "lbcounts_launch", code),
               "b": variant_env(tmp, "b", "lbcounts_launch", code),
               "c": variant_env(tmp, "c", "lbcounts_launch", code + EXTRA),
               "d": variant_env(tmp, "d", "lbcounts_launch", SUM.replace("WAIT_NS", "2000"))}
    plan = runplan.Plan(
        variants=[(n, os.path.join(p, "bin", "python"), None) for n, p in pythons.items()], reference="a",
        arg_counts=[0, 2], loops=None, repeats=1, rounds=2, warmup=5, sample_target_s=0.0005, simulator=False,
        affinity=None, peers=False, overlay=envs.make_overlay(str(tmp / "overlay")), log_dir=str(tmp / "logs"),
        prefetch=1, setup_cpus=None, setup={"target": "lbcounts_launch:launch"}, count_rounds=2, count_launches=6)
    os.makedirs(plan.log_dir, exist_ok=True)
    out = runner.run(plan, progressbar.Progress(1, enabled=False))
    runplan.raise_setup_failure(out)
    return out


def test_counts_records_arrive_per_variant_round_and_arg_count(engine_run):
    recs = engine_run.counts
    assert sorted((r["variant"], r["round"], r["nargs"]) for r in recs) == sorted(
        (v, rnd, n) for v in "abcd" for rnd in (0, 1) for n in (0, 2))
    # each round's worker counted in its own process: the pid that took that round's samples
    sampled = {(s["variant"], s["round"]): s["worker"] for s in engine_run.samples}
    assert all(r["worker"] == sampled[(r["variant"], r["round"])] for r in recs)
    assert len({r["worker"] for r in recs}) == 8
    assert all(r["counts"]["steady"] and r["counts"]["launch_totals"][0]["launches"] == 6 for r in recs)


NAMES = ["a", "b", "c", "d"]


def test_a_pair_running_the_same_code_diffs_to_exactly_zero_across_fresh_processes(engine_run):
    section = countdiff.section(engine_run.counts, "a", NAMES)
    for name in ("a", "b"):
        for n in ("0", "2"):
            rec = section["variants"][name][n]
            assert rec["processes"] == 2 and rec["reproducible"] and rec["steady"]
    for n in ("0", "2"):
        d = section["diffs"]["b"][n]
        assert not d["moved"] and d["functions"] == [] and set(d["per_launch"].values()) == {0}


def test_one_more_python_call_is_the_exact_delta(engine_run):
    base = per_call(LAUNCH, "launch", "helper")
    more = per_call(LAUNCH + EXTRA, "launch", "helper")
    in_launch = more["launch"] - base["launch"]
    want = in_launch + more["helper"]
    section = countdiff.section(engine_run.counts, "a", NAMES)
    assert section["reproducible"]
    for n in ("0", "2"):
        d = section["diffs"]["c"][n]
        assert d["per_launch"]["bytecodes"] == want and d["per_launch"]["entries"] == 1
        assert d["per_launch"]["c_calls"] == 0  # spin is called once on both sides
        assert [(f["function"], f["delta"]["bytecodes"], f["delta"]["entries"]) for f in d["functions"]] == [
            ("launch", in_launch, 0), ("helper", more["helper"], 1)]  # largest first
        assert all(f["module"] == "lbcounts_launch" and f["status"] == "changed" for f in d["functions"])
    # ... and so it reads in the Markdown, beside a timing delta built here (not measured)
    deltas = [{"variant": "c", "nargs": 0, "delta_us": 0.05, "ci_us": [0.01, 0.09]},
              {"variant": "b", "nargs": 0, "delta_us": 0.02, "ci_us": [-0.03, 0.07]}]
    md = counts_out.markdown(section, deltas, [0, 2])
    calls, none = ("+1", "+0") if MONITORING else ("n/a", "n/a")  # settrace counts no Python calls
    assert f"| 0 | c | +{want} | {calls} | +0 | +1 | +0.05 [+0.01, +0.09] | counts moved |" in md
    assert f"| 0 | b | +0 | {none} | +0 | +0 | +0.02 [-0.03, +0.07] | no change |" in md
    assert f"| launch | lbcounts_launch | +{in_launch} |" in md
    assert "Every process gave identical counts" in md


def test_a_cost_that_counts_cannot_see_reads_not_visible(engine_run):
    """b runs a's code: whatever a C extension, the driver or the machine adds to its time, its
    counts stay a's. An established timing delta beside them reads NOT_VISIBLE."""
    section = countdiff.section(engine_run.counts, "a", NAMES)
    moved = [{"variant": "b", "nargs": n, "delta_us": 2.0, "ci_us": [1.5, 2.5]} for n in (0, 2)]
    rows = counts_out.diff_rows(section, moved, [0, 2])
    assert [r[-1] for r in rows[1:] if r[1] == "b"] == [NOT_VISIBLE, NOT_VISIBLE]
    assert [r[-1] for r in rows[1:] if r[1] == "c"] == ["counts moved", "counts moved"]
    text = counts_out.text(section, moved, [0, 2])
    assert NOT_VISIBLE in text.split("Functions that moved")[0]


LEN_TO_SUM = [("builtins.len", -1, "lost"), ("builtins.sum", 1, "gained")]


def test_len_becoming_sum_is_a_c_callee_change_not_invisible(engine_run):
    """d runs a's launch with sum where a calls len: the same bytecodes, calls and entries, so
    before C callees an established µs delta here read 'not visible to counts'. Now the diff
    names both C functions, and compare's tables and report read 'C callees moved'."""
    section = countdiff.section(engine_run.counts, "a", NAMES)
    assert section["reproducible"]
    for n in ("0", "2"):
        d = section["diffs"]["d"][n]
        assert set(d["per_launch"].values()) == {0} and d["moved"] and not d["counts_moved"]
        assert [(c["name"], c["delta"], c["status"]) for c in d["c_callees"]] == LEN_TO_SUM
        [row] = d["functions"]
        assert (row["module"], row["function"]) == ("lbcounts_launch", "launch") and set(row["delta"].values()) == {0}
        assert [(c["name"], c["delta"], c["status"]) for c in row["c_callees"]] == LEN_TO_SUM
    timed = [{"variant": "d", "nargs": n, "delta_us": 0.4, "ci_us": [0.2, 0.6]} for n in (0, 2)]
    rows = counts_out.diff_rows(section, timed, [0, 2])
    assert [r[-1] for r in rows[1:] if r[1] == "d"] == [countdiff.CALLEES_MOVED] * 2
    text = counts_out.text(section, timed, [0, 2])
    assert "C callees that changed (d vs a, 0 args):" in text and NOT_VISIBLE not in text
    # compare's Markdown report (report.counts_blocks, rendered as compare --markdown renders it)
    result = {"counts": section, "deltas": timed, "settings": {"arg_counts": [0, 2]}}
    md = report_out.render_markdown(report_out.counts_blocks(result))
    assert "### C callees that changed: d vs a, 2 args" in md
    assert "| builtins.sum | +1 | 0 → 1 | gained | launch (lbcounts_launch) |" in md
    assert "| builtins.len | -1 | 1 → 0 | lost | launch (lbcounts_launch) |" in md
    assert "| 0 | d | +0 |" in md and f"| {countdiff.CALLEES_MOVED} |" in md
    assert f"| {NOT_VISIBLE} |" not in md


# ---------------------------------------------------------------- breakdown --variant, end to end

@pytest.fixture(scope="module")
def breakdown_doc(tmp_path_factory):
    """a: the stand-in launch path; b: one more Python call in Dispatcher.call; c: a's path with
    a 3 us C-level busy-wait in its dispatcher (the delay mechanism)."""
    tmp = tmp_path_factory.mktemp("counts-breakdown")
    a = variant_env(tmp, "a", "lbcounts_stages", STAGES_PLAIN)
    b = variant_env(tmp, "b", "lbcounts_stages", STAGES_EXTRA)
    out, md = tmp / "b.json", tmp / "b.md"
    proc = subprocess.run(
        [sys.executable, "-m", "launchbench", "breakdown", "--variant", f"a=env:{a}", "--variant", f"b=env:{b}",
         "--variant", "c=delay:3us@a", "--target", "lbcounts_stages:stage_loops", "--stages", "full",
         "--no-insitu", "--args", "0,2", "--rounds", "2", "--repeats", "1", "--counts", "2",
         "--sample-time", "0.0005", "--warmup", "10", "--prefetch", "1", "--quiet", "-o", str(out),
         "--markdown", str(md)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc.stdout, md.read_text(), out


def test_breakdown_counts_each_variants_full_launch(breakdown_doc):
    doc, stdout, md, _path = breakdown_doc
    section = doc["counts"]
    assert section["reference"] == "a" and section["reproducible"]
    assert sorted((r["variant"], r["round"], r["nargs"]) for r in section["records"]) == sorted(
        (v, rnd, n) for v in "abc" for rnd in (0, 1) for n in (0, 2))
    wrap = per_call(WRAP, "call", "extra")
    want = wrap["call"] + wrap["extra"]
    for n in ("0", "2"):
        b = section["diffs"]["b"][n]
        assert b["per_launch"]["bytecodes"] == want and b["per_launch"]["entries"] == 2
        assert [(f["function"], f["delta"]["bytecodes"]) for f in b["functions"]] == [
            ("call", wrap["call"]), ("extra", wrap["extra"])]
        c = section["diffs"]["c"][n]  # the delay mechanism: a C interceptor in Dispatcher.call's place
        if MONITORING:  # one Python call becomes a call of a C object: counted, and the object named
            assert {k: v for k, v in c["per_launch"].items() if v} == {"py_calls": -1, "c_calls": 1}
            assert [(x["name"], x["delta"], x["status"]) for x in c["c_callees"]] == [(INTERCEPTOR, 1, "gained")]
        else:  # settrace sees calls to builtins only: nothing moves
            assert not c["moved"] and set(c["per_launch"].values()) == {0}
    # the counted launch is the stand-in's cfg(*args), not the timing loop around it
    fns = {f["function"] for f in section["variants"]["a"]["0"]["functions"]}
    assert "Launch.__call__" in fns and "_loop.<locals>.loop" not in fns
    assert "Count deltas vs a (exact) beside the µs:" in stdout and f"+{want}" in stdout
    assert "## Count deltas vs a" in md and f"| 0 | b | +{want} |" in md
    assert "| call | lbcounts_stages |" in md


INTERCEPTOR = "launchbench.workloads._tls.Interceptor.__call__(launchbench.workloads.standin.Dispatcher.call)"


def test_breakdown_reads_a_c_level_cost_as_not_visible(breakdown_doc):
    """With the full launch's paired delta set by hand (established for c and b, not measured),
    the text and the Markdown call b's change counted, and c's (a C interceptor that busy-waits)
    not visible to counts on 3.11, which sees no call to it; 3.12 counts that call and names it."""
    doc, _stdout, _md, _path = breakdown_doc
    doc = json.loads(json.dumps(doc))
    for name in ("b", "c"):
        for n in ("0", "2"):
            doc["analysis"]["stage_deltas"][name][n]["full"] = {"us": 3.0, "ci": [2.4, 3.6], "n": 2}
    text = breakdown_out.format_text(doc)
    rows = {tuple(line.split()[:2]): line for line in text.split("Count deltas vs a")[1].splitlines()[1:6]}
    c_reads = countdiff.COUNTS_MOVED if MONITORING else NOT_VISIBLE
    assert rows[("0", "c")].endswith(c_reads) and rows[("2", "c")].endswith(c_reads)
    assert rows[("0", "b")].endswith("counts moved") and "+3.00 [+2.40, +3.60]" in rows[("2", "b")]
    md = breakdown_out.breakdown_markdown(doc)
    cells = "+0 | +0 | +1 | +0" if MONITORING else "+0 | n/a | +0 | +0"
    assert f"| 0 | c | {cells} | +3.00 [+2.40, +3.60] | {c_reads} |" in md
    if MONITORING:
        assert f"| {INTERCEPTOR} | +1 | 0 → 1 | gained | Launch.__call__ (launchbench.workloads.standin) |" in md


def test_report_renders_a_stored_paired_breakdowns_counts(breakdown_doc, tmp_path):
    doc, _stdout, _md, path = breakdown_doc
    md = tmp_path / "r.md"
    proc = subprocess.run([sys.executable, "-m", "launchbench", "report", str(path), "--markdown", str(md)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = md.read_text()
    assert "## Exact counts per launch" in text and "| call | lbcounts_stages |" in text
    plain = subprocess.run([sys.executable, "-m", "launchbench", "report", str(path)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and "Exact counts per launch" in plain.stdout
    bad = subprocess.run([sys.executable, "-m", "launchbench", "report", str(path), "--html", str(tmp_path / "x.html")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--markdown" in bad.stderr


# ---------------------------------------------------------------- the pr comment (a document built here)

def _leaf():
    return None


def _base_launch(*args):
    return _leaf()


def _pr_doc(section: dict, delta: dict) -> dict:
    side = {"sha": "0" * 40, "subject": "s", "wheel": None, "build": None}
    return {"head": {**side, "short": "bbbbbbb", "variant": "c1-bbbbbbb"},
            "base": {**side, "short": "aaaaaaa", "variant": "c0-aaaaaaa"}, "simulator": False, "exit_code": 0,
            "command": ["launchbench", "pr"], "conformance": None, "gate": None, "same_code": False,
            "measurement": {"deltas": [delta], "level": [], "counts": section, "rounds_completed": 2,
                            "rounds_planned": 2, "device": {"name": "cpu"},
                            "settings": {"arg_counts": [0], "repeats": 1, "sample_target_s": 0.001,
                                         "affinity": None}}}


def test_the_pr_comment_says_not_visible_when_only_the_cost_moved():
    same = callees.count(_base_launch, (), launches=4)
    recs = [{"variant": v, "round": r, "worker": 10 * r + i, "nargs": 0, "counts": same}
            for i, v in enumerate(("c0-aaaaaaa", "c1-bbbbbbb")) for r in (0, 1)]
    section = countdiff.section(recs, "c0-aaaaaaa", ["c0-aaaaaaa", "c1-bbbbbbb"])
    moved = {"variant": "c1-bbbbbbb", "nargs": 0, "delta_us": 1.2, "ci_us": [0.8, 1.6], "delta_pct": 5.0,
             "ci_pct": [3.0, 7.0]}
    md = prreport.render(_pr_doc(section, moved))
    assert f"**counts: identical per launch (exact); the cost moved: {NOT_VISIBLE}**" in md
    none = "+0" if MONITORING else "n/a"
    assert f"| 0 | head (bbbbbbb) | +0 | {none} | +0 | +0 | +1.20 [+0.80, +1.60] | {NOT_VISIBLE} |" in md
    assert "base (aaaaaaa): bytecodes" in md  # the totals name the sides
    still = dict(moved, ci_us=[-0.2, 1.6])
    md = prreport.render(_pr_doc(section, still))
    assert "**counts: identical per launch (exact)**" in md and NOT_VISIBLE + " |" not in md
    assert prreport.render_text(_pr_doc(section, moved)).count(NOT_VISIBLE) == 2  # the line and the table


def _launch_calling(c_function: str):
    """A launch named ``launch`` in one stand-in module that calls *c_function* on a tuple."""
    space: dict = {}
    exec(compile(f"X = (1, 2)\n\n\ndef launch(*args):\n    return {c_function}(X)\n", "lbcounts_standin",
                 "exec"), space)
    return space["launch"]


def test_the_pr_comment_names_the_c_callees_that_changed():
    """head calls sum where base calls len: the verdict line and the tables say so, beside an
    established cost, and nothing reads 'not visible to counts'."""
    sides = {"c0-aaaaaaa": _launch_calling("len"), "c1-bbbbbbb": _launch_calling("sum")}
    recs = [{"variant": v, "round": r, "worker": 10 * r + i, "nargs": 0, "counts": callees.count(f, (), launches=4)}
            for i, (v, f) in enumerate(sides.items()) for r in (0, 1)]
    section = countdiff.section(recs, "c0-aaaaaaa", list(sides))
    moved = {"variant": "c1-bbbbbbb", "nargs": 0, "delta_us": 1.2, "ci_us": [0.8, 1.6], "delta_pct": 5.0,
             "ci_pct": [3.0, 7.0]}
    md = prreport.render(_pr_doc(section, moved))
    assert "**counts: identical per launch; C callees builtins.len -1, builtins.sum +1 at 0 args (exact)**" in md
    assert f"+1.20 [+0.80, +1.60] | {countdiff.CALLEES_MOVED} |" in md
    assert "C callees that changed (head (bbbbbbb) vs base (aaaaaaa), 0 args):" in md
    assert "| builtins.sum | +1 | 0 → 1 | gained | launch (lbcounts_standin) |" in md
    assert f"| {NOT_VISIBLE} |" not in md and "the cost moved" not in md
    text = prreport.render_text(_pr_doc(section, moved))
    assert "C callees builtins.len -1, builtins.sum +1" in text and "C callees that changed" in text


def _entry(c_function: str) -> dict:
    """A commit's counts (commitcounts' entry) of the stand-in launch at 0 and 2 args."""
    launch = _launch_calling(c_function)
    return {"counts": {str(n): callees.count(launch, list(range(n)), launches=4, warmup=1) for n in (0, 2)}}


def test_bisect_names_a_culprit_that_swapped_one_c_function_for_another():
    """Two commits whose launches differ only in len -> sum: their counts differ (so bisect's
    counts stage can locate the step), and the culprit line and the counts-steps table name the
    C callees instead of calling the step not visible."""
    a, b = _entry("len"), _entry("sum")
    assert commitcounts.key(a, [0, 2]) != commitcounts.key(b, [0, 2])
    cstep = commitcounts.step(a, b, [0, 2])
    assert cstep["moved"] and countdiff.moved_reading(list(cstep["per_nargs"].values())) == countdiff.CALLEES_MOVED
    assert history_out.counts_cell(cstep) == "C callees builtins.len -1, builtins.sum +1"
    pooled = {"mean_us": 0.4, "ci_us": [0.2, 0.6], "rounds": 20, "state": "established"}
    doc = {"stages": [{"kind": "counts", "points": ["a" * 40, "c" * 40], "seconds": 2.0}],
           "counts_note": "counts move at 1 place(s)", "result": "found",
           "counts": {"steps": [{"commit": "c" * 40, "previous": "b" * 40, "subject": "len -> sum", **cstep,
                                 "timing": {"pooled": pooled}}]},
           "culprit": {"sha": "c" * 40, "short": "ccccccc", "subject": "len -> sum", "previous": "b" * 40,
                       "steps": [], "pooled": pooled, "counts": cstep, "reading": countdiff.CALLEES_MOVED},
           "gpu_seconds": 10.0, "count_seconds": 2.0}
    text = history_out.render_bisect(doc)
    assert "counts: C callees builtins.len -1, builtins.sum +1 per launch; launch (C callees)" in text
    table = text.split("counts steps (exact, per launch) beside their µs:")[1]
    assert "Δ C callees" in table and "builtins.len -1, builtins.sum +1" in table
    assert NOT_VISIBLE not in text
