"""Score a bisect JSON against lab/recipes/plant_range.py's manifest: which planted Python-level steps the
counts located exactly, any counts step that was not planted, each planted step's timed size where
a stage timed it alone, and whether the culprit (or the 'undecided' span) names a planted step. Prints one line per step and
a summary line.

    python lab/recipes/score_bisect.py BISECT.json[.gz] MANIFEST.json
"""
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def main(argv) -> int:
    doc, manifest = load(argv[0]), load(argv[1])
    planted = {s["sha"]: s for s in manifest["steps"]}
    decoys = {d["sha"]: d for d in manifest.get("decoys", [])}
    index = {c["sha"]: c["index"] for c in manifest["commits"]}
    found = {s["commit"]: s for s in (doc.get("counts") or {}).get("steps", [])}
    python_steps = [s for s in manifest["steps"] if s["kind"] == "python"]
    index[manifest["base"]] = 0
    timed = {}  # planted sha -> the last timed segment ending at it that holds no other planted step
    for st in doc.get("stages", []):
        for seg in (st.get("decision") or {}).get("segments", []):
            inside = [x for x in manifest["steps"] if index.get(seg["previous"], -1) < x["index"] <= index.get(seg["commit"], -1)]
            if len(inside) == 1 and inside[0]["sha"] == seg["commit"]:
                timed[seg["commit"]] = seg
    hits = 0
    for s in manifest["steps"]:
        got = found.get(s["sha"])
        if s["kind"] == "python":
            hits += bool(got)
        per = got and (got.get("per_launch") or ((got.get("per_nargs") or {}).get("0") or {}).get("per_launch"))
        what = (f"counts step found, per launch {per}" if got else
                "no counts step" + (" (C level: as expected)" if s["kind"] == "c" else ": MISSED"))
        seg = timed.get(s["sha"])
        if seg:
            lo, hi = seg["ci_us"]
            ci = "[unbounded]" if lo is None or hi is None else f"[{lo:+.2f}, {hi:+.2f}]"
            what += f"; timed {seg['mean_us']:+.2f} us {ci} over {seg['rounds']} rounds ({seg['state']})"
        print(f"commit {s['index']:3d} {s['sha'][:10]} {s['kind']:6s} planted +{s['bytecodes']} bytecodes "
              f"+{s['calls']} calls spin {s['spin']}: {what}")
    for d in manifest.get("decoys", []):
        print(f"commit {d['index']:3d} {d['sha'][:10]} {d['kind']:8s} decoy: "
              + ("counts step found (+2 bytecodes: expected)" if d["sha"] in found else "no counts step"))
    extra = [c for c in found if c not in planted and c not in decoys]
    for c in extra:
        print(f"counts step at {c[:10]} (commit {index.get(c)}) was NOT planted")
    culprit = (doc.get("culprit") or {}).get("sha")
    verdict = "none"
    if culprit:
        s = planted.get(culprit)
        d = decoys.get(culprit)
        verdict = (f"culprit commit {index.get(culprit)} = planted {s['kind']} step" if s else
                   f"culprit commit {index.get(culprit)} is a {d['kind']} DECOY (WRONG)" if d else
                   f"culprit commit {index.get(culprit)} is NOT a planted step (WRONG)")
    elif doc.get("undecided"):
        a, b = doc["undecided"]["between"]
        inside = [s for s in manifest["steps"] if index.get(a, -1) < s["index"] <= index.get(b, 10**9)]
        verdict = (f"undecided between commits {index.get(a)} and {index.get(b)}, holding "
                   f"{len(inside)} planted step(s)" + ("" if inside else " (WRONG: no step inside)"))
    print(f"SUMMARY: {hits}/{len(python_steps)} Python-level steps located by counts, {len(extra)} unplanted counts "
          f"steps, {len(decoys)} decoys; {verdict}; result: {doc.get('result')}; gpu_seconds {doc.get('gpu_seconds')}, "
          f"count_seconds {doc.get('count_seconds')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
