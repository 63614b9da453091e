"""bisect's search and decision rule (launchbench.engine.bisection) with injected per-commit
costs and counts: no processes, no clock. A fake stage draws each point's per-round value as
its cost plus Gaussian noise (seeded), so segments add up as real paired deltas do."""
import json
import random

import pytest

from launchbench.engine import bisection
from launchbench.engine.bisection import decide, search

N = 100
THRESHOLD = 0.2


def costs_with(steps: dict, n: int = N) -> list:
    """Per-commit launch cost (us): the sum of the steps at or before each index."""
    out, level = [], 10.0
    for i in range(n):
        level += steps.get(i, 0.0)
        out.append(level)
    return out


class FakeStages:
    """measure(points, stop) over *costs*: every round each point gets cost + noise; a stage
    ends when stop() says so or after *cap* rounds; *budget* rounds in all (then exhausted)."""

    def __init__(self, costs, noise=0.1, cap=60, budget=10_000, seed=0, noisy=None, fails=()):
        self.costs, self.noise, self.cap, self.budget = costs, noise, cap, budget
        self.fails = set(fails)  # commits that do not build
        self.noisy = noisy or {}  # index -> its own noise (a noisy point)
        self.rng = random.Random(seed)
        self.calls, self.rounds = [], 0

    def __call__(self, points, stop):
        self.calls.append(list(points))
        failed = [p for p in points if p in self.fails]
        points = [p for p in points if p not in self.fails]
        vals = {p: [] for p in points}
        series = {}
        for _ in range(self.cap):
            if self.rounds >= self.budget:
                return series, True, failed
            self.rounds += 1
            for p in points:
                vals[p].append(self.costs[p] + self.rng.gauss(0.0, self.noisy.get(p, self.noise)))
            pairs = list(zip(points, points[1:])) + [(points[0], points[-1])]
            series = {(a, b): [y - x for x, y in zip(vals[a], vals[b])] for a, b in pairs}
            if stop(series):
                return series, False, failed
        return series, True, failed


class FakeCounts:
    """count(indices) from a per-commit fingerprint list (None: cannot be counted)."""

    def __init__(self, prints):
        self.prints, self.counted = prints, []

    def __call__(self, indices):
        self.counted.extend(indices)
        return {i: self.prints[i] for i in indices}


def bytecodes_with(steps: dict, n: int = N) -> list:
    out, level = [], 900
    for i in range(n):
        level += steps.get(i, 0)
        out.append(level)
    return out


# ---------------------------------------------------------------- decide (pure)

def _series(mean, sd, rounds, seed):
    rng = random.Random(seed)
    return [mean + rng.gauss(0, sd) for _ in range(rounds)]


def test_decide_never_follows_a_wrong_sign_step_and_takes_more_rounds_instead():
    """Stage 2 once followed a -0.45 us step at 3 args against a +0.3 us range. Here the
    wrong-sign segment is tight and clearly beyond the threshold, the right one still open."""
    pts = [0, 10, 20, 30]
    series = {(0, 10): _series(0.6, 1.5, 12, 1),        # the real step, noisy: still open
              (10, 20): _series(-0.45, 0.05, 12, 2),    # clear, but against the range's direction
              (20, 30): _series(0.0, 0.05, 12, 3),
              (0, 30): _series(0.3, 0.05, 12, 4)}
    # the old rule (the segment whose bound lies furthest beyond 0, either sign) followed the wrong one
    def beyond_zero(seg):
        lo, hi = bisection.judge(series[seg], THRESHOLD, None)["ci_us"]
        return lo if lo > 0 else (-hi if hi < 0 else 0.0)
    assert max(zip(pts, pts[1:]), key=beyond_zero) == (10, 20)
    dec = decide(pts, series, THRESHOLD)
    assert dec["direction"] == 1 and dec["action"] == "more"
    states = {s["segment"]: s["state"] for s in dec["segments"]}
    assert states == {(0, 10): "open", (10, 20): "ruled out", (20, 30): "ruled out"}
    final = decide(pts, series, THRESHOLD, final=True)
    assert final["action"] == "undecided" and final["span"] == (0, 10)
    series[(0, 10)] = _series(0.6, 0.05, 12, 5)  # more rounds have settled it
    assert decide(pts, series, THRESHOLD)["action"] == "follow"
    assert decide(pts, series, THRESHOLD)["segment"] == (0, 10)


