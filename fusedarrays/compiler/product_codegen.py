"""ProductPlan → Python source of the product kernel: ``@cuda.jit`` (also run by the simulator)
or the cpu variant.

Pure text, like :mod:`.codegen`. Accumulators are of :func:`~..ir.products.accumulator_code`'s
type; each operand element is loaded in its own dtype and converted to it (an ``int32 @
float32`` product reads both in place and sums in float64, NumPy's result type). Schedules
(``compiler/product.py``):

- cuda: a block of ``PRODUCT_THREADS`` = 16 × 16 threads per ``TILE_M × TILE_N`` output tile,
  grid-stride over every tile of the batch. Per slab of ``TILE_K``: the block loads the slab of
  ``a`` (``TILE_M × TILE_K``) and of ``b`` (``TILE_K × TILE_N``) into shared memory, K-major,
  each row padded by one slot so that loads along either axis hit distinct banks; neighbouring
  threads load neighbouring elements along the operand's unit-stride axis (``plan.along``);
  elements past the matrix edges are zero. Thread ``(tx, ty)`` then adds, for each ``kk`` of the
  slab, ``a[ty + 16 i, kk] * b[kk, tx + 16 j]`` to its 16 accumulators (registers: the source is
  unrolled), and after the last slab stores them (neighbouring threads, neighbouring columns).
- cpu: ``<name>(k0, k1, ...)`` runs chunks ``k0`` to ``k1`` of the output rows (over the whole
  batch); a row's outputs are summed over ``k`` in order in a row of accumulators, so the inner
  loop walks a row of ``b`` and of the accumulators.
"""

from __future__ import annotations

from ..ir.dtypes import COMPUTE_CODE
from .codegen import CPU_CHUNK, _function, _indent
from .plan import kernel_param_names
from .product import PRODUCT_THREADS, TILE_K, TILE_M, TILE_N, ProductPlan

_SIDE = 16                      # threads along each side of the block
_PER = TILE_M // _SIDE          # outputs per thread along each side
_PAD = TILE_M + 1               # shared slots per kk of a slab (one padding slot)
_NUMPY = {"f32": "np.float32", "f64": "np.float64", "i64": "np.int64", "u64": "np.uint64",
          "c64": "np.complex64", "c128": "np.complex128"}


def render_product_kernel(plan: ProductPlan, target: str) -> str:
    """The kernel's source for ``target`` ``"cuda"`` or ``"cpu"``."""
    if target not in ("cuda", "cpu"):
        raise ValueError(f"unknown target {target!r}")
    params = kernel_param_names(plan)
    r = _ProductRenderer(plan)
    if target == "cpu":
        return _function(plan.name, ["k0", "k1"] + params, r.cpu())
    return _function(plan.name, params, r.tiled())


