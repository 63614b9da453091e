"""Summarize a gpu/asv_native.sh run against issue 20's acceptance.

    python gpu/analyze_asv_native.py DIR

Reads DIR/verdict-compare.txt, DIR/builds-compare.txt (asv compare tables), DIR/lbcompare.json
(launchbench compare the same hour), DIR/aa-compare.txt (A/A and delay) and DIR/walls.txt, and prints:
per [1, 1] row the asv ratio and flag next to launchbench's paired % (within 2 pp?), the A/A flags,
the delay read back against its expected normalized value (asv-releases' aa-compare.txt, and
calbuilds' samples in DIR/asv-builds, anchor-aware), where the full grid's time went (DIR/grid-results),
the mechanism rows per reference (DIR/asv-results-mech-REF) against launchbench mechanisms the same hour
(DIR/lbmechanisms), the argument-kind rows per reference (DIR/asv-results-ak-REF) and the walls.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchmarks import normalize  # noqa: E402
from launchbench.output import asvcompare  # noqa: E402

LAUNCH = "TimeLaunchPreconfigured.time_launch"


def _read(path):
    if not os.path.exists(path):
        return None
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return fh.read()


def _sections(text):
    """``## asv compare A B`` sections of an asv-releases --compare-output file -> {(A, B): rows}."""
    out = {}
    for part in re.split(r"^## asv compare ", text or "", flags=re.M)[1:]:
        head, _, body = part.partition("\n")
        a, b = head.split()[:2]
        out[(a, b)] = asvcompare.parse_table(body)
    if not out and text:
        out[("before", "after")] = asvcompare.parse_table(text)
    return out


def _launch_rows(rows):
    return sorted((asvcompare.args_of(r.benchmark), r) for r in rows
                  if LAUNCH in r.benchmark and "'[1, 1]'" in r.benchmark)


def _lb_deltas(d):
    doc = _read(os.path.join(d, "lbcompare.json"))
    if not doc:
        return {}
    return {x["nargs"]: x for x in json.loads(doc).get("deltas", []) if x.get("variant") == "v2"}


def verdict(d, name, pair_hint):
    text = _read(os.path.join(d, name))
    if text is None:
        return
    sections = _sections(text)
    rows = next((v for k, v in sections.items() if pair_hint(k)), None) or next(iter(sections.values()), [])
    lb = _lb_deltas(d)
    print(f"\n== {name}: asv compare 0.29.0 -> 0.30.4 (normalized µs) vs launchbench compare (paired)")
    print(f"{'args':>4}  {'asv before':>10} {'asv after':>10} {'ratio':>7} {'asv says':>13}  {'launchbench':>24}  diff pp")
    flagged, close = 0, 0
    launch = _launch_rows(rows)
    for nargs, r in launch:
        asv_pct = (r.ratio - 1) * 100 if r.ratio else float("nan")
        x = lb.get(nargs)
        lb_txt, diff = "n/a", float("nan")
        if x:
            lb_txt = f"{x['delta_pct']:+.1f}% [{x['ci_pct'][0]:+.1f}, {x['ci_pct'][1]:+.1f}]"
            if r.before_us and r.after_us:
                diff = (r.after_us / r.before_us - 1) * 100 - x["delta_pct"]
        said = r.verdict + ("" if r.significant else " (~)")
        flagged += r.verdict == "slower"
        close += abs(diff) <= 2.0
        print(f"{nargs:>4}  {r.before_us or float('nan'):>10.2f} {r.after_us or float('nan'):>10.2f} "
              f"{asv_pct:>+6.1f}% {said:>13}  {lb_txt:>24}  {diff:+.1f}")
    print(f"flagged slower: {flagged}/{len(launch)}; within 2 pp of launchbench: {close}/{len(launch)}")
    for r in rows:
        if "TimeReferenceLaunch" in r.benchmark or "TimeLaunchRaw" in r.benchmark:
            print(f"  {r.benchmark.split('.', 1)[1]}: {r.before_us} -> {r.after_us} µs ({r.verdict}, ratio {r.ratio})")


