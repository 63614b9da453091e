"""Which commit-independent reference cancels the VM's speed state best, and what a process costs.

Issue 20 (native asv): an asv process of a launch benchmark gives one value; to make it
comparable between commits measured in different processes, each numba-cuda sample is
divided by an adjacent sample of a *reference* launch taken in the same process. This probe
measures, for numba-cuda 0.29.0 and 0.30.4 in alternating fresh processes, raw samples of
``k[1, 1](*args)`` at 0 and 4 device-array args next to samples of four references:

- ``bind0``/``bind4``: a Python loop over ``cuda.bindings.driver.cuLaunchKernel`` (0 / 4 pointer args)
- ``core0``/``core4``: cuda.core's ``launch()`` (launchbench.workloads.peers.make_cuda_core)
- ``floor0``: launchbench's C loop over ``cuLaunchKernel`` (no Python per launch)
- ``cupy0``: CuPy ``RawKernel`` (when CuPy imports)

and the phases of each process (spawn, import, CUDA context, kernel compile or cache load,
warm-up). ``fork`` mode measures the per-process cost when numba-cuda is imported once in a
parent and children are forked (asv's forkserver), kernels loaded from numba's disk cache.

    python lab/recipes/asv_reference_probe.py spawn --env A=$LB_ENV029/bin/python --env B=$LB_ENV030/bin/python \
        --processes 16 --out DIR
    $LB_ENV030/bin/python lab/recipes/asv_reference_probe.py fork --children 8 --out DIR

Each child prints one JSON line; the parent writes ``spawn.jsonl`` / ``fork-<tag>.jsonl``.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS_SRC = '''
from numba import cuda

@cuda.jit(cache=True)
def k0():
    pass

@cuda.jit(cache=True)
def k4(a0, a1, a2, a3):
    pass
'''
LAUNCHERS = ("numba0", "numba4", "bind0", "bind4", "core0", "core4", "floor0", "cupy0")


def _kernel_module(cache_root: str):
    """Import the cached kernels from a file in *cache_root* (numba caches file-defined functions)."""
    os.makedirs(cache_root, exist_ok=True)
    path = os.path.join(cache_root, "lb_probe_kernels.py")
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as fh:
            fh.write(KERNELS_SRC)
        os.replace(path + ".tmp", path)
    sys.path.insert(0, cache_root)
    import lb_probe_kernels  # noqa: E402

    return lb_probe_kernels


def _bindings_launcher(nargs: int):
    from cuda.bindings import driver as drv

    from launchbench.workloads import peers

    ptx = peers.device_ptx().encode()
    err, module = drv.cuModuleLoadData(ptx)
    assert int(err) == 0, err
    err, func = drv.cuModuleGetFunction(module, peers.kernel_name(nargs).encode())
    assert int(err) == 0, err
    ptrs = []
    for _ in range(nargs):
        err, ptr = drv.cuMemAlloc(4)
        assert int(err) == 0, err
        ptrs.append(ptr)
    if nargs:
        import ctypes

        values = [ctypes.c_uint64(int(p)) for p in ptrs]
        addrs = (ctypes.c_void_p * nargs)(*[ctypes.addressof(v) for v in values])
        params = ctypes.addressof(addrs)
    else:
        values, addrs, params = [], None, 0
    launch, sync, clock = drv.cuLaunchKernel, drv.cuCtxSynchronize, time.perf_counter

    def run(n):
        t0 = clock()
        for _ in range(n):
            launch(func, 1, 1, 1, 1, 1, 1, 0, 0, params, 0)
        sync()
        return clock() - t0

    run.keepalive = (module, ptrs, values, addrs)
    return run


def _numba_launcher(kernel, nargs: int):
    import numpy as np
    from numba import cuda

    args = [cuda.to_device(np.zeros(1, dtype=np.float32)) for _ in range(nargs)]
    cfg = kernel[1, 1]
    clock, sync = time.perf_counter, cuda.synchronize

    def run(n):
        t0 = clock()
        for _ in range(n):
            cfg(*args)
        sync()
        return clock() - t0

    run.keepalive = args
    return run


def child(args) -> dict:
    t_start = time.perf_counter()
    out = {"pid": os.getpid(), "mode": args.mode, "phases": {}}
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    if args.mode == "spawn":
        t = time.perf_counter()
        from numba import cuda  # noqa: F401

        out["phases"]["import"] = time.perf_counter() - t
    import numba
    from numba import cuda

    out["numba_cuda"] = _version("numba-cuda")
    out["numba"] = numba.__version__
    t = time.perf_counter()
    cuda.current_context()
    out["phases"]["context"] = time.perf_counter() - t
    t = time.perf_counter()
    mod = _kernel_module(args.cache_root)
    runs = {"numba0": _numba_launcher(mod.k0, 0), "numba4": _numba_launcher(mod.k4, 4)}
    runs["numba0"](1)
    runs["numba4"](1)
    out["phases"]["kernels"] = time.perf_counter() - t
    t = time.perf_counter()
    from launchbench.workloads import peers

    for name, make in (("bind0", lambda: _bindings_launcher(0)), ("bind4", lambda: _bindings_launcher(4)),
                       ("core0", lambda: peers.make_cuda_core(0)), ("core4", lambda: peers.make_cuda_core(4)),
                       ("floor0", lambda: peers.make_floor(0)), ("cupy0", lambda: peers.make_cupy(0))):
        try:
            runs[name] = make()
            runs[name](1)
        except Exception as exc:  # noqa: BLE001 - a missing reference is reported
            out.setdefault("unavailable", {})[name] = f"{type(exc).__name__}: {exc}"[:200]
    out["phases"]["references"] = time.perf_counter() - t
    t = time.perf_counter()
    for run in runs.values():
        run(args.warmup)
    out["phases"]["warmup"] = time.perf_counter() - t
    # calibrate: loops per sample for ~target_ms
    loops = {}
    for name, run in runs.items():
        n = 16
        while True:
            s = run(n)
            if s >= args.target_ms / 1e3 / 2 or n > 1 << 20:
                loops[name] = max(8, int(n * (args.target_ms / 1e3) / max(s, 1e-9)))
                break
            n *= 2
    out["loops"] = loops
    names = [n for n in LAUNCHERS if n in runs]
    samples = {n: [] for n in names}
    t = time.perf_counter()
    gc.disable()
    try:
        for slot in range(args.slots):
            order = names[slot % len(names):] + names[:slot % len(names)]
            if slot % 2:
                order.reverse()
            for name in order:
                samples[name].append(runs[name](loops[name]) / loops[name] * 1e6)
    finally:
        gc.enable()
    out["phases"]["measure"] = time.perf_counter() - t
    out["phases"]["child_total"] = time.perf_counter() - t_start
    out["samples_us"] = samples
    return out


def _version(dist: str):
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001
        return None


def spawn(args) -> None:
    envs = [tuple(e.split("=", 1)) for e in args.env]
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "spawn.jsonl")
    with open(path, "a") as fh:
        for i in range(args.processes):
            for tag, python in (envs if i % 2 == 0 else envs[::-1]):
                env = dict(os.environ, NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS="0", PYTHONPATH=os.path.dirname(HERE))
                env.pop("NUMBA_ENABLE_CUDASIM", None)
                cmd = [python, os.path.abspath(__file__), "child", "--mode", "spawn",
                       "--cache-root", os.path.join(args.cache_dir, tag), "--slots", str(args.slots),
                       "--target-ms", str(args.target_ms), "--warmup", str(args.warmup)]
                env["NUMBA_CACHE_DIR"] = os.path.join(args.cache_dir, tag, "numba-cache")
                t = time.perf_counter()
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
                wall = time.perf_counter() - t
                try:
                    rec = json.loads(proc.stdout.strip().splitlines()[-1])
                except (IndexError, ValueError):
                    rec = {"error": (proc.stderr or proc.stdout)[-800:]}
                rec.update({"env": tag, "index": i, "wall": wall, "rc": proc.returncode})
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
                print(f"{tag} #{i}: wall {wall:.2f} s " + " ".join(
                    f"{k}={v:.2f}" for k, v in rec.get("phases", {}).items()) + (" ERROR" if "error" in rec else ""),
                    flush=True)


def fork(args) -> None:
    """numba-cuda imported here, CUDA untouched; each child forked, as asv's forkserver does."""
    os.makedirs(args.out, exist_ok=True)
    tag = args.tag
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(args.cache_dir, tag, "numba-cache")
    os.environ["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
    t = time.perf_counter()
    from numba import cuda  # noqa: F401

    import launchbench.workloads.peers  # noqa: F401

    import_s = time.perf_counter() - t
    path = os.path.join(args.out, f"fork-{tag}.jsonl")
    with open(path, "a") as fh:
        for i in range(args.children):
            r, w = os.pipe()
            t = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    args.mode = "fork"
                    rec = child(args)
                except BaseException as exc:  # noqa: BLE001
                    rec = {"error": f"{type(exc).__name__}: {exc}"}
                os.write(w, json.dumps(rec).encode())
                os.close(w)
                os._exit(0)
            os.close(w)
            data = b""
            while True:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                data += chunk
            os.close(r)
            os.waitpid(pid, 0)
            wall = time.perf_counter() - t
            rec = json.loads(data or b"{}")
            rec.update({"env": tag, "index": i, "wall": wall, "parent_import_s": import_s})
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            print(f"fork {tag} #{i}: wall {wall:.2f} s " + " ".join(
                f"{k}={v:.2f}" for k, v in rec.get("phases", {}).items()) + (" ERROR " + rec["error"] if "error" in rec else ""),
                flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("spawn", "fork", "child"):
        s = sub.add_parser(name)
        s.add_argument("--slots", type=int, default=40)
        s.add_argument("--target-ms", type=float, default=1.0)
        s.add_argument("--warmup", type=int, default=200)
        s.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "lb-probe-cache"))
        s.add_argument("--cache-root", default=None)
        s.add_argument("--out", default=".")
        s.add_argument("--mode", default="spawn")
    sub.choices["spawn"].add_argument("--env", action="append", required=True, metavar="TAG=PYTHON")
    sub.choices["spawn"].add_argument("--processes", type=int, default=16)
    sub.choices["fork"].add_argument("--children", type=int, default=8)
    sub.choices["fork"].add_argument("--tag", default="fork")
    args = p.parse_args()
    if args.cmd == "child":
        print(json.dumps(child(args)), flush=True)
    elif args.cmd == "spawn":
        spawn(args)
    else:
        args.cache_root = args.cache_root or os.path.join(args.cache_dir, args.tag)
        fork(args)


if __name__ == "__main__":
    main()
