"""Where one command-line option's value travels through launchbench.

    python tests/option_flow.py                      # compare's --args (dest ``args``, entry commands/compare.py:run)
    python tests/option_flow.py --module launchbench.commands.history --function run --dest args

Static, deterministic (``ast`` only; nothing is imported or run). Definitions:

- The **entry** is the function a subcommand's ``set_defaults(func=...)`` names; its first parameter
  is the parsed **Namespace** (NS).
- The **value** (VAL) is the option itself: ``ns.<dest>`` or ``getattr(ns, "<dest>")`` read off a
  name holding the NS, and every name assigned (``=``, ``for`` target, ``with ... as``, an augmented
  assignment, or the receiver of a method call given VAL such as ``out.append(v)``) from an
  expression that holds VAL. An expression holds VAL when a held name, or such a read, occurs in it.
  A plain name holding the NS that is assigned to another name, or to ``self.x``, carries the NS.
- ``self.x = <held>`` in any method makes ``self.x`` held in every method of that class.
- A **call** whose argument (positional or keyword) holds VAL or is the NS hands it to the callee,
  when the callee resolves statically: a nested ``def`` of an enclosing function, a function or
  class of the same module, one imported by name (``from .x import f``), ``mod.f`` for an imported
  module, ``self.f``/``cls.f`` in a class, and a parameter bound, at some call site, to one of
  these (callbacks). A class's call is its ``__init__``; a class without one (a dataclass) is a stop
  whose fields are not followed. The call's result holds VAL when any argument held VAL or NS.
- A nested function that reads a held name of its enclosing function from its closure holds it
  too (an edge from the enclosing function).
- A **stop** is a function (``module:qualname``) where the NS carrying the option or the value
  is held. An **edge** is a hand-over from one function to another (call or closure). A
  **climb** is an edge whose target lies in a higher layer (tests/test_layout.py ``LAYERS``) than
  its source: the value went down and came back up.
- **Declarations** are the ``add_argument`` calls, anywhere in the package, that declare an option
  whose dest is *dest* (``"--args"``, or ``dest="args"``), each named by its enclosing function.
- **Namespace carriers below commands/** are the stops outside ``commands/`` (and the top-level
  modules) that hold the NS itself.

A stop that holds only the NS but never reads the option is still a stop: the option travels
with the Namespace. The numbers are a lower bound on the real data flow (attributes of objects
other than ``self`` are not followed, dynamic calls are not resolved).
"""
from __future__ import annotations

import argparse
import ast
import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_layout import LAYERS, PACKAGE, TOP, modules  # noqa: E402

NS, VAL = "ns", "val"
#: builtins whose result is their argument, converted
CONVERSIONS = ("int", "float", "list", "tuple", "sorted", "set", "frozenset", "dict", "zip", "enumerate", "reversed", "str")


def layer(module: str) -> int:
    """The module's rank in LAYERS (len(LAYERS) for the top-level modules)."""
    if module in TOP:
        return len(LAYERS)
    return LAYERS.index(module.split(".")[1])


class Func:
    """One function (or method, or nested def) of one module."""

    def __init__(self, module: str, qualname: str, node, cls: str | None, parent: "Func | None"):
        self.module, self.qualname, self.node, self.cls, self.parent = module, qualname, node, cls, parent
        self.children: dict = {}
        args = node.args
        self.params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]

    @property
    def key(self) -> str:
        return f"{self.module}:{self.qualname}"


