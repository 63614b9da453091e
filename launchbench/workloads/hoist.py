"""``hoist-imports``: a what-if. numba-cuda's launch path with the imports inside its functions run
once, at set-up, instead of at every call.

Why: the counts (``launchbench counts``) show importlib's ``ModuleSpec.parent`` and
``_handle_fromlist`` in every launch, because ``to_device`` in numba-cuda's ``args.py`` runs
``from .cudadrv... import ...`` for every array argument of every launch. This what-if measures
what a fix upstream would save, on the installed numba-cuda, without a copy of its source:
compare it with its base, paired, like any mechanism (``--variant hoist=hoist-imports@numba-cuda==0.30.4``).

How (a generic transform; ``tests/test_whatif_hoist.py`` runs it on a stand-in package):

1. the module's own source file is parsed. A candidate is any function at module level or in
   a module-level class (nested classes too) with ``import`` or ``from ... import`` statements
   at the top level of its body;
2. the function's untouched definition is compiled again inside throwaway ``class``
   statements named after its qualname's classes, so it gets the same qualified name, name
   mangling and ``__class__`` cell. Nothing is run: the code object is taken from the
   constants. This copy must equal the loaded function's code (bytecode, constants, line
   table), or the installed source is not what runs and the function is refused;
3. the import statements are removed from a copy of the definition, which is compiled the same
   way. The statements run once, with the module's ``__name__`` and ``__package__``, and bind
   their names in the module's globals. The new code reads those names with ``LOAD_GLOBAL``
   instead of importing them at each call;
4. only the function's ``__code__`` is swapped, so the function object stays the same: no class
   is written, and a bound method, a ``functools.wraps`` wrapper or another module's
   ``from x import f`` all run the new code. ``uninstall`` puts the old code back and removes
   the names it added.

An import statement stays in place when hoisting it would change what the function does: the
function also assigns the name (so it would stay local), the module or builtins already bind the
name to another object, the import fails when it runs at set-up, or the statement is inside an
``if``, ``try`` or loop (not at the top level of the body). Two differences remain: the imports
run at install, not at the first call; and a later write to an imported attribute
(monkeypatching ``devicearray._to_strided_memory_view``, say) is not seen by the hoisted name.

Import-light: the standard library only; numba-cuda's modules are imported by ``install``.
"""
from __future__ import annotations

import ast
import builtins
import copy
import functools
import importlib
import sys
import tokenize
import types
from dataclasses import dataclass, field

from ..base.errors import UserError

#: numba-cuda modules whose functions run in every launch and import inside their bodies
#: (``args.py``: ``In``/``Out``/``InOut.to_device``, once per array argument)
LAUNCH_PATH_MODULES = ("numba.cuda.args",)
_IMPORTS = (ast.Import, ast.ImportFrom)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class Hoisted:
    """What hoisting did to one function."""

    module: str
    function: str                               # qualified name
    names: list = field(default_factory=list)   # names now bound once in the module's globals
    kept: list = field(default_factory=list)    # "line N: why" for each import left in place
    refused: str | None = None                  # why the function was left as it was

    def as_dict(self) -> dict:
        return {"module": self.module, "function": self.function, "names": list(self.names),
                "kept": list(self.kept), "refused": self.refused}


# ---------------------------------------------------------------- pure parts: the AST

def bound_names(stmt: ast.stmt) -> list:
    """The names an import statement binds (``import a.b`` binds ``a``)."""
    if isinstance(stmt, ast.Import):
        return [alias.asname or alias.name.partition(".")[0] for alias in stmt.names]
    return [alias.asname or alias.name for alias in stmt.names]


def candidates(tree: ast.Module) -> list:
    """(qualname, FunctionDef) of each function at module level or in a module-level class whose
    body has import statements at its top level, in source order."""
    out = []

    def walk(body, prefix):
        for node in body:
            if isinstance(node, _FUNCS):
                if any(isinstance(s, _IMPORTS) for s in node.body):
                    out.append((prefix + node.name, node))
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(tree.body, "")
    return out


def first_line(node) -> int:
    """The line a function's code starts at: its first decorator's, or its ``def``'s."""
    return min([node.lineno] + [d.lineno for d in node.decorator_list])


def _future_imports(tree: ast.Module) -> list:
    return [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]


