"""launchbench's modules import one another without a cycle, and only down its layers.

The layers, lowest first, are declared once, in ``LAYERS`` below (docs/architecture.md explains
them); a module may import its own layer or a lower one, never a higher one. The top-level
modules (the package itself, ``__main__``, ``cli``) sit above every layer.

Every intra-package import counts: at module level and inside functions,
relative (``from . import x``, ``from .x import y``, ``from ..base.errors
import UserError``) and absolute (``import launchbench.x.y``, ``from
launchbench(.x) import ...``). The nodes are the package's ``.py`` modules,
sub-packages included, each named by its dotted path (``launchbench.engine.runner``;
a sub-package's ``__init__.py`` is the sub-package itself). The C extensions
import nothing and are no nodes.

Also here: every subcommand is registered from launchbench.commands, and module
paths written as strings (``python -m`` targets, ``MODULE:FUNC`` targets,
importlib names) name modules that exist.
"""
import ast
import re
from pathlib import Path

import pytest

PACKAGE = "launchbench"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

#: launchbench's sub-packages, lowest layer first: imports go to the same layer or a lower one.
LAYERS = ("base", "workloads", "environments", "engine", "output", "commands")
#: The modules above every layer: the package itself and the command line's entry points.
TOP = (PACKAGE, f"{PACKAGE}.__main__", f"{PACKAGE}.cli")


