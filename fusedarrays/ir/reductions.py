"""The reductions' table: one row per reduction, beside the op table (:mod:`.ops`).

A row names the reduction, its NumPy reference, the identity its accumulator starts from, the
statements that combine one value into the accumulator (a template over ``{v}``, the value, and
``acc`` / ``idx`` / ``j``, the accumulator, the best index and the running flat index), what it
stores, and its result-dtype rule. The API (``api/reductions.py``), the code generator
(``compiler/reduction_codegen.py``) and the tests all iterate this table: adding a reduction is a
row. ``mean``, ``var``, ``std``, the norms and ``logsumexp`` are built in the API from these rows
and elementwise ops, so they fuse like any expression.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import graph
from .dtypes import ROUNDED, kind
from .sids import attrs_id


@dataclass(frozen=True)
class Reduction:
    name: str
    numpy: str          # the NumPy function it matches (np.<numpy>)
    ufunc: str | None   # the ufunc whose .reduce is this reduction (np.<ufunc>.reduce)
    rule: str           # result dtype: "sum" (small ints widen), "same", "bool", "index"
    combine: tuple[str, ...]  # statements folding the value {v} into acc
    merge: tuple[str, ...]    # statements folding another thread's acc {w} (and idx {iw})
    takes_dtype: bool   # NumPy's function takes dtype=
    empty_ok: bool      # an empty reduction gives the identity (else NumPy raises ValueError)
    doc: str

    @property
    def arg(self) -> bool:
        """Whether the reduction stores the best index (argmax, argmin) rather than acc."""
        return self.rule == "index"


# Another thread's best (w at iw) wins a tie when its index is lower: threads interleave indices.
_ARG_MERGE = ("if {w} > acc or ({w} == acc and {iw} < idx) or ({w} != {w} and (acc == acc or "
              "{iw} < idx)):", "    acc = {w}", "    idx = {iw}")
# Threads of a block reducing one output together (cuda "rows" schedule). A row kernel's softmax
# over 4096-float rows measured 0.61 and 0.71 of a copy on the H100 with 128 and 512, 0.88 with 256.
BLOCK_THREADS = 256


# The comparisons are written so NaN wins, as in NumPy: `not (acc >= v)` is true when v is
# larger or either is NaN, and `acc == acc` keeps a NaN once taken.
REDUCTIONS: dict[str, Reduction] = {r.name: r for r in (
    Reduction("sum", "sum", "add", "sum", ("acc = acc + {v}",), ("acc = acc + {w}",), True, True,
              "Sum of the elements over the given axes."),
    Reduction("prod", "prod", "multiply", "sum", ("acc = acc * {v}",), ("acc = acc * {w}",),
              True, True,
              "Product of the elements over the given axes."),
    Reduction("max", "max", "maximum", "same",
              ("if not (acc >= {v}) and acc == acc:", "    acc = {v}"),
              ("if not (acc >= {w}) and acc == acc:", "    acc = {w}"), False, False,
              "Largest element over the given axes (NaN propagates)."),
    Reduction("min", "min", "minimum", "same",
              ("if not (acc <= {v}) and acc == acc:", "    acc = {v}"),
              ("if not (acc <= {w}) and acc == acc:", "    acc = {w}"), False, False,
              "Smallest element over the given axes (NaN propagates)."),
    # NumPy's nanmax/nanmin are fmax/fmin.reduce: NaN is skipped (`{v} == {v}`) and the
    # accumulator starts from NaN (identity), so only an all-NaN slice gives NaN
    Reduction("nanmax", "nanmax", "fmax", "same",
              ("if not (acc >= {v}) and {v} == {v}:", "    acc = {v}"),
              ("if not (acc >= {w}) and {w} == {w}:", "    acc = {w}"), False, False,
              "Largest element over the given axes, NaN skipped (NaN where all are NaN)."),
    Reduction("nanmin", "nanmin", "fmin", "same",
              ("if not (acc <= {v}) and {v} == {v}:", "    acc = {v}"),
              ("if not (acc <= {w}) and {w} == {w}:", "    acc = {w}"), False, False,
              "Smallest element over the given axes, NaN skipped (NaN where all are NaN)."),
    Reduction("argmax", "argmax", None, "index",
              ("if {v} > acc or ({v} != {v} and acc == acc):", "    acc = {v}", "    idx = j"),
              _ARG_MERGE, False, False,
              "Index of the first largest element (the first NaN if any)."),
    Reduction("argmin", "argmin", None, "index",
              ("if {v} < acc or ({v} != {v} and acc == acc):", "    acc = {v}", "    idx = j"),
              tuple(s.replace(">", "<") for s in _ARG_MERGE), False, False,
              "Index of the first smallest element (the first NaN if any)."),
    Reduction("any", "any", "logical_or", "bool", ("acc = acc | {v}",), ("acc = acc | {w}",),
              False, True,
              "Whether any element is true (non-zero)."),
    Reduction("all", "all", "logical_and", "bool", ("acc = acc & {v}",), ("acc = acc & {w}",),
              False, True,
              "Whether every element is true (non-zero)."),
)}
BY_UFUNC = {r.ufunc: r for r in REDUCTIONS.values() if r.ufunc is not None}


def result_dtype(name: str, dtype: np.dtype) -> np.dtype:
    """NumPy's result dtype of reduction ``name`` over elements of ``dtype`` (no dtype= given):
    bool and integers narrower than the platform integer sum to it (``np.sum``'s rule)."""
    rule = REDUCTIONS[name].rule
    if rule == "sum":
        if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 8):
            return np.dtype(np.int_)
        if dtype.kind == "u" and dtype.itemsize < 8:
            return np.dtype(np.uint)
        return dtype
    if rule == "bool":
        return np.dtype(np.bool_)
    if rule == "index":
        return np.dtype(np.intp)
    return dtype


