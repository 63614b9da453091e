"""The upstream-claims page (output/claims.py): verdicts from releases documents, "not measured yet"
where none holds the claim's step, and the committed page equal to what the renderer makes."""
import json
import os
import re

import pytest

from launchbench import cli
from launchbench.base.atomic import read_json
from launchbench.output import claims

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _step(prev, cur, n, lo, hi, threshold=0.2):
    return {"previous": prev, "commit": cur, "nargs": n, "delta_us": (lo + hi) / 2, "ci_us": [lo, hi], "n": 20,
            "established": lo > threshold or hi < -threshold}


def _doc(steps, levels, measurement=True, created="2026-12-01T00:00:00Z"):
    return {"kind": "releases", "measurement": measurement, "simulator": not measurement, "created": created,
            "settings": {"threshold_us": 0.2}, "device": {"name": "Test GPU"}, "steps": steps, "levels": levels}


def _lv(n, us):
    return {"nargs": n, "us": us, "ci_us": [us - 0.1, us + 0.1], "rounds": 20}


def test_verdicts_come_from_the_measured_steps_and_the_rest_are_not_measured_yet():
    a, b = "numba-cuda-mlir==0.4.1", "numba-cuda-mlir==0.4.2"
    p, q = "numba-cuda==0.29.0+pinned", "numba-cuda==0.30.0+pinned"
    doc = _doc([_step(a, b, 0, -9.0, -8.0), _step(a, b, 1, -9.5, -8.1),
                _step(p, q, 0, 0.9, 1.3), _step(p, q, 1, 0.9, 1.2)],
               {a: [_lv(0, 20.0), _lv(1, 25.0)], p: [_lv(0, 10.0), _lv(1, 15.0)]})
    by = {r["source"]: r for r in claims.rows([doc], {id(doc): "runs/x/releases.json"})}
    r235 = by["numba-cuda-mlir #232/#235 (0.4.2)"]
    assert r235["verdict"] == "agree"
    assert "0 args: 20.00 µs -> -8.50 [-9.00, -8.00] µs (20 rounds)" in r235["measured"]
    assert "Test GPU" in r235["measured"] and "runs/x/releases.json" in r235["measured"]
    r804 = by["numba-cuda 05922fc4 (#804, 0.30.0: launch-config capture)"]  # +9..13 % at 0 args: beyond 1 %
    assert r804["verdict"] == "disagree" and "+/-1.0%" in r804["why"]
    for src in ("numba-cuda-mlir #90 (0.4.0)", "numba-cuda-mlir #243 (0.5.0)",
                "numba-cuda f62f98a8 (#877: the cuda-core >= 1.0 branch)"):
        assert by[src]["measured"] == "not measured yet" and by[src]["why"].startswith("needs ")
    # a step whose intervals hold no change disagrees with "faster"; a straddling one is undecided
    assert claims.verdict(claims.CLAIMS[0], [_step(a, b, 0, -0.1, 0.1)], {}, 0.2)[0] == "disagree"
    assert claims.verdict(claims.CLAIMS[0], [_step(a, b, 0, -0.9, 0.1)], {}, 0.2)[0] == "undecided"


def test_a_simulator_document_is_never_a_measurement():
    a, b = "numba-cuda-mlir==0.4.1", "numba-cuda-mlir==0.4.2"
    doc = _doc([_step(a, b, 0, -9.0, -8.0)], {a: [_lv(0, 20.0)]}, measurement=False)
    assert all(r["verdict"] == "not measured yet" for r in claims.rows([doc]))


def test_the_committed_page_is_what_the_renderer_makes_from_the_committed_documents():
    """docs/upstream-claims.md is generated: rendering the documents its last line lists, in that order and with
    those names, gives the page byte for byte (a hand edit, or a document changed since, fails here)."""
    page = os.path.join(ROOT, "docs", "upstream-claims.md")
    with open(page, encoding="utf-8") as fh:
        text = fh.read()
    listed = re.findall(r"`([^`]+\.json(?:\.gz)?)`", text.rsplit("Documents read:", 1)[1])
    assert listed, "the page names the documents it was rendered from"
    docs, sources = [], {}
    for rel in listed:
        doc = read_json(os.path.join(ROOT, rel))
        docs.append(doc)
        sources[id(doc)] = rel
    assert text == claims.render(docs, sources)
    assert text.count("| not measured yet | not measured yet |") < len(claims.CLAIMS)  # GPU runs are committed


