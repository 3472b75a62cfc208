"""What makes a new kernel cheaper to compile in a warm process, checked without a GPU."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import fusedarrays as fa  # noqa: E402
from fusedarrays import codegen, config, devicelib  # noqa: E402
from fusedarrays.cuda import compile as cc  # noqa: E402
from fusedarrays.cuda import intrinsics  # noqa: E402

precompile = importlib.import_module("fusedarrays.precompile")


def plans(*exprs):
    with config.override(BACKEND="cpu"):
        x = fa.asarray(np.random.default_rng(0).random(1024, np.float32))
        y = fa.asarray(np.random.default_rng(1).random(1024, np.float32))
        return [precompile.kernel_plans([make(x, y)])[0] for make in exprs]


def jobs(plan_list, arch="sm_90"):
    return [(codegen.render_kernel(p, "cuda"), p.name, p.param_types(), arch) for p in plan_list]


def normal(ptx: str) -> str:
    return re.sub(r"_ZN\w+", "NAME", re.sub(r"//[^\n]*", "", ptx))


def test_an_intrinsic_signature_typed_before_skips_numbas_registry_refresh(monkeypatch):
    """A second kernel calling the same intrinsics with the same argument types is typed from
    the intrinsics' cache: numba-cuda's registry look-up (which the first typing needs) is not
    reached again, and the PTX is the same as the first kernel's."""
    first, second = jobs(plans(lambda x, y: x * y + 2.5, lambda x, y: x * y + 2.5))
    ptx_first, _ = cc.compile_ptx(*first, devicelib.helpers())
    from numba.cuda.typing import templates

    original = templates._TemplateTargetHelperMixin._get_target_registry

    def refuse(self, reason):  # for our intrinsics; numba-cuda's own (cuda.grid) still ask
        if isinstance(getattr(self, "key", None), intrinsics._CachedIntrinsic):
            raise AssertionError(f"{type(self).__name__} asked numba-cuda's registries")
        return original(self, reason)

    monkeypatch.setattr(templates._TemplateTargetHelperMixin, "_get_target_registry", refuse)
    ptx_second, _ = cc.compile_ptx(*second, devicelib.helpers())
    assert normal(ptx_second) == normal(ptx_first)
