"""Python steps of the shell recipes, one function each: `python lab/recipes/steps.py NAME ARGS...`.

Each reads its arguments from sys.argv[1:], as it did when it was a heredoc fed to `python -`. As with
`python -`, the working directory (the repository root) comes first on sys.path unless Python runs with -P
(peers_summary: it must import the launchbench installed in the measured environment).
"""
import json
import os
import sys


def wheel_so():
    """From asv_native.sh."""
    import sys
    import zipfile
    z = zipfile.ZipFile(sys.argv[1])
    name = next(n for n in z.namelist() if "cext/_dispatcher" in n and n.endswith(".so"))
    open(sys.argv[2], "wb").write(z.read(name))


def preflight_measured():
    """From asv_releases.sh."""
    import glob
    import json
    import sys
    vals = [v for p in glob.glob(sys.argv[1] + "/*/*.json") if not p.endswith("machine.json")
            for v in json.load(open(p))["results"].get("bench_launch.TimeLaunchPreconfigured.time_launch", [[]])[0]]
    sys.exit(0 if any(v is not None and v == v and v > 0 for v in vals) else 1)


def asv_releases_summary():
    """From asv_releases.sh."""
    import glob
    import itertools
    import json
    import os
    import subprocess
    import sys
    root, machine, ledger = sys.argv[1:4]
    rows = {}


    def version(sha):
        out = subprocess.run(["git", "-C", ledger, "show", f"{sha}:VERSION"], capture_output=True, text=True)
        return out.stdout.strip() or sha[:8]


    for path in glob.glob(os.path.join(root, machine, "*.json")):
        if path.endswith("machine.json"):
            continue
        data = json.load(open(path))
        res = data["results"].get("bench_launch.TimeLaunchPreconfigured.time_launch")
        if not res:
            continue
        values, params = res[0], res[1]
        label = version(data["commit_hash"])
        for (a, c), v in zip(itertools.product(*params), values):
            if v is not None and v == v:  # parameter sets not run are null/NaN
                rows.setdefault((a, c), {})[label] = v
    hashes = sorted({h for r in rows.values() for h in r}, key=lambda v: [int(x) if x.isdigit() else x for x in v.split(".")])
    print("preconfigured launch cfg(*args), median us/launch by numba-cuda release")
    print("args  config                     " + "  ".join(f"{h:>10}" for h in hashes))
    for (a, c), r in sorted(rows.items()):
        cells = ["%10.2f" % (r[h] * 1e6) if r.get(h) is not None and r[h] == r[h] else "%10s" % "n/a" for h in hashes]
        print(f"{a:<5} {c:<26} " + "  ".join(cells))


def breakdown_summary():
    """From breakdown.sh."""
    import gzip
    import json
    import os
    import shutil
    import sys
    res = sys.argv[1]
    ROWS = ["full", "configured_call", "type_dispatch", "typeof", "lc_bookkeeping", "dispatcher_frame", "cufunc_lookup",
            "marshal_args", "launch_config", "driver_launch", "param_pack", "launch_frame", "rest:full",
            "rest:dispatcher_call", "rest:kernel_launch", "remainder", "rest:insitu"]
    PER_ARG = ["type_dispatch", "typeof", "marshal_args", "marshal_extensions", "marshal_branch", "marshal_wrap",
               "marshal_imports", "marshal_view", "marshal_to_device", "marshal_fields", "marshal_convert", "marshal_pack",
               "rest:marshal_args", "param_pack", "driver_launch", "full"]
    def cell(r):
        return "-".rjust(16) if not r else f"{r['us']:+8.3f}±{(r['ci'][1] - r['ci'][0]) / 2:.3f}".rjust(16)
    for name in ("array", "scalar"):
        path = os.path.join(res, name + ".json")
        try:
            doc = json.load(open(path))
        except Exception as exc:  # noqa: BLE001
            print(f"== {name}: no results ({exc})")
            continue
        a = doc["analysis"]
        print(f"== {name} arguments: {doc['rounds_completed']} rounds ({doc.get('stopped') or 'all planned'}), "
              f"measurement {doc['timing'].get('measure_s')} s, reference {doc['reference']}")
        counts = [str(n) for n in doc["settings"]["arg_counts"]]
        show = [counts[0], counts[-1]]
        for v in doc["variants"]:
            lv = a["levels"][v["name"]]
            mech = " + " + v["mechanism"] if v.get("mechanism") else ""
            print(f"  {v['name']:6} numba-cuda {v.get('numba_cuda_version')}{mech}: "
                  f"full {lv[show[0]]['full']['us']:.2f} / {lv[show[1]]['full']['us']:.2f} us at {show[0]} / {show[1]} args")
        for var, by_n in a["stage_deltas"].items():
            print(f"  {var} - {doc['reference']} (us, ± 95% half-width):" + "".join(f"{n + ' args':>16}" for n in show))
            for row in ROWS:
                if any(by_n[n].get(row) for n in show):
                    print(f"    {row:26}" + "".join(cell(by_n[n].get(row)) for n in show))
            for n, rec in a["additivity"][var].items():
                g = rec["gap"]
                print(f"    {n} args: stages {rec['sum_of_stages']['us']:+.3f}, full {rec['full']['us']:+.3f}: "
                      + ("adds up" if rec["adds_up"]
                         else f"DOES NOT add up, gap {g['us']:+.3f} [{g['ci'][0]:+.3f}, {g['ci'][1]:+.3f}]"
                         + (f" in {', '.join(rec.get('moved', []))}" if rec.get("moved") else "")))
        print("  unexplained parts (max over arg counts; limit 0.5 us):")
        for var, parts in a["unexplained"].items():
            print("    " + f"{var:6} " + "  ".join(f"{p} {r['max_us']:+.2f}@{r['at_nargs']}{'!' if r['over_limit'] else ''}"
                                                  for p, r in parts.items()))
        cols = list(a["per_arg"])
        print("  per added argument (us):" + "".join(f"{c[:15]:>16}" for c in cols))
        for row in PER_ARG:
            if any(a["per_arg"][c].get(row) for c in cols):
                print(f"    {row:22}" + "".join(cell(a["per_arg"][c].get(row)) for c in cols))
        with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:  # the samples make it large
            shutil.copyfileobj(src, dst)
        os.unlink(path)


