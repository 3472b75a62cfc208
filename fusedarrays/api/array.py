"""The lazy ``fa.ndarray``: operators from the op table, views as metadata, evaluation points.

An array wraps one graph node. Operators, ``np.<ufunc>(x)`` and the NumPy functions of
``npfunctions.IMPLEMENTED`` (``np.where(c, x, y)``; any other raises) build new nodes (nothing
runs); views (``reshape``, ``.T``, basic indexing, ``broadcast_to`` …) transform the leaves under
a node and never cut a fusion. Evaluation happens on ``.compute()``, ``fa.compute``, ``.get()``,
``np.asarray``, ``float/int/bool``, printing values, past the node limit, and before an in-place
write into a buffer that a pending array still reads. A view of an array shares its memory once
computed, as in NumPy.
"""

from __future__ import annotations

import threading
import warnings
import weakref

import numpy as np

from .. import config
from ..errors import AmbiguousTruthValueError
from ..ir import dtypes, graph, layout
from ..ir.native import ArrayBase, fastgraph
from ..runtime import indexflags, realize
from ..runtime.backend import (
    Backend,
    Buffer,
    buffer_from_host,
    get_backend,
)
from ..runtime.capture import capturing, refuse_host_read
from ..runtime.records import profiling
from . import pending


class _Tracing(threading.local):
    """fuse's tracer (fusedarrays/fuse/trace.py) while this thread traces a function, else None:
    writes into its placeholders are recorded instead of run, and evaluating a traced value
    raises. One per thread: another thread's arrays, meanwhile, are not the trace's."""

    tracer = None


_tracing = _Tracing()


def _no_host_value_while_tracing(arrays: tuple, what: str) -> None:
    """Raise if this thread is tracing ``arrays`` (they have no host value); else nothing."""
    tracer = _tracing.tracer
    if tracer is not None:
        tracer.check_compute(arrays, what)


class ScalarParam:
    """Base of scalars whose value comes per call (fuse's traced scalars). Ops type one like its
    ``example`` value (weak for a Python int or float); its graph node holds the object itself."""

    __slots__ = ()


