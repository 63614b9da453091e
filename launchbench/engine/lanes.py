"""Lanes: the rounds of one run spread over the GPUs of one host.

Why: on one GPU a run's rounds are bounded by worker set-up and exit (seconds per round, see
runner.py), and most of a delta's variance is between rounds, which only more rounds reduce
(docs/methodology.md). Two runs side by side on one GPU and one CPU pool each got about half
the rounds, with wider intervals: the GPU and the CPUs are shared. A lane therefore owns one
GPU (its workers see only it, through ``CUDA_VISIBLE_DEVICES``) and its own share of the CPUs
(whole cores, so no two lanes measure on SMT siblings): it measures on the highest CPU of its
share and sets up on the rest.

Each lane runs the ordinary engine (``runner.run``) in its own thread with its own rounds; a
round's paired samples stay inside one lane (its workers, its GPU, its measuring CPU), so
pairing is untouched. The lanes' finished rounds pool into one set of rounds (lane ``k``'s
round ``r`` becomes round ``r * n + k``), so every interval is over all lanes' rounds, and a
stopping rule sees the pooled rounds. Pooling assumes the lanes measure the same deltas:
``lane_check`` tests it per delta (Welch's t test of each lane's per-round deltas against
the other lanes', Holm over every lane and delta of the run) and every command reports it beside the per-lane deltas.

With one GPU named (``--gpus 0``) it is the same code path with one lane, whose CPUs and
``--affinity`` are exactly those of a run without lanes. ``set_up`` turns a command's ``--gpus``,
``--affinity`` and ``--cuda-connections`` into the lanes (or none), the measuring CPUs and the
workers' environment, and its ``run`` runs a plan in them or in ``runner.run``: compare and
history/bisect/pr (``history.Session``) both start there.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import statistics
import threading

from ..base import atomic, device, signals
from ..base.errors import UserError
from ..base.options import parse_ints
from . import pinning, progressbar, runner, runplan, stats
from .analysis import analyze, round_series

PROC_GPUS = "/proc/driver/nvidia/gpus"  # one folder per GPU (its PCI bus id), no CUDA needed
CONNECTIONS_ENV = "CUDA_DEVICE_MAX_CONNECTIONS"


def cuda_connections(setting, n_lanes: int, environ=None) -> tuple[dict, dict]:
    """Workers' environment for ``--cuda-connections`` *setting* ("auto" or 1-32) with *n_lanes*
    lanes, and what the JSON records of it.

    Why: the driver creates CUDA contexts largely one at a time across the host, whatever the
    number of GPUs (docs/scaling.md), and every round needs a fresh context per variant, so several
    lanes wait on each other there. A context of one connection is made faster, and a worker
    launches on one stream,
    which needs one. "auto" keeps a single lane, and a value the environment sets, as before, so
    one-GPU results stay comparable with earlier ones."""
    environ = os.environ if environ is None else environ
    if setting != "auto":
        return {CONNECTIONS_ENV: str(int(setting))}, {"value": int(setting), "source": "--cuda-connections"}
    if environ.get(CONNECTIONS_ENV):  # what --cuda-connections sets: checked as the option is
        text = environ[CONNECTIONS_ENV].strip()
        if not (re.fullmatch(r"[0-9]{1,3}", text) and 1 <= int(text) <= 32):
            raise UserError(f"{CONNECTIONS_ENV}={environ[CONNECTIONS_ENV]!r} in the environment is not a whole number "
                            f"from 1 to 32 (what --cuda-connections takes); fix or unset it, or give --cuda-connections N")
        return {}, {"value": int(text), "source": f"the environment's {CONNECTIONS_ENV}"}
    if n_lanes > 1:
        return {CONNECTIONS_ENV: "1"}, {"value": 1, "source": "auto: several lanes"}
    return {}, {"value": None, "source": "the driver's default"}


@dataclasses.dataclass
class Lane:
    """One GPU and its share of the CPUs."""

    index: int
    gpu: str            # the CUDA_VISIBLE_DEVICES entry its workers get
    cpus: list          # its share of this process's CPUs
    affinity: list | None    # measuring CPU(s); None: no pinning
    setup_cpus: list | None  # where its workers set up

    def env(self) -> dict:
        return {"CUDA_VISIBLE_DEVICES": self.gpu}

    def record(self) -> dict:
        return {"lane": self.index, "gpu": self.gpu, "cpus": self.cpus, "affinity": self.affinity,
                "setup_cpus": self.setup_cpus}


# ---------------------------------------------------------------- planning

def visible_gpus(environ=None, proc_dir: str = PROC_GPUS) -> list | None:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries: the parent's own
    CUDA_VISIBLE_DEVICES if set, else one per folder of the driver's /proc listing; None where
    neither says (no NVIDIA driver here)."""
    environ = os.environ if environ is None else environ
    text = environ.get("CUDA_VISIBLE_DEVICES")
    if text is not None:
        return [part.strip() for part in text.split(",") if part.strip()]
    try:
        count = len([d for d in os.listdir(proc_dir) if not d.startswith(".")])
    except OSError:
        return None
    return [str(i) for i in range(count)]


