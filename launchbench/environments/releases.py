"""Release series and their stacks: which released (or prebuilt) wheels a ``launchbench releases`` run
measures, and the dependency versions each one is installed with.

The grammar of one SERIES item (``docs/releases.md``):

- ``numba-cuda-mlir==0.3.0..0.6.0``  every final release from 0.3.0 to 0.6.0 (either end may be left
  open: ``numba-cuda==0.28.0..``); the versions come from the package index, or offline from
  ``--wheels DIR``
- ``numba-cuda==0.29.0,0.30.4``       these releases, in this order
- ``...+cuda-core==1.2.2+numba==0.68.1``  a *stack*: every point of the item pinned so
  (``+pinned``: the pins of constraints.txt); unpinned dependencies are resolved
- ``PATH.whl`` / ``DIR``               prebuilt wheels (CI artifacts), one point each, in the order
  given (a folder: its wheels by file name)

Each point's stack is *resolved*: for each of numba, llvmlite, numpy, cuda-core and cuda-bindings
that the release needs (its Requires-Dist, with numba's own for llvmlite and numpy), the newest
version that every chosen package's metadata allows and that has a wheel for the Python; a user's
pin is kept or refused in one line. ``step_down`` picks what to lower when the newest stack does not
import or launch. The metadata comes from wheels (``FolderIndex``: offline) or from the package
index's JSON API (``PyPIIndex``). ``packaging`` (a pip dependency) does the version and marker logic.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import zipfile

from ..base.errors import UserError
from .variants import DEFAULT_PINS

#: The dependencies a stack names, in resolution order (numba before the llvmlite and numpy it constrains).
TRACKED = ("numba", "llvmlite", "numpy", "cuda-core", "cuda-bindings")
PROJECTS = ("numba-cuda", "numba-cuda-mlir")
#: Import names of the tracked distributions: an import error naming one points at it.
MODULE_OF = {"numba": ("numba.core", "numba.np", "numba "), "llvmlite": ("llvmlite",), "numpy": ("numpy",),
             "cuda-core": ("cuda.core", "cuda_core"), "cuda-bindings": ("cuda.bindings", "cuda_bindings")}
#: What to lower first when an error names none of them: numba and cuda-core broke releases before.
STEP_ORDER = ("numba", "cuda-core", "numpy", "cuda-bindings", "llvmlite")
_ITEM_RE = re.compile(r"^(numba[-_]cuda(?:[-_]mlir)?)==(.+)$")
_PIN_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]*)==([0-9][A-Za-z0-9.+!-]*)$")
_VERSION_RE = re.compile(r"^[0-9][A-Za-z0-9.+!-]*$")
GRAMMAR = ("PROJECT==A..B, PROJECT==X,Y,Z or PROJECT==X (PROJECT numba-cuda or numba-cuda-mlir), each "
           "optionally +DEP==VERSION...+pinned, or a wheel file or a folder of wheels")


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def vkey(version: str):
    """A PEP 440 sort key (``packaging``)."""
    from packaging.version import (  # lazy: packaging is pip's, not stdlib
        InvalidVersion,
        Version,
    )
    try:
        return (1, Version(version))
    except InvalidVersion:
        return (0, version)


def is_final(version: str) -> bool:
    from packaging.version import (  # lazy: packaging is pip's, not stdlib
        InvalidVersion,
        Version,
    )
    try:
        v = Version(version)
    except InvalidVersion:
        return False
    return not (v.is_prerelease or v.is_devrelease)


# ---------------------------------------------------------------- the grammar (pure)

@dataclasses.dataclass(frozen=True)
class Item:
    """One SERIES item as written: a project's versions (a range or a list) or wheel files."""
    text: str
    project: str | None = None          # numba-cuda / numba-cuda-mlir; None for wheel files
    versions: tuple = ()                # a list as given
    lo: str | None = None               # a range's ends (None: open)
    hi: str | None = None
    is_range: bool = False
    wheels: tuple = ()                  # prebuilt wheel files, in order
    pins: tuple = ()                    # ((dep, version), ...) of a stack
    pinned: bool = False                # +pinned: constraints.txt's stack


@dataclasses.dataclass(frozen=True)
class Point:
    """One point of the series: a release (or a wheel file) on a stack (its own pins)."""
    project: str
    version: str
    wheel: str | None = None
    pins: tuple = ()
    pinned: bool = False

    @property
    def pin_text(self) -> str:
        return "".join(f"+{k}=={v}" for k, v in self.pins) + ("+pinned" if self.pinned else "")

    @property
    def label(self) -> str:
        if self.wheel:
            return os.path.basename(self.wheel) + self.pin_text
        return f"{self.project}=={self.version}{self.pin_text}"


