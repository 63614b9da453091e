"""``launchbench asv-series`` and ``series-page``: ``launchbench releases`` documents published, as asv results
(one series per project and stack) and as a page with a chart.

asv-series: each release of a series gets a commit of a series ledger (a small git repository, one
branch per project, one commit per release in version order), and each measured point its cost per
argument count as asv results under that commit, so ``asv publish`` graphs launch cost per release,
one graph per project and stack. Nothing is measured here: the values are the documents' own.

series-page: the same values as Markdown tables and one SVG chart beside the page, a panel per
series and a line per argument count (``launchbench.output.seriespage``).
"""
from __future__ import annotations

import os
from pathlib import Path

from ..base import outpaths
from ..base.atomic import write_text_atomic
from ..base.errors import UserError
from ..environments import ledger
from ..output import asvresults, asvtools
from ..output.documents import read_inputs
from ..output.releases import require_releases
from ..output.seriespage import render_markdown, render_svg
from ..output.site import localize_assets
from . import common_args as ca

FIX = "give launchbench releases documents"
DEFAULT_PAGE = "launchbench-series.md"

#: The config ``asv publish`` gets (its repo, branches and folders are filled in per run).
SERIES_CONFIG = {"version": 1, "project": "numba-cuda releases", "project_url": "https://pypi.org/project/numba-cuda/",
                 "dvcs": "git", "environment_type": "virtualenv"}


def register(sub) -> None:
    p = sub.add_parser("asv-series", help="file releases documents as asv results: one series per project and stack "
                                          "(asv publish graphs them)",
                       description=__doc__.split("\n\n")[1].replace("\n", " ").replace("asv-series: ", ""))
    p.add_argument("documents", nargs="+", metavar="RELEASES.json",
                   help="launchbench releases documents (.json or .json.gz)")
    p.add_argument("--ledger", required=True, metavar="DIR",
                   help="the series ledger (a git repository, created if missing; the same releases give the same "
                        "commits on every machine); the asv config is written beside it, DIR.asv.json")
    p.add_argument("--results-dir", required=True, metavar="DIR", help="asv results directory to file the values in")
    p.add_argument("--html-dir", metavar="DIR", help="asv publish's site folder (written into the config)")
    p.add_argument("--publish", action="store_true", help="then run asv publish into --html-dir (works offline)")
    p.add_argument("--machine", help="asv machine name (default: each document's host name)")
    p.set_defaults(func=run_asv_series)

    p = sub.add_parser("series-page", help="the release-series page: launch cost per release, one line per argument "
                                           "count (Markdown, and an SVG chart beside it)",
                       description=__doc__.split("\n\n")[2].replace("\n", " ").replace("series-page: ", ""))
    p.add_argument("documents", nargs="+", metavar="RELEASES.json",
                   help="launchbench releases documents (.json or .json.gz), charted in this order")
    ca.add_output(p, DEFAULT_PAGE, f"the page (default {DEFAULT_PAGE}); the chart is written beside it, .svg")
    p.set_defaults(func=run_series_page)


def run_asv_series(args) -> int:
    """Every document, name and folder checked first; then the ledger, the results, the config, publish."""
    if args.publish and args.html_dir is None:
        raise UserError("--publish needs --html-dir DIR (where asv publish writes the site)")
    if args.machine is not None and not args.machine.strip():
        raise UserError("--machine is empty; give a machine name or leave --machine out")
    named = read_inputs(args.documents, "RELEASES.json", FIX)
    ledger_dir = outpaths.check_folder(args.ledger, "--ledger", output=True)
    results_dir = outpaths.check_folder(args.results_dir, "--results-dir", output=True)
    html_dir = outpaths.check_folder(args.html_dir, "--html-dir", output=True) if args.html_dir is not None else None
    config = outpaths.check_outputs([(ledger_dir.rstrip(os.sep) + ".asv.json", "--ledger's asv config")],
                                    inputs=[(path, "RELEASES.json") for path, _doc in named])[0]
    versions = asvresults.check_releases(named, args.machine)

    commits = {project: ledger.ensure_series_ledger(ledger_dir, project, found) for project, found in versions.items()}
    written = []
    for path, doc in named:
        written += asvresults.write_releases(results_dir, doc, commits, args.machine, where=path)
        for one in asvresults.release_series(doc, path):
            measured = sum(1 for p in one["points"] if p.get("measured") and not p.get("refused"))
            refused = sum(1 for p in one["points"] if p.get("refused"))
            print(f"{one['project']} on stack {one['stack']}: {measured} releases measured, {refused} refused "
                  f"(env {one['env_name']}, from {path})")
    conf = asvtools.derive_config(SERIES_CONFIG, Path(ledger_dir).parent, repo=ledger_dir, results_dir=results_dir,
                                  html_dir=html_dir, branches=ledger.branches(ledger_dir))
    asvtools.write_asv_config(conf, config)
    print(f"launchbench: wrote {len(written)} asv results files under {results_dir}, the ledger {ledger_dir} and "
          f"{config}")
    if args.publish:
        asvtools.run_asv(asvtools.asv_command(config, "publish"))
        remote = localize_assets(Path(html_dir))
        if remote:
            print("note: these assets still load from the network: " + ", ".join(remote))
        print(f"site written to {html_dir}; view it with: python -m http.server -d {html_dir} 8080")
    else:
        print(f"publish with: asv --config {config} publish")
    return 0


def svg_path(page: str) -> str:
    """The chart beside the page: PAGE.md -> PAGE.svg."""
    return (page[:-3] if page.endswith(".md") else page) + ".svg"


def run_series_page(args) -> int:
    named = read_inputs(args.documents, "RELEASES.json", FIX)
    for path, doc in named:
        require_releases(doc, f"RELEASES.json {path!r}", FIX)
    page, chart = outpaths.check_outputs([(args.output, "--output"), (svg_path(args.output), "the chart beside --output")],
                                         inputs=[(path, "RELEASES.json") for path, _doc in named])
    docs = [doc for _path, doc in named]
    write_text_atomic(chart, render_svg(docs))
    write_text_atomic(page, render_markdown(docs, [os.path.relpath(path) for path, _doc in named],
                                            os.path.basename(chart)))
    print(f"launchbench: wrote {page} and {chart}")
    return 0