def parse_gpus(text: str | None, visible: list | None) -> list | None:
    """``--gpus``: None -> None (no lanes: the run as it always was); "all" -> every visible
    GPU; "0,1" -> those (indices into the visible GPUs, each a lane). Returns the
    CUDA_VISIBLE_DEVICES entry of each lane."""
    if text is None:
        return None
    twice = sorted({g for g in visible or () if list(visible).count(g) > 1})
    if twice:  # each lane must be its own GPU: CUDA_VISIBLE_DEVICES=0,0 would give two lanes on one
        raise UserError(f"--gpus: CUDA_VISIBLE_DEVICES={','.join(visible)} names {', '.join(twice)} more than once; "
                        "list each GPU once (e.g. CUDA_VISIBLE_DEVICES=0,1)")
    text = str(text).strip().lower()
    if text == "all":
        if visible is None:
            raise UserError("--gpus all: cannot count this host's GPUs (no CUDA_VISIBLE_DEVICES and no "
                            f"{PROC_GPUS}); name them, e.g. --gpus 0,1")
        if not visible:
            raise UserError("--gpus all: no GPU is visible to this process (CUDA_VISIBLE_DEVICES is empty)")
        return list(visible)
    ids = parse_ints(text, "--gpus", example="0,1 (or all)")  # in lane order: no ranges, no sorting
    if len(set(ids)) != len(ids):
        raise UserError(f"--gpus {text}: a GPU named twice; each lane needs its own GPU")
    if visible is not None:
        missing = [i for i in ids if i >= len(visible)]
        if missing:
            raise UserError(f"--gpus {text}: GPU(s) {missing} not visible ({len(visible)} visible: "
                            f"0..{len(visible) - 1}); choose among those or use --gpus all")
        return [visible[i] for i in ids]
    return [str(i) for i in ids]


def core_groups(available, siblings=pinning.smt_siblings) -> list:
    """*available* CPUs grouped by physical core (SMT siblings together), lowest CPU first."""
    available = set(available)
    groups, seen = [], set()
    for cpu in sorted(available):
        if cpu in seen:
            continue
        group = sorted(siblings([cpu]) & available) or [cpu]
        seen.update(group)
        groups.append(group)
    return groups


def split_cpus(available, n: int, siblings=pinning.smt_siblings) -> list:
    """*available* split into *n* shares of whole cores, as equal as the cores allow, in CPU
    order (lane 0 gets the lowest)."""
    groups = core_groups(available, siblings)
    if len(groups) < n:
        raise UserError(f"{n} lanes need at least {n} CPU cores; this process may use "
                        f"{len(groups)} ({sorted(set(available))}); name fewer GPUs with --gpus")
    shares, start = [], 0
    for k in range(n):
        size = len(groups) // n + (1 if k < len(groups) % n else 0)
        shares.append(sorted(c for g in groups[start:start + size] for c in g))
        start += size
    return shares