def parse_stack(parts: list, text: str) -> tuple[tuple, bool]:
    """``['cuda-core==1.2.2', 'pinned', ...]`` -> (pins, pinned); one line for a bad or doubled pin."""
    pins: dict = {}
    pinned = False
    for part in parts:
        part = part.strip()
        if part == "pinned":
            pinned = True
            continue
        m = _PIN_RE.match(part)
        if not m:
            raise UserError(f"series {text!r}: stack pin {part!r} is not DEP==VERSION (or 'pinned'); "
                            f"e.g. numba-cuda==0.30.4+cuda-core==1.2.2")
        dep = canon(m.group(1))
        if dep in pins and pins[dep] != m.group(2):
            raise UserError(f"series {text!r}: conflicting pins {dep}=={pins[dep]} and {dep}=={m.group(2)}; "
                            "pin each dependency once")
        pins[dep] = m.group(2)
    return tuple(sorted(pins.items())), pinned


def parse_item(text: str) -> Item:
    """One SERIES argument -> Item; one-line errors for anything else."""
    raw = text.strip()
    if not raw:
        raise UserError(f"empty series item; give {GRAMMAR}")
    if raw.endswith(".whl") or os.path.isdir(raw):
        if os.path.isdir(raw):
            wheels = sorted(os.path.join(raw, f) for f in os.listdir(raw) if f.endswith(".whl"))
            if not wheels:
                raise UserError(f"series folder {raw} holds no .whl files; give a folder of wheels")
        else:
            if not os.path.isfile(raw):
                raise UserError(f"series wheel {raw} does not exist; give an existing .whl file")
            wheels = [raw]
        return Item(raw, wheels=tuple(os.path.abspath(w) for w in wheels))
    head, *stack = raw.split("+")
    m = _ITEM_RE.match(head.strip())
    if not m:
        raise UserError(f"series {text!r} is not understood; give {GRAMMAR}")
    project = canon(m.group(1))
    pins, pinned = parse_stack(stack, text)
    body = m.group(2).strip()
    if ".." in body:
        lo, _, hi = body.partition("..")
        lo, hi = lo.strip() or None, hi.strip() or None
        for end in (lo, hi):
            if end is not None and not _VERSION_RE.match(end):
                raise UserError(f"series {text!r}: {end!r} is not a version; e.g. {project}==0.3.0..0.6.0")
        if lo and hi and vkey(lo) > vkey(hi):
            raise UserError(f"series {text!r}: {lo} is newer than {hi}; write the older release first")
        return Item(text, project, lo=lo, hi=hi, is_range=True, pins=pins, pinned=pinned)
    versions = tuple(v.strip() for v in body.split(","))
    for v in versions:
        if not _VERSION_RE.match(v):
            raise UserError(f"series {text!r}: {v!r} is not a version; e.g. {project}==0.29.0,0.30.4")
    return Item(text, project, versions=versions, pins=pins, pinned=pinned)


def expand(item: Item, available: list) -> list:
    """The versions an item names, checked against *available* (the project's released versions):
    a range -> every final release inside it, oldest first; a list -> as given. One line for a
    version that was never released."""
    have = sorted(set(available), key=vkey)
    if item.is_range:
        got = [v for v in have if is_final(v) and (item.lo is None or vkey(v) >= vkey(item.lo))
               and (item.hi is None or vkey(v) <= vkey(item.hi))]
        for end in (item.lo, item.hi):
            if end is not None and not any(vkey(end) == vkey(v) for v in have):
                raise UserError(f"series {item.text!r}: {item.project} {end} was never released "
                                f"({_near(have, end)}); pick released ends")
        return got
    for v in item.versions:
        if not any(vkey(v) == vkey(h) for h in have):
            raise UserError(f"series {item.text!r}: {item.project} {v} was never released ({_near(have, v)}); "
                            "pick a released version")
    return list(item.versions)


def _near(have: list, version: str) -> str:
    if not have:
        return "none found"
    older = [v for v in have if vkey(v) < vkey(version)]
    newer = [v for v in have if vkey(v) > vkey(version)]
    parts = ([f"nearest older {older[-1]}"] if older else []) + ([f"nearest newer {newer[0]}"] if newer else [])
    return ", ".join(parts) + f"; {len(have)} known"