def test_decide_overall_direction_no_change_and_no_single_step():
    pts = [0, 5, 9]
    flat = {(0, 5): _series(0, 0.02, 20, 1), (5, 9): _series(0, 0.02, 20, 2), (0, 9): _series(0, 0.02, 20, 3)}
    assert decide(pts, flat, THRESHOLD)["action"] == "no-change"
    unsure = {k: _series(0.1, 2.0, 6, i) for i, k in enumerate(flat)}
    assert decide(pts, unsure, THRESHOLD)["action"] == "more"
    assert decide(pts, unsure, THRESHOLD, final=True)["action"] == "undecided"
    # +0.3 overall as +0.15 and +0.15, each surely above 0: a real step below the threshold is still a
    # step that explains part of the change, and is followed (planted steps go down to 0.15 us)
    spread = {(0, 5): _series(0.15, 0.02, 20, 1), (5, 9): _series(0.15, 0.02, 20, 2), (0, 9): _series(0.3, 0.02, 20, 3)}
    assert decide(pts, spread, THRESHOLD)["action"] == "follow"
    # +0.3 overall spread over six segments, none surely above 0 and each surely short of 0.2: no single step
    six = list(range(0, 31, 5))
    thin = {(a, b): _series(0.05, 0.1, 30, a) for a, b in zip(six, six[1:])}
    thin[(0, 30)] = _series(0.3, 0.05, 30, 99)
    dec = decide(six, thin, THRESHOLD)
    assert [s["state"] for s in dec["segments"]] == ["ruled out"] * 6
    assert dec["action"] == "no-step"
    # a direction from an earlier stage is kept: a faster range follows the negative step
    down = {(0, 5): _series(-0.5, 0.02, 20, 1), (5, 9): _series(0.0, 0.02, 20, 2), (0, 9): _series(-0.5, 0.02, 20, 3)}
    assert decide(pts, down, THRESHOLD, direction=-1)["segment"] == (0, 5)
    assert decide(pts, down, THRESHOLD, direction=1)["action"] == "no-step"


def test_count_segments_find_every_change_and_skip_unbuildable_commits():
    known = {0: "a", 99: "c"}
    prints = ["a"] * 10 + ["b"] * 40 + ["c"] * 50
    skip = set()
    while True:
        open_, settled = bisection.count_segments(known, skip)
        if not open_:
            break
        for i in bisection.count_stage(open_, 5, skip):
            known[i] = prints[i]
    assert settled == [(9, 10), (49, 50)]
    assert len(known) < 25  # a search, not a count of every commit
    # commits that cannot be counted are stepped over; the change is then between their neighbours
    assert bisection.count_segments({3: "a", 6: "b"}, {4, 5}) == ([], [(3, 6)])
    assert bisection.stage_points(0, 10, 5) == [0, 2, 5, 8, 10]
    assert bisection.stage_points(0, 10, 5, skip={5}) == [0, 2, 4, 8, 10]
    assert bisection.stage_points(3, 5, 5) == [3, 4, 5]


# ---------------------------------------------------------------- search (counts, then timing)

def test_a_python_level_step_is_named_from_counts_and_timing_only_confirms_it():
    costs = costs_with({42: 0.3})
    measure, count = FakeStages(costs), FakeCounts(bytecodes_with({42: 12}))
    res = search(N, count, measure, threshold=THRESHOLD)
    assert res["result"] == "found" and (res["previous"], res["culprit"]) == (41, 42) and res["visible"] is True
    assert res["counts_steps"] == [(41, 42)]
    assert measure.calls == [[0, 41, 42, 99]]  # one timing stage: confirming, not locating
    assert len(set(count.counted)) < 20


