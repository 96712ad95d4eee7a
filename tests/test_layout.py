"""The package's layout: no import circles, no imports from a lower stage to a higher one.

The imports of every module under ``src/tokensieve`` are read with :mod:`ast`
(those at module level, those inside functions, and those under
``if TYPE_CHECKING:``) and resolved to modules; importing a package counts as
importing its ``__init__``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

#: the stages, lowest first; a module may import its own stage and the stages below it only
STAGES = {
    "errors": 0,
    "limits": 0,
    "_memo": 0,
    "_arrays": 0,
    "bitmask": 0,
    "ir": 1,
    "vocab": 1,
    "retrieval": 1,
    "automata": 2,
    "grammar": 3,
    "compile": 4,
    "matcher": 5,
}

#: folders that must hold no circle even through imports made only for type annotations: every stage's
NO_TYPING_CIRCLES = tuple(stage for stage in STAGES if (SRC / "tokensieve" / stage).is_dir())


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "tokensieve").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> Iterator[tuple[str, int, str]]:
    """``(imported module, line, kind)``; kind is ``"module"``, ``"function"`` or ``"typing"``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            stem = ".".join(base + ([node.module] if node.module else []))
        else:
            stem = node.module or ""
        return [f"{stem}.{a.name}" if f"{stem}.{a.name}" in MODULES else stem for a in node.names]

    def visit(node: ast.AST, kind: str) -> Iterator[tuple[str, int, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from visit(child, "function" if kind == "module" else kind)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from visit(child, "typing")
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in targets(child):
                    if target.split(".")[0] == "tokensieve" and target != name:
                        yield target, child.lineno, kind
            else:
                yield from visit(child, kind)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), "module")


IMPORTS = {name: list(_imports(name, path)) for name, path in MODULES.items()}


def _circles(kinds: set[str], within: tuple[str, ...] | None = None) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""

    def inside(m: str) -> bool:
        return within is None or _stage(m) in within

    graph = {
        m: sorted({t for t, _, k in IMPORTS[m] if k in kinds and t in MODULES and inside(t)})
        for m in MODULES
        if inside(m)
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in graph:
        if v not in index:
            connect(v)
    return out


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_circles_through_imports_that_run() -> None:
    assert _circles({"module", "function"}) == []


def test_no_circles_in_the_pipeline_stages_even_for_annotations() -> None:
    assert _circles({"module", "function", "typing"}, NO_TYPING_CIRCLES) == []


def test_stages_import_only_downwards() -> None:
    wrong = []
    for module, imports in IMPORTS.items():
        own = _stage(module)
        if own not in STAGES:
            continue  # runtime, server, integrations, the CLI: above every stage
        for target, line, _ in imports:
            other = _stage(target)
            if other != own and STAGES.get(other, 99) >= STAGES[own]:
                wrong.append(f"{MODULES[module].relative_to(SRC)}:{line} imports {target}")
    assert wrong == []


#: modules imported inside functions on purpose, not to dodge a circle, and why
LAZY = {
    "tokensieve.compile._frame_kernel": "imports numba (0.1 s, and 0.2-0.4 s to load the kernel): "
    "loaded on the first walk of a rule network, not by `import tokensieve`",
    "tokensieve.compile._dfa_kernel": "imports numba: loaded with the frame-walk kernel, not by `import tokensieve`",
    "tokensieve.automata._minimize_kernel": "imports numba: loaded with the walk kernels (automata.kernels.load)",
    "tokensieve.automata._subset_kernel": "imports numba: loaded with the walk kernels (automata.kernels.load)",
}


@pytest.mark.parametrize("stage", ["ir", "automata", "grammar", "compile", "matcher", "vocab"])
def test_no_imports_inside_functions(stage: str) -> None:
    """Imports inside functions dodge circles; the stages have none left (but the :data:`LAZY` ones)."""
    inner = [
        f"{MODULES[m].relative_to(SRC)}:{line} imports {t}"
        for m, imports in IMPORTS.items()
        if _stage(m) == stage
        for t, line, kind in imports
        if kind == "function" and t not in LAZY
    ]
    assert inner == []


def test_the_lazy_modules_stay_out_of_the_package_import() -> None:
    """``import tokensieve`` (and compiling a regex) loads none of the :data:`LAZY` modules, nor numba."""
    code = (
        "import sys, tokensieve; from tokensieve.grammar.regex import regex_to_dfa; regex_to_dfa('[a-z]+'); "
        f"print(sorted(m for m in {sorted(LAZY) + ['numba']!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_checker_sees_a_circle(tmp_path: Path) -> None:
    """The reader resolves relative imports: two modules importing each other form a circle."""
    global MODULES, IMPORTS
    saved = MODULES, IMPORTS
    try:
        pkg = tmp_path / "tokensieve" / "ir"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "a.py").write_text("from .b import x\n")
        (pkg / "b.py").write_text("def f():\n    from . import a\n")
        MODULES = {
            "tokensieve.ir": pkg / "__init__.py",
            "tokensieve.ir.a": pkg / "a.py",
            "tokensieve.ir.b": pkg / "b.py",
        }
        IMPORTS = {name: list(_imports(name, path)) for name, path in MODULES.items()}
        assert _circles({"module"}) == []
        assert _circles({"module", "function"}) == [["tokensieve.ir.a", "tokensieve.ir.b"]]
    finally:
        MODULES, IMPORTS = saved
