"""The cuda product kernel (``compiler/product.py``): output tiles of a block, K in slabs staged
in shared memory.

Pure text over :class:`~...product_codegen.ProductRenderer`'s pieces. A block of
``PRODUCT_THREADS`` = 16 × 16 threads per ``TILE_M × TILE_N`` output tile, grid-stride over every
tile of the batch. Per slab of ``TILE_K``: the block loads the slab of ``a`` (``TILE_M ×
TILE_K``) and of ``b`` (``TILE_K × TILE_N``) into shared memory, K-major, each row padded by one
slot so that loads along either axis hit distinct banks; neighbouring threads load neighbouring
elements along the operand's unit-stride axis (``plan.along``); elements past the matrix edges
are zero. Thread ``(tx, ty)`` then adds, for each ``kk`` of the slab, ``a[ty + 16 i, kk] * b[kk,
tx + 16 j]`` to its 16 accumulators (registers: the source is unrolled), and after the last slab
stores them (neighbouring threads, neighbouring columns).
"""

from __future__ import annotations

from ...codegen import _function, _indent
from ...plan import kernel_param_names
from ...product import PRODUCT_THREADS, TILE_K, TILE_M, TILE_N, ProductPlan
from ...product_codegen import ProductRenderer

_SIDE = 16                      # threads along each side of the block
_PER = TILE_M // _SIDE          # outputs per thread along each side
_PAD = TILE_M + 1               # shared slots per kk of a slab (one padding slot)


def render_product(plan: ProductPlan) -> str:
    return _function(plan.name, kernel_param_names(plan), _tiled(ProductRenderer(plan)))


def _slab_loads(r: ProductRenderer) -> list[str]:
    """The block's loads of one slab of ``a`` and ``b`` into ``sa`` and ``sb``."""
    lines = []
    loads = TILE_M * TILE_K // PRODUCT_THREADS
    kbits = TILE_K.bit_length() - 1
    mbits = TILE_M.bit_length() - 1
    for k, (shared, edge) in enumerate((("sa", "dm"), ("sb", "dn"))):
        row_first = r.plan.along[k] == "row"
        if k == 0:      # a: (M, K); "row": threads along M
            split = ([f"r = e & {TILE_M - 1}", f"kk = e >> {mbits}"] if row_first else
                     [f"r = e >> {kbits}", f"kk = e & {TILE_K - 1}"])
            index = "o0 + (i0 + r) * u0 + (k0 + kk) * v0"
            inside = "i0 + r < dm and k0 + kk < dk"
        else:           # b: (K, N); "row": threads along K
            split = ([f"r = e >> {kbits}", f"kk = e & {TILE_K - 1}"] if row_first else
                     [f"r = e & {TILE_N - 1}", f"kk = e >> {mbits}"])
            index = "o1 + (k0 + kk) * u1 + (j0 + r) * v1"
            inside = f"j0 + r < {edge} and k0 + kk < dk"
        for q in range(loads):
            lines += [f"e = t + {q * PRODUCT_THREADS}", *split, f"w = {r.zero}",
                      f"if {inside}:", f"    w = {r.load(k, index)}",
                      f"{shared}[kk * {_PAD} + r] = w"]
    return lines


def _tiled(r: ProductRenderer) -> list[str]:
    p = _PER
    head = [f"sa = cuda.shared.array({TILE_K * _PAD}, sh_{r.acc})",
            f"sb = cuda.shared.array({TILE_K * _PAD}, sh_{r.acc})",
            "t = cv_i64(cuda.threadIdx.x)", f"tx = t & {_SIDE - 1}", "ty = t >> 4",
            f"tm = (dm + {TILE_M - 1}) // {TILE_M}", f"tn = (dn + {TILE_N - 1}) // {TILE_N}",
            "per = tm * tn", f"total = per * {r.batch_size()}",
            "tile = cv_i64(cuda.blockIdx.x)", "step = cv_i64(cuda.gridDim.x)"]
    accs = [f"c{i}{j}" for i in range(p) for j in range(p)]
    body = (["item = tile // per", "rest = tile - item * per", "ti = rest // tn",
             f"i0 = ti * {TILE_M}", f"j0 = (rest - ti * tn) * {TILE_N}"]
            + r.bases("item") + [f"{c} = {r.zero}" for c in accs]
            + ["k0 = cv_i64(0)", "while k0 < dk:"])
    inner = [f"x{i} = sa[kk * {_PAD} + ty + {_SIDE * i}]" for i in range(p)]
    inner += [f"y{j} = sb[kk * {_PAD} + tx + {_SIDE * j}]" for j in range(p)]
    inner += [f"c{i}{j} += x{i} * y{j}" for i in range(p) for j in range(p)]
    slab = (_slab_loads(r) + ["cuda.syncthreads()", f"for kk in range({TILE_K}):"]
            + _indent(inner) + ["cuda.syncthreads()", f"k0 += {TILE_K}"])
    body += _indent(slab)
    for i in range(p):
        body += [f"gi = i0 + ty + {_SIDE * i}", "if gi < dm:"]
        for j in range(p):
            body += [f"    gj = j0 + tx + {_SIDE * j}", "    if gj < dn:",
                     "        " + r.store("o2 + gi * u2 + gj * v2", f"c{i}{j}")]
    body.append("tile += step")
    return head + ["while tile < total:"] + _indent(body)
