"""The scans' table: cumulative sums and products along one axis, beside the reductions'.

A scan row names the scan, its NumPy reference, the reduction whose identity and result-dtype
rule it shares (``cumulative_sum`` widens small integers as ``sum`` does), and the expression
combining an earlier running value ``{a}`` with a later one ``{b}``. A scan is a graph node
(:func:`scan_node`: kind ``scan``, attrs ``(name, axis, include_initial)``, its dtype the
result's); the planner cuts the graph there (``compiler/planner.py``), as at a reduction.
The API (``api/scans.py``), the code generator (``compiler/scan_codegen.py``) and the tests
iterate this table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import graph
from .dtypes import ROUNDED, kind
from .reductions import identity


@dataclass(frozen=True)
class Scan:
    name: str
    numpy: str          # NumPy's function of the same result (np.<numpy>, flattening axis=None)
    reduction: str      # the reduction row whose identity and dtype rule the scan shares
    op: str             # the running value after {b}, given the one before it, {a}
    doc: str


SCANS: dict[str, Scan] = {s.name: s for s in (
    Scan("cumulative_sum", "cumsum", "sum", "{a} + {b}",
         "Cumulative sum of the elements along an axis."),
    Scan("cumulative_prod", "cumprod", "prod", "{a} * {b}",
         "Cumulative product of the elements along an axis."),
)}


def accumulator_code(value_code: str) -> str:
    """The running value's type code: float16 runs in float32 and each result is rounded once
    (NumPy rounds the running float16 value at every step: a float16 cumsum of ones stops at
    2048, this one does not); everything else runs in its own type, so on cpu a float32 or
    float64 scan is NumPy's sequential loop, bit for bit."""
    return "f32" if value_code in ROUNDED else value_code


def start_value(name: str, dtype: np.dtype):
    """The running value before the first element (a Python value). A float sum starts from
    -0.0, the one addend that leaves every value as it is (``0.0 + -0.0`` is ``+0.0``), so a
    row starting with -0.0 keeps its sign as NumPy's does."""
    start = identity(SCANS[name].reduction, dtype)
    return -0.0 if kind(dtype) == "f" and start == 0 else start


def initial_value(name: str, dtype: np.dtype):
    """The first element of an ``include_initial`` result: the identity (a sum's is +0)."""
    return identity(SCANS[name].reduction, dtype)


def scan_node(name: str, node: graph.Node, axis: int, include_initial: bool,
              dtype: np.dtype) -> graph.Node:
    """The graph node of scan ``name`` of ``node`` along ``axis`` (non-negative), giving
    ``dtype`` (``node`` already of it: the API casts first). Its params are its input's, its
    sid adds the scan's name, axis and ``include_initial`` to its input's; its shape is the
    input's, one longer along ``axis`` with the initial element."""
    dtype = np.dtype(dtype)
    shape = tuple(e + (k == axis and include_initial) for k, e in enumerate(node.shape))
    attrs = (name, int(axis), bool(include_initial))
    scan = graph._new("scan", dtype, shape, (node,), attrs)
    scan.params = node.params if node.params is not None else {node: 0}
    scan.sid = graph._sid(("scan", *attrs, dtype, node.sid))
    scan.count = 1 + node.count
    scan.buffers = node.buffers
    return scan
