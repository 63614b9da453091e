"""Does a hot launch take the global compiler lock? (numba-cuda-mlir #243, 0.5.0: "hot launches no
longer take the global compiler lock when a planner is registered (LC-S kernels)").

Run inside one numba-cuda-mlir environment (``python -m launchbench.workloads.lockprobe``, by
``launchbench lock-probe``); prints one JSON line. In one process, each kernel compiled and warmed first:

1. a plain kernel, before any planner is registered (the control);
2. then a planner is registered (``numba_cuda_mlir.extending.register_planner``): the LC-S fixture of
   ``lcs_mlir`` where the release has ``require_launch_config`` (0.5.0 on), else a planner that changes
   nothing (0.4.x has ``register_planner`` only: no LC-S kernel can exist there, the record says so);
3. a plain kernel and (where it exists) an LC-S kernel compiled with the planner registered.

For each kernel and each form of launch (``k[1, 1](out)``, configure included, as users write it,
and a pre-configured ``launch(out)``): another thread holds numba-cuda-mlir's
``global_compiler_lock`` (it wraps numba's own where numba is installed: holding it holds both) and the
hot launch is started; it *completes while held* when it returns before ``timeout`` seconds. Then the
lock is released and the launch must complete. The hot launch's cost is timed too (``repeats``
samples of ``loops`` launches between two synchronizes, µs per launch).

The logic takes a lock and launch callables (``held_launch``, ``hot_us``, ``probe``), so CPU tests
run it on a stand-in (``--target MODULE:FUNC``: a callable returning an object shaped like
:class:`MlirApi`). Only the standard library here; numpy and numba-cuda-mlir when the real API is built.
"""
from __future__ import annotations

import gc
import importlib
import json
import statistics
import sys
import threading
import time

from . import lcs_mlir

#: the two forms of a hot launch probed
FORMS = ("k[1, 1](out)", "launch(out)")
#: the kernels, in the order probed: key -> what it is
KERNELS = {"plain-no-planner": "plain kernel, no planner registered (control)",
           "plain-planner": "plain kernel, planner registered",
           "lcs-planner": "LC-S kernel (requires its launch config), planner registered"}
DEFAULT_TIMEOUT_S = 2.0
DEFAULT_LOOPS = 2000
DEFAULT_REPEATS = 5
#: how long a launch that blocked on the lock may take once it is released
AFTER_RELEASE_S = 60.0


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:240]


def held_launch(lock, launch, sync=lambda: None, timeout: float = DEFAULT_TIMEOUT_S,
                after: float = AFTER_RELEASE_S) -> dict:
    """Whether ``launch()`` completes while another thread holds *lock* (``acquire``/``release``).

    A launching thread first launches once unlocked (a CUDA context current in it, the kernel hot),
    then, once the holder has the lock, launches again: ``completed_while_held`` is whether that
    returned within *timeout* s; after the release it must return within *after* s
    (``completed_after_release``). A launch that raises is ``error`` (one line)."""
    ready, held, go, done, release = (threading.Event() for _ in range(5))
    got = {"error": None}

    def launcher():
        try:
            sync()  # the CUDA context current in this thread before its first launch
            launch()
            sync()
            ready.set()
            go.wait()
            launch()
            done.set()
            sync()
        except BaseException as exc:  # noqa: BLE001 - recorded, the probe goes on
            got["error"] = _line(exc)
            ready.set()
            done.set()

    def holder():
        lock.acquire()
        try:
            held.set()
            release.wait()
        finally:
            lock.release()

    t_launch = threading.Thread(target=launcher, daemon=True, name="lockprobe-launch")
    t_launch.start()
    ready.wait(after)
    if got["error"] is not None or not ready.is_set():
        return {"completed_while_held": None, "completed_after_release": None,
                "error": got["error"] or f"the unlocked warm launch took over {after} s", "timeout_s": timeout}
    t_hold = threading.Thread(target=holder, daemon=True, name="lockprobe-hold")
    t_hold.start()
    held.wait()
    go.set()
    while_held = done.wait(timeout)
    release.set()
    t_hold.join(after)
    after_release = done.wait(after)
    t_launch.join(after)
    return {"completed_while_held": bool(while_held and got["error"] is None),
            "completed_after_release": bool(after_release and got["error"] is None),
            "error": got["error"], "timeout_s": timeout}


def hot_us(launch, sync=lambda: None, loops: int = DEFAULT_LOOPS, repeats: int = DEFAULT_REPEATS,
           clock=time.perf_counter) -> list:
    """*repeats* samples of *loops* hot launches between two synchronizes, µs per launch, gc off."""
    for _ in range(min(loops, 200)):
        launch()
    sync()
    out = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            sync()
            t0 = clock()
            for _ in range(loops):
                launch()
            sync()
            out.append((clock() - t0) / loops * 1e6)
    finally:
        if enabled:
            gc.enable()
    return out


