"""Which CPUs a run measures on, sets up on and keeps busy: --affinity, --prefetch and --spin
read and checked against this process's CPUs, SMT siblings kept off the measuring core, and the
busy loops (``Spinners``) that hold the CPU package in one power state."""
from __future__ import annotations

import os
import subprocess
import sys

from ..base import lifeline
from ..base.errors import UserError
from ..base.options import format_counts, parse_set

#: The highest CPU number --affinity and --spin read (what this process may use is checked after).
MAX_CPU = (1 << 20) - 1


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
