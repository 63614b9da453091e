"""Interleaved rounds over worker processes, keeping every sample and every finished round.

A round has one fresh worker per variant. Its samples are short (a few ms)
and interleaved one at a time, ``for repeat: for nargs: for variant`` with the
variant order rotated every repeat, so the samples of one repeat slot are
adjacent in time and share the machine's state, and no variant is always
first. The statistics pair the samples of each repeat slot (stats.py).

Why many rounds: each process has its own offset (memory layout, hash
seeds, allocator state), a few percent of a launch, so processes, not
samples, are the independent units, and the precision of a delta grows
with the number of rounds. Setting a worker up (import, compile) takes
seconds, measuring it about one, so rounds are set up ahead (``prefetch``)
on the CPUs that do not measure, while the current round measures. Just
before its round, each worker is pinned to the measuring CPU(s) (default:
the highest-numbered CPU this process may use) and warmed up there; only
one worker measures at a time, and a fixed CPU spares the measurement the
scheduler's migrations.

After each finished round ``on_round`` is called (compare writes the JSON
then), so a Ctrl-C or a dying worker loses at most the unfinished round,
whose samples are still kept apart as ``partial_samples``.
"""
from __future__ import annotations

import collections
import os
import sys
import time

from ..base import atomic, signals
from ..base.errors import UserError
from . import zygote as zygote_mod
from .pinning import PREFETCH_LIMIT, Spinners, default_prefetch, parse_affinity, setup_cpus
from .progressbar import Progress
from .runplan import Outcome, Plan, key_id, raise_setup_failure
from .workerproc import Halted, Worker, WorkerError, import_mismatch, worker_environment


def rotated(items: list, k: int) -> list:
    k %= len(items)
    return items[k:] + items[:k]


class Ahead:
    """Items 0..n-1, each made by *make(i)* up to *ahead* items before it is taken, so that
    setting the next ones up overlaps measuring the current one; *discard* ends any made but
    never taken (``close``)."""

    def __init__(self, n: int, ahead: int, make, discard, limit: int = PREFETCH_LIMIT):
        self.n, self.make, self.discard, self.limit = n, make, discard, limit
        self.ahead = ahead
        self.pending: collections.deque = collections.deque()
        self.made = 0

    @property
    def ahead(self) -> int:
        return self._ahead

    @ahead.setter
    def ahead(self, value: int) -> None:
        """Bounded by construction: never more than *limit* items made and not yet taken."""
        self._ahead = max(0, min(int(value), self.limit))

    def fill(self, index: int) -> None:
        """Make the items up to *index* + ahead (what ``take(index)`` makes before it takes)."""
        while self.made < self.n and self.made <= index + self.ahead:
            self.pending.append(self.make(self.made))
            self.made += 1

    def take(self, index: int):
        self.fill(index)
        return self.pending.popleft()

    def close(self) -> None:
        while self.pending:
            self.discard(self.pending.popleft())


class Zygotes:
    """Per cluster of ``fork_rounds`` rounds, one zygote per variant (engine/zygote.py); the next
    cluster's are started when a cluster's first worker is forked, so their imports overlap
    the rounds. A cluster's zygotes end once its last round's workers have exited."""

    def __init__(self, plan: Plan, deadline: float | None):
        self.plan = plan
        self.deadline = deadline
        self.by_cluster: dict = {}  # cluster -> {variant: Zygote}
        self.started: list = []     # every zygote, for the record

    def _start(self, cluster: int) -> None:
        plan = self.plan
        if cluster in self.by_cluster or cluster * plan.fork_rounds >= plan.rounds:
            return
        made = {}
        try:
            for name, python, _mech in plan.variants:
                log = os.path.join(plan.log_dir, f"{plan.log_prefix}zygote{cluster}-{name}.log")
                env = worker_environment(plan.overlay, plan.simulator, plan.modules.get(name), plan.worker_env)
                z = zygote_mod.Zygote(name, python, env, log, cpus=plan.setup_cpus)
                z.deadline, z.cancel = self.deadline, plan.cancel
                made[name] = z
        except BaseException:
            for z in made.values():
                z.kill()
            raise
        self.by_cluster[cluster] = made
        self.started.extend(made.values())

    def get(self, rnd: int, name: str):
        cluster = self.plan.cluster(rnd)
        self._start(cluster)
        self._start(cluster + 1)
        return self.by_cluster[cluster][name]

    def done_through(self, rnd: int) -> None:
        """Round *rnd*'s workers have exited: end the clusters that ended with it or before."""
        for cluster in [c for c in self.by_cluster if (c + 1) * self.plan.fork_rounds - 1 <= rnd]:
            for z in self.by_cluster.pop(cluster).values():
                z.close()

    def kill(self) -> None:
        for made in self.by_cluster.values():
            for z in made.values():
                z.kill()
        self.by_cluster = {}

    def record(self) -> list:
        """Each zygote's warm-up (import and compile seconds, or what failed), for the JSON."""
        return [{"variant": z.variant, "pid": z.proc.pid, "forks": z.forks, **(z.ready or {}).get("warm", {})}
                for z in self.started]


