"""Every path the prose cites into lab/ resolves: as a file, a folder, or a member of a run's archive.

The lab keeps each run's worker logs and secondary documents in one archive per run folder
(``lab/results/<device>/<run>/logs.tar.gz``, see pack.py); prose names a member as
``ARCHIVE.tar.gz:member`` (member relative to the run folder). Cited are:

- in README.md, docs/*.md, lab/README.md, tests/*.py and tests/fixtures/README.md: every ``lab/results/...``
  and ``lab/recipes/...`` path (lab/README.md and tests/fixtures/README.md also name runs as
  ``h200/<run>/...``, under lab/results/);
- in a run's README (any README.md under lab/results/): every backticked name with a file suffix or a
  trailing ``/``, relative to the README's folder, to the repository root, or as the tail of a path
  anywhere in its run folder (``trust1.log`` for ``trust-x3/trust1.log``), archive members included.
  Fenced blocks (the commands as run, which pack.py appends verbatim) are not prose: nothing in them is
  a citation.

Globs (``*``, ``?``, ``[ab]``) and braces (``mech-{none,anchor}.log``) must match at least one path.
Standard library only: the default tests and ``python lab/check.py`` both use it.
"""
from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import tarfile
from pathlib import Path

#: The one archive of a run folder, and how prose names a member of it.
ARCHIVE = "logs.tar.gz"
MEMBER_SEP = ".tar.gz:"

#: A lab path in repository prose (docs, README, tests).
LAB_PATH = re.compile(r"lab/(?:results|recipes)(?:/[\w.*?\[\]{},+-]+)*/?(?::[\w./*?\[\]{},+-]+)?")
#: lab/README.md's index names run folders under lab/results/ like this.
INDEX_PATH = re.compile(r"`(h[0-9]+/[\w.*?\[\]{},+/:-]+)`")
#: Pages that name run folders (and archive members) that way.
INDEX_PAGES = ("lab/README.md", "tests/fixtures/README.md")
BACKTICKED = re.compile(r"`([^`\s]+)`")
#: A fenced block of a Markdown file (``` or ~~~, closed by the same fence).
FENCED = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)
SUFFIXES = ("json", "gz", "log", "txt", "md", "png", "err", "py", "xml", "html", "out", "table", "csv", "sh")
#: A backticked token in a run README that names a file or folder.
NAME = re.compile(r"^[\w.*?\[\]{},+/-]*[\w*\]}](?:\.(?:%s))$|^[\w.*?\[\]{},+/-]*[\w*\]}]/$" % "|".join(SUFFIXES))


def matches(path: str, pattern: str) -> bool:
    """A glob over whole path segments (``*`` stays inside one folder name, as in the shell; ``**``
    spans folders)."""
    if "**" in pattern:
        return fnmatch.fnmatchcase(path, pattern.replace("**/", "*"))
    parts, pats = path.split("/"), pattern.split("/")
    return len(parts) == len(pats) and all(fnmatch.fnmatchcase(a, b) for a, b in zip(parts, pats))


def ends_with(path: str, tail: str) -> bool:
    """The last segments of ``path`` match the glob ``tail``."""
    parts, pats = path.split("/"), tail.split("/")
    return len(parts) >= len(pats) and matches("/".join(parts[-len(pats):]), tail)


def expand_braces(token: str) -> list:
    """``a{b,c}d`` -> [abd, acd] (one level per brace pair, left to right)."""
    m = re.search(r"\{([^{}]*)\}", token)
    if not m:
        return [token]
    out = []
    for part in m.group(1).split(","):
        out += expand_braces(token[:m.start()] + part + token[m.end():])
    return out