def compare_summary():
    """From compare.sh."""
    import json
    import os
    import sys
    res = sys.argv[1]
    def load(name):
        try:
            return json.load(open(os.path.join(res, name + ".json")))
        except Exception as exc:  # noqa: BLE001
            print(f"{name}: no results ({exc})")
            return None
    def rows(doc):
        return [(d["variant"], d["nargs"], d) for d in doc["deltas"]]
    print("== launchbench compare trust targets ==")
    doc = load("default")
    if doc:
        print(f"settings: pinned to CPUs {doc['settings']['affinity']}; {doc['settings']['repeats']} repeats x "
              f"loops {doc['settings']['loops']} per sample; method: median of paired repeat-slot differences, t over rounds")
        worst = max((d["ci_pct"][1] - d["ci_pct"][0]) / 2 for _, _, d in rows(doc))
        print(f"wall time of the measurement: {doc.get('timing', {}).get('wall_s')} s ({doc.get('timing')})")
        print(f"precision: {doc['rounds_completed']} rounds; worst CI half-width {worst:.2f}% of baseline "
              f"(target <= 1%): {'MET' if worst <= 1.0 else 'NOT MET'}")
        for v, n, d in rows(doc):
            print(f"  {n} args  {d['summary']}   ({d['delta_us']:+.2f} us)")
    doc = load("trust")
    if doc:
        d = {(r["variant"], r["nargs"]): r for r in doc["deltas"]}
        n = sorted({k[1] for k in d})
        print(f"trust run: {doc['rounds_completed']} rounds, wall {doc.get('timing', {}).get('wall_s')} s")
        aa = [d[("twin", k)] for k in n if ("twin", k) in d]
        ok = bool(aa) and all(r["ci_us"][0] <= 0 <= r["ci_us"][1] for r in aa)
        print(f"A/A (twin vs ref): CI contains 0 at all arg counts: {'MET' if ok else 'NOT MET'}")
        for r in aa:
            print(f"  {r['nargs']} args  {r['summary']}   ({r['delta_us']:+.3f} us [{r['ci_us'][0]:+.3f}, {r['ci_us'][1]:+.3f}])")
        cal = [d[("cal", k)] for k in n if ("cal", k) in d]
        ok = bool(cal) and all(abs(r["delta_us"] - 0.5) <= 0.2 for r in cal)
        print(f"sensitivity (cal vs ref): delay 0.5 us reported within +/-0.2 us at all arg counts: {'MET' if ok else 'NOT MET'}")
        for r in cal:
            print(f"  {r['nargs']} args  {r['delta_us']:+.3f} us [{r['ci_us'][0]:+.3f}, {r['ci_us'][1]:+.3f}]")


