"""``launchbench counts`` on CPU: the ranking and diff tables from records of known content, the
``launchbench.counts`` document's checks, and a simulator run end to end (two variants that
differ by a known mechanism, one what-if that changes nothing the simulator runs), with the
worker requests recorded: set-up and counts only, no calibration or timing."""
import json
import sys

import pytest

from launchbench import cli
from launchbench.base.errors import UserError
from launchbench.engine import countdiff, countpass, workerproc
from launchbench.output import counts as counts_out
from launchbench.output import documents

HERE = f"env:{sys.prefix}"


def _fn(module, function, bytecodes, c_calls, entries, callees=None):
    """A function row; its C calls all go to isinstance unless *callees* says otherwise."""
    named = callees if callees is not None else ({"builtins.isinstance": c_calls} if c_calls else {})
    return {"module": module, "function": function, "bytecodes": bytecodes, "c_calls": c_calls, "entries": entries,
            "c_callees": named}


def _record(functions, per_launch=None):
    total = {k: sum(f[k] for f in functions) for k in ("bytecodes", "c_calls", "entries")}
    return {"counter": "sys.settrace", "python": "3.11", "kinds": ["bytecodes", "c_calls", "entries"],
            "c_callee_scope": "builtin functions and methods only", "launches": 5, "warmup": 5,
            "per_launch": per_launch or total, "mean_per_launch": total, "steady": True,
            "launch_totals": [{"launches": 5, **total}], "functions": functions}


BASE = [_fn("numba.cuda.dispatcher", "_Kernel._prepare_args", 150, 10, 2),
        _fn("importlib._bootstrap", "ModuleSpec.parent", 88, 4, 4),
        _fn("numba.cuda.args", "Out.to_device", 86, 6, 2),
        _fn("importlib._bootstrap", "_handle_fromlist", 44, 4, 2),
        _fn("numba.cuda.dispatcher", "CUDADispatcher.call", 23, 3, 1),
        _fn("numba.cuda.dispatcher", "_Kernel.launch", 9, 1, 1)]


def test_ranking_orders_by_bytecodes_with_shares_rest_and_total():
    rows = counts_out.ranking_rows(_record(BASE), top=3)
    assert rows[0] == ["#", "function", "module", "bytecodes", "C calls", "entries", "share"]
    assert [r[1] for r in rows[1:4]] == ["_Kernel._prepare_args", "ModuleSpec.parent", "Out.to_device"]
    assert rows[1] == ["1", "_Kernel._prepare_args", "numba.cuda.dispatcher", "150", "10", "2", "37.5 %"]
    assert rows[4][1] == "the other 3 functions" and rows[4][3] == str(44 + 23 + 9)
    assert rows[5][1:] == ["total per launch", "", "400", "28", "12", "100.0 %"]
    assert sum(float(r[6].split()[0]) for r in rows[1:5]) == pytest.approx(100.0, abs=0.2)


def test_module_table_sums_each_module():
    rows = counts_out.module_rows(_record(BASE))
    assert rows[1] == ["numba.cuda.dispatcher", "3", "182", "45.5 %"]
    assert rows[2] == ["importlib._bootstrap", "2", "132", "33.0 %"]


def _section(other_functions):
    recs = []
    for name, funcs in (("base", BASE), ("v2", other_functions)):
        for worker in (1, 2):
            recs.append({"variant": name, "round": worker - 1, "worker": worker, "nargs": 2, "counts": _record(funcs)})
    return countdiff.section(recs, "base", ["base", "v2"])


def _doc(section, names=("base", "v2"), mechanism=None, details=None):
    variants = [{"name": n, "spec": "numba-cuda==0.30.4", "kind": "wheel", "mechanism": None,
                 "base": "numba-cuda==0.30.4"} for n in names]
    if mechanism:
        variants[-1].update(kind="mechanism", mechanism=mechanism, mechanism_details=details)
    return json.loads(json.dumps({**documents.stamp("counts"), "created": "now",
            "command": ["launchbench", "counts"], "simulator": False, "label": "Exact counts", "host": {},
            "device": {"name": None}, "settings": {"arg_counts": [2], "arg_kind": "array", "dispatch": "lazy",
                                                    "processes": 2, "launches": 5, "top": 4},
            "reference": "base", "variants": variants, "counts": section, "rounds_completed": 2,
            "interrupted": False, "interrupt_reason": None, "timing": {}}))  # a copy: no test changes BASE


