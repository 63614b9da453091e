"""How many fresh processes per second can a host give a CUDA context (issue 34, docs/scaling.md)?

A lane's round needs one fresh worker per variant, and each worker creates a CUDA context. If the
driver serialises part of context creation across the host, that part caps rounds per second for
all lanes together, however many GPUs there are. This probe measures it without numba-cuda: each
child is a bare interpreter (``python -S``) that calls libcuda through ctypes (cuInit, primary
context, one 1 MiB allocation) and exits; N streams each start children back to back for T seconds.

    python lab/recipes/ctx_probe.py OUT.json [T_SECONDS]

Every configuration reports children per second (host-wide), and the medians of each phase:
init (cuInit), context (cuDevicePrimaryCtxRetain + cuCtxSetCurrent), alloc (first cuMemAlloc),
exit (from the child's last mark to its reaping: the driver tearing the context down) and wall.
Configurations: 1, 4 streams on GPU 0; 4, 12, 24 streams spread one GPU each round-robin
(CUDA_VISIBLE_DEVICES); 12 spread with CUDA_DEVICE_MAX_CONNECTIONS=1; 12 spread while a keeper
process holds a context on every GPU; 12 spread with every GPU visible to every child.
"""
import json
import os
import statistics
import subprocess
import sys
import threading
import time

CHILD = r"""
import ctypes, json, sys, time
t0 = time.monotonic()
cu = ctypes.CDLL("libcuda.so.1")
def check(rc, what):
    if rc:
        print(json.dumps({"error": f"{what} -> {rc}"})); sys.exit(1)
check(cu.cuInit(0), "cuInit"); t1 = time.monotonic()
dev = ctypes.c_int(); ctx = ctypes.c_void_p()
check(cu.cuDeviceGet(ctypes.byref(dev), int(sys.argv[1])), "cuDeviceGet")
check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
check(cu.cuCtxSetCurrent(ctx), "setcurrent"); t2 = time.monotonic()
ptr = ctypes.c_uint64()
check(cu.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20), "alloc"); t3 = time.monotonic()
if len(sys.argv) > 2:  # keeper: hold the context until stdin closes
    print("ready", flush=True); sys.stdin.read(); sys.exit(0)
print(json.dumps({"t0": t0, "init": t1 - t0, "context": t2 - t1, "alloc": t3 - t2, "done": t3}), flush=True)
"""


def n_gpus() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def stream(k: int, gpus: int, spread: str, env: dict, seconds: float, out: list, errors: list):
    """Start children back to back on this stream's GPU until *seconds* have passed."""
    gpu = k % gpus if spread != "gpu0" else 0
    e = dict(env)
    if spread == "all-visible":
        index = gpu
        e.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        index = 0
        e["CUDA_VISIBLE_DEVICES"] = str(gpu)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        p = subprocess.run([sys.executable, "-S", "-c", CHILD, str(index)], capture_output=True, text=True, env=e)
        reaped = time.monotonic()
        try:
            rec = json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            rec = {"error": (p.stderr or p.stdout).strip()[-200:]}
        if "error" in rec:
            errors.append(rec["error"])
            continue
        rec.update(gpu=gpu, spawn=rec["t0"] - start, exit=reaped - rec["done"], wall=reaped - start, end=reaped)
        out.append(rec)


def keepers(gpus: int, env: dict) -> list:
    procs = []
    for g in range(gpus):
        e = dict(env, CUDA_VISIBLE_DEVICES=str(g))
        p = subprocess.Popen([sys.executable, "-S", "-c", CHILD, "0", "keep"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=e)
        p.stdout.readline()
        procs.append(p)
    return procs


def config(name: str, n: int, spread: str, gpus: int, seconds: float, extra_env=None, keep=False) -> dict:
    env = dict(os.environ, **(extra_env or {}))
    held = keepers(gpus, env) if keep else []
    recs, errors = [], []
    threads = [threading.Thread(target=stream, args=(k, gpus, spread, env, seconds, recs, errors))
               for k in range(n)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    span = time.monotonic() - t0
    for p in held:
        p.stdin.close()
        p.wait()
    med = {ph: round(statistics.median(r[ph] for r in recs), 4) if recs else None
           for ph in ("spawn", "init", "context", "alloc", "exit", "wall")}
    row = {"name": name, "streams": n, "spread": spread, "env": extra_env or {}, "keepers": keep,
           "children": len(recs), "seconds": round(span, 2), "per_s": round(len(recs) / span, 2),
           "median_s": med, "errors": errors[:3], "n_errors": len(errors)}
    print(f"{name:22s} streams {n:2d}  children {len(recs):4d}  {row['per_s']:6.2f}/s  "
          + "  ".join(f"{k} {v}" for k, v in med.items()), flush=True)
    return row


def main(argv):
    path = argv[0]
    seconds = float(argv[1]) if len(argv) > 1 else 6.0
    gpus = n_gpus()
    if gpus < 1:
        sys.exit("ctx_probe: no GPU listed by nvidia-smi -L; run it on the GPU machine")
    plan = [("one-gpu0", 1, "gpu0", None, False),
            ("four-gpu0", 4, "gpu0", None, False),
            ("four-spread", 4, "spread", None, False),
            ("twelve-spread", 12, "spread", None, False),
            ("twentyfour-spread", 24, "spread", None, False),
            ("twelve-maxconn1", 12, "spread", {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}, False),
            ("twelve-keepers", 12, "spread", None, True),
            ("one-gpu0-keepers", 1, "gpu0", None, True),
            ("twelve-all-visible", 12, "all-visible", None, False)]
    rows = [config(name, min(n, 64), spread, gpus, seconds, env, keep) for name, n, spread, env, keep in plan]
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,persistence_mode",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip().splitlines()
    doc = {"what": "fresh processes per second that get a CUDA context (lab/recipes/ctx_probe.py)", "gpus": smi,
           "cpus": os.cpu_count(), "seconds_per_config": seconds, "configs": rows}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


if __name__ == "__main__":
    main(sys.argv[1:])
