"""The cuda target: ``@cuda.jit`` kernels (also run by the simulator), a grid of blocks walking
each plan's schedule.

Pure text, no numba. One module per plan family writes its schedules over the target-free pieces
the generator modules hold (``compiler/codegen.py``'s elements, ``reduction_codegen``'s folds,
…): ``kernel`` (elementwise), ``reduce`` (a thread or a block per output, the block's tree),
``rows`` (a block per row), ``scan``, ``product`` (shared-memory tiles), ``compact`` (a block per
row of a mask), ``foreach`` (multi-tensor: foreach, across, the per-tensor fold). Names the
kernels call (``ld_<t>``, ``cv_<t>``, ``sh_<t>``, ``fa_warp_lanes``, ``cuda.*``) are the cuda
and sim backends' (``cuda/intrinsics.py``, ``cuda/sim.py``). ``RENDERERS``: plan kind → the
source of that plan's kernel; :func:`walk_text`: the walk in words (``fa.explain``); the
policy ``WIDE_SUMS`` (``reduce.py``): float32 sums accumulate in float32.
"""

from __future__ import annotations

from ...product import PRODUCT_THREADS, TILE_K, TILE_M, TILE_N
from .compact import render_compact
from .foreach import render_across, render_foreach, render_tensor_fold
from .kernel import render_kernel
from .product import render_product
from .reduce import WIDE_SUMS as WIDE_SUMS  # the target's policy, as cpu.py's
from .reduce import render_reduce
from .rows import render_rows
from .scan import render_scan

RENDERERS = {
    "kernel": render_kernel,
    "reduce": render_reduce,
    "rows": render_rows,
    "scan": render_scan,
    "product": render_product,
    "compact": render_compact,
    "foreach": render_foreach,
    "across": render_across,
    "tensor_fold": render_tensor_fold,
}

# What each plan kind's walk is here, by its schedule where it has several (fa.explain)
WALKS = {
    "kernel": {
        "flat": "flat: one grid-stride loop over the collapsed elements",
        "rows": "rows: a 2-D grid over rows, no division per element",
        "tiled": "tiled: transposed operands staged through shared-memory tiles",
        "nd": "nd: coordinates by division per element"},
    "reduce": {
        "rows": "rows: a block per output, its threads along the elements, a shared-memory tree",
        "cols": "cols: a thread per output, neighbouring threads reading neighbouring outputs"},
    "scan": {
        "rows": "rows: a block per row, walking it in tiles staged in shared memory, each "
                "thread's chunk scanned in order, the chunks' totals by the block, the running "
                "total carried from tile to tile",
        "cols": "cols: a thread per row, its elements in order"},
    "product": f"tiled: a block of {PRODUCT_THREADS} threads per {TILE_M}x{TILE_N} output tile, "
               f"K in slabs of {TILE_K} staged in shared memory, 4x4 outputs per thread summed "
               "in registers",
    "rows": "a block per row: each reduction a shared-memory tree whose result the block keeps, "
            "then the row's elements",
}


def walk_text(plan) -> str:
    """How ``plan``'s kernel walks its data on this target, in words."""
    walk = WALKS.get(plan.kind, "")
    return walk.get(plan.schedule, plan.schedule) if isinstance(walk, dict) else walk
