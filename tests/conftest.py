"""Shared test set-up: the tests folder on sys.path (for ``semantics``), a private cache folder."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("FUSEDARRAYS_CACHE_DIR", tempfile.mkdtemp(prefix="fusedarrays-test-cache-"))
# The semantics tiers compile ~70 large kernels; numba's LLVM optimisation level changes no
# results (no fastmath) but halves their compile time on CI's two cores.
os.environ.setdefault("NUMBA_OPT", "0")
