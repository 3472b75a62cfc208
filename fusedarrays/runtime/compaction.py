"""Launching the mask compaction's kernels (``compiler/compact.py``) on a mask's buffer.

Where it sits: under ``api/compaction.py``, which scans the counts between the count and the
store (a scan kernel of its own) and reads the total, the one value the host needs: the
result's size. The kernels are cached as every kernel is (:func:`.realize.kernel_for`: memory,
then disk); one launch record per backend and kernel, its arguments packed here (a compaction
is no graph).
"""

from __future__ import annotations

import numpy as np

from ..compiler.compact import ROW, CompactPlan, render_compact
from ..ir.dtypes import CODES
from . import realize
from .backend import Buffer
from .launch import LaunchRecord

_I64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)
# (backend, mode, element code) → its launch record
_records: dict[tuple, LaunchRecord] = {}


def rows_of(total: int) -> int:
    """Rows the kernels cut a mask of ``total`` elements into."""
    return -(-total // ROW)


def _record(backend, mode: str, code: str) -> LaunchRecord:
    record = _records.get((backend, mode, code))
    if record is None:
        plan = CompactPlan(mode, code)
        kernel = realize.kernel_for(plan, backend, render_compact)
        record = _records[(backend, mode, code)] = LaunchRecord(backend, kernel, None,
                                                                name=plan.name)
    return record


def count_rows(mask: tuple, counts: Buffer) -> None:
    """Queue each row's count of true elements into ``counts`` (int64, one per row):
    ``mask`` = ``(buffer, element offset, total)`` of contiguous booleans."""
    buffer, offset, total = mask
    backend = buffer.backend
    rows = rows_of(total)
    args = [backend.operand_arg(buffer.storage, _BOOL, offset),
            backend.operand_arg(counts.storage, _I64, 0), total]
    _record(backend, "count", "i64").launch_with(args, rows, CompactPlan.geometry(rows))


def store_indices(mask: tuple, ends: tuple, out: Buffer, dtype: np.dtype,
                  mode: str = "index") -> None:
    """Queue the flat indices of ``mask``'s true elements, in order, into ``out`` (of
    ``dtype``, int32 or int64); with ``mode="rank"``, each element's rank among the true ones
    (0 where false) at its own place. ``ends`` = ``(buffer, element offset)`` of the rows'
    inclusive running counts (int64)."""
    buffer, offset, total = mask
    backend = buffer.backend
    rows = rows_of(total)
    dtype = np.dtype(dtype)
    code = {np.dtype(np.int32): "i32", _I64: "i64"}[dtype]
    args = [backend.operand_arg(buffer.storage, _BOOL, offset),
            backend.operand_arg(ends[0].storage, _I64, ends[1]),
            backend.operand_arg(out.storage, dtype, 0), total]
    _record(backend, mode, code).launch_with(args, rows, CompactPlan.geometry(rows))


def scatter_values(mask: tuple, ends: tuple, values: tuple, target: tuple) -> None:
    """Queue ``target[j] = values[rank of j]`` for each true element ``j`` of ``mask``:
    ``target`` = ``(buffer, element offset, dtype)``, contiguous over the mask's elements, and
    ``values`` = ``(buffer, element offset)``, contiguous, of that dtype."""
    buffer, offset, total = mask
    backend = buffer.backend
    rows = rows_of(total)
    tbuffer, toffset, dtype = target
    args = [backend.operand_arg(buffer.storage, _BOOL, offset),
            backend.operand_arg(ends[0].storage, _I64, ends[1]),
            backend.operand_arg(values[0].storage, dtype, values[1]),
            backend.operand_arg(tbuffer.storage, dtype, toffset), total]
    _record(backend, "scatter", CODES[np.dtype(dtype)]).launch_with(
        args, rows, CompactPlan.geometry(rows))
