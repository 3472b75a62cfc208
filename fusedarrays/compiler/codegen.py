"""KernelPlan → the lines of a kernel's source every target's walk shares: each element's (or
vector's) loads, instructions and stores, and the indices of each operand along a walk.

Pure text; imports no numba. The plan's instructions are rendered per *lane*: a thread of a
vectorised kernel loads 16 bytes of each contiguous operand (``ldv4_f32`` → a 4-tuple), computes
each lane's values, and stores 16 bytes. Instructions that depend only on scalars (or, in a 2-D
walk, only on operands constant along the row) are hoisted out of the element loop. The walk
follows the plan's schedule (:func:`layout.schedule`) and is each target's to write
(``targets/cuda/kernel.py``: ``flat`` grid-stride over vectors plus a tail, ``rows`` a 2-D grid
with no division per element, ``tiled`` transposed operands staged through shared memory, ``nd``
coordinates by division; ``targets/cpu.py``: serial loops over chunks of the walk, no vectors).
The other code generators write their elements with :class:`_Renderer` too.
Generated code calls names each backend supplies: ``ld_<t>``, ``st_<t>``, ``ldv<V>_<t>``,
``stv<V>_<t>``, ``cv_<t>``, ``sh_<t>``, ``math``, :mod:`devicelib`'s helpers. Snapshots pin it.
"""

from __future__ import annotations

from ..ir import ops
from ..ir.dtypes import BY_CODE, COMPLEX_PART, COMPUTE_CODE, ROUNDED
from ..ir.layout import VECTOR_LANES
from . import divisions, streams
from .plan import Instr, KernelPlan, operand_params, value_levels


def _indent(lines: list[str], depth: int = 1) -> list[str]:
    return ["    " * depth + ln for ln in lines]


