"""Which float divisions of a kernel take their divisor's reciprocal: ``fa_divrcp`` once where
the divisor is computed, ``fa_divby`` per element (``cuda/division.py``), in place of ``fa_div``.

Pure; :mod:`.codegen` asks it for each instruction of a plan. ``codes`` and ``level`` are the
renderer's: each value's dtype code, and its level (0 scalar-only, 1 constant along a row, 2 per
element); ``elementwise`` is False in a row kernel.
"""

from __future__ import annotations

from ..ir.dtypes import COMPUTE_CODE


def by_reciprocal(ins, codes: dict, level: dict, elementwise: bool) -> bool:
    """Whether the plan instruction ``ins``, a division, takes its divisor's reciprocal, once
    where the divisor is computed, and ``fa_divby`` an element, in place of ``fa_div``. The one
    rule: a float division computed in float32 (float16 too) whose divisor is computed outside
    the loop that computes its dividend (a scalar, a 0-d or broadcast operand the kernel reads
    once, a row's constant) and that needs no conversion. Why: on cuda ``fa_divby`` is NumPy's
    quotient by a multiply and two fmas whose fast path keeps zero dividends (dropout's ``x *
    mask / (1 - p)``), where ``div.rn`` sends a zero to a slow-path subroutine; divisions by
    per-element values stay a plain ``div.rn``, the fewest instructions for compute-bound
    kernels (Black-Scholes). float64 divides plainly: the reciprocal's quotient is checked for
    float32 alone (``cuda/division.py``). Other backends divide with ``/`` under the same names."""
    if ins.kind != "op" or ins.arg[0] != "true_divide":
        return False
    a, b = ins.inputs
    loop = ins.arg[1]
    # a row kernel's per-row quotients (a mean's sum / n) divide plainly, as they did
    # before the rule: once a row, and the row kernels' speed was measured with them so
    return (COMPUTE_CODE.get(loop[1]) == "f32" and codes[b] == loop[1]
            and level[b] < level[a] and (elementwise or level[a] == 2))
