"""Each point of a release series in its own environment, on its resolved stack, checked before any
timing: it installs, imports and (on a GPU or the simulator) launches, or it gets one line saying why
and the run goes on with the rest (``ReleaseEnvs.build``, handed to ``engine.history.Session``).

Resolution (``releases.resolve`` over a ``--wheels`` folder, or pip's own resolver online through
``pip install --dry-run --report``) gives the newest stack the metadata allows; when that stack does
not import or launch, the dependency the error names (else numba, cuda-core, numpy, ...) is lowered
below its major.minor series and the point is tried again, up to ``tries`` stacks, each recorded.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

from ..base.errors import UserError
from . import envs, releases
from .releases import Conflict, Point
from .variants import Base

#: The check run inside a point's environment: import, then one launch (GPU or simulator).
CHECK_CODE = r"""
import os, sys
mod, launch = sys.argv[1], sys.argv[2] == "1"
if ":" in mod:  # a Python callable (tests' stand-in packages)
    import importlib
    m, f = mod.split(":")
    getattr(importlib.import_module(m), f)()
    print("ok"); raise SystemExit(0)
if mod == "numba-cuda-mlir":
    from numba_cuda_mlir import cuda
else:
    from numba import cuda
print("imported", flush=True)
if launch:
    @cuda.jit
    def k():
        pass
    k[1, 1]()
    cuda.synchronize()