def module_name(path: Path) -> str:
    """launchbench/engine/runner.py -> launchbench.engine.runner; a package's __init__.py -> the package."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict:
    """dotted name -> path, for every launchbench/**/*.py."""
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_extension(dotted: str) -> bool:
    """A C extension module (its .c source sits where a .py module would)."""
    return ROOT.parent.joinpath(*dotted.split(".")).with_suffix(".c").is_file()


def _targets(node: ast.AST, name: str, path: Path, mods: dict) -> list:
    """The package modules one import statement in module *name* names."""
    found: list = []
    if isinstance(node, ast.ImportFrom):
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            if node.level > len(package):
                raise AssertionError(f"{path}:{node.lineno}: an import from above the package")
            base = package[:len(package) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        elif node.module and node.module.split(".")[0] == PACKAGE:
            source = node.module
        else:
            return []
        for alias in node.names:
            sub = f"{source}.{alias.name}"
            if sub in mods:
                found.append(sub)                 # from launchbench.engine import runner
            elif _is_extension(sub):
                continue                          # from . import _tls
            elif source in mods:
                found.append(source)              # from .runner import key_id
    elif isinstance(node, ast.Import):
        found = [alias.name for alias in node.names if alias.name in mods and alias.name.split(".")[0] == PACKAGE]
    return found


def import_graph() -> dict:
    """module -> {imported module: [line numbers]}, over every launchbench/**/*.py."""
    mods = modules()
    graph: dict = {}
    for name, path in mods.items():
        edges: dict = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, name, path, mods):
                if target != name:
                    edges.setdefault(target, []).append(node.lineno)
        graph[name] = edges
    return graph


def find_cycle(graph: dict) -> list | None:
    """One cycle as [a, b, ..., a], or None (depth-first search)."""
    state: dict = {}  # 1: on the current path, 2: done
    path: list = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def layer_of(name: str) -> int:
    """A module's rank: its sub-package's index in LAYERS, len(LAYERS) for TOP; ValueError otherwise."""
    if name in TOP:
        return len(LAYERS)
    parts = name.split(".")
    if len(parts) >= 2 and parts[0] == PACKAGE and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    raise ValueError(f"{name} is in no layer: put it in one of {PACKAGE}.{{{','.join(LAYERS)}}}")


def upward_imports(graph: dict) -> list:
    """(importer, imported, line numbers) for every import of a higher layer."""
    return [(a, b, lines) for a, edges in sorted(graph.items()) for b, lines in sorted(edges.items())
            if layer_of(b) > layer_of(a)]


def _describe(cycle: list, graph: dict) -> str:
    return " -> ".join(cycle) + "  (" + "; ".join(
        f"{a}:{','.join(map(str, graph[a][b]))} imports {b}" for a, b in zip(cycle, cycle[1:])) + ")"


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    lb = PACKAGE + "."
    assert lb + "base.errors" in graph[lb + "base.device"]      # from .errors import UserError (module level)
    assert lb + "workloads.capture.mechanisms" in graph[lb + "environments.variants"]
    assert lb + "workloads.lcs.conformance" in graph[lb + "engine.conformance"]  # in a function
    assert lb + "base.errors" in graph[lb + "cli"]              # from .base.errors import UserError (a sub-package)
    assert all("_tls" not in t for t in graph[lb + "workloads.capture.intercept"])  # a C extension is no node
    assert {lb + name for name in (
        "base", "base.errors", "workloads.breakdown", "workloads.kernels", "workloads.stages", "workloads.peers",
        "workloads.capture.mechanisms", "workloads.capture.lctls", "workloads.capture.intercept", "engine.worker", "output.site",
        "engine.breakdown", "output.breakdown", "commands.mechanisms_cli", "commands.mechanisms_procs",
        "engine.mechanism_procs", "engine.runplan", "engine.workerproc", "engine.pinning", "engine.progressbar")} <= set(graph)


def test_relative_imports_resolve_from_the_module_package():
    mods = {"launchbench.engine.worker": None, "launchbench.workloads.peers": None, "launchbench.base.errors": None,
            "launchbench.engine": None}
    path = ROOT / "engine" / "worker.py"
    name = "launchbench.engine.worker"

    def targets(src):
        return _targets(ast.parse(src).body[0], name, path, mods)

    assert targets("from ..workloads import peers") == ["launchbench.workloads.peers"]
    assert targets("from ..base.errors import UserError") == ["launchbench.base.errors"]
    assert targets("from launchbench.base.errors import UserError") == ["launchbench.base.errors"]
    assert targets("import launchbench.workloads.peers as p") == ["launchbench.workloads.peers"]
    assert targets("import json") == []


def test_find_cycle_reports_one():
    assert find_cycle({"a": {"b": [1]}, "b": {"c": [2]}, "c": {"a": [3]}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": [1]}, "b": {}, "c": {"a": [3], "b": [4]}}) is None


def test_no_import_cycle():
    graph = import_graph()
    cycle = find_cycle(graph)
    if cycle:
        print("import cycle:", _describe(cycle, graph))
    assert cycle is None, "import cycle: " + _describe(cycle, graph)


def test_every_module_is_in_a_layer():
    stray = []
    for name in modules():
        try:
            layer_of(name)
        except ValueError as exc:
            stray.append(str(exc))
    assert not stray, stray


def test_upward_imports_are_reported():
    graph = {f"{PACKAGE}.engine.worker": {f"{PACKAGE}.workloads.peers": [3], f"{PACKAGE}.commands.peers": [7]},
             f"{PACKAGE}.cli": {f"{PACKAGE}.base.errors": [1]}, f"{PACKAGE}.base.errors": {}}
    assert upward_imports(graph) == [(f"{PACKAGE}.engine.worker", f"{PACKAGE}.commands.peers", [7])]


def test_imports_only_go_down_the_layers():
    bad = upward_imports(import_graph())
    assert not bad, "imports of a higher layer (order, lowest first: " + " < ".join(LAYERS) + "): " + "; ".join(
        f"{a}:{','.join(map(str, lines))} imports {b}" for a, b, lines in bad)


def test_subcommands_are_registered_from_commands_only():
    """cli.py lists only launchbench.commands modules, and no module elsewhere defines a register()."""
    from launchbench.cli import SUBCOMMAND_MODULES

    assert all(m.startswith(f"{PACKAGE}.commands.") for m in SUBCOMMAND_MODULES), SUBCOMMAND_MODULES
    registering = {name for name, path in modules().items()
                   if any(isinstance(n, ast.FunctionDef) and n.name == "register"
                          for n in ast.parse(path.read_text()).body)}
    outside = sorted(n for n in registering if not n.startswith(f"{PACKAGE}.commands."))
    assert not outside, f"register() outside launchbench.commands: {outside}"
    assert registering <= set(SUBCOMMAND_MODULES), sorted(registering - set(SUBCOMMAND_MODULES))


def _module_path_strings(tree: ast.AST) -> list:
    """(line, text) of the strings in *tree* that name a launchbench module: an argument of
    import_module/importorskip/find_spec, the item after "-m" in an argument list, and any
    dotted path through a sub-package (``launchbench.engine.worker``, ``...standin:stage_loops``).
    Schema ids (``launchbench.compare``) are none of these."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and \
                getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "importorskip",
                                                                                "find_spec"):
            found.append(node.args[0])
        elif isinstance(node, (ast.List, ast.Tuple)):
            found += [b for a, b in zip(node.elts, node.elts[1:]) if isinstance(a, ast.Constant) and a.value == "-m"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(rf"{PACKAGE}(\.[a-z_]+){{2,}}(:[A-Za-z_]+)?|{PACKAGE}\.[a-z_]+:[A-Za-z_]+", node.value):
            found.append(node)
    return sorted({(n.lineno, n.value) for n in found if isinstance(n, ast.Constant) and isinstance(n.value, str)
                   and n.value.split(".")[0] == PACKAGE})


def test_module_paths_in_strings_exist():
    """Module paths built as strings (python -m targets, MODULE:FUNC targets, importlib names,
    the subcommand list) name modules that exist, with the function where one is named."""
    checked, missing = 0, []
    sources = [*ROOT.rglob("*.py"), *ROOT.parent.joinpath("tests").rglob("*.py"),
               *ROOT.parent.joinpath("benchmarks").rglob("*.py")]
    for path in sources:
        if path.resolve() == Path(__file__).resolve():
            continue  # this file's examples name modules that do not exist, on purpose
        for line, text in _module_path_strings(ast.parse(path.read_text(), str(path))):
            checked += 1
            dotted, _, func = text.partition(":")
            base = ROOT.parent.joinpath(*dotted.split("."))
            module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
            if not (module.is_file() or base.with_suffix(".c").is_file()):
                missing.append(f"{path.name}:{line} {text!r}: no such module")
            elif func and not any(isinstance(n, ast.FunctionDef) and n.name == func
                                  for n in ast.parse(module.read_text()).body):
                missing.append(f"{path.name}:{line} {text!r}: no function {func}")
    assert checked >= 10 and not missing, missing


def test_module_path_strings_are_found():
    tree = ast.parse("import importlib\n"
                     "cmd = [python, '-m', 'launchbench.worker']\n"
                     "importlib.import_module('launchbench.mechanisms')\n"
                     "target = 'launchbench.standin:stage_loops'\n"
                     "SCHEMA_ID = 'launchbench.compare'\n")
    assert _module_path_strings(tree) == [(2, "launchbench.worker"), (3, "launchbench.mechanisms"),
                                          (4, "launchbench.standin:stage_loops")]


# ---------------------------------------------------------------- thin commands, no private reach

#: commands/ modules that may import another commands/ module, with the reason. Everything else a
#: command shares lives below commands/ (commands parse, call the engine, render).
COMMAND_PAIRS = {
    # one command, `launchbench mechanisms`, split over two files for size: mechanisms_procs registers it
    # and its runs over processes; mechanisms_cli holds its options, its document and --processes 1.
    (f"{PACKAGE}.commands.mechanisms_procs", f"{PACKAGE}.commands.mechanisms_cli"):
        "one command (mechanisms) in two files",
}


#: commands/ modules that are no command but a helper every command may import (they import no
#: command, register nothing, and are not in cli.SUBCOMMAND_MODULES), with the reason.
COMMAND_HELPERS = {
    f"{PACKAGE}.commands.common_args": "the options more than one command takes, declared once",
}


def command_imports(graph: dict) -> list:
    """(importer, imported, lines) for each commands/ module importing another commands/ module
    (a shared helper of COMMAND_HELPERS aside)."""
    cmd = f"{PACKAGE}.commands."
    return [(a, b, lines) for a, edges in sorted(graph.items()) for b, lines in sorted(edges.items())
            if a.startswith(cmd) and b.startswith(cmd) and (a, b) not in COMMAND_PAIRS and b not in COMMAND_HELPERS]


def test_no_command_imports_another():
    bad = command_imports(import_graph())
    assert not bad, "a command imports another command (move what they share below commands/): " + "; ".join(
        f"{a}:{','.join(map(str, lines))} imports {b}" for a, b, lines in bad)


def test_command_imports_are_reported():
    graph = {f"{PACKAGE}.commands.report": {f"{PACKAGE}.commands.breakdown": [3], f"{PACKAGE}.output.report": [4]},
             f"{PACKAGE}.commands.mechanisms_procs": {f"{PACKAGE}.commands.mechanisms_cli": [5]}}
    assert command_imports(graph) == [(f"{PACKAGE}.commands.report", f"{PACKAGE}.commands.breakdown", [3])]


#: What only the engine and the workloads define: what a run measures and keeps, and how it times.
MEASURING_CLASSES = ("Plan", "Outcome")
#: High-resolution clocks: a command that reads one is timing something itself.
TIMING_CLOCKS = ("perf_counter", "perf_counter_ns", "process_time", "process_time_ns", "thread_time")


def measuring_code(tree: ast.AST) -> list:
    """(line, what) for each thing in a module that measures rather than asks the engine to: a
    ``Plan``/``Outcome`` class or any dataclass, a high-resolution clock read, and a bare repeat
    loop (``for _ in range(n): f(...)``, the shape of a timing or warm-up loop)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            decorated = any("dataclass" in ast.unparse(d) for d in node.decorator_list)
            if node.name in MEASURING_CLASSES or decorated:
                found.append((node.lineno, f"class {node.name}"))
        elif isinstance(node, ast.Attribute) and node.attr in TIMING_CLOCKS:
            found.append((node.lineno, f"clock {node.attr}"))
        elif isinstance(node, ast.ImportFrom) and any(a.name in TIMING_CLOCKS for a in node.names):
            found.append((node.lineno, "clock import"))
        elif (isinstance(node, ast.For) and isinstance(node.target, ast.Name) and node.target.id == "_"
              and all(isinstance(b, ast.Expr) and isinstance(b.value, ast.Call) for b in node.body)):
            found.append((node.lineno, "repeat loop"))
    return sorted(found)


def test_measuring_code_is_found():
    source = ("from dataclasses import dataclass\nimport time\n@dataclass\nclass Settings:\n    n: int\n"
              "class Plan:\n    pass\ndef loop(f, n):\n    t0 = time.perf_counter()\n"
              "    for _ in range(n):\n        f()\n    for item in range(n):\n        f(item)\n")
    assert measuring_code(ast.parse(source)) == [(4, "class Settings"), (6, "class Plan"), (9, "clock perf_counter"),
                                                 (10, "repeat loop")]


def test_commands_define_no_plan_outcome_or_timing_loop():
    bad = [f"{path.relative_to(ROOT.parent)}:{line}: {what}" for path in sorted((ROOT / "commands").glob("*.py"))
           for line, what in measuring_code(ast.parse(path.read_text()))]
    assert not bad, ("commands/ only parse, call the engine and render; move these into engine/ or workloads/ "
                     "(docs/architecture.md): " + "; ".join(bad))


def private_reaches(name: str, path: Path, mods: dict, tree: ast.AST | None = None) -> list:
    """(line, text) for each underscore-private name module *name* takes from another launchbench
    module: ``from .x import _y`` and ``x._y`` on a name bound to a launchbench module by an import.
    C extensions (``from . import _tls``) are modules, not private names; dunders are not private."""
    tree = tree if tree is not None else ast.parse(path.read_text(), str(path))
    found, bound = [], {}

    def private(attr):
        return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            targets = _targets(node, name, path, mods)
            for alias in node.names:
                source = None
                if node.level or (node.module or "").split(".")[0] == PACKAGE:
                    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    base = package[:len(package) - node.level + 1] if node.level else []
                    source = ".".join(base + ([node.module] if node.module else []))
                if source is None:
                    continue
                sub = f"{source}.{alias.name}"
                if sub in mods:
                    bound[alias.asname or alias.name] = sub
                elif private(alias.name) and not _is_extension(sub) and targets:
                    found.append((node.lineno, f"from {source} import {alias.name}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in mods and alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound
                and private(node.attr) and bound[node.value.id] != name
                and not _is_extension(f"{bound[node.value.id]}.{node.attr}")):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return sorted(set(found))


def test_private_reach_is_found():
    mods = {f"{PACKAGE}.commands.compare": None, f"{PACKAGE}.commands.stagedelta": None,
            f"{PACKAGE}.workloads": None, f"{PACKAGE}.commands": None}
    path = ROOT / "commands" / "stagedelta.py"
    tree = ast.parse("from .compare import _Ordered, add_env_arguments\n"
                     "from . import compare\n"
                     "from ..workloads import _tls\n"
                     "compare._check_not_simulated(args)\n"
                     "compare.__doc__\n")
    assert private_reaches(f"{PACKAGE}.commands.stagedelta", path, mods, tree) == [
        (1, f"from {PACKAGE}.commands.compare import _Ordered"), (4, "compare._check_not_simulated")]


def test_no_module_takes_another_modules_private_name():
    mods = modules()
    bad = [f"{path.relative_to(ROOT.parent)}:{line} {text}" for name, path in mods.items()
           for line, text in private_reaches(name, path, mods)]
    assert not bad, "underscore-private names used from another module (make them public there): " + "; ".join(bad)


# ---------------------------------------------------------------- imports at module level

LAZY_MARK = "# lazy:"


def function_level_imports(name: str, path: Path, mods: dict, source: str | None = None) -> list:
    """(line, lazy-comment or None) for each import of a launchbench module (or a package C extension)
    inside a function of module *name*; the comment is a ``# lazy: why`` on the import or the line above."""
    source = source if source is not None else path.read_text()
    lines = source.splitlines()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []

    def extension(node):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            return False
        base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
        return any(_is_extension(f"{base}.{alias.name}") for alias in node.names)

    def visit(node, inside):
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, (ast.Import, ast.ImportFrom)) and (
                    _targets(child, name, path, mods) or extension(child)):
                near = lines[child.lineno - 1:child.end_lineno] + lines[max(child.lineno - 2, 0):child.lineno - 1]
                why = next((text[text.index(LAZY_MARK):] for text in near if LAZY_MARK in text), None)
                found.append((child.lineno, why))
            visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source, str(path)), False)
    return found


