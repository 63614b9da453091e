"""Which commits of a range asv should time, as pure functions: ``asv-plan``'s choice.

asv times every commit it is given, at minutes a commit for the timing rows; exact counts
(``commitcounts``) cost seconds a commit and see every Python-level change, and the commits
whose compiled sources changed (``builds.compiled_changes``) are where a change counts cannot
see can be. So the timing rows go to: each counts change point and the commit before it, each
compiled-source change and the commit before it, both ends, and, where nothing points, an even
sample (at least one timed commit in every ``every`` commits), so that a step neither signal
sees still lies between two timed commits at most ``every`` apart. A commit whose counts are
unusable (no build, counts that vary launch to launch) is timed too: nothing can be said of it
otherwise.

Indices are positions in the range's commit list (``[A] + A..B`` along first parents, oldest
first); the reasons are tuples the command turns into one line each (``output/asvplan``).
"""
from __future__ import annotations

import math
from itertools import pairwise

#: Reason kinds, in the order a commit's reasons are listed.
START, END = "start", "end"
COUNTS_STEP, BEFORE_COUNTS_STEP = "counts-step", "before-counts-step"
COMPILED, BEFORE_COMPILED = "compiled", "before-compiled"
UNUSABLE = "unusable"
SAMPLE = "sample"
ORDER = (START, COUNTS_STEP, BEFORE_COUNTS_STEP, COMPILED, BEFORE_COMPILED, UNUSABLE, SAMPLE, END)

#: --every's default: at most this many commits from one timed commit to the next where nothing points.
DEFAULT_EVERY = 12


def change_points(keys: list) -> list[tuple[int, int]]:
    """``(previous, i)`` for every usable commit *i* whose counts key differs from that of the last
    usable commit before it (*previous*); ``None`` keys (unusable counts) are stepped over."""
    out, last = [], None
    for i, key in enumerate(keys):
        if key is None:
            continue
        if last is not None and key != keys[last]:
            out.append((last, i))
        last = i
    return out


def even_sample(chosen: set, every: int) -> dict[int, tuple]:
    """Points that leave no gap wider than *every* commits between timed ones: each wider gap
    ``(a, b)`` of *chosen* split into equal parts. A point may share its predecessor's code (a
    docs-only commit): asv then times that code, which is what the sample is for."""
    if every < 1:
        raise ValueError("every must be at least 1")
    picked: dict[int, tuple] = {}
    points = sorted(chosen)
    for a, b in pairwise(points):
        parts = math.ceil((b - a) / every)
        for k in range(1, parts):
            picked[a + round(k * (b - a) / parts)] = (SAMPLE, a, b)
    return picked


def choose(keys: list, compiled: list, every: int = DEFAULT_EVERY) -> dict[int, list]:
    """The commits to time: index -> its reasons (tuples, ``ORDER`` first), in range order.

    *keys*: one counts key per commit (``commitcounts.key``; ``None``: unusable); a commit that
    shares its predecessor's code shares its key. *compiled*: indices whose compiled sources differ
    from the previous commit's. *every*: see ``even_sample``."""
    n = len(keys)
    if n == 0:
        raise ValueError("no commits")
    why: dict[int, list] = {}

    def add(i: int, reason: tuple) -> None:
        if 0 <= i < n and reason not in why.setdefault(i, []):
            why[i].append(reason)

    add(0, (START,))
    add(n - 1, (END,))
    for prev, i in change_points(keys):
        add(i, (COUNTS_STEP, prev))
        add(i - 1, (BEFORE_COUNTS_STEP, i))
    for i in compiled:
        if not 1 <= i < n:
            raise ValueError(f"compiled change at {i}: outside 1..{n - 1}")
        add(i, (COMPILED,))
        add(i - 1, (BEFORE_COMPILED, i))
    for i, key in enumerate(keys):
        if key is None:
            add(i, (UNUSABLE,))
    for i, reason in even_sample(set(why), every).items():
        add(i, reason)
    rank = {kind: r for r, kind in enumerate(ORDER)}
    return {i: sorted(why[i], key=lambda r: rank[r[0]]) for i in sorted(why)}