def test_a_c_level_step_is_not_visible_to_counts_and_timing_finds_it():
    costs = costs_with({63: 0.3})
    measure, count = FakeStages(costs), FakeCounts(bytecodes_with({}))
    res = search(N, count, measure, threshold=THRESHOLD)
    assert res["result"] == "found" and res["culprit"] == 63 and res["visible"] is False
    assert "not visible to counts" in res["counts_note"]
    assert len(measure.calls) > 1 and measure.calls[0] == bisection.stage_points(0, N - 1, 5)


def test_counts_move_elsewhere_and_the_timed_step_is_found_in_a_counts_flat_segment():
    """A Python-level change that costs nothing (counts move, time does not) and a C-level step."""
    costs = costs_with({63: 0.5})
    measure, count = FakeStages(costs), FakeCounts(bytecodes_with({42: 5}))
    res = search(N, count, measure, threshold=THRESHOLD)
    assert res["counts_steps"] == [(41, 42)]
    assert measure.calls[0] == [0, 41, 42, 99]
    first = res["stages"][[s["kind"] for s in res["stages"]].index("timing")]["decision"]
    assert first["segment"] == (42, 99)
    # the stage stops once (42, 99) is established; the costless counts step is never followed
    assert {s["segment"]: s["state"] for s in first["segments"]}[(41, 42)] != "established"
    assert res["result"] == "found" and res["culprit"] == 63 and res["visible"] is False


def _outcome(res: dict):
    """What a search named: the culprit's index, the undecided span, or the other result's name."""
    if res["result"] == "found":
        return res["culprit"]
    if res["result"] == "undecided":
        return tuple(res["span"])
    return res["result"]


# noisy points beside the wrong-sign step (it stays open), or at the real step's segment's end (the
# wrong-sign step is the clearer one: only the direction rule keeps the search off it)
WRONG_SIGN_NOISE = {"near the wrong step": {75: 0.6, 87: 0.6}, "near the real step": {50: 1.2}}


@pytest.mark.parametrize("noisy", list(WRONG_SIGN_NOISE))
@pytest.mark.parametrize("seed", range(12))
def test_a_real_wrong_sign_step_is_never_followed(seed, noisy):
    """+1.0 us at 37, -0.4 us at 80 (both C-level), noisy points: the search follows only the
    range's (+) direction, and names 37 for every seed (these seeds never need "undecided")."""
    costs = costs_with({37: 1.0, 80: -0.4})
    measure = FakeStages(costs, noise=0.15, seed=seed, noisy=WRONG_SIGN_NOISE[noisy])
    res = search(N, FakeCounts(bytecodes_with({})), measure, threshold=THRESHOLD)
    for st in res["stages"]:
        dec = st.get("decision") or {}
        if dec.get("action") == "follow":
            a, b = dec["segment"]
            assert a < 37 <= b, dec["segment"]
    assert _outcome(res) == 37 and res["direction"] == 1


@pytest.mark.parametrize("seed", range(8))
def test_a_budget_that_runs_out_says_undecided_between_two_commits(seed):
    costs = costs_with({58: 0.3})
    measure = FakeStages(costs, noise=0.5, cap=12, seed=seed)
    res = search(N, FakeCounts([None] * N), measure, threshold=THRESHOLD)
    assert "could not be counted" in res["counts_note"]
    # twelve rounds of 0.5 us noise do not even establish the overall +0.3 us: for these seeds the
    # first stage ends undecided over the whole range, saying why
    assert _outcome(res) == (0, N - 1) and "overall change is not established" in res["reason"]


