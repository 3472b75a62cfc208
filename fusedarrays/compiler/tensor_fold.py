"""Reductions per tensor inside ``foreach`` (``fa.tensor_norm``, LAMB's trust ratio): the plan of
the launch that folds each tensor's partial results and its fold's lines (the loop around them
is each target's), and the mark on the foreach plan that then reads one value per tensor.

Pure, beside :mod:`.foreach_plan`. A foreach whose function reduces each tensor separately takes
three launches for any number of tensors: the :class:`~.foreach_plan.AcrossPlan` kernel, run
over a table whose tensors start on whole ranges of ``gc`` elements (:func:`tensor_partials`),
so that each of its partial results lies in one tensor; :class:`TensorFoldPlan`, a thread per
tensor folding that tensor's partials in order (the same bits every call, no atomics); then
the foreach kernel (:class:`TensorForeachPlan`), which loads its tensor's folded value each
time it enters a tensor (``foreach_codegen``), instead of folding one value for the list.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..ir.dtypes import BY_CODE
from ..ir.reductions import REDUCTIONS, identity
from . import keys
from .codegen import _indent
from .foreach_plan import ACROSS_GRAIN, ACROSS_PARTIALS, FOREACH_CHUNK_SHIFT, ForeachPlan
from .protocol import Plan

_INF = "(1e308 * 10.0)"


def tensor_partials(total: int) -> int:
    """``gc``: the elements each partial folds, for tensors of ``total`` elements together:
    each tensor is padded to whole ranges of ``gc``, so about ``ACROSS_PARTIALS`` partials plus
    at most one per tensor. A multiple of the foreach chunk, a function of the sizes only."""
    chunk = 1 << FOREACH_CHUNK_SHIFT
    gc = max(ACROSS_GRAIN, -(-total // ACROSS_PARTIALS))
    return -(-gc // chunk) * chunk


@dataclass(frozen=True)
class TensorFoldPlan(Plan):
    """A thread per tensor folds its partials: tensor ``t``'s are ``meta[t] // gc`` to
    ``meta[t + 1] // gc`` (``meta``: the across launch's, whose starts are multiples of
    ``gc``). Parameters: ``n`` (the tensors), ``meta``, ``gc``, per reduction ``j`` the
    partials ``qi<j>`` and the per-tensor results ``qo<j>`` (both of the partials' code)."""

    reductions: tuple[tuple[str, str], ...]      # (name, partials' dtype code)
    key_parts: tuple[tuple[str, str], ...]
    key: str

    kind = "tensor_fold"
    name = property(lambda self: "tf_" + self.key[:16])
    operands = ()
    scalars = ()
    body = ()

    def traffic(self) -> tuple[int, int]:
        return 0, 0   # not counted (a few partials per tensor)

    def param_types(self) -> tuple[str, ...]:
        return ("i64", "ptr", "i64") + ("ptr", "ptr") * len(self.reductions)


def plan_tensor_fold(reductions: tuple[tuple[str, str], ...]) -> TensorFoldPlan:
    parts = (("kind", "tensor fold"),
             ("reductions", "; ".join(f"{name} of {code}" for name, code in reductions)))
    return TensorFoldPlan(tuple(reductions), parts, keys.digest(parts))


def fold_lines(plan: TensorFoldPlan) -> list[str]:
    """Tensor ``t``'s partials folded in order and its results stored (every target's: the
    targets put a loop over the tensors around them)."""
    per = ["lo = ld_i64(meta, t) // gc", "hi = ld_i64(meta, t + 1) // gc"]
    for j, (name, code) in enumerate(plan.reductions):
        value = identity(name, BY_CODE[code])
        start = (_INF if value > 0 else f"-{_INF}") if isinstance(value, float) \
            else str(int(value))
        merge = [s.format(w=f"w{j}", iw="").replace("acc", f"acc{j}")
                 for s in REDUCTIONS[name].merge]
        per += [f"acc{j} = cv_{code}({start})", "for o in range(lo, hi):"]
        per += _indent([f"w{j} = ld_{code}(qi{j}, o)"] + merge)
        per.append(f"st_{code}(qo{j}, t, acc{j})")
    return per


def fold_params(plan: TensorFoldPlan) -> list[str]:
    return ["n", "meta", "gc"] + [f"q{io}{j}" for j in range(len(plan.reductions))
                                  for io in ("i", "o")]


@dataclass(frozen=True)
class TensorForeachPlan(ForeachPlan):
    """A :class:`ForeachPlan` whose ``globals`` are per-tensor values: ``q<j>`` holds one
    folded value per tensor, which the kernel loads (and recomputes what it feeds) whenever it
    enters a tensor."""

    per_tensor = True
    name = property(lambda self: "ft_" + self.key[:16])


def per_tensor_plan(plan: ForeachPlan) -> TensorForeachPlan:
    parts = plan.key_parts + (("per tensor", "globals are per-tensor values"),)
    fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    fields.update(key_parts=parts, key=keys.digest(parts))
    return TensorForeachPlan(**fields)


__all__ = ["TensorFoldPlan", "TensorForeachPlan", "fold_lines", "fold_params", "per_tensor_plan",
           "plan_tensor_fold", "tensor_partials"]
