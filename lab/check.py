"""The opt-in check of everything committed under lab/results/ (not part of `python -m pytest`).

    python lab/check.py            # from the repository root; exit 0 when every check passes

Every JSON document, as a file or inside a run's logs.tar.gz: one of a known kind reads through
launchbench.output.documents; a compare renders through `launchbench report --markdown`, a breakdown
through `--text`; a mechanisms document loads, and one measured over processes loads as
`launchbench mechanisms --pool` reads it (pooled with a copy of itself); a releases document renders its table (those
from before counts without the counts column). The dispatcher-call breakdown renders exactly as committed.
lab/README.md's index names every run folder that holds a document, and every citation resolves
(lab/citations.py). Prints one line per failure and a count per kind.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import citations  # noqa: E402  (a sibling script, not a package)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "lab" / "results"
#: A run whose committed text rendering must stay today's rendering (what docs/breakdown.md quotes).
DISPATCHER = ("lab/results/h200/2026-11-23-breakdown-dispatcher-call-in-context/array.json.gz",
              "lab/results/h200/2026-11-23-breakdown-dispatcher-call-in-context/logs.tar.gz:array.txt")


def _parse(name: str, data: bytes):
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    try:
        return json.loads(data)
    except ValueError:
        return None


def committed_documents(root: Path = ROOT) -> list:
    """[(label, file name, bytes)] of every committed JSON document, archive members included (sorted)."""
    out = []
    for path in sorted((root / "lab" / "results").rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.name.endswith((".json", ".json.gz")) and path.is_file():
            out.append((rel, path.name, path.read_bytes()))
        elif path.name == citations.ARCHIVE:
            with tarfile.open(path) as tar:
                for m in sorted(tar.getmembers(), key=lambda m: m.name):
                    if m.isfile() and m.name.endswith((".json", ".json.gz")):
                        out.append((f"{rel[:-len('.tar.gz')]}{citations.MEMBER_SEP}{m.name}",
                                    m.name.rsplit("/", 1)[-1], tar.extractfile(m).read()))
    return out


def _member(root: Path, label: str) -> bytes:
    archive, member = label.split(citations.MEMBER_SEP)
    with tarfile.open(root / (archive + ".tar.gz")) as tar:
        return tar.extractfile(member).read()


def _cli(argv: list) -> tuple:
    """(exit status, stderr) of one launchbench command run in this process."""
    from launchbench import cli
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = cli.main(argv)
        except SystemExit as exc:
            rc = exc.code
        except Exception as exc:  # a traceback is a finding here, not the end of the check
            return 1, f"crashed: {type(exc).__name__}: {exc}"
    return rc, err.getvalue().strip()


def check_document(label: str, name: str, data: bytes, tmp: Path) -> tuple:
    """(kind or None, [failure lines]) for one committed document."""
    from launchbench.output import documents
    doc = _parse(name, data)
    kind = documents.kind_of(doc) if isinstance(doc, dict) else None
    if kind is None:
        return None, []
    path = tmp / name
    path.write_bytes(data)
    bad = []
    try:
        documents.read(str(path), kind)
    except Exception as exc:  # every reader failure is a finding, whatever its type
        return kind, [f"{label}: {exc}"]
    if kind == "compare":
        rc, err = _cli(["report", str(path), "--markdown", str(tmp / "report.md")])
        text = (tmp / "report.md").read_text() if rc == 0 else ""
        if rc != 0 or "launchbench" not in text or "|" not in text:
            bad.append(f"{label}: launchbench report --markdown failed ({err or 'no table'})")
    elif kind == "breakdown":
        rc, err = _cli(["report", str(path), "--text", str(tmp / "breakdown.txt")])
        text = (tmp / "breakdown.txt").read_text() if rc == 0 else ""
        if rc != 0 or "Launch breakdown" not in text or "driver_launch" not in text:
            bad.append(f"{label}: launchbench report --text failed ({err or 'no table'})")
        elif documents.version_of(doc, kind) >= 2 and not ("paired deltas" in text and "additivity" in text):
            bad.append(f"{label}: a paired breakdown not re-analysed from its samples")
    elif kind == "mechanisms" and doc.get("analysis_scope") == "processes":
        twin = tmp / ("twin-" + name)  # --pool takes two or more runs: the run and a copy of it
        twin.write_bytes(data)
        rc, err = _cli(["mechanisms", "--pool", str(path), str(twin), "--output", str(tmp / "pooled.json"), "--quiet"])
        twin.unlink()
        if rc != 0:
            bad.append(f"{label}: launchbench mechanisms --pool cannot read it ({err})")
    elif kind == "history" and doc.get("kind") == "releases":
        bad += check_releases_rendering(label, doc)
    path.unlink()
    return kind, bad


def check_releases_rendering(label: str, doc: dict) -> list:
    """A releases document renders its table, with the counts column exactly when it was counted."""
    from launchbench.output import releases
    try:
        text = releases.render(doc, markdown=True)
    except Exception as exc:  # a traceback is a finding here
        return [f"{label}: the releases table does not render ({type(exc).__name__}: {exc})"]
    head = next((ln for ln in text.splitlines() if ln.startswith("| point |")), None)
    if head is None:
        return [f"{label}: the releases table has no header row"]
    if ("counts step" in head) != ("counts" in doc):
        return [f"{label}: the counts column is {'missing' if 'counts' in doc else 'shown for a run never counted'}"]
    return []


def check_dispatcher_rendering(root: Path, tmp: Path) -> list:
    """The committed dispatcher-call breakdown still renders as its committed text."""
    doc, txt = DISPATCHER
    rc, err = _cli(["report", str(root / doc), "--text", str(tmp / "array.txt")])
    if rc != 0:
        return [f"{doc}: launchbench report --text failed ({err})"]
    got = (tmp / "array.txt").read_text()
    if got != _member(root, txt).decode():
        return [f"{doc}: renders differently from {txt} (re-render and commit it, or explain the change)"]
    if "the gap = outside the parts" not in got or "interaction:dispatcher_call" not in got:
        return [f"{doc}: the dispatcher-call split is gone from the rendering"]
    return []


def check_index(root: Path, labels: list) -> list:
    """Every run folder holding a launchbench document is named in lab/README.md's index."""
    index = (root / "lab" / "README.md").read_text()
    missing = set()
    for label in labels:
        path = label
        if citations.MEMBER_SEP in label:  # RUN/logs.tar.gz:sub/x.json -> RUN/sub/x.json
            archive, member = label.split(citations.MEMBER_SEP)
            path = archive.rsplit("/", 1)[0] + "/" + member
        parts = path.split("/")
        folder = parts[-2] if not re.fullmatch(r"\d+", parts[-2]) else parts[-3]  # 3-ab-*/029
        if f"{folder}/" not in index:
            missing.add("/".join(parts[:-1]))
    return [f"lab/README.md: the index does not name {m}/" for m in sorted(missing)]


def main(argv: list) -> int:
    if argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 0 if argv in (["-h"], ["--help"]) else 2
    sys.path.insert(0, str(ROOT))
    bad, seen, labels = [], {}, []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for label, name, data in committed_documents(ROOT):
            kind, found = check_document(label, name, data, tmp)
            if kind:
                seen[kind] = seen.get(kind, 0) + 1
                labels.append(label)
            bad += found
        bad += check_dispatcher_rendering(ROOT, tmp)
    bad += check_index(ROOT, labels)
    bad += [f"unresolved citation: {line}" for line in citations.unresolved(ROOT)]
    expected = {"compare", "counts", "breakdown", "history", "bisect", "pr", "mechanisms", "peers", "lcs-bench"}
    if not expected <= set(seen) or seen.get("compare", 0) < 10 or seen.get("mechanisms", 0) < 30:
        bad.append(f"too few documents found ({seen}): did a move hide them from lab/check.py?")
    for line in bad:
        print(line)
    print(f"lab check: {sum(seen.values())} documents ({', '.join(f'{k} {v}' for k, v in sorted(seen.items()))}); "
          f"{len(bad)} failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