class Index:
    """Every function, class and module-level import binding of the package."""

    def __init__(self):
        self.mods = modules()
        self.funcs: dict = {}      # key -> Func
        self.top: dict = {}        # module -> {name: Func | ("class", name)}
        self.classes: dict = {}    # (module, class) -> {method: Func}
        self.imports: dict = {}    # module -> {local name: ("module", dotted) | ("name", dotted, name)}
        for name, path in self.mods.items():
            tree = ast.parse(path.read_text(), str(path))
            self.top[name], self.imports[name] = {}, {}
            for node in tree.body:
                self._define(name, node, None, None, self.top[name])
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    self._bind_import(name, path, node)

    def _define(self, module, node, cls, parent, scope):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = ".".join(p for p in ((parent.qualname if parent else cls), node.name) if p)
            f = Func(module, qual, node, cls, parent)
            self.funcs[f.key] = f
            scope[node.name] = f
            for child in ast.walk(node):
                if child is not node and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        self._owner(node, child) is node:
                    self._define(module, child, cls, f, f.children)
        elif isinstance(node, ast.ClassDef):
            scope[node.name] = ("class", node.name)
            methods = self.classes.setdefault((module, node.name), {})
            for item in node.body:
                self._define(module, item, node.name, None, methods)

    @staticmethod
    def _owner(top, target):
        """The innermost function of *top* (itself included) whose body holds *target*."""
        owner = top

        def visit(node, current):
            nonlocal owner
            for child in ast.iter_child_nodes(node):
                if child is target:
                    owner = current
                    return True
                nxt = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else current
                if visit(child, nxt):
                    return True
            return False

        visit(top, top)
        return owner

    def _bind_import(self, name, path, node):
        binds = self.imports[name]
        if isinstance(node, ast.ImportFrom):
            if node.level:
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                source = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == PACKAGE:
                source = node.module
            else:
                return
            for alias in node.names:
                local = alias.asname or alias.name
                sub = f"{source}.{alias.name}"
                binds[local] = ("module", sub) if sub in self.mods else ("name", source, alias.name)
        else:
            for alias in node.names:
                if alias.name in self.mods:
                    binds[alias.asname or alias.name.split(".")[0]] = ("module", alias.name)

    def member(self, module: str, name: str):
        """Func (or ("class", module, name)) that *name* is at the top of *module*, following re-imports."""
        seen = 0
        while seen < 5:
            hit = self.top.get(module, {}).get(name)
            if isinstance(hit, Func):
                return hit
            if isinstance(hit, tuple):
                return ("class", module, name)
            bound = self.imports.get(module, {}).get(name)
            if not bound or bound[0] != "name":
                return None
            module, name, seen = bound[1], bound[2], seen + 1
        return None


def _callable_targets(index: Index, func: Func, expr, bound: dict) -> list:
    """What a called (or passed) expression resolves to: Funcs and ("class", module, name)s."""
    hit = _callable_target(index, func, expr, bound)
    return [] if hit is None else hit if isinstance(hit, list) else [hit]


def _callable_target(index: Index, func: Func, expr, bound: dict):
    """What a called (or passed) expression resolves to: a Func, ("class", module, name), a list
    of them (a parameter bound to callbacks), or None."""
    if isinstance(expr, ast.Name):
        scope = func
        while scope is not None:  # nested defs of this function and its enclosing ones
            if expr.id in scope.children:
                return scope.children[expr.id]
            scope = scope.parent
        if expr.id in bound.get(func.key, {}):
            return sorted(bound[func.key][expr.id], key=str)
        hit = index.member(func.module, expr.id)
        if hit is not None:
            return hit
        imp = index.imports[func.module].get(expr.id)
        if imp and imp[0] == "name":
            return index.member(imp[1], imp[2])
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
        base = expr.value.id
        if base in ("self", "cls") and func.cls:
            return index.classes.get((func.module, func.cls), {}).get(expr.attr)
        imp = index.imports[func.module].get(base)
        if imp and imp[0] == "module":
            return index.member(imp[1], expr.attr)
    return None


