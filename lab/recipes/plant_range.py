"""Build a test range for history and bisect: N first-parent commits on top of a numba-cuda commit,
with launch-cost steps planted at random positions, and a manifest of where they are.

    python lab/recipes/plant_range.py CLONE BASE BRANCH --commits 100 --python-steps 8 --c-steps 2 \
        --seed 1 --manifest range.json

CLONE is a numba-cuda clone of your own (it gets BRANCH; nothing else changes). Each commit is one of:

- ``python``: N extra statements at the top of ``CUDADispatcher.call`` (``_lb_k = k``: 2 bytecodes
  each, or ``len(())``: 4 bytecodes and 1 C call each): a step of an exact bytecode count that
  counts see and the clock may or may not resolve;
- ``c``: a busy loop of SPIN iterations at the top of the C dispatcher's ``Dispatcher_cuda_call``
  (``_dispatcher.cpp``): a step only the clock can see;
- ``code``: a comment added to a launch-path module: a new build whose bytecodes are unchanged;
- ``docs``: a line added to a file outside the package (grouped with its predecessor's build);
- ``decoy-c``: an unused inline function and a comment added to ``_dispatcher.cpp``: a compiled-source
  change (bisect's hints time it first) that costs nothing;
- ``decoy-py``: one local store at the top of ``CUDADispatcher.call``: +2 bytecodes that counts see and
  that cost a few nanoseconds, far below any step the clock resolves.

A bisect on such a range must name a planted ``python`` or ``c`` step or say undecided; naming a decoy
is a wrong answer (``score_bisect.py`` says so).

The manifest lists every commit (sha, kind, bytecodes and calls added per launch, spin) and the
steps, so a history or bisect run can be scored against it. Seeded: the same arguments give the
same range (commit dates are fixed too, so the SHAs repeat).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import random
import subprocess
import sys

DISPATCHER = "numba_cuda/numba/cuda/dispatcher.py"
CEXT = "numba_cuda/numba/cuda/cext/_dispatcher.cpp"
COMMENT_TARGETS = ("numba_cuda/numba/cuda/dispatcher.py", "numba_cuda/numba/cuda/args.py",
                   "numba_cuda/numba/cuda/cudadrv/driver.py")
DOCS_FILE = "PLANTED_RANGE.md"
C_ANCHOR = "int exact_match_required = self->can_compile ? 1 : self->exact_match_required;"


def git(clone: str, *args: str, env: dict | None = None) -> str:
    out = subprocess.run(["git", "-C", clone, *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"plant_range: git {' '.join(args)} failed: {out.stderr.strip()}")
    return out.stdout.strip()


def call_body_line(source: str) -> tuple[int, str]:
    """(line index, indent) of CUDADispatcher.call's first statement after its docstring."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "CUDADispatcher":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    body = item.body
                    first = body[1] if (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                                        and isinstance(body[0].value.value, str) and len(body) > 1) else body[0]
                    line = source.splitlines()[first.lineno - 1]
                    return first.lineno - 1, line[: len(line) - len(line.lstrip())]
    sys.exit(f"plant_range: no CUDADispatcher.call in {DISPATCHER}")


def plant_python(path: str, tag: int, statements: int, calls: bool) -> tuple[int, int]:
    """Add *statements* statements to CUDADispatcher.call; returns (bytecodes, calls) they add per launch."""
    with open(path) as fh:
        source = fh.read()
    index, indent = call_body_line(source)
    if calls:
        new = [f"{indent}len(())  # launchbench planted step {tag}"] * statements
        added = (4 * statements, statements)  # LOAD_GLOBAL, LOAD_CONST, CALL, POP_TOP; one C call
    else:
        new = [f"{indent}_lb_{tag}_{k} = {k}  # launchbench planted step {tag}" for k in range(statements)]
        added = (2 * statements, 0)  # LOAD_CONST, STORE_FAST
    lines = source.splitlines(keepends=True)
    lines[index:index] = [ln + "\n" for ln in new]
    with open(path, "w") as fh:
        fh.write("".join(lines))
    return added


def plant_c(path: str, tag: int, spin: int) -> None:
    with open(path) as fh:
        source = fh.read()
    if C_ANCHOR not in source:
        sys.exit(f"plant_range: {CEXT} has no line {C_ANCHOR!r}; this numba-cuda's C dispatcher differs")
    loop = (f"\n    {{ /* launchbench planted step {tag} */ volatile unsigned long lb_spin_{tag}; "
            f"for (lb_spin_{tag} = 0; lb_spin_{tag} < {spin}UL; lb_spin_{tag}++) {{ }} }}")
    with open(path, "w") as fh:
        fh.write(source.replace(C_ANCHOR, C_ANCHOR + loop, 1))


