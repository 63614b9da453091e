"""What a variant is: parsing ``--repo``/``--variant`` specs and resolving them to environments.

Forms (NAME=SPEC):

- ``numba-cuda==X.Y.Z``        a released wheel in its own cached virtualenv
- ``repo:PATH`` (or ``--repo``) a numba-cuda checkout built into its own virtualenv
- ``env:PATH``                 an existing environment (venv dir or python executable), used as is
- ``numba-cuda-mlir==X.Y.Z``   numba-cuda-mlir, the successor, in its own virtualenv (no numba pins)
- ``mlir-env:PATH``            an existing environment measured through ``numba_cuda_mlir.cuda``
- ``MECH@BASE``                mechanism MECH (launchbench.workloads.capture.mechanisms) installed at run time on
                               BASE, which is any form above or the NAME of another variant

Mechanism variants share their base's environment, so ``contextvar@numba-cuda==0.29.0``
and ``numba-cuda==0.29.0`` differ only in the mechanism. Pure and import-light.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..base import outpaths
from ..base.errors import UserError
from ..workloads.capture import mechanisms

#: Pins for every built environment; kept equal to constraints.txt (a test checks).
DEFAULT_PINS = {"numba": "0.65.1", "llvmlite": "0.47.0", "numpy": "2.3.5", "cuda-core": "0.7.0"}

#: ``launchbench compare`` with no variants: baseline, contextvar replayed on it, v2.
DEFAULT_VARIANTS = (
    ("variant", "baseline=numba-cuda==0.29.0"),
    ("variant", "contextvar=contextvar@numba-cuda==0.29.0"),
    ("variant", "v2=numba-cuda==0.30.4"),
)

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")
WHEEL_RE = re.compile(r"^numba[-_]cuda==([0-9][A-Za-z0-9.+!-]*)$")
MLIR_RE = re.compile(r"^numba[-_]cuda[-_]mlir==([0-9][A-Za-z0-9.+!-]*)$")
FORMS = ("numba-cuda==X.Y.Z, numba-cuda-mlir==X.Y.Z, repo:PATH, env:PATH, mlir-env:PATH or MECH@BASE "
         "(e.g. contextvar@numba-cuda==0.29.0)")
#: Pins numba-cuda-mlir envs keep: it has no numba dependency, so numba/llvmlite pins would only add packages.
MLIR_PIN_NAMES = ("numpy", "cuda-core", "cuda-bindings")
#: What makes a tree numba-cuda's: its CUDA package and the launch path in it (CUDADispatcher and
#: _LaunchConfiguration live in dispatcher.py from v0.0.1 on). Without them a build installs only
#: metadata and ``numba.cuda`` resolves to numba's own bundled copy, which would be measured instead.
CUDA_PACKAGE_FILES = ("numba_cuda/numba/cuda/__init__.py", "numba_cuda/numba/cuda/dispatcher.py")


@dataclass(frozen=True)
class Base:
    """What an environment holds: ``kind`` wheel/repo/env and its ``target``."""

    kind: str
    target: str  # "numba-cuda==0.29.0", a checkout's real path, or an env path
    module: str = "numba-cuda"  # what the worker imports (launchbench.base.cudamod): numba-cuda or numba-cuda-mlir

    @property
    def label(self) -> str:
        if self.kind == "wheelfile":  # a per-commit build (launchbench history/bisect)
            return os.path.basename(self.target)
        return self.target if self.kind == "wheel" else f"{self.kind}:{self.target}"


@dataclass(frozen=True)
class Variant:
    name: str
    spec: str
    base: Base
    mechanism: str | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def kind(self) -> str:
        return "mechanism" if self.mechanism else self.base.kind


def split_assignment(text: str, option: str) -> tuple[str, str]:
    name, sep, spec = text.partition("=")
    name, spec = name.strip(), spec.strip()
    if not sep or not name or not spec:
        raise UserError(f"{option} {text!r}: expected NAME=SPEC with SPEC one of {FORMS}")
    if not NAME_RE.match(name):
        raise UserError(f"{option} {text!r}: variant name {name!r} must start with a letter and use only letters, "
                        "digits, '_', '.', '-'")
    return name, spec


def check_repo(path: str) -> str:
    """The real path of a numba-cuda checkout, or a one-line error."""
    real = os.path.realpath(os.path.expanduser(path))
    if not os.path.exists(real):
        raise UserError(f"repo path {path} does not exist; pass the root of a numba-cuda clone")
    has_build = os.path.isfile(os.path.join(real, "pyproject.toml")) or os.path.isfile(os.path.join(real, "setup.py"))
    if not (os.path.isdir(os.path.join(real, "numba_cuda")) and has_build):
        raise UserError(
            f"{path} is not a numba-cuda checkout (no numba_cuda/ package next to a pyproject.toml or "
            f"setup.py); pass the root of a clone of https://github.com/NVIDIA/numba-cuda"
        )
    missing = [f for f in CUDA_PACKAGE_FILES if not os.path.isfile(os.path.join(real, f))]
    if missing:
        raise UserError(f"{path} holds no numba-cuda CUDA package (no {missing[0]}), so numba's own numba.cuda "
                        "would be measured; pass the root of a clone of https://github.com/NVIDIA/numba-cuda")
    return real


def env_python(path: str) -> str:
    """The python executable of an existing environment given as a directory or executable."""
    real = os.path.abspath(os.path.expanduser(path))
    if os.path.isdir(real):
        for candidate in ("bin/python", "bin/python3", "Scripts/python.exe"):
            exe = os.path.join(real, candidate)
            if os.path.exists(exe):
                return exe
        raise UserError(f"env:{path} has no bin/python; pass a virtualenv directory or a python executable")
    if os.path.isfile(real) and os.access(real, os.X_OK):
        return real
    raise UserError(f"env path {path} does not exist; pass an existing virtualenv directory or python executable")


def parse_base(spec: str, option: str, known: dict | None = None) -> Base:
    """A base spec (no mechanism) -> Base; *known* maps earlier variant names to Variants."""
    m = WHEEL_RE.match(spec)
    if m:
        return Base("wheel", f"numba-cuda=={m.group(1)}")
    m = MLIR_RE.match(spec)
    if m:
        return Base("wheel", f"numba-cuda-mlir=={m.group(1)}", module="numba-cuda-mlir")
    if spec.startswith("mlir-env:"):
        env_python(spec[9:])
        return Base("env", os.path.abspath(os.path.expanduser(spec[9:])), module="numba-cuda-mlir")
    if spec.startswith("repo:"):
        return Base("repo", check_repo(spec[5:]))
    if spec.startswith("env:"):
        env_python(spec[4:])  # validate now: one-line error before anything is built
        return Base("env", os.path.abspath(os.path.expanduser(spec[4:])))
    if known and spec in known:
        return known[spec].base
    raise UserError(f"{option}: unknown variant spec {spec!r}; use {FORMS}")


def _validate_mechanism(mech: str, option: str) -> str:
    try:
        return mechanisms.validate(mech)
    except UserError as exc:
        raise UserError(f"{option}: {exc}") from None


def parse_variant(option: str, text: str, known: dict) -> Variant:
    """One ``--repo``/``--variant`` value -> Variant (``known``: variants parsed so far)."""
    flag = f"--{option}"
    name, spec = split_assignment(text, flag)
    if name in known:
        raise UserError(f"{flag} {text!r}: variant name {name!r} is used twice; give each variant its own name")
    if option == "repo":
        return Variant(name, f"repo:{spec}", Base("repo", check_repo(spec)))
    mech, at, base_spec = spec.partition("@")
    if at:
        if not mech.strip() or not base_spec.strip():
            raise UserError(f"{flag} {text!r}: expected MECH@BASE, e.g. contextvar@numba-cuda==0.29.0")
        mech = _validate_mechanism(mech.strip(), f"{flag} {text!r}")
        return Variant(name, spec, parse_base(base_spec.strip(), f"{flag} {text!r}", known), mech)
    return Variant(name, spec, parse_base(spec, f"{flag} {text!r}", known))


def parse_variants(items, reference: str | None = None, minimum: int = 2) -> tuple[list[Variant], str]:
    """``[(option, text), ...]`` in command-line order -> (variants, reference name).

    No items means the embedded default. The reference is the first variant
    unless named. *minimum*: the fewest variants the command takes (``counts`` takes one).
    """
    items = list(items) or list(DEFAULT_VARIANTS)
    known: dict[str, Variant] = {}
    for option, text in items:
        variant = parse_variant(option, text, known)
        known[variant.name] = variant
    variants = list(known.values())
    if len(variants) < minimum:
        raise UserError("compare needs at least two variants (the first is the reference); add another --variant or --repo")
    if reference is None:
        reference = variants[0].name
    elif reference not in known:
        raise UserError(f"--reference {reference!r} is not a variant; choose one of {', '.join(known)}")
    return variants, reference


MAX_CONSTRAINTS_BYTES = 1 << 20  # a constraints file is a few lines


def parse_pins(path: str | None) -> dict:
    """Pins from a constraints file (``name==version`` lines), or the defaults."""
    if path is None:
        return dict(DEFAULT_PINS)
    pins = {}
    if not str(path).strip():
        raise UserError("--constraints is empty; give a file of name==version lines, e.g. --constraints constraints.txt")
    try:
        outpaths.check_regular(path, "--constraints")  # a FIFO would block, /dev/zero never end
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_CONSTRAINTS_BYTES + 1)
        if len(text) > MAX_CONSTRAINTS_BYTES:
            raise UserError(f"--constraints {path} is over {MAX_CONSTRAINTS_BYTES >> 20} MiB, not a constraints file; "
                            "give a file of name==version lines, e.g. constraints.txt")
        lines = text.splitlines()
    except OSError as exc:
        raise UserError(f"--constraints: cannot read constraints file {path} ({exc.strerror}); pass an existing "
                        "file") from None
    except UnicodeDecodeError:
        raise UserError(f"--constraints {path} is not a text file (not UTF-8); give a file of name==version "
                        "lines, e.g. constraints.txt") from None
    for lineno, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not name.strip() or not version.strip():
            raise UserError(f"{path}:{lineno}: expected name==version, got {line!r}")
        pins[name.strip().lower()] = version.strip()
    return pins


