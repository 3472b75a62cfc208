"""Launch records: what every launch of fusedarrays is made from, and the code that packs them.

A :class:`LaunchRecord` is built once per signature from a plan: the loaded kernel, a generated
argument packer and the launch geometry. Lazy evaluation (:mod:`realize`, one record per graph
structure and binding), ``fa.fuse`` (one per launch of a traced program) and ``foreach`` (one per
traced group) all launch through :meth:`LaunchRecord.launch_with`, or after a record's first
launch through the call its backend prepared for its size and geometry
(:meth:`LaunchRecord.launch`); nothing else launches.

A packer is straight-line Python written for its plan (:class:`Packer`): each operand's pointer
from where that signature's caller keeps the buffer, the plan's integer parameters as constants,
and each scalar parameter converted to its kernel type. Generated code rather than a loop over a
table: a cached evaluation's host time is the point.
"""

from __future__ import annotations

import os

import numpy as np

from ..compiler import Plan
from ..ir.dtypes import CODES, ROUNDED
from ..ir.native import fastgraph
from . import indexflags
from .backend import BUFFER_ADDRESS
from .capture import capturing
from .records import _add_time, _launched, _perf, _stats, profiling


def scalar_arg(value, dtype: np.dtype):
    """A scalar parameter in its kernel type: float16 (bfloat16, float8) travels as float32
    rounded to its dtype, bool as uint8."""
    if CODES.get(dtype) in ROUNDED:
        return np.float32(dtype.type(value))
    if dtype == np.bool_:
        return np.uint8(bool(value))
    return dtype.type(value)


def converter(dtype: np.dtype):
    """Host value → kernel parameter of ``dtype``, as :func:`scalar_arg` converts it."""
    if CODES.get(dtype) in ROUNDED or dtype == np.bool_:
        return lambda value: scalar_arg(value, dtype)
    return dtype.type


def elem_offset(operand) -> int:
    """The element offset folded into an operand's pointer (0 where it is a parameter)."""
    return operand.offset if operand.folded else 0


# False in a forked child: records launch through their backend, which refuses a device the
# parent used (runtime/backend.refuse_after_fork), never through a call prepared in the parent
_prepared_ok = [True]


def _forget_prepared_launches() -> None:
    _prepared_ok[0] = False


os.register_at_fork(after_in_child=_forget_prepared_launches)


