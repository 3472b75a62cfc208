"""Shared test set-up: the tests folder on sys.path (for ``semantics``), a private cache folder."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("FUSEDARRAYS_CACHE_DIR", tempfile.mkdtemp(prefix="fusedarrays-test-cache-"))
# The semantics tiers compile ~70 large kernels; numba's LLVM optimisation level changes no
# results (no fastmath) but halves their compile time on CI's two cores.
os.environ.setdefault("NUMBA_OPT", "0")
# Hypothesis keeps its example database and caches in .hypothesis/ of the working folder by
# default: the suite leaves no files behind (its seeds are fixed and printed instead)
try:
    from hypothesis import configuration as _hypothesis_configuration
    from hypothesis import settings as _hypothesis_settings
except ImportError:
    pass
else:
    _hypothesis_configuration.set_hypothesis_home_dir(
        tempfile.mkdtemp(prefix="fusedarrays-test-hypothesis-"))
    _hypothesis_settings.register_profile("fusedarrays", database=None)
    _hypothesis_settings.load_profile("fusedarrays")
