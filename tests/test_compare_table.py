"""The text table (golden text) and the JSON schema round trip of a compare document."""
import json

import pytest

from launchbench.commands import compare
from launchbench.engine.runplan import Outcome
from launchbench.output import documents, tables


def fixed_document(simulator=False, rounds=2, interrupted=False, peers=False):
    """A document built by the real analysis code from fixed samples."""
    levels = {"baseline": [10.0, 15.0], "contextvar": [13.0, 18.5], "v2": [10.04, 15.1]}
    out = Outcome(loops={0: 20000, 1: 20000}, rounds_completed=rounds,
                  interrupted=interrupted, reason="KeyboardInterrupt" if interrupted else None,
                  timing={"setup_wait_s": 5.5, "measure_s": 160.2, "wall_s": 171.4})
    for r in range(rounds):
        drift = 1.0 + 0.2 * r  # round 2 is 20% slower for everyone
        for rep in range(3):
            for n in (0, 1):
                for name, lv in levels.items():
                    jitter = (rep - 1) * 0.01 * (r + 1)
                    out.samples.append({"variant": name, "nargs": n, "round": r, "repeat": rep,
                                        "worker": 100 + r, "us": round(lv[n] * drift + jitter, 6)})
        if peers:
            out.peer_samples += [{"peer": "cupy", "nargs": n, "round": r, "us": 4.25 + n * 0.2} for n in (0, 1)]
            out.peer_samples += [{"peer": "floor", "nargs": n, "round": r, "us": None} for n in (0, 1)]
    out.infos = {"baseline": {"device": {"name": "NVIDIA H200", "compute_capability": "9.0",
                                         "driver_version": "13.0", "runtime_version": "13.0", "simulator": False}}}
    settings = {"arg_counts": [0, 1], "loops": {"0": 20000, "1": 20000}, "calibrated": True,
                "sample_target_s": 0.05, "repeats": 3, "rounds": rounds, "warmup": 1000, "affinity": None,
                "gc_disabled": True, "launch": "[1, 1]", "order": "interleaved", "peers": peers}
    variants = [{"name": n, "spec": s, "kind": k, "mechanism": m, "base": "numba-cuda==0.29.0",
                 "numba_cuda_version": "0.29.0", "git_sha": None, "pins": {}, "installed": {},
                 "python": "3.12.3", "env": "/tmp/e"}
                for n, s, k, m in (("baseline", "numba-cuda==0.29.0", "wheel", None),
                                   ("contextvar", "contextvar@numba-cuda==0.29.0", "mechanism", "contextvar"),
                                   ("v2", "numba-cuda==0.30.4", "wheel", None))]
    return compare.build_document(argv=["launchbench", "compare"], simulator=simulator, host={"cpu": "x"},
                                  settings=settings, reference="baseline", variants=variants, outcome=out)


GOLDEN = """\
Device: NVIDIA H200, cc 9.0, driver 13.0, runtime 13.0
Rounds: 2/2 x 3 repeats, loops per sample 20000,20000 (calibrated), 171 s

Launch overhead (us/launch; mean +/- stdev of all samples):
args  baseline            contextvar          v2
0     11.00 +/- 1.10      14.30 +/- 1.42      11.04 +/- 1.10
1     16.50 +/- 1.64      20.35 +/- 2.03      16.61 +/- 1.65

Deltas vs baseline:
args  contextvar          v2
0     3.30 (+30.0%)       0.04 (+0.4%)
1     3.85 (+23.3%)       0.11 (+0.7%)

95% confidence intervals of the deltas (percent of baseline; 2 rounds, paired within rounds):
0 args  contextvar: +30.0% [+30.0, +30.0] slower   (+3.30 us [-0.51, +7.11])
        v2: +0.4% [+0.4, +0.4] slower   (+0.04 us [-0.01, +0.09])
1 args  contextvar: +23.3% [+23.3, +23.3] slower   (+3.85 us [-0.60, +8.30])
        v2: +0.7% [+0.7, +0.7] slower   (+0.11 us [-0.02, +0.24])
"""


def test_table_golden_text():
    assert tables.render(fixed_document()) == GOLDEN


def test_simulator_and_interruption_are_labelled():
    text = tables.render(fixed_document(simulator=True, interrupted=True))
    first = text.splitlines()[0]
    assert "SIMULATOR" in first and "NOT A MEASUREMENT" in first
    assert "INTERRUPTED (KeyboardInterrupt)" in text
    assert "Launch overhead (us/launch; mean +/- stdev of all samples):  [SIMULATOR, not a measurement]" in text


def test_peer_rows():
    text = tables.render(fixed_document(peers=True))
    assert "Peers (us/launch, measured in baseline's workers):" in text
    assert "0     4.25 +/- 0.00       n/a" in text


def test_one_round_says_so():
    text = tables.render(fixed_document(rounds=1))
    assert "1 round: paired samples, add --rounds" in text


def test_run_stopped_at_the_time_cap_advises_a_higher_cap():
    doc = fixed_document(rounds=1)
    doc["stopped"] = "time cap: 60 s of measurement reached after 1 rounds"
    text = tables.render(doc)
    assert "raise --max-time" in text and "add --rounds" not in text


def test_schema_round_trip(tmp_path):
    doc = fixed_document(peers=True)
    path = documents.write(str(tmp_path / "sub" / "r.json"), doc, "compare")
    assert documents.read(path, "compare") == json.loads(json.dumps(doc))
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["r.json"]  # no temp file left behind
    assert tables.render(documents.read(path, "compare")) == tables.render(doc)


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d.update(schema_version=99), "schema_version 99"),
    (lambda d: d.pop("samples"), "missing field 'samples'"),
    (lambda d: d["deltas"][0].update(verdict="maybe"), "verdict"),
    (lambda d: d.update(reference="nope"), "reference 'nope'"),
    (lambda d: d["samples"][0].update(us="fast"), "samples[0].us"),
    (lambda d: d.update(measurement=True, simulator=True), "simulator run cannot be marked"),
])
def test_schema_rejects_bad_documents(tmp_path, mutate, needle):
    doc = fixed_document()
    mutate(doc)
    with pytest.raises(documents.SchemaError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        documents.validate(doc, "compare")
    with pytest.raises(documents.SchemaError):
        documents.write(str(tmp_path / "bad.json"), doc, "compare")
    assert not (tmp_path / "bad.json").exists()


def test_gzipped_results_read_like_plain_ones(tmp_path):
    import gzip

    doc = fixed_document()
    plain = documents.write(str(tmp_path / "r.json"), doc, "compare")
    packed = tmp_path / "r.json.gz"
    packed.write_bytes(gzip.compress(open(plain, "rb").read()))
    assert documents.read(str(packed), "compare") == documents.read(plain, "compare")
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(b"{")[:-4])  # truncated
    with pytest.raises(documents.SchemaError, match="not valid JSON"):
        documents.read(str(tmp_path / "bad.json.gz"), "compare")


def test_read_errors_are_one_line(tmp_path):
    with pytest.raises(documents.SchemaError, match="does not exist"):
        documents.read(str(tmp_path / "none.json"), "compare")
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(documents.SchemaError, match="not valid JSON"):
        documents.read(str(tmp_path / "x.json"), "compare")