class LaunchRecord:
    """A planned kernel, ready to launch: ``pack(*inputs)`` gives the arguments after ``n``."""

    __slots__ = ("backend", "kernel", "size", "geometry", "pack", "name", "launched",
                 "result_sid", "traffic", "elements", "flagged", "direct")

    def __init__(self, backend, kernel, pack, size: int = 0, geometry: tuple | None = None,
                 name: str = "", traffic: tuple = (0, 0), elements: int = 0):
        self.backend, self.kernel, self.pack = backend, kernel, pack
        self.size, self.geometry, self.name = size, geometry, name
        self.launched = False
        # lazy evaluation's fresh result: its leaf's sid (a tuple of them for several), made once
        self.result_sid = None
        # (bytes moved by a launch over `size` elements, bytes per element of a launch sized
        # per call): what fa.profile() reports as bytes moved
        self.traffic = traffic
        self.elements = elements or size   # elements a launch over `size` walks (fa.profile())
        # the kernel records out-of-range indices in the device's error word: launched under
        # its lock (runtime/indexflags.py)
        self.flagged = False
        # (call, config): the backend's launch of this kernel over `size` and `geometry`,
        # prepared after the first launch (CudaBackend.direct_launch); None before it, False
        # where the backend prepares none (asked once)
        self.direct = None

    @classmethod
    def of_plan(cls, backend, kernel, plan: Plan, pack) -> LaunchRecord:
        """The record launching ``plan`` (any kind sized when planned) whole."""
        record = cls(backend, kernel, pack, plan.size, plan.geometry() if plan.size else None,
                     plan.name, plan.traffic(), plan.elements_walked())
        record.flagged = plan.flags_index_errors
        return record

    def launch(self, *inputs) -> None:
        """Pack ``inputs`` (the signature's buffers and values) and launch.

        Every launch of a record is over the same size and geometry, so after the first one
        the backend may hand over a call prepared for them (``direct_launch``: on cuda the C
        launch and its grid), which this calls with the packed arguments alone: a cached
        evaluation's launch is then one C call, not four Python frames. It is skipped while
        ``fa.profile()`` is active and in a forked child (where the backend refuses: no driver
        call may be made there); a launch it refuses (a thread whose device is not bound yet,
        an error) goes the whole way, which binds or raises the backend's error."""
        direct = self.direct
        if direct and profiling[0] is None and _prepared_ok[0] and capturing[0] is None:
            start = _perf()
            if direct[0](direct[1], self.size, self.pack(*inputs)) is None:
                _launched[0] += 1
                _launched[1] += _perf() - start
                return
        if self.size:
            self.launch_with(self.pack(*inputs), self.size, self.geometry)
            if direct is None:
                prepare = None if self.flagged else self.backend.direct_launch
                self.direct = prepare is not None and prepare(
                    self.kernel, self.size, self.geometry) or False

    def launch_with(self, args: list, size: int, geometry: tuple) -> None:
        """Launch over ``size`` elements with ``args`` after ``n``: the one call of
        ``backend.launch`` in the package. The first launch of a record is timed apart from
        the others, after the compile of a backend that compiles at a kernel's first call (cpu:
        numba types the arguments then), timed as the compile it is. While ``fa.profile()``
        is active (one look at a flag otherwise) the launch is also timed on the device."""
        if not self.launched:
            self._first_call(args, size)
        capture = capturing[0]   # fa.capture() records it, fa.on_stream() queues it there
        if capture is not None and capture.take(self, args, size, geometry):
            return
        profiler = profiling[0]
        if profiler is not None:
            timer = profiler.start(self.backend)
        start = _perf()
        if self.flagged:
            indexflags.launch_flagged(self.backend, self.kernel, size, args, geometry)
        else:
            self.backend.launch(self.kernel, size, args, geometry)
        host = _perf() - start
        if profiler is not None:
            profiler.launched(self, size, timer, host)
        if self.launched:
            _launched[0] += 1
            _launched[1] += host
        else:
            _add_time("first launch", host)
            _stats["launches"] += 1
        self.launched = True

    def _first_call(self, args: list, size: int) -> None:
        first_call = self.backend.first_call
        if first_call is None or not size:
            return
        for stage, seconds in first_call(self.kernel, size, args).items():
            _add_time(stage, seconds)
            if profiling[0] is not None:
                profiling[0].compiled(self.name, "", {stage: seconds})


class Packer:
    """Straight-line source of a generated ``pack`` function.

    Parts are Python expressions over the function's parameters; ``names`` are its globals
    (constants and functions enter by name, never by repr). A memoised part converts only when
    the object it comes from is a new one (``M[slot]`` holds the pair, replaced in one store, so
    concurrent calls never see a torn pair): an optimizer loop passes the same arrays and mostly
    the same scalar objects at every step.
    """

    def __init__(self, backend):
        self.backend = backend
        self.names: dict = {"M": [], "oparg": backend.operand_arg}
        self.lines: list[str] = []
        self.parts: list[str] = []

    def name(self, value) -> str:
        """A global name for ``value`` in the generated code."""
        name = f"k{len(self.names)}"
        self.names[name] = value
        return name

    def pointer(self, storage: str, dtype: np.dtype, offset: int, memo: bool = False) -> None:
        """Operand pointer from the storage expression ``storage``: the backend's
        ``operand_arg``, or written out where the backend names the storage's address
        attribute (``operand_at``) or says it is the first byte of the storage's buffer (read
        by the C extension where it is loaded; ``operand_arg`` where the storage exports no
        contiguous buffer)."""
        at, nbytes = self.backend.operand_at, offset * dtype.itemsize
        convert = f"oparg({{0}}, {self.name(dtype)}, {offset})"
        if at == BUFFER_ADDRESS and fastgraph is not None:
            self.names["baddr"] = fastgraph.buffer_address
            convert = f"(b + {nbytes} if (b := baddr({{0}})) is not None else {convert})"
        elif at and at != BUFFER_ADDRESS:
            convert = f"{{0}}.{at} + {nbytes}"
        if memo:
            self.memo(storage, convert.format("s"))
        else:
            self.parts.append(convert.format(storage))

    def memo(self, source: str, convert: str) -> None:
        slot = len(self.names["M"])
        self.names["M"].append((None, None))
        self.lines += [f"s = {source}", f"m{slot} = M[{slot}]", f"if m{slot}[0] is not s:",
                       f"    m{slot} = M[{slot}] = (s, {convert})"]
        self.parts.append(f"m{slot}[1]")

    def counters(self, plan) -> None:
        """The counter buffer of a plan that counts finished parts (a split reduction:
        ``compiler/reduction.py``), from the backend at each launch (it may have grown)."""
        if plan.counters:
            self.names["counters"] = self.backend.counters
            self.parts.append(f"counters({plan.counters})")

    def index_errors(self, plan) -> None:
        """The device's error word, for a plan holding a flagged gather (a constant: the word
        lives as long as the backend)."""
        if plan.flags_index_errors:
            self.parts.append(self.name(indexflags.word_arg(self.backend)))

    def ints(self, plan) -> None:
        ints = plan.int_args()
        if ints:
            self.parts.append("*" + self.name(tuple(ints)))

    def scalar(self, value: str, dtype: np.dtype, memo: bool = False) -> None:
        """A scalar parameter computed by the expression ``value``, converted to ``dtype``;
        ``memo``: converted only when the value is another object than at the last call."""
        convert = self.name(converter(dtype))
        if memo:
            self.memo(value, f"{convert}(s)")
        else:
            self.parts.append(f"{convert}({value})")

    def constant(self, value, dtype: np.dtype) -> None:
        self.parts.append(self.name(converter(dtype)(value)))

    def function(self, params: str, what: str, unpack: str | None = None):
        body = ([unpack] if unpack else []) + self.lines
        body.append("return [" + ", ".join(self.parts) + "]")
        source = f"def pack({params}):\n" + "".join(f"    {ln}\n" for ln in body)
        exec(compile(source, f"<fusedarrays {what}>", "exec"), self.names)
        return self.names["pack"]


