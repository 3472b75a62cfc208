"""Cache keys: the same in every process, different wherever the generated code could differ;
misses explained part by part; the timings table. No numba here."""

from __future__ import annotations

import ast
import doctest
import json
import os
import shutil
import subprocess
import sys
import textwrap
import weakref
from pathlib import Path

import numpy as np
from childenv import pythonpath

from fusedarrays import config
from fusedarrays.compiler import keys
from fusedarrays.compiler.plan import plan_kernel
from fusedarrays.cuda import toolchain as cuda_toolchain
from fusedarrays.ir import graph, layout
from fusedarrays.runtime import realize as runtime
from fusedarrays.runtime import records

REPO = Path(__file__).resolve().parents[2]

# Builds a few kernels' plans over stand-in buffers and prints their keys: run in two processes.
KEYS_SCRIPT = """
import json, sys
import numpy as np
from fusedarrays.ir import graph, layout
from fusedarrays.runtime import realize as runtime
from fusedarrays.cuda.toolchain import toolchain_versions
from fusedarrays.compiler.plan import plan_kernel

class Buf:
    def __init__(self):
        self.uid, self.align = graph.new_uid(), 256

def leaf(shape, dtype="float32", strides=None, offset=0):
    strides = strides or layout.contiguous_strides(shape)
    return graph.leaf(Buf(), np.dtype(dtype), shape, strides, offset)

def out(node):
    return (Buf(), node.dtype, node.shape, layout.contiguous_strides(node.shape), 0)

f32, f16 = np.dtype("float32"), np.dtype("float16")
a, b = leaf((64, 256)), leaf((256,))
h = leaf((1000,), "float16")
nodes = [
    graph.op("add", (graph.op("multiply", (a, graph.scalar(1.5, f32)), (f32,) * 3), b), (f32,) * 3),
    graph.op("sqrt", (graph.transform(a, lambda v: layout.transpose(v)),), (f32,) * 2),
    graph.op("multiply", (h, graph.cast(h, f32)), (f32,) * 3),
    graph.op("exp", (leaf((7, 9, 11), strides=(200, 20, 2), offset=3),), (f32,) * 2),
]
toolchain = toolchain_versions()
print(json.dumps([(n.key, p.key, runtime.disk_key(p, "sm_90", toolchain))
                  for n in nodes for p in [plan_kernel([(n, out(n))])]]))
print("numba" in sys.modules)
"""


def run_child(script: str, **env) -> str:
    full = {**os.environ, "PYTHONPATH": pythonpath(REPO), **env}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=full,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_keys_are_the_same_in_every_process():
    first = run_child(KEYS_SCRIPT, PYTHONHASHSEED="1").splitlines()
    second = run_child(KEYS_SCRIPT, PYTHONHASHSEED="2").splitlines()
    assert first == second
    assert first[1] == "False", "keys, plans and toolchain versions must not import numba"
    triples = json.loads(first[0])
    assert len({t[1] for t in triples}) == len(triples)  # four different kernels
    for node_key, structure_key, disk_key in triples:
        assert all(len(k) == 64 and int(k, 16) >= 0 for k in (node_key, structure_key, disk_key))


def _plan(dtype="float32"):
    class Buf:
        uid, align = graph.new_uid(), 256

    dt = np.dtype(dtype)
    x = graph.leaf(Buf(), dt, (100,), (1,), 0)
    node = graph.op("add", (x, graph.scalar(2.0, dt)), (dt,) * 3)
    return plan_kernel([(node, (Buf(), dt, (100,), layout.contiguous_strides((100,)), 0))])


def test_disk_key_holds_arch_and_every_toolchain_part():
    p = _plan()
    tools = cuda_toolchain.toolchain_versions()
    base = runtime.disk_key(p, "sm_90", tools)
    assert runtime.disk_key(p, "sm_90", dict(tools)) == base
    assert runtime.disk_key(p, "sm_80", tools) != base
    for part in tools:
        changed = {**tools, part: tools[part] + ".post1"}
        assert runtime.disk_key(p, "sm_90", changed) != base, part


def test_package_version_and_kernel_code_are_structure_key_parts(monkeypatch):
    before = _plan()
    parts = dict(before.key_parts)
    assert parts["package"] == keys._package_version
    assert parts["code"] == keys.hash_files(keys._PACKAGE, keys.KERNEL_CODE)
    monkeypatch.setattr(keys, "_package_version", "999.0")
    assert _plan().key != before.key
    monkeypatch.undo()
    assert _plan().key == before.key