class _Renderer:
    """Renders one plan. ``level`` of a value: 0 scalar-only, 1 constant along a row, 2 per
    element; values below the loop's level are computed once outside it."""

    def __init__(self, plan: KernelPlan, rows: bool = False):
        self.plan = plan
        self.codes = {i.var: i.code for i in plan.body if i.var is not None}
        self.level = value_levels(plan)
        # Suffix of per-row and per-element names: a tile renders several groups of rows at once
        # (all their loads first), each group's values under its own names.
        self.tag = ""
        # The logical (C-order) index of the element rendered, per lane ("" or "_<k>"): where a
        # draw of fa.random reads its stream. Each walk sets it; vshared: the flat vector walk,
        # whose lanes share a draw's Philox blocks (streams.block_lines).
        self.pos = lambda lane: "i"
        self.vshared = False
        # Values an earlier walk of the same kernel already computed under the same names (a
        # row kernel's registers, compiler/rowfusion.py): lines_at writes no line for them.
        self.skip: frozenset = frozenset()
        self.divby = "fa_rowdivby" if rows else "fa_divby"   # a row kernel's: cuda/division.py
        # divisor's var → the name of its reciprocal, for the divisions that take one
        self.recips: dict[int, str] = {}
        self.divided: set[int] = set()       # those divisions' vars
        for ins in plan.body:
            if divisions.by_reciprocal(ins, self.codes, self.level, self.divby == "fa_divby"):
                self.recips[ins.inputs[1]] = f"y{ins.inputs[1]}"
                self.divided.add(ins.var)
        # comparisons of a float32 uniform draw as integer ones (streams.u24_comparisons), and
        # the value's var → the helpers of its thresholds, computed once where the value is
        self.u24 = streams.u24_comparisons(plan.body, self.level)
        self.random = {i.var: i for i in plan.body if i.kind == "random"}
        self.thresholds = streams.u24_thresholds(self.u24)

    def threshold_name(self, value: int, helper: str) -> str:
        return f"u{value}{helper}" + (self.tag if self.level[value] else "")

    def half(self, divisor: int) -> bool:
        """Whether the divisions by ``divisor`` are float16 ones outside a row kernel: those take
        ``fa_divrcph`` and ``fa_divbyh``, whose operands are float16 values (cuda/division.py)."""
        return self.codes[divisor] == "f16" and self.divby == "fa_divby"

    # -- values -------------------------------------------------------------------------------
    def name(self, var: int, lane: str) -> str:
        level = self.level[var]
        return f"v{var}" if level == 0 else f"v{var}{self.tag}" + (lane if level == 2 else "")

    def recip_name(self, divisor: int) -> str:
        """The name of a divisor's reciprocal, computed at the divisor's level (its tag with it)."""
        return self.recips[divisor] + (self.tag if self.level[divisor] else "")

    def convert(self, var: int, want: str, lane: str) -> str:
        have = self.codes[var]
        # ROUNDED values (float16, bfloat16, float8) are float32 already: a cast *to* one rounds
        if have == want or (want not in ROUNDED and COMPUTE_CODE[have] == want):
            return self.name(var, lane)
        return cast(have, want, self.name(var, lane))

    def compute(self, ins: Instr, lane: str) -> str:
        """The right-hand side of a scalar, cast or op instruction."""
        if ins.kind == "scalar":
            return f"cv_b1(a{ins.arg})" if ins.code == "b1" else f"a{ins.arg}"
        if ins.kind == "cast":
            return cast(self.codes[ins.inputs[0]], ins.code, self.name(ins.inputs[0], lane))
        if ins.kind == "random":
            names = [self.name(v, lane) for v in ins.inputs]
            if self.vshared and streams.shares_blocks(ins.arg, self.plan.vector_width):
                return streams.lane(ins.code, ins.var, ins.arg, names, int(lane[1:]))
            return streams.element(ins.code, ins.arg, names, self.pos(lane))
        name, loop = ins.arg
        if ins.var in self.u24:
            draw, value, helper, comparison = self.u24[ins.var]
            rand = self.random[draw]
            shared = self.vshared and streams.shares_blocks(rand.arg, self.plan.vector_width)
            word = streams.u24_word(draw, rand.arg, [self.name(v, lane) for v in rand.inputs],
                                    self.pos(lane), int(lane[1:]) if shared else None)
            return f"fa_u24_{comparison}({word}, {self.threshold_name(value, helper)})"
        if name == "multiply" and loop[0] == loop[1] == ins.code == "f16" and \
                "b1" in (self.codes[v] for v in ins.inputs):
            # a float16 value times a mask's 0 or 1 is exact: no rounding to half (dropout)
            x, m = ins.inputs if self.codes[ins.inputs[1]] == "b1" else ins.inputs[::-1]
            return f"({self.convert(x, 'f16', lane)} * cv_f32({self.name(m, lane)}))"
        row = ops.OPS[name]
        loop_dtypes = tuple(BY_CODE[c] for c in loop)
        template = row.template(ops.template_kind(row, loop_dtypes))
        if ins.var in self.divided:
            divby = "fa_divbyh" if self.half(ins.inputs[1]) else self.divby
            template = f"{divby}_{{t}}({{0}}, {{1}}, {self.recip_name(ins.inputs[1])})"
        args = [self.convert(v, c, lane) for v, c in zip(ins.inputs, loop)]
        t = COMPUTE_CODE[loop[0] if row.rule == "ufunc" else loop[-1]]
        expr = template.format(*args, t=t, bits=loop_dtypes[0].itemsize * 8)
        if ins.code == loop[-1] and ops.keeps_type(name, loop):
            return expr  # already of the result's compute type: a cast would be one more call
        return f"cv_{ins.code}({expr})"

    def lines_at(self, level: int, lane: str, load) -> list[str]:
        """Every non-store instruction of exactly ``level``; ``load(ins, lane)`` renders loads."""
        out = []
        for ins in self.plan.body:
            if ins.var is None or self.level[ins.var] != level or ins.var in self.skip:
                continue
            if ins.kind == "gather":
                rhs = self.gather(ins, lane, load)
            else:
                rhs = load(ins, lane) if ins.kind == "load" else self.compute(ins, lane)
            out.append(f"{self.name(ins.var, lane)} = {rhs}")
            if ins.var in self.recips:
                divrcp = "fa_divrcph" if self.half(ins.var) else "fa_divrcp"
                out.append(f"{self.recip_name(ins.var)} = "
                           f"{divrcp}_f32({self.name(ins.var, lane)})")
            for helper in self.thresholds.get(ins.var, ()):
                out.append(f"{self.threshold_name(ins.var, helper)} = "
                           f"fa_u24_{helper}({self.name(ins.var, lane)})")
        return out

    def gather(self, ins: Instr, lane: str, load) -> str:
        """A gathered load: operand k (class S) read at its own index plus the index value
        times the gathered axis's stride (``fa_take_index`` wraps negative values; a flagged
        gather's ``fa_take_flagged`` also clamps and records an out-of-range index in the
        error word ``err`` with its site, ``runtime/indexflags.py``)."""
        k, extent, stride = ins.arg
        plain = load(Instr(ins.var, "load", k, (), ins.code), lane)   # ld_<t>(p<k>, <index>)
        index = self.name(ins.inputs[0], lane)
        if len(ins.inputs) == 2:
            site = self.name(ins.inputs[1], lane)
            return f"{plain[:-1]} + fa_take_flagged(err, {index}, {extent}, {site}) * {stride})"
        return f"{plain[:-1]} + fa_take_index({index}, {extent}) * {stride})"

    def stores(self, lane: str, index) -> list[str]:
        out = []
        for ins in self.plan.body:
            if ins.kind == "store":
                (src,) = ins.inputs
                out.append(f"st_{self.access(ins.arg)}(p{ins.arg}, {index(ins.arg)}, "
                           f"{self.convert(src, ins.code, lane)})")
        return out

    def scalar_element(self, index, lane: str = "") -> list[str]:
        """Loads, ops and stores of one element whose operand-k index is ``index(k)``."""
        def load(ins, ln):
            return f"ld_{self.access(ins.arg)}(p{ins.arg}, {index(ins.arg)})"
        return self.lines_at(2, lane, load) + self.stores(lane, index)

    # -- vector lanes -------------------------------------------------------------------------
    def vector_block(self, vindex, lane_index, tile_value=None) -> list[str]:
        """One group of V elements: 128-bit loads of the ``C`` operands, per-lane work, 128-bit
        stores; ``T`` operands from ``tile_value(k, lane)``, other operands at
        ``lane_index(k, lane)``. ``vindex(k, per, m)`` is operand k's index, in its own 16-byte
        accesses, of access ``m`` of the ``per`` that move the group (see :meth:`accesses`)."""
        loads, lanes, stores = self.vector_parts(vindex, lane_index, tile_value)
        return loads + lanes + stores

    def access(self, k: int) -> str:
        """The ``ld_``/``st_`` suffix of operand k's one-element accesses (its dtype code, or
        ``<code>_split`` where a complex operand's elements are not aligned to their size:
        :attr:`~.plan.Operand.access`)."""
        return self.plan.operands[k].access

    def accesses(self, k: int) -> tuple[int, int]:
        """``(lanes, per)``: operand k's elements per 16-byte access and the accesses a group
        of ``vector_width`` takes (float32 beside complex64: 4 elements, the complex64 in 2)."""
        lanes = VECTOR_LANES[self.plan.operands[k].code]
        return lanes, self.plan.vector_width // lanes

    def vector_parts(self, vindex, lane_index, tile_value=None) -> tuple[list, list, list]:
        """:meth:`vector_block` as its three parts: the 128-bit loads, the lanes, the stores."""
        plan, width, tag = self.plan, self.plan.vector_width, self.tag
        loads, lanes, stores = [], [], []
        vector_loads = self.vector_loads()

        def access(code: str, n: int, k: int) -> str:   # one element per access: the element's own
            return f"ldv{n}_{code}" if n > 1 else f"ld_{self.access(k)}"
        for ins in plan.body:
            if ins in vector_loads:
                k = ins.arg
                n, per = self.accesses(k)
                if per == 1:
                    loads.append(f"w{k}{tag} = ldv{width}_{ins.code}(p{k}, {vindex(k, 1, 0)})")
                else:
                    loads += [f"w{k}{tag}_{m} = {access(ins.code, n, k)}(p{k}, "
                              f"{vindex(k, per, m)})" for m in range(per)]
            elif ins.kind == "random" and self.vshared \
                    and streams.shares_blocks(ins.arg, width):
                names = [self.name(v, "") for v in ins.inputs]
                loads += streams.block_lines(ins.var, ins.arg, names, self.vshared, width)
        for lane in range(width):
            def load(ins, ln, lane=lane):
                if plan.operands[ins.arg].layout == "C":
                    n, per = self.accesses(ins.arg)
                    return (f"w{ins.arg}{tag}[{lane}]" if per == 1 else
                            f"w{ins.arg}{tag}_{lane}" if n == 1 else
                            f"w{ins.arg}{tag}_{lane // n}[{lane % n}]")
                if plan.operands[ins.arg].layout == "T":
                    return tile_value(ins.arg, lane)
                return f"ld_{self.access(ins.arg)}(p{ins.arg}, {lane_index(ins.arg, lane)})"
            lanes += self.lines_at(2, f"_{lane}", load)
        for ins in plan.body:
            if ins.kind != "store":
                continue
            (src,) = ins.inputs
            k = ins.arg
            if plan.operands[k].layout == "C":
                n, per = self.accesses(k)
                for m in range(per):
                    values = ", ".join(self.convert(src, ins.code, f"_{ln}")
                                       for ln in range(m * n, m * n + n))
                    call = f"stv{n}_{ins.code}" if n > 1 else f"st_{self.access(k)}"
                    stores.append(f"{call}(p{k}, {vindex(k, per, m)}, {values})")
            else:
                stores += [f"st_{self.access(k)}(p{k}, {lane_index(k, ln)}, "
                           f"{self.convert(src, ins.code, f'_{ln}')})" for ln in range(width)]
        return loads, lanes, stores

    # -- schedules ----------------------------------------------------------------------------
    def _flat_index(self, k: int, i: str) -> str:
        cls = self.plan.operands[k].layout
        return {"C": i, "B": f"b{k}", "S": f"b{k} + {i} * s{k}_0"}[cls]

    def _constant_loads(self, level: int, index) -> list[str]:
        def load(ins, ln):
            return f"ld_{self.access(ins.arg)}(p{ins.arg}, {index(ins.arg)})"
        return self.lines_at(level, "", load)

    def vector_loads(self) -> list[Instr]:
        """The first load of each contiguous operand: a vector's 128-bit accesses."""
        first = {}
        for ins in self.plan.body:
            if ins.kind == "load" and self.plan.operands[ins.arg].layout == "C":
                first.setdefault(ins.arg, ins)
        return list(first.values())

    def prefetches(self, vindex) -> list[str]:
        """``pf_l2`` of each 16-byte access the vector walk's loads make at ``vindex``."""
        return [f"pf_l2(p{ins.arg}, {vindex(ins.arg, per, m)})" for ins in self.vector_loads()
                for per in [self.accesses(ins.arg)[1]] for m in range(per)]

    def _row_base(self) -> list[str]:
        out = []
        for k, o in enumerate(self.plan.operands):
            params = operand_params(self.plan.schedule, o.layout, 2, k)
            r = f"r{self.tag}"
            base = f"{r} * s{k}_0" if o.layout == "C" else f"b{k} + {r} * s{k}_0"
            if params:
                out.append(f"rb{k}{self.tag} = {base}")
        return out

    def _rb(self, k: int) -> str:
        return f"rb{k}{self.tag}"

    def _row_index(self, k: int, col: str) -> str:
        cls, rb = self.plan.operands[k].layout, self._rb(k)
        return {"C": f"{rb} + {col}", "B": rb}.get(cls, f"{rb} + {col} * s{k}_1")

    def _nd_coordinates(self) -> list[str]:
        rank = len(self.plan.dims)
        if rank == 1:
            return ["c0 = i"]
        last = rank - 1
        lines = [f"c{last} = i % d{last}", f"q = i // d{last}"]
        for j in range(last - 1, 0, -1):
            lines += [f"c{j} = q % d{j}", f"q = q // d{j}"]
        return lines + ["c0 = q"]

    def _nd_index(self, k: int) -> str:
        if self.plan.operands[k].layout == "C":
            return "i"
        return f"b{k} + " + " + ".join(f"c{j} * s{k}_{j}" for j in range(len(self.plan.dims)))

def _sub_vector(base: str, group: str, width: int, per: int, m: int, more: str = "") -> str:
    """The index, in 16-byte accesses of ``width // per`` elements, of access ``m`` of group
    ``group`` of a row at element ``base`` (a multiple of the access's lanes: the row starts
    16-byte aligned), ``more`` accesses further on."""
    lanes = width // per
    start = base if lanes == 1 else f"{base} // {lanes}"
    start += f" + {more}" if more else ""
    return (f"{start} + {group}" if per == 1 else
            f"{start} + {group} * {per}" + (f" + {m}" if m else ""))


def cast(have: str, want: str, value: str) -> str:
    """``value`` of dtype code ``have`` as ``want``, as NumPy casts: a complex value keeps its
    real part for a real dtype (no backend casts complex to real), and is true where either part
    is non-zero."""
    if have in COMPLEX_PART and want not in COMPLEX_PART:
        return f"({value} != 0)" if want == "b1" else f"cv_{want}({value}.real)"
    return f"cv_{want}({value})"


def _function(name: str, params: list[str], lines: list[str]) -> str:
    return f"def {name}({', '.join(params)}):\n" + "".join(f"    {ln}\n" for ln in lines)