def test_function_level_imports_are_found():
    mods = {f"{PACKAGE}.engine.worker": None, f"{PACKAGE}.workloads.peers": None, f"{PACKAGE}.base.device": None}
    source = ("from ..workloads import peers\n"
              "def f():\n"
              "    from ..base.device import one_line\n"
              "    import json\n"
              "    # lazy: the reason\n"
              "    from ..workloads import peers as p\n"
              "    from numba import cuda  # lazy: not ours, not counted\n")
    assert function_level_imports(f"{PACKAGE}.engine.worker", ROOT / "engine" / "worker.py", mods, source) == [
        (3, None), (6, "# lazy: the reason")]


def test_launchbench_imports_sit_at_module_level():
    """A launchbench module imports the package's modules at its top. The exceptions (a C extension
    that may be unbuilt, a pytest module, a file also loaded without launchbench) say why on the line:
    ``# lazy: why``. numba, numpy, matplotlib and asv stay inside functions (docs/architecture.md)
    and are no launchbench imports."""
    mods = modules()
    found = {f"{path.relative_to(ROOT.parent)}:{line}": why for name, path in mods.items()
             for line, why in function_level_imports(name, path, mods)}
    unexplained = sorted(where for where, why in found.items() if not why)
    assert not unexplained, ("launchbench imports inside functions: move them to the module's top, or say why "
                             f"they are lazy with '{LAZY_MARK} ...': " + ", ".join(unexplained))


