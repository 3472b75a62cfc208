"""Importing this module warms numba-cuda up: numba, the CUDA target, NVVM and nvJitLink loaded,
one tiny kernel compiled and linked.

Where it sits: only the batch compiler's fork server imports it (``precompile.py`` preloads it),
so that every worker forked from that server compiles its first kernel as fast as its tenth
instead of first spending ~1 s importing numba and ~0.5 s on numba's first compile. Nothing else
imports it: its import is the work.
"""

from __future__ import annotations

from .compile import compile_kernel

_SOURCE = "def fa_warm(n, p0):\n    i = cv_i64(cuda.grid(1))\n    if i < n:\n" \
          "        st_f32(p0, i, cv_f32(1.0))\n"

compile_kernel(_SOURCE, "fa_warm", ("i64", "ptr"), "sm_80")
