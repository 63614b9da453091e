"""Summarize a lab/recipes/asv_native.sh run against issue 20's acceptance.

    python lab/recipes/analyze_asv_native.py DIR

Reads DIR/verdict-compare.txt, DIR/builds-compare.txt (asv compare tables), DIR/lbcompare.json
(launchbench compare the same hour), DIR/aa-compare.txt (A/A and delay) and DIR/walls.txt, and prints:
per [1, 1] row the asv ratio and flag next to launchbench's paired % (within 2 pp?), the A/A flags,
the delay read back against its expected normalized value (asv-releases' aa-compare.txt, and
calbuilds' samples in DIR/asv-builds, anchor-aware), where the full grid's time went (DIR/grid-results) and
whether its launch rows agree across configurations at each argument count (issue 35 item 2, with the A0
tables' precision),
the mechanism rows per reference (DIR/asv-results-mech-REF) against launchbench mechanisms the same hour
(DIR/lbmechanisms), the argument-kind rows per reference (DIR/asv-results-ak-REF) and the walls.

Where asv's per-sample result files exist (DIR/asv-builds, or the tar.gz lab/recipes/asv_native.sh packs them into),
every number comes from the samples, not from asv's rounded printout: medians over processes, and 95 %
percentile-bootstrap intervals (processes resampled with replacement, ``BOOTSTRAP`` draws, fixed seed) for
changes, calibrations and per-argument slopes.
"""
from __future__ import annotations

import glob
import gzip
import itertools
import json
import os
import random
import re
import statistics
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from launchbench.engine import stats  # noqa: E402
from launchbench.output import asvcompare  # noqa: E402
from launchbench.workloads.asvnative import normalize  # noqa: E402

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
    doc = _read(os.path.join(d, "lbcompare.json")) or _read(os.path.join(d, "lbcompare.json.gz"))
    if not doc:
        return {}
    return {x["nargs"]: x for x in json.loads(doc).get("deltas", []) if x.get("variant") == "v2"}


def _table_commits(text):
    """(before, after) commit prefixes of the first ``asv compare`` table header in *text*, or None."""
    m = re.search(r"Before \[([0-9a-f]{8})\][^|]*\|\s*After \[([0-9a-f]{8})\]", text or "")
    return m.groups() if m else None


def verdict(d, name, pair_hint):
    text = _read(os.path.join(d, name))
    if text is None:
        return
    sections = _sections(text)
    key = next((k for k in sections if pair_hint(k)), None) or next(iter(sections), None)
    rows = sections.get(key, [])
    raw = next((part for part in re.split(r"^## asv compare ", text, flags=re.M) if part.split()[:2] == list(key or ())),
               text)
    commits = _table_commits(raw)
    pairs = launch_pairs(samples_of(d), *commits) if commits else {}
    lb = _lb_deltas(d)
    source = (f"medians of the processes' samples ({', '.join(sorted({f'{len(b)}/{len(a)}' for b, a in pairs.values()}))}"
              " processes), 95 % bootstrap intervals" if pairs else "asv's rounded printout: no samples here")
    pair = " -> ".join(commits) if commits else "before -> after"
    print(f"\n== {name}: asv compare {pair} (normalized µs; {source}) vs launchbench compare (paired)")
    print(f"{'args':>4}  {'before':>8} {'after':>8} {'change [95 %]':>24} {'asv says':>13}  {'launchbench':>24}  diff pp")
    flagged, close = 0, 0
    launch = _launch_rows(rows)
    for nargs, r in launch:
        if nargs in pairs:
            before, after, pct, ci = median_change(*pairs[nargs])
            change = f"{pct:+.2f}% {_ci(ci)}"
        else:
            before, after = r.before_us or float("nan"), r.after_us or float("nan")
            pct = (after / before - 1) * 100 if r.before_us and r.after_us else float("nan")
            change = f"{pct:+.1f}% (printout)"
        x = lb.get(nargs)
        lb_txt, diff = "n/a", float("nan")
        if x:
            lb_txt = f"{x['delta_pct']:+.1f}% [{x['ci_pct'][0]:+.1f}, {x['ci_pct'][1]:+.1f}]"
            diff = pct - x["delta_pct"]
        said = r.verdict + ("" if r.significant else " (~)")
        flagged += r.verdict == "slower"
        close += abs(diff) <= 2.0
        print(f"{nargs:>4}  {before:>8.3f} {after:>8.3f} {change:>24} {said:>13}  {lb_txt:>24}  {diff:+.1f}")
    print(f"flagged slower: {flagged}/{len(launch)}; within 2 pp of launchbench: {close}/{len(launch)}")
    if len([n for n in pairs if n >= 1]) >= 2:
        fit = per_arg_slopes(pairs)
        ns = [n for n in pairs if n >= 1]
        print(f"per argument ({min(ns)}-{max(ns)} args, slope of the medians): "
              + "; ".join(f"{k} {v:+.3f} µs {_ci(ci, '+.3f')}" for k, (v, ci) in fit.items()))
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