def test_the_engine_imports_no_environment():
    """The engine runs interpreters it is handed: a command resolves each variant's environment
    (environments/) and passes the engine the interpreter and the worker overlay maker."""
    graph = import_graph()
    engine, envs = f"{PACKAGE}.engine", f"{PACKAGE}.environments"
    bad = [f"{a}:{','.join(map(str, lines))} imports {b}" for a, edges in sorted(graph.items())
           for b, lines in sorted(edges.items()) if a.startswith(engine) and b.startswith(envs)]
    assert not bad, bad


def test_every_module_imports_without_the_heavy_dependencies():
    """numba, numpy, matplotlib, asv, CuPy and torch stay inside functions: every module (the
    pytest suite aside) imports, and the command line builds, with them all unimportable."""
    import subprocess
    import sys

    code = ("import sys, importlib, pkgutil\n"
            "for m in ('numba', 'numpy', 'matplotlib', 'asv', 'cupy', 'torch'): sys.modules[m] = None\n"
            "import launchbench\n"
            "for info in pkgutil.walk_packages(launchbench.__path__, 'launchbench.'):\n"
            "    if not info.name.endswith(('.lcs.conformance', '__main__')):\n"
            "        importlib.import_module(info.name)\n"
            "from launchbench import cli\n"
            "cli.build_parser()\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT.parent, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------- the house drawing and the tree agree

ARCHITECTURE = ROOT.parent / "docs" / "architecture.md"
#: A folder path written in backticks: `engine/`, `lab/recipes/`, `.ci/` (a trailing slash, no spaces).
FOLDER_RE = re.compile(r"`(\.?[A-Za-z_][\w.-]*(?:/[\w.-]+)*/)`")


def tracked_folders(files: list) -> set:
    """The folders the repository's files sit in, to two levels (``a/b/x.json`` ->
    ``a/b``; ``a/x.py`` -> ``a``)."""
    return {"/".join(parts[:min(2, len(parts) - 1)]) for parts in (f.split("/") for f in files) if len(parts) > 1}


def package_folders(files: list) -> set:
    """The package's folders at any depth: each folder holding an ``__init__.py`` under ``launchbench/``
    (``launchbench/workloads/lcs/__init__.py`` -> ``launchbench/workloads/lcs``), so a room's
    sub-package below a layer is named on the page as its layer is."""
    return {f.rsplit("/", 1)[0] for f in files if f.startswith(f"{PACKAGE}/") and f.endswith("/__init__.py")}


def folder_mismatch(text: str, folders: set, exists) -> tuple:
    """(folders the page does not name, folders the page names that do not exist). A name resolves
    from the repository root or from ``launchbench/`` (the page's module paths do)."""
    named = {m.rstrip("/") for m in FOLDER_RE.findall(text)}
    missing = sorted(f for f in folders if f not in named and f.removeprefix(f"{PACKAGE}/") not in named)
    absent = sorted(n for n in named if not (exists(n) or exists(f"{PACKAGE}/{n}")))
    return missing, absent


def test_folder_mismatch_is_reported():
    text = "`engine/` and `lab/recipes/` and `gpu/`"
    missing, absent = folder_mismatch(text, {"launchbench/engine", "lab/recipes", "tests"},
                                      lambda p: p in {"launchbench/engine", "lab/recipes", "tests"})
    assert missing == ["tests"] and absent == ["gpu"]


def test_package_folders_reach_below_the_layers():
    files = ["launchbench/__init__.py", "launchbench/engine/__init__.py", "launchbench/engine/runner.py",
             "launchbench/workloads/lcs/__init__.py", "launchbench/workloads/lcs/fixture.py",
             "launchbench/output/asv_vendor/asv.js", "docs/index.md", "tests/fixtures/x/__init__.py"]
    assert package_folders(files) == {"launchbench", "launchbench/engine", "launchbench/workloads/lcs"}
    assert "launchbench/workloads/lcs" not in tracked_folders(files)  # two levels only: why package_folders exists
    missing, _ = folder_mismatch("`engine/`", package_folders(files), lambda p: True)
    assert missing == ["launchbench", "launchbench/workloads/lcs"]


def test_the_architecture_page_names_every_folder_and_only_folders_that_exist():
    import subprocess

    root = ROOT.parent
    got = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip("not a git checkout: the tracked folders are unknown")
    files = got.stdout.split()
    missing, absent = folder_mismatch(ARCHITECTURE.read_text(), tracked_folders(files) | package_folders(files),
                                      lambda p: (root / p).is_dir())
    assert not missing, f"docs/architecture.md does not name these folders (add them under Folders): {missing}"
    assert not absent, f"docs/architecture.md names folders that do not exist: {absent}"


# ---------------------------------------------------------------- lab/ scripts: above the package

#: Folders of scripts that sit above every layer: they may import launchbench's public names, below
#: commands/ (what a script needs from a command belongs in a lower layer, public there).
SCRIPT_DIRS = ("lab",)


def script_files() -> dict:
    """script node name -> path, for every .py under lab/ (``lab.recipes.rerender_pr``, ``lab.citations``,
    ``lab.results.h200.<run>.ratio_vs_old``: the folders hold no packages; the names are only labels)."""
    top = ROOT.parent
    paths = sorted(p for d in SCRIPT_DIRS for p in top.joinpath(d).rglob("*.py") if "__pycache__" not in p.parts)
    return {".".join(p.relative_to(top).with_suffix("").parts): p for p in paths}


def script_imports(name: str, path: Path, mods: dict, scripts: dict, tree: ast.AST | None = None) -> dict:
    """{imported node: [lines]} for one script: launchbench modules (as the package's graph names them)
    and sibling scripts of its folder (``import settings`` next to lab/recipes/settings.py), at any depth of the file."""
    tree = tree if tree is not None else ast.parse(path.read_text(), str(path))
    folder = name.rsplit(".", 1)[0]
    edges: dict = {}
    for node in ast.walk(tree):
        found = list(_targets(node, name, path, mods)) if isinstance(node, (ast.Import, ast.ImportFrom)) else []
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and not node.level):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE \
                    and node.module in mods and not found:
                found.append(node.module)  # from launchbench import cli (a TOP module) or a sub-package
            named = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"{folder}.{n}" for n in named if f"{folder}.{n}" in scripts and f"{folder}.{n}" != name]
        for target in found:
            edges.setdefault(target, []).append(node.lineno)
    return edges


