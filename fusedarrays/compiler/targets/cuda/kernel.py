"""The cuda elementwise kernel (``compiler/plan.py``'s KernelPlan): a grid of threads walking the
plan's schedule (:func:`~....ir.layout.schedule`).

Pure text over :class:`~...codegen._Renderer`'s elements. Schedules: ``flat`` grid-stride over
16-byte vectors plus a tail; ``rows`` a 2-D grid (``blockIdx.y`` over rows), no division per
element; ``tiled`` transposed operands staged through shared-memory tiles; ``nd`` coordinates by
division per element.
"""

from __future__ import annotations

from ....ir.dtypes import COMPUTE_CODE
from ....ir.layout import TILE, TILE_THREADS
from ...codegen import _function, _indent, _Renderer, _sub_vector
from ...plan import KernelPlan, kernel_param_names


def render_kernel(plan: KernelPlan) -> str:
    r = _CudaKernel(plan)
    lines = {"flat": r.flat, "rows": r.rows, "tiled": r.tiled, "nd": r.nd}[plan.schedule]()
    return _function(plan.name, kernel_param_names(plan), lines)


class _CudaKernel(_Renderer):
    """The schedules' walks."""

    def flat(self) -> list[str]:
        width = self.plan.vector_width
        head = ["t = cv_i64(cuda.grid(1))", "step = cv_i64(cuda.gridsize(1))"]
        head += self._constant_loads(0, lambda k: f"b{k}")
        self.pos = lambda lane: f"(j * {width} + {lane[1:]})" if lane else "i"
        if width == 1:
            body = self.scalar_element(lambda k: self._flat_index(k, "i"))
            return head + ["i = t", "while i < n:"] + _indent(body + ["i += step"])
        self.vshared = "j"      # vector j holds elements j * width ... (j + 1) * width - 1

        def vindex(j):
            return lambda k, per, m: j if per == 1 else f"{j} * {per}" + (f" + {m}" if m else "")
        block = self.vector_block(vindex("j"),
                                  lambda k, lane: self._flat_index(k, f"(j * {width} + {lane})"))
        self.vshared = False
        tail = self.scalar_element(lambda k: self._flat_index(k, "i"))
        if any(ins.kind == "random" for ins in self.plan.body):
            # ptxas issues a vector's load just before its first use, after the draw's Philox
            # rounds, so each turn waits out a whole memory latency: the next turn's vectors are
            # asked into L2 first (no register held), and that load hits L2. Noise add and
            # dropout on the H100: 0.93 → 0.96 and 0.86 → 0.97 of a copy (benchmarks/README.md,
            # run 21 and note 14)
            ahead = self.prefetches(vindex("jn"))
            block = ["jn = j + step", "if jn < nv:"] + _indent(ahead) + block if ahead else block
        return (head + [f"nv = n // {width}", "j = t", "while j < nv:"]
                + _indent(block + ["j += step"])
                + [f"i = nv * {width} + t", "if i < n:"] + _indent(tail))

    def rows(self) -> list[str]:
        width = self.plan.vector_width
        head = ["tx = cv_i64(cuda.grid(1))", "cstep = cv_i64(cuda.gridsize(1))",
                "r = cv_i64(cuda.blockIdx.y)", "rstep = cv_i64(cuda.gridDim.y)"]
        head += self._constant_loads(0, lambda k: f"b{k}")
        self.pos = lambda lane: f"(r * d1 + c * {width} + {lane[1:]})" if lane else "(r * d1 + c)"
        row = self._row_base() + self._constant_loads(1, self._rb)
        if width == 1:
            body = self.scalar_element(lambda k: self._row_index(k, "c"))
            inner = ["c = tx", "while c < d1:"] + _indent(body + ["c += cstep"])
        else:
            block = self.vector_block(
                lambda k, per, m: _sub_vector(f"rb{k}", "c", width, per, m),
                lambda k, lane: self._row_index(k, f"(c * {width} + {lane})"))
            tail = self.scalar_element(lambda k: self._row_index(k, "c"))
            inner = ([f"nv = d1 // {width}", "c = tx", "while c < nv:"]
                     + _indent(block + ["c += cstep"])
                     + [f"c = nv * {width} + tx", "if c < d1:"] + _indent(tail))
        return head + ["while r < d0:"] + _indent(row + inner + ["r += rstep"])

    def tiled(self) -> list[str]:
        plan = self.plan
        staged = [k for k, o in enumerate(plan.operands) if o.layout == "T"]
        head = [f"tile{k} = cuda.shared.array(({TILE}, {TILE + 1}), "
                f"sh_{COMPUTE_CODE[plan.operands[k].code]})" for k in staged]
        head += ["tx = cv_i64(cuda.threadIdx.x)", "ty = cv_i64(cuda.threadIdx.y)",
                 f"c0 = cv_i64(cuda.blockIdx.x) * {TILE}", "tr = cv_i64(cuda.blockIdx.y)",
                 "tstep = cv_i64(cuda.gridDim.y)"]
        head += self._constant_loads(0, lambda k: f"b{k}")
        # a vector tile's lane: row r<tag>, column c0 + g * width + lane (see _vector_tile)
        self.pos = lambda lane: (f"(r{self.tag} * d1 + c0 + g * {plan.vector_width} + "
                                 f"{lane[1:]})" if lane else "(r * d1 + c)")
        loop = [f"r0 = tr * {TILE}"]
        if plan.vector_width == 1:
            loop += self._scalar_tile(staged)
        else:  # full tiles move 16 bytes per access; edge tiles go element by element
            loop += [f"if r0 + {TILE} <= d0 and c0 + {TILE} <= d1:"]
            loop += _indent(self._vector_tile(staged)) + ["else:"]
            loop += _indent(self._scalar_tile(staged))
        return head + [f"while tr * {TILE} < d0:"] + _indent(loop + ["tr += tstep"])

    def _scalar_tile(self, staged: list[int]) -> list[str]:
        """Stage the transposed operands of one tile (``tile[column][row]``, one element per
        access, a warp reading 32 consecutive rows of one column), then compute it element by
        element (a warp writing 32 consecutive columns of one row)."""
        plan = self.plan
        wide, tall = TILE_THREADS
        stage = ["m = ty", f"while m < {TILE}:", "    h = tx", f"    while h < {TILE}:"]
        loads = [f"tile{k}[m, h] = ld_{self.access(k)}"
                 f"(p{k}, b{k} + (r0 + h) * s{k}_0 + (c0 + m) * s{k}_1)" for k in staged]
        stage += _indent(["if r0 + h < d0 and c0 + m < d1:"] + _indent(loads), 2)
        stage += [f"        h += {wide}", f"    m += {tall}"]

        def load(ins, ln):
            if plan.operands[ins.arg].layout == "T":
                value = f"tile{ins.arg}[c - c0, r - r0]"
                return f"({value} != 0)" if ins.code == "b1" else value
            return f"ld_{self.access(ins.arg)}(p{ins.arg}, {self._row_index(ins.arg, 'c')})"
        row = self._row_base() + self._constant_loads(1, self._rb)
        element = self.lines_at(2, "", load) + self.stores("", lambda k: self._row_index(k, "c"))
        compute = ["r = r0 + ty", f"while r < r0 + {TILE} and r < d0:"]
        compute += _indent(row + ["c = c0 + tx", f"while c < c0 + {TILE} and c < d1:"]
                           + _indent(element + [f"c += {wide}"]) + [f"r += {tall}"])
        return stage + ["cuda.syncthreads()"] + compute + ["cuda.syncthreads()"]

    def _vector_tile(self, staged: list[int]) -> list[str]:
        """A full tile with 16-byte accesses. Each thread stages ``per`` vectors (4 consecutive
        rows of one tile column; 16 threads cover a column's 256 contiguous bytes), then computes
        ``per`` vectors (4 consecutive columns of one tile row). A thread's vectors are rendered
        one after another with every load first: a load's result is not awaited before the
        thread's next load is issued (in a loop, the store of one vector into shared memory
        waits for its load, and the next load waits behind it)."""
        plan, width = self.plan, self.plan.vector_width
        groups, threads = TILE // width, TILE_THREADS[0] * TILE_THREADS[1]
        per, stride = TILE * groups // threads, threads // groups  # vectors, rows apart
        lines = [f"u = ty * {TILE_THREADS[0]} + tx", f"q = u // {groups}", f"g = u % {groups}"]
        for k in staged:
            code = plan.operands[k].code
            lines += [f"x{k}_{m} = ldv{width}_{code}(p{k}, (b{k} + (c0 + q + {stride * m}) * "
                      f"s{k}_1 + r0) // {width} + g)" for m in range(per)]
        for k in staged:
            lines += [f"tile{k}[q + {stride * m}, g * {width} + {lane}] = x{k}_{m}[{lane}]"
                      for m in range(per) for lane in range(width)]
        lines.append("cuda.syncthreads()")
        loads, lanes, stores = [], [], []
        for m in range(per):
            self.tag = f"g{m}"
            loads += [f"r{self.tag} = r0 + q + {stride * m}"] + self._row_base()
            loads += self._constant_loads(1, self._rb)
            part = self.vector_parts(
                lambda k, per, m: _sub_vector(f"{self._rb(k)}", "g", width, per, m,
                                              f"c0 // {width // per}"),
                lambda k, lane: self._row_index(k, f"(c0 + g * {width} + {lane})"),
                lambda k, lane, m=m: f"tile{k}[g * {width} + {lane}, q + {stride * m}]")
            loads, lanes, stores = loads + part[0], lanes + part[1], stores + part[2]
        self.tag = ""
        return lines + loads + lanes + stores + ["cuda.syncthreads()"]

    def nd(self) -> list[str]:
        strided = any(o.layout != "C" for o in self.plan.operands)
        body = (self._nd_coordinates() if strided else []) + self.scalar_element(self._nd_index)
        head = ["t = cv_i64(cuda.grid(1))", "step = cv_i64(cuda.gridsize(1))"]
        head += self._constant_loads(0, lambda k: f"b{k}")
        return head + ["i = t", "while i < n:"] + _indent(body + ["i += step"])
