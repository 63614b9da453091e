"""``launchbench report``: Markdown, self-contained HTML and a PNG from a compare JSON
(launchbench.output.report renders them); for a paired breakdown JSON, its text analysis
recomputed from the samples by this launchbench (a committed run read with today's quantities); for a
releases JSON, its table as today's renderer writes it (the counts beside a stack bisect included)."""
from __future__ import annotations

from ..base.atomic import write_text_atomic
from ..base.errors import UserError
from ..base.outpaths import add_inputs, check_outputs
from ..output import documents
from ..output.breakdown import breakdown_markdown, breakdown_text, paired, reanalyzed
from ..output.releases import render as render_releases
from ..output.report import default_outputs, export
from . import common_args as ca


def register(sub) -> None:
    p = sub.add_parser(
        "report",
        help="render a compare results JSON as Markdown, self-contained HTML and a PNG plot",
        description="Render `launchbench compare` JSON. With no output options, writes <name>.md, "
        "<name>.html and <name>.png next to <name>.json (regenerates a committed reference report). "
        "A `launchbench breakdown` JSON is printed as text instead (--text FILE to write it); a paired "
        "one is re-analysed from its samples. A `launchbench releases` JSON: its table, as text (--text FILE) "
        "or Markdown (--markdown FILE).",
    )
    p.add_argument("results", help="results JSON written by `launchbench compare --output` (or breakdown, releases)")
    ca.add_markdown(p, "write the Markdown report here", metavar="FILE")
    p.add_argument("--html", metavar="FILE", help="write the self-contained HTML report here")
    p.add_argument("--plot", metavar="FILE", help="write the PNG plot here")
    p.add_argument("--text", metavar="FILE", help="breakdown or releases JSON: write the text here (default: stdout)")
    # a paired breakdown JSON takes --markdown too: its analysis and exact counts as Markdown
    p.set_defaults(func=_run)


def _run(args) -> int:
    add_inputs([(args.results, "the results file")])  # no output may be it: checked before it is read
    check_outputs([(args.text, "--text"), (args.markdown, "--markdown"), (args.html, "--html"), (args.plot, "--plot")])
    raw = documents.load(args.results, "compare")  # read once; a file that is not JSON: compare's one line
    given = {"--markdown": args.markdown, "--html": args.html, "--plot": args.plot}
    if documents.kind_of(raw) == "breakdown":
        raw = documents.validate(raw, "breakdown", args.results)
        for option in ("--html", "--plot"):
            if given[option] is not None:
                raise UserError(f"{option} is for a compare JSON; {args.results} is a breakdown, whose analysis "
                                "--text FILE (or, for a paired one, --markdown FILE) writes")
        if args.markdown is not None and not paired(raw):
            raise UserError("--markdown needs a paired breakdown JSON (breakdown --variant ...)")
        check_outputs([(args.text, "--text"), (args.markdown, "--markdown")])
        if args.markdown is not None:
            write_text_atomic(args.markdown, breakdown_markdown(reanalyzed(raw)))
            print(f"wrote {args.markdown}")
            if args.text is None:
                return 0
        text = breakdown_text(raw)
        if args.text is not None:
            write_text_atomic(args.text, text)
            print(f"wrote {args.text}")
        else:
            print(text, end="")
        return 0
    if documents.kind_of(raw) == "history" and raw.get("kind") == "releases":  # kind_of: a dict with a schema
        return _releases(documents.validate(raw, "history", args.results), args)
    result = documents.validate(raw, "compare", args.results)
    if args.text is not None:
        raise UserError(f"--text is for a breakdown JSON; for {args.results} (a compare JSON) give --markdown, "
                        "--html or --plot")
    outputs = {"markdown": args.markdown, "html": args.html, "plot": args.plot}
    defaulted = all(value is None for value in outputs.values())
    if defaulted:
        outputs = default_outputs(args.results)
    check_outputs([(value, f"--{key}" + (" (default: beside the results)" if defaulted else ""))
                   for key, value in outputs.items() if value is not None])
    for path in export(result, **outputs):
        print(f"wrote {path}")
    return 0


def _releases(doc: dict, args) -> int:
    """A releases document's table: Markdown to --markdown, text to --text or stdout."""
    for option, value in (("--html", args.html), ("--plot", args.plot)):
        if value is not None:
            raise UserError(f"{option} is for a compare JSON; {args.results} is a releases document, whose table "
                            "--text FILE or --markdown FILE writes")
    for path, markdown in ((args.markdown, True), (args.text, False)):
        if path is not None:
            write_text_atomic(path, render_releases(doc, markdown=markdown))
            print(f"wrote {path}")
    if args.markdown is None and args.text is None:
        print(render_releases(doc), end="")
    return 0