def plan_lanes(gpus: list, affinity_text: str | None, available=None, siblings=pinning.smt_siblings) -> list:
    """One Lane per GPU. One lane: every CPU, and ``--affinity`` as without lanes. More: each a
    share of whole cores (``split_cpus``), measuring on its highest CPU ('auto') or unpinned
    ('none'), setting up on the rest of its share."""
    if available is None:
        available = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else {0}
    available = sorted(set(available))
    if len(gpus) == 1:
        affinity = pinning.parse_affinity(affinity_text, available)
        return [Lane(0, gpus[0], available, affinity, pinning.setup_cpus(affinity, available, siblings))]
    text = "auto" if affinity_text is None else str(affinity_text).strip().lower()
    if text not in ("auto", "none"):
        raise UserError(f"--affinity {affinity_text} with {len(gpus)} GPUs: use 'auto' (each lane measures "
                        "on the highest CPU of its share) or 'none'")
    lanes = []
    for k, (gpu, share) in enumerate(zip(gpus, split_cpus(available, len(gpus), siblings))):
        affinity = pinning.parse_affinity(text, share)
        lanes.append(Lane(k, gpu, share, affinity, pinning.setup_cpus(affinity, share, siblings)))
    return lanes


def lane_plan(plan: runplan.Plan, lane: Lane, n_lanes: int, siblings=pinning.smt_siblings) -> runplan.Plan:
    """*plan* for one lane: its GPU, CPUs, share of the rounds and logs; with more than one lane,
    no more rounds set up ahead than its share of CPUs can host."""
    rounds = plan.rounds // n_lanes + (1 if lane.index < plan.rounds % n_lanes else 0)
    prefetch = plan.prefetch
    if n_lanes > 1:
        n_var = len(plan.variants)
        prefetch = min(prefetch, pinning.default_prefetch(n_var, lane.affinity, lane.cpus, siblings))
    return dataclasses.replace(
        plan, rounds=max(1, rounds), affinity=lane.affinity, setup_cpus=lane.setup_cpus, prefetch=prefetch,
        worker_env={**plan.worker_env, **lane.env()},
        log_prefix=plan.log_prefix if n_lanes == 1 else f"lane{lane.index}-{plan.log_prefix}")


@dataclasses.dataclass(frozen=True)
class LaneSetup:
    """A run's lanes as its command's options set them up (``set_up``)."""

    lanes: list | None       # one Lane per GPU of --gpus; None without --gpus (no lanes)
    affinity: list | None    # the measuring CPU(s): lane 0's with lanes, --affinity's without
    worker_env: dict         # the workers' CUDA connections setting (cuda_connections)
    connections: dict        # what the document records of it

    def run(self, plan: runplan.Plan, progress: progressbar.Progress, on_round=None) -> runplan.Outcome:
        """*plan* in the lanes (``run`` below), or in ``runner.run`` without lanes."""
        if self.lanes:
            return run(plan, self.lanes, progress, on_round=on_round)
        return runner.run(plan, progress, on_round=on_round)


def set_up(gpus_option, affinity_option, connections_option, simulator: bool) -> LaneSetup:
    """``--gpus``, ``--affinity`` and ``--cuda-connections`` checked and turned into a LaneSetup,
    before any environment is built. *simulator*: lanes without an NVIDIA driver are taken as
    given (``device.check_gpu_lanes``)."""
    visible = visible_gpus()
    device.check_gpu_lanes(gpus_option, visible, simulator)
    gpus = parse_gpus(gpus_option, visible)
    lanes = plan_lanes(gpus, affinity_option) if gpus else None
    worker_env, connections = cuda_connections(connections_option, len(lanes or [None]))
    affinity = lanes[0].affinity if lanes else pinning.parse_affinity(affinity_option)
    return LaneSetup(lanes, affinity, worker_env, connections)


# ---------------------------------------------------------------- pooling

def global_round(rnd: int, lane: int, n_lanes: int) -> int:
    """Lane *lane*'s round *rnd* in the pooled numbering (rounds of all lanes interleaved)."""
    return rnd * n_lanes + lane


def _renumber(records: list, lane: Lane, n_lanes: int) -> list:
    """Rounds (and forked clusters: each lane forks from its own zygotes) in the pooled numbering."""
    def one(r):
        out = {**r, "round": global_round(r["round"], lane.index, n_lanes), "lane": lane.index}
        if r.get("cluster") is not None:
            out["cluster"] = global_round(r["cluster"], lane.index, n_lanes)
        return out
    return [one(r) for r in records]


