"""Re-render a ``launchbench pr`` result from its JSON with the current classification.

    python lab/recipes/rerender_pr.py DIR       # DIR/pr.json(.gz) -> DIR/pr.md, DIR/pr.json.gz (the old pr.md kept as
                                        # pr.gpu-run.md)

Why: the 2026-11-24 GPU run of PR #897 recorded a strict xfail that passed as "failed" and called it
broken; the recorded outcomes are unchanged, only their reading (launchbench.engine.conformance) was fixed.
"""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from launchbench.engine import conformance  # noqa: E402
from launchbench.output import documents, prreport  # noqa: E402


def main(folder: str) -> int:
    path = os.path.join(folder, "pr.json.gz")
    doc = documents.read(path, "pr")
    if doc.get("conformance"):
        doc["conformance"] = conformance.reclassify(doc["conformance"])
    conf = doc.get("conformance")
    doc["verdicts"]["conformance"] = conf["verdict"] if conf else None
    doc["exit_code"] = conformance.exit_code(conf and conf["verdict"], doc.get("gate"), bool(doc["head"].get("variant")))
    doc["rerendered"] = "lab/recipes/rerender_pr.py: strict xpass read as xpassed (conformance outcomes unchanged)"
    md = os.path.join(folder, "pr.md")
    if os.path.exists(md) and not os.path.exists(os.path.join(folder, "pr.gpu-run.md")):
        os.replace(md, os.path.join(folder, "pr.gpu-run.md"))
    with open(md, "w", encoding="utf-8") as fh:
        fh.write(prreport.render(doc))
    with gzip.open(path + ".tmp", "wt") as fh:
        json.dump(doc, fh, indent=1)
    os.replace(path + ".tmp", path)
    print(prreport.render_text(doc), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