def _result_files(results_dir, under=None):
    """(machine, asv result document) for every result file under an asv results folder, or in a tar.gz
    holding one (*under*: only its members below that folder, e.g. ``asv-builds``)."""
    def wanted(path):
        return re.fullmatch(r"[^/]+-.+\.json", os.path.basename(path)) and os.path.basename(path) != "machine.json"

    if os.path.isfile(results_dir) and results_dir.endswith(".tar.gz"):
        with tarfile.open(results_dir) as tar:
            for m in sorted(tar.getmembers(), key=lambda m: m.name):
                parts = m.name.strip("./").split("/")
                if m.isfile() and len(parts) >= 2 and wanted(m.name) and (under is None or parts[0] == under):
                    yield parts[-2], json.load(tar.extractfile(m))
        return
    for path in sorted(glob.glob(os.path.join(results_dir, "*", "*-*.json"))):
        if wanted(path):
            with open(path, encoding="utf-8") as fh:
                yield os.path.basename(os.path.dirname(path)), json.load(fh)


def result_samples(results_dir, under=None):
    """asv result files (``--record-samples``; a folder or a tar.gz of one)
    -> {(machine, commit[:8], benchmark, params): [µs, ...]}."""
    out = {}
    for machine, doc in _result_files(results_dir, under):
        commit, cols = doc["commit_hash"][:8], doc["result_columns"]
        for name, values in doc["results"].items():
            row = dict(zip(cols, values))
            combos = list(itertools.product(*row["params"])) if row.get("params") else [()]
            for combo, samples in zip(combos, row.get("samples") or []):
                if samples:
                    out[(machine, commit, name.split(".", 1)[1], combo)] = [x * 1e6 for x in samples]
    return out


def samples_of(d, sub="asv-builds"):
    """The samples of DIR/SUB, or of the DIR/*.tar.gz members under SUB/ where only the tarball came back."""
    if os.path.isdir(os.path.join(d, sub)):
        return result_samples(os.path.join(d, sub))
    out = {}
    for tar in sorted(glob.glob(os.path.join(d, "*.tar.gz"))):
        out.update(result_samples(tar, sub))
    return out


# ---------------------------------------------------------------- intervals from the samples (pure)

BOOTSTRAP = 4000


def bootstrap_ci(stat, groups, draws=BOOTSTRAP, seed=20261126, confidence=0.95):
    """95 % percentile-bootstrap interval of ``stat(*groups)``, each group (one value per process: the
    independent unit) resampled with replacement on its own."""
    rng = random.Random(seed)
    values = sorted(stat(*[rng.choices(g, k=len(g)) for g in groups]) for _ in range(draws))
    tail = (1.0 - confidence) / 2.0
    return values[int(tail * draws)], values[min(draws - 1, int((1.0 - tail) * draws))]


def median_change(before, after):
    """(median before, median after, % change of the medians, its interval)."""
    def pct(b, a):
        return 100.0 * (statistics.median(a) / statistics.median(b) - 1.0)

    return statistics.median(before), statistics.median(after), pct(before, after), bootstrap_ci(pct, [before, after])


