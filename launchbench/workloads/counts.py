"""Exact Python-level counts of one launch: bytecodes, calls and function entries.

Why: on the GPU VMs a 0.3 µs question costs minutes of paired timing rounds, and there are no
hardware counters (``perf_event_open`` fails). The Python part of a launch, though, executes
the same bytecodes every time: counted, it is a number with no noise, which says exactly what
changed between two builds. The clock still says how much that costs; counts never replace it.

How: CPython's own event hooks, in a pass of its own (counting slows a launch many times, so
it never runs while timing):

- Python >= 3.12: ``sys.monitoring`` with the INSTRUCTION, CALL and PY_START events.
  ``bytecodes``: instructions executed (RESUME is not instrumented, so not counted); ``calls``:
  calls made from Python bytecode, to Python or C callables (split into ``py_calls`` and
  ``c_calls``); ``entries``: Python functions started (also those the C dispatcher calls).
- Python 3.11: ``sys.settrace`` with opcode events and ``sys.setprofile``. ``bytecodes`` are
  opcode events (exact, but 3.11's instruction set differs from 3.12's, so the numbers are
  not comparable across the two), ``entries`` are frame starts (generator resumptions too),
  ``c_calls`` are C functions called from Python; ``calls`` and ``py_calls`` are not counted.

Counts compare only between processes of the same Python minor version and counter
(``counter``, ``python``): ``engine.countdiff`` refuses the rest.

Only the standard library is imported: this module runs inside every variant's environment
(CLI workers and asv's per-commit environments alike).
"""
from __future__ import annotations

import functools
import gc
import os
import sys
import types

#: what a counts record holds, per launch; ``None`` where the counter cannot count it
TOTALS = ("bytecodes", "calls", "py_calls", "c_calls", "entries")
#: launches per counts pass (after the warm-up); every launch is counted on its own
DEFAULT_LAUNCHES = 20
#: uncounted launches first: first-call caches (configure, type dispatch) fill here
DEFAULT_WARMUP = 5
#: the sys.monitoring tool ids tried (2 is the profiler's; 3 and 4 are unassigned)
_TOOL_IDS = (3, 4, 2)
_PY_CALLABLES = (types.FunctionType, types.MethodType)


def counter_name() -> str:
    """Which CPython hook counts here: ``sys.monitoring`` (3.12+) or ``sys.settrace`` (older)."""
    return "sys.monitoring" if hasattr(sys, "monitoring") else "sys.settrace"


def python_version() -> str:
    return "%d.%d" % sys.version_info[:2]


class _Tally:
    """Per-code-object counters, and a running total for each kind."""

    def __init__(self):
        self.by_code: dict = {}  # code -> [bytecodes, calls, py_calls, c_calls, entries]
        self.total = [0, 0, 0, 0, 0]

    def row(self, code) -> list:
        row = self.by_code.get(code)
        if row is None:
            row = self.by_code[code] = [0, 0, 0, 0, 0]
        return row


def _is_python_callable(func) -> bool:
    if isinstance(func, _PY_CALLABLES):
        return True
    # a class or an object with __call__ written in Python also starts Python code, but
    # the call itself is dispatched by C (type.__call__): counted as a C call
    return False


def _count_monitoring(run, n: int, skip: set) -> tuple:
    mon = sys.monitoring
    ev = mon.events
    tool = None
    for candidate in _TOOL_IDS:
        if mon.get_tool(candidate) is None:
            tool = candidate
            break
    if tool is None:
        raise RuntimeError("no free sys.monitoring tool id (3, 4 and 2 are all taken by other tools)")
    tally = _Tally()
    total = tally.total
    by_code = tally.by_code
    DISABLE = mon.DISABLE

    def on_instruction(code, offset):
        if code in skip:
            return DISABLE
        row = by_code.get(code)
        if row is None:
            row = tally.row(code)
        row[0] += 1
        total[0] += 1

    def on_call(code, offset, func, arg0):
        if code in skip:
            return DISABLE
        row = by_code.get(code)
        if row is None:
            row = tally.row(code)
        row[1] += 1
        total[1] += 1
        if _is_python_callable(func):
            row[2] += 1
            total[2] += 1
        else:
            row[3] += 1
            total[3] += 1

    def on_start(code, offset):
        if code in skip:
            return DISABLE
        row = by_code.get(code)
        if row is None:
            row = tally.row(code)
        row[4] += 1
        total[4] += 1

    mon.use_tool_id(tool, "launchbench-counts")
    try:
        mon.register_callback(tool, ev.INSTRUCTION, on_instruction)
        mon.register_callback(tool, ev.CALL, on_call)
        mon.register_callback(tool, ev.PY_START, on_start)
        mon.set_events(tool, ev.INSTRUCTION | ev.CALL | ev.PY_START)
        per_launch = run(n, total)
    finally:
        mon.set_events(tool, 0)
        for event in (ev.INSTRUCTION, ev.CALL, ev.PY_START):
            mon.register_callback(tool, event, None)
        mon.free_tool_id(tool)
        mon.restart_events()
    return tally, per_launch