class ndarray(ArrayBase):
    """A lazy n-dimensional array on the active backend."""

    __slots__ = ()      # the fields are ArrayBase's (C members where the extension is built)
    __array_priority__ = 100

    def __init__(self, node: graph.Node, view_of: tuple | None = None):
        self._node = node
        self._view_of = view_of          # (base array, view function) while this is a view
        # views by id: arrays are unhashable (``__hash__ = None``, as NumPy's), so no WeakSet
        self._views: weakref.WeakValueDictionary | None = None
        if node.kind != "leaf":
            pending.register(self)
        elif view_of is None or _tracing.tracer is None:
            # A view holding memory (of a base holding memory) is never pending, so its base
            # never needs to settle it (_settle); only fuse's tracer moves such views to a new
            # version of their buffer (trace._move_views), so only it needs them registered.
            return
        if view_of is not None:
            base = view_of[0]
            if base._views is None:
                base._views = weakref.WeakValueDictionary()
            base._views[id(self)] = self

    # -- attributes -------------------------------------------------------------------------
    shape = property(lambda self: self._node.shape, doc="Tuple of extents.")
    dtype = property(lambda self: self._node.dtype, doc="NumPy dtype of the elements.")
    ndim = property(lambda self: len(self._node.shape))
    size = property(lambda self: layout.size_of(self._node.shape))
    itemsize = property(lambda self: self._node.dtype.itemsize)
    nbytes = property(lambda self: self.size * self._node.dtype.itemsize)
    T = property(lambda self: self.transpose())

    @property
    def pending(self) -> bool:
        """True while this array is an unevaluated expression."""
        return not self._resolved().is_leaf

    def _resolved(self) -> graph.Node:
        node = self._node.realized or self._node
        self._node = node
        return node

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # -- evaluation -------------------------------------------------------------------------
    def compute(self) -> ndarray:
        """Evaluate (one kernel launch if pending) and return ``self``, now holding memory."""
        if profiling[0] is not None and profiling[0].outside():
            return profiling[0].evaluate("x.compute()", self.compute)   # timed whole
        node = self._node
        if (node.realized is None and node.inputs and self._view_of is None
                and self._views is None and _tracing.tracer is None):
            # The common case, kept short (it is on every evaluation's host time): a pending
            # expression that is no view and has none; what compute() does for it, exactly.
            for buffer in node.buffers:
                self._node = realize.compute_one(node, buffer.backend)
                return self
        _no_host_value_while_tracing((self,), ".compute()")
        compute(self)
        return self

    def get(self) -> np.ndarray:
        """A NumPy copy of the values (evaluates first)."""
        _no_host_value_while_tracing((self,), ".get()")
        return self._to_host("x.get()")

    def __array__(self, dtype=None, copy=None):
        # np.asarray(x) and np.array(x) come here (other NumPy functions: __array_function__)
        _no_host_value_while_tracing((self,), "np.asarray() or np.array()")
        host = self._to_host("np.asarray(x)")
        return host if dtype is None else host.astype(dtype)

    def _to_host(self, entry: str) -> np.ndarray:
        """The values on the host, evaluated first (``fa.profile()`` times the evaluation, a
        strided view's copy kernel included, as ``entry``; the copy to the host is no part of
        it)."""
        if capturing[0] is not None:   # inside fa.capture(): the recorded work has not run
            refuse_host_read(entry)
        if profiling[0] is not None and profiling[0].outside():
            view = profiling[0].evaluate(entry, self._contiguous_view)
        else:
            view = self._contiguous_view()
        # an evaluation point: a flagged gather's out-of-range index raises here, once
        indexflags.check(graph.leaf_view(self._node)[0].backend)
        if view is None:
            return np.empty(self.shape, self.dtype)
        buffer, shape, strides, offset = view
        flat = buffer.backend.to_host(buffer.storage, self.dtype, layout.size_of(shape), offset)
        return flat.reshape(shape)

    def _contiguous_view(self) -> tuple | None:
        """Computed, a contiguous ``(buffer, shape, strides, offset)`` of the values (a strided
        view copied by a kernel); None when empty."""
        self.compute()
        node = self._node
        buffer, shape, strides, offset = graph.leaf_view(node)
        if layout.size_of(shape) == 0:
            return None
        if not layout.is_contiguous(shape, strides):
            copied = ndarray(graph.op("copy", (node,), (node.dtype, node.dtype))).compute()
            buffer, shape, strides, offset = graph.leaf_view(copied._node)
        return buffer, shape, strides, offset

    def _host_value(self, what: str):
        """The one element's value, for ``what`` (a conversion such as ``float()``)."""
        _no_host_value_while_tracing((self,), what)
        return self.item()

    def item(self):
        _no_host_value_while_tracing((self,), ".item()")
        if self.size != 1:
            raise ValueError(f"can only convert an array of size 1 to a Python scalar; "
                             f"size is {self.size}")
        return self.get().reshape(()).item()

    def __float__(self):
        return float(self._host_value("float()"))

    def __int__(self):
        return int(self._host_value("int()"))

    def __index__(self):
        if self.dtype.kind not in "iu":
            raise TypeError(f"only integer arrays can be used as an index; dtype is {self.dtype}")
        return int(self._host_value("an index conversion (operator.index, range, a slice)"))

    def __bool__(self):
        _no_host_value_while_tracing((self,), "bool() (an `if`, `while`, `and`, `or` or `not`)")
        if self.size != 1:
            raise AmbiguousTruthValueError(
                f"The truth value of a fusedarrays array with {self.size} elements is ambiguous "
                f"(shape {self.shape}): use fa.where(cond, a, b) for an elementwise choice, or "
                "reduce on the host: bool(x.get().any()), np.all(x.get())")
        return bool(self.item())

    def __str__(self) -> str:
        _no_host_value_while_tracing((self,), "str() or print()")
        return str(self.get())  # printing values evaluates; repr (display.py) never does

    # -- conversions and views ----------------------------------------------------------------
    def astype(self, dtype) -> ndarray:
        """A new array of ``dtype`` (NumPy's unsafe cast: floats truncate toward zero; a complex
        value cast to a real dtype keeps its real part, with NumPy's ``ComplexWarning``)."""
        dt = dtypes.as_dtype(dtype)
        if self.dtype.kind == "c" and dt.kind not in "cb":
            warnings.warn("Casting complex values to real discards the imaginary part",
                          np.exceptions.ComplexWarning, stacklevel=2)
        return _wrap(graph.cast(self._resolved(), dt))

    def copy(self) -> ndarray:
        node = self._resolved()
        return _wrap(graph.op("copy", (node,), (node.dtype, node.dtype)))

    def _view(self, fn) -> ndarray:
        node = self._resolved()
        try:
            return ndarray(graph.transform(node, fn), view_of=(self, fn))
        except layout.NotAView:
            _no_host_value_while_tracing(
                (self,), "a view that needs a copy first (e.g. a reshape of a transposed array)")
            self.compute()
            try:
                return ndarray(graph.transform(self._node, fn), view_of=(self, fn))
            except layout.NotAView:
                # memory the view can't describe (a reshape of transposed or broadcast data):
                # a contiguous copy, as NumPy's reshape makes, which is then no view of self
                copied = self.copy().compute()
                return ndarray(graph.transform(copied._node, fn), view_of=(copied, fn))

    def reshape(self, *shape) -> ndarray:
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self._view(lambda v: layout.reshape(v, shape))

    def transpose(self, *axes) -> ndarray:
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return self._view(lambda v: layout.transpose(v, axes or None))

    def squeeze(self, axis=None) -> ndarray:
        return self._view(lambda v: layout.squeeze(v, axis))

    def ravel(self) -> ndarray:
        return self.reshape(-1)

    def __getitem__(self, key) -> ndarray:
        if type(key) is tuple:
            for k in key:   # slices, None, ints and ... are a view: one type test each
                if type(k) not in _BASIC and isinstance(k, _ADVANCED):
                    return self._take(key)
        elif type(key) not in _BASIC and isinstance(key, _ADVANCED):
            return self._take(key)   # a gather (api/indexing.py); a view otherwise
        return self._view(lambda v: layout.getitem(v, key))

    # -- writes -------------------------------------------------------------------------------
    def __setitem__(self, key, value) -> None:
        if isinstance(key, _ADVANCED) or (
                type(key) is tuple and any(isinstance(k, _ADVANCED) for k in key)):
            self._index_write(key, value)   # masks and index arrays (api/indexing.py)
            return
        target = self._destination(key)
        node = _as_node(value, self.dtype.type)
        runtime_write(target, node)

    def _destination(self, key=()) -> tuple:
        """The (buffer, dtype, shape, strides, offset) that a write to ``self[key]`` stores into."""
        if self._view_of is not None and self.pending:
            base, fn = self._view_of
            base._destination()
            self._node = graph.transform(base._resolved(), fn)
        if self.pending:
            _no_host_value_while_tracing(
                (self,), "a write into an unevaluated result (y = x + 1; y[...] = v; write into "
                "an argument instead)")
            self.compute()
        buffer, shape, strides, offset = graph.leaf_view(self._node)
        shape, strides, offset = layout.getitem((shape, strides, offset), key)
        return buffer, self.dtype, shape, strides, offset

    # Operators, __array_ufunc__ (np.<ufunc>(x)) and __array_function__ (np.where, np.reshape …)
    # are installed by elementwise.py and npfunctions.py, from the op table and IMPLEMENTED.


