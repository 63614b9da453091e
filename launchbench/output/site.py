"""``launchbench site``: the asv static site, committed GPU results included.

Why a command and not plain ``asv publish``: asv only publishes what is in
its own results directory, and nobody without a GPU has GPU results there.
The GPU results are committed under ``results/`` as ordinary asv results
directories; this command merges them into the configured results
directory, runs ``asv publish``, and rewrites the site's CDN script tags to
files we ship, so the site also works offline (air-gapped GPU hosts, CI).

asv is imported lazily and publish runs as a subprocess (``python -m asv``)
so ``launchbench --help`` stays instant.
"""
from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..base import atomic
from ..base.errors import UserError
from ..environments import ledger
from .asvtools import derive_config, load_config, write_asv_config

#: Where the site's third-party JavaScript/CSS lives inside the package.
VENDOR_SOURCE = Path(__file__).with_name("asv_vendor")
#: Folder name inside the published site that receives those files.
VENDOR_DEST = "launchbench-vendor"

#: asv 0.6's index.html loads these from CDNs; key = last URL path segment.
CDN_FILES = {
    "jquery-3.3.1.min.js": "jquery-3.3.1.min.js",
    "jquery.flot.min.js": "jquery.flot.js",
    "jquery.flot.time.min.js": "jquery.flot.time.js",
    "jquery.flot.selection.min.js": "jquery.flot.selection.js",
    "jquery.flot.categories.min.js": "jquery.flot.categories.js",
    "jquery.flot.orderBars.js": "jquery.flot.orderBars.js",
    "stupidtable.min.js": "stupidtable.min.js",
    "md5.min.js": "md5.min.js",
    "bootstrap.min.js": "bootstrap.min.js",
    "bootstrap.min.css": "bootstrap.min.css",
}

_TAG = re.compile(
    r"<(?P<kind>script|link)\b(?P<attrs>[^>]*?)\b(?P<attr>src|href)=\"(?P<url>https?://[^\"]+)\"(?P<rest>[^>]*)>",
    re.IGNORECASE,
)


@dataclass
class MergeSummary:
    """What merging one committed results directory did, file by file."""

    copied: list[str] = field(default_factory=list)
    identical: list[str] = field(default_factory=list)
    kept_local: list[str] = field(default_factory=list)
    benchmarks_added: int = 0

    def line(self, source: Path) -> str:
        return (
            f"{source}: {len(self.copied)} copied, {len(self.identical)} already present, "
            f"{len(self.kept_local)} kept local (differs), {self.benchmarks_added} benchmark definitions added"
        )


def is_results_dir(path: Path) -> bool:
    """An asv results directory: benchmarks.json beside per-machine folders."""
    return (path / "benchmarks.json").is_file() and any(path.glob("*/machine.json"))


def find_committed_results(root: Path) -> list[Path]:
    """Every asv results directory committed under ``root`` (sorted, so merges are repeatable)."""
    if not root.is_dir():
        return []
    found = {p.parent for p in root.rglob("benchmarks.json") if is_results_dir(p.parent)}
    return sorted(found)


def _write_json_atomic(path: Path, data) -> None:
    atomic.write_json_atomic(path, data, indent=4, sort_keys=True)


def merge_results(source: Path, dest: Path) -> MergeSummary:
    """Copy one asv results directory into another without losing anything.

    Result files are named ``<machine>/<commit>-<env>.json``, so committed
    GPU results and a user's local results do not collide unless the same
    machine name ran the same commit; then the local (newer) file is kept.
    benchmarks.json is merged as a union: publish drops results whose
    benchmark it does not know.
    """
    if not is_results_dir(source):
        raise UserError(
            f"{source} is not an asv results directory (it needs benchmarks.json and "
            "<machine>/machine.json); pass the folder that asv's results_dir points to"
        )
    dest.mkdir(parents=True, exist_ok=True)
    summary = MergeSummary()
    for machine_json in sorted(source.glob("*/machine.json")):
        for src_file in sorted(machine_json.parent.glob("*.json")):
            rel = src_file.relative_to(source)
            target = dest / rel
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(target.name + ".tmp")
                shutil.copyfile(src_file, tmp)
                os.replace(tmp, target)
                summary.copied.append(str(rel))
            elif filecmp.cmp(src_file, target, shallow=False):
                summary.identical.append(str(rel))
            else:
                summary.kept_local.append(str(rel))
    summary.benchmarks_added = _merge_benchmarks_json(source / "benchmarks.json", dest / "benchmarks.json")
    return summary


