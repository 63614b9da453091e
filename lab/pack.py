"""Pack a committed run's worker logs and secondary files into its one archive, ``logs.tar.gz``.

    python lab/pack.py lab/results/h200/<run> [...]     # or --all for every run folder

What stays a file in the run folder: every README.md, an asv results folder (one holding
benchmarks.json: `launchbench site` reads it), .py scripts, whatever README.md, docs/*.md,
lab/README.md or tests/ cite by full path (lab/citations.py), and at the run's top level its
command*.txt, summary* and JSON documents. Everything else, the run's other archives
(asv-results.tar.gz, ...) included, goes into the archive, members named relative to the run folder. The archive is byte-for-byte repeatable
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
    """Move one run folder's packable files into its archive; return what was packed."""
    _, packed = plan(run, files, cited)
    if not packed:
        return []
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
    return packed


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
        packed = pack(run, files, cited)
        if packed:
            print(f"{run}: {len(packed)} files into {citations.ARCHIVE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