def aa(d):
    text = _read(os.path.join(d, "aa-compare.txt"))
    if text is None:
        return
    sections = _sections(text)
    for (a, b), rows in sections.items():
        print(f"\n== {a} vs {b}")
        refs = {asvcompare.args_of(r.benchmark) or 0: r.before_us for r in rows if "TimeReferenceLaunch" in r.benchmark}
        r0 = normalize.REFERENCE_US["bindings"]
        for nargs, r in _launch_rows(rows):
            line = f"  {nargs} args: {r.before_us} -> {r.after_us} µs, ratio {r.ratio}, asv says {r.verdict}"
            ref_us = refs.get(nargs, refs.get(0))
            if "delay" in b and r.before_us and r.after_us:
                added = r.after_us - r.before_us
                want = normalize.expected_delay_us(0.5, r0, ref_us) if ref_us else 0.5
                line += f"; added {added:+.2f} µs, expected {want:.2f} (0.5 µs wall x R0/ref), off {added - want:+.2f}"
            print(line)
        flags = [r for r in rows if r.verdict in ("slower", "faster")]
        print(f"  flagged: {len(flags)} of {len(rows)} rows")


def _result_files(results_dir):
    """(machine, asv result document) for every result file under an asv results folder."""
    import glob

    for path in sorted(glob.glob(os.path.join(results_dir, "*", "*-*.json"))):
        if os.path.basename(path) == "machine.json":
            continue
        with open(path, encoding="utf-8") as fh:
            yield os.path.basename(os.path.dirname(path)), json.load(fh)


def result_samples(results_dir):
    """asv result files (``--record-samples``) -> {(machine, commit[:8], benchmark, params): [µs, ...]}."""
    import itertools

    out = {}
    for machine, doc in _result_files(results_dir):
        commit, cols = doc["commit_hash"][:8], doc["result_columns"]
        for name, values in doc["results"].items():
            row = dict(zip(cols, values))
            combos = list(itertools.product(*row["params"])) if row.get("params") else [()]
            for combo, samples in zip(combos, row.get("samples") or []):
                if samples:
                    out[(machine, commit, name.split(".", 1)[1], combo)] = [x * 1e6 for x in samples]
    return out


def anchor_a0(d, part):
    """The anchor's A0 table copied by gpu/asv_native.sh (DIR/anchor-PART/a0.json), keyed by argument count."""
    text = _read(os.path.join(d, f"anchor-{part}", "a0.json"))
    if not text:
        return {}
    return {int(k.split("|")[2]): v for k, v in json.loads(text).items() if k.split("|")[1:4:2] == ["pre", "[1, 1]"]}


def calibration(d, delay_us=0.5, delay_commit="15286822"):
    """calbuilds from the samples: per argument count the delay's added µs (median after - median before)
    against what it should read: ``delay x A0 / a`` with the anchor (a: its raw µs, TimeReferenceLaunch of
    that count), ``delay x R0 / r`` with the bindings reference."""
    import statistics

    samples = result_samples(os.path.join(d, "asv-builds"))
    rows = [k for k in samples if k[0].endswith("-cal") and k[2] == LAUNCH and k[3][1:] == ("'[1, 1]'",)]
    if not rows:
        return
    a0 = anchor_a0(d, "calbuilds")
    print(f"\n== calibration through asv's builds ({delay_us} µs wall per launch in {delay_commit}'s processes; "
          + ("anchor A0 from anchor-calbuilds/a0.json)" if a0 else "bindings reference, R0)"))
    for nargs in sorted({int(k[3][0]) for k in rows}):
        by = {k[1]: statistics.median(v) for k, v in samples.items() if k in rows and int(k[3][0]) == nargs}
        delayed = [c for c in by if delay_commit.startswith(c) or c.startswith(delay_commit[:8])]
        plain = [c for c in by if c not in delayed]
        refs = [x for k, v in samples.items() if k[0].endswith("-cal") and "TimeReferenceLaunch" in k[2]
                and k[3] == (str(nargs if a0 else 0),) for x in v]
        if not (delayed and plain and refs):
            continue
        scale = a0.get(nargs) if a0 else normalize.REFERENCE_US["bindings"]
        added = by[delayed[0]] - by[plain[0]]
        want = normalize.expected_delay_us(delay_us, scale, statistics.median(refs))
        print(f"  {nargs} args: {by[plain[0]]:.3f} -> {by[delayed[0]]:.3f} µs; added {added:+.3f}, expected {want:.3f}, "
              f"off {added - want:+.3f}" + (" (within ±0.2)" if abs(added - want) <= 0.2 else " (NOT within ±0.2)"))