# Key entries that make an index advanced (a gather or a scatter, api/indexing.py): arrays,
# lists and scalar booleans (NumPy's 0-d masks).
_ADVANCED = (ndarray, np.ndarray, list, bool, np.bool_)
_BASIC = frozenset((slice, type(None), int, type(Ellipsis)))   # never advanced (bool is no int)

def compute_readers(buffer, keep: tuple = ()) -> None:
    """Before ``buffer`` is written: compute the pending arrays that read it (but those in
    ``keep``, whose caller gives them a node that reads the written values instead)."""
    readers = pending.readers(buffer)
    if keep:
        readers = [a for a in readers if all(a is not k for k in keep)]
    if readers:
        compute(*readers)


_max_nodes: list = [None, 0]   # (config generation, MAX_NODES): read once per settings change


def _wrap(node: graph.Node) -> ndarray:
    """A new array over the op node ``node``: ``ndarray(node)``, written out (every operator
    returns one), then the node limit. In C where the extension is built (:mod:`..ir.native`)."""
    array = _new_array(ndarray)
    array._node, array._view_of, array._views = node, None, None
    pending.register(array)
    if node.count > _max_nodes[1] or _max_nodes[0] != config._generation:
        _check_node_limit(node, array)
    return array


_new_array = object.__new__


