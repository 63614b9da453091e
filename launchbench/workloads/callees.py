"""The C functions a launch calls, by name and calls per launch: what the counts alone miss.

Why: two launch paths can execute the same bytecodes, calls and function entries and still
differ in Python: ``len(x)`` becoming ``sum(x)``, or a call to another cuda-bindings function
with the same arguments. ``workloads.counts`` counts such a call as one C call either way;
naming each C callee per calling function makes the change exact and visible.

How: a pass of its own right after the counts pass, over as many launches, with one hook that
sees only calls (the launch path is warm and, where the counts are ``steady``, the same every
launch, so per function the callees' calls add up to its ``c_calls``):

- Python >= 3.12: a ``sys.monitoring`` tool with the CALL event, which hands over the callable;
  every callable that is not a Python function or method (``counts``' ``c_calls``) is named.
- Python 3.11: ``sys.setprofile``'s ``c_call`` events: builtin functions and methods only
  (``len``, ``list.append``). CPython sends none for Cython functions (every cuda-bindings call),
  slot wrappers, classes or callable objects: on 3.11 those are neither counted in ``c_calls``
  nor named here (``CALLEE_SCOPES``, each record's ``c_callee_scope``).

A C callee is named ``module.qualname`` (``builtins.len``, ``builtins.list.append``,
``cuda.bindings.driver.cuLaunchKernel``); a class called by its own name (its construction); any
other callable object as ``module.Type.__call__``. ``workloads.counts`` itself is left as it is:
the asv suite's count rows version themselves by its text (benchmarks/bench_counts.py).

Only the standard library is imported (this module runs inside every variant's environment).
"""
from __future__ import annotations

import gc
import os
import sys
import types

from . import counts

#: which C callables each counter names (a counts record's ``c_callee_scope``)
CALLEE_SCOPES = {
    "sys.monitoring": "every C call from Python bytecode (builtins, extension and Cython functions, classes, "
                      "callable objects)",
    "sys.settrace": "builtin functions and methods only (sys.setprofile c_call events): Cython functions such "
                    "as cuda-bindings', slot wrappers, classes and callable objects are neither named nor counted",
}
#: the sys.monitoring tool ids tried (as workloads.counts': 2 is the profiler's; 3 and 4 are unassigned)
_TOOL_IDS = (3, 4, 2)
_FUNCTION_LIKE: dict = {}  # type -> whether its objects carry a name of their own
#: what counts.py counts as a Python call (py_calls); every other callable is a C call
_PY_CALLABLES = (types.FunctionType, types.MethodType)