def script_graph() -> dict:
    """The package's import graph plus every script's node and edges."""
    mods, scripts = modules(), script_files()
    graph = import_graph()
    for name, path in scripts.items():
        graph[name] = script_imports(name, path, mods, scripts)
    return graph


def script_violations(graph: dict, scripts: dict, mods: dict, trees: dict | None = None) -> list:
    """One line per rule a script breaks: an import of commands/ (the top layer is the command line,
    not a library) or an underscore-private name of a launchbench module."""
    bad = []
    for name, path in sorted(scripts.items()):
        for target, lines in sorted(graph.get(name, {}).items()):
            if target.startswith(f"{PACKAGE}.commands"):
                bad.append(f"{name}:{','.join(map(str, lines))} imports {target} (move what it needs below "
                           "commands/, public)")
        tree = (trees or {}).get(name)
        bad += [f"{name}:{line} {text} (private)" for line, text in private_reaches(name, path, mods, tree)]
    return bad


def test_scripts_are_found():
    scripts = script_files()
    assert "lab.recipes.rerender_pr" in scripts and any(n.startswith("lab.results.") for n in scripts), sorted(scripts)
    edges = script_graph()["lab.recipes.rerender_pr"]
    assert f"{PACKAGE}.engine.conformance" in edges and f"{PACKAGE}.output.documents" in edges, edges


