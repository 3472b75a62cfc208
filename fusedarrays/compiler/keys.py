"""Cache keys as named lists of parts.

The structure key (from :mod:`plan`) names what the generated code depends on: graph, operand
dtypes and layouts, scalar dtypes, rank, vector and index width, codegen-affecting config, and
the code that turns a plan into a binary (:func:`code_version`, a hash of the files of
:data:`KERNEL_CODE`: an edit to any of them is a disk miss, with no version number to forget).
The disk key adds the GPU architecture and the toolchain versions, so an upgrade never loads a
stale kernel; the memory key adds the device. Every key is a sha256 of a canonical text, the
same in every process. :func:`explain_miss` says which parts differ.
"""

from __future__ import annotations

import hashlib
import os

from ..ir.dtypes import BY_CODE
from ..version import __version__ as _package_version

# The package's files (paths from the package folder) whose code decides a kernel's source text,
# the helpers compiled beside it, how it is compiled, or its parameter list. The rest enters the
# key by value: the plan's instructions, layouts and schedule (graph.py, layout.py's choices),
# the codegen settings (config.py), the toolchain versions (cuda/toolchain.py). The launcher's
# side of the calling convention (runtime/launch, fuse/packers, cuda/launch, operand_arg,
# foreach_args) follows plan.py's parameter list and intrinsics' parameter types, so changing
# the convention changes a file listed here. tests/pure/test_keys.py checks that every package
# module these import is listed or excused.
KERNEL_CODE = (
    "compiler/codegen.py",    # the elements' source text, every target's
    "compiler/foreach_codegen.py",  # the multi-tensor (foreach) kernels' source text
    "compiler/foreach_plan.py",  # the multi-tensor kernels' parameters, tables and key parts
    "ir/ops.py",              # each op's source template
    "ir/dtypes.py",           # compute dtypes (float16 computes in float32) and type names
    "compiler/plan.py",       # instructions; the kernel's parameters, order and types
    "compiler/reduction.py",  # a reduction kernel's parameters, order and schedule
    "compiler/planner.py",    # which kernels a cut graph takes: splits, row programs, copies
    "compiler/protocol.py",   # the parameters every plan kind adds (counters, error word)
    "compiler/targets/cuda/__init__.py",  # which renderer writes each plan kind's cuda source
    "compiler/targets/cuda/compact.py",  # the cuda schedules of each plan kind
    "compiler/targets/cuda/foreach.py",
    "compiler/targets/cuda/kernel.py",
    "compiler/targets/cuda/product.py",
    "compiler/targets/cuda/reduce.py",
    "compiler/targets/cuda/rows.py",
    "compiler/targets/cuda/scan.py",
    "compiler/targets/cpu.py",   # the cpu schedules of every plan kind
    "compiler/tensor_fold.py",   # the per-tensor fold's parameters and lines
    "compiler/reduction_codegen.py",  # the reduction kernel's source text
    "compiler/rowfusion.py",  # the one-kernel row program's parameters and source text
    "compiler/scan.py",       # a scan kernel's parameters, order and schedule
    "compiler/scan_codegen.py",  # the scan kernel's source text
    "compiler/compact.py",    # the mask compaction's kernels, parameters and source text
    "compiler/product.py",    # a product kernel's parameters, order and tiles
    "compiler/product_codegen.py",  # the product kernel's source text
    "ir/products.py",         # a product's accumulator types
    "ir/scans.py",            # each scan's combining expression and starting values
    "ir/reductions.py",       # each reduction's identity and folding statements
    "ir/layout.py",           # tile sizes the generated code hard-codes
    "compiler/devicelib.py",  # helper functions compiled into kernels
    "compiler/philox.py",     # fa.random's helpers, part of devicelib's source
    "compiler/complexlib.py",  # the complex helpers, part of devicelib's source
    "compiler/streams.py",    # fa.random draws in the kernel source
    "compiler/divisions.py",  # which divisions take their divisor's reciprocal
    "compiler/minifloat.py",  # bfloat16 and float8 loads, stores and roundings on every target
    "cuda/intrinsics.py",     # loads, stores, casts and parameter types of the cuda target
    "cuda/division.py",       # the cuda target's float division
    "cuda/bf16vectors.py",    # bfloat16's 16-byte vector accesses on the cuda target
    "cuda/randombits.py",     # fa.random's Philox rounds and floor(log2) on the cuda target
    "cuda/atomics.py",        # the split reductions' counter and the gathers' error word on cuda
    "cuda/irhelpers.py",      # element addresses the cuda intrinsics compute
    "cuda/compile.py",        # compile options, numba's pass pipeline as trimmed, typing memos
    "cpu/backend.py",         # the cpu target's casts and math, operands, compile options
    "cpu/intrinsics.py",      # the cpu target's loads, stores and compare-and-swap
    "cpu/half.py",            # float16 emulated on the cpu target
    "cpu/vecmath.py",         # the cpu target's vectorisable float32 exp, log, tanh, sin, cos
)

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # fusedarrays/
_code_version: str | None = None


