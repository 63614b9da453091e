"""``launchbench claims``: the upstream-claims page from committed ``launchbench releases`` (and ``lock-probe``) documents.

Each upstream launch-latency claim gets one row: the claim, its source, what the documents measured
(µs with 95% CIs and rounds) and a verdict; a claim no document measures says "not measured yet".
"""
from __future__ import annotations

import os

from ..base import outpaths
from ..base.atomic import write_text_atomic
from ..base.errors import UserError
from ..output.claims import render
from ..output.documents import read_inputs
from . import common_args as ca

DEFAULT_OUTPUT = "launchbench-claims.md"


def register(sub) -> None:
    p = sub.add_parser("claims", help="the upstream-claims page from releases documents",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("documents", nargs="*", metavar="RELEASES.json",
                   help="launchbench releases and lock-probe documents (.json or .json.gz); none: every row "
                        "'not measured yet'")
    ca.add_output(p, DEFAULT_OUTPUT, f"the page (default {DEFAULT_OUTPUT})")
    p.set_defaults(func=run_claims)


def run_claims(args) -> int:
    output = outpaths.check_outputs([(args.output, "--output")],
                                    inputs=[(path, "RELEASES.json") for path in args.documents])[0]
    named = read_inputs(args.documents, "RELEASES.json", "give launchbench releases documents")
    docs, sources = [], {}
    for path, doc in named:
        if not isinstance(doc, dict) or doc.get("kind") not in ("releases", "lock-probe"):
            kind = doc.get("kind") if isinstance(doc, dict) else None
            raise UserError(f"RELEASES.json {path!r} is not a launchbench releases document (kind {kind!r}), nor a "
                            "lock-probe one; give the JSON of launchbench releases or lock-probe")
        docs.append(doc)
        sources[id(doc)] = os.path.relpath(path)
    write_text_atomic(output, render(docs, sources))
    print(f"launchbench: wrote {output}")
    return 0