def test_script_rules_catch_a_command_import_a_private_name_and_a_cycle():
    """The checks below can fail: a script that takes a command's function, a private name, and two
    scripts importing each other are each reported."""
    mods = modules()
    scripts = {"lab.a": ROOT.parent / "lab" / "a.py", "lab.b": ROOT.parent / "lab" / "b.py"}
    trees = {"lab.a": ast.parse("import b\nfrom launchbench.commands.pr import run\n"
                                "from launchbench.engine import conformance\nconformance._name('x')\n"),
             "lab.b": ast.parse("import a\nfrom launchbench.output.documents import read\n")}
    graph = dict(import_graph())
    for name, path in scripts.items():
        graph[name] = script_imports(name, path, mods, scripts, trees[name])
    assert graph["lab.a"] == {"lab.b": [1], f"{PACKAGE}.commands.pr": [2], f"{PACKAGE}.engine.conformance": [3]}
    assert find_cycle(graph) == ["lab.a", "lab.b", "lab.a"]
    assert script_violations(graph, scripts, mods, trees) == [
        f"lab.a:2 imports {PACKAGE}.commands.pr (move what it needs below commands/, public)",
        "lab.a:4 conformance._name (private)"]


def test_scripts_import_no_cycle():
    graph = script_graph()
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + _describe(cycle, graph)


def test_scripts_use_only_public_names_below_commands():
    """lab/recipes/*.py and lab/results/**/*.py use launchbench as a library: public names of the layers below
    commands/ (a recipe that takes a command's function breaks when the command changes)."""
    bad = script_violations(script_graph(), script_files(), modules())
    assert not bad, "; ".join(bad)


# ---------------------------------------------------------------- benchmarks/: the asv front-end

SUITE = ROOT.parent / "benchmarks"
#: What benchmarks/ modules may import from launchbench: the layers below environments (the measurement core).
SUITE_MAY_IMPORT = (f"{PACKAGE}.base", f"{PACKAGE}.workloads")
#: The suite's one shared helper module; bench_* modules import no other suite module.
SUITE_SHARED = "benchmarks.common"
#: Calls that load a file by path (the one allowed: benchmarks/__init__.py importing the launchbench package).
PATH_LOADERS = ("spec_from_file_location", "SourceFileLoader", "run_path", "load_source")


def suite_graph(suite: Path = SUITE) -> dict:
    """benchmarks/ module -> {imported benchmarks/ or launchbench module: [lines]} (the package's modules
    as in import_graph; ``from . import common`` and ``from benchmarks import x`` count)."""
    mods = {**modules(), **{f"benchmarks.{p.stem}" if p.stem != "__init__" else "benchmarks": p
                            for p in suite.glob("*.py")}}
    graph = {}
    for path in sorted(suite.glob("*.py")):
        name = "benchmarks" if path.stem == "__init__" else f"benchmarks.{path.stem}"
        edges: dict = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            found = []
            if isinstance(node, ast.ImportFrom):
                source = "benchmarks" + (f".{node.module}" if node.module else "") if node.level else node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    found.append(sub if sub in mods else source)
            elif isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            for target in found:
                if target in mods and target != name:
                    edges.setdefault(target, []).append(node.lineno)
        graph[name] = edges
    return graph