class _ProductRenderer:
    def __init__(self, plan: ProductPlan):
        self.plan, self.acc = plan, plan.acc
        self.zero = f"cv_{self.acc}(0)"

    def load(self, k: int, index: str) -> str:
        """Operand ``k``'s element at ``index``, converted to the accumulator's type."""
        code = self.plan.operands[k].code
        value = f"ld_{code}(p{k}, {index})"
        return value if COMPUTE_CODE[code] == self.acc else f"cv_{self.acc}({value})"

    def store(self, index: str, value: str) -> str:
        code = self.plan.operands[2].code
        value = value if COMPUTE_CODE[code] == self.acc else f"cv_{code}({value})"
        return f"st_{code}(p2, {index}, {value})"

    def bases(self, item: str) -> list[str]:
        """Each operand's offset ``o<k>`` of batch item ``item`` (C order over the collapsed
        batch extents)."""
        lines = [f"o{k} = b{k}" for k in range(3)]
        if not self.plan.batch:
            return lines
        lines.append(f"q = {item}")
        for j in reversed(range(len(self.plan.batch))):
            lines += [f"c = q % d{j}", f"q = q // d{j}"] if j else ["c = q"]
            lines += [f"o{k} += c * s{k}_{j}" for k in range(3)]
        return lines

    def batch_size(self) -> str:
        return " * ".join(f"d{j}" for j in range(len(self.plan.batch))) or "1"

    # -- cuda ----------------------------------------------------------------------------------
    def slab_loads(self) -> list[str]:
        """The block's loads of one slab of ``a`` and ``b`` into ``sa`` and ``sb``."""
        lines = []
        loads = TILE_M * TILE_K // PRODUCT_THREADS
        kbits = TILE_K.bit_length() - 1
        mbits = TILE_M.bit_length() - 1
        for k, (shared, edge) in enumerate((("sa", "dm"), ("sb", "dn"))):
            row_first = self.plan.along[k] == "row"
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
                lines += [f"e = t + {q * PRODUCT_THREADS}", *split, f"w = {self.zero}",
                          f"if {inside}:", f"    w = {self.load(k, index)}",
                          f"{shared}[kk * {_PAD} + r] = w"]
        return lines

    def tiled(self) -> list[str]:
        p = _PER
        head = [f"sa = cuda.shared.array({TILE_K * _PAD}, sh_{self.acc})",
                f"sb = cuda.shared.array({TILE_K * _PAD}, sh_{self.acc})",
                "t = cv_i64(cuda.threadIdx.x)", f"tx = t & {_SIDE - 1}", "ty = t >> 4",
                f"tm = (dm + {TILE_M - 1}) // {TILE_M}", f"tn = (dn + {TILE_N - 1}) // {TILE_N}",
                "per = tm * tn", f"total = per * {self.batch_size()}",
                "tile = cv_i64(cuda.blockIdx.x)", "step = cv_i64(cuda.gridDim.x)"]
        accs = [f"c{i}{j}" for i in range(p) for j in range(p)]
        body = (["item = tile // per", "rest = tile - item * per", "ti = rest // tn",
                 f"i0 = ti * {TILE_M}", f"j0 = (rest - ti * tn) * {TILE_N}"]
                + self.bases("item") + [f"{c} = {self.zero}" for c in accs]
                + ["k0 = cv_i64(0)", "while k0 < dk:"])
        inner = [f"x{i} = sa[kk * {_PAD} + ty + {_SIDE * i}]" for i in range(p)]
        inner += [f"y{j} = sb[kk * {_PAD} + tx + {_SIDE * j}]" for j in range(p)]
        inner += [f"c{i}{j} += x{i} * y{j}" for i in range(p) for j in range(p)]
        slab = (self.slab_loads() + ["cuda.syncthreads()", f"for kk in range({TILE_K}):"]
                + _indent(inner) + ["cuda.syncthreads()", f"k0 += {TILE_K}"])
        body += _indent(slab)
        for i in range(p):
            body += [f"gi = i0 + ty + {_SIDE * i}", "if gi < dm:"]
            for j in range(p):
                body += [f"    gj = j0 + tx + {_SIDE * j}", "    if gj < dn:",
                         "        " + self.store("o2 + gi * u2 + gj * v2", f"c{i}{j}")]
        body.append("tile += step")
        return head + ["while tile < total:"] + _indent(body)

    # -- cpu -----------------------------------------------------------------------------------
    def cpu(self) -> list[str]:
        row = (["item = r // dm", "i = r - item * dm"] + self.bases("item")
               + ["for j in range(dn):", f"    acc[j] = {self.zero}",
                  "for h in range(dk):", f"    x = {self.load(0, 'o0 + i * u0 + h * v0')}",
                  "    for j in range(dn):",
                  f"        acc[j] += x * {self.load(1, 'o1 + h * u1 + j * v1')}",
                  "for j in range(dn):", "    " + self.store("o2 + i * u2 + j * v2", "acc[j]")])
        return ([f"rows = {self.batch_size()} * dm",
                 f"grain = max(1, {CPU_CHUNK} // max(dn * dk, 1))",
                 "chunks = (rows + grain - 1) // grain", "if k0 >= k1:", "    return chunks",
                 f"acc = np.zeros(dn, {_NUMPY[self.acc]})",
                 "for k in range(k0, min(k1, chunks)):",
                 "    for r in range(k * grain, min(k * grain + grain, rows)):"]
                + _indent(row, 2) + ["return chunks"])
