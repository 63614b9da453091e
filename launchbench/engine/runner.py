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
import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass, field

from ..base import atomic, childenv, cudamod, lifeline, signals
from ..base.errors import UserError
from ..base.options import DEFAULT_FORK_ROUNDS, format_counts, parse_set
from . import zygote as zygote_mod

#: The highest CPU number --affinity and --spin read (what this process may use is checked after).
MAX_CPU = (1 << 20) - 1
#: How often a wait for a worker's reply looks at the run's deadline and cancel flag (seconds)
POLL_S = 0.25
#: A round still running this long after --max-time is ended there (at least; or a tenth of the cap)
MIN_GRACE_S = 10.0


class WorkerError(Exception):
    def __init__(self, variant: str, kind: str, message: str):
        super().__init__(message)
        self.variant = variant
        self.kind = kind


class Halted(Exception):
    """A wait for a worker ended from outside: the run's hard deadline passed (*why* "deadline")
    or the run was cancelled (*why* "cancel": another lane's signal)."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def worker_environment(overlay: str, simulator: bool, module: str | None = None,
                       extra_env: dict | None = None) -> dict:
    """A worker's (or a zygote's) environment: this one less its credentials (it runs the code under
    test: base/childenv.py), with only launchbench on PYTHONPATH."""
    env = childenv.child_environ()
    env["PYTHONPATH"] = overlay  # only launchbench; nothing else of the parent
    env["PYTHONNOUSERSITE"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
    env.pop(cudamod.ENV, None)
    if module and module != "numba-cuda":  # numba-cuda-mlir: launchbench.base.cudamod
        env[cudamod.ENV] = module
    env.update(extra_env or {})  # a lane's CUDA_VISIBLE_DEVICES (lanes.py)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    return lifeline.child_env(env)


class Worker:
    """One ``python -m launchbench.engine.worker`` process of one variant, or one forked by the
    variant's zygote (``zygote``: engine/zygote.py).

    It dies with launchbench (``base/lifeline.py``). A reply is awaited until ``deadline``
    (monotonic seconds) or until ``cancel`` (a threading.Event) is set, then ``Halted`` is
    raised: a huge loop count or warm-up cannot hold the run past its time cap or a signal."""

    deadline: float | None = None
    cancel = None

    def __init__(self, variant: str, python: str, overlay: str, log_path: str, simulator: bool,
                 cpus: list | None = None, module: str | None = None, extra_env: dict | None = None,
                 zygote=None):
        self.variant = variant
        self.log_path = log_path
        self.cpus = cpus
        self._log = open(log_path, "ab")
        self.spawned = time.monotonic()  # CLOCK_MONOTONIC: comparable with the worker's own clock
        if zygote is not None:  # forked, its imports done (engine/zygote.py)
            try:
                self.proc = zygote.fork(log_path, Halted)
            except zygote_mod.ZygoteError as exc:
                self._log.close()
                raise WorkerError(variant, "died", str(exc)) from None
            except BaseException:
                self._log.close()
                raise
            self.pid = self.proc.pid
            return
        self.proc = subprocess.Popen(
            [python, "-m", "launchbench.engine.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, env=worker_environment(overlay, simulator, module, extra_env), text=True, bufsize=1,
            start_new_session=True,  # Ctrl-C reaches the parent only; it ends the workers
        )
        lifeline.track(self.proc)
        self.pid = self.proc.pid
        if cpus and hasattr(os, "sched_setaffinity"):  # set up away from the measuring CPU
            try:
                os.sched_setaffinity(self.pid, set(cpus))
            except OSError:  # it died already; receive() reports why
                pass

    def send(self, request: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def _await_reply(self) -> None:
        """Wait until the reply can be read, or raise ``Halted`` (deadline passed, run cancelled).
        One request is outstanding at a time, so nothing is left in the pipe's read buffer."""
        if self.deadline is None and self.cancel is None:
            return
        fd = self.proc.stdout.fileno()
        while True:
            wait = POLL_S
            if self.cancel is not None and self.cancel.is_set():
                raise Halted("cancel")
            if self.deadline is not None:
                wait = min(wait, self.deadline - time.monotonic())
                if wait <= 0:
                    raise Halted("deadline")
            if select.select([fd], [], [], wait)[0]:
                return

    def receive(self) -> dict:
        self._await_reply()
        line = self.proc.stdout.readline()
        if not line:
            raise self._died()
        reply = json.loads(line)
        if not reply.get("ok"):
            raise WorkerError(self.variant, reply.get("kind", "error"), reply.get("error", "unknown failure"))
        return reply

    def request(self, request: dict) -> dict:
        self.send(request)
        return self.receive()

    def _died(self) -> WorkerError:
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            rc = None
        tail = ""
        try:
            with open(self.log_path, "rb") as fh:
                lines = [ln for ln in fh.read().decode(errors="replace").splitlines() if ln.strip()]
            tail = lines[-1].strip()[:200] if lines else ""
        except OSError:
            pass
        return WorkerError(self.variant, "died",
                           f"worker for {self.variant} exited (code {rc}){': ' + tail if tail else ''}; log: {self.log_path}")

    def retire(self) -> None:
        """Ask the worker to exit without waiting, so a round's workers tear down their CUDA
        contexts together, on the set-up CPUs (``close`` then waits)."""
        if self.proc.poll() is None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "exit", "cpus": self.cpus}) + "\n")
                self.proc.stdin.close()
            except (OSError, ValueError):
                self.kill()

    def close(self, timeout: float = 10.0) -> None:
        """Retire, wait up to *timeout* s for the exit (then kill), release the log."""
        self.retire()
        lifeline.end(self.proc, grace=timeout)
        self._log.close()

    def kill(self) -> None:
        lifeline.end(self.proc)
        self._log.close()


