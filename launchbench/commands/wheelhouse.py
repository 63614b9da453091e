"""``launchbench wheelhouse DIR``: the pinned wheels a run installs, for an air-gapped GPU machine
(launchbench.environments.wheelhouse fetches and lays them out)."""
from __future__ import annotations

import os
import re
import sys

from ..base import options as opt
from ..base.errors import UserError
from ..base.outpaths import check_folder
from ..environments.variants import parse_pins
from ..environments.wheelhouse import (
    DEFAULT_PLATFORMS,
    DEFAULT_PYTHON_VERSION,
    JOIN_SCRIPT,
    MIB,
    download,
    numba_cuda_versions,
    requirements,
    split,
    top_files,
)

_REQUIREMENT = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._, -]*\])?"
                          r"(\s*(===|==|>=|<=|~=|!=|<|>)\s*[A-Za-z0-9.*+!_-]+(\s*,\s*(===|==|>=|<=|~=|!=|<|>)\s*"
                          r"[A-Za-z0-9.*+!_-]+)*)?")


def check_requirement(text: str) -> str:
    """``--package``: a requirement (``name``, ``name[extra]``, ``name==1.0``, ``name>=1,<2``), checked
    before any download (with packaging's parser where installed, else the same grammar by hand)."""
    ok = bool(text.strip()) and _REQUIREMENT.fullmatch(text.strip()) is not None
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:
        pass
    else:
        try:
            Requirement(text)
        except InvalidRequirement:
            ok = False
    if not ok:
        raise UserError(f"--package {text!r} is not a requirement; write it like --package packaging or "
                        "--package 'packaging==24.1'")
    return text.strip()


def check_python_version(text: str) -> str:
    if not re.match(r"^(3\.[0-9]{1,2}|3[0-9]{1,2})$", text.strip()):
        raise UserError(f"--python-version {text!r}: expected MAJOR.MINOR of the target's Python, e.g. 3.12")
    return text.strip()


def check_platform(text: str) -> str:
    if not re.match(r"^[a-z][a-z0-9_]*$", text.strip()):
        raise UserError(f"--platform {text!r}: expected a wheel platform tag, e.g. manylinux_2_28_x86_64")
    return text.strip()


def run(args) -> int:
    log = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    python_version = check_python_version(args.python_version)
    platforms = [check_platform(p) for p in (args.platform or DEFAULT_PLATFORMS)]
    split_mb = args.split_mb  # checked by its type (base/options.SPLIT_MB) while parsing
    versions = numba_cuda_versions(args.variant)
    pins = parse_pins(args.constraints)
    for req in args.package or ():
        check_requirement(req)
    if not args.dir.strip():  # "" once meant the current folder: 107 MiB of wheels where the user stood
        raise UserError("DIR is empty; give a folder for the wheels, e.g. launchbench wheelhouse wheels/")
    reqs = requirements(versions, pins, args.build_deps, args.package or (), asv_builds=args.asv_builds)
    dest = os.path.abspath(os.path.expanduser(args.dir))
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise UserError(f"{args.dir} is a file; pass a folder for the wheels")
    check_folder(dest, "DIR", output=True)  # locked: two downloads into one folder would mix
    download(dest, reqs, python_version, platforms, log)
    files = top_files(dest)
    total = sum(os.path.getsize(os.path.join(dest, f)) for f in files)
    print(f"{len(files)} files, {total / MIB:.1f} MiB in {dest} (Python {python_version}); "
          f"install there with pip install --no-index --find-links DIR")
    if split_mb:
        parts = split(dest, split_mb, log)
        print(f"{len(parts)} parts of at most {split_mb} MiB: {dest}/part-1 .. part-{len(parts)}; "
              f"carry each, then run bash part-1/{JOIN_SCRIPT} [DEST]")
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "wheelhouse", help="download the pinned wheels a run installs, for an air-gapped GPU machine (dependencies "
                           "not followed: cuda-bindings and the CUDA wheels are not included; add them with --package)",
        description="Every wheel a run needs (pins, numba-cuda releases, asv tools), downloaded for the "
                    "target's Python and platform, for an air-gapped GPU machine.",
    )
    p.add_argument("dir", metavar="DIR", help="folder the wheels go to (made if missing; files already there are kept)")
    p.add_argument("--python-version", default=DEFAULT_PYTHON_VERSION,
                   help=f"the target machine's Python (default {DEFAULT_PYTHON_VERSION})")
    p.add_argument("--platform", action="append", metavar="TAG",
                   help="wheel platform tag of the target (repeatable; default manylinux_2_17 .. "
                        "manylinux_2_28 x86_64)")
    p.add_argument("--variant", action="append", metavar="SPEC",
                   help="[NAME=][MECH@]numba-cuda==X.Y.Z, as for compare: its numba-cuda wheel is fetched "
                        "(repeatable; default 0.29.0 and 0.30.4)")
    p.add_argument("--constraints", metavar="FILE", help="pins to fetch (default: constraints.txt's)")
    p.add_argument("--build-deps", action="store_true",
                   help="also setuptools and wheel, to build numba-cuda commits (repo: variants) there")
    p.add_argument("--asv-builds", action="store_true",
                   help="also what asv's own per-commit virtualenvs need offline (build backend, pip, "
                        "cuda-pathfinder, virtualenv): for `launchbench asv-config --offline DIR`")
    p.add_argument("--package", action="append", metavar="REQ",
                   help="one more requirement to fetch, e.g. packaging (repeatable; no dependencies are followed)")
    p.add_argument("--split-mb", type=opt.SPLIT_MB, metavar="N",
                   help="also lay the files out into part-1, part-2, ... of at most N MiB each, larger files cut "
                        "into pieces with part-1/JOIN.sh to rejoin them (e.g. 40 for 64 MiB trips with the tree)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=run)
