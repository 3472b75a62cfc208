"""The cuda target: ``@cuda.jit`` kernels (also run by the simulator), a grid of blocks
walking each plan's schedule.

Pure text, no numba. ``RENDERERS``: plan kind → the source of that plan's kernel.
"""

from __future__ import annotations

from ...codegen import render_kernel
from ...reduction_codegen import render_reduce_kernel
from ...rowfusion import render_rows_kernel
from .compact import render_compact
from .foreach import render_across, render_foreach, render_tensor_fold
from .product import render_product
from .scan import render_scan

TARGET = "cuda"

RENDERERS = {
    "kernel": lambda plan: render_kernel(plan, TARGET),
    "reduce": lambda plan: render_reduce_kernel(plan, TARGET),
    "rows": lambda plan: render_rows_kernel(plan, TARGET),
    "scan": render_scan,
    "product": render_product,
    "compact": render_compact,
    "foreach": render_foreach,
    "across": render_across,
    "tensor_fold": render_tensor_fold,
}
