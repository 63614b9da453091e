"""``launchbench report``: Markdown, self-contained HTML and a PNG from a compare JSON
(launchbench.output.report renders them)."""
from __future__ import annotations

from ..output import schema
from ..output.report import default_outputs, export


def register(sub) -> None:
    p = sub.add_parser(
        "report",
        help="render a compare results JSON as Markdown, self-contained HTML and a PNG plot",
        description="Render `launchbench compare` JSON. With no output options, writes <name>.md, "
        "<name>.html and <name>.png next to <name>.json (regenerates a committed reference report).",
    )
    p.add_argument("results", help="results JSON written by `launchbench compare --output`")
    p.add_argument("--markdown", metavar="FILE", help="write the Markdown report here")
    p.add_argument("--html", metavar="FILE", help="write the self-contained HTML report here")
    p.add_argument("--plot", metavar="FILE", help="write the PNG plot here")
    p.set_defaults(func=_run)


def _run(args) -> int:
    result = schema.read(args.results)
    outputs = {"markdown": args.markdown, "html": args.html, "plot": args.plot}
    if not any(outputs.values()):
        outputs = default_outputs(args.results)
    from ..base.outputs import check_outputs

    check_outputs([(value, f"--{key}") for key, value in outputs.items() if value])
    for path in export(result, **outputs):
        print(f"wrote {path}")
    return 0
