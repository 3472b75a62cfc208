"""What every plan is to the rest of the package: the :class:`Plan` protocol, and the data the
compiler hands out with plans: a :class:`Program` of :class:`Step` s, the :class:`TempBuffer` s
that stand for its temporaries while planning, what a backend offers products (:class:`Blas`).

Pure and light (imported with the package). A plan is the compiler's description of one kernel:
nine kinds (``kernel``, ``reduce``, ``rows``, ``scan``, ``product``, ``compact``, ``foreach``,
``across``, ``tensor_fold``), each a frozen dataclass that subclasses :class:`Plan` and names its
``kind``. The runtime reads a plan only through the members listed here, and each target's code
generator takes a plan's source from its table by ``kind`` (``compiler/__init__.py``'s ``render``):
a new plan kind is a class implementing these members and a row in each target's table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..ir import graph


class Plan:
    """The members every plan kind has (a kind's class defines those without a default here).

    - ``kind``: the kind's name, the key of each target's renderer table.
    - ``name``: the kernel's function name (a prefix and the key's first digits).
    - ``key``, ``key_parts``: the structure key and its named parts (``compiler/keys.py``).
    - ``operands``, ``scalars``, ``body``: what the kernel reads and writes, its scalar
      parameters and its per-element instructions (``()`` where it has none; no defaults
      here: a dataclass would take a base's value as its field's default).
    - ``size``: the launch's ``n`` (outputs, rows, tiles' elements; 0 for a plan sized per call).
    - ``geometry()``: what the launcher sizes the grid from (None for a plan sized per call).
    - ``param_types()``: the kernel's parameter types, in order.
    - ``int_args()``: the integer parameters a launch binds after the pointers.
    - ``traffic()``: ``(bytes a launch over size moves, bytes per element of a launch sized
      per call)``: what ``fa.profile()`` reports as bytes moved.
    - ``elements_walked()``: elements a launch walks (a reduction's size counts outputs).
    - ``counters``: slots of the backend's zeroed counter buffer a launch takes (a split
      reduction), ``library``: the BLAS computing it instead of a kernel ("" for a kernel).
    """

    __slots__ = ()
    kind: ClassVar[str] = ""
    counters = 0
    library = ""
    size = 0

    def geometry(self) -> tuple | None:
        return None

    def int_args(self) -> list[int]:
        return []

    def walk_strides(self, k: int) -> tuple:
        """Operand ``k``'s strides over :attr:`dims` (a product's operands walk 2 of 3 axes)."""
        return self.operands[k].strides

    def traffic(self) -> tuple[int, int]:
        """Each operand's distinct elements (a broadcast axis counts once) times its item
        size, for a launch over ``size``."""
        total = 0
        for k, o in enumerate(self.operands):
            elements = 1
            for d, s in zip(self.dims, self.walk_strides(k)):
                elements *= d if s else 1
            total += elements * o.dtype.itemsize
        return total, 0

    def elements_walked(self) -> int:
        return self.size

    @property
    def flags_index_errors(self) -> bool:
        """Whether the plan holds a flagged gather (its index unchecked on the host: an
        instruction with the site as a second input), whose kernel takes the device's error
        word (``runtime/indexflags.py``)."""
        return any(i.kind == "gather" and len(i.inputs) == 2 for i in self.body)


@dataclass(frozen=True)
class Blas:
    """The BLAS a backend computes products with (``name``), or why products take the tiled
    kernel there (``why_not``)."""

    name: str = ""
    why_not: str = ""


class TempBuffer:
    """Stands in, while planning, for a temporary the program allocates per launch."""

    __slots__ = ("uid", "align", "fresh", "__weakref__")

    def __init__(self, align: int):
        self.uid, self.align, self.fresh = graph.new_uid(), align, None


@dataclass(frozen=True)
class Step:
    plan: Plan              # any kind but foreach and across
    out: int                # >= 0: temporary ``out``; -1: the evaluation's outputs
    partials: int = -1      # >= 0: a split reduction's partials, temporary ``partials``, bound
    #                         as the output before ``out``


@dataclass(frozen=True)
class Program:
    """The kernels of one evaluation, in order, and the temporaries they pass results through
    (``temps``: (dtype, shape) each, bound after the evaluation's params)."""

    steps: tuple[Step, ...]
    temps: tuple[tuple[np.dtype, tuple], ...]
    why: tuple[str, ...]    # how the graph was cut, in words (fa.explain)
    cut: bool = True        # False: one elementwise kernel, the graph had nothing to cut at
