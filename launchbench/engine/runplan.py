"""What one run of rounds measures (``Plan``) and what it kept (``Outcome``): the contract between
a command and the round loop (runner.run), with the sample keys that name what a sample measured."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..base.errors import UserError
from ..base.options import DEFAULT_FORK_ROUNDS
from .workerproc import WorkerError, worker_error_message

#: A round still running this long after --max-time is ended there (at least; or a tenth of the cap)
MIN_GRACE_S = 10.0


def launch_keys(arg_counts: list) -> list:
    """The sample keys of the launch workload: one per kernel argument count."""
    return [{"nargs": n} for n in arg_counts]


def key_id(key: dict):
    """A hashable name for a sample key: the arg count itself for the launch workload (so
    ``loops`` stays ``{nargs: loops}``), ``"stage=marshal,nargs=2"``-style text otherwise."""
    if set(key) == {"nargs"}:
        return key["nargs"]
    return ",".join(f"{k}={key[k]}" for k in sorted(key))



@dataclass
class Plan:
    """What one run measures and how; the engine (``run``) is the same for every command.

    *keys* are the sample keys (default: one per arg count, the launch workload); *setup* is
    merged into each worker's set-up request (the workload's own fields); *measure* replaces the
    interleaved sampling of a round (mechanisms hand one worker a whole in-process session);
    *stop* is asked after every finished round and ends the run early with a reason."""

    variants: list  # [(name, python, mechanism or None)], reference first is not required
    reference: str
    arg_counts: list
    loops: dict | None  # key id -> loops; None: calibrate in round 0
    repeats: int
    rounds: int
    warmup: int
    sample_target_s: float
    simulator: bool
    affinity: list | None
    peers: bool
    overlay: str
    log_dir: str
    prefetch: int = 0          # rounds set up ahead while the current one measures
    setup_cpus: list | None = None  # CPUs for set-up (None: wherever the OS puts it)
    keys: list | None = None   # sample keys (dicts); None: launch_keys(arg_counts)
    setup: dict = field(default_factory=dict)
    measure: object = None     # callable(plan, rnd, workers, out, progress) or None: interleaved samples
    stop: object = None        # callable(out) -> reason text or None, after each finished round
    max_time: float | None = None  # seconds of measurement wall; no new round starts after it
    log_prefix: str = "worker-r"
    spin_cpus: list | None = None  # CPUs kept busy for the whole run (``Spinners``)
    modules: dict = field(default_factory=dict)  # variant name -> "numba-cuda-mlir" where not numba-cuda
    pinned_warmup: int | None = None  # of the ``warmup`` launches, those run after pinning (None: all);
    # the rest run during set-up, on the set-up CPUs, where they cost the round nothing
    worker_env: dict = field(default_factory=dict)  # added to every worker's environment (a lane's GPU)
    count_rounds: int = 0  # the first N rounds' workers also count their launch's bytecodes and calls
    count_launches: int = 20  # launches counted one by one per worker and arg count (workloads.counts)
    cancel: object = None  # a threading.Event: set, the round in progress ends at once (lanes: a signal)
    spawn: str = "fresh"   # "fork": each round's workers forked from per-variant zygotes (engine/zygote.py)
    fork_rounds: int = DEFAULT_FORK_ROUNDS  # with "fork": consecutive rounds one zygote serves, one cluster
    # variant name -> {"prefix": the env launchbench built, "version": the version it installed} (either
    # may be None): each worker's imported CUDA module is checked against it (import_mismatch)
    expect: dict = field(default_factory=dict)

    def cluster(self, rnd: int) -> int | None:
        """The cluster of round *rnd*: rounds forked from the same zygotes (None: fresh workers,
        each round its own unit)."""
        return rnd // max(1, self.fork_rounds) if self.spawn == "fork" else None

    def hard_deadline(self, started: float) -> float | None:
        """When a round still running past ``max_time`` is ended (monotonic seconds; None: no cap):
        the cap plus a grace of a tenth of it, at least ``MIN_GRACE_S`` (round 0 sets up too)."""
        if self.max_time is None:
            return None
        return started + self.max_time + max(MIN_GRACE_S, 0.1 * self.max_time)

    def sample_keys(self) -> list:
        return list(self.keys) if self.keys is not None else launch_keys(self.arg_counts)


@dataclass
class Outcome:
    samples: list = field(default_factory=list)
    partial_samples: list = field(default_factory=list)
    peer_samples: list = field(default_factory=list)
    units: list = field(default_factory=list)  # what a custom measure keeps per round
    infos: dict = field(default_factory=dict)  # variant -> worker setup info (round 0)
    round_infos: dict = field(default_factory=dict)  # the same, of the round being measured
    loops: dict = field(default_factory=dict)
    rounds_completed: int = 0
    interrupted: bool = False
    reason: str | None = None
    stopped: str | None = None  # why the run ended before its planned rounds (stop rule, time cap)
    stopped_by_rule: bool = False  # the stop rule chose the last round (not a cap: sequential.chosen_stop)
    error: WorkerError | None = None
    write_error: OSError | None = None  # on_round's write the file system refused (atomic.OutputError)
    lanes: list = field(default_factory=list)  # one record per lane (lanes.merge); empty without lanes
    counts: list = field(default_factory=list)  # {"variant", "round", "worker", "nargs", "counts"} (count_round)
    timing: dict = field(default_factory=lambda: {"setup_wait_s": 0.0, "measure_s": 0.0, "teardown_s": 0.0,
                                                  "wall_s": 0.0})


def timing_json(timing: dict, digits: int = 3) -> dict:
    """Outcome.timing for the JSON: seconds rounded, the per-round records as they are."""
    return {k: (round(v, digits) if isinstance(v, (int, float)) else v) for k, v in timing.items()}


def raise_setup_failure(out: Outcome) -> None:
    """Nothing measured and a worker failed: that is a user error, not a partial result."""
    if out.rounds_completed == 0 and out.error is not None:
        raise UserError(worker_error_message(out.error))