def test_the_report_ranks_and_diffs_a_what_if_that_drops_the_imports():
    hoisted = [f for f in BASE if f["module"] != "importlib._bootstrap"]
    hoisted = [dict(f, bytecodes=f["bytecodes"] - 16) if f["function"] == "Out.to_device" else f for f in hoisted]
    details = [{"module": "numba.cuda.args", "function": "Out.to_device", "names": ["driver", "devices"],
                "kept": [], "refused": None}]
    doc = documents.validate(_doc(_section(hoisted), mechanism="hoist-imports", details=details), "counts")
    text = counts_out.report_text(doc)
    assert "2     v2       400 → 252                  -148" in text  # 88 + 44 importlib, 16 own
    assert "Functions that moved (v2 vs base, 2 args)" in text
    moved = text.split("Functions that moved")[1]
    assert moved.index("ModuleSpec.parent") < moved.index("_handle_fromlist") < moved.index("Out.to_device")
    assert "Where the Python time goes: v2, 2 args" in text and "total per launch" in text
    assert "numba.cuda.args Out.to_device: driver, devices imported once, at set-up" in text
    assert "Every process gave identical counts" in text
    md = counts_out.report_markdown(doc)
    assert "| 1 | _Kernel._prepare_args | numba.cuda.dispatcher | 150 | 10 | 2 | 37.5 % |" in md


def test_a_variant_that_counts_the_same_is_not_ranked_twice():
    doc = documents.validate(_doc(_section(BASE)), "counts")
    text = counts_out.report_text(doc)
    assert "the same functions and counts as base" in text
    assert text.count("total per launch") == 1


def test_markdown_keeps_locals_in_qualnames_visible():
    rows = [["function"], ["f.<locals>.g"]]
    assert "f.&lt;locals>.g" in "\n".join(counts_out._md_table(rows))


@pytest.mark.parametrize("change, needle", [
    (lambda d: d.update(schema="launchbench.compare"), "not a launchbench.counts document"),
    (lambda d: d.update(schema_version=99), "schema_version 99"),
    (lambda d: d.pop("settings"), "missing field 'settings'"),
    (lambda d: d["settings"].update(processes="2"), "settings.processes"),
    (lambda d: d.update(reference="nosuch"), "reference 'nosuch'"),
    (lambda d: d["variants"][0].update(kind="bogus"), "variants[0].kind"),
    (lambda d: d["counts"]["variants"].update(ghost={}), "unknown variant 'ghost'"),
    (lambda d: d["counts"]["variants"]["base"]["2"].pop("functions"), "missing field 'functions'"),
    (lambda d: d["counts"]["diffs"]["v2"].update({"2": {"per_launch": {}}}), "expected a diff"),
    (lambda d: d.pop("counts"), "missing field 'counts'"),
    (lambda d: d["counts"]["variants"]["base"]["2"].pop("c_callee_scope"), "missing field 'c_callee_scope'"),
    (lambda d: d["counts"]["variants"]["base"]["2"]["functions"][0].pop("c_callees"), "missing field 'c_callees'"),
    (lambda d: d["counts"]["variants"]["base"]["2"]["functions"][0]["c_callees"].update({"builtins.len": "1"}),
     "c_callees['builtins.len']"),
    (lambda d: d["counts"]["diffs"]["v2"]["2"].pop("callees_moved"), "missing field 'callees_moved'"),
])
def test_the_document_is_checked(change, needle):
    doc = _doc(_section(BASE))
    documents.validate(doc, "counts")
    change(doc)
    with pytest.raises(documents.SchemaError, match=needle.replace("[", r"\[").replace("]", r"\]")) as info:
        documents.validate(doc, "counts")
    assert "\n" not in str(info.value)


def _strip_callees(doc: dict) -> dict:
    """*doc* as version 1 wrote it: no C callees anywhere."""
    doc = json.loads(json.dumps(doc))
    doc.update(documents.stamp("counts", 1))
    for per in doc["counts"]["variants"].values():
        for rec in per.values():
            rec.pop("c_callee_scope")
            for f in rec["functions"]:
                f.pop("c_callees")
    for per in doc["counts"]["diffs"].values():
        for d in per.values():
            for key in ("counts_moved", "callees_moved", "callees_compared", "c_callees", "c_callees_changed"):
                d.pop(key)
            for f in d["functions"]:
                f.pop("c_callees")
    return doc


def test_a_version_1_document_without_c_callees_still_reads_and_renders(tmp_path):
    """Version 2 added the C callees; a version-1 file (none) is read and rendered, saying so,
    and a version-2 document must carry them."""
    hoisted = [f for f in BASE if f["module"] != "importlib._bootstrap"]
    old = _strip_callees(_doc(_section(hoisted)))
    assert old["schema_version"] == 1 and documents.kind("counts").version == 2
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(old))
    doc = documents.read(str(path), "counts")
    text = counts_out.report_text(doc)
    assert "Functions that moved (v2 vs base, 2 args)" in text and "C callees that changed" not in text
    assert "name no C callees" in text
    with pytest.raises(documents.SchemaError, match="c_callee_scope"):
        documents.validate(dict(old, schema_version=2), "counts")


