"""numba-cuda's lowering without its work that grows with the square of a block's length, while
one of our kernels compiles (``cuda/compile.py`` enters :func:`linear_lowering` with numba's
compile lock held, beside its other context managers).

Why: a generated kernel is a few long straight-line blocks (a tiled kernel's unrolled tile
transposes: ~700 statements in one block). numba-cuda's ``Lower.init`` finds the variables
assigned once (``_find_singly_assigned_variable``) by scanning, for each variable defined in a
block, every assignment of that block again: ~290 000 ``find_insts`` steps for a tiled kernel,
a fifth of its typing and lowering. :func:`_singly_assigned` gives the same set from one pass
over each block (the count of assignments of each name), so the PTX is the same
(``tests/ptx/test_linear_lowering.py`` compiles kernels of every schedule both ways).

Where numba-cuda's ``Lower`` lacks the method or the helpers it uses (another version), nothing
is replaced.
"""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict


def _singly_assigned(self) -> None:
    """``Lower._find_singly_assigned_variable``, linear: the variables defined in one block
    only, used in no other, not stack-allocated (``must_use_alloca``) and assigned once there."""
    from numba.cuda import lowering

    sav = set()
    if not self.func_ir.func_id.is_generator:
        blocks = self.func_ir.blocks
        use_defs = lowering.compute_use_defs(blocks)
        alloca_vars = lowering.must_use_alloca(blocks)
        defined_in = defaultdict(set)
        for label, names in use_defs.defmap.items():
            for name in names:
                defined_in[name].add(label)
        used_elsewhere = set()
        for names in use_defs.usemap.values():   # usemap leaves out uses after a local def
            used_elsewhere.update(names)
        assigned: dict = {}   # block label → Counter of the names its assignments target
        for name, labels in defined_in.items():
            if name in alloca_vars or len(labels) != 1 or name in used_elsewhere:
                continue
            (label,) = labels
            counts = assigned.get(label)
            if counts is None:
                counts = assigned[label] = Counter(
                    stmt.target.name for stmt in self.blocks[label].find_insts(
                        lowering.ir.assign_types))
            if counts[name] == 1:
                sav.add(name)
    self._singly_assigned_vars = sav
    self._blk_local_varmap = {}


def _lower_class():
    """numba-cuda's ``Lower`` where it has what :func:`_singly_assigned` replaces, else None."""
    try:
        from numba.cuda import lowering
    except ImportError:   # pragma: no cover - another numba-cuda
        return None
    owner = getattr(lowering, "Lower", None)
    needed = ("compute_use_defs", "must_use_alloca", "ir")
    if owner is None or "_find_singly_assigned_variable" not in vars(owner) or not all(
            hasattr(lowering, name) for name in needed):
        return None     # pragma: no cover - another numba-cuda
    return owner


@contextlib.contextmanager
def linear_lowering():
    """:func:`_singly_assigned` in place of numba-cuda's own while the block runs; entered with
    numba's compile lock held, so no other thread lowers meanwhile."""
    owner = _lower_class()
    if owner is None:   # pragma: no cover - another numba-cuda
        yield
        return
    original = vars(owner)["_find_singly_assigned_variable"]
    owner._find_singly_assigned_variable = _singly_assigned
    try:
        yield
    finally:
        owner._find_singly_assigned_variable = original