def graph_packer(plan, nparams: int, backend):
    """``pack(P, O)`` for lazy evaluation: ``P`` the evaluated graph's params (a leaf's buffer
    and a scalar's value sit where the plan's graph had them), ``O`` the output buffers. The
    same steps in C where the extension is built (``ir/fastgraph/packing.c``)."""
    if fastgraph is not None:
        return native_graph_packer(plan, nparams, backend)
    packer = Packer(backend)
    inputs = [o for o in plan.operands if not o.output]
    for o, position in zip(inputs, plan.sources):
        packer.pointer(f"p{position}.attrs[0].storage", o.dtype, elem_offset(o))
    for k, o in enumerate(plan.operands[len(inputs):]):
        packer.pointer(f"O[{k}].storage", o.dtype, elem_offset(o))
    packer.counters(plan)
    packer.index_errors(plan)
    packer.ints(plan)
    # A lazy expression's scalars are new nodes at every call, but their values mostly the same
    # objects (a function's constants, an optimizer's hyperparameters): converting each to its
    # NumPy type cost more than the look that finds it converted (Black-Scholes has 40).
    for (_, dtype), position in zip(plan.scalars, plan.scalar_sources):
        packer.scalar(f"p{position}.attrs[1]", dtype, memo=True)
    names = ", ".join(f"p{k}" for k in range(nparams))
    return packer.function("P, O", f"packer {plan.name}",
                           unpack=f"{names}{',' if nparams == 1 else ''} = P")


def native_graph_packer(plan, nparams: int, backend):
    """:func:`graph_packer` as a ``_fastgraph.GraphPacker``: the same arguments in the same
    order, each scalar's conversion kept while its value is the same object."""
    inputs = [o for o in plan.operands if not o.output]
    middle = []
    if plan.counters:
        middle.append(("call", backend.counters, plan.counters))
    if plan.flags_index_errors:
        middle.append(("const", indexflags.word_arg(backend), None))
    ints = plan.int_args()
    if ints:
        middle.append(("extend", tuple(ints), None))
    at = backend.operand_at
    return fastgraph.GraphPacker(
        nparams,
        tuple((position, o.dtype, elem_offset(o)) for o, position in zip(inputs, plan.sources)),
        tuple((k, o.dtype, elem_offset(o)) for k, o in enumerate(plan.operands[len(inputs):])),
        tuple(middle),
        tuple((position, converter(dtype))
              for (_, dtype), position in zip(plan.scalars, plan.scalar_sources)),
        at if at and at != BUFFER_ADDRESS else backend.operand_arg, at == BUFFER_ADDRESS)
