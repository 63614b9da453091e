
import json, os, sys, time
sys.path.insert(0, os.getcwd())  # run from the repo root
from asv_runner.discovery import disc_benchmarks
import benchmarks.bench_lcs as bench_lcs
out = {}
try:
    bench_lcs.lcs_or_skip()
    out["lcs_or_skip"] = "runs"
except NotImplementedError as exc:
    out["lcs_or_skip"] = "skips: %s" % exc
print("lcs_or_skip:", out["lcs_or_skip"], flush=True)
for b in disc_benchmarks(os.path.join(os.getcwd(), "benchmarks"), ignore_import_errors=True):
    if not b.name.startswith("bench_lcs."):
        continue
    start = time.time()
    try:
        b.set_cache(b.do_setup_cache()) if hasattr(b, "set_cache") else b.insert_param(b.do_setup_cache())
        if b.params:
            b.set_param_idx(0)
        if b.do_setup():
            out[b.name] = {"status": "skipped", "seconds": round(time.time() - start, 1)}
            print(b.name, out[b.name], flush=True)
            continue
        b.repeat = (2, 5, 2.0)  # smoke: a few samples only
        result = b.do_run()
        b.do_teardown()
        out[b.name] = {"status": "ran", "result": result}
    except Exception as exc:  # noqa: BLE001 - reported
        out[b.name] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    out[b.name]["seconds"] = round(time.time() - start, 1)
    print(b.name, out[b.name], flush=True)
with open(sys.argv[1] + ".tmp", "w") as fh:
    json.dump(out, fh, indent=1, default=repr)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])

