"""launchbench's modules import one another without a cycle.

Every intra-package import counts: at module level and inside functions,
relative (``from . import x``, ``from .x import y``, ``from ..base.errors
import UserError``) and absolute (``import launchbench.x.y``, ``from
launchbench(.x) import ...``). The nodes are the package's ``.py`` modules,
sub-packages included, each named by its dotted path (``launchbench.engine.runner``;
a sub-package's ``__init__.py`` is the sub-package itself). The C extensions
import nothing and are no nodes.
"""
import ast
from pathlib import Path

PACKAGE = "launchbench"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE


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


def _describe(cycle: list, graph: dict) -> str:
    return " -> ".join(cycle) + "  (" + "; ".join(
        f"{a}:{','.join(map(str, graph[a][b]))} imports {b}" for a, b in zip(cycle, cycle[1:])) + ")"


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    lb = PACKAGE + "."
    assert lb + "base.errors" in graph[lb + "base.device"]      # from .errors import UserError (module level)
    assert lb + "workloads.mechanisms" in graph[lb + "environments.variants"]  # in a function
    assert lb + "base.errors" in graph[lb + "cli"]              # from .base.errors import UserError (a sub-package)
    assert all("_tls" not in t for t in graph[lb + "workloads.intercept"])  # a C extension is no node
    assert {lb + name for name in (
        "base", "base.errors", "workloads.breakdown", "workloads.kernels", "workloads.stages", "workloads.peers",
        "workloads.mechanisms", "workloads.lctls", "workloads.intercept", "engine.worker", "output.site",
        "commands.stagedelta", "commands.mechanisms_cli", "commands.mechanisms_procs")} <= set(graph)


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
