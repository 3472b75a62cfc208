"""Launching the mask compaction's kernels (``compiler/compact.py``) on a mask's buffer.

Where it sits: under ``api/compaction.py``, which scans the counts between the count and the
store (a scan kernel of its own) and reads the total, the one value the host needs: the
result's size. The kernels are cached as every kernel is (:func:`.realize.kernel_for`: memory,
then disk); one launch record per backend and kernel, its arguments packed here (a compaction
is no graph).
"""

from __future__ import annotations

import numpy as np

from .. import compiler
from ..ir.dtypes import CODES
from . import realize
from .launch import LaunchRecord

_BOOL = np.dtype(np.bool_)
# (backend, mode, element code) → its launch record
_records: dict[tuple, LaunchRecord] = {}


def rows_of(total: int) -> int:
    """Rows the kernels cut a mask of ``total`` elements into."""
    return -(-total // compiler.ROW)


def _record(backend, mode: str, code: str) -> LaunchRecord:
    record = _records.get((backend, mode, code))
    if record is None:
        plan = compiler.CompactPlan(mode, code)
        kernel = realize.kernel_for(plan, backend)
        record = _records[(backend, mode, code)] = LaunchRecord(backend, kernel, None,
                                                                name=plan.name)
    return record


def launch(mode: str, mask: tuple, *operands: tuple, view: tuple = ()) -> None:
    """Queue ``mode``'s kernel (``compiler/compact.py``) over ``mask`` = ``(buffer, element
    offset, total)`` of contiguous booleans; ``operands`` = ``(buffer, dtype, element offset)``
    each, in :attr:`CompactPlan.operands`' order after the mask: ``count`` the counts (int64,
    one per row); ``index`` and ``rank`` the rows' inclusive running counts (int64) and the
    output (int32 or int64); ``scatter`` the running counts, the values and the array written
    (one dtype; its offset 0, ``view`` its first element and stride). The last operand's dtype
    picks the kernel."""
    buffer, offset, total = mask
    backend = buffer.backend
    rows = rows_of(total)
    args = [backend.operand_arg(buffer.storage, _BOOL, offset)]
    args += [backend.operand_arg(b.storage, np.dtype(d), o) for b, d, o in operands]
    args.append(total)
    args += view
    code = CODES[np.dtype(operands[-1][1])]
    _record(backend, mode, code).launch_with(args, rows, compiler.CompactPlan.geometry_for(rows))