def _copy_kernel_code(folder: Path) -> None:
    for name in keys.KERNEL_CODE:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes((Path(keys._PACKAGE) / name).read_bytes())


def test_an_edit_to_any_kernel_code_file_changes_the_key(tmp_path, monkeypatch):
    _copy_kernel_code(tmp_path)
    before = _plan().key_parts
    base = keys.digest(before)
    monkeypatch.setattr(keys, "_PACKAGE", str(tmp_path))
    monkeypatch.setattr(keys, "_code_version", None)
    assert _plan().key == base  # the same bytes elsewhere: the same key
    seen = {base}
    for name in keys.KERNEL_CODE:
        original = (tmp_path / name).read_bytes()
        (tmp_path / name).write_bytes(original + b"\n# an edit\n")
        monkeypatch.setattr(keys, "_code_version", None)
        edited = _plan()
        assert edited.key not in seen, name
        seen.add(edited.key)
        assert keys.explain_miss(edited.key_parts, [before]).startswith("kernel code hash ")
        (tmp_path / name).write_bytes(original)


def test_the_kernel_code_is_hashed_once_per_process(monkeypatch):
    calls = []
    real = keys.hash_files
    monkeypatch.setattr(keys, "hash_files", lambda *a: calls.append(a) or real(*a))
    monkeypatch.setattr(keys, "_code_version", None)
    for dtype in ("float32", "float64", "int32"):
        _plan(dtype)
    assert len(calls) == 1


# Modules the kernel code imports that are not hashed, and why (keys.KERNEL_CODE's comment).
NOT_KERNEL_CODE = {
    "config.py": "the codegen settings are a key part by value",
    "ir/params.py": "orders the operands and scalars: the plan's key parts, by value",
    "ir/graph.py": "reaches a kernel only through the plan's instructions, a key part by value",
    "ir/sids.py": "interned numbers naming structures in memory; no kernel sees them",
    "compiler/cuts.py": ("rebuilds the graph over the cuts' temporaries: it reaches a kernel "
                         "only through the plan's instructions, a key part by value"),
    "compiler/keys.py": "builds the key; shapes no code",
    "errors.py": "error messages",
    "ir/__init__.py": "the folder's description, no code",
    "compiler/__init__.py": ("the front door: hands plans to the planners and each target's "
                             "table (hashed), writes no code itself"),
    "version.py": "the package version is a key part by value",
    "cuda/toolchain.py": "the versions it reads are key parts",
    "runtime/devices.py": "device values (which backend object); no kernel code",
    "cpu/threads.py": "runs a compiled kernel's chunks on threads; no kernel code",
    "cpu/memory.py": "allocates the buffers kernels read; no kernel code",
    "cuda/lowering.py": ("makes a numba-cuda pass linear in time; the same PTX "
                         "(tests/ptx/test_linear_lowering.py)"),
    "cuda/nvvmcall.py": ("NVVM without libdevice where the IR calls none of it; the same PTX "
                         "(tests/ptx/test_linear_lowering.py)"),
    "runtime/backend.py": ("buffers and the seam; the cpu backend takes HostMemory from it, "
                           "no kernel code"),
}


def _package_imports(name: str) -> set[str]:
    """The package files (paths from the package folder) that file ``name`` imports."""
    package = Path(keys._PACKAGE)
    path = package / name
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            stems = [node.module] if node.module else []
            stems += [f"{node.module}.{alias.name}" if node.module else alias.name
                      for alias in node.names]
            for stem in stems:
                target = base.joinpath(*stem.split("."))
                for candidate in (target.with_suffix(".py"), target / "__init__.py"):
                    if candidate.is_file():
                        found.add(candidate.relative_to(package).as_posix())
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [alias.name for alias in node.names])
            assert not any(n.split(".")[0] == "fusedarrays" for n in names), (name, names)
    return found


def test_every_module_the_kernel_code_imports_is_hashed_or_excused():
    imported = set().union(*(_package_imports(name) for name in keys.KERNEL_CODE))
    # the walk works
    assert "compiler/codegen.py" in imported and "cuda/intrinsics.py" in imported
    unexplained = imported - set(keys.KERNEL_CODE) - set(NOT_KERNEL_CODE)
    assert not unexplained, f"hash them (keys.KERNEL_CODE) or say why not: {unexplained}"
    assert not set(NOT_KERNEL_CODE) & set(keys.KERNEL_CODE)