def compile_at(node, qualname: str, filename: str, future: list = ()) -> types.CodeType:
    """The code object of function *node* as the compiler makes it at *qualname* (its classes
    rebuilt as empty throwaway ``class`` statements); nothing is executed."""
    parts = qualname.split(".")
    body = [node]
    for name in reversed(parts[:-1]):
        cls = ast.ClassDef(name=name, bases=[], keywords=[], body=body, decorator_list=[])
        if sys.version_info >= (3, 12):
            cls.type_params = []
        body = [ast.copy_location(cls, node)]
    module = ast.Module(body=list(future) + body, type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec", dont_inherit=True)
    for name in parts[:-1]:
        code = _const_code(code, name, None)
    return _const_code(code, parts[-1], first_line(node))


def _const_code(code, name: str, line: int | None):
    found = [c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name
             and (line is None or c.co_firstlineno == line)]
    if len(found) != 1:
        raise LookupError(f"{name} not found once in the compiled code")
    return found[0]


def where(stmt) -> tuple:
    """A statement's place in its file (two imports may share a line: ``import a; import b``)."""
    return stmt.lineno, stmt.col_offset


def without_imports(node, keep: set):
    """A copy of function *node* without the import statements at the top level of its body,
    except those whose place (``where``) is in *keep*; and the statements removed."""
    new = copy.deepcopy(node)
    removed = [s for s in new.body if isinstance(s, _IMPORTS) and where(s) not in keep]
    new.body = [s for s in new.body if s not in removed] or [ast.copy_location(ast.Pass(), node)]
    return new, removed


# ---------------------------------------------------------------- finding the live function

def _function_objects(obj) -> list:
    """The plain functions behind an attribute: a function, a static/class method, a property's
    accessors, a cached_property's function; each unwrapped through ``__wrapped__``."""
    if isinstance(obj, (staticmethod, classmethod)):
        objs = [obj.__func__]
    elif isinstance(obj, property):
        objs = [obj.fget, obj.fset, obj.fdel]
    elif isinstance(obj, functools.cached_property):
        objs = [obj.func]
    else:
        objs = [obj]
    out = []
    for o in objs:
        seen = 0
        while o is not None and not isinstance(o, types.FunctionType) and hasattr(o, "__wrapped__") and seen < 20:
            o, seen = o.__wrapped__, seen + 1
        if isinstance(o, types.FunctionType):
            out.append(o)
            while hasattr(o, "__wrapped__") and seen < 20:  # functools.wraps around a function
                o, seen = o.__wrapped__, seen + 1
                if isinstance(o, types.FunctionType):
                    out.append(o)
    return out


def live_function(module, qualname: str, filename: str, line: int):
    """The function object of *module* whose code is the definition at *qualname*, *line*; None if
    the module does not hold it (redefined, deleted, wrapped beyond recognition)."""
    obj = module
    for part in qualname.split(".")[:-1]:
        obj = vars(obj).get(part) if hasattr(obj, "__dict__") else None
        if not isinstance(obj, type):
            return None
    attr = vars(obj).get(qualname.rsplit(".", 1)[-1])
    for func in _function_objects(attr):
        code = func.__code__
        if code.co_filename == filename and code.co_firstlineno == line:
            return func
    return None


# ---------------------------------------------------------------- install / uninstall

class _Saved:
    codes: list = []     # (function, its original code)
    names: list = []     # (globals dict, name, value we bound)
    report: list = []    # Hoisted records of the last install


def _module_file(module) -> str:
    path = getattr(module, "__file__", None)
    if not path or not str(path).endswith(".py"):
        raise UserError(f"hoist-imports needs the source of {module.__name__} (a .py file); it has {path!r}")
    return path


def _run_import(stmt, module, filename: str) -> dict:
    """Run one import statement as the module would, in a fresh namespace; the names it bound."""
    ns = {"__name__": module.__name__, "__package__": module.__package__, "__spec__": module.__spec__,
          "__builtins__": builtins}
    exec(compile(ast.Module(body=[stmt], type_ignores=[]), filename, "exec", dont_inherit=True), ns)
    return {name: ns[name] for name in bound_names(stmt)}


_MISSING = object()


def _clashes(values: dict, module) -> list:
    """Names the module (or builtins) already binds to another object than *values* gives them."""
    g = vars(module)
    bad = []
    for name, value in values.items():
        current = g.get(name, vars(builtins).get(name, _MISSING))
        if current is not _MISSING and current is not value:
            bad.append(name)
    return bad


def hoist_function(module, qualname: str, node, filename: str, future: list = ()) -> Hoisted:
    """Hoist *node*'s imports (see the module docstring): swaps the function's code and binds the
    imported names in the module's globals."""
    rec = Hoisted(module.__name__, qualname)
    func = live_function(module, qualname, filename, first_line(node))
    if func is None:
        rec.refused = "no function of the module runs this definition"
        return rec
    try:
        same = compile_at(node, qualname, filename, future)
    except (LookupError, SyntaxError, ValueError) as exc:
        rec.refused = f"cannot recompile it: {exc}"
        return rec
    if same != func.__code__:
        rec.refused = "its installed source does not compile to the code that runs"
        return rec
    keep: dict = {}    # where(stmt) -> why it stays
    values: dict = {}  # where(stmt) -> the names it bound, run once
    for _ in range(len(node.body) + 1):  # a pass keeps one more statement, or is the last
        new, removed = without_imports(node, set(keep))
        code = compile_at(new, qualname, filename, future)
        local = set(code.co_varnames) | set(code.co_cellvars)
        before = len(keep)
        for stmt in removed:
            at, names = where(stmt), set(bound_names(stmt))
            if local & names:
                keep[at] = f"the function also assigns {', '.join(sorted(local & names))}"
                continue
            if at in values:
                continue
            try:
                values[at] = _run_import(stmt, module, filename)
            except Exception as exc:  # noqa: BLE001 - an optional import: it stays per call
                keep[at] = f"the import fails at set-up ({type(exc).__name__})"
                continue
            claimed = {n: v for w, got in values.items() if w != at and w not in keep for n, v in got.items()}
            clash = _clashes(values[at], module) + [n for n, v in values[at].items()
                                                    if n in claimed and claimed[n] is not v]
            if clash:
                keep[at] = f"the module already binds {', '.join(clash)} to another object"
        if len(keep) == before:
            break
    if code.co_freevars != func.__code__.co_freevars:
        rec.refused = "its closure would change"
        return rec
    rec.kept = [f"line {line}: {why}" for (line, _col), why in sorted(keep.items())]
    if not removed:
        return rec
    g = vars(module)
    for stmt in removed:
        for name, value in values[where(stmt)].items():
            if name not in g:
                g[name] = value
                _Saved.names.append((g, name, value))
            rec.names.append(name)
    _Saved.codes.append((func, func.__code__))
    func.__code__ = code
    return rec


def hoist_module(module) -> list:
    """Hoist every candidate function of *module*; one Hoisted record each."""
    filename = _module_file(module)
    try:
        with tokenize.open(filename) as fh:
            tree = ast.parse(fh.read(), filename)
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise UserError(f"hoist-imports cannot read the source of {module.__name__} ({filename}): {exc}") from None
    future = _future_imports(tree)
    return [hoist_function(module, qualname, node, filename, future) for qualname, node in candidates(tree)]


def install(modules=LAUNCH_PATH_MODULES) -> list:
    """Hoist the imports of *modules*' functions (names or module objects); returns the records.
    Idempotent per process: a second install first restores the first."""
    uninstall()
    report = []
    try:
        for mod in modules:
            if isinstance(mod, str):
                try:
                    mod = importlib.import_module(mod)
                except ImportError as exc:
                    raise UserError(f"mechanism hoist-imports needs numba-cuda's {mod} ({exc}); it rewrites "
                                    "numba-cuda's own launch path") from None
            report.extend(hoist_module(mod))
    except BaseException:
        uninstall()
        raise
    _Saved.report = report
    return report


def uninstall() -> None:
    """Put every swapped code object back and remove the names install bound (where unchanged)."""
    for func, code in reversed(_Saved.codes):
        func.__code__ = code
    for g, name, value in reversed(_Saved.names):
        if g.get(name, _MISSING) is value:
            del g[name]
    _Saved.codes, _Saved.names, _Saved.report = [], [], []


def installed() -> bool:
    return bool(_Saved.codes)


def report() -> list:
    """The last install's records, as JSON-ready dicts (the worker puts them in its set-up info)."""
    return [r.as_dict() for r in _Saved.report]
