"""The layout's rules, read from the source: each operator family is a folder of the package with
the same rooms (api, plan, kernel, numpy) and its kernels/<family>.cu, found from the tree so
that a new one cannot be missed; imports go one way (no cycle, `core` imports no family, also
not inside functions), no module replaces itself in `sys.modules`, and nothing parses a
kernel's name expression back (the records' fields are read instead)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import onnx_cupy
from onnx_cupy.core import loader

PACKAGE = Path(onnx_cupy.__file__).parent
TESTS = Path(__file__).parent
ROOMS = ("api.py", "plan.py", "kernel.py", "numpy.py")   # a family's rooms (DESIGN's layout)
# the package's folders that hold any of the rooms: the families, which must hold them all
HOLDERS = sorted(d.name for d in PACKAGE.iterdir() if (d / "__init__.py").is_file()
                 and any((d / room).is_file() for room in ROOMS))
FAMILIES = tuple(f for f in HOLDERS if all((PACKAGE / f / room).is_file() for room in ROOMS))


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def _imports(name: str) -> set[str]:
    """Every onnx_cupy module `name` imports at run time, at module level or inside
    functions."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for n in ast.walk(block)}   # imports for type checkers only run no code
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("onnx_cupy"))
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            base = (f"{base}.{node.module}" if node.module else base) if node.level else (
                node.module or "")
            if not base.startswith("onnx_cupy"):
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return found - {name}


GRAPH = {name: _imports(name) for name in MODULES}


def test_the_graph_covers_the_package():
    assert {"onnx_cupy.core.records", "onnx_cupy.pool.kernel", "onnx_cupy.nn.functional"} <= set(
        GRAPH)
    assert "onnx_cupy.core.records" in GRAPH["onnx_cupy.pool.kernel"]
    assert "onnx_cupy.interop.functional" in GRAPH["onnx_cupy.nn.functional"]


def test_every_family_has_its_rooms_and_kernels():
    """A folder with a family's room has them all, and its kernels in kernels/<family>.cu; every
    .cu there belongs to a family, and every family registers its instantiations under its
    name (the package imported: its families registered)."""
    assert {"pool", "resize", "hardmax"} <= set(FAMILIES)   # the discovery finds families at all
    assert FAMILIES == tuple(HOLDERS), sorted(set(HOLDERS) - set(FAMILIES))
    sources = sorted(p.stem for p in (PACKAGE / "kernels").glob("*.cu"))
    assert sources == sorted(FAMILIES)
    assert loader.families() == sorted(FAMILIES)


def test_no_import_cycle():
    state: dict[str, int] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for dep in sorted(GRAPH.get(name, ())):
            if state.get(dep) == 1:
                pytest.fail("import cycle: " + " -> ".join([*path[path.index(dep):], dep]))
            if dep not in state:
                visit(dep, [*path, dep])
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("onnx_cupy.core")))
def test_core_imports_no_family(name):
    above = {f"onnx_cupy.{f}" for f in (*FAMILIES, "interop", "tools", "nn")}
    wrong = [m for m in GRAPH[name] if any(m == a or m.startswith(a + ".") for a in above)]
    assert wrong == [] and "onnx_cupy" not in GRAPH[name], (name, wrong)


def test_no_module_replaces_itself():
    for path in MODULES.values():
        assert not re.search(r"sys\.modules\s*\[[^\]]*\]\s*=", path.read_text()), path


# an expression string taken apart: split, searched, sliced by its text or matched by a pattern
PARSING = re.compile(r"expression\w*\)?\.(split|startswith|endswith|index|find|partition|"
                     r"removeprefix|removesuffix|replace)\(|re\.\w+\([^)]*expression|"
                     rf"\.(startswith|endswith)\(\"({'|'.join(FAMILIES)})|\.split\(\"<\"\)")


@pytest.mark.parametrize("root", [PACKAGE, TESTS], ids=["src", "tests"])
def test_no_expression_is_parsed_back(root):
    offenders = [f"{p}:{n}" for p in root.rglob("*.py") if p != Path(__file__)
                 for n, line in enumerate(p.read_text().splitlines(), 1) if PARSING.search(line)]
    assert offenders == []
