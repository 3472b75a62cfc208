"""The expression graph: immutable nodes that carry, from creation, what evaluating them needs.

A node is a leaf (a view of a buffer), a scalar parameter, a cast, an op from the op table, or a
random draw (``fa.random``: a view of a counter-based stream, its seed and key scalar inputs),
a gather, a reduction, a scan or a product (built by ``ir/reductions.py``, ``ir/scans.py``
and ``ir/products.py``),
with its result dtype and shape (NumPy broadcasting, right-aligned). Building a node does its
per-node work once, so that evaluating a graph seen before is a dictionary look-up:

- ``sid``, a small interned integer naming its structure: an op's name and loop dtypes, its
  inputs' sids and where their parameters sit among its own (``params``); a leaf's dtype, view and
  alignment class; a scalar's dtype. Nodes with equal sids compute the same function of their
  ``params``, so one kernel plan serves them all. The sid holds exactly what the planner reads of
  a graph, less the buffers' identities: which leaves share a buffer is the evaluation's part of
  the key (:mod:`..runtime.realize`).
- ``params``, its leaves and scalars in canonical order (a dict, node → position): the first
  input's params, then the new ones of each next input (but for a binary op whose first input
  is a leaf or scalar and whose second is not, ``1.0 - x``: the second's, then the first,
  appended as for ``x - 1.0``; :func:`.params.mirror_param`). Evaluation binds them to the kernel's
  arguments in that order. A leaf or scalar is its own only param (``params`` is None: a dict
  holding the node itself would be a reference cycle, keeping buffers alive until a collection).
  Nodes share one dict where they can (:mod:`.params`: a chain ``a = a * s + t`` appends each
  new scalar in place, where copying made every op O(params)); ``params`` is always exactly the
  node's own, and a dict once handed out by it never changes.
- ``count`` (an upper bound on its distinct nodes, for the node limit) and ``buffers`` (the
  buffers it reads: writes compute pending readers first).

Leaves are interned (one node per buffer, dtype and view), so a view read twice is one param and
one load. Ops are not: building ``a * b`` twice gives two nodes (the kernel's compiler merges the
repeated arithmetic), and a node's remembered result (``realized``) is read only by the arrays
holding that node, never by the graphs built on it, so a write into a result never reaches them.
``key`` (a structural sha256, computed when asked) names a node in text, for display.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from . import layout
from .native import NodeBase, fastgraph
from .nodekeys import digest, sha256_key
from .params import (
    SHARE_FROM,
    Holder,
    append_param,
    merge_node,
    merge_params,
    mirror_param,
    own_params,
)
from .sids import VECTOR_ALIGN as VECTOR_ALIGN
from .sids import _sid, _sids, align_class, attrs_id
from .walks import count_nodes as count_nodes
from .walks import walk as walk

_uids = itertools.count(1)
# (buffer uid, dtype, view) → weak reference to the leaf. A plain dict of plain weak references,
# swept of dead entries whenever it doubles (WeakValueDictionary costs ~2 µs an entry).
_interned: dict[tuple, weakref.ref] = {}
_sweep_at = 4096
_DTYPE_TYPES = frozenset(type(np.dtype(c)) for c in "?bhilqBHILQefd")


# new_uid(): a number naming a buffer or a stand-in for one (a planner's temporary, a traced
# output): leaves are interned by it, so every kind draws from this one counter. The counter's
# own __next__, so that a new buffer (every evaluation makes one) pays no Python frame for it.
new_uid = _uids.__next__


class Node(NodeBase):
    """One immutable graph node. Build with the constructors below, never directly. Its fields
    are :class:`.native.NodeBase`'s (C members where the extension is built)."""

    __slots__ = ()

    kind: str
    dtype: np.dtype
    shape: tuple[int, ...]
    inputs: tuple[Node, ...]
    attrs: tuple
    sid: int                        # interned structure (module docstring)
    _params: dict | None            # params (the property) are its first _nparams entries
    _nparams: int
    _open: list | None              # the token of the right to append to it (ir/params.py)
    count: int                      # an upper bound on the distinct nodes under it: count_nodes
    buffers: frozenset              # the buffers this graph reads
    realized: Node | None           # set once computed: the leaf holding the result

    @property
    def serial(self) -> int:
        """A number naming this node among the live ones (memo keys of walks over a graph, which
        holds its nodes alive): its id, so that building a node draws no counter."""
        return id(self)

    @property
    def key(self) -> str:
        """Structural sha256 of this node (kind, dtype, shape, attributes, inputs' keys)."""
        return self._key if self._key is not None else sha256_key(self)

    @property
    def params(self) -> dict | None:
        """Its leaves and scalars → position, in canonical order (None: a leaf or scalar, its own
        only param). The dict handed out never changes afterwards."""
        params = self._params
        # without a token (ir/params.py) a node's dict is its own params and never grows
        return params if params is None or self._open is None else own_params(self)

    @params.setter
    def params(self, value: dict | None) -> None:
        self._params, self._open = value, None
        self._nparams = 0 if value is None else len(value)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_leaf(self) -> bool:
        return self.kind == "leaf"

    def param_list(self) -> list[Node]:
        """The params in order (a leaf or scalar: itself)."""
        return [self] if self.params is None else list(self.params)

    def __repr__(self) -> str:
        return f"<Node {self.kind} {self.label()} {self.dtype} {self.shape}>"

    def label(self) -> str:
        if self.kind == "op":
            return self.attrs[0]
        if self.kind == "cast":
            return f"astype({self.dtype})"
        if self.kind == "random":
            return f"random.{self.attrs[0]}"
        if self.kind == "gather":
            return "take" if len(self.inputs) == 2 else "take (clamped, flagged)"
        if self.kind == "scalar":
            return repr(self.attrs[1])
        if self.kind == "reduce":
            name, axes, keepdims = self.attrs
            return f"{name}(axis={axes}{', keepdims' if keepdims else ''})"
        if self.kind == "scan":
            name, axis, initial = self.attrs
            return f"{name}(axis={axis}{', include_initial' if initial else ''})"
        if self.kind == "matmul":
            return "matmul"
        return f"buffer{self.attrs[0].uid}"