def slope(xs, ys):
    """Least-squares slope of ys on xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def per_arg_slopes(rows):
    """µs per argument from {nargs: (before samples, after samples)} over the counts >= 1 (0 args takes another
    path): {"before"|"after"|"step": (slope of the medians, interval)}; step is after - before."""
    ns = sorted(n for n in rows if n >= 1)
    groups = [g for n in ns for g in rows[n]]

    def fit(which):
        def stat(*gs):
            meds = [statistics.median(gs[2 * i + which]) for i in range(len(ns))] if which < 2 else \
                [statistics.median(gs[2 * i + 1]) - statistics.median(gs[2 * i]) for i in range(len(ns))]
            return slope(ns, meds)
        return stat

    return {name: (fit(i)(*groups), bootstrap_ci(fit(i), groups)) for i, name in enumerate(("before", "after", "step"))}


def _ci(lo_hi, fmt="+.2f"):
    return f"[{lo_hi[0]:{fmt}}, {lo_hi[1]:{fmt}}]"


def _is_config(combo, config="'[1, 1]'"):
    """A launch row's parameters (args, config[, reference]) name *config* (older results have no reference)."""
    return len(combo) >= 2 and combo[1] == config


def launch_pairs(samples, before, after):
    """{nargs: (before samples, after samples)} of the ``[1, 1]`` launch rows of two commits (8-hex prefixes).

    Rows of one argument count pair only where both commits have them against the same ``reference``
    (the third parameter, absent in older results); two references with both commits is an error."""
    out = {}
    for (_, commit, bench, combo), values in samples.items():
        if bench == LAUNCH and _is_config(combo) and commit in (before, after):
            out.setdefault((int(combo[0]), combo[2:]), {})[commit] = values
    pairs = {}
    for (n, ref), v in sorted(out.items()):
        if before in v and after in v:
            if n in pairs:
                raise ValueError(f"{n} args: the samples hold {before} and {after} against two references; "
                                 "analyze one results folder per reference")
            pairs[n] = (v[before], v[after])
    return pairs


def _table_a0(doc):
    """{nargs: A0 of the anchor's pre-configured ``k[1, 1]``} from one A0 document: a format-2 table
    (``a0``: one A0 per argument count), a format-1 table or an older ``a0.json`` (one per kind: keys
    ``[VERSION|]MODE|NARGS|CONFIG``)."""
    if isinstance(doc.get("a0"), dict):
        return {int(n): row["a0_us"] for n, row in doc["a0"].items()}
    flat = doc.get("a0_us", doc) if isinstance(doc.get("a0_us"), dict) else doc
    out = {}
    for key, value in flat.items():
        mode, nargs, config = key.split("|")[-3:]
        if mode == "pre" and config == "[1, 1]":
            out[int(nargs)] = value
    return out


def a0_tables(d, part):
    """[(name, document)] of the anchor's A0 tables copied by lab/recipes/asv_native.sh: DIR/anchor-PART/*.table
    (and its older DIR/anchor-PART/a0.json)."""
    out = []
    for path in sorted(glob.glob(os.path.join(d, f"anchor-{part}", "*.table"))) + \
            [os.path.join(d, f"anchor-{part}", "a0.json")]:
        text = _read(path)
        if text:
            out.append((os.path.basename(path), json.loads(text)))
    return out


def anchor_a0(d, part, table_id=None):
    """The A0 per argument count (the anchor's ``k[1, 1]``) of DIR/anchor-PART's table: the one whose id is
    *table_id* (the ``A0 table`` in the rows' reference label) where given, else the only one there."""
    tables = a0_tables(d, part)
    if table_id:
        tables = [t for t in tables if t[1].get("id") == table_id] or tables
    if len(tables) > 1:
        raise ValueError(f"anchor-{part} holds {len(tables)} A0 tables ({', '.join(n for n, _ in tables)}): "
                         "name the rows' table")
    return _table_a0(tables[0][1]) if tables else {}


def table_id_of(combos):
    """The A0 table id named in the rows' ``reference`` parameter (None for older rows or other references)."""
    ids = {m.group(1) for c in combos for m in [re.search(r"A0 table ([0-9a-f]+)", " ".join(c[2:]))] if m}
    return ids.pop() if len(ids) == 1 else None


