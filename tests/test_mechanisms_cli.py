"""``launchbench mechanisms``: option parsing, the interleaved loop, statistics, simulator smoke run."""
import json
import os
import random
import subprocess
import sys

import pytest

from launchbench.base.errors import UserError
from launchbench.commands import mechanisms_cli as cli
from launchbench.workloads.capture import mechanism_rounds as mech_rounds
from launchbench.workloads.capture import mechanisms

pytest.importorskip("launchbench.workloads._tls", reason="C extension not built (pip install -e .)")


@pytest.fixture(autouse=True)
def restore_stock():
    yield
    mechanisms.uninstall()


def test_parse_specs_adds_references_and_canonicalises():
    # passthrough always (tls and delay are judged against it); stock only for contextvar
    assert cli.parse_specs("tls,delay:0.5us,tls") == ["passthrough", "tls", "delay:500ns"]
    assert cli.parse_specs("contextvar") == ["stock", "passthrough", "contextvar"]
    assert cli.parse_specs("stock,passthrough,contextvar")[:2] == ["stock", "passthrough"]
    with pytest.raises(UserError, match="unknown mechanism"):
        cli.parse_specs("tls,fast")


@pytest.mark.parametrize("ci, verdict", [((0.01, 0.09), "met"), ((0.05, 0.1), "met"),
                                         ((0.05, 0.2), "inconclusive"), ((0.11, 0.3), "missed")])
def test_target_verdict(ci, verdict):
    assert cli.target_verdict(ci) == verdict


def _round(index, per_args):
    return {"round": index, "order": {}, "complete": True,
            "samples": {str(k): v for k, v in per_args.items()}}


def test_analyze_pairs_rounds_and_judges_the_target():
    specs = ["stock", "passthrough", "tls", "contextvar"]
    rounds = []
    for r in range(6):
        drift = 0.5 * r  # the machine drifts between rounds; pairing removes it
        jitter = 0.01 * (r % 2)
        rounds.append(_round(r, {0: {"stock": [10.0 + drift] * 3, "passthrough": [10.1 + drift] * 3,
                                     "tls": [10.14 + drift + jitter] * 3, "contextvar": [13.1 + drift] * 3}}))
    out = cli.analyze(rounds, specs, [0])
    entry = out["per_args"]["0"]
    tls = entry["vs_passthrough"]["tls"]
    assert tls["rounds"] == 6
    assert tls["delta_us"] == pytest.approx(0.045, abs=1e-9)
    assert tls["ci_us"][0] < 0.045 < tls["ci_us"][1] < 0.1
    assert entry["tls_target"]["verdict"] == "met"
    assert out["tls_target"]["verdict"] == "met"
    assert entry["vs_stock"]["contextvar"]["delta_us"] == pytest.approx(3.1)
    assert entry["median_us"]["stock"] == pytest.approx(11.25)


def test_analyze_missed_and_simulator_not_judged():
    rounds = [_round(r, {1: {"stock": [5.0 + r], "passthrough": [5.0 + r], "tls": [5.5 + r + 0.01 * (r % 2)]}})
              for r in range(4)]
    assert cli.analyze(rounds, ["stock", "passthrough", "tls"], [1])["tls_target"]["verdict"] == "missed"
    sim = cli.analyze(rounds, ["stock", "passthrough", "tls"], [1], judge=False)
    assert sim["tls_target"]["verdict"] == "not judged (simulator)"
    assert "tls_target" not in sim["per_args"]["1"]


class _CountingKernel:
    """Plays a simulator kernel: ``kernel[g, b, s, m](*args)``; can raise Ctrl-C after N launches."""

    def __init__(self, interrupt_after=None):
        self.launches, self.interrupt_after = 0, interrupt_after

    def __getitem__(self, config):
        return self._launch

    def _launch(self, *args):
        self.launches += 1
        if self.interrupt_after is not None and self.launches >= self.interrupt_after:
            raise KeyboardInterrupt


