"""launchbench's modules import one another without a cycle.

Every intra-package import counts: at module level and inside functions,
``from . import x``, ``from .x import y``, ``from .x.y import z``,
``import launchbench.x`` and ``from launchbench(.x) import ...``. Only the
package's own ``.py`` modules are nodes (the C extensions import nothing).
"""
import ast
from pathlib import Path

PACKAGE = "launchbench"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE


def _targets(node: ast.AST, modules: set) -> list:
    """The package modules one import statement names."""
    names: list = []
    if isinstance(node, ast.ImportFrom):
        if node.level > 1:
            raise AssertionError(f"line {node.lineno}: an import from above the package")
        if node.level == 1:
            path = node.module.split(".") if node.module else []
        elif node.module and node.module.split(".")[0] == PACKAGE:
            path = node.module.split(".")[1:]
        else:
            return []
        names = [path[0]] if path else [alias.name for alias in node.names]
    elif isinstance(node, ast.Import):
        names = [alias.name.split(".")[1] for alias in node.names
                 if alias.name.split(".")[0] == PACKAGE and "." in alias.name]
    return [n for n in names if n in modules]


def import_graph() -> dict:
    """module -> {imported module: [line numbers]}, over every launchbench/*.py."""
    files = sorted(ROOT.glob("*.py"))
    modules = {p.stem for p in files}
    graph: dict = {}
    for path in files:
        edges: dict = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, modules):
                if target != path.stem:
                    edges.setdefault(target, []).append(node.lineno)
        graph[path.stem] = edges
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
        f"{a}.py:{','.join(map(str, graph[a][b]))} imports {b}" for a, b in zip(cycle, cycle[1:])) + ")"


def test_the_graph_sees_every_kind_of_import():
    graph = import_graph()
    assert "errors" in graph["device"]                 # from .errors import UserError (module level)
    assert "mechanisms" in graph["variants"]           # from . import mechanisms (inside a function)
    assert "_tls" not in graph["intercept"]            # a C extension is no node
    assert set(graph) >= {"breakdown", "kernels", "stages", "stagedelta", "peers", "mechanisms", "lctls",
                          "intercept", "mechanisms_cli", "mechanisms_procs"}


def test_find_cycle_reports_one():
    assert find_cycle({"a": {"b": [1]}, "b": {"c": [2]}, "c": {"a": [3]}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": [1]}, "b": {}, "c": {"a": [3], "b": [4]}}) is None


def test_no_import_cycle():
    graph = import_graph()
    cycle = find_cycle(graph)
    if cycle:
        print("import cycle:", _describe(cycle, graph))
    assert cycle is None, "import cycle: " + _describe(cycle, graph)
