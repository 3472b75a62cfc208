"""The expression graph: immutable, hash-consed nodes with structural sha256 keys.

A node is a leaf (a view of a buffer), a scalar parameter, a cast, or an op from the op table. Each
carries its result dtype and shape (NumPy broadcasting, right-aligned) and a Merkle key: sha256 over
its kind, attributes and its inputs' keys — never ``id()`` or ``hash()``. Building the same op on
the
same inputs twice returns the same node, so a shared subexpression is one node and is computed once.

Leaves are keyed by their buffer's ``uid`` and view; scalars by a fresh ``uid`` each, so two scalars
are never merged and a scalar's *value* is not part of any key (it is a kernel parameter). The
kernel's structure key is a canonical renumbering made by :mod:`plan`, not these keys.
"""

from __future__ import annotations

import hashlib
import itertools
import weakref

import numpy as np

from . import layout

_uids = itertools.count(1)
_serials = itertools.count(1)
# identity → weak reference to the node. A plain dict of plain weak references, swept of dead
# entries whenever it doubles: WeakValueDictionary costs ~2 µs a node, on every operator call.
_interned: dict[tuple, weakref.ref] = {}
_sweep_at = 4096
_DTYPE_TYPES = frozenset(type(np.dtype(c)) for c in "?bhilqBHILQefd")


def new_uid() -> int:
    return next(_uids)


class Node:
    """One immutable graph node. Build with the constructors below, never directly."""

    __slots__ = ("kind", "dtype", "shape", "inputs", "attrs", "serial", "_key", "count",
                 "buffers", "realized", "__weakref__")

    kind: str
    dtype: np.dtype
    shape: tuple[int, ...]
    inputs: tuple[Node, ...]
    attrs: tuple
    serial: int                     # unique per node in this process (interning, never persisted)
    count: int                      # an upper bound on the distinct nodes under it: count_nodes
    buffers: frozenset              # the buffers this graph reads
    realized: Node | None           # set by the runtime once computed: the leaf holding the result

    @property
    def key(self) -> str:
        """Structural sha256 of this node (kind, dtype, shape, attributes, inputs' keys)."""
        return self._key if self._key is not None else _sha256_key(self)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_leaf(self) -> bool:
        return self.kind == "leaf"

    def __repr__(self) -> str:
        return f"<Node {self.kind} {self.label()} {self.dtype} {self.shape}>"

    def label(self) -> str:
        if self.kind == "op":
            return self.attrs[0]
        if self.kind == "cast":
            return f"astype({self.dtype})"
        if self.kind == "scalar":
            return repr(self.attrs[1])
        return f"buffer{self.attrs[0].uid}"


def _make(kind: str, dtype: np.dtype, shape: tuple, inputs: tuple, attrs: tuple,
          key_attrs: tuple) -> Node:
    # Interning is keyed by the inputs' serials, not their sha256 keys: an interned node holds its
    # inputs, so while an entry lives its inputs' serials name them uniquely. The sha256 key is
    # computed on first use (plan, display), off the hot path of building an expression.
    if len(inputs) == 2:  # most ops: no comprehension (a frame of its own before 3.12)
        a, b = inputs
        ident = (kind, dtype, shape, key_attrs, (a.serial, b.serial))
    else:
        ident = (kind, dtype, shape, key_attrs, tuple([i.serial for i in inputs]))
    ref = _interned.get(ident)
    if ref is not None:
        found = ref()
        if found is not None:
            return found
    return _intern(ident, kind, dtype, shape, inputs, attrs)


def _intern(ident: tuple, kind: str, dtype: np.dtype, shape: tuple, inputs: tuple,
            attrs: tuple) -> Node:
    """A new node, interned under ``ident`` (which no live node holds)."""
    node = Node()
    node.kind, node.dtype, node.shape, node.inputs, node.attrs = kind, dtype, shape, inputs, attrs
    node.serial = next(_serials)
    node._key = None
    if len(inputs) == 2:
        a, b = inputs
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
    elif inputs:
        node.count = 1 + sum([i.count for i in inputs])
        buffers = inputs[0].buffers
        for i in inputs[1:]:
            if not i.buffers <= buffers:
                buffers = buffers | i.buffers
        node.buffers = buffers
    else:
        node.count = 1
        node.buffers = frozenset()
    node.realized = None
    _interned[ident] = weakref.ref(node)
    if len(_interned) > _sweep_at:
        _sweep()
    return node


