"""Importing this module warms numba-cuda up: numba, the CUDA target and NVVM loaded, one tiny
kernel typed, lowered and compiled to PTX.

Where it sits: only the compile server (``compile_server.py``) imports it, once, in the
background, so that each worker it forks starts with numba warm. Nothing else imports it: its
import is the work.

Not linked: nvJitLink initializes the CUDA driver (``cuInit``, a driver thread, ~180 ms on the
H100 host) on its first use, and a process that has touched the driver must not fork workers
that use it again. Each worker links its own kernel.
"""

from __future__ import annotations

from .. import compiler
from .compile import compile_ptx

_SOURCE = "def fa_warm(n, p0):\n    i = cv_i64(cuda.grid(1))\n    if i < n:\n" \
          "        st_f32(p0, i, cv_f32(1.0))\n"

compile_ptx(_SOURCE, "fa_warm", ("i64", "ptr"), "sm_80", compiler.helpers())