def _new(kind: str, dtype: np.dtype, shape: tuple, inputs: tuple, attrs: tuple) -> Node:
    node = Node()
    node.kind, node.dtype, node.shape, node.inputs, node.attrs = kind, dtype, shape, inputs, attrs
    node._key = None
    node.realized = None
    return node


def _sweep() -> None:
    # Threads build leaves (and sweep) at once: iterate a copy (one C call, no thread switch
    # inside), and remove an entry only while it still holds the dead reference.
    global _sweep_at
    for ident, ref in _interned.copy().items():
        if ref() is None and _interned.get(ident) is ref:
            _interned.pop(ident, None)
    _sweep_at = max(4096, 2 * len(_interned))


def leaf_sid(buffer, dtype: np.dtype, view: tuple) -> int:
    """The sid of a leaf viewing ``buffer`` as ``dtype`` through ``view``. The buffer's backend
    (its device) is part of it, so a structure over leaves on other devices has another sid: a
    launch record found by sid was built, and checked, for the devices its leaves are on
    (``runtime/realize.py``). Planner stand-ins have no backend."""
    return _sid(("leaf", dtype, view, align_class(buffer.align),
                 getattr(buffer, "backend", None)))


def _leaf_node(buffer, dtype: np.dtype, view: tuple, sid: int | None = None) -> Node:
    node = _new("leaf", dtype, view[0], (), (buffer, view))
    node.sid = sid if sid is not None else leaf_sid(buffer, dtype, view)
    node._params = None
    node.count = 1
    node.buffers = frozenset((buffer,))
    return node


def leaf(buffer, dtype: np.dtype, shape: tuple, strides: tuple, offset: int) -> Node:
    """A view of ``buffer`` (an object with a ``uid``): element strides and element offset."""
    return interned_leaf(buffer, np.dtype(dtype), (tuple(shape), tuple(strides), int(offset)))


def interned_leaf(buffer, dtype: np.dtype, view: tuple) -> Node:
    """:func:`leaf` with ``dtype`` a NumPy dtype and ``view`` a ``(shape, strides, offset)``
    tuple of Python ints (as the layout functions return them): a view of a leaf's hot path."""
    ident = (buffer.uid, dtype, view)
    ref = _interned.get(ident)
    node = ref() if ref is not None else None
    if node is None:
        ref = getattr(buffer, "fresh", None)
        node = ref() if ref is not None else None
        if node is None or node.dtype != dtype or node.attrs[1] != view:
            node = _leaf_node(buffer, dtype, view)
            ref = weakref.ref(node)
        _interned[ident] = ref      # a fresh leaf's view too: from now on found here
        if len(_interned) > _sweep_at:
            _sweep()
    return node