def _expected_class_writes(rounds):
    """What switching from block to block must write, in run order: only moves that leave or enter
    the passthrough/tls/delay family (or re-install contextvar) touch the class."""
    family, prev, out = {"passthrough", "tls", "delay"}, "stock", []
    for r in rounds:
        for n, order in r["order"].items():
            for spec in order:
                name = mechanisms.parse(spec)[0]
                out.append((r["round"], n, spec, not ((prev in family and name in family) or prev == name == "stock")))
                prev = name
    return out


def test_run_rounds_interleaves_every_mechanism(monkeypatch):
    specs = cli.parse_specs(",".join(cli.DEFAULT_SPECS))
    kernels = {n: _CountingKernel() for n in (0, 2)}
    launchers = {n: (mech_rounds.SimulatorDispatcher(k)[1, 1], (None,) * n) for n, k in kernels.items()}
    original = mech_rounds.SimulatorDispatcher.__dict__["call"]
    truth = []  # did each switch really write the class? (its __dict__["call"] changed)
    real_switch = mechanisms.switch

    def watched(spec, target=None):
        before = target.__dict__["call"]
        wrote = real_switch(spec, target)
        truth.append(wrote or target.__dict__["call"] is not before)
        return wrote

    monkeypatch.setattr(mechanisms, "switch", watched)
    rounds = mech_rounds.run_rounds(launchers, specs, n_rounds=3, samples=2, launches=5, warmup=1, sync=lambda: None,
                            rng=random.Random(1), target=mech_rounds.SimulatorDispatcher, warmup_class_write=7)
    assert [r["complete"] for r in rounds] == [True] * 3
    for r in rounds:
        for n in ("0", "2"):
            assert sorted(r["order"][n]) == sorted(specs)
            assert set(r["samples"][n]) == set(specs) == set(r["class_modified"][n])
            assert all(len(v) == 2 and all(x > 0 for x in v) for v in r["samples"][n].values())
    orders = {tuple(r["order"]["0"]) for r in rounds}
    assert len(orders) > 1, "mechanism order should be shuffled between rounds"
    expected = _expected_class_writes(rounds)
    recorded = [rounds[i]["class_modified"][n][spec] for i, n, spec, _ in expected]
    assert recorded == [w for *_, w in expected] == truth
    assert 0 < sum(recorded) < len(recorded), "some switches in place, some not"
    for n, k in kernels.items():  # 7 warm-up launches after a class write, 1 after an in-place switch
        writes = sum(w for _, key, _, w in expected if key == str(n))
        assert k.launches == 3 * len(specs) * (1 + 2 * 5) + 6 * writes
    assert mechanisms.active() == "stock"
    assert mech_rounds.SimulatorDispatcher.__dict__["call"] is original


def test_run_rounds_switches_in_place_between_family_blocks():
    specs = ["passthrough", "tls", "delay:1us"]  # the Interceptor's family: installed once, then switched
    kernel = _CountingKernel()
    launchers = {0: (mech_rounds.SimulatorDispatcher(kernel)[1, 1], ()),
                 1: (mech_rounds.SimulatorDispatcher(kernel)[1, 1], (None,))}
    rounds = mech_rounds.run_rounds(launchers, specs, n_rounds=4, samples=1, launches=2, warmup=0, sync=lambda: None,
                            rng=random.Random(3), target=mech_rounds.SimulatorDispatcher, warmup_class_write=50)
    flags = [(r["round"], n, spec, r["class_modified"][n][spec]) for r in rounds for n in r["order"]
             for spec in r["order"][n]]
    assert flags[0][3] is True and not any(f[3] for f in flags[1:]), flags  # one install, then in place
    assert kernel.launches == 50 + 4 * 2 * 3 * 2


def test_run_rounds_uninstalls_when_a_block_raises():
    class Broken(_CountingKernel):
        def _launch(self, *args):
            super()._launch(*args)
            if self.launches > 40:
                raise RuntimeError("launch failed")

    original = mech_rounds.SimulatorDispatcher.__dict__["call"]
    launchers = {0: (mech_rounds.SimulatorDispatcher(Broken())[1, 1], ())}
    rounds = []
    with pytest.raises(RuntimeError, match="launch failed"):
        mech_rounds.run_rounds(launchers, ["stock", "passthrough", "tls"], n_rounds=5, samples=1, launches=5, warmup=1,
                       sync=lambda: None, rng=random.Random(0), target=mech_rounds.SimulatorDispatcher, rounds=rounds,
                       warmup_class_write=2)
    assert rounds and not rounds[-1]["complete"]
    assert mechanisms.active() == "stock"
    assert mech_rounds.SimulatorDispatcher.__dict__["call"] is original


