"""The cuda target: ``@cuda.jit`` kernels (also run by the simulator), a grid of blocks
walking each plan's schedule.

Pure text, no numba. ``RENDERERS``: plan kind → the source of that plan's kernel.
"""

from __future__ import annotations

from ..codegen import render_kernel
from ..compact import render_compact
from ..foreach_codegen import render_across_kernel, render_foreach_kernel
from ..product_codegen import render_product_kernel
from ..reduction_codegen import render_reduce_kernel
from ..rowfusion import render_rows_kernel
from ..scan_codegen import render_scan_kernel

TARGET = "cuda"

RENDERERS = {
    "kernel": lambda plan: render_kernel(plan, TARGET),
    "reduce": lambda plan: render_reduce_kernel(plan, TARGET),
    "rows": lambda plan: render_rows_kernel(plan, TARGET),
    "scan": lambda plan: render_scan_kernel(plan, TARGET),
    "product": lambda plan: render_product_kernel(plan, TARGET),
    "compact": lambda plan: render_compact(plan, TARGET),
    "foreach": lambda plan: render_foreach_kernel(plan, TARGET),
    "across": lambda plan: render_across_kernel(plan, TARGET),
}
