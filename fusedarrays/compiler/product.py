"""A ``matmul`` node (``ir/products.py``) → a :class:`ProductPlan`: one tiled kernel computing a
batched matrix product. Not fused: its operands are leaves (computed before), its result goes
to a buffer (a temporary later kernels read, or the evaluation's result).

Pure. The plan walks ``batch × M × N`` outputs, each the sum over ``K`` of products; the batch
axes (broadcast already: an operand repeated along one has stride 0 there) are collapsed as
:func:`layout.collapse` collapses a walk, the three matrix axes are never collapsed: every
operand is read through its own two matrix strides and its offset, so transposed and
negative-step views are read in place (no copy). The structure key holds the dtypes, the
collapsed batch rank and, per operand, which matrix axis its threads walk together (its
unit-stride axis, so that a tile's loads coalesce for either layout); sizes and strides are
parameters.

Routes: on a backend that offers a BLAS (:class:`Blas`; the cuda backend's is cuBLAS through
nvmath-python, where installed) a product of a dtype it multiplies as NumPy does (float16,
float32, float64, complex64, complex128, both operands of the result's dtype) is planned for
it (``ProductPlan.library``, its layouts in ``ProductPlan.blas``: :func:`blas_refusal` says
why a product is not); the launch record then calls the library instead of a kernel. It reads
each matrix in place where one of its axes has unit stride and the other a positive stride
(:func:`blas_matrix`), else the planner copies it first (``compiler/planner.py``). Integers
and bools stay on the tiled kernel: NumPy's integer products wrap in the integer type, which no
cuBLAS GEMM does.

Schedules (the code is ``compiler/product_codegen.py``): cuda — a block of
``PRODUCT_THREADS`` threads per ``TILE_M × TILE_N`` output tile (grid-stride over the batch's
tiles), stepping through ``K`` in slabs of ``TILE_K``: the block stages the slab of each operand
in shared memory (zero past the edges), each thread accumulates a ``4 × 4`` block of outputs from
it, in registers. cpu — chunks of output rows on threads, each row's outputs accumulated over
``K`` in order. Every output's sum runs in ``K`` order on every backend: the same bits every run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import config
from ..ir import graph, layout
from ..ir.dtypes import CODES
from ..ir.products import accumulator_code
from . import keys
from .plan import Operand, operand_param_types
from .protocol import Blas, Plan

# What a BLAS multiplies as NumPy does: float16 summed in float32 and rounded once (NumPy's own
# float16 loop), the others in their own precision.
BLAS_DTYPES = frozenset(np.dtype(t) for t in
                        ("float16", "float32", "float64", "complex64", "complex128"))

TILE_M = TILE_N = 64    # an output tile: 4 x 4 outputs per thread of a 16 x 16 block
TILE_K = 16             # K per shared-memory slab: 2 x 64 x 17 accumulator values
PRODUCT_THREADS = 256


@dataclass(frozen=True)
class ProductPlan(Plan):
    kind = "product"
    batch: tuple            # collapsed batch extents (() where there is one matrix)
    m: int
    n: int
    k: int
    operands: tuple[Operand, ...]   # a, b, then the output; strides: batch, then 2 matrix axes
    along: tuple[str, str]  # per input, the matrix axis a tile's threads load together
    key_parts: tuple[tuple[str, str], ...]
    key: str
    sources: tuple[int, ...] = ()   # per input: its param's position
    scalars: tuple = ()
    scalar_sources: tuple = ()
    schedule: str = "tiled"
    body: tuple = ()        # no expression: the products' kernels are one family (records)
    library: str = ""       # the BLAS computing it ("" the tiled kernel) ...
    route: str = ""         # ... or why it takes the tiled kernel (fa.explain)
    # per operand (a, b, out) as the BLAS reads it: (batch stride, row stride, column stride,
    # the alignment in bytes every evaluation of this plan's signature guarantees)
    blas: tuple = ()

    @property
    def size(self) -> int:
        """Outputs (the kernel's ``n``); 0 where the result is empty."""
        return layout.size_of(self.batch) * self.m * self.n

    @property
    def tiles(self) -> int:
        """Output tiles of the cuda schedule, over the whole batch."""
        return (layout.size_of(self.batch) * -(-self.m // TILE_M) * -(-self.n // TILE_N))

    @property
    def dims(self) -> tuple:
        """The walk ``batch + (M, N, K)``; :meth:`walk_strides` maps each operand onto it (what
        ``fa.profile()`` counts as bytes moved: each operand's distinct elements)."""
        return self.batch + (self.m, self.n, self.k)

    def walk_strides(self, k: int) -> tuple:
        """Operand ``k``'s strides over :attr:`dims`: each walks 2 of the 3 matrix axes."""
        o = self.operands[k]
        nb = len(self.batch)
        bstrides, (s, t) = o.strides[:nb], o.strides[nb:]
        return bstrides + ((s, 0, t), (0, t, s), (s, t, 0))[k]

    @property
    def name(self) -> str:
        return "fm_" + self.key[:16]

    @property
    def acc(self) -> str:
        return accumulator_code(self.operands[-1].dtype)

    def int_params(self) -> list[str]:
        """``dm dn dk``, the batch extents ``d_j``, then per operand its offset ``b_k``, batch
        strides ``s_k_j`` and its two matrix strides ``u_k`` (rows) and ``v_k`` (columns)."""
        names = ["dm", "dn", "dk"] + [f"d{j}" for j in range(len(self.batch))]
        for k in range(len(self.operands)):
            names += [f"b{k}"] + [f"s{k}_{j}" for j in range(len(self.batch))] + [f"u{k}", f"v{k}"]
        return names

    def int_args(self) -> list[int]:
        ints = [self.m, self.n, self.k, *self.batch]
        for o in self.operands:
            ints += [o.offset, *o.strides]
        return ints

    param_types = operand_param_types

    def geometry(self) -> tuple:
        return ("product", self.tiles)

    def elements_walked(self) -> int:
        return self.size * self.k   # K per output


def plan_product(node: graph.Node, target: tuple, positions: dict) -> ProductPlan:
    """Plan product ``node`` (its inputs leaves) into ``target`` = ``(buffer, dtype, shape,
    strides, offset)`` of the node's shape; ``positions`` gives each leaf its place in the
    evaluation's params."""
    _, drop_rows, drop_cols = node.attrs
    a, b = node.inputs
    buffer, dtype, _, ostrides, ooffset = target
    *batch_shape, m, k = a.shape
    n = b.shape[-1]
    nb = len(batch_shape)
    ostrides = tuple(ostrides)
    # the output's strides over batch + (M, N): a dropped axis has extent 1, any stride
    out_batch = ostrides[:nb]
    rest = list(ostrides[nb:])
    out_u = 0 if drop_rows else rest.pop(0)
    out_v = 0 if drop_cols else rest.pop(0)
    views = [graph.leaf_view(leaf) for leaf in (a, b)]
    batch_sets = [layout.broadcast_strides(shape, strides, shape)[:nb]
                  for _, shape, strides, _ in views] + [out_batch]
    if layout.size_of(tuple(batch_shape)) == 1:
        batch, batch_sets = (), [(), (), ()]
    else:
        batch, batch_sets = layout.collapse(tuple(batch_shape), batch_sets)
    operands, along = [], []
    for j, (buf, shape, strides, offset) in enumerate(views):
        full = layout.broadcast_strides(shape, strides, shape)
        s, t = full[-2], full[-1]
        operands.append(Operand(buf, np.dtype(node.inputs[j].dtype), batch_sets[j] + (s, t),
                                offset, "S", False))
        # a: (M, K), b: (K, N); threads load along the unit-stride axis, else the inner one
        inner = "row" if abs(s) == 1 and abs(t) != 1 else "col"
        along.append(inner)
    operands.append(Operand(buffer, np.dtype(dtype), batch_sets[2] + (out_u, out_v), ooffset,
                            "S", True))
    acc = accumulator_code(dtype)
    parts = keys.structure_parts((
        ("product", f"matmul {' '.join(o.code for o in operands[:2])} into "
                    f"{CODES[np.dtype(dtype)]}, summed in {acc}"),
        ("loads", f"a along {along[0]}s, b along {along[1]}s"),
        ("rank", f"{len(batch)} batch"),
        keys.operands_part(operands),
        ("schedule", f"tiled {TILE_M}x{TILE_N}x{TILE_K}"),
        ("config", repr(config.codegen_settings())),
    ))
    return ProductPlan(tuple(batch), m, n, k, tuple(operands), (along[0], along[1]), parts,
                       keys.digest(parts), (positions[a], positions[b]))


def blas_matrix(rows: int, cols: int, s: int, t: int) -> tuple[int, int] | None:
    """The strides ``(s, t)`` of a ``rows x cols`` matrix as a BLAS reads them: one axis of
    unit stride and the other's stride at least the unit axis's extent (the leading dimension);
    an axis of extent one gets the stride that makes it so (it is never stepped). None where no
    such layout reads the view: both strides other than one, or a negative or zero stride."""
    if rows == 1 and cols == 1:
        return 1, 1
    if rows == 1:
        return (cols, 1) if t == 1 else (1, t) if t > 0 else None
    if cols == 1:
        return (1, rows) if s == 1 else (s, 1) if s > 0 else None
    if t == 1 and s >= cols:
        return s, t
    if s == 1 and t >= rows:
        return s, t
    return None


def matrix_shape(plan: ProductPlan, k: int) -> tuple[int, int]:
    """Operand ``k``'s matrix extents: a ``(M, K)``, b ``(K, N)``, the result ``(M, N)``."""
    return ((plan.m, plan.k), (plan.k, plan.n), (plan.m, plan.n))[k]


def blas_operand(plan: ProductPlan, k: int) -> tuple[int, int, int] | None:
    """Operand ``k``'s ``(batch stride, row stride, column stride)`` as the BLAS reads it in
    place (batch stride 0 where there is no batch or it repeats), or None where it can't."""
    o = plan.operands[k]
    nb = len(plan.batch)
    batch = o.strides[0] if nb else 0
    matrix = blas_matrix(*matrix_shape(plan, k), *o.strides[nb:])
    if matrix is None or batch < 0:
        return None
    return (batch, *matrix)


def blas_refusal(plan: ProductPlan, blas: Blas | None) -> str:
    """Why ``plan`` takes the tiled kernel rather than ``blas`` (a BLAS reads any operand,
    copied first where needed), in words; "" where the BLAS computes it."""
    if blas is None or not blas.name:
        return blas.why_not if blas is not None else "no BLAS on this backend"
    a, b, out = (o.dtype for o in plan.operands)
    if out not in BLAS_DTYPES:
        return (f"the result's dtype is {out} ("
                + ("NumPy's integer products wrap in the integer type, which no cuBLAS GEMM "
                   "does)" if out.kind in "iu" else "NumPy's bool product is the or of the ands)"
                   if out.kind == "b" else "CuPy's arrays have no such dtype: the tiled kernel "
                   "sums in float32 and rounds once)"))
    if a != out or b != out:
        return (f"operands of dtypes {a} and {b} (cuBLAS multiplies operands "
                f"of the result's dtype, {out}; the tiled kernel converts them as it loads)")
    if not plan.size or not plan.k:
        return "an empty product (K = 0: the result is zeros)"
    if len(plan.batch) > 1:
        return (f"the batch {plan.batch} broadcasts over {len(plan.batch)} "
                "axes that don't merge into one (cuBLAS takes one batch stride per operand)")
    written = blas_operand(plan, 2)
    if written is None or (plan.batch and plan.batch[0] > 1 and written[0] <= 0):
        return ("the result is written into a view cuBLAS can't write "
                f"(strides {plan.operands[2].strides})")
    return ""


def blas_alignment(buffer_align: int, offset: int, itemsize: int) -> int:
    """The alignment in bytes of an operand's first element that every evaluation of a
    signature guarantees: its buffer's alignment class (what the key holds of it) and its
    offset's."""
    align = graph.align_class(buffer_align) if buffer_align else 1
    step = offset * itemsize
    return min(align, step & -step) if step else align


def blas_plan(plan: ProductPlan, blas: Blas) -> ProductPlan:
    """``plan`` for ``blas`` (every operand readable in place: :func:`blas_operand`)."""
    layouts = []
    for k, o in enumerate(plan.operands):
        align = blas_alignment(getattr(o.buffer, "align", 256), o.offset, o.dtype.itemsize)
        layouts.append((*blas_operand(plan, k), align))
    parts = keys.structure_parts((
        ("product", f"matmul {' '.join(o.code for o in plan.operands[:2])} into "
                    f"{plan.operands[2].code}"),
        ("library", blas.name),
        ("rank", f"{len(plan.batch)} batch"),
        ("config", repr(config.codegen_settings())),
    ))
    return replace(plan, library=blas.name, blas=tuple(layouts), key_parts=parts,
                   key=keys.digest(parts))
