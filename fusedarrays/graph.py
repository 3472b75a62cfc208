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
_interned: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def new_uid() -> int:
    return next(_uids)


class Node:
    """One immutable graph node. Build with the constructors below, never directly."""

    __slots__ = ("kind", "dtype", "shape", "inputs", "attrs", "key", "count", "buffers",
                 "realized", "__weakref__")

    kind: str
    dtype: np.dtype
    shape: tuple[int, ...]
    inputs: tuple[Node, ...]
    attrs: tuple
    key: str
    count: int                      # nodes in this graph (an upper bound: shared nodes recount)
    buffers: frozenset              # the buffers this graph reads
    realized: Node | None           # set by the runtime once computed: the leaf holding the result

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
    text = repr((kind, str(dtype), shape, key_attrs, tuple(i.key for i in inputs)))
    key = hashlib.sha256(text.encode()).hexdigest()
    found = _interned.get(key)
    if found is not None:
        return found
    node = Node()
    node.kind, node.dtype, node.shape, node.inputs, node.attrs = kind, dtype, shape, inputs, attrs
    node.key = key
    node.count = 1 + sum(i.count for i in inputs)
    node.buffers = frozenset().union(*(i.buffers for i in inputs)) if inputs else frozenset()
    node.realized = None
    _interned[key] = node
    return node


def leaf(buffer, dtype: np.dtype, shape: tuple, strides: tuple, offset: int) -> Node:
    """A view of ``buffer`` (an object with a ``uid``): element strides and element offset."""
    view = (tuple(shape), tuple(strides), int(offset))
    node = _make("leaf", np.dtype(dtype), tuple(shape), (), (buffer, view), (buffer.uid, view))
    if not node.buffers:
        node.buffers = frozenset((buffer,))
    return node


def scalar(value, dtype: np.dtype) -> Node:
    """A scalar kernel parameter of ``dtype``; each call makes a distinct parameter."""
    uid = new_uid()
    return _make("scalar", np.dtype(dtype), (), (), (uid, value), (uid,))


def cast(node: Node, dtype: np.dtype) -> Node:
    dtype = np.dtype(dtype)
    if node.dtype == dtype:
        return node
    return _make("cast", dtype, node.shape, (node,), (), ())


def op(name: str, inputs: tuple[Node, ...], loop: tuple[np.dtype, ...]) -> Node:
    """Op ``name`` on ``inputs`` with NumPy loop dtypes ``loop`` = (in..., out)."""
    shape = layout.broadcast_shapes(*(i.shape for i in inputs))
    loop = tuple(np.dtype(d) for d in loop)
    attrs = (name, loop)
    return _make("op", loop[-1], shape, tuple(inputs), attrs, (name, tuple(map(str, loop))))


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
    memo: dict[tuple[str, tuple], Node] = {}

    def visit(n: Node, shape: tuple) -> Node:
        n = n.realized if n.realized is not None else n
        found = memo.get((n.key, shape))
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
        memo[(n.key, shape)] = result
        return result

    return visit(node, node.shape)


def walk(roots) -> list[Node]:
    """Every node reachable from ``roots``, inputs before users, each once (deterministic)."""
    order: list[Node] = []
    seen: set[str] = set()
    stack = [(r, False) for r in reversed(list(roots))]
    while stack:
        n, expanded = stack.pop()
        n = n.realized or n
        if n.key in seen:
            continue
        if expanded or not n.inputs:
            seen.add(n.key)
            order.append(n)
            continue
        stack.append((n, True))
        stack.extend((i, False) for i in reversed(n.inputs))
    return order