def test_commits_that_do_not_build_are_stepped_over():
    costs = costs_with({63: 0.5})
    first = bisection.stage_points(0, N - 1, 5)
    measure = FakeStages(costs, fails={first[2], 64})
    res = search(N, FakeCounts(bytecodes_with({})), measure, threshold=THRESHOLD)
    assert res["result"] == "found" and (res["previous"], res["culprit"]) == (62, 63)
    for bad in (first[2], 64):  # each tried once, then never again
        assert sum(bad in call for call in measure.calls) == 1
    # the step's own predecessor does not build: 62 or 63, and bisect says so
    res = search(N, FakeCounts(bytecodes_with({})), FakeStages(costs, fails={62}), threshold=THRESHOLD)
    assert res["result"] == "undecided" and res["span"] == (61, 63) and "do not build" in res["reason"]


def test_no_change_between_good_and_bad():
    res = search(N, FakeCounts(bytecodes_with({})), FakeStages(costs_with({}), noise=0.02), threshold=THRESHOLD)
    assert res["result"] == "no-change"


# ---------------------------------------------------------------- the counts pass's steps and the summary

def _loops(n):
    def launch(*args):
        for _ in range(n):
            pass
    return launch


def _entry(launch, arg_counts=(0, 2)):
    from launchbench.workloads import counts

    return {"counts": {str(n): counts.count(launch, list(range(n)), launches=4, warmup=1) for n in arg_counts}}


def test_counts_steps_are_exact_and_unusable_counts_are_named():
    from launchbench.engine import commitcounts

    a, a2, b = _entry(_loops(3)), _entry(_loops(3)), _entry(_loops(5))
    assert commitcounts.key(a, [0, 2]) == commitcounts.key(a2, [0, 2]) != commitcounts.key(b, [0, 2])
    same = commitcounts.step(a, a2, [0, 2])
    assert same["moved"] is False and all(v == 0 for v in same["per_nargs"]["2"]["per_launch"].values())
    moved = commitcounts.step(a, b, [0, 2])
    assert moved["moved"] and moved["per_nargs"]["0"]["per_launch"]["bytecodes"] > 0
    assert moved["per_nargs"]["0"]["functions"][0]["function"].endswith("launch")
    varying = {"counts": {k: dict(v, steady=False) for k, v in b["counts"].items()}}
    assert "vary from launch to launch at 0, 2 args" in commitcounts.unusable(varying)
    assert commitcounts.key(varying, [0, 2]) is None and commitcounts.key({"error": "x"}, [0]) is None
    assert "error" in commitcounts.step(a, varying, [0, 2])
    recs = [{"sha": s * 40, "measured": True, "variant": "g" + s} for s in "xyz"]
    steps = commitcounts.steps(recs, {"gx": a, "gy": a2, "gz": b}, [0, 2])
    assert [(s["commit"][0], s["moved"]) for s in steps] == [("y", False), ("z", True)]


def test_bisect_summary_shows_counts_steps_beside_their_us_and_undecided():
    from launchbench.engine import commitcounts
    from launchbench.output.history import counts_cell, render_bisect

    a, b = _entry(_loops(3)), _entry(_loops(5))
    cstep = commitcounts.step(a, b, [0, 2])
    assert counts_cell(cstep).startswith("+") and counts_cell(commitcounts.step(a, a, [0, 2])) == "="
    seg = {"mean_us": 0.31, "ci_us": [0.1, 0.5], "rounds": 20, "state": "open"}
    doc = {"stages": [{"kind": "counts", "points": ["a" * 40, "d" * 40], "seconds": 3.0},
                      {"kind": "timing", "points": ["a" * 40, "b" * 40, "c" * 40, "d" * 40], "rounds": 48,
                       "timing": {"wall_s": 50.0},
                       "decision": {"action": "undecided", "reason": "no segment's step was established",
                                    "segments": [{**seg, "previous": "b" * 40, "commit": "c" * 40}]}}],
           "counts_note": "counts move at 1 place(s)", "result": "undecided between gbbbbbbbb and gcccccccc: x",
           "counts": {"steps": [{"commit": "c" * 40, "previous": "b" * 40, "subject": "more loops", **cstep,
                                 "timing": {"pooled": seg}}]},
           "culprit": None, "gpu_seconds": 53.0, "count_seconds": 3.0}
    text = render_bisect(doc)
    assert "undecided between gbbbbbbbb and gcccccccc" in text and "no culprit" not in text
    assert "gcccccccc" in text.split("counts steps")[1] and "+0.31 [+0.10, +0.50] us pooled, open" in text
    assert "launch +" in text and "counting 3 s" in text


