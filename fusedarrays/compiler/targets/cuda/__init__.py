"""The cuda target: ``@cuda.jit`` kernels (also run by the simulator), a grid of blocks
walking each plan's schedule.

Pure text, no numba. ``RENDERERS``: plan kind → the source of that plan's kernel.
"""

from __future__ import annotations

from ...codegen import render_kernel
from .compact import render_compact
from .foreach import render_across, render_foreach, render_tensor_fold
from .product import render_product
from .reduce import render_reduce
from .rows import render_rows
from .scan import render_scan

TARGET = "cuda"

RENDERERS = {
    "kernel": lambda plan: render_kernel(plan, TARGET),
    "reduce": render_reduce,
    "rows": render_rows,
    "scan": render_scan,
    "product": render_product,
    "compact": render_compact,
    "foreach": render_foreach,
    "across": render_across,
    "tensor_fold": render_tensor_fold,
}