def digest(parts: tuple[tuple[str, str], ...]) -> str:
    text = "\n".join(f"{name}={value}" for name, value in parts)
    return hashlib.sha256(text.encode()).hexdigest()


def structure_parts(parts: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``parts`` and what every key holds: the kernel code's hash and the package version."""
    return parts + (("code", code_version()), ("package", _package_version))


def code_version() -> str:
    """A hash of the files of :data:`KERNEL_CODE`, read once per process (~0.3 ms).

    Reads files only (a warm process imports no numba). A file that cannot be read (an install
    without sources) is named as such; the package version, another key part, still tells
    releases apart.
    """
    global _code_version
    if _code_version is None:
        _code_version = hash_files(_PACKAGE, KERNEL_CODE)
    return _code_version


def hash_files(folder: str, names) -> str:
    """32 hex digits of a sha256 over each named file's name, length and bytes."""
    h = hashlib.sha256()
    for name in names:
        try:
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read()
        except OSError as exc:
            data = f"unreadable: {type(exc).__name__}".encode()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:32]


def disk_parts(structure_key: str, arch: str, toolchain: dict[str, str]):
    return (("structure", structure_key), ("arch", arch)) + tuple(sorted(toolchain.items()))


def explain_miss(parts: tuple[tuple[str, str], ...], seen=()) -> str:
    """Why a kernel with key ``parts`` compiles: first of its graph, or how it differs from the
    nearest of ``seen`` (key parts of kernels of the same graph compiled or loaded before).

    >>> old = (("graph", "g"), ("operands", "in:f32:C in:f32:C out:f32:C"), ("scalars", "f32"))
    >>> new = (("graph", "g"), ("operands", "in:f32:C in:f64:S out:f64:C"), ("scalars", "f64"))
    >>> explain_miss(new, [old])
    'in1 dtype float32 → float64, layout contiguous → strided; out2 dtype float32 → float64; \
a0 dtype float32 → float64'
    """
    seen = [tuple(s) for s in seen]
    if not seen:
        return "first compile of this graph"
    new = dict(parts)

    def distance(old):
        old = dict(old)
        return sum(old.get(name) != value for name, value in new.items())

    nearest = dict(min(reversed(seen), key=distance))  # ties: the newest
    # The graph part last: its change (dtypes inside the expression) is the least readable.
    names = sorted(new, key=lambda name: name == "graph")
    changed = [describe_change(name, nearest.get(name), new[name]) for name in names
               if nearest.get(name) != new[name]]
    return "; ".join(changed) or "same key parts (the loaded kernel was dropped from memory)"


_LAYOUTS = {"C": "contiguous", "B": "broadcast", "S": "strided", "T": "transposed"}
_NAMES = {"vector_width": "vector width", "index_width": "index width",
          "config": "codegen settings", "code": "kernel code hash",
          "package": "fusedarrays version"}


def _dtype_name(code: str) -> str:
    dt = BY_CODE.get(code)
    return dt.name if dt is not None else code


def describe_change(name: str, old: str | None, new: str) -> str:
    """One key part's change in words: ``in1 dtype float32 → float64``."""
    if name == "operands" and old is not None:
        return _operand_changes(old.split(), new.split()) or f"operands {old} → {new}"
    if name == "scalars" and old is not None:
        before, after = old.split(), new.split()
        if len(before) == len(after) and "-" not in before:
            return ", ".join(f"a{k} dtype {_dtype_name(a)} → {_dtype_name(b)}"
                             for k, (a, b) in enumerate(zip(before, after)) if a != b)
        return f"scalar parameters {old} → {new}"
    if name == "graph":
        return f"dtypes inside the expression (graph {str(old)[:8]}… → {new[:8]}…)"
    return f"{_NAMES.get(name, name)} {old} → {new}"


def _operand_changes(before: list[str], after: list[str]) -> str:
    if len(before) != len(after):
        return ""
    said = []
    for k, (a, b) in enumerate(zip(before, after)):
        if a == b:
            continue
        a, b = a.split(":"), b.split(":")
        if len(a) != len(b) or len(a) < 2:
            return ""
        what = []
        if a[0] != b[0]:
            what.append(f"role {a[0]} → {b[0]}")
        if a[1] != b[1]:
            what.append(f"dtype {_dtype_name(a[1])} → {_dtype_name(b[1])}")
        if a[2:] != b[2:]:
            old = ":".join(_LAYOUTS.get(x, x) for x in a[2:])
            new = ":".join(_LAYOUTS.get(x, x) for x in b[2:])
            what.append(f"layout {old} → {new}")
        said.append(f"{b[0]}{k} " + ", ".join(what))
    return "; ".join(said)


def operands_part(operands) -> tuple[str, str]:
    """The ``operands`` key part: per operand its direction, access (:attr:`.plan.Operand.access`)
    and class, so an aligned and a misaligned complex operand never share a kernel."""
    return ("operands", " ".join(f"{'out' if o.output else 'in'}:{o.access}:{o.layout}"
                                 for o in operands))