# ---------------------------------------------------------------- hints: commits whose compiled sources changed

def test_a_hinted_c_level_step_is_confirmed_in_one_timing_stage():
    costs = costs_with({63: 0.3})
    measure, count = FakeStages(costs, noise=0.45, cap=200, seed=3), FakeCounts(bytecodes_with({}))
    res = search(N, count, measure, threshold=THRESHOLD, hints=(20, 63))
    assert measure.calls[0] == [0, 19, 20, 62, 63, 99]
    assert res["result"] == "found" and res["culprit"] == 63 and res["hinted"] is True and res["visible"] is False
    assert len(measure.calls) == 1


def test_hints_without_the_step_only_cost_a_stage_and_the_step_is_still_found():
    """Hints choose where to look first; a step elsewhere (a dependency, a same-count Python change)
    is searched for as without them."""
    costs = costs_with({63: 0.6})
    measure = FakeStages(costs, noise=0.1)
    res = search(N, FakeCounts(bytecodes_with({})), measure, threshold=THRESHOLD, hints=(20, 81))
    assert measure.calls[0] == [0, 19, 20, 80, 81, 99]
    assert res["result"] == "found" and res["culprit"] == 63 and res["hinted"] is False
    assert res["hints"] == [20, 81]


# what each seed's search says (exact: a change to the rule that moves any of them fails here)
MANY_FLAT = [58, (0, 70), 58, 58, 58, 58, (44, 69), 58, 58, 58]
FLAT_HINTS = (5, 11, 17, 24, 30, 38, 45, 51, 70, 77, 84, 92)


@pytest.mark.parametrize("seed", range(10))
def test_many_flat_segments_in_one_stage_do_not_lead_to_a_wrong_commit(seed):
    """Twelve hinted commits that change nothing, one that holds +0.3 us, noise 0.45 us per round:
    twenty-five segments in one stage are judged family-wise, so a flat one is not followed."""
    costs = costs_with({58: 0.3})
    measure = FakeStages(costs, noise=0.45, cap=120, seed=seed)
    res = search(N, FakeCounts(bytecodes_with({})), measure, threshold=THRESHOLD, hints=FLAT_HINTS + (58,))
    assert _outcome(res) == MANY_FLAT[seed]
    if res["result"] == "undecided":
        a, b = res["span"]
        assert a < 58 <= b


def _planted(seed: int, high: float = 1.0):
    """A range as lab/recipes/plant_range.py makes them: ten steps of 0.15-*high* us at random positions,
    five Python-level (counts move) and five C-level (a hint each)."""
    rng = random.Random(seed)
    at = sorted(rng.sample(range(1, N), 10))
    kinds = ["python"] * 5 + ["c"] * 5
    rng.shuffle(kinds)
    steps = {i: round(rng.uniform(0.15, high), 2) for i in at}
    prints = bytecodes_with({i: 20 for i, k in zip(at, kinds) if k == "python"})
    hints = tuple(i for i, k in zip(at, kinds) if k == "c")
    return steps, prints, hints


# Per seed, what the search names with the hints and without them: a culprit's index or the
# undecided span. Exact, for these seeds and this FakeStages: "always undecided over the whole range",
# judging each segment at the stage's level instead of family-wise, or reading a faster range as a
# slower one each move at least one of them (tests/mutations.py checks that they do).
PLANTED = {
    +1: [(50, 50), (18, 98), (12, 33), (75, 81), (12, 12), (84, 84), (98, 1), (10, 47), (17, 17), (48, 79),
         (2, 36), (58, 25)],
    -1: [(63, 62), (9, 98), (12, 33), (75, 81), (12, 12), (95, 84), (76, 1), (10, 47), (17, 6), (60, 18),
         (2, 27), (58, 66)],
}


