"""Summarize lab/recipes/scaling.sh's runs from their JSON: rounds per second, worst half-width, where the
set-up time goes, how much a zygote's cluster fixes (fork runs), the lanes' check and the trust run.

    python lab/recipes/scaling_summary.py DIR        (reads DIR/<run>.json or .json.gz)
"""
import gzip
import json
import os
import statistics
import sys

RUNS = ["one-fresh", "one-fork", "two-fresh", "two-fork", "four-fresh", "four-fork",
        "r10-one-fresh", "r10-one-fork"]  # r10-: the same with --repeats 10
TRUST = ["trust-fresh", "trust-fork", "trust4-fresh", "trust4-fork"]
PHASES = ["worker_setup_s", "worker_imported_s", "worker_context_s", "worker_kernels_s"]


def load(folder, name):
    for path in (os.path.join(folder, name + ".json"), os.path.join(folder, name + ".json.gz")):
        if os.path.exists(path):
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt") as fh:
                return json.load(fh)
    return None


def half_width(d):
    return (d["ci_pct"][1] - d["ci_pct"][0]) / 2


def phases(doc):
    rounds = doc["timing"].get("rounds", [])
    out = {}
    for key in PHASES:
        values = [r[key] for r in rounds if isinstance(r.get(key), (int, float))]
        if values:
            out[key.replace("worker_", "").replace("_s", "")] = statistics.median(values)
    return out


def lanes_line(doc):
    sec = doc.get("lanes") or {}
    if not sec:
        return "one lane"
    per = ", ".join(f"lane {l['lane']}: {l['rounds_completed']}" for l in sec.get("lanes", []))
    differ = sec.get("lanes_differ")
    return f"{per}; lane check: " + ("agree" if not differ else "DIFFER on " + ", ".join(map(str, differ)))


def main(folder):
    base = None
    print(f"{'run':<11} {'rounds':>6} {'wall s':>7} {'rounds/s':>8} {'x one':>6} {'worst hw %':>10}  "
          "set-up medians s (whole / import / context / kernels)")
    for name in RUNS:
        doc = load(folder, name)
        if doc is None:
            continue
        wall = doc["timing"]["wall_s"]
        rate = doc["rounds_completed"] / wall if wall else 0.0
        if name == "one-fresh":
            base = rate
        worst = max(half_width(d) for d in doc["deltas"])
        ph = phases(doc)
        ratio = f"{rate / base:.2f}" if base else "-"
        print(f"{name:<11} {doc['rounds_completed']:>6} {wall:>7.1f} {rate:>8.3f} {ratio:>6} {worst:>10.2f}  "
              + " / ".join(f"{ph.get(k, float('nan')):.2f}" for k in ("setup", "imported", "context", "kernels")))
        print(f"{'':<11} stopped: {doc.get('stopped')}; {lanes_line(doc)}")
        t, n = doc["timing"], max(1, doc["rounds_completed"])
        share = [d["noise"]["between_share"] for d in doc["deltas"] if (d.get("noise") or {}).get("between_share") is not None]
        print(f"{'':<11} per round (s, lane sums / rounds): set-up wait {t['setup_wait_s'] / n:.2f}, measure "
              f"{t['measure_s'] / n:.2f}, teardown {t['teardown_s'] / n:.2f}; between-round share of a delta's "
              f"variance: median {statistics.median(share) if share else float('nan'):.2f}")
        zyg = doc["timing"].get("zygotes") or []
        if zyg:
            imp = [z["phases_s"].get("imported") for z in zyg if z.get("phases_s", {}).get("imported")]
            comp = [z["phases_s"].get("compiled") for z in zyg if z.get("phases_s", {}).get("compiled")]
            errors = sorted({z["error"] for z in zyg if z.get("error")})
            print(f"{'':<11} zygotes: {len(zyg)}, import median {statistics.median(imp) if imp else float('nan'):.2f} s, "
                  f"warm compile median {statistics.median(comp) if comp else float('nan'):.2f} s"
                  + (f"; errors: {errors}" if errors else ""))
            icc = [d["clusters"]["icc"] for d in doc["deltas"] if d.get("clusters")]
            deff = [d["clusters"]["design_effect"] for d in doc["deltas"] if d.get("clusters")]
            if icc:
                print(f"{'':<11} clusters: icc median {statistics.median(icc):.2f} (max {max(icc):.2f}), "
                      f"design effect median {statistics.median(deff):.2f} (max {max(deff):.2f}) over "
                      f"{len(icc)} deltas")
        for d in doc["deltas"]:
            print(f"{'':<13}{d['variant']:<11} {d['nargs']} args {d['delta_us']:+.2f} us "
                  f"[{d['ci_us'][0]:+.2f}, {d['ci_us'][1]:+.2f}]  {d['delta_pct']:+.2f} % +/- {half_width(d):.2f}  "
                  f"n={d['n']} {d['units']}")
    for trust in TRUST:
        trust_run(folder, trust)
    return 0


def trust_run(folder, name):
    doc = load(folder, name)
    if doc:
        sec = doc.get("lanes") or {}
        print(f"{name}: {doc['rounds_completed']} rounds in {doc['timing']['wall_s']:.1f} s; {lanes_line(doc)}")
        groups = [(f"lane {l['lane']}", [d for d in sec.get("deltas", []) if d["lane"] == l["lane"]])
                  for l in sec.get("lanes", [])] or [("pooled", doc["deltas"])]
        groups.append(("pooled", doc["deltas"])) if sec else None
        for label, mine in groups:
            aa = [d for d in mine if d["variant"] == "twin"]
            cal = [d for d in mine if d["variant"] == "cal"]
            aa_ok = bool(aa) and all(d["ci_us"][0] <= 0 <= d["ci_us"][1] for d in aa)
            cal_ok = bool(cal) and all(abs(d["delta_us"] - 0.5) <= 0.2 for d in cal)
            print(f"  {label}: A/A intervals contain 0: {'MET' if aa_ok else 'NOT MET'}; "
                  f"0.5 us delay within +/-0.2: {'MET' if cal_ok else 'NOT MET'}")
            for d in aa + cal:
                print(f"    {d['variant']} {d['nargs']} args {d['delta_us']:+.3f} us "
                      f"[{d['ci_us'][0]:+.3f}, {d['ci_us'][1]:+.3f}]")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("LB_STEPS_DIR", "results/gpu"), "scaling")))
