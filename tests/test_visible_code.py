"""The code a reader sees runs as shown.

A reader who copies the code cells the website shows, in order, into a fresh Python
session must not meet a NameError. The website shows a code cell unless it is tagged
``remove-cell`` or ``remove-input`` (``hide-input`` and ``hide-cell`` code is collapsed
but one click away, and a gated solution's code is behind its dropdown: both are shown).
The Colab install cell (``remove-cell``) is not needed anywhere else.

The check is static: it follows every top-level statement of the visible cells in order,
with Python's scoping rules (functions, lambdas, comprehensions and classes have scopes
of their own; a function body reads globals when it is called, so at the end of the cell
that defines it at the earliest), and reports each name read before any visible cell
binds it. Constructs it cannot follow (``exec``, ``eval``, star imports, ``globals()``)
are refused in visible cells, so what it reports is exact for the book's code.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Names an IPython kernel (JupyterLab, Binder, Colab) provides without an import.
KERNEL_NAMES = {"display", "get_ipython", "In", "Out", "exit", "quit"}
UNFOLLOWABLE_CALLS = {"exec", "eval", "globals", "locals", "vars", "__import__"}


def toc_chapters() -> list[Path]:
    text = (ROOT / "_toc.yml").read_text()
    files = re.findall(r"^\s*-?\s*file:\s*(chapters/\S+)\s*$", text, flags=re.M)
    return [ROOT / f"{f}.ipynb" for f in files]


def is_shown(cell: dict) -> bool:
    """A code cell whose code the website shows (collapsed or not)."""
    tags = set(cell.get("metadata", {}).get("tags", []))
    return cell["cell_type"] == "code" and not tags & {"remove-cell", "remove-input"}


def code_tree(source: str) -> ast.Module:
    """The cell's code without IPython's magic and shell lines."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(lines))


COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _target_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


class _Scope:
    """Names bound in one function, lambda, comprehension or class body."""

    def __init__(self, node: ast.AST):
        self.bound: set[str] = set()
        self.globals: set[str] = set()
        args = getattr(node, "args", None)
        if isinstance(args, ast.arguments):
            for a in args.posonlyargs + args.args + args.kwonlyargs:
                self.bound.add(a.arg)
            for a in (args.vararg, args.kwarg):
                if a is not None:
                    self.bound.add(a.arg)
        if isinstance(node, COMPREHENSIONS):
            for gen in node.generators:
                self.bound |= _target_names(gen.target)
            return
        for stmt in node.body if isinstance(node.body, list) else [node.body]:
            self._collect(stmt)

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.bound.add(node.name)
            return  # its body is a scope of its own
        if isinstance(node, (ast.Lambda, *COMPREHENSIONS)):
            # only a walrus inside a comprehension binds in the enclosing scope
            for n in ast.walk(node):
                if isinstance(n, ast.NamedExpr):
                    self.bound |= _target_names(n.target)
            return
        if isinstance(node, ast.Global):
            self.globals |= set(node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self.bound.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.bound.add(node.name)
        for child in ast.iter_child_nodes(node):
            self._collect(child)


def _scope_body(node: ast.AST) -> list[ast.AST]:
    """What runs inside a scope: not the defaults, decorators, bases or first iterable,
    which the enclosing scope evaluates."""
    if isinstance(node, COMPREHENSIONS):
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for i, gen in enumerate(node.generators):
            parts += gen.ifs + ([gen.iter] if i else [])
        return parts
    return node.body if isinstance(node.body, list) else [node.body]


def _outside_parts(node: ast.AST) -> list[ast.AST]:
    """The parts of a nested scope that its enclosing scope evaluates."""
    if isinstance(node, COMPREHENSIONS):
        return [node.generators[0].iter]
    if isinstance(node, ast.ClassDef):
        return node.bases + node.decorator_list
    return (node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
            + getattr(node, "decorator_list", []))


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef) + COMPREHENSIONS


def free_names(node: ast.AST, enclosing: tuple[set[str], ...] = ()) -> set[str]:
    """Names a nested scope (function, lambda, comprehension, class) reads from the module."""
    scope = _Scope(node)
    outer = enclosing + (scope.bound - scope.globals,)
    free: set[str] = set()
    stack = list(_scope_body(node))
    while stack:
        n = stack.pop()
        if isinstance(n, SCOPES):
            stack.extend(_outside_parts(n))
            free |= free_names(n, outer)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            if not any(n.id in s for s in outer):
                free.add(n.id)
        else:
            stack.extend(ast.iter_child_nodes(n))
    return free


def unfollowable(tree: ast.Module) -> list[str]:
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
            found.append(f"from {n.module} import *")
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
                n.func.id in UNFOLLOWABLE_CALLS:
            found.append(f"{n.func.id}()")
    return found