def _merge_benchmarks_json(src: Path, dest: Path) -> int:
    incoming = json.loads(src.read_text(encoding="utf-8"))
    if not dest.exists():
        _write_json_atomic(dest, incoming)
        return sum(1 for k in incoming if k != "version")
    current = json.loads(dest.read_text(encoding="utf-8"))
    if current.get("version") != incoming.get("version"):
        raise UserError(
            f"{src} has benchmarks.json version {incoming.get('version')} but {dest} has "
            f"{current.get('version')}; re-run asv with the asv version pinned in pyproject.toml"
        )
    added = [k for k in incoming if k not in current]
    if added:
        current.update({k: incoming[k] for k in added})
        _write_json_atomic(dest, current)
    return len(added)


def localize_assets(html_dir: Path) -> list[str]:
    """Point the site's CDN tags at shipped copies; return URLs left remote.

    Subresource-integrity attributes are dropped with the URL: the npm
    builds we ship are not byte-identical to the CDN's minified files.
    """
    dest = html_dir / VENDOR_DEST
    dest.mkdir(exist_ok=True)
    remote: list[str] = []

    def swap(match: re.Match) -> str:
        url = match.group("url")
        local = CDN_FILES.get(url.rsplit("/", 1)[-1])
        if local is None or not (VENDOR_SOURCE / local).is_file():
            if match.group("kind").lower() == "script" or "stylesheet" in match.group(0):
                remote.append(url)
            return match.group(0)
        shutil.copyfile(VENDOR_SOURCE / local, dest / local)
        keep = " ".join(
            part
            for part in re.findall(r"[\w-]+(?:=\"[^\"]*\")?", match.group("attrs") + " " + match.group("rest"))
            if not re.match(r"(integrity|crossorigin|referrerpolicy)\b", part, re.IGNORECASE)
        )
        keep = f" {keep}" if keep else ""
        return f"<{match.group('kind')}{keep} {match.group('attr')}=\"{VENDOR_DEST}/{local}\">"

    for page in sorted(html_dir.glob("*.html")):
        text = page.read_text(encoding="utf-8")
        new = _TAG.sub(swap, text)
        if new != text:
            atomic.write_text_atomic(page, new)
    return remote


def load_asv_config(config: Path):
    """asv's own view of the config (paths resolved relative to the file)."""
    if not config.is_file():
        raise UserError(f"asv config {config} not found; run from the launchbench checkout or pass --config PATH")
    from asv.config import Config

    try:
        return Config.load(str(config))
    except Exception as exc:  # noqa: BLE001 - asv raises its own UserError types
        raise UserError(f"cannot read asv config {config}: {' '.join(str(exc).split())[:200]}") from None


def publish(config: Path, html_dir: Path | None = None, pull: bool = True) -> None:
    """Run ``asv publish`` for ``config``; a failure is one line with asv's last words."""
    cmd = [sys.executable, "-m", "asv", "publish", "--config", str(config)]
    if html_dir is not None:
        cmd += ["--html-dir", str(html_dir)]
    if not pull:
        cmd.append("--no-pull")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = " | ".join(line.strip() for line in (proc.stdout + proc.stderr).strip().splitlines()[-3:])
        raise UserError(
            f"asv publish failed (exit {proc.returncode}): {tail[:300]}; check that asv.conf.json's repo "
            "holds the results' commits (a local numba-cuda clone works offline)"
        )


#: The releases ``launchbench asv-releases`` measures by default (its ledger branches).
DEFAULT_RELEASES = {"baseline": "0.29.0", "v2": "0.30.4"}
LEDGER_MANIFEST = "ledger.json"


def result_commits(results_dir: Path) -> set[str]:
    """Commit hashes of every result file in an asv results directory."""
    commits = set()
    for path in results_dir.glob("*/*.json"):
        if path.name != "machine.json":
            commits.add(json.loads(path.read_text(encoding="utf-8"))["commit_hash"])
    return commits


def write_ledger_manifest(results_dir: Path, branches: dict) -> Path:
    """Record which releases (and branch names) a results directory was measured against.

    Results of released wheels are filed under commits of a release ledger
    (:mod:`launchbench.environments.ledger`) that exists only where they were measured;
    the ledger is deterministic, so this manifest is all another machine
    needs to rebuild it and publish the results.
    """
    path = Path(results_dir) / LEDGER_MANIFEST
    _write_json_atomic(path, {"branches": dict(branches), "versions": sorted(set(branches.values()))})
    return path


