"""compare stops when the answer is known: the rule from the options, the per-round series,
the stopping-valid intervals in the document, the --fail-if-slower exit codes."""
import json
import math
import os
import random
import subprocess
import sys

import pytest

from launchbench import cli
from launchbench.base.errors import UserError
from launchbench.commands import compare
from launchbench.engine import analysis, sequential

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE_ENV = f"env:{sys.prefix}"


def _args(*argv):
    return cli.build_parser().parse_args(["compare", *argv])


def _samples(true_us: dict, rounds: int, repeats: int = 5, seed: int = 1) -> list:
    """Synthetic sample records: reference 'a' at 10 us, others at 10 + true_us[name]; each
    round has its own offset (the per-process effect), each sample a little noise."""
    rng = random.Random(seed)
    out = []
    for r in range(rounds):
        offset = rng.gauss(0, 0.3)
        for rep in range(repeats):
            for name, delta in [("a", 0.0)] + list(true_us.items()):
                out.append({"variant": name, "nargs": 0, "round": r, "repeat": rep, "worker": r,
                            "us": 10.0 + offset + delta + rng.gauss(0, 0.02) + rng.gauss(0, 0.2 * (name != "a"))})
    return out


def test_rule_from_options():
    assert compare.stop_rule(_args("--target-ci", "0")) is None  # a fixed number of rounds
    assert compare.stop_rule(_args()).target_pct == 0.5  # the default
    rule = compare.stop_rule(_args("--target-ci", "0.5"))
    assert rule.mode == "precision" and rule.target_pct == 0.5 and rule.min_rounds == 10
    gate = compare.stop_rule(_args("--fail-if-slower", "2", "--min-rounds", "12"))
    assert gate.mode == "decision" and gate.threshold_pct == 2 and gate.target_pct is None and gate.min_rounds == 12
    with pytest.raises(SystemExit):  # its type (base/options.TARGET_CI) refuses it while parsing
        _args("--target-ci", "-0.5")
    assert compare.stop_rule(_args("--rounds", "4")).min_rounds == 4  # the default: 10, or --rounds when fewer
    with pytest.raises(UserError, match="--min-rounds 10 is more than --rounds 5"):
        compare.stop_rule(_args("--rounds", "5", "--min-rounds", "10"))


def test_round_series_are_per_round_paired_deltas():
    samples = _samples({"b": 1.0}, rounds=8)
    series = analysis.round_series(samples, ["a", "b"], "a", [0])
    us, pct = series[("b", 0)]
    assert len(us) == len(pct) == 8
    assert all(0.5 < u < 1.5 for u in us) and all(4 < p < 16 for p in pct)


def test_apply_rule_widens_to_the_stopping_valid_interval():
    samples = _samples({"b": 1.0}, rounds=20)
    names = ["a", "b"]
    _stats, plain = analysis.analyze(samples, names, "a", [0])
    _stats, seq = analysis.analyze(samples, names, "a", [0])
    rule = sequential.Rule(target_pct=None, threshold_pct=2.0)
    analysis.apply_rule(seq, analysis.round_series(samples, names, "a", [0]), rule, "a")
    (p,), (s,) = plain, seq
    assert s["delta_us"] == p["delta_us"] and s["interval"].startswith("sequential")
    assert s["ci_pct"][0] < p["ci_pct"][0] and s["ci_pct"][1] > p["ci_pct"][1]


def test_a_precision_run_at_its_cap_keeps_the_plain_t_and_one_the_rule_stopped_widens():
    samples = _samples({"b": 1.0}, rounds=20)
    names, rule = ["a", "b"], sequential.Rule(target_pct=0.5)
    series = analysis.round_series(samples, names, "a", [0])
    (plain,) = analysis.analyze(samples, names, "a", [0])[1]
    (capped,) = analysis.analyze(samples, names, "a", [0])[1]
    (stopped,) = analysis.analyze(samples, names, "a", [0])[1]
    analysis.apply_rule([capped], series, rule, "a", chosen=False)
    analysis.apply_rule([stopped], series, rule, "a", chosen=True)
    assert capped["ci_pct"] == plain["ci_pct"] and "ended at its cap" in capped["interval"]
    assert stopped["ci_pct"][0] < plain["ci_pct"][0] and stopped["interval"] == "sequential (precision mode)"
    decision = sequential.Rule(target_pct=None, threshold_pct=2.0)  # a confidence sequence, whatever ended it
    analysis.apply_rule([capped], series, decision, "a", chosen=False)
    assert capped["interval"].startswith("sequential (decision")


