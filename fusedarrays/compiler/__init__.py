"""The compiler's front door: pending outputs → a :class:`Program` of plans → each plan's source.

Everything outside ``compiler/`` calls the compiler through this module (and the plan protocol,
``compiler/protocol.py``, re-exported here); ``tests/pure/test_layering.py`` holds it. The
stages, in the order an evaluation meets them:

- :func:`plan_evaluation` decides, once for every caller, how outputs are computed: one
  elementwise kernel (``compiler/plan.py``) where the graph has nothing to cut at, else the
  kernels the general planner (``compiler/planner.py``) cuts it into at its reductions, scans
  and products, with the temporaries between them.
- :func:`render` gives a plan's source for a target, from the target's table by the plan's
  ``kind`` (``compiler/protocol.py``); :func:`walk_text` says in words how it walks there.
  Each target is one module (``compiler/targets/``) covering every plan kind.
- :func:`helpers` gives the device functions compiled beside every kernel.

Importing this module is cheap: the planners and code generators are imported on first use
(``import fusedarrays`` pays for none of them), and so are the names below that live in them
(:data:`_LAZY`: the multi-tensor planners of ``fa.fuse``'s foreach, the compaction kernels',
the products' tile sizes, the cache key's helpers, the bfloat16/float8 helpers' binding that
each backend's namespace takes).
"""

from __future__ import annotations

import importlib

from .protocol import Blas, Plan, Program, Step, TempBuffer

TARGETS = ("cuda", "cpu")

# name → the module (under compiler/) that defines it, imported on first access
# ("module:attribute" where the name here is not the module's own)
_LAZY = {
    "plan_kernel": "plan", "rebuild": "cuts", "has_cut": "planner", "CUT_AT": "planner",
    "plan_foreach": "foreach_plan", "plan_across": "foreach_plan",
    "foreach_meta": "foreach_plan", "across_partials": "foreach_plan",
    "CompactPlan": "compact", "ROW": "compact", "SCATTER_CODES": "compact",
    "PRODUCT_THREADS": "product", "TILE_M": "product", "TILE_N": "product", "TILE_K": "product",
    "digest": "keys", "disk_parts": "keys", "explain_miss": "keys",
    "tensor_partials": "tensor_fold", "per_tensor_plan": "tensor_fold",
    "plan_tensor_fold": "tensor_fold",
    "bind_minifloats": "minifloat:bind", "MINIFLOAT_CODES": "minifloat:CODES",
}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute or name)
    globals()[name] = value     # found once: later look-ups are plain attribute reads
    return value


def plan_evaluation(outputs: list, params: dict | None = None, temp_align: int = 1,
                    new_temp=None, blas: Blas | None = None) -> Program:
    """The program computing each node of ``outputs`` into its ``(buffer, dtype, shape,
    strides, offset)``.

    ``params``: node → position, as evaluation binds the graph's params (default: as
    :func:`~..ir.params.roots_params` merges them). A graph with a node the planner cuts at
    (:data:`CUT_AT`: a reduction, a scan, a product) becomes the kernels it is cut into, its
    temporaries bound after the params (``temp_align``: their alignment; ``new_temp(nbytes)``:
    the buffer standing for one, default a :class:`TempBuffer`; ``blas``: what the backend
    offers products, default none); any other is one elementwise kernel writing the outputs
    (``Program.cut`` False), whose outputs must be of one shape. ``blas`` may be a function
    giving it, called only for a graph the planner cuts (probing a BLAS may import one)."""
    from ..ir.params import roots_params
    from . import planner

    roots = [node for node, _ in outputs]
    if params is None:
        params = roots_params(roots)[0]
    if planner.has_cut(roots):
        return planner.plan_program(outputs, params, temp_align, new_temp,
                                    blas() if callable(blas) else blas)
    from .plan import plan_kernel
    return Program((Step(plan_kernel(outputs, params), -1),), (), (), cut=False)


def render(plan: Plan, target: str) -> str:
    """The Python source of ``plan``'s kernel for ``target`` (``"cuda"``, also run by the
    simulator, or ``"cpu"``)."""
    return _target(target).RENDERERS[plan.kind](plan)


def walk_text(plan: Plan, target: str) -> str:
    """How ``plan``'s kernel walks its data on ``target``, in words (``fa.explain``)."""
    return _target(target).walk_text(plan)


def _target(target: str):
    """The module of ``target`` (``compiler/targets/``), imported on first use."""
    module = _TARGETS.get(target)
    if module is None:
        if target not in TARGETS:
            raise ValueError(f"unknown target {target!r}; the targets are {TARGETS}")
        module = _TARGETS[target] = importlib.import_module(f"{__name__}.targets.{target}")
    return module


_TARGETS: dict = {}    # target → its module: RENDERERS (plan kind → renderer), walk_text


def helpers() -> dict:
    """The device functions every kernel may call (``compiler/devicelib.py``): name → plain
    Python function, which each backend rebinds to its own namespace and compiles."""
    from . import devicelib
    return devicelib.helpers()


__all__ = ["TARGETS", "Blas", "Plan", "Program", "Step", "TempBuffer", "helpers",
           "plan_evaluation", "render", "walk_text", *_LAZY]
