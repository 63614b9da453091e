"""A stand-in numba-cuda launch path with known per-stage costs, for the stages workload on CPU.

The paired breakdown's statistics (stage deltas, rests, additivity, per-argument
slopes) must be shown to recover what they claim, and that needs a launch
whose stages cost known amounts. This module builds one in plain Python, shaped
like numba-cuda's: a configured launch whose ``__call__`` calls
``Dispatcher.call(args, launch_config)`` (0.30's signature, so launchbench
mechanisms install on it), which runs type dispatch, launch-config bookkeeping
and ``Kernel.launch``, which runs the cufunc lookup, marshalling (per argument),
the launch config and the driver launch. Every stage busy-waits its injected
cost (``launchbench.workloads._tls.spin``, holding the GIL like real work), and each
level may add a *rest* of its own that no stage measures. ``stage_loops``
returns the same stage names as ``stages.worker_loops`` on a GPU, each timing
the same function the nested launch calls.

Costs come from ``LAUNCHBENCH_STANDIN_COSTS`` (set per variant: every worker of
a variant inherits its interpreter's environment), e.g.
``marshal_args=0.2+1.0/arg,lc_bookkeeping=0.3,rest:kernel_launch=0.8`` (us; a
sub-stage's cost is part of its parent's, as in the real path), and
``LAUNCHBENCH_STANDIN_STYLE=griddim`` drops ``lc_bookkeeping`` like numba-cuda
0.29. Under ``--simulator`` (numba-cuda's simulator never reaches
``CUDADispatcher.call``) the worker uses this path with no costs: a smoke run of
the machinery, not a measurement. Standard library (and ``launchbench.workloads._tls`` if
built) only.
"""
from __future__ import annotations

import os
import re
import time

from ..base.errors import UserError
from . import stages

COSTS_ENV = "LAUNCHBENCH_STANDIN_COSTS"
STYLE_ENV = "LAUNCHBENCH_STANDIN_STYLE"
_NUM = r"([0-9]*\.?[0-9]+)"
_COST_RE = re.compile(rf"^\s*([a-z_:+]+)\s*=\s*(?:{_NUM}(?:\s*\+\s*{_NUM}\s*/\s*arg)?|{_NUM}\s*/\s*arg)\s*$")


def parse_costs(text: str | None) -> dict:
    """``"stage=BASE+PER/arg,..."`` (us) -> {stage: (base_us, per_arg_us)}."""
    known = set(stages.stage_names()) | set(stages.UNEXPLAINED)
    costs: dict = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        m = _COST_RE.match(part)
        if not m or m.group(1) not in known:
            raise UserError(f"{COSTS_ENV}: bad entry {part.strip()!r}; write stage=BASE, stage=PER/arg or "
                            f"stage=BASE+PER/arg in us, e.g. marshal_args=0.2+1.0/arg")
        costs[m.group(1)] = (float(m.group(2) or 0.0), float(m.group(3) or m.group(4) or 0.0))
    return costs


def _spinner():
    try:
        from . import _tls  # lazy: the C extension may be unbuilt (the fallback below)

        return _tls.spin
    except ImportError:  # not built: a Python busy-wait (coarser, still monotonic)
        def spin(ns, _now=time.perf_counter_ns):
            end = _now() + ns
            while _now() < end:
                pass

        return spin


class Launch:
    """The configured launch (``k[1, 1]``); *rest* is spun after the dispatcher returns."""

    def __init__(self, dispatcher, own, rest):
        self.dispatcher, self.own, self.rest = dispatcher, own, rest
        self.griddim, self.blockdim, self.stream, self.sharedmem = (1, 1, 1), (1, 1, 1), 0, 0

    def __call__(self, *args):
        self.own()
        result = self.dispatcher.call(args, self)
        self.rest()
        return result


class Dispatcher:
    """``CUDADispatcher`` stand-in; mechanisms install on its ``call`` (0.30's signature)."""

    def __init__(self, parts: dict, kernel, configure_cost):
        self.parts, self.kernel, self.configure_cost = parts, kernel, configure_cost
        self.configured = Launch(self, parts["configured_call"], parts["rest:full"])

    def __getitem__(self, config):
        self.configure_cost()
        return self.configured

    def call(self, args, launch_config):
        p = self.parts
        p["type_dispatch"]()
        p["lc_bookkeeping"]()
        p["dispatcher_frame"]()
        self.kernel.launch(args, launch_config.griddim, launch_config.blockdim, launch_config.stream,
                           launch_config.sharedmem)
        p["rest:dispatcher_call"]()


class Kernel:
    """``_Kernel`` stand-in: cufunc lookup, marshalling, launch config, driver launch, its rest."""

    def __init__(self, parts: dict):
        self.parts = parts

    def launch(self, args, griddim, blockdim, stream, sharedmem):
        p = self.parts
        p["cufunc_lookup"]()
        p["marshal_args"]()
        p["launch_config"]()
        p["driver_launch"]()
        p["launch_frame"]()
        p["rest:kernel_launch"]()