def calibration(d, delay_us=0.5, delay_commit="15286822", tolerance_us=0.2):
    """calbuilds from the samples: per argument count the delay's added µs (median after - median before)
    against what it should read: ``delay x A0 / a`` with the anchor (a: its raw µs, TimeReferenceLaunch of
    that count), ``delay x R0 / r`` with the bindings reference. The intervals resample the processes of
    all three rows, so they carry the reference's noise too."""
    samples = samples_of(d)
    rows = [k for k in samples if k[0].endswith("-cal") and k[2] == LAUNCH and _is_config(k[3])]
    if not rows:
        return
    a0 = anchor_a0(d, "calbuilds", table_id_of(k[3] for k in rows))
    print(f"\n== calibration through asv's builds ({delay_us} µs wall per launch in {delay_commit}'s processes; "
          + ("anchor A0 from the table in anchor-calbuilds/" if a0 else "bindings reference, R0")
          + "; 95 % bootstrap intervals over processes)")
    for nargs in sorted({int(k[3][0]) for k in rows}):
        by = {k[1]: samples[k] for k in rows if int(k[3][0]) == nargs}
        delayed = [c for c in by if delay_commit.startswith(c) or c.startswith(delay_commit[:8])]
        plain = [c for c in by if c not in delayed]
        refs = [x for k, v in samples.items() if k[0].endswith("-cal") and "TimeReferenceLaunch" in k[2]
                and k[3][:1] == (str(nargs if a0 else 0),) for x in v]
        if not (delayed and plain and refs):
            continue
        scale = a0.get(nargs) if a0 else normalize.REFERENCE_US["bindings"]
        before, after = by[plain[0]], by[delayed[0]]

        def added(b, a):
            return statistics.median(a) - statistics.median(b)

        def off(b, a, r):
            return added(b, a) - normalize.expected_delay_us(delay_us, scale, statistics.median(r))

        want = normalize.expected_delay_us(delay_us, scale, statistics.median(refs))
        got, off_ci = added(before, after), bootstrap_ci(off, [before, after, refs])
        inside = "interval" if -tolerance_us <= off_ci[0] and off_ci[1] <= tolerance_us else \
            "point only" if abs(got - want) <= tolerance_us else "NOT"
        print(f"  {nargs} args: {statistics.median(before):.3f} -> {statistics.median(after):.3f} µs; "
              f"added {got:+.3f} {_ci(bootstrap_ci(added, [before, after]), '+.3f')}, expected {want:.3f}, "
              f"off {got - want:+.3f} {_ci(off_ci, '+.3f')} (within ±{tolerance_us:g}: {inside})")


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
    durations = {}
    if os.path.isdir(os.path.join(d, "grid-results")):
        durations = grid_durations(os.path.join(d, "grid-results"))
    else:  # the committed form: DIR/*.tar.gz holding grid-results/
        for tar in sorted(glob.glob(os.path.join(d, "*.tar.gz"))):
            for _, doc in _result_files(tar, "grid-results"):
                for name, seconds in _durations(doc).items():
                    durations[name] = durations.get(name, 0.0) + seconds
        durations = dict(sorted(durations.items(), key=lambda kv: -kv[1]))
    if durations:
        total = sum(durations.values())
        print(f"\n== grid: {total:.0f} s in asv's recorded durations")
        for name, seconds in durations.items():
            print(f"  {seconds:7.1f} s  {100 * seconds / total:5.1f} %  {name}")
    grid_rows(d)


def _durations(doc):
    cols, out = doc["result_columns"], {}
    for name, values in doc["results"].items():
        seconds = dict(zip(cols, values)).get("duration")
        if seconds is not None:
            out[name] = seconds
    out.update(doc.get("durations") or {})
    return out


GRID_LAUNCH = ("TimeLaunchPreconfigured.time_launch", "TimeLaunchConfigurePerLaunch.time_launch")


def config_groups(samples, benchmark):
    """{(reference, nargs): {config: [µs per process]}} of one launch benchmark's rows (machines and commits
    pooled: one grid is one commit); the reference is ``()`` for rows recorded before it was a parameter."""
    out = {}
    for (_, _, bench, combo), values in samples.items():
        if bench == benchmark and len(combo) >= 2:
            out.setdefault((combo[2:], int(combo[0])), {}).setdefault(combo[1].strip("'"), []).extend(values)
    return dict(sorted(out.items()))