def trace(module: str, function: str, dest: str) -> dict:
    """The stops, edges and climbs of option *dest* from *module*:*function* (see the module docstring)."""
    index = Index()
    entry = index.funcs[f"{module}:{function}"]
    held: dict = {entry.key: {entry.params[0]: NS}}   # function key -> {name: NS | VAL}
    selfheld: dict = {}                               # (module, class) -> {attr: NS | VAL}
    bound: dict = {}                                  # function key -> {param: callable}
    edges: set = set()
    returns: set = set()                              # keys of functions that return a held value
    stops_extra: dict = {}                            # class stops (no __init__): key -> kind

    def names_of(target):
        return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]

    def kind_of(f: Func, expr) -> str | None:
        """NS when *expr* is a name holding the NS; VAL when it is the value (see the module docstring)."""
        h = held.get(f.key, {})
        sh = selfheld.get((f.module, f.cls), {}) if f.cls else {}
        if isinstance(expr, ast.Name):
            return h.get(expr.id)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return sh.get(expr.attr)
        if isinstance(expr, ast.Attribute):
            return VAL if expr.attr == dest and kind_of(f, expr.value) == NS else None
        if isinstance(expr, (ast.Subscript, ast.Starred)):
            return VAL if kind_of(f, expr.value) else None
        parts: list = []
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            parts = expr.elts
        elif isinstance(expr, ast.Dict):
            parts = [k for k in expr.keys if k is not None] + expr.values
        elif isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            parts = [g.iter for g in expr.generators]
        elif isinstance(expr, ast.IfExp):
            parts = [expr.body, expr.orelse]
        elif isinstance(expr, ast.BoolOp):
            parts = expr.values
        elif isinstance(expr, ast.Call):
            args = [*expr.args, *(k.value for k in expr.keywords)]
            if getattr(expr.func, "id", None) == "getattr" and len(expr.args) >= 2 and \
                    isinstance(expr.args[1], ast.Constant) and expr.args[1].value == dest:
                return VAL if kind_of(f, expr.args[0]) == NS else None
            if isinstance(expr.func, ast.Attribute) and kind_of(f, expr.func.value) == VAL:
                return VAL                                   # text.split(","), counts.copy()
            if getattr(expr.func, "id", None) in CONVERSIONS:
                parts = args
            elif any(isinstance(t, Func) and t.key in returns for t in _callable_targets(index, f, expr.func, bound)):
                parts = args                                 # parse_counts(ns.args, ...): what it returns
        return VAL if any(kind_of(f, p) == VAL for p in parts) else None

    def give(f: Func, name: str, kind: str) -> bool:
        h = held.setdefault(f.key, {})
        if h.get(name) == NS or h.get(name) == kind:
            return False
        h[name] = kind if h.get(name) is None else NS if kind == NS else h[name]
        return True

    def own_nodes(f: Func):
        """The nodes of *f*'s body, not those of its nested defs."""
        def visit(node):
            for child in ast.iter_child_nodes(node):
                yield child
                if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    yield from visit(child)
        yield from visit(f.node)

    def hand_over(f: Func, target, passed_args: list) -> bool:
        """The call of *target* from *f* with (position or keyword, expression, kind) arguments."""
        changed = False
        if isinstance(target, tuple):
            init = index.classes.get(target[1:], {}).get("__init__")
            if init is None:
                ck = f"{target[1]}:{target[2]}"
                if any(k for _, _, k in passed_args) and ck not in stops_extra:
                    stops_extra[ck] = VAL
                    edges.add((f.key, ck))
                    changed = True
                return changed
            callee, params = init, init.params[1:]
        else:
            callee = target
            params = callee.params[1:] if callee.cls and callee.params[:1] in (["self"], ["cls"]) else callee.params
        for where, expr, kind in passed_args:
            p = params[where] if isinstance(where, int) and where < len(params) else \
                where if isinstance(where, str) and where in callee.params else None
            if p is None:
                continue
            for passed in _callable_targets(index, f, expr, bound):  # a callback: the parameter names it
                if passed not in bound.setdefault(callee.key, {}).setdefault(p, []):
                    bound[callee.key][p].append(passed)
                    changed = True
            if kind:
                edges.add((f.key, callee.key))
                changed |= give(callee, p, kind)
        return changed

    changed = True
    while changed:
        changed = False
        for key in sorted(held):
            f = index.funcs[key]
            for node in own_nodes(f):
                pairs = []
                if isinstance(node, ast.Assign):
                    pairs = [(t, node.value) for t in node.targets]
                elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                    pairs = [(node.target, node.value)]
                elif isinstance(node, (ast.For, ast.comprehension)):
                    pairs = [(node.target, node.iter)]
                elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                    pairs = [(node.optional_vars, node.context_expr)]
                elif isinstance(node, ast.NamedExpr):
                    pairs = [(node.target, node.value)]
                for target, value in pairs:
                    kind = kind_of(f, value)
                    if not kind:
                        continue
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and \
                            target.value.id == "self" and f.cls:
                        sh = selfheld.setdefault((f.module, f.cls), {})
                        if sh.get(target.attr) != NS and sh.get(target.attr) != kind:
                            sh[target.attr] = kind
                            changed = True
                            for m in index.classes[(f.module, f.cls)].values():
                                held.setdefault(m.key, {})
                        continue
                    for n in names_of(target):
                        changed |= give(f, n, kind if isinstance(target, ast.Name) else VAL)
                if isinstance(node, ast.Return) and node.value is not None and kind_of(f, node.value) == VAL \
                        and f.key not in returns:
                    returns.add(f.key)
                    changed = True
                if isinstance(node, ast.Call):
                    argkinds = [(i, a, kind_of(f, a)) for i, a in enumerate(node.args)]
                    kwkinds = [(k.arg, k.value, kind_of(f, k.value)) for k in node.keywords if k.arg]
                    if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and \
                            any(k for _, _, k in argkinds + kwkinds) and \
                            not _callable_targets(index, f, node.func, bound) and \
                            node.func.value.id in {n.id for n in ast.walk(f.node) if isinstance(n, ast.Name)} and \
                            node.func.value.id not in index.imports[f.module]:
                        changed |= give(f, node.func.value.id, VAL)   # out.append(v), d.update(v)
                    for target in _callable_targets(index, f, node.func, bound):
                        changed |= hand_over(f, target, argkinds + kwkinds)
            for child in f.children.values():  # closures reading a held name
                free = {n.id for n in ast.walk(child.node) if isinstance(n, ast.Name)} - set(child.params)
                for name in sorted(free):
                    kind = held.get(f.key, {}).get(name)
                    if kind and held.get(child.key, {}).get(name) is None:
                        edges.add((f.key, child.key))
                        changed |= give(child, name, kind)
    stops = {}
    for key, names in held.items():
        f = index.funcs[key]
        kinds = set(names.values())
        sh = selfheld.get((f.module, f.cls), {}) if f.cls else {}
        kinds |= {sh[n.attr] for n in own_nodes(f) if isinstance(n, ast.Attribute) and
                  isinstance(n.value, ast.Name) and n.value.id == "self" and n.attr in sh}
        if kinds or key == entry.key or any(key in e for e in edges):
            stops[key] = NS if NS in kinds or key == entry.key else VAL
    stops.update(stops_extra)
    mod_of = {k: k.split(":")[0] for k in stops}
    climbs = sorted((a, b) for a, b in edges if layer(mod_of[b]) > layer(mod_of[a]))
    commands = f"{PACKAGE}.commands"
    carriers = sorted(k for k, v in stops.items() if v == NS and not mod_of[k].startswith(commands)
                      and mod_of[k] not in TOP)
    return {"stops": sorted(stops), "files": sorted(set(mod_of.values())), "edges": sorted(edges),
            "climbs": climbs, "namespace_below_commands": carriers,
            "layers": sorted({LAYERS[layer(m)] if layer(m) < len(LAYERS) else "top" for m in mod_of.values()},
                             key=lambda x: (LAYERS + ("top",)).index(x))}