def _sweep() -> None:
    # Threads build nodes (and sweep) at once: iterate a copy (one C call, no thread switch
    # inside), and remove an entry only while it still holds the dead reference.
    global _sweep_at
    for ident, ref in _interned.copy().items():
        if ref() is None and _interned.get(ident) is ref:
            _interned.pop(ident, None)
    _sweep_at = max(4096, 2 * len(_interned))


def _text_attrs(node: Node) -> tuple:
    """The attributes a node's sha256 key covers, as text-stable values."""
    if node.kind == "leaf":
        return (node.attrs[0].uid, node.attrs[1])
    if node.kind == "scalar":
        return (node.attrs[0],)
    if node.kind == "op":
        return (node.attrs[0], tuple(d.str for d in node.attrs[1]))
    return ()


def _sha256_key(node: Node) -> str:
    """Merkle sha256 of ``node``: inputs first, iteratively (a deep chain must not recurse)."""
    stack = [node]
    while stack:
        n = stack[-1]
        pending = [i for i in n.inputs if i._key is None]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        if n._key is None:
            text = repr((n.kind, n.dtype.str, n.shape, _text_attrs(n),
                         tuple(i._key for i in n.inputs)))
            n._key = hashlib.sha256(text.encode()).hexdigest()
    return node._key


def leaf(buffer, dtype: np.dtype, shape: tuple, strides: tuple, offset: int) -> Node:
    """A view of ``buffer`` (an object with a ``uid``): element strides and element offset."""
    view = (tuple(shape), tuple(strides), int(offset))
    dtype = np.dtype(dtype)
    ident = ("leaf", dtype, view[0], (buffer.uid, view), ())
    ref = _interned.get(ident)
    node = ref() if ref is not None else None
    if node is None:
        ref = getattr(buffer, "fresh", None)
        node = ref() if ref is not None else None
        if node is not None and node.dtype == dtype and node.attrs[1] == view:
            _interned[ident] = ref          # the fresh leaf's view: from now on found here
        else:
            node = _intern(ident, "leaf", dtype, view[0], (), (buffer, view))
            node.buffers = frozenset((buffer,))
    return node


def fresh_leaf(buffer, dtype: np.dtype, view: tuple) -> Node:
    """:func:`leaf` of a ``Buffer`` just allocated, which no node can view yet: ``dtype`` a NumPy
    dtype and ``view`` the ``(shape, strides, offset)`` tuple of Python ints that ``leaf`` makes
    (a fused call's new outputs, an evaluation's result: the hot path of every new array).

    The node is not interned: most results are never viewed again, and interning (a key of
    nested tuples, hashed, and an entry to sweep once dead) cost more than the node. The buffer
    keeps a weak reference to it instead, where :func:`leaf` finds it, so a view of the whole
    result (``r[...]``) is still this very node. Call it at most once per buffer.
    """
    node = Node()
    node.kind = "leaf"
    node.dtype = dtype
    node.shape = view[0]
    node.inputs = ()
    node.attrs = (buffer, view)
    node.serial = next(_serials)
    node._key = None
    node.count = 1
    node.buffers = frozenset((buffer,))
    node.realized = None
    buffer.fresh = weakref.ref(node)
    return node


def scalar(value, dtype: np.dtype) -> Node:
    """A scalar kernel parameter of ``dtype``; each call makes a distinct parameter."""
    # Never merged with another scalar, so never interned.
    if type(dtype) not in _DTYPE_TYPES:
        dtype = np.dtype(dtype)
    node = Node()
    node.kind, node.dtype, node.shape, node.inputs = "scalar", dtype, (), ()
    node.attrs = (next(_uids), value)
    node.serial = next(_serials)
    node._key, node.count, node.buffers, node.realized = None, 1, frozenset(), None
    return node


def cast(node: Node, dtype: np.dtype) -> Node:
    dtype = np.dtype(dtype)
    if node.dtype == dtype:
        return node
    return _make("cast", dtype, node.shape, (node,), (), ())