def pooled_spread(groups, ref):
    """(relative SD of one process's value, degrees of freedom): the process-to-process variance of every
    row of one benchmark and reference (all argument counts and configurations), pooled as one-way ANOVA
    pools it, on relative deviations from each row's mean. Why pooled: a row has 2 processes (asv's
    default), whose own spread is one degree of freedom; the run's rows share the machine and the method,
    so their spread is one quantity, estimated from all of them."""
    ss, df = 0.0, 0
    for (r, _n), rows in groups.items():
        if r != ref:
            continue
        for values in rows.values():
            if len(values) >= 2:
                m = statistics.mean(values)
                ss += sum(((x - m) / m) ** 2 for x in values)
                df += len(values) - 1
    return ((ss / df) ** 0.5, df) if df else (None, 0)


def agreement(rows, rho=None, spread=None):
    """Do the configurations of one argument count agree? -> (verdict, {config: (mean, interval)}).

    Each row's interval is the 95 % Student t interval of its mean over processes, with the process
    variance pooled over the benchmark's rows (*spread*: ``pooled_spread``'s (relative SD, df)), widened by
    its rho's 95 % interval where *rho* ({config: table entry}) has one (a row is scaled by A0(nargs) x rho:
    A0 is common to the configurations, rho is each row's own); they agree when one value lies inside
    every interval (the largest lower end is at most the smallest upper end). Without a pooled spread
    (one process per row): the bootstrap interval of the row's median."""
    def interval(config, values):
        if spread and spread[0] is not None and spread[1] > 0:
            m = statistics.mean(values)
            half = stats.t_quantile(0.975, spread[1]) * spread[0] * m / len(values) ** 0.5
            lo, hi = m - half, m + half
        else:
            m = statistics.median(values)
            lo, hi = bootstrap_ci(statistics.median, [values])
        r = (rho or {}).get(config)
        if r and r.get("ratio"):
            lo, hi = lo * r["ci95"][0] / r["ratio"], hi * r["ci95"][1] / r["ratio"]
        return m, (lo, hi)

    out = {c: interval(c, v) for c, v in rows.items()}
    lo = max(ci[0] for _, ci in out.values())
    hi = min(ci[1] for _, ci in out.values())
    return lo <= hi, out


def grid_a0(d):
    """[(name, document)] of the grid's A0 tables: DIR/anchor-grid/ and DIR/grid-results/anchor-a0/."""
    seen, out = set(), []
    for name, doc in a0_tables(d, "grid") + [
            (os.path.basename(p), json.loads(_read(p))) for p in sorted(glob.glob(
                os.path.join(d, "grid-results", "anchor-a0", "*.table")))]:
        key = doc.get("id", name)
        if key not in seen:
            seen.add(key)
            out.append((name, doc))
    return out