def _check_node_limit(node: graph.Node, array: ndarray) -> None:
    if _max_nodes[0] != config._generation:
        _max_nodes[:] = [config._generation, config.get("MAX_NODES")]
    limit = _max_nodes[1]
    if node.count > limit and _tracing.tracer is None:
        # The count is an upper bound (a shared node counted per use); only past the limit is
        # the graph walked for the exact number, which the node then keeps.
        if graph.count_nodes(node, limit) > limit:
            array.compute()


if fastgraph is not None:
    fastgraph.configure_arrays(ndarray, _max_nodes, config, _check_node_limit)
    _wrap = fastgraph.wrap  # noqa: F811 - the same function, in C


def _as_node(value, weak_to=None) -> graph.Node:
    """A graph node for an operand: arrays as they are, NumPy data uploaded, scalars as params."""
    if isinstance(value, ndarray):
        return value._resolved()
    if isinstance(value, (bool, int, float, complex, np.generic, ScalarParam)):
        dt = dtypes.scalar_type(value.example if isinstance(value, ScalarParam) else value)
        if isinstance(dt, dtypes.Weak):
            dt = np.dtype(weak_to) if weak_to is not None else dtypes.promote([dt])
        return graph.scalar(value, dt)
    return asarray(value)._resolved()


def runtime_write(target: tuple, node: graph.Node, keep: tuple = ()) -> None:
    """Store ``node`` (broadcast) into ``target``, keeping every pending reader's result (the
    arrays in ``keep`` excepted: api/scatter.py re-points one to the values it writes)."""
    if _tracing.tracer is not None and _tracing.tracer.records(target, node):
        return
    if profiling[0] is not None and profiling[0].outside():
        return profiling[0].evaluate("x[...] = ...", runtime_write, target, node)
    buffer = target[0]
    if pending.any_registered():
        compute_readers(buffer, keep)
    # A graph reads a buffer only through its leaves (its params), so one look at its buffers
    # clears the usual write, whose value never reads its destination.
    node = node.realized or node
    if buffer in node.buffers and realize.reads_through_other_map(node, buffer, target):
        (node,) = realize.compute_nodes([node], buffer.backend)
    if node.shape != target[2]:
        layout.broadcast_strides(node.shape, (0,) * node.ndim, target[2])  # raises if it can't
    realize.run([(node, target)])


def compute(*arrays: ndarray, out=None):
    """Evaluate several arrays together: one kernel launch per distinct shape.

    Returns the arrays (one array if one was given), each now holding memory. With ``out`` (one
    target per array), each array is written into its target instead, which is returned.
    """
    if profiling[0] is not None and profiling[0].outside():
        return profiling[0].evaluate("fa.compute", compute, *arrays, out=out)
    if out is not None:
        return _compute_into(arrays, out)
    _no_host_value_while_tracing(arrays, "fa.compute()")
    backend = _plain_group(arrays)
    if backend is not None:     # the common case, kept short: it is on every evaluation
        for a, leaf in zip(arrays, realize.compute_nodes([a._node for a in arrays], backend)):
            a._node = leaf
        return arrays[0] if len(arrays) == 1 else arrays
    todo = []
    for a in arrays:
        root = a
        while root._view_of is not None and root.pending:
            root = root._view_of[0]
        if root.pending and all(root is not t for t in todo):
            todo.append(root)
    groups: dict[tuple, list[ndarray]] = {}
    for a in todo:
        node = a._resolved()
        groups.setdefault((_backend_of(node), node.shape), []).append(a)
    for (backend, _), group in groups.items():
        realize.compute_nodes([a._node for a in group], backend)
        for a in group:
            _settle(a)
    for a in arrays:
        _settle(a)
    return arrays[0] if len(arrays) == 1 else arrays


def _plain_group(arrays: tuple) -> Backend | None:
    """The backend of ``arrays`` where they are distinct pending expressions of one shape on one
    backend, none a view or viewed (what :func:`compute` then does is one launch and nothing
    to settle); else None."""
    shape = backend = None
    for k, a in enumerate(arrays):
        node = a._node
        if (type(a) is not ndarray or a._view_of is not None or a._views is not None
                or node.realized is not None or not node.inputs
                or any(a is b for b in arrays[:k])):
            return None
        mine = _backend_of(node)
        if k == 0:
            shape, backend = node.shape, mine
        elif node.shape != shape or mine is not backend:
            return None
    return backend


