"""Which CPU, when busy, changes the speed of a loop timed on the measuring CPU?

A VM may hide SMT siblings (lscpu: one thread per core) and its host may switch a lone busy
vCPU between speed states; this prints the loop time with a busy loop on each other CPU,
relative to none. Usage: python3 lab/recipes/cpu_probe.py [MEASURING_CPU]
"""
import os
import subprocess
import sys
import time

M = int(sys.argv[1]) if len(sys.argv) > 1 else max(os.sched_getaffinity(0))
os.sched_setaffinity(0, {M})


def loop():
    t = time.perf_counter()
    x = 0
    for i in range(300000):
        x += i
    return time.perf_counter() - t


def med(n=15):
    return sorted(loop() for _ in range(n))[n // 2]


spin = "import os,sys; os.sched_setaffinity(0,{int(sys.argv[1])})\nwhile True: pass"
base = med()
res = {}
for k in sorted(os.sched_getaffinity(0) | set(range(os.cpu_count()))):
    if k == M:
        continue
    p = subprocess.Popen([sys.executable, "-c", spin, str(k)])
    time.sleep(0.15)
    res[k] = med() / base
    p.kill()
    p.wait()
    time.sleep(0.05)
procs = [subprocess.Popen([sys.executable, "-c", spin, str(k)]) for k in res]
time.sleep(0.3)
allbusy = med() / base
for p in procs:
    p.kill()
    p.wait()
base2 = med()
print("measuring CPU", M, "idle loop %.2f ms / %.2f ms" % (base * 1e3, base2 * 1e3))
print(" ".join("%d:%.2f" % (k, v) for k, v in res.items()))
print("all others busy: %.2f" % allbusy)