def points(items: list, index, global_pins: dict | None = None) -> list:
    """Every point of the series, in order: *index* lists each project's releases."""
    out = []
    for item in items:
        pins = dict(global_pins or {})
        pins.update(dict(item.pins))
        pins_t = tuple(sorted(pins.items()))
        if item.wheels:
            for w in item.wheels:
                name, version = wheel_name_version(w)
                out.append(Point(name, version, wheel=w, pins=pins_t, pinned=item.pinned))
            continue
        for v in expand(item, index.versions(item.project)):
            out.append(Point(item.project, v, pins=pins_t, pinned=item.pinned))
    labels = [p.label for p in out]
    doubled = sorted({x for x in labels if labels.count(x) > 1})
    if doubled:
        raise UserError(f"series names {doubled[0]} twice; give each point once")
    return out


# ---------------------------------------------------------------- wheels and metadata

def wheel_name_version(path: str) -> tuple[str, str]:
    """(canonical project name, version) from a wheel's file name."""
    parts = os.path.basename(path)[:-len(".whl")].split("-")
    if len(parts) < 5:
        raise UserError(f"{path} is not a wheel file name (NAME-VERSION-PY-ABI-PLATFORM.whl)")
    return canon(parts[0]), parts[1]


def wheel_tags(path: str) -> set:
    """The tags a wheel file supports, as ``py-abi-platform`` strings."""
    parts = os.path.basename(path)[:-len(".whl")].split("-")
    py, abi, plat = parts[-3:]
    return {f"{a}-{b}-{c}" for a in py.split(".") for b in abi.split(".") for c in plat.split(".")}