def declarations(dest: str) -> list:
    """``module:function`` of every ``add_argument`` call declaring an option whose dest is *dest*."""
    return _declarations().get(dest, [])


@functools.lru_cache(maxsize=1)
def _declarations() -> dict:
    """dest -> sorted ``module:function`` of its ``add_argument`` calls: one walk of the package for every
    dest (a walk per dest made the shared-options test take a minute)."""
    index = Index()
    found: dict = {}
    for f in index.funcs.values():
        if index.funcs.get(f.key) is not f:
            continue
        for node in ast.walk(f.node):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"):
                continue
            if Index._owner(f.node, node) is not f.node:
                continue
            names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            given = [k.value.value for k in node.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)]
            longs = [n for n in names if n.startswith("--")]
            own = given[0] if given else (longs[0][2:] if longs else names[0] if names else "").replace("-", "_")
            found.setdefault(own, []).append(f.key)
    return {dest: sorted(keys) for dest, keys in found.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--module", default=f"{PACKAGE}.commands.compare")
    p.add_argument("--function", default="run")
    p.add_argument("--dest", default="args")
    p.add_argument("-v", "--verbose", action="store_true", help="list the stops, edges and climbs")
    a = p.parse_args(argv)
    out = trace(a.module, a.function, a.dest)
    print(f"{a.module}:{a.function} option dest {a.dest!r}: {len(out['stops'])} stops in {len(out['files'])} files "
          f"(layers: {', '.join(out['layers'])}), {len(out['edges'])} edges, {len(out['climbs'])} climbs, "
          f"{len(out['namespace_below_commands'])} functions below commands/ holding the Namespace")
    decl = declarations(a.dest)
    below = [d for d in decl if not d.startswith(f"{PACKAGE}.commands.")]
    print(f"options with dest {a.dest!r} are declared in {len(decl)} places, {len(below)} below commands/")
    out["declarations"] = decl
    if a.verbose:
        for title in ("stops", "edges", "climbs", "namespace_below_commands", "declarations"):
            print(f"{title}:")
            for item in out[title]:
                print("  ", " -> ".join(item) if isinstance(item, tuple) else item)
    return 0


if __name__ == "__main__":
    sys.exit(main())