class Pool:
    """The lanes' finished samples, renumbered once: a lane's ``Outcome.samples`` only grows, so
    each merge renumbers just what arrived since the last (the stopping rule merges after every
    round of every lane; copying every sample each time grew with the run)."""

    def __init__(self, lanes: list):
        self.lanes = lanes
        self.done: list = [[] for _ in lanes]
        self.sources: list = [None] * len(lanes)

    def samples(self, k: int, outcome: runplan.Outcome) -> list:
        if self.sources[k] is not outcome:  # a new outcome object: start this lane over
            self.sources[k], self.done[k] = outcome, []
        new = outcome.samples[len(self.done[k]):]
        self.done[k].extend(_renumber(new, self.lanes[k], len(self.lanes)))
        return self.done[k]


def merge(outcomes: list, lanes: list, pool: Pool | None = None) -> runplan.Outcome:
    """The lanes' outcomes as one: their rounds pooled (renumbered, each record tagged with its
    lane), lane 0's set-up facts and loops, timing summed except the wall (the longest lane's),
    and ``lanes``: one record per lane."""
    n = len(lanes)
    pool = pool or Pool(lanes)
    out = runplan.Outcome()
    first = outcomes[0]
    out.infos, out.round_infos, out.loops = first.infos, first.round_infos, dict(first.loops)
    for k, (lane, o) in enumerate(zip(lanes, outcomes)):
        out.samples.extend(pool.samples(k, o))
        out.partial_samples.extend(_renumber(o.partial_samples, lane, n))
        out.peer_samples.extend(_renumber(o.peer_samples, lane, n))
        out.units.extend(o.units)
        out.counts.extend(_renumber(o.counts, lane, n))
        out.rounds_completed += o.rounds_completed
        for key in ("setup_wait_s", "measure_s", "teardown_s"):
            out.timing[key] += o.timing.get(key, 0.0)
        out.timing["wall_s"] = max(out.timing["wall_s"], o.timing.get("wall_s", 0.0))
        out.timing.setdefault("rounds", []).extend(_renumber(o.timing.get("rounds", []), lane, n))
        if o.timing.get("zygotes"):
            out.timing.setdefault("zygotes", []).extend({**z, "lane": lane.index} for z in o.timing["zygotes"])
        if o.interrupted and not out.interrupted:
            out.interrupted, out.reason, out.error = True, f"lane {lane.index}: {o.reason}", o.error
        out.write_error = out.write_error or o.write_error
        if o.stopped and not out.stopped:
            out.stopped = o.stopped
        out.stopped_by_rule = out.stopped_by_rule or o.stopped_by_rule
        ref_info = next(iter(o.infos.values()), {}) if o.infos else {}
        out.lanes.append({**lane.record(), "rounds_completed": o.rounds_completed, "stopped": o.stopped,
                          "interrupted": o.interrupted, "wall_s": round(o.timing.get("wall_s", 0.0), 3),
                          "loops": {str(k): v for k, v in o.loops.items()},
                          "device": (ref_info.get("device") or {}).get("name")})
    out.timing["rounds"].sort(key=lambda r: r["round"])
    return out


class _LaneProgress(progressbar.Progress):
    """A lane's progress: its lines prefixed with the lane, no bar (lanes share the terminal)."""

    def __init__(self, parent: progressbar.Progress, lane: Lane, total: int):
        super().__init__(total, stream=parent.stream, enabled=parent.enabled)
        self.tty = False
        self.prefix = f"[lane {lane.index} gpu {lane.gpu}] "

    def line(self, text: str) -> None:
        super().line(self.prefix + text)