def grid_durations(results_dir):
    """Where a grid's wall went, from asv's own result files: {benchmark or <setup_cache ...>: seconds}.

    asv records each benchmark's duration summed over its rounds and processes, and the setup_cache
    and build times under ``durations``; sorted longest first.
    """
    out = {}
    for _, doc in _result_files(results_dir):
        cols = doc["result_columns"]
        for name, values in doc["results"].items():
            seconds = dict(zip(cols, values)).get("duration")
            if seconds is not None:
                out[name] = out.get(name, 0.0) + seconds
        for name, seconds in (doc.get("durations") or {}).items():
            out[name] = out.get(name, 0.0) + seconds
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def grid(d):
    durations = grid_durations(os.path.join(d, "grid-results"))
    if durations:
        total = sum(durations.values())
        print(f"\n== grid: {total:.0f} s in asv's recorded durations")
        for name, seconds in durations.items():
            print(f"  {seconds:7.1f} s  {100 * seconds / total:5.1f} %  {name}")


MECHANISM = "TimeMechanismLaunch.time_launch"

#: A mechanism cost as asv's rows give it (minuend, subtrahend) and as launchbench mechanisms' paired
#: analysis does (its baseline, its mechanism, sign).
MECHANISM_COSTS = {
    "passthrough-stock": (("passthrough", "stock"), ("vs_passthrough", "stock", -1)),
    "tls-passthrough": (("tls", "passthrough"), ("vs_passthrough", "tls", 1)),
    "contextvar-stock": (("contextvar", "stock"), ("vs_stock", "contextvar", 1)),
    "delay-passthrough": (("delay:0.5us", "passthrough"), ("vs_passthrough", "delay:500ns", 1)),
}


def benchmark_rows(results_dir, benchmark):
    """{parameters: [µs per process, ...]} of one benchmark in an asv results folder, its parameters
    read back from asv's reprs (``'stock'`` -> stock, ``26`` -> 26), every machine and commit pooled."""
    out = {}
    for (_, _, bench, combo), values in result_samples(results_dir).items():
        if bench == benchmark:
            key = tuple(int(x) if x.isdigit() else x.strip("'") for x in combo)
            out.setdefault(key, []).extend(values)
    return out


def mechanism_rows(results_dir):
    """{(mechanism, nargs): [µs per process, ...]} of TimeMechanismLaunch in one asv results folder."""
    return benchmark_rows(results_dir, MECHANISM)


def _apart(values):
    """How far one row's processes lie apart: (max - min) / median."""
    import statistics

    return (max(values) - min(values)) / statistics.median(values)


def _per_reference(d, tag, benchmark, what):
    """(reference, rows) for each DIR/asv-results-TAG-REF folder with rows, after a header line naming
    the rows' process spread."""
    import glob

    for folder in sorted(glob.glob(os.path.join(d, f"asv-results-{tag}-*"))):
        rows = benchmark_rows(folder, benchmark) if os.path.isdir(folder) else {}
        if not rows:
            continue
        ref, s = folder.rsplit("-", 1)[1], spread(rows)
        print(f"\n== {what}, reference {ref}: {len(rows)} rows"
              + (f", process spread {100 * s:.1f} % (median over rows)" if s is not None else ""))
        yield ref, rows


def mechanism_costs(rows):
    """{cost name: {nargs: (µs, % of the subtrahend)}} from the rows' medians over processes (asv's value)."""
    import statistics

    med = {k: statistics.median(v) for k, v in rows.items()}
    out = {}
    for name, ((a, b), _) in MECHANISM_COSTS.items():
        out[name] = {n: (med[(a, n)] - med[(b, n)], 100 * (med[(a, n)] / med[(b, n)] - 1))
                     for (m, n) in med if m == a and (b, n) in med}
    return out