def _parts(costs: dict, nargs: int, style: str) -> dict:
    """stage -> a no-argument function that spends that stage's cost (its sub-stages' included)."""
    spin = _spinner()

    def own(stage):
        base, per_arg = costs.get(stage, (0.0, 0.0))
        ns = int(round((base + per_arg * nargs) * 1000))
        if ns <= 0:
            return lambda: None
        return lambda: spin(ns)

    parts: dict = {}
    children = dict(stages.SUBTREE)

    def build(stage):
        if stage in parts:
            return parts[stage]
        subs = [build(s) for s in children.get(stage, ())]
        mine = own(stage)
        if not subs:
            fn = mine
        else:
            def fn(subs=tuple(subs), mine=mine):
                for s in subs:
                    s()
                mine()
        parts[stage] = fn
        return fn

    for stage in (*stages.LEAVES, *stages.SUBSTAGES, *stages.UNEXPLAINED, "configure"):
        build(stage)
    if style != "launch_config":
        parts["lc_bookkeeping"] = lambda: None
    return parts


def _loop(fn, args=None):
    clock = time.perf_counter
    if args is None:
        def loop(n):
            t0 = clock()
            for _ in range(n):
                fn()
            return clock() - t0
    else:
        def loop(n):
            t0 = clock()
            for _ in range(n):
                fn(*args)
            return clock() - t0
    return loop


def build(nargs: int, arg_kind: str = "array", costs: dict | None = None, style: str | None = None):
    """(style, loops, dispatcher, args) of one stand-in kernel with *nargs* arguments."""
    costs = parse_costs(os.environ.get(COSTS_ENV)) if costs is None else costs
    style = style or os.environ.get(STYLE_ENV) or "launch_config"
    parts = _parts(costs, nargs, style)
    kernel = Kernel(parts)
    disp = Dispatcher(parts, kernel, parts["configure"])
    cfg = disp[1, 1]
    args = tuple(object() if stages.arg_is_array(arg_kind, i) else stages.SCALAR_VALUE for i in range(nargs))
    hollow = Launch(type("_Target", (), {"call": staticmethod("".format)})(), parts["configured_call"],
                    lambda: None)
    g, b, s, sm = cfg.griddim, cfg.blockdim, cfg.stream, cfg.sharedmem
    loops = {
        stages.BASELINE: stages.empty_loop(),
        "configure": _loop(lambda: disp[1, 1]),
        "full": _loop(cfg, args),
        "full_with_configure": _loop(lambda: disp[1, 1](*args)),
        "dispatcher_call": _loop(lambda: disp.call(args, cfg)),
        "kernel_launch": _loop(lambda: kernel.launch(args, g, b, s, sm)),
        "configured_call": _loop(lambda: Launch.__call__(hollow, *args)),
    }
    loops["full"].launch = (cfg, args)  # the worker's launcher: warm-up and counts call cfg(*args) itself
    for stage in (*stages.LEAVES, *stages.SUBSTAGES):
        if stage != "configured_call" and not (stage == "lc_bookkeeping" and style != "launch_config"):
            loops[stage] = _loop(parts[stage])
    raw = parts["driver_launch"]
    bodies = {"noop": lambda: None, "configured_call": lambda: Launch.__call__(hollow, *args)}
    for stage in stages.INSITU:
        if stage not in bodies and stage in loops:
            bodies[stage] = parts[stage]
    for name, body in bodies.items():
        loops[f"{name}+launch"] = stages.insitu_loop(body, raw, lambda: None, name=f"{name}_launch")
    kl_kids = stages.parts_children("kernel_launch")
    loops.update(stages.parts_loops("kernel_launch", {c: f"part_{c}()" for c in kl_kids}, {},
                                    {f"part_{c}": parts[c] for c in kl_kids}, sync=False))
    call_parts = {c: f"part_{c}()" for c in stages.parts_children("dispatcher_call") if c != "kernel_launch"}
    if style != "launch_config":
        del call_parts["lc_bookkeeping"]
    call_parts["kernel_launch"] = "kernel.launch(args, g, b, s, sm)"
    loops.update(stages.parts_loops("dispatcher_call", call_parts, {},
                                    {"kernel": kernel, "args": args, "g": g, "b": b, "s": s, "sm": sm,
                                     **{f"part_{c}": parts[c] for c in call_parts if c != "kernel_launch"}},
                                    sync=False))
    loops.update(stages.parts_loops("full", {"configured_call": "configured(hollow, *args)",
                                             "dispatcher_call": "disp.call(args, cfg)"}, {},
                                    {"configured": Launch.__call__, "hollow": hollow, "args": args, "disp": disp,
                                     "cfg": cfg}, sync=False))
    return style, loops, disp, args


def stage_loops(nargs: int, arg_kind: str = "array"):
    """The stages workload's factory (the worker's ``target`` for stages): (style, loops)."""
    style, loops, _disp, _args = build(nargs, arg_kind)
    return style, loops