def _spawn_round(plan: Plan, rnd: int, zygotes: Zygotes | None = None) -> dict:
    """Start one worker per variant and ask each to set up; does not wait. Start order is
    rotated per round, so no variant is always the first to create its CUDA context."""
    workers = {}
    try:
        for name, python, mech in rotated(list(plan.variants), rnd):
            log = os.path.join(plan.log_dir, f"{plan.log_prefix}{rnd}-{name}.log")
            lane_env = {"extra_env": plan.worker_env} if plan.worker_env else {}  # only lanes set one
            fork = {"zygote": zygotes.get(rnd, name)} if zygotes is not None else {}
            worker = Worker(name, python, plan.overlay, log, plan.simulator, cpus=plan.setup_cpus,
                            module=plan.modules.get(name), **lane_env, **fork)
            workers[name] = worker
            warm = {"setup_warmup": plan.warmup - plan.pinned_warmup} if plan.pinned_warmup is not None else {}
            worker.send({"cmd": "setup", "arg_counts": plan.arg_counts, "mechanism": mech,
                         "simulator": plan.simulator, **warm, **plan.setup})
    except BaseException:
        _kill(workers.values())
        raise
    return workers


def _ready(plan: Plan, rnd: int, workers: dict) -> dict:
    """Wait for a round's set-up, check what each imported, then pin and warm up its workers one
    at a time."""
    infos = {name: workers[name].receive()["info"] for name, _p, _m in plan.variants}
    for name, _p, _m in plan.variants:
        why = import_mismatch(infos[name], plan.expect.get(name))
        if why:
            raise WorkerError(name, "mismatch", f"{why}; the run measures only the package built for it "
                                                f"(rebuild: remove the environment; worker log: {workers[name].log_path})")
    warmup = plan.warmup if plan.pinned_warmup is None else max(1, plan.pinned_warmup)
    for name in rotated([v[0] for v in plan.variants], rnd):
        infos[name]["affinity"] = workers[name].request(
            {"cmd": "prepare", "affinity": plan.affinity, "warmup": warmup})["affinity"]
    return infos


def _setup_spans(workers: dict, infos: dict) -> list:
    """(spawned, set up) monotonic times of a round's workers, where the worker reported them."""
    return [(w.spawned, infos[name]["setup_done"]) for name, w in workers.items()
            if isinstance(infos.get(name, {}).get("setup_done"), (int, float))]


def setup_profile(spans: list, infos: dict) -> dict:
    """A round's workers' mean set-up wall (spawn to ready) and its phases, where reported."""
    out: dict = {}
    if spans:
        out["worker_setup_s"] = round(sum(b - a for a, b in spans) / len(spans), 4)
    phases = [i["setup_phases_s"] for i in infos.values() if isinstance(i.get("setup_phases_s"), dict)]
    for name in (phases[0] if phases else {}):
        values = [p[name] for p in phases if isinstance(p.get(name), (int, float))]
        if values:
            out[f"worker_{name}_s"] = round(sum(values) / len(values), 4)
    return out


def setup_overlap(window: tuple, spans: list) -> float:
    """Mean number of workers setting up during *window* (start, end): how busy the set-up CPUs
    were while a round measured (the machine's state may depend on it)."""
    start, end = window
    if end <= start:
        return 0.0
    busy = sum(max(0.0, min(end, b) - max(start, a)) for a, b in spans)
    return busy / (end - start)


def _kill(workers) -> None:
    for w in workers:
        w.kill()


def _calibrate(plan: Plan, workers: dict, out: Outcome, progress: Progress) -> None:
    """Loops per sample so one sample lasts about ``sample_target_s``, from the reference."""
    ref = workers[plan.reference]
    for key in plan.sample_keys():
        out.loops[key_id(key)] = ref.request({"cmd": "calibrate", **key,
                                              "target_s": plan.sample_target_s})["loops"]
    progress.line("launchbench: calibrated loops per sample: " +
                  ", ".join(f"{k}: {v}" for k, v in out.loops.items()))


