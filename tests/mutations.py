"""Mutation check: each guard's tests must fail when the rule they guard is removed.

For every entry of ``MUTATIONS`` this copies the working tree to a temporary folder, replaces one
piece of the code under test there (an exact text that must occur exactly once, so a stale entry
is an error, not a silent pass), runs that entry's tests in the copy and records which failed. An
unmutated copy runs every entry's tests first: they must pass, or no catch means anything.

    python tests/mutations.py              # every entry; exit 1 if any mutation survives
    python tests/mutations.py --list       # the entries
    python tests/mutations.py -k lanes     # entries whose name holds 'lanes'

Not collected by pytest (no ``test_`` prefix). Run it with the interpreter whose tests you mean
(the C extensions built in place for it: ``python setup.py build_ext --inplace``). One entry is
one dict: adding a guard is adding a dict here.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: what the guard is; file: the code under test (relative to the repo root); old -> new: the
# mutation (old must occur exactly once); tests: pytest arguments run in the mutated copy.
MUTATIONS = [
    {
        "name": "claims: #877's branch is in _Kernel.launch at every arg count",
        "why": "counts that move elsewhere at some arg count would read as the claimed branch",
        "file": "launchbench/output/claims.py",
        "old": "    if all(fn in names for names in changed):\n",
        "new": "    if any(fn in names for names in changed):\n",
        "tests": ["tests/test_claims.py::test_claim_877_is_read_from_the_exact_counts_of_the_two_stacks"],
    },
    {
        "name": "series page: a counts step from the previous measured release",
        "why": "a refused release between two measured ones would break the chain of counts steps",
        "file": "launchbench/output/seriespage.py",
        "old": '            previous = p["sha"] if lv else previous\n',
        "new": '            previous = p["sha"]\n',
        "tests": ["tests/test_asv_series.py::"
                  "test_a_counted_series_shows_each_releases_exact_counts_step_from_the_previous_measured_one"],
    },
    {
        "name": "stack bisect: counts name only the steps whose counts moved",
        "why": "every counted step would be named, identical ones too",
        "file": "launchbench/engine/stackbisect.py",
        "old": '    moved = ["+".join(g) for g, c in usable if c.get("moved")]\n',
        "new": '    moved = ["+".join(g) for g, c in usable]\n',
        "tests": ["tests/test_releases.py::test_the_stack_bisect_says_where_the_exact_counts_change"],
    },
    {
        "name": "claims: the ubench ratio takes the exact release label before +pinned",
        "why": "a stacks run's pinned 0.30.4 would stand for the release on its newest stack",
        "file": "launchbench/output/claims.py",
        "old": "            variant[want] = (exact or pinned)[0]\n",
        "new": "            variant[want] = pinned[0]\n",
        "tests": ["tests/test_claims.py::test_the_ubench_ratio_takes_the_release_of_the_exact_label_before_its_pinned_stack"],
    },
    {
        "name": "bisect: family-wise level",
        "why": "each segment judged at the stage's confidence, not Bonferroni over the stage's segments",
        "file": "launchbench/engine/bisection.py",
        "old": "    m = len(points) - 1\n",
        "new": "    m = 1\n",
        "tests": ["tests/test_bisection.py"],
    },
    {
        "name": "bisect: family_confidence",
        "why": "family_confidence returns the per-segment level unchanged",
        "file": "launchbench/engine/bisection.py",
        "old": "    return 1.0 - (1.0 - confidence) / max(1, segments)\n",
        "new": "    return confidence\n",
        "tests": ["tests/test_bisection.py"],
    },
    {
        "name": "bisect: direction rule (either sign)",
        "why": "a segment is established when its interval excludes 0 either way",
        "file": "launchbench/engine/bisection.py",
        "old": "state = ESTABLISHED if dlo > 0 else",
        "new": "state = ESTABLISHED if (lo > 0 or hi < 0) else",
        "tests": ["tests/test_bisection.py"],
    },
    {
        "name": "bisect: direction rule (always slower)",
        "why": "the range's direction is ignored: every range is read as one that got slower",
        "file": "launchbench/engine/bisection.py",
        "old": "dlo, dhi = sorted((lo * direction, hi * direction))",
        "new": "dlo, dhi = sorted((lo, hi))",
        "tests": ["tests/test_bisection.py"],
    },
    {
        "name": "bisect: always undecided",
        "why": "a search that says 'undecided' over the whole range without measuring",
        "file": "launchbench/engine/bisection.py",
        "old": '    stages: list = []\n    skip: set = set()\n',
        "new": ('    return {"result": "undecided", "span": (0, n - 1), "reason": "r", "stages": [], '
                '"direction": None, "counts_note": "", "counts_steps": [], "hints": []}\n'
                '    stages: list = []\n    skip: set = set()\n'),
        "tests": ["tests/test_bisection.py", "-k", "planted"],
    },
    {
        "name": "cli: one-line errors",
        "why": "a user error printed on two lines",
        "file": "launchbench/cli.py",
        "old": '        print(f"launchbench: error: {exc}", file=sys.stderr)\n',
        "new": '        print(f"launchbench: error: {exc}\\nlaunchbench: see --help", file=sys.stderr)\n',
        "tests": ["tests/test_cli_sweep.py", "-k", "option_sweep"],
    },
    {
        "name": "lanes: family-wise level",
        "why": "Holm over each delta's lanes alone, not over every lane and delta of the run",
        "file": "launchbench/engine/lanes.py",
        "old": ('    adjusted = iter(holm([p for c in out for p in c["p"]]))\n    for c in out:\n'
                '        c["p_holm"] = [next(adjusted) for _ in c["p"]]\n'),
        "new": '    for c in out:\n        c["p_holm"] = holm(c["p"])\n',
        "tests": ["tests/test_lanes.py", "-k", "lane_check or holm or report"],
    },
    {
        "name": "cap interval: apply_rule",
        "why": "a precision-mode run that reached its cap gets the corrected (wider) interval too",
        "file": "launchbench/engine/analysis.py",
        "old": 'if rule.mode == "precision" and not chosen:',
        "new": 'if False:',
        "tests": ["tests/test_compare_stop.py", "tests/test_sequential.py"],
    },
    {
        "name": "cap interval: chosen_stop",
        "why": "every run's stop is taken as chosen by the data, caps included",
        "file": "launchbench/engine/sequential.py",
        "old": "    return bool(stopped_by_rule or interrupted)\n",
        "new": "    return True\n",
        "tests": ["tests/test_compare_stop.py", "tests/test_sequential.py"],
    },
    {
        "name": "cap interval: compare passes the cap",
        "why": "compare tells apply_rule that every run's stop was chosen",
        "file": "launchbench/commands/compare.py",
        "old": "rule, reference, sequential.chosen_stop(outcome.stopped_by_rule, outcome.interrupted))",
        "new": "rule, reference, True)",
        "tests": ["tests/test_compare_stop.py", "-k", "cap"],
    },
    {
        "name": "countdiff: a move between functions",
        "why": "counts moved only when a total moved: bytecodes moving from one function to another read 'no change'",
        "file": "launchbench/engine/countdiff.py",
        "old": "    counts_moved = any(totals.values()) or any(any(r[\"delta\"].values()) for r in rows)\n",
        "new": "    counts_moved = any(totals.values())\n",
        "tests": ["tests/test_counts.py"],
    },
    {
        "name": "countdiff: C callees",
        "why": "a C callee that changed (len -> sum) is not a move: the reading falls back to 'not visible'",
        "file": "launchbench/engine/countdiff.py",
        "old": "    callees_moved = any(r[\"c_callees\"] for r in rows)\n",
        "new": "    callees_moved = False\n",
        "tests": ["tests/test_counts.py", "tests/test_counts_engine.py"],
    },
    {
        "name": "series: one per project and stack",
        "why": "a document's points are grouped by project only: the stacks' series merge",
        "file": "launchbench/output/releases.py",
        "old": "            pins = tuple(sorted((point.get(\"user_pins\") or {}).items()))\n",
        "new": "            pins = ()\n",
        "tests": ["tests/test_asv_series.py"],
    },
    {
        "name": "series: refused is failed",
        "why": "a refused point is left out instead of filed as asv's failed",
        "file": "launchbench/output/asvresults.py",
        "old": "    if point.get(\"refused\"):\n        return True, None\n",
        "new": "    if point.get(\"refused\"):\n        return False, None\n",
        "tests": ["tests/test_asv_series.py"],
    },
    {
        "name": "series: the 95% interval as q_25/q_75",
        "why": "asv's quartile columns get the 99% interval",
        "file": "launchbench/output/asvresults.py",
        "old": "\"q_25\": ci95[0] * _US, \"q_75\": ci95[1] * _US",
        "new": "\"q_25\": ci99[0] * _US, \"q_75\": ci99[1] * _US",
        "tests": ["tests/test_asv_series.py"],
    },
    {
        "name": "series: one release on one stack in one document",
        "why": "two documents holding one release on one stack both write it: the second replaces the first",
        "file": "launchbench/output/asvresults.py",
        "old": "                if key in seen and seen[key] != where:\n",
        "new": "                if False:\n",
        "tests": ["tests/test_asv_series.py"],
    },
    {
        "name": "series: the ledger in version order",
        "why": "an older release is appended after a newer one",
        "file": "launchbench/environments/ledger.py",
        "old": "        if version_key(new[0]) < version_key(newest):\n",
        "new": "        if False:\n",
        "tests": ["tests/test_asv_series.py"],
    },
    {
        "name": "series: outputs checked first",
        "why": "--results-dir is not checked before the ledger is made",
        "file": "launchbench/commands/asvseries.py",
        "old": "    results_dir = outpaths.check_folder(args.results_dir, \"--results-dir\", output=True)\n",
        "new": "    results_dir = args.results_dir\n",
        "tests": ["tests/test_asv_series.py"],
    },
    {
        "name": "series: page draws measured releases only",
        "why": "refused and unmeasured releases get a place on the chart's x axis",
        "file": "launchbench/output/seriespage.py",
        "old": "    rows = [r for r in series[\"rows\"] if r[\"levels\"]]\n",
        "new": "    rows = series[\"rows\"]\n",
        "tests": ["tests/test_asv_series.py"],
    },
    {
        "name": "releases counts: counted as timed",
        "why": "the counts pass drops the timed kernels' arguments (--arg-kind): it counts another launch",
        "file": "launchbench/engine/history.py",
        "old": "        setup = {**self.worker_setup, **({\"target\": self.opts.target} if self.opts.target else {})}\n"
               "        got = commitcounts",
        "new": "        setup = {\"target\": self.opts.target} if self.opts.target else {}\n        got = commitcounts",
        "tests": ["tests/test_releases.py", "-k", "counted_once"],
    },
    {
        "name": "releases counts: the column beside the steps",
        "why": "a counted releases document renders without its counts step column",
        "file": "launchbench/output/releases.py",
        "old": "    counted = \"counts\" in doc\n",
        "new": "    counted = False\n",
        "tests": ["tests/test_releases.py", "-k", "planted or before_counts"],
    },
    {
        "name": "releases counts: unusable named",
        "why": "a point whose counting failed reads n/a with no reason anywhere",
        "file": "launchbench/commands/releases.py",
        "old": "        doc[\"counts\"][\"unusable\"] = unusable_counts(records, counts)\n",
        "new": "        doc[\"counts\"][\"unusable\"] = {}\n",
        "tests": ["tests/test_releases.py", "-k", "counting_fails"],
    },
]

IGNORE = shutil.ignore_patterns(".git", ".venv", ".venv-3.*", "build", "__pycache__", "*.egg-info", ".pytest_cache",
                                "site", ".asv", "html", "dist", ".whl*")


def copy_tree(dest: str) -> str:
    """The working tree (tracked, untracked and built files, without caches) under *dest*."""
    target = os.path.join(dest, "repo")
    shutil.copytree(ROOT, target, ignore=IGNORE, symlinks=True)
    return target


def mutate(repo: str, entry: dict) -> None:
    path = os.path.join(repo, entry["file"])
    with open(path, encoding="utf-8") as f:
        text = f.read()
    found = text.count(entry["old"])
    if found != 1:
        raise SystemExit(f"mutations: {entry['name']!r}: its text occurs {found} times in {entry['file']} "
                         "(want exactly once): update the entry")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(entry["old"], entry["new"]))


def run_tests(repo: str, args: list) -> tuple[int, list, str]:
    """(pytest's exit status, the failed test ids, the output's last line) for *args* in *repo*."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    # every named test, slow ones included (the default run leaves those out: pyproject's addopts)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rf", "-m", "slow or not slow",
                           *args],
                          cwd=repo, env=env, capture_output=True, text=True)
    failed = re.findall(r"^FAILED (\S+)", proc.stdout, re.M)
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    return proc.returncode, failed, lines[-1] if lines else proc.stderr.strip()[-200:]