def contextvar_check():
    """From contextvar.sh."""
    import numba
    import numba_cuda
    import numpy
    from numba import cuda
    print("numba-cuda", numba_cuda.__version__, "implementation", cuda.implementation, "numba", numba.__version__,
          "numpy", numpy.__version__)
    print("device:", cuda.get_current_device().name, "cc", cuda.get_current_device().compute_capability,
          "driver", cuda.cudadrv.driver.driver.get_version(), "runtime", cuda.runtime.get_version())
    @cuda.jit
    def k(a):
        a[0] += 1
    x = cuda.to_device(numpy.zeros(1, numpy.float32))
    k[1, 1](x)
    print("kernel ran:", x.copy_to_host())


def lanes_summary():
    """From lanes.sh."""
    import json
    import os
    import sys
    res = sys.argv[1]

    def load(name):
        try:
            with open(os.path.join(res, name + ".json")) as fh:
                return json.load(fh)
        except Exception as exc:  # noqa: BLE001
            print(f"{name}: no results ({exc})")
            return None

    def lanes_line(doc):
        sec = doc.get("lanes") or {}
        per = ", ".join(f"lane {l['lane']} gpu {l['gpu']} cpu {l['affinity']}: {l['rounds_completed']} rounds"
                        for l in sec.get("lanes", []))
        differ = sec.get("lanes_differ")
        return f"  lanes: {per}; lane check: " + ("agree" if not differ else "DIFFER on " + ", ".join(differ))

    print("== lanes (issue 25) ==")
    doc = load("default")
    if doc:
        worst = max((d["ci_pct"][1] - d["ci_pct"][0]) / 2 for d in doc["deltas"])
        print(f"default three-way, 2 GPUs: {doc['rounds_completed']} rounds in {doc['timing']['wall_s']} s "
              f"(stopped: {doc.get('stopped')}); worst 95% half-width {worst:.2f}% (target <= 0.5%): "
              f"{'MET' if worst <= 0.5 else 'NOT MET'}")
        for d in doc["deltas"]:
            print(f"  {d['nargs']} args  {d['summary']}   ({d['delta_us']:+.2f} us)")
        print(lanes_line(doc))
    doc = load("trust")
    if doc:
        sec = doc.get("lanes") or {}
        print(f"trust, 2 GPUs: {doc['rounds_completed']} rounds in {doc['timing']['wall_s']} s")
        for lane in sec.get("lanes", []):
            mine = [d for d in sec.get("deltas", []) if d["lane"] == lane["lane"]]
            aa = [d for d in mine if d["variant"] == "twin"]
            cal = [d for d in mine if d["variant"] == "cal"]
            aa_ok = bool(aa) and all(d["ci_us"][0] <= 0 <= d["ci_us"][1] for d in aa)
            cal_ok = bool(cal) and all(abs(d["delta_us"] - 0.5) <= 0.2 for d in cal)
            print(f"  lane {lane['lane']} ({lane['rounds_completed']} rounds): A/A CIs contain 0: "
                  f"{'MET' if aa_ok else 'NOT MET'}; delay 0.5 us within +/-0.2: {'MET' if cal_ok else 'NOT MET'}")
            for d in aa + cal:
                print(f"    {d['variant']} {d['nargs']} args {d['delta_us']:+.3f} us "
                      f"[{d['ci_us'][0]:+.3f}, {d['ci_us'][1]:+.3f}]")
        pooled = [d for d in doc["deltas"] if d["variant"] == "twin"]
        print("  pooled A/A CIs contain 0: " + ("MET" if pooled and all(
            d["ci_us"][0] <= 0 <= d["ci_us"][1] for d in pooled) else "NOT MET"))
        print(lanes_line(doc))
    walls = {}
    for name in ("hist1", "hist2"):
        doc = load(name)
        if doc:
            per = walls[name] = doc["timing"]["wall_s"] / max(1, doc["rounds_completed"])
            print(f"history v0.29.0..v0.30.4 {name[-1]} lane(s): {doc['rounds_completed']} rounds, measurement wall "
                  f"{doc['timing']['wall_s']} s ({per:.2f} s per round; stopped: {doc.get('stopped')}), "
                  f"culprits {doc.get('culprits')}")
            if doc.get("lanes"):
                print(lanes_line(doc))
    if len(walls) == 2 and all(walls.values()):
        print(f"history speed-up 1 -> 2 lanes (seconds per round): {walls['hist1'] / walls['hist2']:.2f}x")