def _function_like(kind: type) -> bool:
    """Whether objects of *kind* are C functions with a name of their own (builtins, method
    descriptors, Cython functions: their type defines ``__qualname__``); other callables are
    instances, named by their type, which runs no Python code of theirs while counting."""
    got = _FUNCTION_LIKE.get(kind)
    if got is None:
        got = _FUNCTION_LIKE[kind] = any("__qualname__" in vars(k) for k in kind.__mro__ if k is not object)
    return got


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time (in Python, or by a C extension's spec)


def _wrapped(func, kind: type) -> str | None:
    """``module.qualname`` that a C-typed wrapper object carries in its own ``__dict__`` (what
    functools.update_wrapper sets: numpy's functions, launchbench's Interceptor), or None. Only
    static C types are asked: their attribute lookup runs no Python code."""
    if kind.__flags__ & _HEAPTYPE:
        return None
    own = getattr(func, "__dict__", None)
    if not isinstance(own, dict):
        return None
    module, qual = own.get("__module__"), own.get("__qualname__")
    return f"{module}.{qual}" if isinstance(module, str) and isinstance(qual, str) else None


def callee_name(func) -> str:
    """A C callable's name: ``module.qualname`` (``builtins.len``, ``builtins.list.append``);
    a class: its own name; any other callable object: ``module.Type.__call__``, with what it
    wraps where a C-typed wrapper says (``numpy._ArrayFunctionDispatcher.__call__(numpy.zeros_like)``)."""
    kind = type(func)
    try:
        if isinstance(func, type):
            return f"{func.__module__}.{func.__qualname__}"
        if not _function_like(kind):
            wrapped = _wrapped(func, kind)
            return f"{kind.__module__}.{kind.__qualname__}.__call__" + (f"({wrapped})" if wrapped else "")
        qual = func.__qualname__
    except Exception:  # noqa: BLE001 - an odd object must not break the launch it is counted in
        return f"{kind.__module__}.{kind.__qualname__}.__call__"
    module = getattr(func, "__module__", None)  # functions say it; methods and descriptors do not
    if not isinstance(module, str):
        owner = getattr(func, "__objclass__", None)  # a descriptor's class
        if owner is None:
            owner = getattr(func, "__self__", None)  # a bound method's object, class or module
            if isinstance(owner, types.ModuleType):
                return f"{owner.__name__}.{qual}"
            if owner is not None and not isinstance(owner, type):
                owner = type(owner)
        module = getattr(owner, "__module__", None)
    return f"{module}.{qual}" if isinstance(module, str) else qual


def _tally(by_code: dict, code, func) -> None:
    got = by_code.get(code)
    if got is None:
        got = by_code[code] = {}
    name = callee_name(func)
    got[name] = got.get(name, 0) + 1


def _callees_monitoring(run, n: int, skip: set) -> dict:
    mon = sys.monitoring
    tool = next((t for t in _TOOL_IDS if mon.get_tool(t) is None), None)
    if tool is None:
        raise RuntimeError("no free sys.monitoring tool id (3, 4 and 2 are all taken by other tools)")
    by_code: dict = {}
    DISABLE = mon.DISABLE
    def on_call(code, offset, func, arg0):
        if code in skip:
            return DISABLE
        if not isinstance(func, _PY_CALLABLES):
            _tally(by_code, code, func)

    mon.use_tool_id(tool, "launchbench-callees")
    try:
        mon.register_callback(tool, mon.events.CALL, on_call)
        mon.set_events(tool, mon.events.CALL)
        run(n)
    finally:
        mon.set_events(tool, 0)
        mon.register_callback(tool, mon.events.CALL, None)
        mon.free_tool_id(tool)
        mon.restart_events()
    return by_code


def _callees_setprofile(run, n: int, skip: set) -> dict:
    by_code: dict = {}

    def profiler(frame, event, arg):
        if event == "c_call" and frame.f_code not in skip:
            _tally(by_code, frame.f_code, arg)

    old = sys.getprofile()
    sys.setprofile(profiler)
    try:
        run(n)
    finally:
        sys.setprofile(old)
    return by_code


# a function's key as counts.py makes it (its helpers are its own: counts.py stays as it is)

def _module_names() -> dict:
    """Source file -> module name, for every imported module that has a file."""
    out = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            out.setdefault(os.path.realpath(path), name)
    return out


def _key(code, modules: dict) -> tuple:
    """(module, qualified name) of a code object, as counts.count names its function."""
    filename = code.co_filename
    if filename.startswith("<frozen ") and filename.endswith(">"):
        module = filename[len("<frozen "):-1]
    else:
        module = (modules.get(os.path.realpath(filename)) if not filename.startswith("<") else None) or filename
    return module, getattr(code, "co_qualname", code.co_name)


def _per_launch(total: int, n: int):
    return total // n if total % n == 0 else round(total / n, 4)


def count_callees(launch, args, launches: int) -> dict:
    """(module, qualified name) of each calling function -> {C callee name: calls} over
    *launches* launches of a warm *launch(*args)*; the garbage collector is off meanwhile."""
    args = tuple(args)

    def run(n):  # no nested code objects here: they would be seen
        for _ in range(n):
            launch(*args)

    skip = {run.__code__, _callees_monitoring.__code__, _callees_setprofile.__code__}
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if counts.counter_name() == "sys.monitoring":
            by_code = _callees_monitoring(run, launches, skip)
        else:
            by_code = _callees_setprofile(run, launches, skip)
    finally:
        if was_enabled:
            gc.enable()
    modules = _module_names()
    out: dict = {}
    for code, named in by_code.items():
        acc = out.setdefault(_key(code, modules), {})
        for name, calls in named.items():
            acc[name] = acc.get(name, 0) + calls
    return out


def count(launch, args=(), launches: int = counts.DEFAULT_LAUNCHES, warmup: int = counts.DEFAULT_WARMUP,
          sync=None) -> dict:
    """``counts.count``'s record of *launch(*args)*, each function with its ``c_callees`` (C callee
    name -> calls per launch, from a pass of *launches* more launches right after the counted
    ones) and the record's ``c_callee_scope``."""
    rec = counts.count(launch, args, launches=launches, warmup=warmup, sync=sync)
    named = count_callees(launch, args, launches)
    if sync is not None:
        sync()
    rows = {(f["module"], f["function"]): f for f in rec["functions"]}
    for key, callees in named.items():
        row = rows.get(key)
        if row is None:  # called C functions only in the callee pass: the launch path is not steady
            row = rows[key] = {"module": key[0], "function": key[1], **{k: 0 for k in rec["kinds"]}}
            rec["functions"].append(row)
        row["c_callees"] = {name: _per_launch(calls, launches) for name, calls in sorted(callees.items())}
    for row in rec["functions"]:
        row.setdefault("c_callees", {})
    rec["c_callee_scope"] = CALLEE_SCOPES[rec["counter"]]
    return rec