def grid_rows(d):
    """Issue 35 item 2's check on a grid: at each argument count, do the launch rows of all configurations
    agree within their own intervals? Anchored rows share one A0 per argument count (format-2 tables), so
    they should wherever ``launchbench compare`` says the configurations cost the same; rows scaled by one
    A0 per kind (older tables) differ by those A0s' errors too. Then each A0's precision, beside the rows'
    own process spread."""
    samples = samples_of(d, "grid-results")
    if not samples:
        return
    for benchmark in GRID_LAUNCH:
        groups = config_groups(samples, benchmark)
        if not groups:
            continue
        refs = sorted({ref for ref, _ in groups})
        mode = "cpl" if "ConfigurePerLaunch" in benchmark else "pre"
        tables = {doc.get("id"): doc for _, doc in grid_a0(d)}
        for ref in refs:
            label = ref[0].strip("'") if ref else "no reference parameter (older results)"
            ratios = tables.get(table_id_of([("", "") + ref]), {}).get("ratios", {})
            spread = pooled_spread(groups, ref)
            how = (f"means over processes, 95 % t intervals with the process spread pooled over its rows "
                   f"(relative SD {100 * spread[0]:.2f} %, df {spread[1]})" if spread[0] is not None
                   else "medians over processes, 95 % bootstrap intervals")
            print(f"\n== grid rows across configurations: {benchmark.split('.')[0]}, {label} ({how}"
                  + (", widened by each row's rho interval" if ratios else "") + ")")
            agree = 0
            counts = [(n, rows) for (r, n), rows in groups.items() if r == ref and len(rows) > 1]
            for nargs, rows in counts:
                rho = {c: ratios[f"{mode}|{nargs}|{c}"] for c in rows if f"{mode}|{nargs}|{c}" in ratios}
                ok, per_row = agreement(rows, rho, spread)
                agree += ok
                centres = [m for m, _ in per_row.values()]
                apart = 100 * (max(centres) - min(centres)) / statistics.median(centres)
                print(f"  {nargs} args: {'agree' if ok else 'DO NOT agree'} ({'means' if spread[0] is not None else 'medians'} "
                      f"{min(centres):.2f}-{max(centres):.2f} µs, {apart:.1f} % apart; processes per row "
                      f"{min(len(v) for v in rows.values())})")
                for config, (centre, ci) in per_row.items():
                    print(f"      {config:24s} {centre:8.2f} {_ci(ci, '.2f')}")
            print(f"  agree within their intervals at {agree} of {len(counts)} argument counts")
    for name, doc in grid_a0(d):
        if isinstance(doc.get("a0"), dict):
            print(f"\n== A0 table {doc.get('id')} ({name}): one A0 per argument count, {doc['precision']['a0']}")
            for n, row in sorted(doc["a0"].items(), key=lambda kv: int(kv[0])):
                if row.get("derived_from") is not None:  # format 3: A0(0) x q, q paired in the anchor server
                    lo, hi = row["ci95"]
                    half = 100 * max(row["ratio"] - lo, hi - row["ratio"]) / row["ratio"]
                    print(f"  {n} args: A0 {row['a0_us']:.3f} µs = A0({row['derived_from']}) x q {row['ratio']:.4f} "
                          f"[{lo:.4f}, {hi:.4f}] ({row['slots']} paired slots; up to {half:.1f} %)")
                    continue
                procs = ", ".join(f"{x:.2f}" for x in row["processes"])
                lo, hi = bootstrap_ci(statistics.median, [row["processes"]])
                half = 100 * max(row["a0_us"] - lo, hi - row["a0_us"]) / row["a0_us"]
                print(f"  {n} args: A0 {row['a0_us']:.3f} µs, {len(row['processes'])} processes x {row['slots']} "
                      f"slots ({procs}), spread {row['spread_pct']:.1f} %; 95 % interval of the median "
                      f"[{lo:.2f}, {hi:.2f}] (up to {half:.1f} %)")
            rhos = [r for r in doc.get("ratios", {}).values() if not r.get("base") and r.get("slots")]
            if rhos:
                widths = [100 * (r["ci95"][1] - r["ci95"][0]) / r["ratio"] for r in rhos]
                print(f"  rho: {len(rhos)} kinds, 95 % interval widths {min(widths):.1f}-{max(widths):.1f} % "
                      f"(median {statistics.median(widths):.1f} %)")
        else:
            per = {}
            for key, value in (doc.get("a0_us") if isinstance(doc.get("a0_us"), dict) else doc).items():
                mode, nargs, _ = key.split("|")[-3:]
                per.setdefault((mode, int(nargs)), []).append(value)
            print(f"\n== A0 table {name}: one A0 per kind, each measured once (no precision recorded); "
                  "the A0s of one argument count's configurations span")
            for (mode, nargs), values in sorted(per.items()):
                print(f"  {mode} {nargs} args: {min(values):.2f}-{max(values):.2f} µs "
                      f"({100 * (max(values) - min(values)) / statistics.median(values):.0f} % of their median)")
    spreads = [_apart(v) for bench in GRID_LAUNCH for rows in config_groups(samples, bench).values()
               for v in rows.values() if len(v) > 1]
    if spreads:
        print(f"  the launch rows' own process spread ((max - min) / median): median {100 * statistics.median(spreads):.1f} %"
              f", {100 * min(spreads):.1f}-{100 * max(spreads):.1f} %")
    for bench in GRID_LAUNCH:  # what an A0's interval is up against: a row's own, from the pooled spread
        groups = config_groups(samples, bench)
        for ref in sorted({r for r, _ in groups}):
            sd, df = pooled_spread(groups, ref)
            if sd is not None:
                k = min(len(v) for (r, _n), rows in groups.items() if r == ref for v in rows.values())
                print(f"  {bench.split('.')[0]}: a row's own 95 % interval is +/- "
                      f"{100 * stats.t_quantile(0.975, df) * sd / k ** 0.5:.1f} % ({k} processes, pooled SD "
                      f"{100 * sd:.2f} %, df {df}): rows of different argument counts compare only as far as "
                      "their A0 intervals are narrower than that (format 3 tables: q's intervals)")