def interleaved(plan: Plan, rnd: int, workers: dict, out: Outcome, progress: Progress) -> None:
    """The default measure: for repeat, for key, for variant (order rotated every repeat)."""
    names = [v[0] for v in plan.variants]
    keys = plan.sample_keys()
    for rep in range(plan.repeats):
        order = rotated(names, rnd + rep)
        for key in keys:
            loops = out.loops[key_id(key)]
            for name in order:
                us = workers[name].request({"cmd": "sample", **key, "loops": loops})["us"]
                out.partial_samples.append({"variant": name, **key, "round": rnd,
                                            "repeat": rep, "worker": workers[name].pid, "us": us})
                progress.tick(f"round {rnd + 1}/{plan.rounds} {name} {key_id(key)}")
    if plan.peers:
        ref = workers[plan.reference]
        for nargs in plan.arg_counts:
            got = ref.request({"cmd": "peers", "nargs": nargs, "loops": out.loops[nargs]})["peers"]
            for peer, us in sorted(got.items()):
                out.peer_samples.append({"peer": peer, "nargs": nargs, "round": rnd, "us": us})


def count_round(plan: Plan, rnd: int, workers: dict, out: Outcome) -> None:
    """Each worker of a measured round counts its launch's bytecodes and calls (after its samples:
    counting slows the launches it counts), one record per variant and arg count."""
    for name in [v[0] for v in plan.variants]:
        worker = workers[name]
        for nargs in plan.arg_counts:
            got = worker.request({"cmd": "counts", "nargs": nargs, "launches": plan.count_launches})["counts"]
            out.counts.append({"variant": name, "round": rnd, "worker": worker.pid, "nargs": nargs, "counts": got})


def _close_all(workers) -> None:
    for w in workers:
        w.retire()  # all exit at once, on the set-up CPUs
    for w in workers:
        w.close()


def run(plan: Plan, progress: Progress, on_round=None) -> Outcome:
    """Run the rounds; returns what was measured even when interrupted.

    The one round loop of launchbench: compare, history, bisect, breakdown and mechanisms all
    come through here with their own Plan. A finished round's workers exit while the next
    round's are pinned and warmed up (nothing is timed then); sampling starts only once they
    are gone, since a CUDA context torn down during a sample slows it."""
    out = Outcome(loops=dict(plan.loops or {}))
    measure = plan.measure or interleaved
    # Calibrate alone: while other rounds set up, their CUDA contexts and warm-up launches share
    # the GPU and every timing slows (samples calibrated during set-up came out far from their
    # target length: lab/README.md). The rounds ahead start after it.
    calibrating = not out.loops and plan.measure is None
    started = time.monotonic()
    hard = plan.hard_deadline(started)
    zygotes = Zygotes(plan, hard) if plan.spawn == "fork" else None
    rounds = Ahead(plan.rounds, 0 if calibrating else plan.prefetch, lambda rnd: _spawn_round(plan, rnd, zygotes),
                   lambda ahead: _kill(ahead.values()))
    workers: dict = {}
    leaving: dict = {}  # the previous round's workers, told to exit
    spans: list = []    # every taken worker's set-up span, for setup_overlap
    windows: list = []  # each finished round's sampling window
    per_round = out.timing.setdefault("rounds", [])
    retired_at = started  # when the leaving workers were told to exit
    spinners = None
    rnd = 0
    try:
        spinners = Spinners(plan.spin_cpus)
        for rnd in range(plan.rounds):
            if plan.max_time is not None and rnd > 0 and time.monotonic() - started >= plan.max_time:
                out.stopped = f"time cap: {plan.max_time:g} s of measurement reached after {rnd} rounds"
                break
            workers = rounds.take(rnd)
            for w in workers.values():
                w.deadline, w.cancel = hard, plan.cancel
            t0 = time.monotonic()
            infos = _ready(plan, rnd, workers)
            t1 = time.monotonic()
            _close_all(leaving.values())
            t2 = time.monotonic()
            if leaving:  # told to exit at the end of their round: how long exiting took them
                per_round[-1]["exit_s"] = round(t2 - retired_at, 4)
                if zygotes is not None:
                    zygotes.done_through(rnd - 1)
            leaving = {}
            round_spans = _setup_spans(workers, infos)
            spans.extend(round_spans)
            out.round_infos = infos
            if rnd == 0:
                out.infos = infos
                if calibrating:
                    _calibrate(plan, workers, out, progress)
                    rounds.ahead = plan.prefetch
                    rounds.fill(0)
            t_measure = time.monotonic()
            measure(plan, rnd, workers, out, progress)
            t3 = time.monotonic()
            if rnd < plan.count_rounds:
                count_round(plan, rnd, workers, out)
            for w in workers.values():
                w.retire()
            retired_at = t3
            leaving, workers = workers, {}
            windows.append((t_measure, t3))
            record = {"round": rnd, "setup_wait_s": round(t1 - t0, 4), "teardown_s": round(t2 - t1, 4),
                      "measure_s": round(t3 - t2, 4)}
            record.update(setup_profile(round_spans, infos))
            per_round.append(record)
            out.timing["setup_wait_s"] += t1 - t0
            out.timing["teardown_s"] += t2 - t1
            out.timing["measure_s"] += t3 - t2
            cluster = plan.cluster(rnd)
            if cluster is not None:  # forks of one zygote: one unit of the statistics (analysis.py)
                for sample in out.partial_samples:
                    sample["cluster"] = cluster
            out.samples.extend(out.partial_samples)
            out.partial_samples = []
            out.rounds_completed = rnd + 1
            out.timing["wall_s"] = time.monotonic() - started
            progress.line(f"launchbench: round {rnd + 1}/{plan.rounds} done "
                          f"({time.monotonic() - progress.start:.0f} s)")
            if on_round:
                try:
                    on_round(out)
                except atomic.OutputError as exc:  # a full disk: stop measuring, keep what is kept
                    out.interrupted, out.reason, out.write_error = True, write_failure(exc), exc
                    break
            if plan.stop is not None and rnd + 1 < plan.rounds:
                reason = plan.stop(out)
                if reason:
                    out.stopped, out.stopped_by_rule = reason, True
                    break
    except KeyboardInterrupt as exc:
        out.interrupted, out.reason = True, signals.reason(exc)
    except Halted as exc:
        if exc.why == "cancel":
            out.interrupted, out.reason = True, "cancelled"
        else:
            out.stopped = (f"time cap: {plan.max_time:g} s of measurement reached; round {rnd + 1} was still "
                           f"running {hard - started - plan.max_time:g} s later and was ended (its samples "
                           "are kept apart as partial)")
    except WorkerError as exc:
        out.interrupted, out.reason, out.error = True, f"{exc.variant}: {exc}", exc
    finally:
        # every worker ends here, whatever ended the run: the current round's, the rounds set up
        # ahead and the last finished round's (lifeline.reap and the workers' death signal back it)
        try:
            if spinners is not None:
                spinners.stop()
        finally:
            try:
                _kill(workers.values())
            finally:
                try:
                    rounds.close()
                finally:
                    t_last = time.monotonic()
                    try:
                        _close_all(leaving.values())
                    finally:
                        if zygotes is not None:
                            out.timing["zygotes"] = zygotes.record()
                            zygotes.kill()
                    out.timing["teardown_s"] += time.monotonic() - t_last
    for record, window in zip(per_round, windows):
        record["setup_overlap"] = round(setup_overlap(window, spans), 3)
    out.timing["wall_s"] = time.monotonic() - started
    out.peer_samples = [s for s in out.peer_samples if s["round"] < out.rounds_completed]
    progress.finish()
    return out