def release_ledger(results_dir: Path, workdir: Path):
    """(ledger path, branches) that holds this directory's commits, or None.

    Reads ``ledger.json`` when present, else tries asv-releases' default
    branches; the rebuilt ledger is used only if it contains every commit.
    """
    manifest = results_dir / LEDGER_MANIFEST
    if manifest.is_file():
        data = json.loads(manifest.read_text(encoding="utf-8"))
        branches, versions = data["branches"], data.get("versions") or sorted(set(data["branches"].values()))
    else:
        branches, versions = dict(DEFAULT_RELEASES), sorted(set(DEFAULT_RELEASES.values()))
    key = "-".join(sorted(versions, key=ledger.version_key))
    path = workdir / f"ledger-{key}"
    commits = ledger.ensure_ledger(path, versions, branches)
    if result_commits(results_dir) <= set(commits.values()):
        return path, branches
    if manifest.is_file():
        raise UserError(f"{manifest} does not match the results' commits; regenerate the results with "
                        "`launchbench asv-releases` or fix the manifest")
    return None


def build_site(
    config: Path,
    sources: list[Path] | None = None,
    html_dir: Path | None = None,
    pull: bool = True,
    offline_assets: bool = True,
    echo=print,
) -> Path:
    """Merge committed results, publish, localize assets; return the site folder.

    One asv site shows one repository's history. Results of released wheels
    (filed under a release ledger's commits) are published against a
    rebuilt ledger, from a scratch results directory so the user's own
    results stay untouched; other results are merged into the config's
    results directory and published against the config's repository.
    """
    config = Path(config).resolve()
    conf = load_asv_config(config)
    # asv resolves the config's relative paths against the config's folder.
    conf_results = (config.parent / conf.results_dir).resolve()
    if sources is None:
        sources = find_committed_results(config.parent / "lab" / "results")
    out = Path(html_dir).resolve() if html_dir else (config.parent / conf.html_dir).resolve()
    workdir = conf_results.parent / "site"
    releases, per_commit = [], []
    for source in map(lambda p: Path(p).resolve(), sources):
        if not is_results_dir(source):
            raise UserError(f"{source} is not an asv results directory (it needs benchmarks.json and "
                            "<machine>/machine.json); pass the folder asv's results_dir points to")
        found = release_ledger(source, workdir)
        (releases if found else per_commit).append((source, found))
    if releases:
        ledgers = {str(found[0]) for _, found in releases}
        if len(ledgers) > 1:
            raise UserError("the committed release results use different ledgers (" + ", ".join(sorted(ledgers))
                            + "); pass the ones to publish with --results DIR")
        ledger_path, branches = releases[0][1]
        results_dir = workdir / "results"
        if results_dir.exists():
            shutil.rmtree(results_dir)
        for source, _ in releases:
            echo(merge_results(source, results_dir).line(source))
        site_conf = derive_config(load_config(config), config.parent, repo=str(ledger_path),
                                  results_dir=results_dir, html_dir=out, branches=list(branches),
                                  extra={"project": "numba-cuda releases",
                                         "show_commit_url": "https://pypi.org/project/numba-cuda/"})
        publish_config = write_asv_config(site_conf, workdir / "site.asv.json")
        pull = False  # a local ledger: nothing to pull
        for source, _ in per_commit:
            echo(f"note: {source} holds per-commit results (not released wheels); publish those with "
                 f"`launchbench site --results {source}`")
    else:
        results_dir = conf_results
        for source, _ in per_commit:
            if source != results_dir:
                echo(merge_results(source, results_dir).line(source))
        publish_config = config
    if not (results_dir / "benchmarks.json").is_file():
        raise UserError(
            f"no asv results in {results_dir} and none committed under {config.parent / 'results'}; "
            "run `asv run` first or pass --results DIR"
        )
    publish(publish_config, out, pull=pull)
    if offline_assets:
        remote = localize_assets(out)
        if remote:
            echo("note: these assets still load from the network: " + ", ".join(remote))
    echo(f"site written to {out}; view it with: python -m http.server -d {out} 8080 (then open http://127.0.0.1:8080)")
    return out
