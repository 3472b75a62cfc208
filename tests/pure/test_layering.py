"""The layering of ARCHITECTURE.md, enforced by parsing imports; and a free ``import
fusedarrays``."""

import ast
import pathlib
import subprocess
import sys

PKG = pathlib.Path(__file__).resolve().parents[2] / "fusedarrays"
# Lower layers never import higher ones. Same-layer imports are allowed.
LAYERS = [
    {"errors", "config"},
    {"dtypes", "ops", "devicelib"},
    {"graph", "layout"},
    {"plan", "codegen", "keys"},
    {"diskcache", "records"},
    {"backend", "cuda", "cpu"},
    {"runtime", "precompile"},
    {"array", "elementwise", "npfunctions", "arguments", "fuse", "trace", "foreach", "recipe"},
    {"display", "__main__", "__init__"},
]
RANK = {name: k for k, layer in enumerate(LAYERS) for name in layer}


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0].removesuffix(".py")


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            parts = (node.module or "").split(".")
            if node.level == 1 and path.parent != PKG:
                yield _module_name(path)  # inside a subpackage: its own layer
                continue
            if parts[0]:
                yield parts[0]
            else:
                yield from (alias.name for alias in node.names)


def test_no_module_imports_a_higher_layer():
    bad = []
    for path in PKG.rglob("*.py"):
        own = RANK[_module_name(path)]
        for target in _imports(path):
            if target in RANK and RANK[target] > own and _module_name(path) != "__init__":
                bad.append(f"{path.relative_to(PKG)} imports {target}")
    assert not bad, bad


def test_every_module_is_placed_in_a_layer():
    names = {_module_name(p) for p in PKG.rglob("*.py")}
    assert names <= set(RANK), names - set(RANK)


def test_import_is_free_of_numba_and_drivers():
    code = ("import sys, fusedarrays; bad = [m for m in ('numba', 'cuda.core', 'cuda.bindings', "
            "'llvmlite') if m in sys.modules]; print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_modules_stay_small():
    big = {p.name: n for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500}
    assert not big, big