def suite_problems(suite: Path = SUITE) -> list:
    """Each way benchmarks/ breaks its layer: a launchbench import above workloads, a bench module
    importing another suite module than common, a cycle, a private name taken from another module,
    a file loaded by path."""
    graph = suite_graph(suite)
    bad = []
    for a, edges in sorted(graph.items()):
        for b, lines in sorted(edges.items()):
            where = f"{a}:{','.join(map(str, lines))}"
            if b.startswith(PACKAGE) and not b.startswith(SUITE_MAY_IMPORT):
                bad.append(f"{where} imports {b} (the suite may import {' and '.join(SUITE_MAY_IMPORT)} only)")
            if b.startswith("benchmarks.") and b != SUITE_SHARED:
                bad.append(f"{where} imports {b} (suite modules share only through {SUITE_SHARED})")
    cycle = find_cycle({**import_graph(), **graph})
    if cycle:
        bad.append("import cycle: " + " -> ".join(cycle))
    mods = modules()
    for path in sorted(suite.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        name = f"benchmarks.{path.stem}"
        bound = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = ("benchmarks" + (f".{node.module}" if node.module else "")) if node.level else node.module or ""
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    if full in mods or full.startswith("benchmarks."):
                        bound[alias.asname or alias.name] = full
                    elif alias.name.startswith("_") and not alias.name.startswith("__") and \
                            source.split(".")[0] in (PACKAGE, "benchmarks") and not _is_extension(full):
                        bad.append(f"{path.name}:{node.lineno} from {source} import {alias.name}")
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound \
                    and node.attr.startswith("_") and not node.attr.startswith("__") and bound[node.value.id] != name:
                bad.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in PATH_LOADERS \
                    and path.name != "__init__.py":
                bad.append(f"{path.name}:{node.lineno} loads a file by path (import it: benchmarks/__init__.py "
                           "makes launchbench importable)")
    return bad


def test_the_suite_is_a_layer_above_the_measurement_core():
    """benchmarks/ (asv's classes) imports launchbench.base and launchbench.workloads only, its bench
    modules share only benchmarks/common.py, the whole tree has no import cycle, and no suite module
    takes a private name or loads a file by path."""
    problems = suite_problems()
    assert not problems, "; ".join(problems)
    graph = suite_graph()
    assert f"{PACKAGE}.workloads.sampling" in graph["benchmarks.common"]  # the graph sees the suite's imports
    assert SUITE_SHARED in graph["benchmarks.bench_launch"]


def test_suite_problems_are_reported(tmp_path):
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "common.py").write_text("from launchbench.workloads import sampling\n")
    (tmp_path / "bench_a.py").write_text("from . import bench_b, common\nfrom launchbench.engine import runner\n"
                                         "common._hidden\nimport importlib.util\n"
                                         "importlib.util.spec_from_file_location('x', 'launchbench/x.py')\n")
    (tmp_path / "bench_b.py").write_text("from . import bench_a\nfrom launchbench.workloads.sampling import _PER_PROCESS\n")
    problems = suite_problems(tmp_path)
    text = "; ".join(problems)
    assert "benchmarks.bench_a:1 imports benchmarks.bench_b" in text
    assert "imports launchbench.engine.runner" in text
    assert "import cycle: benchmarks.bench_a -> benchmarks.bench_b -> benchmarks.bench_a" in text
    assert "bench_a.py:3 common._hidden" in text
    assert "bench_b.py:2 from launchbench.workloads.sampling import _PER_PROCESS" in text
    assert "bench_a.py:5 loads a file by path" in text


# ---------------------------------------------------------------- options: declared once, no Namespace below commands/

def test_command_helpers_are_no_commands():
    """A COMMAND_HELPERS module imports no command, registers nothing and is not a subcommand."""
    from launchbench.cli import SUBCOMMAND_MODULES

    graph, mods = import_graph(), modules()
    for helper in COMMAND_HELPERS:
        assert helper in mods and helper not in SUBCOMMAND_MODULES, helper
        assert not [b for b in graph[helper] if b.startswith(f"{PACKAGE}.commands.")], graph[helper]
        assert not any(isinstance(n, ast.FunctionDef) and n.name == "register"
                       for n in ast.parse(mods[helper].read_text()).body), helper


#: Modules below commands/ that may name argparse, and what for: the attributes of argparse they
#: may use, or "main": only inside their own ``main`` (a ``python -m`` entry point of its own,
#: no launchbench subcommand).
ARGPARSE_BELOW_COMMANDS = {
    f"{PACKAGE}.base.options": {"ArgumentTypeError"},  # the numeric types' refusals, argparse's way
    f"{PACKAGE}.workloads.lcs.fixture": "main",        # python -m launchbench.workloads.lcs --bench
    f"{PACKAGE}.workloads.stages_mlir": "main",        # python -m launchbench.workloads.stages_mlir
    f"{PACKAGE}.workloads.anchor": "main",             # python -m launchbench.workloads.anchor (the server)
}
#: Parameter names a parsed command line goes by.
NAMESPACE_NAMES = ("ns", "args", "namespace", "parsed", "cli_args")


def _below_commands(name: str) -> bool:
    return name not in TOP and layer_of(name) < LAYERS.index("commands")


def argparse_uses(name: str, tree: ast.AST) -> list:
    """(line, text) for each use of argparse in module *name* that ARGPARSE_BELOW_COMMANDS does not
    allow: an import of it, or an ``argparse.X`` outside what is allowed."""
    allowed = ARGPARSE_BELOW_COMMANDS.get(name)
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Import) and any(a.name.split(".")[0] == "argparse" for a in child.names) \
                    or isinstance(child, ast.ImportFrom) and (child.module or "").split(".")[0] == "argparse":
                if allowed is None or (isinstance(child, ast.ImportFrom) and
                                       not (allowed == "main" and function == "main" or
                                            allowed != "main" and {a.name for a in child.names} <= allowed)):
                    found.append((child.lineno, "imports argparse"))
            elif isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name) and child.value.id == "argparse":
                ok = allowed == "main" and function == "main" or isinstance(allowed, set) and child.attr in allowed
                if not ok:
                    found.append((child.lineno, f"argparse.{child.attr}"))
            visit(child, inner)

    visit(tree, None)
    return sorted(set(found))