def test_class_write_summary_counts_blocks_and_reads_old_rounds():
    rounds = [{"class_modified": {"0": {"stock": True, "tls": False}, "1": {"tls": True, "stock": True}}},
              {"samples": {}}]  # a schema-2 round: no record
    out = cli.class_write_summary(rounds)
    assert out == {"blocks": 4, "class_modified": 3,
                   "by_mechanism": {"stock": {"class_modified": 2, "blocks": 2},
                                    "tls": {"class_modified": 1, "blocks": 2}}}
    assert cli.class_write_summary([]) == {"blocks": 0, "class_modified": 0, "by_mechanism": {}}


def test_run_rounds_stops_at_the_deadline_after_a_whole_round():
    specs = ["stock", "passthrough", "tls"]
    launchers = {0: (mech_rounds.SimulatorDispatcher(_CountingKernel())[1, 1], ())}
    ticks = iter(range(100))  # a clock that advances one second per look
    rounds = mech_rounds.run_rounds(launchers, specs, n_rounds=50, samples=1, launches=2, warmup=0, sync=lambda: None,
                            rng=random.Random(0), target=mech_rounds.SimulatorDispatcher, deadline=3,
                            clock=lambda: next(ticks))
    assert len(rounds) == 4 and all(r["complete"] for r in rounds)  # clock 0,1,2 < 3: rounds 2..4 run


def test_analyze_median_of_paired_blocks_ignores_flipped_rounds():
    # A fast (10) / slow (14) state shared by the blocks of a pair round; in 2 of 40 rounds the
    # state flips between the passthrough and tls blocks. The median paired difference stays 0.05.
    rounds = []
    for r in range(40):
        base = 14.0 if r % 3 == 0 else 10.0
        flip = 4.0 if r in (7, 20) else 0.0
        rounds.append(_round(r, {0: {"stock": [base], "passthrough": [base + 0.1], "tls": [base + 0.15 + flip]}}))
    entry = cli.analyze(rounds, ["stock", "passthrough", "tls"], [0])["per_args"]["0"]
    tls = entry["vs_passthrough"]["tls"]
    assert tls["units"] == "pairs" and tls["n"] == 40
    assert tls["delta_us"] == pytest.approx(0.05) and tls["ci_us"] == [pytest.approx(0.05), pytest.approx(0.05)]
    assert entry["tls_target"]["verdict"] == "met"
    assert entry["median_us"]["stock"] == 10.0 and entry["median_ci_us"]["stock"] == [10.0, 14.0]


def test_run_rounds_keeps_partial_round_on_ctrl_c():
    specs = ["stock", "passthrough", "tls"]
    per_round = len(specs) * (1 + 2 * 5)
    kernel = _CountingKernel(interrupt_after=per_round + 15)  # in round 2, mechanism 2
    launchers = {0: (mech_rounds.SimulatorDispatcher(kernel)[1, 1], ())}
    rounds = []
    with pytest.raises(KeyboardInterrupt):
        mech_rounds.run_rounds(launchers, specs, n_rounds=5, samples=2, launches=5, warmup=1, sync=lambda: None,
                       rng=random.Random(0), target=mech_rounds.SimulatorDispatcher, rounds=rounds, warmup_class_write=1)
    assert [r["complete"] for r in rounds] == [True, False]
    assert len(rounds[1]["samples"]["0"]) == 1  # the one block finished before Ctrl-C
    assert mechanisms.active() == "stock"
    out = cli.analyze(rounds, specs, [0])
    assert out["per_args"]["0"]["vs_passthrough"]["tls"]["rounds"] == 1