# Plans one kernel with the fusedarrays found first on sys.path, looks its disk key up in the
# cache folder argv[1] and writes it there: prints where fusedarrays came from, the keys, and
# whether the look-up hit.
EDITED_SCRIPT = """
import json, sys
import numpy as np
import fusedarrays
from fusedarrays.ir import graph, layout
from fusedarrays.runtime import realize as runtime
from fusedarrays.runtime.diskcache import DiskCache
from fusedarrays.compiler.plan import plan_kernel

class Buf:
    def __init__(self):
        self.uid, self.align = graph.new_uid(), 256

f32 = np.dtype("float32")
x = graph.leaf(Buf(), f32, (100,), (1,), 0)
node = graph.op("floor_divide", (x, graph.scalar(2.0, f32)), (f32,) * 3)
p = plan_kernel([(node, (Buf(), f32, (100,), (1,), 0))])
dkey = runtime.disk_key(p, "sm_90", {"numba": "1", "numba-cuda": "2", "nvvm": "3"})
cache = DiskCache(sys.argv[1])
hit = cache.get("sm_90", dkey, "cubin") is not None
cache.put("sm_90", dkey, "cubin", b"a kernel", {"parts": dict(p.key_parts)})
print(json.dumps([fusedarrays.__file__, p.key, dkey, hit]))
"""