def test_claims_refuses_a_document_of_another_kind_in_one_line(tmp_path, capsys):
    other = tmp_path / "compare.json"
    other.write_text(json.dumps({"kind": "compare"}))
    rc = cli.main(["claims", str(other), "-o", str(tmp_path / "page.md")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "is not a launchbench releases document (kind 'compare')" in err
    assert not (tmp_path / "page.md").exists()


def test_claim_90_reads_only_a_cupy_document_and_names_its_kernel():
    a, b = "numba-cuda-mlir==0.3.0", "numba-cuda-mlir==0.4.0"
    arrays = _doc([_step(a, b, 1, -9.0, -8.0)], {a: [_lv(1, 20.0)]})
    by = {r["source"]: r for r in claims.rows([arrays])}
    assert by["numba-cuda-mlir #90 (0.4.0)"]["verdict"] == "not measured yet"  # device arrays: not the claim's
    cupy = _doc([_step(a, b, 1, -9.0, -8.0), _step(a, b, 2, -12.0, -10.0)], {a: [_lv(1, 30.0), _lv(2, 35.0)]},
                created="2026-12-02T00:00:00Z")
    cupy["settings"]["arg_kind"] = "cupy"
    row = {r["source"]: r for r in claims.rows([arrays, cupy], {id(cupy): "runs/cupy.json"})}["numba-cuda-mlir #90 (0.4.0)"]
    assert row["verdict"] == "agree" and "float32[1] CuPy arrays (arg kind cupy)" in row["measured"]
    assert "1 args: 30.00 µs -> -8.50 [-9.00, -8.00] µs (20 rounds)" in row["measured"]
    assert "runs/cupy.json" in row["measured"] and "vector-add" in row["why"] and "empty kernel with N CuPy" in row["why"]
    cupy["steps"] = [_step(a, b, 1, -0.1, 0.1), _step(a, b, 2, -0.15, 0.1)]  # no change at any count
    assert {r["source"]: r for r in claims.rows([cupy])}["numba-cuda-mlir #90 (0.4.0)"]["verdict"] == "disagree"


def _ratio_doc(kind, costs, created="2026-12-01T00:00:00Z"):
    """A releases document of numba-cuda 0.30.4 and numba-cuda-mlir 0.6.0 whose samples per round are
    *costs*: nargs -> (numba-cuda µs per round, mlir µs per round)."""
    points = [{"sha": "numba-cuda==0.30.4", "variant": "r01", "measured": True},
              {"sha": "numba-cuda-mlir==0.6.0", "variant": "r02", "measured": True}]
    samples = [{"variant": v, "nargs": n, "round": r, "repeat": k, "us": us[r] + k * 0.01}
               for n, (nc, ml) in costs.items() for v, us in (("r01", nc), ("r02", ml))
               for r in range(len(nc)) for k in range(3)]
    doc = _doc([], {}, created=created)
    doc.update(points=points, samples=samples)
    doc["settings"].update(arg_kind=kind, arg_counts=sorted(costs))
    return doc


def test_the_ubench_row_is_per_round_ratios_with_intervals_and_names_the_rows_not_measured():
    arrays = _ratio_doc("array", {0: ([10.0, 10.2, 9.8], [9.0, 9.2, 8.8]), 1: ([20.0, 20.0, 20.0], [10.0, 10.0, 10.0])})
    scalars = _ratio_doc("scalar", {16: ([36.0, 35.0, 37.0], [10.0, 10.0, 10.0])})
    row = {r["source"]: r for r in claims.rows([arrays, scalars], {id(arrays): "a.json", id(scalars): "s.json"})}[
        claims.CLAIMS[3]["source"]]
    assert row["verdict"] == "disagree"  # 2.00x [2.00, 2.00] at 1 array leaves out the claimed 1.97x
    assert "outside our 95% CI at 2 of 3 (empty, 1 array)" in row["why"], row["why"]  # 16 scalars: 3.60x holds 3.56x
    # per round: the median of numba-cuda's samples over mlir's (the repeats' offsets cancel at 1 array)
    assert "1 array: 2.00x [2.00, 2.00] (3 rounds; claimed 1.97x)" in row["measured"]
    assert "16 scalars: 3.60x" in row["measured"] and "empty: 1.11x" in row["measured"]
    assert "a.json" in row["measured"] and "s.json" in row["measured"]
    assert "not measured: 16 arrays, 256 scalars" in row["why"] and "at 3 of 3" in row["why"]
    near = _ratio_doc("array", {0: ([10.6, 10.4, 10.8], [10.0, 10.0, 10.0])})  # about 1.06x, as claimed
    got = {r["source"]: r for r in claims.rows([near])}[claims.CLAIMS[3]["source"]]
    assert got["verdict"] == "agree" and "outside our 95% CI at 0 of 1" in got["why"]
    sim = _ratio_doc("array", {1: ([20.0, 20.0], [10.0, 10.0])})
    sim["measurement"] = False
    assert {r["source"]: r for r in claims.rows([sim])}[claims.CLAIMS[3]["source"]]["verdict"] == "not measured yet"


def _lock_point(label, planner_api="lcs", waits=(), error=None, note=None):
    from launchbench.workloads import lockprobe

    keys = list(lockprobe.KERNELS) if planner_api == "lcs" else ["plain-no-planner", "plain-planner"]
    kernels = [{"kernel": k, "label": k, "forms": {form: {
        "completed_while_held": k not in waits, "completed_after_release": True, "error": None, "timeout_s": 2.0,
        "us": 3.0, "samples_us": [3.0]} for form in lockprobe.FORMS}} for k in keys]
    return {"point": label, "version": label.split("==")[1], "stack": {}, "planner_api": planner_api, "note": note,
            "lock": "lock", "device": {"name": "Test GPU"}, "kernels": [] if error else kernels,
            **({"error": error} if error else {})}


def _lock_doc(points, measurement=True):
    from launchbench.output import lockprobe

    return lockprobe.document("numba-cuda-mlir==0.4.2,0.5.0,0.6.0", points, [],
                              {"timeout_s": 2.0, "loops": 10, "repeats": 2}, measurement, ["launchbench"],
                              "2026-12-01T00:00:00Z")


def test_claim_243_reads_the_lock_probe():
    src = "numba-cuda-mlir #243 (0.5.0)"
    before = _lock_point("numba-cuda-mlir==0.4.2", "planner", waits=("plain-planner",),
                         note="numba-cuda-mlir 0.4.2 has register_planner but no require_launch_config")
    doc = _lock_doc([before, _lock_point("numba-cuda-mlir==0.5.0"), _lock_point("numba-cuda-mlir==0.6.0")])
    row = {r["source"]: r for r in claims.rows([doc], {id(doc): "lock.json"})}[src]
    assert row["verdict"] == "agree" and "lock.json" in row["measured"] and "Test GPU" in row["measured"]
    assert "numba-cuda-mlir==0.6.0: plain-no-planner: launches while the lock is held" in row["measured"]
    assert "before, numba-cuda-mlir==0.4.2: " in row["why"] and "plain-planner: waits for the lock" in row["why"]
    waits = _lock_doc([_lock_point("numba-cuda-mlir==0.5.0", waits=("lcs-planner",))])
    assert {r["source"]: r for r in claims.rows([waits])}[src]["verdict"] == "disagree"
    failed = _lock_doc([_lock_point("numba-cuda-mlir==0.5.0", error="does not import")])
    got = {r["source"]: r for r in claims.rows([failed])}[src]
    assert got["verdict"] == "undecided" and "does not import" in got["why"]
    stand_in = _lock_doc([_lock_point("numba-cuda-mlir==0.5.0")], measurement=False)
    assert {r["source"]: r for r in claims.rows([stand_in])}[src]["verdict"] == "not measured yet"
    assert "change itself is not seen" not in row["why"]  # 0.4.2's planner kernel waited: the change is seen
    never = _lock_doc([_lock_point("numba-cuda-mlir==0.4.2", "planner"), _lock_point("numba-cuda-mlir==0.5.0")])
    got = {r["source"]: r for r in claims.rows([never])}[src]
    assert got["verdict"] == "agree" and "the change itself is not seen" in got["why"]


def test_claims_reads_a_lock_probe_document(tmp_path, capsys):
    path = tmp_path / "lock.json"
    path.write_text(json.dumps(_lock_doc([_lock_point("numba-cuda-mlir==0.5.0")])))
    rc = cli.main(["claims", str(path), "-o", str(tmp_path / "page.md")])
    assert rc == 0, capsys.readouterr().err
    page = (tmp_path / "page.md").read_text()
    assert "| agree |" in page and os.path.relpath(path) in page


def test_a_cell_neither_ends_the_row_nor_becomes_a_link():
    """The lock probe's form ``k[1, 1](out)`` read as a Markdown link (mkdocs --strict refused the page)."""
    assert claims.markdown_cell("k[1, 1](out) a|b") == "k[1, 1]\\(out) a\\|b"


def _counts_step(prev, cur, bc, fn="CUDADispatcher.call"):
    d = {"kinds": ["bytecodes", "calls"], "per_launch": {"bytecodes": bc, "calls": 1}, "moved": True,
         "counts_moved": True, "c_callees": [], "c_callees_changed": 0, "functions_changed": 1,
         "functions": [{"function": fn, "delta": {"bytecodes": bc}, "status": "changed"}]}
    return {"previous": prev, "commit": cur, "moved": True, "per_nargs": {"0": d}}


def test_a_counted_run_puts_its_exact_counts_step_beside_the_microseconds():
    """The counts step between the claim's two points, with the functions that moved; identical counts
    say so; a run that counted nothing adds nothing."""
    p, q = "numba-cuda==0.29.0+pinned", "numba-cuda==0.30.0+pinned"
    doc = _doc([_step(p, q, 0, 0.9, 1.3)], {p: [_lv(0, 10.0)]})
    src = "numba-cuda 05922fc4 (#804, 0.30.0: launch-config capture)"
    assert "counts" not in {r["source"]: r for r in claims.rows([doc])}[src]["measured"]
    doc["counts"] = {"steps": [_counts_step(p, q, 63)]}
    got = {r["source"]: r for r in claims.rows([doc])}[src]["measured"]
    assert "exact counts per launch +63 bc, +1 calls (CUDADispatcher.call +63 bc)" in got
    doc["counts"] = {"steps": [dict(_counts_step(p, q, 0), moved=False)]}
    assert "exact counts per launch identical" in {r["source"]: r for r in claims.rows([doc])}[src]["measured"]
    doc["counts"] = {"steps": [{"previous": p, "commit": q, "error": "counting failed: boom"}]}
    assert "exact counts not comparable (counting failed: boom)" in {
        r["source"]: r for r in claims.rows([doc])}[src]["measured"]
    doc["counts"] = {"steps": [_counts_step("numba-cuda==0.28.2+pinned", q, 5)]}  # another pair's step
    assert "exact counts" not in {r["source"]: r for r in claims.rows([doc])}[src]["measured"]


def test_the_ubench_ratio_takes_the_release_of_the_exact_label_before_its_pinned_stack():
    """A stacks run holds numba-cuda 0.30.4 twice (+pinned and on its newest stack): the ratio is the
    newest stack's, as the ubench documents measure it; +pinned only where nothing else matches."""
    doc = _ratio_doc("array", {0: ([20.0, 20.0], [10.0, 10.0])})
    doc["points"].insert(0, {"sha": "numba-cuda==0.30.4+pinned", "variant": "r00", "measured": True})
    doc["samples"] += [dict(s, variant="r00", us=s["us"] * 3) for s in doc["samples"] if s["variant"] == "r01"]
    assert claims.round_ratios(doc, "numba-cuda==0.30.4", "numba-cuda-mlir==0.6.0", 0) == pytest.approx([2.0, 2.0], rel=1e-2)
    doc["points"] = [p for p in doc["points"] if p["sha"] != "numba-cuda==0.30.4"]
    assert claims.round_ratios(doc, "numba-cuda==0.30.4", "numba-cuda-mlir==0.6.0", 0) == pytest.approx([6.0, 6.0], rel=1e-2)
    doc["counts"] = {"steps": [_counts_step("numba-cuda==0.30.4+pinned", "numba-cuda-mlir==0.6.0", 120, "_array_layout")]}
    row = {r["source"]: r for r in claims.rows([doc], {id(doc): "a.json"})}[claims.CLAIMS[3]["source"]]
    assert "a.json): empty, N float32[1] device arrays (arg kind array), exact counts per launch +120 bc" in row["measured"]


def test_claim_877_is_read_from_the_exact_counts_of_the_two_stacks():
    """#877 claims no cost, only that _Kernel.launch runs another branch on every launch with cuda-core >= 1.0:
    agree when the counts differ there at every arg count, disagree when they are identical or move
    elsewhere, undecided where the run did not count."""
    a, b = "numba-cuda==0.30.4+cuda-core==0.7.0", "numba-cuda==0.30.4+cuda-core==1.2.2"
    src = "numba-cuda f62f98a8 (#877: the cuda-core >= 1.0 branch)"
    doc = _doc([_step(a, b, 0, -0.01, 0.39), _step(a, b, 1, 0.15, 0.51)], {a: [_lv(0, 18.0), _lv(1, 28.0)]})

    def row():
        return {r["source"]: r for r in claims.rows([doc])}[src]
    assert row()["verdict"] == "undecided" and "did not count" in row()["why"]
    step = _counts_step(a, b, 1, "_Kernel.launch")
    step["per_nargs"]["1"] = step["per_nargs"]["0"]
    doc["counts"] = {"steps": [step]}
    got = row()
    assert got["verdict"] == "agree" and "differ in _Kernel.launch and nowhere else, at every arg count (2)" in got["why"]
    assert "exact counts per launch +1 bc, +1 calls (_Kernel.launch +1 bc)" in got["measured"]
    step["per_nargs"]["1"] = _counts_step(a, b, 2, "CUDADispatcher.call")["per_nargs"]["0"]  # elsewhere at 1 arg
    assert row()["verdict"] == "disagree" and "not in _Kernel.launch at every arg count" in row()["why"]
    doc["counts"] = {"steps": [dict(step, moved=False)]}
    assert row()["verdict"] == "disagree" and "identical at both points" in row()["why"]
    doc["counts"] = {"steps": [{"previous": a, "commit": b, "error": "counting failed: boom"}]}
    assert row()["verdict"] == "undecided" and "boom" in row()["why"]
