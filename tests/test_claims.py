"""The upstream-claims page (output/claims.py): verdicts from releases documents, "not measured yet"
where none holds the claim's step, and the committed page equal to what the renderer makes."""
import json
import os

from launchbench import cli
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
    page = os.path.join(ROOT, "docs", "upstream-claims.md")
    with open(page, encoding="utf-8") as fh:
        text = fh.read()
    assert "Documents read: none yet." in text  # no GPU releases run committed yet: regenerate when one is
    assert text == claims.render([], {})
    assert text.count("| not measured yet | not measured yet |") == len(claims.CLAIMS)


def test_claims_refuses_a_document_of_another_kind_in_one_line(tmp_path, capsys):
    other = tmp_path / "compare.json"
    other.write_text(json.dumps({"kind": "compare"}))
    rc = cli.main(["claims", str(other), "-o", str(tmp_path / "page.md")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "is not a launchbench releases document (kind 'compare')" in err
    assert not (tmp_path / "page.md").exists()
