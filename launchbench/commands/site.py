"""``launchbench site``: the asv static site with the GPU results committed under lab/results/
(launchbench.output.site builds it)."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import UserError
from ..base.outpaths import check_folder
from ..output.site import build_site


def register(sub) -> None:
    p = sub.add_parser(
        "site",
        help="build the asv static site (html/) including the GPU results committed under lab/results/",
        description="Merge every asv results directory committed under lab/results/ (or those given with "
        "--results) into asv's results directory, run `asv publish`, and make the site work offline.",
    )
    p.add_argument("--config", default="asv.conf.json", help="asv config file (default: %(default)s)")
    p.add_argument(
        "--results",
        action="append",
        metavar="DIR",
        help="an asv results directory to include (repeatable; default: every one under lab/results/)",
    )
    p.add_argument("--html-dir", help="where to write the site (default: the config's html_dir)")
    p.add_argument("--no-pull", action="store_true", help="do not update asv's clone of the repository")
    p.add_argument("--cdn", action="store_true", help="keep asv's CDN script tags instead of the shipped copies")
    p.set_defaults(func=_run)


def _run(args) -> int:
    sources = [Path(s) for s in args.results] if args.results else None
    for s in sources or []:
        if not s.is_dir():
            raise UserError(f"--results {s}: no such directory")
    if args.html_dir:
        check_folder(args.html_dir, "--html-dir", output=True)  # locked: one site build per folder
    build_site(
        Path(args.config),
        sources=sources,
        html_dir=Path(args.html_dir) if args.html_dir else None,
        pull=not args.no_pull,
        offline_assets=not args.cdn,
    )
    return 0