def identity(name: str, dtype: np.dtype):
    """The accumulator's starting value for ``name`` over values of ``dtype`` (a Python value):
    max and argmax start below every value, min and argmin above, nanmax and nanmin of floats
    from NaN (the code generators render it as ``inf - inf``)."""
    if name in ("sum",):
        return 0
    if name == "prod":
        return 1
    if name in ("any", "all"):
        return name == "all"
    low = name in ("max", "argmax", "nanmax")
    if kind(dtype) == "f" and name in ("nanmax", "nanmin"):
        return float("nan")
    if kind(dtype) == "f":
        return float("-inf") if low else float("inf")
    if dtype.kind == "b":
        return not low
    info = np.iinfo(dtype)
    return int(info.min) if low else int(info.max)


def accumulator_code(name: str, value_code: str, wide_sums: bool = False) -> str:
    """The accumulator's type code: float16 accumulates in float32 (as NumPy's pairwise sum
    does); with ``wide_sums`` (a target that sums in order, one thread an output: the cpu's)
    float32 (complex64) sums accumulate in float64 (complex128), as accurate as NumPy's
    pairwise sum without its blocking (the result is rounded once)."""
    if name in ("any", "all"):     # 0 or 1 in a byte: a shared-memory slot holds it as is
        return "u8"
    if value_code in ROUNDED:     # float16 and the training formats (ir/dtypes.py)
        value_code = "f32"
    if wide_sums and name == "sum" and value_code in ("f32", "c64"):
        return {"f32": "f64", "c64": "c128"}[value_code]
    return value_code


def reduction_node(name: str, node: graph.Node, axes: tuple[int, ...], keepdims: bool,
                   dtype: np.dtype, decided: tuple | None = None) -> graph.Node:
    """The graph node of reduction ``name`` (a row above) of ``node`` over ``axes`` (sorted,
    non-negative), giving ``dtype``. Its params are its input's (a leaf or scalar input: that
    one), so a graph over reductions binds every leaf and scalar under them; its sid adds the
    reduction's name, axes, keepdims and dtype (one interned number, :func:`reduction_id`) to
    its input's. ``decided``: ``(shape, id)`` as :func:`reduction_form` gives them for these
    arguments, which a caller that keeps them passes (hashing a dtype at every call costs more
    than the rest of the node)."""
    if decided is None:
        if type(dtype) not in graph._DTYPE_TYPES:
            dtype = np.dtype(dtype)
        axes, keepdims = tuple(sorted(axes)), bool(keepdims)
        decided = reduction_form(name, node.shape, axes, keepdims, dtype)
    shape, rid = decided
    red = graph._new("reduce", dtype, shape, (node,), (name, axes, bool(keepdims)))
    red.params = node.params if node.params is not None else {node: 0}
    red.sid = graph._sid((rid, node.sid))
    red.count = 1 + node.count
    red.buffers = node.buffers
    return red


def reduction_form(name: str, shape: tuple, axes: tuple[int, ...], keepdims: bool,
                   dtype: np.dtype) -> tuple[tuple, int]:
    """``(result shape, id)`` of reduction ``name`` over ``axes`` (sorted) of an input of
    ``shape``: the id is :func:`reduction_id`'s."""
    return (tuple(1 if k in axes else e for k, e in enumerate(shape) if keepdims or k not in axes),
            reduction_id(name, axes, keepdims, dtype))


def reduction_id(name: str, axes: tuple[int, ...], keepdims: bool, dtype: np.dtype) -> int:
    """A small number for a reduction's name, axes, keepdims and result dtype, drawn from the
    op attributes' numbers (``sids.attrs_id``: a tuple headed "reduce" is no op's), so a
    reduction's sid ``(id, input's sid)`` is no other node's."""
    return attrs_id(("reduce", name, axes, keepdims, dtype))
