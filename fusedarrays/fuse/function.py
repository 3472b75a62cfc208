"""``fa.fuse``: a whole function (an optimizer step) as one kernel, in place; a list in one launch.

Where it sits: beside the lazy arrays, over :mod:`runtime`. On the first call of each *signature*
the function is traced once (:mod:`trace`) on placeholder arrays; its in-place writes become
stores into the argument buffers, its returned arrays fresh outputs, and its whole body one
kernel (more only where aliasing needs a staged copy, or writes to one buffer partly overlap).
The traced program is planned and compiled once; a cached call checks the signature, packs the
arguments with code generated for that signature, and launches: no tracing, no planning.

>>> import fusedarrays as fa, numpy as np
>>> @fa.fuse
... def sgd(p, g, buf, lr, momentum):
...     buf[...] = momentum * buf + g
...     p -= lr * buf
>>> p, g, buf = fa.ones(4, np.float32), fa.ones(4, np.float32), fa.zeros(4, np.float32)
>>> sgd(p, g, buf, 0.1, 0.9)          # one launch; new lr / momentum values never retrace
>>> p.get()
array([0.9, 0.9, 0.9, 0.9], dtype=float32)

Arguments: ``fa.ndarray``; NumPy arrays (zero-copy on the cpu and sim backends, so writes land in
them, and writing a read-only one raises ``ReadOnlyArgumentError``; an uploaded copy on cuda,
which may only be read); CuPy / PyTorch arrays on cuda (zero-copy, as ``fa.asarray``).
Python ints and floats, NumPy scalars and 0-d NumPy arrays are kernel parameters computed on the
host per call: Python arithmetic and ``np.<ufunc>`` on them inside the function are recorded, so
``1 - beta1 ** step`` follows ``step`` (``math.*``, comparisons and ``if`` on them raise). Bools,
``static_argnames`` and any other Python object are static: baked in, a new value retraces.
Arrays the function captures from outside are baked by reference. A traced array has no host
value: ``if``, ``bool``, ``float``, ``.get()``, ``np.asarray`` on one raise
``TracerConversionError`` (``fa.where`` chooses per element). ``x[idx]``, ``fa.take`` and
``fa.take_along_axis`` through an index argument are gathers in the kernel, their index checked
on the device: an out-of-range one raises ``IndexError`` at the next evaluation point after the
call, such as ``.get()`` of a result (``api/indexing.py``). Returned arrays are new arrays
(an argument returned as itself is returned as it is). A fused function called while another is
traced is inlined into it.

Retrace triggers, which are exactly the parts of the signature (:data:`SIGNATURE_PARTS`); a new
value of any of them traces again (about a millisecond; it compiles only if the kernel's structure
key changed), and ``f.explain()`` / ``fa.explain(f)`` / ``FUSEDARRAYS_LOG_COMPILES=1`` say which:

- ``backend``: the backend and device the arrays live on;
- ``settings``: the settings that change generated code (``FUSEDARRAYS_CPU_PARALLEL``);
- ``arguments``: the number of positional arguments and the keyword names;
- ``kind``: per argument, array, list of arrays (foreach), Python scalar, NumPy scalar or static;
- ``dtype``: per array (list) and NumPy scalar its dtype, per Python scalar its type;
- ``view``: per array its shape, element strides and element offset;
- ``alignment``: per array whether its buffer's address allows 16-byte (vector) accesses;
- ``static``: per static argument its value;
- ``aliases``: which array arguments share a buffer.

``f.foreach(*args)`` takes lists in place of arrays (:mod:`foreach`); ``fa.global_norm`` in the
function is then the norm across a whole list (:mod:`across`: two launches).
"""

from __future__ import annotations

import functools
import inspect
import logging

