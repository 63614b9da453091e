"""Workers forked from zygotes (--spawn fork, engine/zygote.py), on CPU.

Real zygotes and forks time a stdlib callable (the worker's ``target``): what is checked is who
started whom, the clusters the statistics use, that nothing outlives the run, and the one-line
failure of a zygote that is gone. No test depends on how long anything took.
"""
import dataclasses
import os
import random
import sys
import threading

import pytest

from launchbench.engine import analysis, progressbar, runner, runplan, stats, workerproc, zygote
from launchbench.environments import envs


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as fh:  # a zombie waiting for its reaper is gone too
        return fh.read().rsplit(")", 1)[1].split()[0] == "Z"


def _plan(tmp_path, rounds, fork_rounds, **kw):
    overlay = envs.make_overlay(str(tmp_path / "overlay"))
    return runplan.Plan(variants=[("a", sys.executable, None), ("b", sys.executable, None)], reference="a",
                       arg_counts=[0], loops={0: 20}, repeats=3, rounds=rounds, warmup=2, sample_target_s=0.0,
                       simulator=True, affinity=None, peers=False, overlay=overlay, log_dir=str(tmp_path),
                       prefetch=1, setup={"target": "os:getpid"}, spawn="fork", fork_rounds=fork_rounds, **kw)


def test_forked_rounds_form_clusters_and_leave_nothing(tmp_path):
    infos = []
    out = runner.run(_plan(tmp_path, rounds=4, fork_rounds=2),
                     progressbar.Progress(4, enabled=False), on_round=lambda o: infos.append(dict(o.round_infos)))
    assert out.rounds_completed == 4 and out.error is None
    assert sorted({(s["round"], s["cluster"]) for s in out.samples}) == [(0, 0), (1, 0), (2, 1), (3, 1)]
    zyg = out.timing["zygotes"]
    assert sorted((z["variant"], z["forks"]) for z in zyg) == [("a", 2), ("a", 2), ("b", 2), ("b", 2)]
    by_pid = {z["pid"]: z for z in zyg}
    workers = set()
    for rnd, per_variant in enumerate(infos):
        for name, info in per_variant.items():
            parent = by_pid[info["parent"]]  # each worker's parent is a zygote of its own variant
            assert parent["variant"] == name
            workers.add(info["pid"])
    assert len(workers) == 8  # a fresh process per variant and round
    # the two rounds of a cluster come from the same zygotes, the clusters from different ones
    assert infos[0]["a"]["parent"] == infos[1]["a"]["parent"] != infos[2]["a"]["parent"]
    assert all(_gone(pid) for pid in list(by_pid) + sorted(workers))


def test_fresh_rounds_are_their_own_units(tmp_path):
    out = runner.run(dataclasses.replace(_plan(tmp_path, rounds=2, fork_rounds=2), spawn="fresh"),
                     progressbar.Progress(2, enabled=False))
    assert out.rounds_completed == 2
    assert all("cluster" not in s for s in out.samples) and "zygotes" not in out.timing


def test_a_zygote_that_is_gone_fails_in_one_line(tmp_path):
    env = workerproc.worker_environment(envs.make_overlay(str(tmp_path / "ov")), simulator=True)
    z = zygote.Zygote("a", sys.executable, env, str(tmp_path / "z.log"))
    z.proc.kill()
    z.proc.wait()
    with pytest.raises(workerproc.WorkerError) as err:
        workerproc.Worker("a", sys.executable, "", str(tmp_path / "w.log"), True, zygote=z)
    assert err.value.kind == "died" and "zygote of a" in str(err.value) and "\n" not in str(err.value)
    z.close()


def test_a_cancelled_run_does_not_wait_for_a_zygote(tmp_path):
    env = workerproc.worker_environment(envs.make_overlay(str(tmp_path / "ov")), simulator=True)
    z = zygote.Zygote("a", sys.executable, env, str(tmp_path / "z.log"))
    z.cancel = threading.Event()
    z.cancel.set()
    with pytest.raises(workerproc.Halted):
        z.fork(str(tmp_path / "w.log"), workerproc.Halted)
    z.kill()
    assert _gone(z.proc.pid)


def _samples(cluster_offsets, rounds_per_cluster, seed, delta=0.0):
    """Synthetic compare samples: variant b = a + delta + its cluster's offset + noise (us)."""
    rng = random.Random(seed)
    out, rnd = [], 0
    for c, offset in enumerate(cluster_offsets):
        for _ in range(rounds_per_cluster):
            for rep in range(5):
                a = 10.0 + rng.gauss(0, 0.05)
                out.append({"variant": "a", "nargs": 0, "round": rnd, "repeat": rep, "us": a, "cluster": c})
                out.append({"variant": "b", "nargs": 0, "round": rnd, "repeat": rep, "us": a + delta + offset
                            + rng.gauss(0, 0.05), "cluster": c})
            rnd += 1
    return out


def test_intervals_are_over_clusters_and_see_a_shared_offset():
    offsets = [random.Random(7).choice([-0.5, 0.5]) * (1 + i % 3) for i in range(8)]
    shared = _samples(offsets, 4, seed=1)
    _stats, deltas = analysis.analyze(shared, ["a", "b"], "a", [0])
    d = deltas[0]
    assert d["units"] == "clusters" and d["n"] == 8 and d["rounds"] == 32
    assert d["clusters"]["icc"] > 0.9 and d["clusters"]["design_effect"] > 3.5
    # the same rounds taken as independent (clusters dropped) give a far narrower, wrong interval
    rounds_only = [{k: v for k, v in s.items() if k != "cluster"} for s in shared]
    _s, wrong = analysis.analyze(rounds_only, ["a", "b"], "a", [0])
    width = lambda x: x["ci_us"][1] - x["ci_us"][0]  # noqa: E731
    assert wrong[0]["n"] == 32 and width(wrong[0]) < 0.6 * width(d)


def test_forks_without_a_shared_offset_read_icc_zero():
    d = analysis.analyze(_samples([0.0] * 8, 4, seed=3, delta=0.2), ["a", "b"], "a", [0])[1][0]
    assert d["clusters"]["icc"] < 0.3 and abs(d["delta_us"] - 0.2) < 0.02


def test_cluster_split_needs_two_clusters_of_two():
    assert stats.cluster_split([[1.0, 2.0]]) is None
    assert stats.cluster_split([[1.0], [2.0], [3.0]]) is None
    split = stats.cluster_split([[0.0, 0.0], [10.0, 10.0]])
    assert split["icc"] == pytest.approx(1.0) and split["design_effect"] == pytest.approx(2.0)
