"""Evaluating a graph with reductions, scans or products: a :class:`ProgramRecord`, a launch
record per kernel (a product planned for the backend's BLAS: a record calling the library).

The planner cuts such a graph into kernels (``compiler/planner.py``); this module builds, once
per signature, a :class:`~.launch.LaunchRecord` for each of them, and on every evaluation
allocates the temporaries the kernels pass results through and launches the records in order.
It has the interface :mod:`realize` keeps in its record table (``launch(params, outputs)``,
``result_sid``), so a graph with reductions is looked up by its root's sid like any other.
"""

from __future__ import annotations

from ..compiler import Program
from ..ir import layout
from .backend import new_buffer
from .launch import LaunchRecord, graph_packer


class _Slot:
    """A temporary bound among the params: the packer reads ``attrs[0].storage`` of a leaf."""

    __slots__ = ("attrs",)

    def __init__(self, buffer):
        self.attrs = (buffer,)


class ProgramRecord:
    """The records of a cut graph's kernels and the temporaries between them."""

    __slots__ = ("backend", "program", "records", "nbytes", "result_sid")

    def __init__(self, backend, program: Program, records: list):
        self.backend, self.program, self.records = backend, program, records
        self.nbytes = [layout.size_of(shape) * dtype.itemsize for dtype, shape in program.temps]
        self.result_sid = None

    def launch(self, params, outputs) -> None:
        """Launch every kernel in order: ``params`` the graph's (bound as evaluation binds
        them), ``outputs`` the result buffers."""
        temps = [new_buffer(self.backend, max(n, 1)) for n in self.nbytes]
        bound = list(params) + [_Slot(b) for b in temps]
        for record, step in zip(self.records, self.program.steps):
            out = outputs if step.out < 0 else (temps[step.out],)
            record.launch(bound, out if step.partials < 0 else (temps[step.partials], *out))


def program_record(backend, program: Program, nparams: int, kernel_for) -> ProgramRecord:
    """The records of ``program`` (a cut graph's, over ``nparams`` params) on ``backend``;
    ``kernel_for(plan, backend)`` finds or compiles each kernel (``realize.kernel_for``)."""
    nbound = nparams + len(program.temps)
    records = []
    for step in program.steps:
        plan = step.plan
        if plan.library:    # a product planned for the backend's BLAS
            kernel = backend.load_product(plan)
        else:
            kernel = kernel_for(plan, backend) if plan.size else None
        records.append(LaunchRecord.of_plan(backend, kernel, plan,
                                            graph_packer(plan, nbound, backend)))
    return ProgramRecord(backend, program, records)