from .. import config
from ..api import array, pending
from ..api.array import ndarray
from ..errors import UnsupportedOperationError
from ..ir import graph, layout
from ..runtime import realize
from ..runtime.backend import get_backend, mixed_devices, new_buffer
from ..runtime.launch import LaunchRecord
from ..runtime.records import profiling
from . import trace
from .arguments import Imports, classify, hashable
from .draws import host_values
from .explain import Explanation
from .foreach import ForeachState
from .packers import make_packer
from .signature import (  # noqa: F401 - SIGNATURE_PARTS: named in the docstring
    SIGNATURE_PARTS,
    codegen_settings,
    describe_change,
    prepare_write,
    traced_call,
)

log = logging.getLogger("fusedarrays.compile")
_MAX_SIGNATURES = 256          # per function; then the table starts over
_VECTOR_BYTES = layout.VECTOR_BYTES


def fuse(fn=None, *, static_argnames=()):
    """Fuse ``fn``: ``@fa.fuse``, or ``fa.fuse(fn, static_argnames=("nesterov",))``."""
    if fn is None:
        return lambda f: Fused(f, static_argnames)
    return Fused(fn, static_argnames)


class Fused:
    """A fused function: call it like ``fn``; ``.foreach`` over lists; ``.explain()``."""

    def __init__(self, fn, static_argnames=()):
        self.fn = fn
        names = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
        self.static_argnames = frozenset(names)
        params = list(inspect.signature(fn).parameters.values())
        self._names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                            p.POSITIONAL_OR_KEYWORD)]
        unknown = self.static_argnames - {p.name for p in params}
        if unknown and not any(p.kind == p.VAR_KEYWORD for p in params):
            raise TypeError(f"fuse: static_argnames {sorted(unknown)} are not parameters of "
                            f"{fn.__qualname__}")
        self._static_positions = frozenset(k for k, n in enumerate(self._names)
                                           if n in self.static_argnames)
        self._entries: dict[tuple, _Entry] = {}
        self._foreach = None       # foreach.ForeachState, made on the first .foreach call
        self._last_key: tuple | None = None
        self._repeat: _Repeat | None = None   # the last call's arguments, for the next one
        self.traces = 0
        self.why = "not called yet"
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<fa.fuse {self.__qualname__}: {len(self._entries)} signature(s)>"

    def __call__(self, *args, **kwargs):
        if array._tracing.tracer is not None:
            return self.fn(*args, **kwargs)   # inside another traced function: inline
        if profiling[0] is not None and profiling[0].outside():   # timed whole (api/profile)
            return profiling[0].evaluate(f"{self.__qualname__}()", self, *args, **kwargs)
        repeat = self._repeat
        if repeat is not None and not kwargs:
            values = repeat.values_of(args)
            if values is not None:
                return repeat.entry.run(values, args, kwargs)
        key, values, imports = self._signature(args, kwargs)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._trace(key, values)
        self._repeat = _Repeat.of(entry, args, values) \
            if imports is None and not kwargs and not self._static_positions else None
        if imports is not None and (imports.uploaded or imports.readonly or imports.copied):
            imports.check_writes(entry.writes_through, self.__qualname__)
        return entry.run(values, args, kwargs)

    def foreach(self, *args, **kwargs):
        """Apply the function to each tuple of the list arguments: one launch per group of
        tuples with equal dtypes. Returns None, a list per returned array, or a tuple of them."""
        if array._tracing.tracer is not None:
            raise UnsupportedOperationError("fuse: .foreach inside a traced function")
        if profiling[0] is not None and profiling[0].outside():
            return profiling[0].evaluate(f"{self.__qualname__}.foreach()", self.foreach, *args,
                                         **kwargs)
        if self._foreach is None:
            self._foreach = ForeachState(self)
        return self._foreach.call(args, kwargs)

    def explain(self, arch: str | None = None) -> Explanation:
        """The signatures traced so far, why each traced, and their kernels (nothing runs)."""
        return Explanation(self, arch)

    _fa_explain = explain        # what fa.explain(f) calls

    # -- signatures ---------------------------------------------------------------------------
    def name_of(self, position: int, nargs: int, kwnames: tuple) -> str:
        if position >= nargs:
            return f"keyword {kwnames[position - nargs]}"
        if position < len(self._names):
            return f"argument {position} ({self._names[position]})"
        return f"argument {position}"

    def items(self, args, kwargs):
        """``(items, kwnames, static positions)``: positional then keyword values (sorted)."""
        if not kwargs:
            return args, (), self._static_positions
        kwnames = tuple(sorted(kwargs))
        static = self._static_positions | {len(args) + k for k, n in enumerate(kwnames)
                                           if n in self.static_argnames}
        return (*args, *(kwargs[k] for k in kwnames)), kwnames, static

    def _signature(self, args, kwargs):
        """``(key, values)``: the hashable signature (its parts: :data:`SIGNATURE_PARTS`) and,
        per argument, an array's leaf node or any other argument's value."""
        if kwargs:
            items, kwnames, static = self.items(args, kwargs)
        else:
            items, kwnames, static = args, (), self._static_positions
        tokens, values, buffers = [], [], []
        imports = None
        position = -1
        for a in items:
            position += 1
            kind = type(a)
            if position in static:
                who = self.name_of(position, len(args), kwnames)
                tokens.append(("static", hashable(a, who)))
                values.append(a)
                continue
            if kind is float or kind is int:
                tokens.append(kind)
                values.append(a)
                continue
            if kind is not ndarray:
                imports = imports or Imports()
                a = classify(a, self.name_of(position, len(args), kwnames), imports, position)
                if type(a) is tuple:
                    tokens.append(a[0])
                    values.append(a[1])
                    continue
            node = a._node
            if node.inputs or node.realized is not None:
                node = a.compute()._resolved()
            buffer, view = node.attrs
            # the planner asks only whether an address allows 16-byte accesses
            tokens.append((node.dtype, view, buffer.align >= _VECTOR_BYTES, buffer.backend))
            values.append(node)
            buffers.append(buffer)
        aliases = None
        if len(buffers) > 1 and len(set(buffers)) < len(buffers):
            aliases = tuple([buffers.index(b) for b in buffers])
        backend = buffers[0].backend if buffers else get_backend()
        if imports is not None:
            imports.check_disjoint(buffers)
        key = (backend.device_key, codegen_settings(), len(args), kwnames, tuple(tokens),
               aliases)
        return key, values, imports

    def _trace(self, key, values) -> _Entry:
        leaves = {p: v for p, v in enumerate(values) if isinstance(v, graph.Node)}
        backends = {graph.leaf_view(leaf)[0].backend for leaf in leaves.values()}
        if len(backends) > 1:
            first, second = sorted(backends, key=lambda b: str(b.device))[:2]
            raise mixed_devices(f"fuse: {self.__qualname__}", first, second)
        backend = backends.pop() if backends else get_backend()
        why = describe_change(self, self._last_key, key)
        tracer, result = traced_call(self, backend, leaves, values, key, why)
        entry = _Entry(tracer.program(result, {}), backend, tracer, why, key)
        if len(self._entries) >= _MAX_SIGNATURES:
            self._entries.clear()
        self._entries[key] = entry
        self._last_key = key
        return entry