def plant_c_decoy(path: str, tag: int) -> None:
    """A compiled-source edit that changes no instruction on the launch path."""
    with open(path) as fh:
        source = fh.read()
    with open(path, "w") as fh:
        fh.write(source + f"\n/* launchbench decoy {tag}: not called */\n"
                 f"static inline int lb_decoy_{tag}(void) {{ return {tag}; }}\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("clone")
    p.add_argument("base", help="the commit the range starts from (GOOD)")
    p.add_argument("branch", help="the branch to create in CLONE (its tip is BAD)")
    p.add_argument("--commits", type=int, default=100)
    p.add_argument("--python-steps", type=int, default=8)
    p.add_argument("--c-steps", type=int, default=2)
    p.add_argument("--bytecodes", default="6,50", help="range of a Python step's bytecodes (default 6,50)")
    p.add_argument("--python-kind", choices=("mixed", "calls", "stores"), default="mixed",
                   help="a Python step's statements: len(()) calls, local stores, or either at random (default)")
    p.add_argument("--spin", default="300,1500", help="range of a C step's loop iterations (default 300,1500)")
    p.add_argument("--c-decoys", type=int, default=0, help="compiled-source edits that cost nothing")
    p.add_argument("--py-decoys", type=int, default=0, help="2-bytecode Python edits counts see, the clock cannot")
    p.add_argument("--code-share", type=float, default=0.35, help="share of filler commits that touch code comments")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--manifest", required=True)
    a = p.parse_args(argv)
    steps = a.python_steps + a.c_steps
    decoys = a.c_decoys + a.py_decoys
    if not (0 < steps and steps + decoys < a.commits):
        sys.exit("plant_range: need 0 < --python-steps + --c-steps and steps + decoys < --commits")
    lo_b, hi_b = (int(x) for x in a.bytecodes.split(","))
    lo_s, hi_s = (int(x) for x in a.spin.split(","))
    rng = random.Random(a.seed)
    positions = sorted(rng.sample(range(1, a.commits + 1), steps + decoys))
    kinds = ["python"] * a.python_steps + ["c"] * a.c_steps + ["decoy-c"] * a.c_decoys + ["decoy-py"] * a.py_decoys
    rng.shuffle(kinds)
    planted = dict(zip(positions, kinds))
    base_sha = git(a.clone, "rev-parse", a.base + "^{commit}")
    git(a.clone, "checkout", "-q", "-B", a.branch, base_sha)
    env = dict(os.environ, GIT_AUTHOR_NAME="plant_range", GIT_AUTHOR_EMAIL="plant@range",
               GIT_COMMITTER_NAME="plant_range", GIT_COMMITTER_EMAIL="plant@range")
    commits = []
    for i in range(1, a.commits + 1):
        rec = {"index": i, "kind": planted.get(i), "bytecodes": 0, "calls": 0, "spin": 0}
        if rec["kind"] == "python":
            with_calls = rng.random() < 0.5 if a.python_kind == "mixed" else a.python_kind == "calls"
            unit = 4 if with_calls else 2
            n = max(1, rng.randint(lo_b, hi_b) // unit)
            rec["bytecodes"], rec["calls"] = plant_python(os.path.join(a.clone, DISPATCHER), i, n, with_calls)
            path = DISPATCHER
        elif rec["kind"] == "c":
            rec["spin"] = rng.randint(lo_s, hi_s)
            plant_c(os.path.join(a.clone, CEXT), i, rec["spin"])
            path = CEXT
        elif rec["kind"] == "decoy-c":
            plant_c_decoy(os.path.join(a.clone, CEXT), i)
            path = CEXT
        elif rec["kind"] == "decoy-py":
            rec["bytecodes"], rec["calls"] = plant_python(os.path.join(a.clone, DISPATCHER), i, 1, False)
            path = DISPATCHER
        elif rng.random() < a.code_share:
            rec["kind"] = "code"
            path = rng.choice(COMMENT_TARGETS)
            with open(os.path.join(a.clone, path), "a") as fh:
                fh.write(f"# launchbench planted range, filler commit {i}\n")
        else:
            rec["kind"] = "docs"
            path = DOCS_FILE
            with open(os.path.join(a.clone, path), "a") as fh:
                fh.write(f"filler commit {i}\n")
        git(a.clone, "add", path)
        stamp = f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}+00:00"
        git(a.clone, "commit", "-q", "-m", f"planted range {i}: {rec['kind']}",
            env=dict(env, GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp))
        rec["sha"] = git(a.clone, "rev-parse", "HEAD")
        commits.append(rec)
    steps_out = [c for c in commits if c["kind"] in ("python", "c")]
    decoys_out = [c for c in commits if c["kind"].startswith("decoy")]
    manifest = {"base": base_sha, "branch": a.branch, "tip": commits[-1]["sha"], "seed": a.seed,
                "arguments": vars(a), "commits": commits, "steps": steps_out, "decoys": decoys_out,
                "code_distinct": 1 + sum(c["kind"] != "docs" for c in commits)}
    with open(a.manifest, "w") as fh:
        json.dump(manifest, fh, indent=1)
    print(f"{a.branch}: {a.commits} commits on {base_sha[:10]}, {manifest['code_distinct']} code-distinct; steps at "
          + ", ".join(f"{c['index']} ({c['kind']}: {c['bytecodes'] or c['spin']})" for c in steps_out)
          + "; decoys at " + (", ".join(f"{c['index']} ({c['kind']})" for c in decoys_out) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