# ---------------------------------------------------------------- progress

class Progress:
    """A bar on a TTY; plain lines (one per round) otherwise. Always on stderr."""

    def __init__(self, total: int, stream=None, enabled: bool = True):
        self.total = max(1, total)
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled
        self.start = time.monotonic()

    def tick(self, note: str) -> None:
        self.done += 1
        if self.enabled and self.tty:
            width = 30
            filled = int(width * self.done / self.total)
            elapsed = time.monotonic() - self.start
            eta = elapsed / self.done * (self.total - self.done)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                              f"{note:<28.28} eta {eta:4.0f}s")
            self.stream.flush()

    def line(self, text: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


# ---------------------------------------------------------------- rounds

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


def parse_affinity(text: str | None, available=None) -> list | None:
    """``--affinity``: None/"auto" -> [highest CPU of *available*]; "none" -> None (no pinning);
    "3" or "2,3" -> those CPUs, which must be in *available* (default: this process's CPUs)."""
    if available is None:
        available = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    available = set(available)
    text = "auto" if text is None else text.strip().lower()
    if text == "none":
        return None
    if text == "auto":
        return [max(available)] if available else None
    cpus = parse_set(text, "--affinity", MAX_CPU, "6,7 (or 4-7, auto, none)")
    missing = [c for c in cpus if c not in available]
    if missing:
        raise UserError(f"--affinity {text}: CPU(s) {format_counts(missing)} not available to this process "
                        f"(allowed: {format_counts(available)}); choose among those or use --affinity none")
    return cpus


def pin(cpus: list | None) -> list | None:
    """Pin the calling thread (threads it starts later inherit it); returns the CPUs now allowed."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return None
    os.sched_setaffinity(0, set(cpus))
    return sorted(os.sched_getaffinity(0))


def rotated(items: list, k: int) -> list:
    k %= len(items)
    return items[k:] + items[:k]


MAX_PREFETCH = 4
#: Rounds the engine sets up ahead at most, whatever a Plan asks: each is a process per variant,
#: so an unbounded count once started over a thousand workers (the option's own bound is the CLI's)
PREFETCH_LIMIT = 16


def parse_cpu_list(text: str) -> set:
    """The kernel's CPU list format ("0-3,8,10-11") -> {0, 1, 2, 3, 8, 10, 11} (--affinity's grammar)."""
    return set(parse_set(text.strip(), "CPU list", MAX_CPU, "0-3,8"))


def smt_siblings(cpus, read=None) -> set:
    """The hardware threads that share a core with *cpus* (themselves included), from sysfs;
    just *cpus* where the topology cannot be read."""
    def default_read(cpu):
        with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list") as fh:
            return fh.read()

    read = read or default_read
    out = set(cpus)
    for cpu in cpus:
        try:
            out |= parse_cpu_list(read(cpu))
        except (OSError, UserError):
            pass
    return out


def setup_cpus(affinity: list | None, available=None, siblings=smt_siblings) -> list | None:
    """CPUs for workers' set-up: those this process may use except the measuring ones and their
    SMT siblings (a compile on the other thread of the measuring core slows every launch timed
    there); if that leaves none, all but the measuring ones. None: no split."""
    if available is None:
        available = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
    if not affinity:
        return None
    rest = sorted(set(available) - siblings(affinity))
    if not rest:
        rest = sorted(set(available) - set(affinity))
    return rest or None


def default_prefetch(n_variants: int, affinity: list | None, available=None, siblings=smt_siblings) -> int:
    """Rounds to set up ahead: as many as the set-up CPUs (``setup_cpus``) can host (at most 4)."""
    if available is None:
        available = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else {0}
    free = len(setup_cpus(affinity, available, siblings) or (set(available) - set(affinity or [])))
    return max(0, min(MAX_PREFETCH, free // max(1, n_variants)))


def parse_prefetch(text: str, n_variants: int, affinity) -> int:
    """--prefetch: "auto" or a count >= 0."""
    text = str(text).strip().lower()
    if text == "auto":
        return default_prefetch(n_variants, affinity)
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise UserError(f"bad --prefetch {text!r}; give a number of rounds >= 0 (e.g. 2) or 'auto'")
    return value


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


SPIN_CODE = lifeline.DIE_WITH_PARENT_CODE + "os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


class Spinners:
    """Busy loops pinned to *cpus* for the whole run. On the VMs we measure, a lone busy CPU
    alternates between two speeds about 1.5x apart (the host's power management), and a
    round's samples straddle both; one busy loop elsewhere on the package holds it in the
    fast state, so paired samples differ less. Choose CPUs that do not share a core with the
    measuring one (``setup_cpus`` already excludes its SMT siblings)."""

    def __init__(self, cpus: list | None):
        self.procs = []
        for cpu in cpus or []:
            proc = subprocess.Popen([sys.executable, "-c", SPIN_CODE, str(cpu)], stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=lifeline.child_env(dict(os.environ)))
            lifeline.track(proc)
            self.procs.append(proc)

    def stop(self) -> None:
        for proc in self.procs:
            lifeline.kill_group(proc)
            proc.wait()
            lifeline.forget(proc)
        self.procs = []


def parse_spin(text: str | None, affinity: list | None, setup: list | None, available=None) -> list:
    """``--spin``: "none" -> []; "auto" -> the lowest set-up CPU ([] without pinning or without
    set-up CPUs); "3" or "2,3" -> those CPUs, which must be this process's (*available*) and not
    measuring ones."""
    text = "none" if text is None else str(text).strip().lower()
    if text == "none":
        return []
    if text == "auto":
        return [min(setup)] if affinity and setup else []
    cpus = parse_set(text, "--spin", MAX_CPU, "0,1 (or 0-1, auto, none)")
    clash = sorted(set(cpus) & set(affinity or []))
    if clash:
        raise UserError(f"--spin {text}: CPU(s) {clash} also measure (--affinity); choose others or --spin none")
    if available is None:
        available = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(cpus)
    missing = [c for c in cpus if c not in set(available)]
    if missing:
        raise UserError(f"--spin {text}: CPU(s) {format_counts(missing)} not available to this process "
                        f"(allowed: {format_counts(available)}); choose among those or use --spin none")
    return cpus


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


#: numba-cuda's CUDA package inside its distribution; numba's own bundled copy is ``numba/cuda/``
NUMBA_CUDA_PACKAGE = os.path.join("numba_cuda", "numba", "cuda", "__init__.py")


def _release_text(version: str) -> str:
    """``0.30`` and ``0.30.0`` alike (PEP 440 trailing zeros); the local part kept."""
    public, plus, local = version.strip().lower().partition("+")
    parts = public.split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts) + plus + local


def import_mismatch(info: dict, expect: dict | None) -> str | None:
    """Why a worker's imported CUDA module is not what its environment was built with, or None.

    numba-cuda's must be its own package (a tree without it leaves numba's bundled ``numba.cuda``
    in its place, recorded under the clone's version); in an environment launchbench built
    (*expect*'s ``prefix``) it must come from that environment, at the version installed there."""
    if "cuda_module" not in info:  # a target callable or the stand-in path: no CUDA module
        return None
    path = info.get("cuda_module_file")
    if not path:
        return "no CUDA module file recorded"
    if info["cuda_module"] == "numba-cuda" and not path.endswith(NUMBA_CUDA_PACKAGE):
        return (f"numba.cuda came from {path}, numba's own bundled copy, not numba-cuda's package "
                f"(numba_cuda/numba/cuda/)")
    expect = expect or {}
    prefix = expect.get("prefix")
    if prefix:
        root = os.path.realpath(prefix) + os.sep
        if not path.startswith(root):
            return f"{info['cuda_module']} came from {path}, not from its environment {prefix}"
    version, have = expect.get("version"), info.get("numba_cuda_version")
    if version and _release_text(have or "") != _release_text(version):
        return f"{info['cuda_module']} {have} was imported where {version} was installed"
    return None


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


def timing_json(timing: dict, digits: int = 3) -> dict:
    """Outcome.timing for the JSON: seconds rounded, the per-round records as they are."""
    return {k: (round(v, digits) if isinstance(v, (int, float)) else v) for k, v in timing.items()}


def worker_error_message(exc: WorkerError) -> str:
    """The one-line user error for a worker that could not set up."""
    if exc.kind == "import":
        return f"variant {exc.variant} cannot import numba-cuda: {exc}"
    if exc.kind == "nogpu":
        return f"{exc} (variant {exc.variant})"
    if exc.kind == "mismatch":
        return f"variant {exc.variant} measures the wrong package: {exc}"
    return f"variant {exc.variant}: {exc}"


def raise_setup_failure(out: Outcome) -> None:
    """Nothing measured and a worker failed: that is a user error, not a partial result."""
    if out.rounds_completed == 0 and out.error is not None:
        raise UserError(worker_error_message(out.error))