class _Repeat:
    """The last call's arguments, as what the next call must repeat to have the same signature
    without building it: the very same leaf node of each array (a node is immutable: its dtype,
    view, buffer and alignment are the signature's), the same type of each Python scalar (its
    value is a parameter), and no setting changed since. An optimizer loop passes the same arrays
    at every step, so a cached call costs identity checks instead of a signature and its hash."""

    __slots__ = ("entry", "expect", "generation")

    def __init__(self, entry: _Entry, expect: tuple, generation: int):
        self.entry, self.expect, self.generation = entry, expect, generation

    @classmethod
    def of(cls, entry: _Entry, args: tuple, values: list) -> _Repeat | None:
        expect = []
        for a, value in zip(args, values):
            kind = type(a)
            if kind is float or kind is int:
                expect.append(kind)
            elif kind is ndarray and a._node is value:   # an array that was not pending
                expect.append(value)
            else:   # static arguments and anything converted: only the full signature says
                return None
        if all(type(e) is type for e in expect):  # no array: the active backend is the key's
            return None
        return cls(entry, tuple(expect), config.generation())

    def values_of(self, args: tuple) -> list | None:
        """The values of a call repeating these arguments, or None."""
        expect = self.expect
        if len(args) != len(expect) or config.generation() != self.generation:
            return None
        values = list(args)
        for k, want in enumerate(expect):
            a = args[k]
            if type(want) is type:
                if type(a) is not want:
                    return None
            elif type(a) is not ndarray or a._node is not want or want.realized is not None:
                return None
            else:
                values[k] = want
        return values