def caught_by(failed: list) -> str:
    """Failed test ids, grouped by test function: 'file::test (k of its cases)'."""
    groups: dict = {}
    for tid in failed:
        groups[tid.split("[")[0]] = groups.get(tid.split("[")[0], 0) + 1
    return "; ".join(f"{k.replace('tests/', '')} ({n})" for k, n in groups.items())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", help="only entries whose name holds this text")
    ap.add_argument("--list", action="store_true", help="list the entries and exit")
    opts = ap.parse_args(argv)
    entries = [e for e in MUTATIONS if not opts.k or opts.k in e["name"]]
    if opts.list:
        for e in entries:
            print(f"{e['name']}: {e['why']} ({e['file']}; {' '.join(e['tests'])})")
        return 0
    if not entries:
        print(f"mutations: error: no entry's name holds {opts.k!r}; see --list", file=sys.stderr)
        return 2
    print(f"Python {sys.version.split()[0]}; {len(entries)} mutation(s)", flush=True)
    with tempfile.TemporaryDirectory(prefix="launchbench-mutations-") as tmp:
        repo = copy_tree(tmp)
        baseline = sorted({tuple(e["tests"]) for e in entries})
        for args in baseline:
            rc, failed, last = run_tests(repo, list(args))
            if rc != 0:
                print(f"mutations: error: the unmutated tests fail ({' '.join(args)}: {last}; {failed[:3]})",
                      file=sys.stderr)
                return 2
        print(f"unmutated: {len(baseline)} test selection(s) pass", flush=True)
        survived = []
        for e in entries:
            path = os.path.join(repo, e["file"])
            with open(path, encoding="utf-8") as f:
                original = f.read()
            mutate(repo, e)
            t0 = time.monotonic()
            try:
                rc, failed, last = run_tests(repo, e["tests"])
            finally:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(original)
            took = time.monotonic() - t0
            if rc == 0:
                survived.append(e["name"])
                verdict = f"SURVIVED ({last})"
            elif rc == 1 and failed:
                verdict = f"caught by {caught_by(failed)}"
            else:  # collection errors, crashes: the mutation broke something other than the rule
                survived.append(e["name"])
                verdict = f"NOT A CATCH: pytest exit {rc} ({last})"
            print(f"- {e['name']}: {verdict} [{took:.0f} s]", flush=True)
    print(f"{len(entries) - len(survived)} of {len(entries)} mutations caught"
          + (f"; survived: {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