print("ok")
"""


def supported_tags(python: str) -> list:
    """The wheel tags *python* installs, best first (pip's own ``packaging``)."""
    code = ("import json\ntry:\n    from packaging import tags\nexcept ImportError:\n"
            "    from pip._vendor.packaging import tags\nprint(json.dumps([str(t) for t in tags.sys_tags()]))\n")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    if out.returncode != 0:
        raise UserError(f"cannot list the wheel tags of {python} (neither packaging nor pip there); "
                        "pass a python with pip via --python")
    return json.loads(out.stdout.strip().splitlines()[-1])


def last_error(text: str) -> str:
    """The line of a failure that says why (an exception, pip's ERROR), shortened."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^([A-Za-z_.]+(Error|Exception)|ERROR)\b", ln) or "Error:" in ln:
            return ln[:240]
    return (lines[-1] if lines else "no output")[:240]


def pip_resolve(python: str, requirement: str, pins: dict, caps: dict, wheels: str | None) -> dict:
    """Online (or from a folder with pip's resolver): the versions pip picks for *requirement* with
    *pins* and exclusive *caps*, restricted to the tracked deps. Raises ``Conflict`` with pip's line."""
    reqs = [requirement] + [f"{k}=={v}" for k, v in sorted(pins.items())]
    reqs += [f"{k}<{v}" for k, v in sorted(caps.items()) if k not in pins]
    with tempfile.TemporaryDirectory(prefix="launchbench-resolve-") as tmp:
        report = os.path.join(tmp, "report.json")
        cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--disable-pip-version-check",
               "--no-input", "--report", report]
        if wheels:
            cmd += ["--no-index", "--find-links", wheels]
        out = subprocess.run(cmd + reqs, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=900, check=False)
        if out.returncode != 0:
            raise Conflict(f"pip finds no stack for {' '.join(reqs)}: {last_error(out.stderr + out.stdout)}")
        with open(report, encoding="utf-8") as fh:
            got = json.load(fh)
    versions = {releases.canon(i["metadata"]["name"]): i["metadata"]["version"] for i in got.get("install", [])}
    return {d: versions[d] for d in releases.TRACKED if d in versions}


class ReleaseEnvs:
    """What ``engine.history.Session`` asks of its environments, for a release series."""

    make_overlay = staticmethod(envs.make_overlay)
    cache = None

    def __init__(self, points: list, index, say, env_dir: str | None, python: str | None, wheels: str | None,
                 extras: str | None, site_from: str | None, target: str | None, launch: bool, simulator: bool,
                 tries: int = 4, pinned_stack: dict | None = None):
        self.points = points
        self.index = index
        self.say = say
        self.env_dir = env_dir
        self.python = python or sys.executable
        self.wheels = wheels
        self.extras = extras if extras is not None else ("" if (site_from or target) else "cu13")
        self.site_from = site_from
        self.target = target
        self.launch = launch
        self.simulator = simulator
        self.tries = tries
        self.pinned_stack = dict(pinned_stack) if pinned_stack is not None else releases.default_pins()
        self._tags = None
        self.by_name: dict = {}  # variant name -> Point (records_of fills it)

    @property
    def tags(self) -> list:
        if self._tags is None:
            self._tags = supported_tags(self.python)
        return self._tags

    # -------------------------------------------------------- one point

    def requirement(self, point: Point) -> str:
        extras = f"[{self.extras}]" if self.extras else ""
        if point.wheel:
            return f"{point.project}{extras} @ file://{point.wheel}" if extras else point.wheel
        return f"{point.project}{extras}=={point.version}"

    def user_pins(self, point: Point) -> dict:
        pins = dict(self.pinned_stack) if point.pinned else {}
        pins.update(dict(point.pins))
        return pins

    def stack(self, point: Point, caps: dict) -> dict:
        """The resolved stack (``Conflict`` when none)."""
        pins = self.user_pins(point)
        extras = tuple(e.strip() for e in self.extras.split(",") if e.strip())
        if self.wheels:
            requires = (releases.read_requires(point.wheel) if point.wheel
                        else self.index.requires(point.project, point.version))
            return releases.resolve(requires, self.index, self.tags, pins=pins, caps=caps, extras=extras,
                                    environment=_marker_env(self.python))
        return pip_resolve(self.python, self.requirement(point), pins, caps, None)

    def refuse_early(self, point: Point) -> str | None:
        """Why *point* cannot install here before anything is built: no wheel for this Python."""
        if point.wheel:
            ok = releases.installable(releases.wheel_tags(point.wheel), self.tags)
            return None if ok else f"{os.path.basename(point.wheel)} has no wheel tag for this Python"
        tags = self.index.tags(point.project, point.version)
        if not releases.installable(tags, self.tags):
            have = sorted(t for t in tags if t != "sdist")
            py = self.tags[0].split("-")[0] if self.tags else "this Python"
            return (f"no wheel for {py} {self.index.where} (its files: "
                    f"{', '.join(sorted({t.split('-')[0] for t in have})) or 'source only'})")
        return None

    def environment(self, point: Point, stack: dict, label: str):
        module = "numba-cuda-mlir" if point.project == "numba-cuda-mlir" else "numba-cuda"
        base = Base("wheelfile", point.wheel, module=module) if point.wheel else \
            Base("wheel", f"{point.project}=={point.version}", module=module)
        manager = envs.EnvManager(env_dir=self.env_dir, python=self.python, pins=stack, wheels=self.wheels,
                                  site_from=self.site_from, extras=self.extras, log=self.say)
        env = manager.ensure(base, label)
        envs.check_python_matches(env, label)
        return env

    def check(self, python: str, point: Point) -> str | None:
        """None when the env imports (and launches); else the line saying why not."""
        what = self.target or point.project
        environ = dict(os.environ)
        environ.pop("NUMBA_ENABLE_CUDASIM", None)
        if self.simulator:
            environ["NUMBA_ENABLE_CUDASIM"] = "1"
        launch = self.launch and not (self.simulator and point.project == "numba-cuda-mlir")
        try:
            out = subprocess.run([python, "-c", CHECK_CODE, what, "1" if launch else "0"], capture_output=True,
                                 text=True, timeout=600, env=environ, stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            return "the import/launch check ran over 600 s"
        if out.returncode == 0 and out.stdout.strip().endswith("ok"):
            return None
        imported = "imported" in out.stdout.split()
        return ("does not launch: " if imported else "does not import: ") + last_error(out.stderr + out.stdout)

    def prepare(self, point: Point, label: str) -> dict:
        """One point: its stack, env and check, each try recorded; ``refused`` says why when none works."""
        rec = {"stack": None, "tried": [], "refused": None, "user_pins": self.user_pins(point)}
        early = self.refuse_early(point)
        if early:
            rec["refused"] = early
            return rec
        caps: dict = {}
        for _ in range(self.tries):
            try:
                stack = self.stack(point, caps)
            except Conflict as exc:
                if rec["tried"]:
                    break  # nothing older left to try: the last stack's error says why
                rec["refused"] = ("conflicting pins: " if rec["user_pins"] else "no stack: ") + str(exc)
                return rec
            try:
                env = self.environment(point, stack, label)
            except UserError as exc:
                rec["tried"].append({"stack": stack, "error": f"does not install: {exc}"})
                rec["refused"] = f"does not install with {_stack_text(stack)}: {exc}"
                return rec
            error = self.check(env.python, point)
            rec["tried"].append({"stack": stack, "error": error})
            if error is None:
                rec.update(stack=stack, python=env.python, env=env.path)
                return rec
            dep = releases.step_down(stack, error, rec["user_pins"], [t["stack"] for t in rec["tried"]])
            if dep is None:
                break
            caps[dep] = releases.series_cap(stack[dep])
            self.say(f"launchbench: {point.label} with {_stack_text(stack)} {error}; trying {dep} < {caps[dep]}")
        last = rec["tried"][-1]
        rec["refused"] = f"{last['error']} (with {_stack_text(last['stack'])}; {len(rec['tried'])} stack(s) tried)"
        return rec

    # -------------------------------------------------------- Session's interface

    def build(self, _clone, records: list) -> None:
        """Each measured record's stack, env and check; a refused one is reported in one line and skipped."""
        for rec in records:
            if not rec["measured"]:
                continue
            point = self.by_name[rec["variant_name"]]
            got = self.prepare(point, rec["variant_name"])
            rec.update({k: v for k, v in got.items() if k != "python"})
            if got["refused"]:
                rec["measured"] = False
                # always shown (--quiet too): the run goes on without this point
                print(f"launchbench: {point.label}: {got['refused']}; skipped", file=sys.stderr, flush=True)
                continue
            rec.update(variant=rec["variant_name"], python=got["python"], build={"ok": True})


def _stack_text(stack: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in stack.items()) or "no tracked dependencies"


def _marker_env(python: str) -> dict:
    """The environment markers of *python* (python_version, sys_platform, ...)."""
    facts = envs.python_facts(python)
    major, minor = facts["minor"]
    return {"python_version": f"{major}.{minor}", "python_full_version": facts["version"],
            "sys_platform": sys.platform, "platform_system": os.uname().sysname, "platform_machine": os.uname().machine,
            "os_name": os.name, "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def records_of(points: list, by_name: dict) -> list:
    """Session's records for the series' points (``sha`` is the point's label: steps key on it);
    *by_name* gets variant name -> Point."""
    out = []
    for i, p in enumerate(points):
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"r{i + 1:02d}-{p.version}{p.pin_text}")[:60]
        out.append({"sha": p.label, "short": p.label, "subject": p.label, "date": None, "measured": True,
                    "aa": False, "identical_to": None, "variant": None, "variant_name": name, "wheel": p.wheel,
                    "project": p.project, "version": p.version, "build": None})
        by_name[name] = p
    return out