def namespace_reads(tree: ast.AST) -> list:
    """(line, text) for each attribute read off a parameter named like a parsed command line
    (NAMESPACE_NAMES): ``args.repeats``, ``getattr(ns, "x")``, ``vars(args)``. Calling a method of
    it (``args.append(x)``: a list) is no read; a Namespace holds data, not methods."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs} & set(NAMESPACE_NAMES)
        if not params:
            continue
        called = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
        for n in ast.walk(fn):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in params \
                    and id(n) not in called:
                found.append((n.lineno, f"{n.value.id}.{n.attr}"))
            elif isinstance(n, ast.Call) and getattr(n.func, "id", None) in ("getattr", "setattr", "hasattr", "vars") \
                    and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id in params:
                found.append((n.lineno, f"{n.func.id}({n.args[0].id}, ...)"))
    return sorted(set(found))


def test_namespace_checks_find_what_they_name():
    tree = ast.parse("import argparse\n"
                     "def f(args, n):\n    return args.repeats + n.x\n"
                     "def g(ns):\n    return getattr(ns, 'target', None)\n"
                     "def h(args):\n    args.append(1)\n    return len(args)\n"
                     "def main(argv=None):\n    return argparse.ArgumentParser()\n"
                     "def k():\n    raise argparse.ArgumentTypeError('x')\n")
    assert namespace_reads(tree) == [(3, "args.repeats"), (5, "getattr(ns, ...)")]
    assert argparse_uses(f"{PACKAGE}.engine.x", tree) == [
        (1, "imports argparse"), (10, "argparse.ArgumentParser"), (12, "argparse.ArgumentTypeError")]
    assert argparse_uses(f"{PACKAGE}.workloads.lcs.fixture", tree) == [(12, "argparse.ArgumentTypeError")]
    assert argparse_uses(f"{PACKAGE}.base.options", tree) == [(10, "argparse.ArgumentParser")]


def test_no_argparse_below_commands():
    """Options are declared in commands/ (commands/common_args.py for the shared ones): below it,
    argparse is named only where ARGPARSE_BELOW_COMMANDS says why."""
    bad = [f"{path.relative_to(ROOT.parent)}:{line} {text}" for name, path in modules().items()
           if _below_commands(name) for line, text in argparse_uses(name, ast.parse(path.read_text()))]
    assert not bad, "argparse below commands/ (declare options in commands/common_args.py): " + "; ".join(bad)


def test_no_namespace_below_commands():
    """Nothing below commands/ reads a parsed command line: commands hand over keywords or a frozen
    settings object (``EnvOptions``, ``CommitRun``), as asv's ``run(conf, **kw)``."""
    bad = [f"{path.relative_to(ROOT.parent)}:{line} {text}" for name, path in modules().items()
           if _below_commands(name) for line, text in namespace_reads(ast.parse(path.read_text()))]
    assert not bad, "a parsed Namespace read below commands/ (pass keywords or a settings object): " + "; ".join(bad)


#: The options more than one command takes: each is declared by commands/common_args.py alone.
SHARED_OPTIONS = ("args", "repeats", "rounds", "affinity", "sample_time", "gpus", "prefetch", "warmup", "max_time",
                  "fail_if_slower", "min_rounds", "threshold", "items", "reference", "env_dir", "python", "wheels",
                  "system_site_packages", "constraints", "extras", "no_install", "wheel_cache", "arg_kind", "dispatch",
                  "simulator", "target", "output", "markdown", "no_report", "clone")


#: (command module, dest): a different option that shares a shared option's name, with the reason.
OTHER_OPTIONS_OF_THE_SAME_NAME = {
    ("asv", "output"): "asv config's: where its asv.local.json goes",
    ("asv", "env_dir"): "asv config's: asv's own environments directory",
    ("wheelhouse", "constraints"): "the pins whose wheels are fetched, not an environment's",
    ("mechanisms_cli", "warmup"): "untimed launches before a block whose mechanism was switched",
}


def test_shared_options_are_declared_once():
    """Every command takes the shared options from commands/common_args.py; below commands/ only a
    module's own ``python -m`` main declares options (ARGPARSE_BELOW_COMMANDS)."""
    from option_flow import declarations

    helper = f"{PACKAGE}.commands.common_args:"
    cmd = f"{PACKAGE}.commands."
    bad = {dest: [d for d in declarations(dest) if not d.startswith(helper) and not (
        not d.startswith(cmd) and d.endswith(":main")) and (d[len(cmd):].split(":")[0], dest)
        not in OTHER_OPTIONS_OF_THE_SAME_NAME] for dest in SHARED_OPTIONS}
    bad = {dest: where for dest, where in bad.items() if where}
    assert not bad, f"options declared outside commands/common_args.py: {bad}"


def test_compare_args_stays_below_commands():
    """compare's --args, followed through the code (tests/option_flow.py), never climbs back up a
    layer and no function below commands/ holds the Namespace it came in."""
    from option_flow import trace

    out = trace(f"{PACKAGE}.commands.compare", "run", "args")
    assert f"{PACKAGE}.base.options:parse_counts" in out["stops"]  # the tracer follows it at all
    assert out["climbs"] == [] and out["namespace_below_commands"] == [], out