def probe(api, timeout: float = DEFAULT_TIMEOUT_S, loops: int = DEFAULT_LOOPS, repeats: int = DEFAULT_REPEATS) -> dict:
    """Every kernel *api* yields, each form: held under the lock, then timed. *api*: ``version``,
    ``lock`` (with ``lock_name``), ``planner_api`` ("lcs", "planner" or "none"), ``note`` (one line or
    None), ``sync()``, ``device()`` and ``kernels()`` yielding (key, {form: launch}, facts) -- a
    generator, so the planner is registered between the control and the rest."""
    doc = {"version": api.version, "lock": api.lock_name, "planner_api": api.planner_api, "note": api.note,
           "device": api.device(), "kernels": []}
    for key, forms, facts in api.kernels():
        rec = {"kernel": key, "label": KERNELS.get(key, key), **facts, "forms": {}}
        for form, launch in forms.items():
            got = held_launch(api.lock, launch, api.sync, timeout)
            if got["error"] is None:
                samples = hot_us(launch, api.sync, loops, repeats)
                got.update(us=statistics.median(samples), samples_us=samples)
            rec["forms"][form] = got
        doc["kernels"].append(rec)
    return doc


class MlirApi:
    """The probe's view of the installed numba-cuda-mlir (imported on construction)."""

    def __init__(self):
        import importlib.metadata as md

        from numba_cuda_mlir import cuda
        from numba_cuda_mlir.numba_cuda.core import compiler_lock

        self.cuda = cuda
        self.version = md.version("numba-cuda-mlir")
        self.lock = compiler_lock.global_compiler_lock
        self.lock_name = (f"numba_cuda_mlir.numba_cuda.core.compiler_lock.global_compiler_lock "
                          f"({type(self.lock).__name__})")
        ext = importlib.import_module("numba_cuda_mlir.extending")
        has_register = hasattr(ext, "register_planner") and hasattr(ext, "WholeFunctionPlanner")
        if has_register and hasattr(ext, "require_launch_config"):
            self.planner_api, self.note = "lcs", None
        elif has_register:
            self.planner_api = "planner"
            self.note = (f"numba-cuda-mlir {self.version} has register_planner but no require_launch_config: "
                         "no LC-S kernel exists here (a planner that changes nothing is registered instead)")
        else:
            self.planner_api = "none"
            self.note = f"numba-cuda-mlir {self.version} has no planner API (register_planner): control only"

    def sync(self):
        self.cuda.synchronize()

    def device(self) -> dict:
        try:
            dev = self.cuda.get_current_device()
            name = dev.name
            return {"name": name.decode() if isinstance(name, bytes) else str(name)}
        except Exception as exc:  # noqa: BLE001
            return {"name": None, "error": _line(exc)}

    def _forms(self, kernel, out) -> dict:
        configured = kernel[1, 1]
        return {FORMS[0]: lambda: kernel[1, 1](out), FORMS[1]: lambda: configured(out)}

    def kernels(self):
        import numpy as np

        out = self.cuda.to_device(np.zeros(lcs_mlir.PROBE_SLOTS, dtype=np.int64))
        control = lcs_mlir.make_probe("lb_lock_control", lcs=False)
        lcs_mlir.run_probe(control, (1, 1, 0))
        yield "plain-no-planner", self._forms(control, out), {}
        if self.planner_api == "none":
            return
        if self.planner_api == "lcs":
            lcs_mlir.install()
        else:
            ext = importlib.import_module("numba_cuda_mlir.extending")

            class NoChange(ext.WholeFunctionPlanner):
                def run(self) -> bool:
                    return False

            ext.register_planner(NoChange)
        plain = lcs_mlir.make_probe("lb_lock_plain", lcs=False)
        lcs_mlir.run_probe(plain, (1, 1, 0))
        yield "plain-planner", self._forms(plain, out), {}
        if self.planner_api != "lcs":
            return
        lcs = lcs_mlir.make_probe("lb_lock_lcs", lcs=True)
        got = lcs_mlir.run_probe(lcs, (1, 1, 0))
        # the planner baked this launch's config into the kernel: it is LC-S, not a plain one
        yield "lcs-planner", self._forms(lcs, out), {"baked": got == lcs_mlir.expected("lcs", 1, 1, 0)}


def load_api(target: str | None):
    """The real API, or a stand-in's: ``MODULE:FUNC`` returning an object shaped like :class:`MlirApi`."""
    if not target:
        return MlirApi()
    module, _, func = target.partition(":")
    return getattr(importlib.import_module(module), func)()


def main(argv=None) -> int:
    """``python -m launchbench.workloads.lockprobe [JSON]``: JSON holds timeout, loops, repeats and target
    (each optional; the parent, engine/lockprobe.py, writes it)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        req = json.loads(argv[0]) if argv else {}
        api = load_api(req.get("target"))
    except Exception as exc:  # noqa: BLE001 - one line for the parent
        print(json.dumps({"error": f"cannot set up the probe: {_line(exc)}"}), flush=True)
        return 1
    print(json.dumps(probe(api, float(req.get("timeout", DEFAULT_TIMEOUT_S)), int(req.get("loops", DEFAULT_LOOPS)),
                           int(req.get("repeats", DEFAULT_REPEATS)))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