class Tree:
    """The files under lab/ (and archive members, read on demand) of one checkout."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.files, self.dirs = set(), set()
        for top, dirnames, filenames in os.walk(self.root / "lab"):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            rel = Path(top).relative_to(self.root).as_posix()
            self.dirs.add(rel)
            self.files.update(f"{rel}/{f}" for f in filenames)
        self._members: dict = {}

    def members(self, archive: str) -> set:
        """Member paths of an archive and their folders (relative to the run); empty if it is not one."""
        if archive not in self._members:
            try:
                with tarfile.open(self.root / archive) as tar:
                    names = {m.name for m in tar.getmembers()}
                names |= {n.rsplit("/", k)[0] for n in names for k in range(1, n.count("/") + 1)}
                self._members[archive] = names
            except (OSError, tarfile.TarError):
                self._members[archive] = set()
        return self._members[archive]

    def exists(self, rel: str) -> bool:
        """A path relative to the root, glob allowed, names a file or folder (lab/ or anywhere in the checkout)."""
        rel = posixpath.normpath(rel.rstrip("/")) if rel.strip("/") else ""
        if not rel or rel.startswith("../"):
            return False
        if MEMBER_SEP in rel:
            archive, member = rel.split(MEMBER_SEP, 1)
            return any(matches(m, member) for m in self.members(archive + ".tar.gz"))
        if not rel.startswith("lab/"):
            return any(self.root.glob(rel)) if re.search(r"[*?\[]", rel) else (self.root / rel).exists()
        if any(matches(p, rel) for p in self.files | self.dirs):
            return True
        parts = rel.split("/")  # a file or folder of a run that now lives in the run's archive
        if len(parts) > 4 and parts[:2] == ["lab", "results"]:
            run, rest = "/".join(parts[:4]), "/".join(parts[4:])
            return any(matches(m, rest) for m in self.members(f"{run}/{ARCHIVE}"))
        return False

    def in_run(self, run: str, tail: str) -> bool:
        """Some path in the run folder (or its archive) ends with ``tail`` (glob allowed)."""
        tail = tail.rstrip("/")
        if any(p.startswith(run + "/") and ends_with(p, tail) for p in self.files | self.dirs):
            return True
        return any(ends_with(m, tail) for m in self.members(f"{run}/{ARCHIVE}"))


def run_folder(readme: str) -> str:
    """lab/results/<device>/<run> of a README anywhere below it."""
    return "/".join(readme.split("/")[:4])


def prose_files(root: Path) -> list:
    """Repository prose that cites lab paths by their full path."""
    root = Path(root)
    found = [root / "README.md", root / "lab" / "README.md"]
    found += sorted((root / "docs").glob("*.md")) + sorted((root / "tests").glob("*.py"))
    found.append(root / "tests" / "fixtures" / "README.md")
    return [p for p in found if p.is_file()]


def readme_tokens(text: str) -> list:
    """The backticked names of files and folders in a run README."""
    return [t for t in BACKTICKED.findall(FENCED.sub("", text)) if "..." not in t and NAME.match(t)]


def cited(root: Path, tree: Tree | None = None) -> list:
    """[(citing file, token, [candidate paths relative to the root], run folder or None)]."""
    root = Path(root)
    tree = tree or Tree(root)
    out = []
    for path in prose_files(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        for token in LAB_PATH.findall(text):
            token = token.rstrip(".,")
            if token in ("lab/results", "lab/recipes", "lab/results/", "lab/recipes/"):
                continue
            out.append((rel, token, [token], None))
        if rel in INDEX_PAGES:
            out += [(rel, t, ["lab/results/" + t], None) for t in INDEX_PATH.findall(text)]
    for rel in sorted(p for p in tree.files if p.startswith("lab/results/") and p.endswith("/README.md")):
        folder = posixpath.dirname(rel)
        run = run_folder(rel) if rel.count("/") >= 4 else None
        for token in readme_tokens((root / rel).read_text()):
            out.append((rel, token, [posixpath.join(folder, token), token], run))
    return out


def unresolved(root: Path, tree: Tree | None = None) -> list:
    """["citing file: token"] for every citation that names nothing."""
    tree = tree or Tree(root)
    bad = []
    for source, token, candidates, run in cited(root, tree):
        ok = True
        for variant in expand_braces(token):
            cands = [c.replace(token, variant) for c in candidates]
            if not (any(tree.exists(c) for c in cands) or (run and tree.in_run(run, variant))):
                ok = False
        if not ok:
            bad.append(f"{source}: {token}")
    return bad


def cited_files(root: Path, tree: Tree | None = None) -> set:
    """Files under lab/ that repository prose names by their full path: packing keeps them as files
    (a run README's bare names may point into the run's archive; a full path may not)."""
    tree = tree or Tree(root)
    keep = set()
    for _source, token, candidates, run in cited(root, tree):
        if run is None:
            for variant in expand_braces(token):
                keep.update(p for p in tree.files if matches(p, variant.rstrip("/")))
    return keep