def test_gate_result_sides_and_exit_codes():
    recs = [{"variant": "b", "nargs": 0, "ci_pct": [5.0, 9.0]}, {"variant": "b", "nargs": 1, "ci_pct": [-1.0, 1.0]}]
    g = analysis.gate_result(recs, 2.0)
    assert g["exit_code"] == 1 and g["verdict"] == "fail" and g["deltas"] == {"b/0": "above", "b/1": "below"}
    assert analysis.gate_result(recs[1:], 2.0)["exit_code"] == 0
    assert analysis.gate_result([{"variant": "b", "nargs": 0, "ci_pct": [1.0, 3.0]}], 2.0)["exit_code"] == 3


@pytest.mark.parametrize("argv, needle", [
    (["--max-time", "-1"], "argument --max-time: '-1' is less than 0"),
    (["--max-time", "nan"], "argument --max-time: 'nan' is not a finite number"),
    (["--min-rounds", "1"], "argument --min-rounds: '1' is less than 2"),
    (["--target-ci", "-1"], "argument --target-ci: '-1' is less than 0"),
    (["--target-ci", "inf"], "argument --target-ci: 'inf' is not a finite number"),
    (["--fail-if-slower=-5"], "argument --fail-if-slower: '-5' is less than 0"),
    (["--fail-if-slower", "nan"], "argument --fail-if-slower: 'nan' is not a finite number"),
    (["--min-rounds", "10", "--rounds", "5"], "--min-rounds 10 is more than --rounds 5"),
])
def test_bad_stopping_options_are_one_line_errors(argv, needle, capsys):
    try:
        rc = cli.main(["compare", "--simulator", "--variant", f"a={HERE_ENV}", "--variant", f"b={HERE_ENV}",
                       "--no-install", "-o", os.devnull + "-x/none.json", *argv])
    except SystemExit as exc:  # argparse: the option's type refused it
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err
    assert err.count("\n") == 1 and "error: " in err and needle in err, err


def _run(tmp_path, name, *variants_and_options):
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    out = tmp_path / f"{name}.json"
    proc = subprocess.run([sys.executable, "-m", "launchbench", "compare", "--simulator", "--args", "0",
                           "--loops", "20", "--repeats", "3", "--warmup", "1", "--min-rounds", "6",
                           "--no-report", "--quiet", "-o", str(out), *variants_and_options],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, json.loads(out.read_text())


@pytest.mark.slow
def test_gate_fails_a_known_regression_and_stops_early(tmp_path):
    proc, doc = _run(tmp_path, "gate", "--variant", f"a={HERE_ENV}", "--variant", "b=delay:300us@a",
                     "--fail-if-slower", "2", "--rounds", "40")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert doc["gate"]["verdict"] == "fail" and doc["gate"]["exit_code"] == 1
    assert doc["rounds_completed"] < 40 and doc["stopped"].startswith("decided")
    assert doc["settings"]["stop_rule"]["mode"] == "decision"
    assert "FAIL" in proc.stdout


@pytest.mark.slow
def test_gate_is_undecided_at_the_cap_on_a_tiny_budget(tmp_path):
    """Independent of the timings: after 3 rounds the decision interval is unbounded whatever the values,
    so the gate cannot decide, not even an A/A that happens to look shifted."""
    assert sequential.interval([1.0, 1.1, 1.2], sequential.Rule(threshold_pct=0.0))[1:] == (-math.inf, math.inf)
    proc, doc = _run(tmp_path, "cap", "--variant", f"a={HERE_ENV}", "--variant", f"b={HERE_ENV}",
                     "--fail-if-slower", "0", "--rounds", "3", "--min-rounds", "3")
    assert proc.returncode == 3 and doc["gate"]["verdict"] == "undecided" and doc["rounds_completed"] == 3
    (d,) = doc["deltas"]
    assert d["gate_ci_pct"] is None and "unbounded after 3 rounds" in d["interval"]
    assert doc["gate"]["deltas"] == {"b/0": "undecided"}


@pytest.mark.slow
def test_a_precision_run_that_reaches_its_rounds_cap_keeps_the_plain_t(tmp_path):
    """compare hands apply_rule whether the rule chose the last round (sequential.chosen_stop): a
    --target-ci no run of six rounds can reach ends at the cap, and the interval says so."""
    proc, doc = _run(tmp_path, "precision-cap", "--variant", f"a={HERE_ENV}", "--variant", f"b={HERE_ENV}",
                     "--target-ci", "0.0001", "--rounds", "6")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert doc["rounds_completed"] == 6 and doc["settings"]["stop_rule"]["mode"] == "precision"
    (d,) = doc["deltas"]
    assert "ended at its cap" in d["interval"] and d["gate_ci_pct"] == d["ci_pct"]