def _count_settrace(run, n: int, skip: set) -> tuple:
    tally = _Tally()
    total = tally.total

    def tracer(frame, event, arg):
        code = frame.f_code
        if code in skip:
            return None
        if event == "call":
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            tally.row(code)[4] += 1
            total[4] += 1
            return tracer
        if event == "opcode":
            tally.row(code)[0] += 1
            total[0] += 1
        return tracer

    def profiler(frame, event, arg):
        if event == "c_call" and frame.f_code not in skip:
            tally.row(frame.f_code)[3] += 1
            total[3] += 1

    old_trace, old_profile = sys.gettrace(), sys.getprofile()
    sys.settrace(tracer)
    sys.setprofile(profiler)
    try:
        per_launch = run(n, total)
    finally:
        sys.settrace(old_trace)
        sys.setprofile(old_profile)
    return tally, per_launch


@functools.lru_cache(maxsize=None)
def _realpath(path: str) -> str:
    """os.path.realpath, once per path and process: every count maps each imported module's file (over a
    thousand with numba-cuda), and resolving them all again took 60 ms a count, most of the asv count rows'
    ``setup_cache``."""
    return os.path.realpath(path)


def _module_names() -> dict:
    """Source file -> module name, for every imported module that has a file."""
    out = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            out.setdefault(_realpath(path), name)
    return out


def _module_of(code, modules: dict) -> str:
    filename = code.co_filename
    if filename.startswith("<frozen ") and filename.endswith(">"):
        return filename[len("<frozen "):-1]  # importlib._bootstrap and friends
    name = modules.get(_realpath(filename)) if not filename.startswith("<") else None
    return name or filename


def _qualname(code) -> str:
    return getattr(code, "co_qualname", code.co_name)  # co_qualname: 3.11+


def _per_launch_value(total: int, n: int):
    """A per-launch figure: an int when *total* divides evenly, else a float to 4 decimals."""
    return total // n if total % n == 0 else round(total / n, 4)


def count(launch, args=(), launches: int = DEFAULT_LAUNCHES, warmup: int = DEFAULT_WARMUP,
          sync=None) -> dict:
    """Count what *launch(*args)* executes in Python, launch by launch, over *launches* launches
    after *warmup* uncounted ones; *sync* (e.g. ``cuda.synchronize``) runs uncounted after
    the warm-up and at the end. The garbage collector is off while counting (a collection would
    run finalizers inside some launch).

    Returns the counts record: ``per_launch`` (totals per launch; the median launch's where
    launches differ), ``steady`` (every launch gave the same totals), ``launch_totals`` (the
    distinct per-launch totals and how many launches gave each) and ``functions`` (per function,
    per launch: ``module``, ``function`` (qualified name), and the totals)."""
    if launches < 1:
        raise ValueError("launches must be at least 1")
    args = tuple(args)
    for _ in range(max(0, int(warmup))):
        launch(*args)
    if sync is not None:
        sync()
    counter = counter_name()
    kinds = TOTALS if counter == "sys.monitoring" else ("bytecodes", "c_calls", "entries")
    marks: list = []

    def run(n, total):  # no nested code objects here: they would be counted
        append = marks.append
        for _ in range(n):
            b0, b1, b2, b3, b4 = total
            launch(*args)
            append((total[0] - b0, total[1] - b1, total[2] - b2, total[3] - b3, total[4] - b4))
        return marks

    skip = {run.__code__, _count_monitoring.__code__, _count_settrace.__code__}
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if counter == "sys.monitoring":
            tally, per = _count_monitoring(run, launches, skip)
        else:
            tally, per = _count_settrace(run, launches, skip)
    finally:
        if was_enabled:
            gc.enable()
    if sync is not None:
        sync()
    index = {k: TOTALS.index(k) for k in kinds}
    distinct: dict = {}
    for mark in per:
        distinct[mark] = distinct.get(mark, 0) + 1
    median = sorted(per, key=lambda m: m[0])[len(per) // 2]
    modules = _module_names()
    functions: dict = {}
    for code, row in tally.by_code.items():
        key = (_module_of(code, modules), _qualname(code))
        acc = functions.setdefault(key, [0, 0, 0, 0, 0])
        for i, value in enumerate(row):
            acc[i] += value
    rows = []
    for (module, qualname), acc in functions.items():
        rec = {"module": module, "function": qualname}
        rec.update({k: _per_launch_value(acc[i], launches) for k, i in index.items()})
        rows.append(rec)
    rows.sort(key=lambda r: (-r["bytecodes"], r["module"], r["function"]))
    return {
        "counter": counter,
        "python": python_version(),
        "kinds": list(kinds),
        "launches": launches,
        "warmup": int(warmup),
        "per_launch": {k: median[i] for k, i in index.items()},
        "mean_per_launch": {k: _per_launch_value(sum(m[i] for m in per), launches) for k, i in index.items()},
        "steady": len(distinct) == 1,
        "launch_totals": [{"launches": c, **{k: m[i] for k, i in index.items()}}
                          for m, c in sorted(distinct.items(), key=lambda kv: -kv[1])],
        "functions": rows,
    }