def run(plan: runplan.Plan, lanes: list, progress: progressbar.Progress, on_round=None) -> runplan.Outcome:
    """``runner.run`` in every lane at once; returns the merged outcome (``merge``).

    ``plan.stop`` sees the pooled outcome of all lanes after every round of any lane: a stop rule
    met by the pooled rounds or a lane's failure ends every lane after its current round. A
    signal (Ctrl-C, SIGTERM) or a refused write ends every lane's round in progress at once
    (``Plan.cancel``), as without lanes; the finished rounds of every lane are kept. *on_round*
    (the JSON writes) gets the pooled outcome from this thread, not from the lanes, so no lane
    waits for a write; this thread and the lanes' threads run on the lanes' set-up CPUs, never
    on a measuring one.

    Each lane says it is done through an Event, not ``Thread.join``: on Python < 3.13 a join cut
    by a KeyboardInterrupt marks a live thread as ended, and the lanes' rounds were lost."""
    n = len(lanes)
    if n > 1 and plan.spin_cpus:
        raise UserError("--spin cannot be combined with more than one GPU (--gpus); leave it 'none'")
    current: list = [runplan.Outcome() for _ in lanes]
    results: list = [None] * n
    done_events = [threading.Event() for _ in lanes]
    cancel = threading.Event()
    lock = threading.Lock()
    pool = Pool(lanes)
    halt: list = []  # the reason every lane stops, once there is one

    def lane_stop(k):
        def stop(out):
            with lock:
                current[k] = out
                if halt:
                    return halt[0]
                if plan.stop is not None:
                    reason = plan.stop(merge(current, lanes, pool))
                    if reason:
                        halt.append(reason)
                        return reason
            return None
        return stop

    def lane_on_round(k):
        def hook(out):
            with lock:
                current[k] = out
        return hook

    def work(k, lane):
        if n > 1 and lane.setup_cpus:  # this thread's bookkeeping (the pooled stop rule) off every
            pinning.pin(lane.setup_cpus)  # lane's measuring CPU; its workers start from here too
        try:
            lp = lane_plan(plan, lane, n)
            lp.stop, lp.cancel = lane_stop(k), cancel
            total = lp.rounds * lp.repeats * max(1, len(lp.sample_keys())) * len(lp.variants)
            try:
                results[k] = runner.run(lp, _LaneProgress(progress, lane, total), on_round=lane_on_round(k))
            except BaseException as exc:  # noqa: BLE001 - reported as this lane's interruption
                results[k] = current[k]
                results[k].interrupted, results[k].reason = True, f"{type(exc).__name__}: {exc}"
            if results[k].interrupted:
                with lock:
                    if not halt:
                        halt.append(f"lane {k} stopped: {results[k].reason}")
        finally:
            done_events[k].set()

    home = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    setup_union = sorted({c for lane in lanes for c in (lane.setup_cpus or [])})
    if n > 1 and setup_union:
        pinning.pin(setup_union)
    threads = [threading.Thread(target=work, args=(k, lane), name=f"lane{k}", daemon=True)
               for k, lane in enumerate(lanes)]
    for t in threads:
        t.start()
    interrupted = None  # the reason, once a signal or a refused write ends every lane
    write_error = None
    written = 0  # pooled rounds the last on_round saw

    def end_all(reason: str) -> None:
        with lock:
            halt.append(reason)
        cancel.set()  # every lane's round in progress ends at its next wait for a worker

    try:
        try:
            while not all(e.is_set() for e in done_events):
                next(e for e in done_events if not e.is_set()).wait(0.2)
                if interrupted:
                    continue
                with lock:
                    done = sum(c.rounds_completed for c in current)
                    snapshot = merge(current, lanes, pool) if on_round and done > written else None
                if snapshot is not None:
                    written = done
                    try:
                        on_round(snapshot)
                    except atomic.OutputError as exc:  # a full disk: every lane stops, what is kept stays
                        interrupted, write_error = runner.write_failure(exc), exc
                        end_all(interrupted)
        except KeyboardInterrupt as exc:  # only this thread sees it
            interrupted = signals.reason(exc)
            end_all(interrupted)
            for e in done_events:  # a later signal is only noted (base/signals.py), so this wait ends
                while not e.wait(0.2):
                    pass
    finally:
        if n > 1 and setup_union and home:
            pinning.pin(home)
    progress.finish()
    out = merge([r if r is not None else runplan.Outcome() for r in results], lanes)
    if interrupted:
        out.interrupted, out.reason = True, interrupted
        out.write_error = out.write_error or write_error
    return out


