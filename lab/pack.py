"""Pack a committed run's worker logs and secondary files into its one archive, ``logs.tar.gz``.

    python lab/pack.py lab/results/h200/<run> [...]     # or --all for every run folder

What stays a file in the run folder: every README.md, an asv results folder (one holding
benchmarks.json: `launchbench site` reads it), .py scripts, whatever README.md, docs/*.md,
lab/README.md or tests/ cite by full path (lab/citations.py), and at the run's top level its
summary* and JSON documents. The top-level command*.txt are folded into the run's README.md
(appended verbatim under "## Commands") where it has one, and stay files where it has none.
Everything else, other archives of the run (asv-results.tar.gz, ...) included, goes into the
archive, members named relative to the run folder. The archive is byte-for-byte repeatable
(members sorted, mtime 0, owner root, mode 0644, no gzip name or time), and packing again
merges new files into it. Standard library only.
"""
from __future__ import annotations

import gzip
import io
import os
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import citations  # noqa: E402  (a sibling script, not a package)

ROOT = Path(__file__).resolve().parent.parent
TOP_KEEP = (".json", ".json.gz")
#: The heading a run README's folded commands go under.
COMMANDS = "## Commands"


def asv_dirs(files: list) -> set:
    """Folders (relative paths) that hold an asv results directory."""
    return {f.rsplit("/", 1)[0] for f in files if f.endswith("/benchmarks.json")}


def kept(rel: str, run: str, asv: set, cited: set) -> bool:
    """Whether ``rel`` (a path from the repository root) stays a file in its run folder."""
    name = rel.rsplit("/", 1)[1]
    top = rel.count("/") == run.count("/") + 1
    return (name == "README.md" or name.endswith(".py") or rel in cited or name == citations.ARCHIVE
            or any(rel.startswith(d + "/") for d in asv)
            or (top and (name.startswith(("command", "summary")) or name.endswith(TOP_KEEP))))


def commands(run: str, files: list, cited: set) -> list:
    """The top-level command*.txt of a run folder that has a README.md, to be folded into it (sorted)."""
    if f"{run}/README.md" not in files:
        return []
    return sorted(f for f in files if f.startswith(run + "/") and f.count("/") == run.count("/") + 1
                  and f.rsplit("/", 1)[1].startswith("command") and f.endswith(".txt") and f not in cited)


def fold_commands(run: str, files: list, cited: set, root: Path = ROOT) -> list:
    """Append each of the run's foldable command files to its README.md, verbatim, and remove it."""
    folded = commands(run, files, cited)
    if not folded:
        return []
    readme = root / run / "README.md"
    text = readme.read_text().rstrip("\n") + "\n"
    if f"\n{COMMANDS}\n" not in text:
        text += f"\n{COMMANDS}\n\nAs run, verbatim, with the device machine's paths of the day.\n"
    for rel in folded:
        body = (root / rel).read_text()
        body = body if body.endswith("\n") else body + "\n"
        fence = "~~~"
        while fence in body:
            fence += "~"
        text += f"\nFrom {rel.rsplit('/', 1)[1]}:\n\n{fence}\n{body}{fence}\n"
    readme.write_text(text)
    for rel in folded:
        (root / rel).unlink()
    return folded


def plan(run: str, files: list, cited: set) -> tuple:
    """(kept, packed) paths of one run folder's files (from the repository root), sorted."""
    mine = sorted(f for f in files if f.startswith(run + "/"))
    asv = asv_dirs(mine)
    keep = [f for f in mine if kept(f, run, asv, cited)]
    return keep, [f for f in mine if f not in keep]


def write_archive(path: Path, members: dict) -> None:
    """Write ``{member name: bytes}`` as a repeatable tar.gz, atomically."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for name in sorted(members):
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(members[name]), 0, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(members[name]))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(buf.getvalue())
    os.replace(tmp, path)


def read_archive(path: Path) -> dict:
    """``{member name: bytes}`` of an archive (empty if there is none)."""
    if not path.exists():
        return {}
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def pack(run: str, files: list, cited: set, root: Path = ROOT) -> list:
    """Fold one run folder's commands into its README.md and move its packable files into its archive;
    return the folded and packed paths."""
    folded = fold_commands(run, files, cited, root)
    _, packed = plan(run, [f for f in files if f not in folded], cited)
    if not packed:
        return folded
    archive = root / run / citations.ARCHIVE
    members = read_archive(archive)
    for rel in packed:
        members[rel[len(run) + 1:]] = (root / rel).read_bytes()
    write_archive(archive, members)
    for rel in packed:
        (root / rel).unlink()
    for rel in sorted({str(Path(r).parent) for r in packed}, key=len, reverse=True):
        folder = root / rel
        while folder != root / run and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent
    return folded + packed


def run_folders(root: Path = ROOT) -> list:
    """lab/results/<device>/<run> folders (relative), sorted."""
    return sorted(p.relative_to(root).as_posix() for p in (root / "lab" / "results").glob("*/*") if p.is_dir())


def main(argv: list) -> int:
    if not argv or argv in (["-h"], ["--help"]):
        print(__doc__.strip().splitlines()[2])
        return 0 if argv else 2
    runs = run_folders() if argv == ["--all"] else [Path(a).resolve().relative_to(ROOT).as_posix() for a in argv]
    for run in runs:
        if not (ROOT / run).is_dir() or run.count("/") != 3 or not run.startswith("lab/results/"):
            print(f"{run}: not a run folder (lab/results/<device>/<run>)", file=sys.stderr)
            return 2
    tree = citations.Tree(ROOT)
    cited = citations.cited_files(ROOT, tree)
    files = sorted(tree.files)
    for run in runs:
        folded = commands(run, files, cited)
        packed = pack(run, files, cited)[len(folded):]
        if folded:
            print(f"{run}: {len(folded)} command files into README.md")
        if packed:
            print(f"{run}: {len(packed)} files into {citations.ARCHIVE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