def test_the_counts_report_names_the_c_callees_that_changed():
    """A variant whose launch calls sum where the reference calls len: equal counts, and the
    report's tables name both C functions and where they are called from."""
    swapped = [_fn(f["module"], f["function"], f["bytecodes"], f["c_calls"], f["entries"],
                   {"builtins.sum": f["c_calls"]}) if f["function"] == "_Kernel.launch" else f for f in BASE]
    doc = documents.validate(_doc(_section(swapped)), "counts")
    d = doc["counts"]["diffs"]["v2"]["2"]
    assert d["moved"] and d["callees_moved"] and not d["counts_moved"] and set(d["per_launch"].values()) == {0}
    assert [(c["name"], c["delta"], c["status"]) for c in d["c_callees"]] == [
        ("builtins.isinstance", -1, "changed"), ("builtins.sum", 1, "gained")]
    text = counts_out.report_text(doc)
    changed = text.split("C callees that changed (v2 vs base, 2 args):")[1]
    assert "builtins.sum" in changed and "gained" in changed and "_Kernel.launch (numba.cuda.dispatcher)" in changed
    assert "the same functions and counts as base; only the C callees above changed" in text
    rows = counts_out.count_diff_rows(doc["counts"], [2])
    assert rows[1][-2:] == ["1", "2"]  # one function changed, two of its C callee counts
    md = counts_out.report_markdown(doc)
    assert "| builtins.sum | +1 | 0 → 1 | gained | _Kernel.launch (numba.cuda.dispatcher) |" in md
    assert "| 1 | builtins.isinstance | 28 |" in md and "| 2 | builtins.sum | 1 | _Kernel.launch |" in md


def test_read_words_its_errors_in_one_line(tmp_path):
    good = tmp_path / "c.json"
    documents.write(str(good), _doc(_section(BASE)), "counts")
    assert documents.read(str(good), "counts")["reference"] == "base"
    (tmp_path / "bad.json").write_text("{not json")
    for path, needle in ((tmp_path / "none.json", "does not exist"), (tmp_path / "bad.json", "not valid JSON"),
                         (tmp_path, "is a directory")):
        with pytest.raises(UserError, match=needle):
            documents.read(str(path), "counts")
    with pytest.raises(documents.SchemaError):  # write validates: nothing half-checked reaches the disk
        documents.write(str(tmp_path / "x.json"), {"schema": "launchbench.counts"}, "counts")
    assert not (tmp_path / "x.json").exists()


def test_the_pass_plan_times_nothing():
    plan = countpass.plan([("a", sys.executable, None)], "a", [0, 2], processes=2, launches=7, simulator=True,
                          overlay="o", log_dir="l")
    assert plan.rounds == plan.count_rounds == 2 and plan.count_launches == 7
    assert plan.loops == {0: 1, 2: 1}  # given, so the runner does not calibrate
    assert plan.measure is countpass.no_timing and plan.affinity is None and plan.prefetch == 1


@pytest.mark.slow
def test_simulator_end_to_end(tmp_path, monkeypatch, capsys):
    """Three variants of this environment under the simulator: contextvar adds its wrapper's
    functions; hoist-imports changes nothing the simulator's launch runs (its device arrays
    never reach to_device) and says what it hoisted. Every worker is asked to set up,
    prepare and count, nothing else."""
    sent = []
    original_send = workerproc.Worker.send

    def send(self, request):
        sent.append((self.variant, request["cmd"]))
        return original_send(self, request)

    monkeypatch.setattr(workerproc.Worker, "send", send)
    out = tmp_path / "c.json"
    rc = cli.main(["counts", "--simulator", "--variant", f"base={HERE}", "--variant", "cv=contextvar@base",
                   "--variant", "hoist=hoist-imports@base", "--args", "0,2", "--launches", "5", "--top", "5",
                   "--quiet", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    doc = documents.read(str(out), "counts")
    section = doc["counts"]
    assert doc["simulator"] and doc["rounds_completed"] == 2
    # the simulator starts a thread per launch: when it is already running, Thread.start skips a
    # Condition.wait (about one launch in 200 here), so only threading's rows may differ by chance
    racy = {"threading"}
    assert {cmd for _v, cmd in sent} == {"setup", "prepare", "counts"}
    for name in ("base", "cv", "hoist"):
        assert sent.count((name, "setup")) == 2 and sent.count((name, "counts")) == 2 * 2
        workers = {r["worker"] for r in section["records"] if r["variant"] == name}
        assert len(workers) == 2
    base, cv = section["variants"]["base"]["2"], section["variants"]["cv"]["2"]
    d = section["diffs"]["cv"]["2"]
    assert d["moved"] and d["per_launch"]["bytecodes"] == cv["per_launch"]["bytecodes"] - base["per_launch"]["bytecodes"] > 0
    added = {(f["module"], f["status"]) for f in d["functions"]}
    assert ("launchbench.workloads.capture.mechanisms", "added") in added
    for nargs in ("0", "2"):  # nothing the simulator's launch runs was rewritten
        assert {f["module"] for f in section["diffs"]["hoist"][nargs]["functions"]} <= racy
    details = {r["function"] for r in doc["variants"][2]["mechanism_details"]}
    assert {"In.to_device", "Out.to_device", "InOut.to_device"} <= details
    assert "Where the Python time goes: base, 2 args" in text
    assert "Where the Python time goes" in (tmp_path / "c.md").read_text()
    assert json.loads(out.read_text())["settings"]["processes"] == 2