class _ModuleFlow:
    """Walk a cell's top-level code in execution order, recording reads before binds."""

    def __init__(self, defined: set[str]):
        self.defined = defined
        self.missing: list[str] = []
        self.deferred: set[str] = set()  # read by function bodies: needed once called

    def read(self, name: str) -> None:
        if name not in self.defined and name not in self.missing:
            self.missing.append(name)

    def bind(self, names: set[str]) -> None:
        self.defined |= names

    def visit(self, node: ast.AST) -> None:
        """Evaluate ``node`` as module-level code: reads first, then binds."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list + node.args.defaults + [
                    d for d in node.args.kw_defaults if d is not None]:
                self.visit(d)
            self.deferred |= free_names(node)
            self.bind({node.name})
        elif isinstance(node, ast.ClassDef):
            for d in node.decorator_list + node.bases:
                self.visit(d)
            for name in sorted(free_names(node)):
                self.read(name)
            self.bind({node.name})
        elif isinstance(node, ast.Lambda):
            for d in node.args.defaults:
                self.visit(d)
            self.deferred |= free_names(node)
        elif isinstance(node, COMPREHENSIONS):
            self.visit(node.generators[0].iter)
            inner = free_names(node)
            for name in sorted(inner):
                self.read(name)
            for n in ast.walk(node):
                if isinstance(n, ast.NamedExpr):
                    self.bind(_target_names(n.target))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self.bind({(a.asname or a.name).split(".")[0] for a in node.names})
        elif isinstance(node, ast.Assign):
            self.visit(node.value)
            for t in node.targets:
                self._assign(t)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.visit(node.value)
                self._assign(node.target)
        elif isinstance(node, ast.AugAssign):
            self.visit(node.value)
            if isinstance(node.target, ast.Name):
                self.read(node.target.id)
            self._assign(node.target)
        elif isinstance(node, ast.NamedExpr):
            self.visit(node.value)
            self.bind({node.target.id})
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.visit(node.iter)
            self._assign(node.target)
            for stmt in node.body + node.orelse:
                self.visit(stmt)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                self.visit(item.context_expr)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars)
            for stmt in node.body:
                self.visit(stmt)
        elif isinstance(node, ast.Try):
            for stmt in node.body:
                self.visit(stmt)
            for h in node.handlers:
                if h.type is not None:
                    self.visit(h.type)
                if h.name:
                    self.bind({h.name})
                for stmt in h.body:
                    self.visit(stmt)
            for stmt in node.orelse + node.finalbody:
                self.visit(stmt)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self.read(node.id)
            elif isinstance(node.ctx, ast.Del):
                self.read(node.id)
                self.defined.discard(node.id)
        else:
            for child in ast.iter_child_nodes(node):
                self.visit(child)

    def _assign(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.bind({target.id})
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._assign(t)
        elif isinstance(target, ast.Starred):
            self._assign(target.value)
        else:  # x[i] = ..., x.a = ...: reads x
            self.visit(target)

    def end_of_cell(self) -> None:
        for name in sorted(self.deferred):
            self.read(name)
        self.deferred = set()


def names_used_before_shown(cells: list[dict]) -> list[tuple[int, str]]:
    """(cell index, name) for each name a shown cell reads that no earlier shown code binds."""
    flow = _ModuleFlow(set(dir(builtins)) | KERNEL_NAMES)
    found: list[tuple[int, str]] = []
    for i, cell in enumerate(cells):
        if not is_shown(cell):
            continue
        flow.missing = []
        for stmt in code_tree("".join(cell["source"])).body:
            flow.visit(stmt)
        flow.end_of_cell()
        found += [(i, name) for name in flow.missing]
        flow.bind(set(flow.missing))  # report each name once, where it is first needed
    return found


@pytest.mark.parametrize("path", toc_chapters(), ids=lambda p: p.name)
def test_shown_code_runs_in_order_without_hidden_cells(path: Path):
    cells = json.loads(path.read_text())["cells"]
    for i, cell in enumerate(cells):
        if is_shown(cell):
            tricks = unfollowable(code_tree("".join(cell["source"])))
            assert not tricks, f"{path.name}: shown cell {i} uses {tricks}; write it plainly"
    missing = names_used_before_shown(cells)
    assert not missing, (
        f"{path.name}: shown code reads names that only hidden cells (remove-input) define, "
        "so a reader who copies what the page shows meets a NameError: "
        + ", ".join(f"{name} (cell {i})" for i, name in missing))


def _cells(*cells: tuple[str, list[str]]) -> list[dict]:
    return [{"cell_type": "code", "source": s, "metadata": {"tags": t}} for s, t in cells]


def test_the_flow_follows_pythons_scopes():
    hidden = ["remove-input", "remove-output"]
    cells = _cells(
        ("import numpy as np\nfrom math import sqrt", []),
        ("secret = 3\nshown_too = 1", hidden),
        ("def f(x, k=2):\n    return np.exp(x) + later + k\nlater = 1\ny = f(1)", []),
        ("z = [i * j for i in range(3) for j in range(i)]\ng = lambda t: t + secret", []),
        ("w = {k: v for k, v in zip(ks, range(3))}", []),
        ("for t in range(2):\n    acc = t\nprint(t, acc, sqrt(4))", ["hide-cell"]),
        ("try:\n    pass\nexcept ValueError as err:\n    print(err)", ["hide-input"]),
        ("q = shown_too + 1\nq += 1\nundefined_yet += 1", []),
        ("(n := 3)\nprint(n, display)", []),
        ("class C:\n    a = np.pi\n    def m(self):\n        return self.a + inner_missing", []),
        ("del q\nprint(q)", []),
        ("def h():\n    return never_bound", []),
    )
    assert names_used_before_shown(cells) == [
        (3, "secret"), (4, "ks"), (7, "shown_too"), (7, "undefined_yet"),
        (9, "inner_missing"), (10, "q"), (11, "never_bound")]


def test_tricks_the_flow_cannot_follow_are_refused():
    tree = code_tree("from numpy import *\nexec('x = 1')\nprint(globals())")
    assert unfollowable(tree) == ["from numpy import *", "exec()", "globals()"]


def test_only_removed_code_is_unseen():
    shown = [is_shown(c) for c in _cells(("x", []), ("x", ["hide-input"]), ("x", ["hide-cell"]),
                                          ("x", ["remove-input", "remove-output"]),
                                          ("x", ["remove-cell"]), ("x", ["nbval-ignore-output"]))]
    assert shown == [True, True, True, False, False, True]
