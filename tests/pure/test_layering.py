"""The package's floors (ARCHITECTURE.md), enforced by parsing imports; no import circles; a free
``import fusedarrays``."""

import ast
import pathlib
import subprocess
import sys

PKG = pathlib.Path(__file__).resolve().parents[2] / "fusedarrays"
# Floors, lowest first: a module imports only from its own floor or lower ones.
FLOORS = [
    {"errors", "config", "version"},   # the ground
    {"ir"},                            # pure data: ops, dtypes, graph, layout
    {"compiler"},                      # pure: plan, codegen, devicelib, keys
    {"runtime"},                       # realize, launch records, backend seam, caches, precompile
    {"cuda", "cpu"},                   # the backends: the only places that import numba, drivers
    {"api"},                           # what users touch
    {"fuse"},                          # @fa.fuse: tracing, foreach, argument packers
    {"optim"},                         # optimizer steps over fuse (torch imported lazily)
    {"__init__", "__main__"},
]
FLOOR = {room: k for k, rooms in enumerate(FLOORS) for room in rooms}
# Only the backend seam names the backends' modules (by string, imported on first use).
BACKENDS = {"cuda", "cpu"}


def _module(path: pathlib.Path) -> str:
    """Dotted name under the package: ``ir.graph``, ``config``, ``cuda.backend``."""
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _room(module: str) -> str:
    return module.split(".")[0]


MODULES = {_module(p): p for p in PKG.rglob("*.py")}


def _imports(path: pathlib.Path):
    """Package modules that ``path`` imports, anywhere in the file (function bodies too)."""
    own = _module(path).split(".")
    package = own if path.name == "__init__.py" else own[:-1]
    if path.parent == PKG:
        package = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and path.name != "__main__.py":   # it runs fa as users do
            assert not any(a.name.split(".")[0] == "fusedarrays" for a in node.names), path
        if not isinstance(node, ast.ImportFrom):
            continue
        assert node.level > 0 or not (node.module or "").startswith("fusedarrays"), (
            f"{path}: import the package relatively")
        if node.level == 0:
            continue
        base = package[:len(package) - (node.level - 1)]
        if node.module:
            base = base + node.module.split(".")
        found_module = ".".join(base)
        for alias in node.names:
            sub = ".".join(base + [alias.name])
            if sub in MODULES:
                yield sub
            elif found_module in MODULES:
                yield found_module


def test_no_module_imports_a_higher_floor():
    bad = []
    for module, path in MODULES.items():
        own = FLOOR[_room(module)]
        for target in _imports(path):
            if FLOOR[_room(target)] > own:
                bad.append(f"{module} imports {target}")
    assert not bad, bad


def test_only_the_backend_seam_names_the_backends():
    bad = [f"{module} imports {target}" for module, path in MODULES.items()
           if _room(module) not in BACKENDS for target in _imports(path)
           if _room(target) in BACKENDS]
    assert not bad, bad
    seam = (PKG / "runtime" / "backend.py").read_text()
    assert "fusedarrays.cuda.backend" in seam and "fusedarrays.cpu.backend" in seam


# The compiler's front door (compiler/__init__.py) and its plan protocol: all that the rest of
# the package may import of compiler/.
DOOR = {"compiler", "compiler.protocol"}


def test_the_compiler_is_entered_by_its_front_door():
    bad = [f"{module} imports {target}" for module, path in MODULES.items()
           if _room(module) != "compiler" for target in _imports(path)
           if _room(target) == "compiler" and target not in DOOR]
    assert not bad, bad


def test_importing_the_front_door_imports_no_planner_or_code_generator():
    """``import fusedarrays`` pays for no planner and no code generator: the door imports them
    on first use."""
    code = ("import sys, fusedarrays; bad = sorted(m for m in sys.modules if m.startswith("
            "'fusedarrays.compiler.') and m != 'fusedarrays.compiler.protocol'); print(bad); "
            "assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_module_is_on_a_floor():
    rooms = {_room(m) for m in MODULES}
    assert rooms <= set(FLOOR), rooms - set(FLOOR)


def test_no_import_circles():
    graph = {m: set(_imports(p)) - {m} for m, p in MODULES.items()}
    done: set = set()

    def visit(module, path):
        if module in path:
            cycle = path[path.index(module):] + [module]
            raise AssertionError("import circle: " + " → ".join(cycle))
        if module in done:
            return
        for target in sorted(graph[module]):
            visit(target, path + [module])
        done.add(module)

    for module in sorted(graph):
        if module != "__init__":   # the namespace imports everything; nothing imports it
            visit(module, [])


def test_import_is_free_of_numba_and_drivers():
    code = ("import sys, fusedarrays; bad = [m for m in ('numba', 'cuda.core', 'cuda.bindings', "
            "'llvmlite') if m in sys.modules]; print(bad); assert not bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_modules_stay_small():
    big = {p.name: n for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > 500}
    assert not big, big