def write_failure(exc: OSError) -> str:
    """The interrupt reason of a run whose results the file system refused mid-run."""
    why = (exc.strerror or os.strerror(exc.errno)) if exc.errno else str(exc)
    where = f" {exc.filename}" if getattr(exc, "filename", None) else " an output"
    return f"output refused: cannot write{where}: {why}"


def rounds_here(workload: dict, arg_counts: list, request: dict, rounds: int, affinity_text: str | None,
                label: str, make_overlay) -> Outcome:
    """Rounds of fresh workers of this interpreter for a single-environment workload (``peers``,
    ``breakdown`` without ``--variant``): each worker sets *workload* up on the set-up CPUs, is
    pinned, then answers one *request* (plus ``rotation``: the round number) whose reply is
    that round's unit (``Outcome.units``). Raises the one-line error when no round completed.
    *make_overlay*: folder -> the workers' PYTHONPATH overlay in it (the command passes
    ``environments.envs.make_overlay``: the engine builds no environment)."""
    import tempfile

    affinity = parse_affinity(affinity_text)
    log_dir = tempfile.mkdtemp(prefix=f"launchbench-{label}-")
    overlay = make_overlay(os.path.join(log_dir, "overlay"))

    def measure(plan, rnd, workers, out, progress):
        out.units.append(workers[label].request({**request, "rotation": rnd}))
        progress.tick(f"round {rnd + 1}/{plan.rounds}")

    plan = Plan(variants=[(label, sys.executable, None)], reference=label, arg_counts=list(arg_counts),
                loops={n: 1 for n in arg_counts}, repeats=1, rounds=rounds, warmup=100, sample_target_s=0.0,
                simulator=False, affinity=affinity, peers=False, overlay=overlay, log_dir=log_dir,
                prefetch=default_prefetch(1, affinity), setup_cpus=setup_cpus(affinity), setup=dict(workload),
                measure=measure, log_prefix=f"{label}-r")
    out = run(plan, Progress(rounds, enabled=False))
    raise_setup_failure(out)
    if not out.units:
        raise UserError(f"no round completed ({out.reason or 'interrupted'}); worker logs: {log_dir}")
    return out