def _compute_into(arrays: tuple, out):
    """``fa.compute(*arrays, out=targets)``: each array stored into its target (a
    ``fa.ndarray``, or on the GPU any CUDA array, written in place through a zero-copy import;
    a NumPy target gets a copy of the result), as ``target[...] = array``: a target that another
    array of the call reads is read before it is written."""
    targets = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if len(targets) != len(arrays):
        raise ValueError(f"fa.compute: {len(arrays)} arrays and {len(targets)} out targets; "
                         "give one target per array")
    _no_host_value_while_tracing(arrays, "fa.compute(out=...)")
    for a, target in zip(arrays, targets):
        if tuple(np.shape(target)) != a.shape:
            raise ValueError(f"fa.compute: out target of shape {np.shape(target)} for an "
                             f"array of shape {a.shape}")
        if isinstance(target, np.ndarray):
            np.copyto(target, a.get(), casting="same_kind")
        else:
            asarray(target)[...] = a
    return targets[0] if len(targets) == 1 else targets


def _settle(array: ndarray) -> None:
    """After ``array``'s node was computed: it and its pending views now read its memory."""
    node = array._resolved()
    if not node.is_leaf and array._view_of is not None:
        base, fn = array._view_of
        _settle(base)
        if not base.pending:
            array._node = graph.transform(base._node, fn)
    if array._views is not None and not array.pending:
        for view in list(array._views.values()):
            if view.pending:
                view._node = graph.transform(array._node, view._view_of[1])
                _settle(view)


def _backend_of(node: graph.Node) -> Backend:
    for buffer in node.buffers:
        return buffer.backend
    return get_backend()


def to_device(x: ndarray, target: Backend) -> ndarray:
    """``x``'s values in new memory of ``target``'s device (``x`` itself where it is there
    already): computed first, a view copied whole on its own device, then copied device to
    device (a peer copy on cuda) in the order of both devices' work."""
    node = x._resolved()
    source = _backend_of(node)
    if target is source:
        return x
    if target.name != source.name:
        raise ValueError(f"to_device: the array is on {source.device} and {target.device} is "
                         f"another backend's device; go through the host (x.get())")
    shape, strides = node.shape, layout.contiguous_strides(node.shape)
    if not node.is_leaf or graph.leaf_view(node)[2:] != (strides, 0):
        node = x.copy().compute()._resolved()   # a contiguous result from offset 0
    buffer = graph.leaf_view(node)[0]
    nbytes = layout.size_of(shape) * node.dtype.itemsize
    storage = target.receive(buffer.storage, source, nbytes)
    return ndarray(graph.leaf(Buffer(storage, nbytes, target), node.dtype, shape, strides, 0))


# -- construction -----------------------------------------------------------------------------
def asarray(obj, dtype=None) -> ndarray:
    """A ``fa.ndarray`` from a NumPy array, a ``fa.ndarray``, a scalar or a sequence, or (zero-copy
    on the GPU) any object with ``__cuda_array_interface__`` or ``__dlpack__``."""
    if isinstance(obj, ndarray):
        return obj if dtype is None or np.dtype(dtype) == obj.dtype else obj.astype(dtype)
    backend = get_backend()
    foreign = hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__")
    if backend.import_array is not None and foreign and not isinstance(obj, np.ndarray):
        # on the device the foreign array lives on, whatever this thread's device scope says
        owner, storage, dt, shape, strides, offset = backend.import_array(obj)
        buffer = Buffer(storage, storage.nbytes, owner)
        array = ndarray(graph.leaf(buffer, dtypes.as_dtype(dt), shape, strides, offset))
        return array if dtype is None else array.astype(dtype)
    host = np.asarray(obj, dtype=dtype)
    dt = dtypes.as_dtype(host.dtype, what="array of dtype")
    buffer = buffer_from_host(backend, host)
    return ndarray(graph.leaf(buffer, dt, host.shape, layout.contiguous_strides(host.shape), 0))