def test_a_helper_edited_in_a_copy_of_the_package_is_a_disk_miss(tmp_path):
    ignore = shutil.ignore_patterns("__pycache__")
    for copy in ("original", "edited"):
        shutil.copytree(REPO / "fusedarrays", tmp_path / copy / "fusedarrays", ignore=ignore)
    helpers = tmp_path / "edited" / "fusedarrays" / "compiler" / "devicelib.py"
    text = helpers.read_text()
    assert "        return cv_i64(0)\n" in text
    helpers.write_text(text.replace("        return cv_i64(0)\n",
                                    "        return cv_i64(0 * a)\n", 1))
    cache = tmp_path / "cache"

    def keys_from(copy: str):
        env = {**os.environ, "PYTHONPATH": pythonpath(tmp_path / copy)}
        # cwd: not the repository, whose fusedarrays "-c" would put first on sys.path
        done = subprocess.run([sys.executable, "-c", EDITED_SCRIPT, str(cache)], env=env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        where, structure, disk, hit = json.loads(done.stdout)
        assert where.startswith(str(tmp_path / copy))
        return structure, disk, hit

    first = keys_from("original")
    again = keys_from("original")
    edited = keys_from("edited")
    assert first[2] is False and again == (first[0], first[1], True)
    assert edited[0] != first[0] and edited[1] != first[1] and edited[2] is False
    assert keys_from("edited")[2] is True


def test_toolchain_versions_are_computed_once_and_match_the_metadata():
    import importlib.metadata

    tools = cuda_toolchain.toolchain_versions()
    assert cuda_toolchain.toolchain_versions() is tools  # cached for the process
    for name in ("numba", "numba-cuda", "llvmlite", "cuda-core"):
        assert tools[name] == importlib.metadata.version(name), name
    for name, wheels in (("nvvm", cuda_toolchain._WHEELS["nvvm"]),
                         ("nvjitlink", cuda_toolchain._WHEELS["nvJitLink"])):
        wheel, _, version = tools[name].partition(" ")
        if wheel in wheels:
            assert importlib.metadata.version(wheel) == version


def test_a_miss_names_the_parts_that_differ():
    first = _plan("float32")
    assert keys.explain_miss(first.key_parts, []) == "first compile of this graph"
    second = _plan("float64")
    why = keys.explain_miss(second.key_parts, [first.key_parts])
    said = why.split("; ")
    assert said[:3] == ["in0 dtype float32 → float64", "out1 dtype float32 → float64",
                        "a0 dtype float32 → float64"]
    assert said[-1].startswith("dtypes inside the expression (graph ")
    # the nearest of several earlier kernels is the one compared with (ties: the newest)
    far = tuple((name, value + "?") for name, value in first.key_parts)
    assert keys.explain_miss(second.key_parts, [first.key_parts, far]) == why
    half = _plan("float16")
    assert "float16 → float64" in keys.explain_miss(second.key_parts,
                                                    [first.key_parts, half.key_parts])
    assert "same key parts" in keys.explain_miss(first.key_parts, [first.key_parts])


def test_the_runtime_explains_against_kernels_of_the_same_expression(monkeypatch):
    # Only this test's kernels: ``x + scalar`` kernels that earlier tests of the same process
    # compiled (another dtype, other settings) may be nearer to ``second`` than ``first`` is.
    monkeypatch.setattr(records, "_by_family", {})
    first, second = _plan("float32"), _plan("float64")
    assert records.family(first) == records.family(second)
    records.note_kernel(first, "first compile of this graph")
    assert records.why_compile(second).startswith("in0 dtype float32 → float64; ")


def test_part_changes_read_as_words():
    assert keys.describe_change("operands", "in:f32:C out:f32:C", "in:f32:S out:f32:C") == \
        "in0 layout contiguous → strided"
    assert keys.describe_change("operands", "in:f32:C", "in:f32:C in:f32:B") == \
        "operands in:f32:C → in:f32:C in:f32:B"
    assert keys.describe_change("vector_width", "4", "1") == "vector width 4 → 1"
    assert keys.describe_change("scalars", "-", "f32") == "scalar parameters - → f32"


def test_timings_is_a_mapping_that_prints_as_a_table():
    t = records.Timings({"codegen": (1, 0.002), "nvvm": (2, 0.25), "launch": (4000, 0.02)})
    assert t["nvvm"] == (2, 0.25) and dict(t)["launch"] == (4000, 0.02)
    assert json.loads(json.dumps(t)) == {"codegen": [1, 0.002], "nvvm": [2, 0.25],
                                         "launch": [4000, 0.02]}
    lines = str(t).splitlines()
    assert lines[0].split() == ["stage", "count", "total", "mean"]
    assert lines[2].split() == ["nvvm", "2", "250.0", "ms", "125.0", "ms"]
    assert lines[3].split() == ["launch", "4000", "20.0", "ms", "5.0", "µs"]


def test_generation_changes_with_every_override():
    g = config.generation()
    with config.override(MAX_NODES=3):   # any setting: the subject is the override itself
        assert config.generation() != g
        inner = config.generation()
    assert config.generation() not in (g, inner)


def test_docstring_examples():
    for module in (keys, records, runtime):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_a_fresh_leaf_is_what_leaf_returns_for_its_view_and_never_shared():
    class Buf:
        def __init__(self):
            self.uid, self.align, self.fresh = graph.new_uid(), 256, None

    f32 = np.dtype("float32")
    view = ((4, 8), (8, 1), 0)
    first, second = Buf(), Buf()
    made = graph.fresh_leaf(first, f32, view)
    other = graph.fresh_leaf(second, f32, view)
    assert made is not other and made.serial != other.serial and made.key != other.key
    assert graph.leaf(first, f32, (4, 8), (8, 1), 0) is made        # found through the buffer
    assert graph.leaf(first, f32, (4, 8), (8, 1), 0) is made        # then by look-up
    assert graph.leaf(first, np.dtype("int32"), (4, 8), (8, 1), 0) is not made
    row = graph.leaf(first, f32, (8,), (1,), 8)
    assert row is not made and graph.leaf(first, f32, (8,), (1,), 8) is row
    key, ref = made.key, weakref.ref(made)
    del made                                                        # dead: a new node,
    assert ref() is None
    again = graph.leaf(first, f32, (4, 8), (8, 1), 0)               # with the same key
    assert again.key == key


def test_count_nodes_counts_each_node_once_and_stops_past_a_limit():
    class Buf:
        def __init__(self):
            self.uid, self.align = graph.new_uid(), 256

    f32 = np.dtype(np.float32)
    loop = (f32,) * 2

    def op(name, *inputs):
        return graph.op(name, inputs, (f32,) * (len(inputs) + 1))

    x = graph.leaf(Buf(), f32, (4,), (1,), 0)
    assert op("multiply", x, x).count == 2 and op("add", x, op("multiply", x, x)).count == 3
    node = x
    for _ in range(40):                       # 121 distinct nodes; counted per use, ~2**41
        node = op("add", graph.op("sin", (node,), loop), graph.op("cos", (node,), loop))
    assert node.count > 2**40
    assert 10 < graph.count_nodes(node, limit=10) < 121 and node.count > 2**40  # stopped: kept
    assert graph.count_nodes(node) == 121 and node.count == 121                # exact: stored
    # Built on it, the kept bound starts from the exact count.
    doubled = op("add", graph.op("sin", (node,), loop), graph.op("cos", (node,), loop))
    assert doubled.count == 245 and graph.count_nodes(doubled) == 124
    # A remembered result is not followed: a write can drop it (runtime.forget_results_reading).
    node.inputs[0].realized = graph.leaf(Buf(), f32, (4,), (1,), 0)
    assert graph.count_nodes(doubled) == 124