def fresh_leaf(buffer, dtype: np.dtype, view: tuple, sid: int | None = None) -> Node:
    """:func:`leaf` of a ``Buffer`` just allocated, which no node can view yet: ``dtype`` a NumPy
    dtype and ``view`` the ``(shape, strides, offset)`` tuple of Python ints that ``leaf`` makes
    (a fused call's new outputs, an evaluation's result: the hot path of every new array).

    The node is not interned: most results are never viewed again, and interning (a key of
    nested tuples, hashed, and an entry to sweep once dead) cost more than the node. The buffer
    keeps a weak reference to it instead, where :func:`leaf` finds it, so a view of the whole
    result (``r[...]``) is still this very node. Call it at most once per buffer. ``sid``: its
    :func:`leaf_sid` where the caller keeps it.
    """
    node = Node()       # _leaf_node, written out: one per evaluation
    node.kind, node.dtype, node.shape, node.inputs, node.attrs = "leaf", dtype, view[0], (), (
        buffer, view)
    node._key = node.realized = node._params = None
    node.sid = sid if sid is not None else leaf_sid(buffer, dtype, view)
    node.count, node.buffers = 1, frozenset((buffer,))
    buffer.fresh = weakref.ref(node)
    return node


class _Scalar(Node):
    """A scalar node: one per Python scalar in an expression (``x * 2.0`` builds two nodes),
    but equal Python numbers of one dtype are one node (``scalarops.interned_scalar``)."""

    __slots__ = ()
    _key = property(digest)    # computed when asked (display only): nothing stored per scalar


_NO_BUFFERS = frozenset()


# id(dtype) → (sid, dtype): hashing a NumPy dtype costs more than the rest of a scalar node; the
# dtype rides along so its id can't be reused while the entry lives.
_scalar_sids: dict[int, tuple] = {}


def scalar(value, dtype: np.dtype) -> Node:
    """A scalar kernel parameter of ``dtype``; each call makes a distinct parameter."""
    if type(dtype) not in _DTYPE_TYPES:
        dtype = np.dtype(dtype)
    if fastgraph is not None:
        return fastgraph.scalar(value, dtype, scalar_sid(dtype))
    return new_scalar(value, dtype, scalar_sid(dtype))


def new_scalar(value, dtype: np.dtype, sid: int) -> Node:
    """The Python path of a scalar node: ``dtype`` a NumPy dtype, ``sid`` its scalar sid."""
    node = _Scalar()
    node.kind, node.dtype, node.shape, node.inputs = "scalar", dtype, (), ()
    node.attrs = (next(_uids), value)
    node.sid, node.count, node.buffers = sid, 1, _NO_BUFFERS
    node.realized = node._params = node._open = None
    node._nparams = 0
    return node


def scalar_sid(dtype: np.dtype) -> int:
    """The sid of a scalar of ``dtype`` (a NumPy dtype)."""
    found = _scalar_sids.get(id(dtype))
    if found is None:
        found = _scalar_sids[id(dtype)] = (_sid(("scalar", dtype)), dtype)
    return found[0]


def cast(node: Node, dtype: np.dtype) -> Node:
    dtype = np.dtype(dtype)
    if node.dtype == dtype:
        return node
    cast_node = _new("cast", dtype, node.shape, (node,), ())
    _combine(cast_node, (node,), ("cast", dtype))
    return cast_node


def op(name: str, inputs: tuple[Node, ...], loop: tuple[np.dtype, ...]) -> Node:
    """Op ``name`` on ``inputs`` with NumPy loop dtypes ``loop`` = (in..., out)."""
    for d in loop:
        if type(d) not in _DTYPE_TYPES:
            loop = tuple(np.dtype(d) for d in loop)
            break
    attrs = (name, tuple(loop))
    return op_of(tuple(inputs), attrs, attrs_id(attrs))


def op_of(inputs: tuple[Node, ...], attrs: tuple, aid: int) -> Node:
    """:func:`op` with ``attrs`` = ``(name, loop)`` as :func:`op` makes it (a tuple of NumPy
    dtypes) and ``aid`` its :func:`attrs_id`: the operator path keeps both per op and operand
    types, so nothing is converted or hashed but the sid's numbers. One or two inputs are built
    in C where the extension is (the same node: :mod:`.native`)."""
    if fastgraph is not None and len(inputs) <= 2:
        return fastgraph.op_of(inputs, attrs, aid)
    return op_of_python(inputs, attrs, aid)