def mechanisms_summary():
    """From mechanisms.sh."""
    import json
    import sys
    doc = json.load(open(sys.argv[1]))
    a = doc["analysis"]
    nproc = len(doc.get("processes") or []) or 1
    wall = doc.get("timing", {}).get("wall_s", doc.get("elapsed_s", "?"))
    print(f"numba-cuda {doc['numba_cuda']} {doc['signature']}: {nproc} process(es), {doc['rounds_complete']} pair rounds"
          + f" x {doc['params']['launches']} launches in {wall} s, CPUs {doc['params'].get('affinity')}"
          + (" (INTERRUPTED)" if doc["interrupted"] else "") + f"; {doc['device'].get('name')}; {doc['schema']}")
    w = doc.get("class_writes")
    if w and w["blocks"]:
        print(f"  CUDADispatcher written before {w['class_modified']}/{w['blocks']} blocks (warm-up "
              f"{doc['params'].get('warmup_class_write')} there, {doc['params']['warmup']} after in-place switches): "
              + ", ".join(f"{s} {c['class_modified']}/{c['blocks']}" for s, c in w["by_mechanism"].items()))
    def d(x):
        return "-" if x is None else f"{x['delta_us']:+.3f} [{x['ci_us'][0]:+.3f},{x['ci_us'][1]:+.3f}]"
    print("deltas: " + ("mean over processes [95% t CI over processes]" if nproc > 1 else
                        "median of paired differences [95% order-statistic CI], one process"))
    print(f"{'args':<5}{'stock':>8} {'tls-pass':>24} {'ctxvar-stock':>24} {'ctxvar %':>9} {'delay-pass':>24}  target")
    for k, e in a["per_args"].items():
        cv = e["vs_stock"].get("contextvar")
        dl = next((v for s, v in e["vs_passthrough"].items() if s.startswith("delay")), None)
        print(f"{k:<5}{e['median_us'].get('stock', float('nan')):>8.2f} {d(e['vs_passthrough'].get('tls')):>24}"
              f" {d(cv):>24} {(cv['delta_pct'] if cv else float('nan')):>+8.1f}% {d(dl):>24}  "
              f"{e.get('tls_target', {}).get('verdict', '-')}")
    sds = [e["vs_passthrough"]["tls"].get("sd_between_processes_us") for e in a["per_args"].values()
           if "tls" in e["vs_passthrough"]]
    if nproc > 1 and sds and None not in sds:
        print("  tls-pass SD between processes: " + " ".join(f"{x:.3f}" for x in sds) + " us")
    v = a["tls_target"]["verdict"]
    print(f"target {a['tls_target']['rule']}: {v.upper()} -> {'MET' if v == 'met' else 'NOT MET'}")


def peers_summary():
    """From peers.sh."""
    import json
    import os
    import sys

    from launchbench.output.breakdown import format_breakdown
    from launchbench.output.peers import format_table
    results, env = sys.argv[1], sys.argv[2]
    for kind, fmt in (("peers", format_table), ("breakdown", format_breakdown)):
        path = os.path.join(results, f"{kind}-{env}.json")
        if not os.path.exists(path):
            print(f"[{env}] {kind}: no JSON (see {kind}-{env}.log)")
            continue
        with open(path) as fh:
            doc = json.load(fh)
        version = doc.get("versions", {}).get("numba-cuda") or doc.get("numba_cuda")
        print(f"[{env}] numba-cuda {version}")
        print(fmt(doc))
        print()


