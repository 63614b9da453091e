"""``launchbench wheelhouse DIR``: the pinned wheels a run installs, gathered for an air-gapped GPU machine.

Why: the GPU machines have no network, and their own packages do not run
numba-cuda as installed (see docs/troubleshooting.md), so a run brings its
pinned wheels along. ``pip download --no-deps --only-binary=:all:`` with an
explicit Python version, implementation and platforms fetches wheels for
*that* machine from any machine, one requirement per call (two numba-cuda
versions cannot share one pip call).

What: the run pins (``DEFAULT_PINS`` or ``--constraints``), numba-cuda for
each ``numba-cuda==X`` variant (default 0.29.0 and 0.30.4), numba-cuda-mlir
for each ``numba-cuda-mlir==X`` variant (its 71 MB wheel is cut into pieces
by ``--split-mb`` like llvmlite's), the asv tools
(importlib-metadata 8.5.0: 8.6+ needs ``lazy_importer``, which the GPU
machine lacks; gpu/README.md), with ``--build-deps`` setuptools and wheel.
Dependencies are not followed (``--no-deps``): add what the target lacks
with ``--package``.

``--split-mb N`` lays the files out for transfers of limited size: ``part-1``,
``part-2``, ... each at most N MiB (hard links; DIR itself stays a flat
``--find-links`` folder), a file larger than N MiB cut into ``NAME.partNN``
pieces, and ``part-1/JOIN.sh``, which rejoins the pieces (checking sha256)
and gathers every file into one folder. Import-light.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys

from ..base.errors import UserError
from ..workloads.capture.mechanisms import validate
from .variants import DEFAULT_PINS, MLIR_RE, NAME_RE, WHEEL_RE

MIB = 1024 * 1024
DEFAULT_PYTHON_VERSION = "3.12"
#: manylinux2014 is manylinux_2_17; pip does not widen a perennial manylinux tag by itself.
DEFAULT_PLATFORMS = tuple(f"manylinux_2_{minor}_x86_64" for minor in range(17, 29)) + ("manylinux2014_x86_64",)
DEFAULT_RELEASES = ("0.29.0", "0.30.4")
TOOLS = ("asv", "asv-runner", "json5", "pympler", "importlib-metadata==8.5.0")
BUILD_DEPS = ("setuptools", "wheel")
#: What asv's own per-commit builds need offline (``asv run A..B`` with ``launchbench asv-config
#: --offline``), beyond the pins and TOOLS: the build backend inside each virtualenv (wheel needs
#: packaging), pip (asv upgrades it there), cuda-core's one hard dependency, and virtualenv with its
#: dependencies for the host side that creates the envs.
ASV_BUILD_DEPS = BUILD_DEPS + ("packaging", "pip", "cuda-pathfinder",
                               "virtualenv", "distlib", "platformdirs", "filelock", "python-discovery")
JOIN_SCRIPT = "JOIN.sh"
_PART_DIR_RE = re.compile(r"^part-[0-9]+$")
_ASSIGN_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*)=(?!=)(.*)$")


# ---------------------------------------------------------------- what to fetch

def numba_cuda_versions(specs) -> list[str]:
    """numba-cuda versions named by variant specs (``[NAME=][MECH@]numba-cuda==X``), in order.

    A ``numba-cuda-mlir==X`` spec gives its whole requirement
    (``"numba-cuda-mlir==X"``) instead of a bare version, so ``requirements``
    fetches the successor's wheel rather than a numba-cuda of that number.
    ``repo:``/``env:``/``mlir-env:`` bases need nothing downloaded (a checkout is built there:
    see ``--build-deps``); anything else is an error, before any download.
    """
    if not specs:
        return list(DEFAULT_RELEASES)
    versions, known = [], {}
    for text in specs:
        name, spec = None, text.strip()
        m = _ASSIGN_RE.match(spec)
        if m and NAME_RE.match(m.group(1)):
            name, spec = m.group(1), m.group(2).strip()
        mech, at, base = spec.partition("@")
        if at:
            if not mech.strip():
                raise UserError(f"--variant {text!r}: expected MECH@BASE, e.g. contextvar@numba-cuda==0.29.0")
            try:
                validate(mech.strip())
            except UserError as exc:
                raise UserError(f"--variant {text!r}: {exc}") from None
            spec = base.strip()
        wheel, mlir = WHEEL_RE.match(spec), MLIR_RE.match(spec)
        if wheel:
            version = wheel.group(1)
        elif mlir:
            version = f"numba-cuda-mlir=={mlir.group(1)}"
        elif spec.startswith(("repo:", "env:", "mlir-env:")) and len(spec) > spec.index(":") + 1:
            version = None
        elif spec in known:
            version = known[spec]
        else:
            raise UserError(f"--variant {text!r}: unknown variant spec {spec!r}; wheelhouse takes "
                            f"[NAME=][MECH@]numba-cuda==X.Y.Z or [NAME=]numba-cuda-mlir==X.Y.Z "
                            f"(repo:PATH, env:PATH and mlir-env:PATH download nothing)")
        if name:
            known[name] = version
        if version and version not in versions:
            versions.append(version)
    return versions


def requirements(versions, pins: dict | None = None, build_deps: bool = False, packages=(),
                 asv_builds: bool = False) -> list[str]:
    pins = DEFAULT_PINS if pins is None else pins
    reqs = [f"{name}=={version}" for name, version in pins.items()]
    reqs += [v if "==" in v else f"numba-cuda=={v}" for v in versions]  # mlir entries are whole requirements
    reqs += list(TOOLS) + (list(BUILD_DEPS) if build_deps else []) + (list(ASV_BUILD_DEPS) if asv_builds else [])
    reqs += list(packages)
    return list(dict.fromkeys(reqs))


def pip_command(req: str, dest: str, python_version: str, platforms, python: str | None = None) -> list[str]:
    cmd = [python or sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
           "--no-deps", "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp"]
    for platform in platforms:
        cmd += ["--platform", platform]
    return cmd + ["-d", dest, req]


def _run_pip(cmd: list[str]) -> subprocess.CompletedProcess:
    """One pip call (the seam tests replace)."""
    return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)


def download(dest: str, reqs, python_version: str, platforms, log=print) -> None:
    os.makedirs(dest, exist_ok=True)
    for req in reqs:
        log(f"launchbench: pip download {req}")
        out = _run_pip(pip_command(req, dest, python_version, platforms))
        if out.returncode != 0:
            lines = [ln.strip() for ln in ((out.stderr or "") + (out.stdout or "")).splitlines() if ln.strip()]
            last = next((ln for ln in reversed(lines) if ln.startswith("ERROR")), lines[-1] if lines else "no output")
            raise UserError(f"pip download {req} failed (exit {out.returncode}: {last[:200]}); "
                            f"check the name, version, --python-version and --platform, and the network")


# ---------------------------------------------------------------- splitting

def top_files(dest: str) -> list[str]:
    return sorted(f for f in os.listdir(dest)
                  if not f.startswith(".") and os.path.isfile(os.path.join(dest, f)))


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(MIB), b""):
            h.update(chunk)
    return h.hexdigest()


def plan_split(sizes: dict, limit: int) -> tuple[list[tuple], dict]:
    """Items ``(name, source, offset, size)`` per part and the pieces of each split file.

    Whole files up to *limit* bytes are packed first-fit decreasing; larger
    ones are cut into *limit*-sized pieces, each its own item.
    """
    items, pieces = [], {}
    for name, size in sizes.items():
        if size <= limit:
            items.append((name, name, 0, size))
            continue
        count = -(-size // limit)
        width = max(2, len(str(count)))
        pieces[name] = []
        for k in range(count):
            piece = f"{name}.part{k + 1:0{width}d}"
            items.append((piece, name, k * limit, min(limit, size - k * limit)))
            pieces[name].append(piece)
    items.sort(key=lambda it: (-it[3], it[0]))
    return items, pieces


def _join_script(pieces: dict, where: dict, sums: dict, whole: list[tuple[int, str]]) -> str:
    lines = [
        "#!/usr/bin/env bash",
        "# Made by launchbench wheelhouse --split-mb: rejoins the files cut into NAME.partNN pieces",
        "# (checking sha256) and gathers every file of the part-N folders into one folder, ready for",
        "# pip install --no-index --find-links DEST. Usage: bash part-1/JOIN.sh [DEST], with the part-N",
        "# folders side by side (or all files in one folder); DEST defaults to the folder holding them.",
        "set -euo pipefail",
        'HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)',
        'case "$(basename "$HERE")" in part-[0-9]*) ROOT=$(dirname "$HERE") ;; *) ROOT=$HERE ;; esac',
        'DEST=${1:-$ROOT}',
        'mkdir -p "$DEST"',
        'find_file() {  # PART NAME',
        '  local p',
        '  for p in "$ROOT/part-$1/$2" "$HERE/$2" "$ROOT/$2" "$DEST/$2"; do',
        '    if [ -f "$p" ]; then echo "$p"; return 0; fi',
        '  done',
        '  echo "JOIN.sh: $2 is missing (it travels in part-$1/); bring that part first" >&2',
        '  return 1',
        '}',
        'gather() {  # PART NAME',
        '  local p',
        '  p=$(find_file "$1" "$2")',
        '  if [ ! "$p" -ef "$DEST/$2" ]; then cp -f "$p" "$DEST/$2"; fi',
        '}',
        'join() {  # NAME SHA256 PART:PIECE ...',
        '  local name=$1 sum=$2 spec p',
        '  shift 2',
        '  local tmp="$DEST/.$name.joining"',
        '  : > "$tmp"',
        '  for spec in "$@"; do',
        '    p=$(find_file "${spec%%:*}" "${spec#*:}")',
        '    cat "$p" >> "$tmp"',
        '  done',
        '  if ! echo "$sum  $tmp" | sha256sum -c --quiet - >/dev/null; then',
        '    rm -f "$tmp"; echo "JOIN.sh: $name: sha256 mismatch after joining; copy its pieces again" >&2; exit 1',
        '  fi',
        '  mv -f "$tmp" "$DEST/$name"',
        '  echo "joined $name"',
        '}',
    ]
    for part, name in whole:
        lines.append(f"gather {part} '{name}'")
    for name, names in pieces.items():
        specs = " ".join(f"'{where[p]}:{p}'" for p in names)
        lines.append(f"join '{name}' {sums[name]} {specs}")
    lines.append('echo "all files in $DEST: pip install --no-index --find-links $DEST ..."')
    return "\n".join(lines) + "\n"


def split(dest: str, mb: int, log=print) -> list[str]:
    """Lay the files of *dest* out into part-1..part-K, each at most *mb* MiB; returns the part folders."""
    limit = mb * MIB
    for entry in os.listdir(dest):
        if _PART_DIR_RE.match(entry) and os.path.isdir(os.path.join(dest, entry)):
            shutil.rmtree(os.path.join(dest, entry))  # an earlier layout
    files = top_files(dest)
    sizes = {f: os.path.getsize(os.path.join(dest, f)) for f in files}
    items, pieces = plan_split(sizes, limit)
    for name in files:
        if any(ch in name for ch in "'\\\n"):
            raise UserError(f"file name {name!r} in {dest} cannot go into JOIN.sh; rename or remove it")
    sums = {name: _sha256(os.path.join(dest, name)) for name in pieces}
    # JOIN.sh goes first into part-1; its size is bounded by a draft with the widest part numbers.
    widest = {it[0]: len(items) + 1 for it in items}
    whole = [(len(items) + 1, it[0]) for it in items if it[0] == it[1]]
    budget = len(_join_script(pieces, widest, sums, whole).encode())
    if budget > limit:
        raise UserError(f"--split-mb {mb} leaves no room for JOIN.sh ({budget} bytes); pass a larger --split-mb")
    bins = [budget]
    where = {}
    for name, _src, _off, size in items:
        k = next((i for i, used in enumerate(bins) if used + size <= limit), None)
        if k is None:
            bins.append(0)
            k = len(bins) - 1
        bins[k] += size
        where[name] = k + 1
    parts = [os.path.join(dest, f"part-{k}") for k in range(1, len(bins) + 1)]
    for part in parts:
        os.makedirs(part)
    for name, src, offset, size in items:
        target = os.path.join(parts[where[name] - 1], name)
        source = os.path.join(dest, src)
        if name == src:
            try:
                os.link(source, target)
            except OSError:
                shutil.copy2(source, target)
            continue
        with open(source, "rb") as fin, open(target, "wb") as fout:
            fin.seek(offset)
            left = size
            while left:
                chunk = fin.read(min(left, MIB))
                fout.write(chunk)
                left -= len(chunk)
    whole = sorted((where[it[0]], it[0]) for it in items if it[0] == it[1])
    script = _join_script(pieces, where, sums, whole)
    assert len(script.encode()) <= budget
    path = os.path.join(parts[0], JOIN_SCRIPT)
    with open(path, "w") as fh:
        fh.write(script)
    os.chmod(path, 0o755)
    for part in parts:
        total = sum(os.path.getsize(os.path.join(part, f)) for f in os.listdir(part))
        log(f"  {os.path.basename(part)}: {len(os.listdir(part))} files, {total / MIB:.1f} MiB")
    if pieces:
        log(f"launchbench: split into pieces: {', '.join(pieces)}; rejoin with bash part-1/{JOIN_SCRIPT}")
    return parts
