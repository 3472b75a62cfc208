"""The client tier: scikit-learn, SciPy, xarray, einops and dask, each calling into fa arrays
through its own public calls, judged against the same call on NumPy arrays (judge.py).

It runs on the default backend (cpu here, cuda on a GPU machine). A client that is not
installed skips its module (``pytest.importorskip``); the README's test command installs them
all (the ``clients`` extra). SciPy and scikit-learn need ``SCIPY_ARRAY_API=1`` before SciPy is
first imported, which would change SciPy's functions for the whole process (tests/cpu's
``fa.special`` tests call SciPy's plain ufuncs): their cases run in a child process
(test_scipy_sklearn.py).
"""

import os
import sys

# judge.py and the case modules import each other by name, whichever folder pytest started in
sys.path.insert(0, os.path.dirname(__file__))