def lb_mechanism_costs(path):
    """The same costs from launchbench mechanisms' JSON: paired deltas (mean over processes), µs and %."""
    text = _read(path)
    if not text:
        return {}
    per_args = json.loads(text)["analysis"]["per_args"]
    out = {}
    for name, (_, (base, mech, sign)) in MECHANISM_COSTS.items():
        out[name] = {}
        for n, row in per_args.items():
            if mech in row.get(base, {}):
                delta = row[base][mech]
                out[name][int(n)] = (sign * delta["delta_us"], sign * delta["delta_pct"])
    return out


def mechanisms(d):
    """Per reference: each mechanism cost by argument count in µs and in % next to launchbench mechanisms'
    (the % is scale-free: a normalized row reads in the reference's µs, not this machine's), and how far a
    row's processes lie apart ((max - min) / median, the median over rows)."""
    path = os.path.join(d, "lbmechanisms", "mechanisms-030.json")
    lb = lb_mechanism_costs(path if os.path.exists(path) else path + ".gz")
    for _, rows in _per_reference(d, "mech", MECHANISM, "mechanism rows"):
        for name, by_n in mechanism_costs(rows).items():
            ref = lb.get(name, {})
            for unit, i in (("µs", 0), ("%", 1)):
                line = "  ".join(f"{n}: {by_n[n][i]:+.2f}" + (f" ({ref[n][i]:+.2f})" if n in ref else "")
                                 for n in sorted(by_n))
                off = [abs(by_n[n][i] - ref[n][i]) for n in by_n if n in ref]
                print(f"  {name:18s} {unit:2s} {line}" + (f"   worst off {max(off):.2f}" if off else ""))
    if lb:
        print("  (in parentheses: launchbench mechanisms the same hour, paired)")


ARGKIND = "TimeArgKindLaunch.time_launch"


def argkind_rows(results_dir):
    """{(kind, nargs, dispatch): [µs per process, ...]} of TimeArgKindLaunch in one asv results folder."""
    return benchmark_rows(results_dir, ARGKIND)


def spread(rows):
    """How far a row's processes lie apart, the median over rows with 2+ processes (None: no such row)."""
    import statistics

    values = [_apart(v) for v in rows.values() if len(v) > 1]
    return statistics.median(values) if values else None


def argkinds(d):
    """Per reference: each row's median and process spread, and µs per argument ((26 - 1) / 25 args)."""
    import statistics

    for _, rows in _per_reference(d, "ak", ARGKIND, "argument-kind rows"):
        for kind, dispatch in sorted({(k, dsp) for k, _, dsp in rows}):
            one, many = rows.get((kind, 1, dispatch)), rows.get((kind, 26, dispatch))
            if not (one and many):
                continue
            m1, m26 = statistics.median(one), statistics.median(many)
            apart = [100 * _apart(v) for v in (one, many) if len(v) > 1]
            print(f"  {kind:5s} {dispatch:5s} 1 arg {m1:8.2f} µs  26 args {m26:8.2f} µs  per arg {(m26 - m1) / 25:6.2f} µs"
                  + (f"  processes apart {' / '.join(f'{x:.1f}' for x in apart)} %" if apart else ""))


def walls(d):
    text = _read(os.path.join(d, "walls.txt"))
    if text:
        print("\n== walls\n" + text.strip())
        w = dict(re.findall(r"^(cost-\S+) rc=\d+ wall=([0-9.]+)s", text, flags=re.M))
        for method in ("forkserver", "spawn"):
            a, b = w.get(f"cost-{method}-r2"), w.get(f"cost-{method}-r12")
            if a and b:
                print(f"per process ({method}): {(float(b) - float(a)) / 10:.2f} s (rounds 12 - rounds 2, / 10)")


def main(d):
    verdict(d, "verdict-compare.txt", lambda k: k == ("baseline", "v2"))
    verdict(d, "builds-compare.txt", lambda k: True)
    aa(d)
    calibration(d)
    grid(d)
    mechanisms(d)
    argkinds(d)
    walls(d)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