def unpack_wheel():
    """From setup_env.sh."""
    import os
    import sys
    import zipfile
    src, dst = sys.argv[1], sys.argv[2]
    with zipfile.ZipFile(dst + ".tmp", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for root, dirs, files in os.walk(src):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                z.write(path, os.path.relpath(path, src))
    os.replace(dst + ".tmp", dst)


def env_check():
    """From setup_env.sh."""
    import importlib.metadata as md

    import llvmlite
    import numba
    import numpy
    print("env ok:", "numba-cuda", md.version("numba-cuda"), "numba", numba.__version__,
          "numpy", numpy.__version__, "llvmlite", llvmlite.__version__, "cuda-core", md.version("cuda-core"))


def callees_summary():
    """counts_callees.sh: every C callee per variant and arg count with its callers, and those that changed."""
    doc = json.load(open(sys.argv[1]))
    section = doc["counts"]
    for name, per in section["variants"].items():
        for nargs, rec in per.items():
            print(f"{name}, {nargs} args ({rec['counter']}, Python {rec['python']}; reproducible: {rec['reproducible']})")
            by = {}
            for f in rec["functions"]:
                for callee, calls in (f.get("c_callees") or {}).items():
                    acc = by.setdefault(callee, [0, []])
                    acc[0] += calls
                    acc[1].append(f"{f['module']}:{f['function']}")
            for callee, (calls, callers) in sorted(by.items(), key=lambda kv: (-kv[1][0], kv[0])):
                print(f"  {calls:>6} {callee}  <- {', '.join(callers)}")
            print(f"  C calls per launch {rec['per_launch'].get('c_calls')}, named {sum(v[0] for v in by.values())}")
    for name, per in section["diffs"].items():
        for nargs, d in per.items():
            if "error" in d:
                print(f"{name} vs {section['reference']}, {nargs} args: {d['error']}")
                continue
            print(f"{name} vs {section['reference']}, {nargs} args: C callees that changed (launch):")
            for c in d["c_callees"]:
                print(f"  {c['delta']:+} {c['name']} ({c['ref']} -> {c['other']}, {c['status']})")


def spread(items: list, k: int) -> list:
    """*k* items spread evenly over *items*, both ends included (one: the last), each once."""
    if k <= 1 or len(items) <= 1:
        return items[-1:]
    return list(dict.fromkeys(items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)))


def alone_commits():
    """From asv_range.sh's alone part: DIR K -> DIR/alone.txt, K commits of DIR/every.txt spread over the range."""
    d, k = sys.argv[1], int(sys.argv[2])
    shas = open(os.path.join(d, "every.txt")).read().split()
    open(os.path.join(d, "alone.txt"), "w").write("".join(s + "\n" for s in spread(shas, k)))


def c_step(manifest: dict) -> tuple:
    """(index, predecessor's sha, sha) of a planted range's C step (plant_range.py's manifest)."""
    shas = [manifest["base"]] + [c["sha"] for c in manifest["commits"]]
    i = next(i for i, c in enumerate(manifest["commits"], start=1) if c["kind"] == "c")
    return i, shas[i - 1], shas[i]


def c_step_pair():
    """From asv_range.sh's cpair part: RANGE.json -> the C step's predecessor and the C step, a line each."""
    _i, prev, sha = c_step(json.load(open(sys.argv[1])))
    print(prev)
    print(sha)


def wheels_around_c_step(manifest: dict, plan: dict, k: int) -> list:
    """The wheels of a planted range's C step and its neighbourhood, each build once, in commit order:
    the C step's with the k - 2 distinct builds before it and the first after it (asv-plan's wheels)."""
    wheel = {c["sha"]: c["wheel"] for c in plan["commits"]}
    shas = [manifest["base"]] + [c["sha"] for c in manifest["commits"]]
    at = c_step(manifest)[0]
    order = []
    for i in range(at, -1, -1):
        if wheel[shas[i]] not in order:
            order.insert(0, wheel[shas[i]])
        if len(order) >= k - 1:
            break
    after = next((wheel[s] for s in shas[at + 1:] if wheel[s] not in order), None)
    return order + ([after] if after else [])


def prebuilt_wheels():
    """From releases.sh's prebuilt part: RANGE_DIR DEST K -> the wheels copied into DEST, their paths in order."""
    import shutil
    d, dest, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for w in wheels_around_c_step(json.load(open(os.path.join(d, "range.json"))),
                                  json.load(open(os.path.join(d, "plan.txt.json"))), k):
        shutil.copy(w, dest)
        print(os.path.join(dest, os.path.basename(w)))


STEPS = {"callees_summary": callees_summary, "wheel_so": wheel_so, "preflight_measured": preflight_measured,
         "asv_releases_summary": asv_releases_summary, "breakdown_summary": breakdown_summary,
         "compare_summary": compare_summary, "contextvar_check": contextvar_check, "lanes_summary": lanes_summary,
         "mechanisms_summary": mechanisms_summary, "peers_summary": peers_summary, "unpack_wheel": unpack_wheel,
         "env_check": env_check, "alone_commits": alone_commits, "c_step_pair": c_step_pair,
         "prebuilt_wheels": prebuilt_wheels}


def main(argv):
    if not argv or argv[0] not in STEPS:
        print("usage: steps.py {" + ",".join(sorted(STEPS)) + "} ARGS...", file=sys.stderr)
        return 2
    if not sys.flags.safe_path:
        sys.path.insert(0, os.getcwd())
    sys.argv = ["-"] + argv[1:]
    return STEPS[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