def op(name: str, inputs: tuple[Node, ...], loop: tuple[np.dtype, ...]) -> Node:
    """Op ``name`` on ``inputs`` with NumPy loop dtypes ``loop`` = (in..., out)."""
    for d in loop:
        if type(d) not in _DTYPE_TYPES:
            loop = tuple(np.dtype(d) for d in loop)
            break
    return op_of(inputs, (name, tuple(loop)))


def op_of(inputs: tuple[Node, ...], attrs: tuple) -> Node:
    """:func:`op` with ``attrs`` = ``(name, loop)`` as :func:`op` makes it: a tuple of NumPy
    dtypes (the operator path keeps one per op and operand types, so nothing is converted)."""
    inputs = tuple(inputs)
    shape = ()
    for i in inputs:  # the common cases without broadcasting: equal shapes, or 0-d scalars
        if i.shape and i.shape != shape:
            if shape:
                shape = layout.broadcast_shapes(*[i.shape for i in inputs])
                break
            shape = i.shape
    return _make("op", attrs[1][-1], shape, inputs, attrs, attrs)


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
        vshape, vstrides, voffset = fn((shape, strides, offset))
        return leaf(buffer, root.dtype, vshape, vstrides, voffset)
    memo: dict[tuple[int, tuple], Node] = {}

    def visit(n: Node, shape: tuple) -> Node:
        n = n.realized if n.realized is not None else n
        found = memo.get((n.serial, shape))
        if found is not None:
            return found
        if n.kind == "scalar":
            result = n
        elif n.kind == "leaf":
            buffer, lshape, lstrides, offset = leaf_view(n)
            bstrides = layout.broadcast_strides(lshape, lstrides, shape)
            vshape, vstrides, voffset = fn((shape, bstrides, offset))
            result = leaf(buffer, n.dtype, vshape, vstrides, voffset)
        else:
            inputs = tuple(visit(i, shape) for i in n.inputs)
            result = (cast(inputs[0], n.dtype) if n.kind == "cast"
                      else op(n.attrs[0], inputs, n.attrs[1]))
        memo[(n.serial, shape)] = result
        return result

    return visit(node, node.shape)


def count_nodes(node: Node, limit: int | None = None) -> int:
    """The distinct nodes of ``node``'s graph, itself included; once past ``limit``, any number
    past it (the walk stops there).

    ``node.count`` is built as one plus the inputs' counts (one input's alone where the other is
    it or one of its inputs), so it counts a shared node once per use: ``x = sin(x) + cos(x)``
    doubles it per step for three new nodes. Cheap, and an upper bound. The node limit calls
    this only once that bound passes the limit; an exact count is stored back on the node, so
    nodes built on it start their sums from it. Results remembered in ``realized`` are not
    followed: a write can drop them (``runtime.forget_results_reading``), and the stored count
    must stay an upper bound after that.

    The walk visits at most ``limit + 1`` nodes. While a graph's distinct nodes stay under the
    limit but its inputs' counts add up past it (two inputs sharing most of their graphs), each
    new node built on it walks again: at worst one walk of the limit's size per op (~30 µs at
    256), until the graph evaluates.
    """
    seen = {node.serial}            # serials: interned nodes are equal exactly when identical
    stack = [node]
    while stack:
        for i in stack.pop().inputs:
            if i.serial not in seen:
                seen.add(i.serial)
                if i.inputs:
                    stack.append(i)
        if limit is not None and len(seen) > limit:
            return len(seen)
    node.count = len(seen)
    return node.count


def walk(roots) -> list[Node]:
    """Every node reachable from ``roots``, inputs before users, each once (deterministic)."""
    order: list[Node] = []
    seen: set[int] = set()          # serials: interned nodes are equal exactly when identical
    stack: list = list(roots)[::-1]
    while stack:
        n = stack.pop()
        if type(n) is tuple:        # (node,): its inputs are all in order now
            n = n[0]
            if n.serial not in seen:
                seen.add(n.serial)
                order.append(n)
            continue
        n = n.realized or n
        if n.serial in seen:
            continue
        if not n.inputs:
            seen.add(n.serial)
            order.append(n)
            continue
        stack.append((n,))
        stack.extend(n.inputs[::-1])
    return order