def read_requires(path: str) -> list:
    """A wheel's Requires-Dist lines (its METADATA)."""
    try:
        with zipfile.ZipFile(path) as z:
            meta = next((n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None)
            if meta is None:
                raise UserError(f"{path} has no .dist-info/METADATA; is it a wheel?")
            text = z.read(meta).decode("utf-8", "replace")
    except (OSError, zipfile.BadZipFile) as exc:
        raise UserError(f"cannot read wheel {path} ({exc}); give a wheel file") from None
    reqs = []
    for line in text.split("\n\n", 1)[0].splitlines():
        if line.lower().startswith("requires-dist:"):
            reqs.append(line.split(":", 1)[1].strip())
    return reqs


class FolderIndex:
    """Versions, wheel tags and Requires-Dist from a folder of wheels (offline)."""

    def __init__(self, folder: str):
        self.folder = folder
        self.files: dict = {}  # name -> version -> [paths]
        for f in sorted(os.listdir(folder)):
            if f.endswith(".whl"):
                try:
                    name, version = wheel_name_version(f)
                except UserError:
                    continue
                self.files.setdefault(name, {}).setdefault(version, []).append(os.path.join(folder, f))
        self._requires: dict = {}
        self.where = f"in --wheels {folder}"

    def versions(self, name: str) -> list:
        return sorted(self.files.get(canon(name), {}), key=vkey)

    def tags(self, name: str, version: str) -> set:
        return set().union(*[wheel_tags(p) for p in self.files.get(canon(name), {}).get(version, [])] or [set()])

    def requires(self, name: str, version: str) -> list:
        key = (canon(name), version)
        if key not in self._requires:
            paths = self.files.get(key[0], {}).get(version)
            self._requires[key] = read_requires(paths[0]) if paths else []
        return self._requires[key]


class PyPIIndex:
    """The package index's JSON API (``/pypi/NAME/json``): every version and its files' tags, so a
    version never released and one with no wheel for this Python are told apart."""

    def __init__(self, url: str = "https://pypi.org/pypi", fetch=None):
        self.url = url.rstrip("/")
        self.fetch = fetch or self._fetch
        self._project: dict = {}
        self.where = "on the package index"

    def _fetch(self, url: str) -> dict:
        import urllib.error  # lazy: only an online run asks the index
        import urllib.request  # lazy: as above
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return {}
            raise UserError(f"the package index answered {exc.code} for {url}; retry, or pass --wheels DIR "
                            "to work offline") from None
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot reach the package index ({exc}); pass --wheels DIR to work offline") from None

    def _info(self, name: str) -> dict:
        name = canon(name)
        if name not in self._project:
            self._project[name] = self.fetch(f"{self.url}/{name}/json")
        return self._project[name]

    def versions(self, name: str) -> list:
        rel = self._info(name).get("releases") or {}
        return sorted((v for v, files in rel.items() if files and not all(f.get("yanked") for f in files)), key=vkey)

    def tags(self, name: str, version: str) -> set:
        files = (self._info(name).get("releases") or {}).get(version) or []
        out = set()
        for f in files:
            if f.get("packagetype") == "bdist_wheel" and not f.get("yanked"):
                out |= wheel_tags(f["filename"])
            elif f.get("packagetype") == "sdist":
                out.add("sdist")
        return out

    def requires(self, name: str, version: str) -> list:
        raise UserError("the package index's JSON API gives no per-version metadata here; online stacks are "
                        "resolved by pip (stacks.pip_resolve)")


def installable(tags: set, supported: list) -> bool:
    """Whether a version's files include one for this Python (*supported*: its tags, best first)."""
    return bool(tags & set(supported))


# ---------------------------------------------------------------- resolution (pure over an index)

class Conflict(Exception):
    """No stack satisfies the metadata and the pins: the message says which constraint."""


def _constraints(requires: list, extras: tuple, environment: dict) -> dict:
    """{dep: SpecifierSet} of the tracked deps among *requires* whose markers hold (with *extras*)."""
    from packaging.requirements import (  # lazy: packaging is pip's
        InvalidRequirement,
        Requirement,
    )
    from packaging.specifiers import SpecifierSet  # lazy: as above
    out: dict = {}
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = canon(req.name)
        if name not in TRACKED:
            continue
        if req.marker is not None:
            envs = [dict(environment, extra=e) for e in (extras or ("",))] + [dict(environment, extra="")]
            if not any(req.marker.evaluate(env) for env in envs):
                continue
        out[name] = out.get(name, SpecifierSet()) & req.specifier
    return out


def resolve(requires: list, index, supported: list, pins: dict | None = None, caps: dict | None = None,
            extras: tuple = ("cu13",), environment: dict | None = None) -> dict:
    """The newest stack of the tracked dependencies: {dep: version}.

    *requires*: the release's Requires-Dist; *index*: versions, tags and Requires-Dist of the deps;
    *supported*: this Python's wheel tags; *pins*: versions the user fixed (kept or refused);
    *caps*: {dep: version} upper bounds, exclusive (``step_down``'s). Only the deps the release needs
    (directly, or through numba) are chosen. Raises ``Conflict`` with a one-line reason.
    """
    from packaging.specifiers import SpecifierSet  # lazy: packaging is pip's
    from packaging.version import Version  # lazy: as above
    pins = {canon(k): v for k, v in (pins or {}).items()}
    caps = caps or {}
    environment = environment or {}
    root = _constraints(requires, extras, environment)
    for dep, version in pins.items():
        if dep in root and Version(version) not in root[dep]:
            raise Conflict(f"pin {dep}=={version} conflicts with the release's requirement {dep}{root[dep]}")

    def candidates(dep: str, spec) -> list:
        if dep in pins:
            v = pins[dep]
            if v not in index.versions(dep) and not any(vkey(v) == vkey(h) for h in index.versions(dep)):
                raise Conflict(f"pin {dep}=={v}: no such version {index.where}")
            return [v]
        got = [v for v in reversed(index.versions(dep)) if is_final(v) and Version(v) in spec
               and (dep not in caps or vkey(v) < vkey(caps[dep])) and installable(index.tags(dep, v), supported)]
        return got

    needed = [d for d in TRACKED if d in root or d in pins]
    reasons: list = []

    def search(i: int, chosen: dict, cons: dict):
        if i == len(needed):
            return chosen
        dep = needed[i]
        if dep not in root and dep not in cons and dep not in pins:
            return search(i + 1, chosen, cons)
        spec = cons.get(dep, SpecifierSet())
        options = candidates(dep, spec)
        if dep in pins and Version(pins[dep]) not in spec:
            who = next((c for c in chosen if dep in _constraints(index.requires(c, chosen[c]), extras,
                                                                   environment)), "another pin")
            reasons.append(f"pin {dep}=={pins[dep]} conflicts with {who}=={chosen.get(who, '')}'s "
                           f"requirement {dep}{spec}")
            return None
        if not options:
            reasons.append(f"no {dep} {index.where} satisfies {spec or 'any version'}"
                           + (f" below {caps[dep]}" if dep in caps else "") + " with a wheel for this Python")
        for v in options:
            extra = _constraints(index.requires(dep, v), extras, environment)
            if any(c in chosen and Version(chosen[c]) not in s for c, s in extra.items()):
                continue  # it forbids a dependency chosen before it
            merged = dict(cons)
            for c, s in extra.items():
                merged[c] = merged.get(c, SpecifierSet()) & s
            # deps numba pulls in (llvmlite, numpy) join the search when the release itself omits them
            for c in extra:
                if c not in needed:
                    needed.append(c)
            got = search(i + 1, {**chosen, dep: v}, merged)
            if got is not None:
                return got
        return None

    got = search(0, {}, dict(root))
    if got is None:
        raise Conflict(reasons[0] if reasons else "no stack satisfies the release's requirements")
    return {d: got[d] for d in TRACKED if d in got}


def step_down(stack: dict, error: str, pinned: dict, tried: list) -> str | None:
    """Which dependency to lower after *stack* failed with *error*: the one the error names, else the
    first of ``STEP_ORDER`` not pinned by the user; None when nothing is left to lower.
    *tried*: the deps lowered so far (each is lowered below its current major.minor series)."""
    text = (error or "").lower()
    free = [d for d in STEP_ORDER if d in stack and canon(d) not in {canon(k) for k in pinned}]
    # "Numba needs NumPy 2.4 or less. Got NumPy 2.5.": the one needed at an older version is the one to lower
    needed = re.search(r"needs\s+([a-z][\w.-]*)\s+[0-9][\w.]*\s+or\s+(?:less|older|lower)", text)
    if needed:
        dep = next((d for d in free if any(needed.group(1) == m.strip().split(".")[0].replace("_", "-")
                                           or needed.group(1) == d for m in MODULE_OF[d])), None)
        if dep:
            return dep
    for dep in free:  # module names as the error writes them (ImportError texts capitalize: NumPy, Numba)
        if any(m.lower() in text for m in MODULE_OF[dep]):
            return dep
    return free[0] if free else None


def series_cap(version: str) -> str:
    """The exclusive cap that drops a whole major.minor series: 0.68.1 -> 0.68 (below 0.68.0)."""
    parts = version.split(".")
    return ".".join(parts[:2]) + ".0a0" if len(parts) >= 2 else version


def default_pins() -> dict:
    """constraints.txt's stack (``+pinned``)."""
    return dict(DEFAULT_PINS)


def folder_closure(reqs: list, index: FolderIndex, environment: dict | None = None) -> list:
    """``NAME==VERSION`` for every distribution the folder holds that *reqs* need (transitively, markers
    and extras evaluated) and do not name: what an offline ``pip install --no-deps`` of *reqs* must add.

    Why: offline, pip's resolver fails on a requirement the folder cannot satisfy (numba-cuda's
    ``cu13`` extra names the CUDA toolkit the host site holds), and the ``--no-deps`` retry then left
    out what the folder does hold (cuda-bindings 13.5 without cuda-pathfinder did not import).
    """
    from packaging.markers import default_environment  # lazy: packaging is pip's
    from packaging.requirements import InvalidRequirement, Requirement  # lazy: as above
    from packaging.version import InvalidVersion, Version  # lazy: as above
    environment = environment or default_environment()

    def parse(text):
        try:
            return Requirement(text.split(" @ ", 1)[0] if " @ " in text else text)
        except InvalidRequirement:
            return None

    def newest(name, spec):
        for v in reversed(index.versions(name)):
            try:
                if Version(v) in spec and (is_final(v) or spec):
                    return v
            except InvalidVersion:
                continue
        return None

    named = {canon(r.name) for r in map(parse, reqs) if r is not None}
    queue = [r for r in map(parse, reqs) if r is not None]
    added: list = []
    seen: set = set()
    while queue:
        req = queue.pop(0)
        name = canon(req.name)
        version = newest(name, req.specifier)
        if version is None or (name, version) in seen:
            continue
        seen.add((name, version))
        for line in index.requires(name, version):
            dep = parse(line)
            if dep is None:
                continue
            if dep.marker is not None and not any(
                    dep.marker.evaluate(dict(environment, extra=e)) for e in (sorted(req.extras) or [""])):
                continue
            dname = canon(dep.name)
            if dname in named or newest(dname, dep.specifier) is None:
                continue
            named.add(dname)
            added.append(f"{dname}=={newest(dname, dep.specifier)}")
            queue.append(dep)
    return added