def test_write_json_atomic(tmp_path):
    path = tmp_path / "sub" / "m.json"
    cli.write_json_atomic(str(path), {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    with pytest.raises(ValueError):
        cli.write_json_atomic(str(path), {"a": float("nan")})
    assert json.loads(path.read_text()) == {"a": 1}, "a failed write must leave the old file"
    assert [p.name for p in path.parent.iterdir()] == ["m.json"]


def _launchbench(args, env_extra, cwd):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-m", "launchbench", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_simulator_smoke_run_is_labelled(tmp_path):
    out = tmp_path / "mech.json"
    proc = _launchbench(["mechanisms", "--simulator", "--processes", "1", "--args", "0,1", "--rounds", "2",
                         "--seed", "1", "-o", str(out)], {"NUMBA_ENABLE_CUDASIM": "1"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "not a measurement" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["simulator"] is True and doc["measurement"] is False
    assert doc["rounds_complete"] == 2 and not doc["interrupted"]
    assert doc["params"]["mechanisms"] == ["stock", "passthrough", "contextvar", "tls", "delay:500ns"]
    assert doc["signature"] == "call(args, launch_config)"
    assert doc["delay"]["delay:500ns"]["requested_ns"] == 500
    assert doc["analysis"]["tls_target"]["verdict"] == "not judged (simulator)"
    assert "order-statistic" in doc["method"] and doc["params"]["launches"] == 3
    assert doc["schema"] == "launchbench.mechanisms/4" and doc["analysis_scope"] == "process"
    assert (doc["params"]["warmup"], doc["params"]["warmup_class_write"]) == (10, 120)
    writes = doc["class_writes"]
    assert writes["blocks"] == 2 * 2 * 5 and 0 < writes["class_modified"] < writes["blocks"]
    assert writes["by_mechanism"]["contextvar"]["class_modified"] == 4  # never switched in place
    assert "CUDADispatcher written before" in proc.stdout
    # the verdict says what its intervals cover: one process, not the process-to-process spread
    assert "in this process" in proc.stdout and "across processes (the default" in proc.stdout
    assert doc["analysis"]["tls_target"]["scope"].startswith("one process")
    if hasattr(os, "sched_getaffinity"):
        assert doc["params"]["affinity"] == [max(os.sched_getaffinity(0))]
    for rnd in doc["rounds"]:
        assert set(rnd["samples"]) == {"0", "1"}


def test_refuses_simulator_without_flag(tmp_path):
    proc = _launchbench(["mechanisms", "-o", str(tmp_path / "x.json")], {"NUMBA_ENABLE_CUDASIM": "1"}, tmp_path)
    assert proc.returncode == 2
    assert "simulator" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.json").exists()


def test_simulator_flag_sets_the_simulator_itself(tmp_path):
    """As compare, counts and breakdown: --simulator alone is enough (numba is not imported yet)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout's
    out = tmp_path / "m.json"
    proc = subprocess.run([sys.executable, "-m", "launchbench", "mechanisms", "--simulator", "--processes", "1",
                           "--args", "0", "--rounds", "2", "--mechanisms", "passthrough", "-o", str(out)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["simulator"] is True


def test_simulator_flag_too_late_for_an_imported_numba(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setitem(sys.modules, "numba", sys.modules.get("numba") or object())
    from launchbench import cli
    assert cli.main(["mechanisms", "--simulator", "-o", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "NUMBA_ENABLE_CUDASIM=1" in err and len(err.strip().splitlines()) == 1
    assert "NUMBA_ENABLE_CUDASIM" not in os.environ


def test_bad_options_are_one_line_errors(tmp_path):
    for args in (["--rounds", "0"], ["--mechanisms", "tls,v3"], ["--args", "0-12"], ["--max-time", "-1"],
                 ["--affinity", "100000"], ["--warmup-class-write", "-1"], ["--processes", "0"],
                 ["--prefetch", "x"]):
        proc = _launchbench(["mechanisms", "--simulator", *args], {"NUMBA_ENABLE_CUDASIM": "1"}, tmp_path)
        assert proc.returncode == 2, args
        # argparse's refusals (base/options.py types) name the subcommand; launchbench's own do not
        assert proc.stderr.startswith(("launchbench: error:", "launchbench mechanisms: error:")), (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
