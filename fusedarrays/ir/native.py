"""The graph's hot path in C, where it was built (``ir/_fastgraph``, from ``ir/fastgraph/*.c``),
else its Python path.

Building a lazy expression costs Python work per op: an operator call, a node with its sid and
params, an array around it. ``_fastgraph`` does an operator on arrays and Python scalars whose
loop was resolved before in one C call (issue 12: per op a fraction of what the Python path
costs), node for node what the Python path builds (``tests/pure/test_native.py``). It is an
optional extension: where it was not built (no C compiler at install) or
``FUSEDARRAYS_NATIVE=0``, the same classes come from Python below and every op takes the Python
path, which stays the reference.

``NodeBase`` and ``ArrayBase`` hold the fields of ``ir/graph.Node`` and ``api/array.ndarray``
(C members, or ``__slots__`` here); the classes themselves, with their methods, are defined
on them in those modules. Nodes and arrays made in C are untracked by the cyclic collector: a
graph is a DAG, so the collector has nothing to find in them.
"""

from __future__ import annotations

from .. import config

NODE_FIELDS = ("kind", "dtype", "shape", "inputs", "attrs", "sid", "_params", "_nparams",
               "_open", "_key", "count", "buffers", "realized", "__weakref__")
ARRAY_FIELDS = ("_node", "_view_of", "_views", "__weakref__")

fastgraph = None
if config.get("NATIVE"):
    try:
        from . import _fastgraph as fastgraph
    except ImportError:     # not built: the Python path (python -m fusedarrays says so)
        fastgraph = None

NATIVE = fastgraph is not None

if fastgraph is not None:
    NodeBase = fastgraph.NodeBase
    ArrayBase = fastgraph.ArrayBase
else:
    class NodeBase:
        """The fields of a graph node (``ir/graph.Node``)."""

        __slots__ = NODE_FIELDS

    class ArrayBase:
        """The fields of a lazy array (``api/array.ndarray``)."""

        __slots__ = ARRAY_FIELDS