def op_of_python(inputs: tuple[Node, ...], attrs: tuple, aid: int) -> Node:
    """:func:`op_of`'s Python path, the reference the C one matches."""
    node = Node()
    node.kind, node.dtype, node.inputs, node.attrs = "op", attrs[1][-1], inputs, attrs
    node._key = node.realized = None
    if len(inputs) == 2:    # most ops, written out: this runs for every operator
        a, b = inputs
        sa, sb = a.shape, b.shape
        node.shape = sa if sa == sb or not sb else sb if not sa else layout.broadcast_shapes(sa,
                                                                                              sb)
        pa, pb = a._params, b._params
        if pb is not None and pa is None and a is not b:   # 1.0 - x, y * x: mirrored
            placement = mirror_param(node, b, a)
        elif pb is not None:   # two ops: their params as the property hands them out
            params, placement = merge_node(
                a, pa if pa is None or a._open is None else own_params(a), b,
                pb if b._open is None else own_params(b))
            node._params, node._nparams = params, len(params)
            # a dict of its own, or a's (handed out: never appended to)
            own = params is not a._params
            node._open = [True] if own and len(params) >= SHARE_FROM else None
        elif pa is None:    # two leaves or scalars
            placement = "=" if a is b else None
            node._params = {a: 0} if a is b else {a: 0, b: 1}
            node._nparams, node._open = len(node._params), None
        else:               # an op on a node and a leaf or scalar
            n = a._nparams
            placement = pa.get(b)
            if placement is not None and placement < n:     # b is one of a's: share them
                node._params, node._nparams, node._open = pa, n, a._open
            elif a._open is None:   # a small dict, or one handed out: copied (ir/params.py)
                placement = None
                params = node._params = pa.copy()
                params[b] = n
                node._nparams, node._open = n + 1, [True] if n + 1 >= SHARE_FROM else None
            else:
                placement = None
                append_param(node, a, b)
        structure = (aid, a.sid, b.sid, placement)
        sid = _sids.get(structure)
        node.sid = sid if sid is not None else _sid(structure)
        # The common sharing costs two looks: a square (x * x) and an op on a node and one of
        # its inputs (x + x * x) count what the larger graph counts, plus one.
        if a is b or a in b.inputs:
            node.count = 1 + b.count
        elif b in a.inputs:
            node.count = 1 + a.count
        else:
            node.count = 1 + a.count + b.count
        buffers = a.buffers
        node.buffers = buffers if b.buffers <= buffers else buffers | b.buffers
        return node
    if len(inputs) == 1:    # unary ops (sqrt, exp, -x): _combine's, written out
        a = inputs[0]
        node.shape, node.count, node.buffers = a.shape, 1 + a.count, a.buffers
        if a._params is None:
            node._params, node._nparams, node._open = {a: 0}, 1, None
        else:
            node._params, node._nparams, node._open = a._params, a._nparams, a._open
        structure = (aid, a.sid)
        sid = _sids.get(structure)
        node.sid = sid if sid is not None else _sid(structure)
        return node
    shape = ()
    for i in inputs:  # the common cases without broadcasting: equal shapes, or 0-d scalars
        if i.shape and i.shape != shape:
            if shape:
                shape = layout.broadcast_shapes(*[i.shape for i in inputs])
                break
            shape = i.shape
    node.shape = shape
    _combine(node, inputs, aid)
    return node


def _combine(node: Node, inputs: tuple, head) -> None:
    """An op or cast node's params, sid, count and buffers over any number of inputs."""
    first = inputs[0]
    params = first.params if first._params is not None else {first: 0}
    structure = [head, first.sid]
    buffers = first.buffers
    for other in inputs[1:]:
        params, placement = merge_params(Holder(params), other)
        structure += [other.sid, placement]
        if not other.buffers <= buffers:
            buffers = buffers | other.buffers
    node.params = params
    node.sid = _sid(tuple(structure))
    node.count = 1 + sum([i.count for i in inputs])
    node.buffers = buffers


def random(dist: str, dtype: np.dtype, view: tuple, inputs: tuple[Node, ...]) -> Node:
    """A draw of ``fa.random``: distribution ``dist`` (a ``fa_rand_<dist>`` helper of
    :mod:`..compiler.devicelib`) evaluated at each element's index in the stream.

    ``view`` = ``(shape, strides, offset)`` maps the node's elements to stream indices, as a
    leaf's view maps them to a buffer's (a fresh draw: C-contiguous, offset 0), so views and
    broadcasts of a draw are draws too and never cut a fusion. ``inputs`` are scalar params: the
    seed and the key (then the distribution's own, e.g. ``low`` and ``span``); their values are
    in no key, so a new seed never recompiles. No buffer is read: the numbers never touch memory.
    """
    dtype = np.dtype(dtype)
    view = (tuple(view[0]), tuple(view[1]), int(view[2]))
    node = _new("random", dtype, view[0], tuple(inputs), (dist, view))
    _combine(node, node.inputs, ("random", dist, dtype, view))
    return node