MECHANISM = "TimeMechanismLaunch.time_launch"

#: A mechanism cost as asv's rows give it (minuend, subtrahend) and as launchbench mechanisms' paired
#: analysis does (its baseline, its mechanism, sign).
MECHANISM_COSTS = {
    "passthrough-stock": (("passthrough", "stock"), ("vs_passthrough", "stock", -1)),
    "tls-passthrough": (("tls", "passthrough"), ("vs_passthrough", "tls", 1)),
    "contextvar-stock": (("contextvar", "stock"), ("vs_stock", "contextvar", 1)),
    "delay-passthrough": (("delay:0.5us", "passthrough"), ("vs_passthrough", "delay:500ns", 1)),
}


def benchmark_rows(results_dir, benchmark, width=None):
    """{parameters: [µs per process, ...]} of one benchmark in an asv results folder, its parameters
    read back from asv's reprs (``'stock'`` -> stock, ``26`` -> 26), every machine and commit pooled;
    *width*: only the first parameters (the ``reference`` parameter of newer rows dropped: one folder
    holds one reference)."""
    out = {}
    for (_, _, bench, combo), values in result_samples(results_dir).items():
        if bench == benchmark:
            key = tuple(int(x) if x.isdigit() else x.strip("'") for x in combo[:width])
            out.setdefault(key, []).extend(values)
    return out


def mechanism_rows(results_dir):
    """{(mechanism, nargs): [µs per process, ...]} of TimeMechanismLaunch in one asv results folder."""
    return benchmark_rows(results_dir, MECHANISM, 2)


def _apart(values):
    """How far one row's processes lie apart: (max - min) / median."""

    return (max(values) - min(values)) / statistics.median(values)


def _per_reference(d, tag, benchmark, what):
    """(reference, rows) for each DIR/asv-results-TAG-REF folder with rows, after a header line naming
    the rows' process spread."""

    for folder in sorted(glob.glob(os.path.join(d, f"asv-results-{tag}-*"))):
        rows = {"mech": mechanism_rows, "ak": argkind_rows}[tag](folder) if os.path.isdir(folder) else {}
        if not rows:
            continue
        ref, s = folder.rsplit("-", 1)[1], spread(rows)
        print(f"\n== {what}, reference {ref}: {len(rows)} rows"
              + (f", process spread {100 * s:.1f} % (median over rows)" if s is not None else ""))
        yield ref, rows


def mechanism_costs(rows):
    """{cost name: {nargs: (µs, % of the subtrahend)}} from the rows' medians over processes (asv's value)."""

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
    return benchmark_rows(results_dir, ARGKIND, 3)


def spread(rows):
    """How far a row's processes lie apart, the median over rows with 2+ processes (None: no such row)."""

    values = [_apart(v) for v in rows.values() if len(v) > 1]
    return statistics.median(values) if values else None


def argkinds(d):
    """Per reference: each row's median and process spread, and µs per argument ((26 - 1) / 25 args) with its
    bootstrap interval over processes."""

    for _, rows in _per_reference(d, "ak", ARGKIND, "argument-kind rows"):
        for kind, dispatch in sorted({(k, dsp) for k, _, dsp in rows}):
            one, many = rows.get((kind, 1, dispatch)), rows.get((kind, 26, dispatch))
            if not (one and many):
                continue
            m1, m26 = statistics.median(one), statistics.median(many)
            apart = [100 * _apart(v) for v in (one, many) if len(v) > 1]
            per_arg = bootstrap_ci(lambda a, b: (statistics.median(b) - statistics.median(a)) / 25, [one, many])
            print(f"  {kind:5s} {dispatch:5s} 1 arg {m1:8.2f} µs  26 args {m26:8.2f} µs  per arg {(m26 - m1) / 25:6.2f} µs "
                  f"{_ci(per_arg)}" + (f"  processes apart {' / '.join(f'{x:.1f}' for x in apart)} %" if apart else ""))


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
    verdict(d, "aabuilds-compare.txt", lambda k: True)
    verdict(d, "calbuilds-compare.txt", lambda k: True)
    aa(d)
    calibration(d)
    grid(d)
    mechanisms(d)
    argkinds(d)
    walls(d)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