class _Entry:
    """One signature's program, compiled, with a generated argument packer per launch."""

    def __init__(self, program: trace.Program, backend, tracer: trace.Tracer, why: str, key):
        self.program, self.backend, self.why, self.key = program, backend, why, key
        roots = {tracer.root_of(p): p for p in sorted(tracer.placeholders, reverse=True)}
        self.written = tuple(roots[r] for r in program.written)
        # per written buffer, the positions of every argument viewing it
        self.writes_through = tuple(tuple(p for p in sorted(tracer.placeholders)
                                          if tracer.root_of(p) == r) for r in program.written)
        # per output: dtype, view as graph.leaf makes it, bytes
        self.outputs = [(dt, (tuple(shape), layout.contiguous_strides(tuple(shape)), 0),
                         layout.size_of(shape) * dt.itemsize) for dt, shape in program.outputs]
        self.consts = {s[1] for _, sources in program.launches for s in sources
                       if s[0] == "const"}
        # the most common result, one new array, is made without going through _item
        self.single = self.outputs[0] if program.items == ("one", ("out", 0)) else None
        self.single_sids: dict[int, int] = {}   # that array's leaf sid by its buffer's alignment
        self.launches = [LaunchRecord.of_plan(backend, realize.kernel_for(plan, backend), plan,
                                              make_packer(plan, sources, roots, backend))
                         for plan, sources in program.launches if plan.size]
        self.hosts = tuple(tracer.hosts)    # per call, before any launch: draws' keys
        self.name = tracer.name

    def run(self, values, args, kwargs):
        backend = self.backend
        if self.hosts:
            values = host_values(values, self.hosts, self.name)
        for p in self.written:
            buffer = values[p].attrs[0]
            if pending.any_registered():
                prepare_write(buffer)
            if buffer in self.consts:
                raise UnsupportedOperationError(
                    "fuse: an argument written in place is also an array the function captures; "
                    "pass that array as an argument instead of capturing it")
        single, temps = self.single, self.program.temps
        if single is not None:
            outs = (new_buffer(backend, single[2]),)
        elif self.outputs:
            outs = [new_buffer(backend, nbytes) for _, _, nbytes in self.outputs]
        else:
            outs = ()
        temps = [new_buffer(backend, nbytes) for nbytes in temps] if temps else ()
        for record in self.launches:
            record.launch(values, outs, temps)
        if single is not None:
            buffer = outs[0]
            sid = self.single_sids.get(buffer.align)
            if sid is None:   # once per alignment (a pool block's is always the same)
                sid = self.single_sids[buffer.align] = graph.leaf_sid(buffer, *single[:2])
            return ndarray(graph.fresh_leaf_with_sid(buffer, single[0], single[1], sid))
        items = self.program.items
        if items is None:
            return None
        if items[0] == "one":
            return self._item(items[1], outs, args, kwargs)
        return tuple(self._item(i, outs, args, kwargs) for i in items[1])

    def _item(self, item, outs, args, kwargs):
        kind, k = item
        if kind == "arg":
            return args[k] if k < len(args) else kwargs[self.key[3][k - len(args)]]
        dt, view, _ = self.outputs[k]
        return ndarray(graph.fresh_leaf(outs[k], dt, view))
