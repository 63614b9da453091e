"""A counts pass: fresh worker processes that only count, no timing (``launchbench counts``).

Why its own pass: counts are exact, so they need no calibration, no timed warm-up and no
rounds beyond the one or two processes that show whether a count is the same in every
process. Each process sets its kernels up (which compiles and launches them a few times), then
answers one counts request per arg count (the counts' own warm-up launches, then each counted
launch on its own: ``workloads.counts``). The rounds are ``runner.run``'s, with a ``measure``
that times nothing, so a worker's set-up, its failures and Ctrl-C behave as in every command.
"""
from __future__ import annotations

from . import progressbar, runner, runplan

#: fresh processes per variant: two show whether the counts agree across processes
DEFAULT_PROCESSES = 2
MAX_PROCESSES = 10


def no_timing(plan, rnd, workers, out, progress) -> None:
    """The round's measure: nothing is timed (``runner.count_round`` then counts)."""
    for name in workers:
        progress.tick(f"process {rnd + 1}/{plan.rounds} {name}")


def plan(variants: list, reference: str, arg_counts: list, *, processes: int, launches: int, simulator: bool,
         overlay: str, log_dir: str, setup: dict | None = None, modules: dict | None = None,
         expect: dict | None = None) -> runplan.Plan:
    """The runner's Plan of a counts pass: *processes* rounds of one worker per variant
    ((name, python, mechanism) as compare's), all set up at once, none pinned, none timed."""
    return runplan.Plan(
        variants=list(variants), reference=reference, arg_counts=list(arg_counts),
        loops={n: 1 for n in arg_counts},  # no calibration: nothing is timed
        repeats=1, rounds=processes, warmup=0, sample_target_s=0.0, simulator=simulator, affinity=None,
        peers=False, overlay=overlay, log_dir=log_dir, prefetch=max(0, processes - 1), setup=dict(setup or {}),
        measure=no_timing, modules=dict(modules or {}), count_rounds=processes, count_launches=launches,
        log_prefix="counts-p", expect=dict(expect or {}),
    )


def run(count_plan: runplan.Plan, progress: progressbar.Progress, on_round=None) -> runplan.Outcome:
    """Run the pass; the Outcome's ``counts`` holds one record per process, variant and arg count."""
    return runner.run(count_plan, progress, on_round=on_round)
