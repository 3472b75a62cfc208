"""Reductions per tensor inside ``foreach`` (``fa.tensor_norm``, LAMB's trust ratio): the plan and
source of the launch that folds each tensor's partial results, and the mark on the foreach plan
that then reads one value per tensor.

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
from .codegen import _function, _indent
from .foreach_plan import ACROSS_GRAIN, ACROSS_PARTIALS, FOREACH_CHUNK_SHIFT, ForeachPlan

_INF = "(1e308 * 10.0)"


def tensor_partials(total: int) -> int:
    """``gc``: the elements each partial folds, for tensors of ``total`` elements together:
    each tensor is padded to whole ranges of ``gc``, so about ``ACROSS_PARTIALS`` partials plus
    at most one per tensor. A multiple of the foreach chunk, a function of the sizes only."""
    chunk = 1 << FOREACH_CHUNK_SHIFT
    gc = max(ACROSS_GRAIN, -(-total // ACROSS_PARTIALS))
    return -(-gc // chunk) * chunk


@dataclass(frozen=True)
class TensorFoldPlan:
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
        return 0, 0

    def param_types(self) -> tuple[str, ...]:
        return ("i64", "ptr", "i64") + ("ptr", "ptr") * len(self.reductions)


def plan_tensor_fold(reductions: tuple[tuple[str, str], ...]) -> TensorFoldPlan:
    parts = (("kind", "tensor fold"),
             ("reductions", "; ".join(f"{name} of {code}" for name, code in reductions)))
    return TensorFoldPlan(tuple(reductions), parts, keys.digest(parts))


def render_tensor_fold_kernel(plan: TensorFoldPlan, target: str) -> str:
    """The fold's source: cuda a grid-stride loop of threads over the tensors; cpu the
    tensors ``k0`` to ``k1`` (the backend's chunks)."""
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
    params = ["n", "meta", "gc"] + [f"q{io}{j}" for j in range(len(plan.reductions))
                                     for io in ("i", "o")]
    if target == "cpu":
        return _function(plan.name, ["k0", "k1"] + params,
                         ["if k0 >= k1:", "    return n", "for t in range(k0, min(k1, n)):"]
                         + _indent(per) + ["return n"])
    if target != "cuda":
        raise ValueError(f"unknown target {target!r}")
    return _function(plan.name, params,
                     ["t = cv_i64(cuda.blockIdx.x) * cv_i64(cuda.blockDim.x) "
                      "+ cv_i64(cuda.threadIdx.x)",
                      "step = cv_i64(cuda.gridDim.x) * cv_i64(cuda.blockDim.x)",
                      "while t < n:"] + _indent(per + ["t += step"]))


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


__all__ = ["TensorFoldPlan", "TensorForeachPlan", "per_tensor_plan", "plan_tensor_fold",
           "render_tensor_fold_kernel", "tensor_partials"]