# ---------------------------------------------------------------- the per-lane check

def welch(a: list, b: list) -> tuple[float, float] | None:
    """Welch's t test of mean(a) = mean(b): (t, two-sided p); None with fewer than 2 values in a
    group or no spread at all."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb <= 0:
        return None
    t = (statistics.fmean(a) - statistics.fmean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0.0) + (vb ** 2 / (len(b) - 1) if vb else 0.0))
    return t, min(1.0, 2.0 * (1.0 - stats.t_cdf(abs(t), df)))


def holm(pvalues: list) -> list:
    """Holm's step-down adjustment (None entries stay None)."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(order)
    adjusted: list = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def lane_check(samples: list, names: list, reference: str, arg_counts: list, n_lanes: int,
               alpha: float = 0.05) -> list:
    """Per delta (variant, arg count): each lane's mean per-round % delta and Welch's test of it
    against the other lanes' rounds, Holm-adjusted over every lane and delta of the run;
    ``differs`` when an adjusted p is below *alpha* (then the pooled interval mixes lanes that
    measure different things).

    Why over the whole run: adjusted over the lanes alone, each of a three-way compare's 10 deltas
    had its own 5 % chance, so lanes that agree were flagged in about 30 % of simulated runs
    (tests/test_lanes.py). A lane that really differs (another GPU
    model, a throttled GPU) moves many deltas by far more, and is still flagged."""
    by_lane = {k: [s for s in samples if s.get("lane", 0) == k] for k in range(n_lanes)}
    series = {k: round_series(by_lane[k], names, reference, arg_counts) for k in range(n_lanes)}
    out = []
    for name in names:
        if name == reference:
            continue
        for nargs in arg_counts:
            per = [series[k].get((name, nargs), ([], []))[1] for k in range(n_lanes)]
            tests = [welch(per[k], [x for j in range(n_lanes) if j != k for x in per[j]]) for k in range(n_lanes)]
            out.append({"variant": name, "nargs": nargs,
                        "lane_mean_pct": [statistics.fmean(p) if p else None for p in per],
                        "lane_rounds": [len(p) for p in per], "p": [t[1] if t else None for t in tests]})
    adjusted = iter(holm([p for c in out for p in c["p"]]))
    for c in out:
        c["p_holm"] = [next(adjusted) for _ in c["p"]]
        c["differs"] = any(p is not None and p < alpha for p in c["p_holm"])
    return out


def lane_deltas(samples: list, names: list, reference: str, arg_counts: list, n_lanes: int) -> list:
    """Each lane's own deltas (its rounds alone): [{lane, variant, nargs, delta_us, ci_us, delta_pct,
    ci_pct, rounds}], e.g. the A/A and delay checks of a trust run, lane by lane."""
    out = []
    for k in range(n_lanes):
        mine = [s for s in samples if s.get("lane", 0) == k]
        _stats, deltas = analyze(mine, names, reference, arg_counts)
        out.extend({"lane": k, **{f: d.get(f) for f in ("variant", "nargs", "rounds", "delta_us", "ci_us",
                                                         "delta_pct", "ci_pct")}} for d in deltas)
    return out


def report(outcome: runplan.Outcome, names: list, reference: str, arg_counts: list,
           connections: dict | None = None) -> dict | None:
    """The JSON's ``lanes`` section: the lanes, each lane's deltas and the check, and the workers'
    CUDA connections (*connections*: ``cuda_connections``' record); None without lanes."""
    if not outcome.lanes:
        return None
    n = len(outcome.lanes)
    check = lane_check(outcome.samples, names, reference, arg_counts, n) if n > 1 else []
    return {"n": n, "lanes": outcome.lanes,
            "deltas": lane_deltas(outcome.samples, names, reference, arg_counts, n),
            "check": check, "check_method": "Welch t of each lane's per-round % deltas vs the other lanes', "
                                            "Holm over every lane and delta, alpha 0.05",
            "lanes_differ": [f"{c['variant']}/{c['nargs']}" for c in check if c["differs"]],
            **({"cuda_connections": connections} if connections else {})}