@pytest.mark.parametrize("sign", [+1, -1], ids=["slower", "faster"])
@pytest.mark.parametrize("seed", range(12))
def test_planted_ranges_name_a_planted_step_or_say_undecided(seed, sign):
    """The planted range as lab/recipes/plant_range.py makes it (every step slower), and its mirror (every
    step faster: the range's direction is -1)."""
    steps, prints, hints = _planted(seed)
    steps = {i: sign * cost for i, cost in steps.items()}
    measure = FakeStages(costs_with(steps), noise=0.45, cap=48, seed=seed)
    got = []
    for use_hints in (hints, ()):
        res = search(N, FakeCounts(prints), measure, threshold=THRESHOLD, hints=use_hints)
        assert res["result"] in ("found", "undecided"), res.get("reason")
        if res["result"] == "found":
            assert res["culprit"] in steps
        else:
            a, b = res["span"]
            assert any(a < i <= b for i in steps)
        got.append(_outcome(res))
    assert tuple(got) == PLANTED[sign][seed]


def test_a_stage_of_many_segments_and_few_rounds_is_unbounded_and_written_as_null():
    """Eleven rounds, twenty segments at 99 % family-wise: the confidence sequence is not bounded
    yet. The report says so; the JSON holds null (an infinity is not JSON: planted range d's
    bisect died writing one)."""
    from launchbench.output.history import render_bisect

    level = bisection.family_confidence(bisection.NAME_CONFIDENCE, 20)
    judged = bisection.judge(_series(0.3, 0.4, 11, 1), THRESHOLD, 1, level)
    assert judged["ci_us"] == [float("-inf"), float("inf")] and judged["state"] == "open"
    seg = {**bisection.bounded(judged), "previous": "a" * 40, "commit": "b" * 40}
    assert seg["ci_us"] == [None, None]
    json.dumps(seg, allow_nan=False)  # what write_json_atomic asks of it
    doc = {"stages": [{"kind": "timing", "points": ["a" * 40, "b" * 40], "rounds": 11, "timing": {"wall_s": 169},
                       "decision": {"action": "undecided", "reason": "r", "segments": [seg]}}],
           "result": "undecided between ga and gb: r", "culprit": None}
    text = render_bisect(doc)
    assert "interval not bounded yet (11 rounds)" in text and "inf" not in text


# ---------------------------------------------------------------- pooling over arg counts

def _by(level_a: dict, step: dict) -> dict:
    """group_rounds-shaped samples: two rounds of one repeat; b = a + step[n] (+/- 0.1 per round)."""
    by = {}
    for n, level in level_a.items():
        by[("a", n)] = {0: [level], 1: [level]}
        by[("b", n)] = {0: [level + step[n] + 0.1], 1: [level + step[n] - 0.1]}
    return by


def test_pooling_reads_a_constant_step_as_itself_with_either_weighting():
    by = _by({0: 15.0, 4: 45.0}, {0: 0.3, 4: 0.3})
    assert bisection.pooled_rounds(by, "a", "b", [0, 4]) == pytest.approx([0.4, 0.2])
    assert bisection.pooled_rounds(by, "a", "b", [0, 4], weighted=False) == pytest.approx([0.4, 0.2])


def test_pooling_weights_each_arg_count_by_one_over_its_level_squared():
    by = _by({0: 10.0, 4: 30.0}, {0: 0.0, 4: 1.0})  # the step only at the noisier, higher level
    w0, w4 = 1 / 10.0 ** 2, 1 / 30.0 ** 2
    weighted = (w0 * 0.1 + w4 * 1.1) / (w0 + w4)
    assert bisection.pooled_rounds(by, "a", "b", [0, 4])[0] == pytest.approx(weighted)
    assert bisection.pooled_rounds(by, "a", "b", [0, 4], weighted=False)[0] == pytest.approx(0.6)