def gather(source: Node, index: Node, extent: int, stride: int, site: Node | None = None) -> Node:
    """A gather (``fa.take``, ``x[idx]``): ``source``'s buffer read at ``index`` along an axis of
    ``extent`` elements ``stride`` apart (a negative index counts from the end).

    ``site`` (an int64 scalar, a third input) makes the gather *flagged*: its index values
    were not checked on the host, so the kernel clamps each into range and records an
    out-of-range one, with the site's number, in the device's error word
    (``runtime/indexflags.py``); the number is a param, so it is in no key.

    ``source`` is a leaf viewing the gathered array without that axis, broadcast over the
    index's axes; ``index`` an integer node. Both are elementwise over the result's shape, so a
    view of a gather is a gather of their views (``transform``). The kernel loads the element at
    the source's own index plus ``index * stride``: a load through an index, no copy.
    """
    shape = layout.broadcast_shapes(source.shape, index.shape)
    attrs = (int(extent), int(stride))
    inputs = (source, index) if site is None else (source, index, site)
    node = _new("gather", source.dtype, shape, inputs, attrs)
    _combine(node, node.inputs, ("gather",) + attrs)
    return node


def leaf_view(node: Node) -> tuple[object, tuple, tuple, int]:
    """(buffer, shape, strides, offset) of a leaf."""
    buffer, (shape, strides, offset) = node.attrs
    return buffer, shape, strides, offset


def transform(node: Node, fn) -> Node:
    """Apply a view ``fn((shape, strides, offset)) -> (shape, strides, offset)`` to every leaf.

    Elementwise ops commute with views once their inputs are broadcast to the op's shape, so a view
    of a pending expression is the same expression over views of its leaves: views never cut a
    fusion. ``fn`` raises :class:`layout.NotAView` where a leaf can't take it (a reshape of
    broadcast data); the caller then computes the node first.
    """
    root = node.realized or node
    if root.kind == "leaf":     # a view of an array holding memory: the usual case, kept short
        buffer, (shape, strides, offset) = root.attrs
        if 1 in shape:          # as visit below: size-1 axes get stride 0
            strides = layout.broadcast_strides(shape, strides, shape)
        view = fn((shape, strides, offset))
        if type(view[2]) is int and type(view[0]) is tuple and type(view[1]) is tuple:
            return interned_leaf(buffer, root.dtype, view)
        return leaf(buffer, root.dtype, *view)
    memo: dict[tuple[int, tuple], Node] = {}

    def visit(n: Node, shape: tuple) -> Node:
        n = n.realized if n.realized is not None else n
        found = memo.get((n.serial, shape))
        if found is not None:
            return found
        if n.kind == "scalar":
            result = n
        elif n.kind == "random":    # a view of a draw: its stream indices through the view
            dist, (dshape, dstrides, doffset) = n.attrs
            bstrides = layout.broadcast_strides(dshape, dstrides, shape)
            result = random(dist, n.dtype, fn((shape, bstrides, doffset)), n.inputs)
        elif n.kind in ("reduce", "scan", "matmul"):   # its leaves' shapes are not the view's
            raise layout.NotAView(f"a view of a pending {n.label()} (computed first)")
        elif n.kind == "leaf":
            buffer, lshape, lstrides, offset = leaf_view(n)
            bstrides = layout.broadcast_strides(lshape, lstrides, shape)
            vshape, vstrides, voffset = fn((shape, bstrides, offset))
            result = leaf(buffer, n.dtype, vshape, vstrides, voffset)
        else:
            inputs = tuple(visit(i, shape) for i in n.inputs)
            if n.kind == "gather":
                result = gather(inputs[0], inputs[1], *n.attrs, *inputs[2:])
            else:
                result = (cast(inputs[0], n.dtype) if n.kind == "cast"
                          else op(n.attrs[0], inputs, n.attrs[1]))
        memo[(n.serial, shape)] = result
        return result

    return visit(node, node.shape)


if fastgraph is not None:
    fastgraph.configure(Node, _Scalar, _sids, _sid, _uids, layout.broadcast_shapes, SHARE_FROM)

# fresh_leaf(buffer, dtype, view, sid) with the sid given (a launch record keeps its result's):
# one C call where the extension is built, on the hot path of every evaluation into a new array
fresh_leaf_with_sid = fresh_leaf if fastgraph is None else fastgraph.fresh_leaf
