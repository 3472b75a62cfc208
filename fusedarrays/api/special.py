"""``fa.special``: ``erf erfc erfinv expit logit gammaln``, lazy and fused like every op.

Where it sits: beside :mod:`.elementwise`, from the op table's rows of module ``special``
(``fusedarrays/ir/ops.py``), so each is one line of a generated kernel. Result dtypes are
SciPy's (``scipy.special.erf`` on float32 gives float32, on an integer or float16 float64 —
except ``erfinv``, whose first loop is float32); values match SciPy's within a few ulp.
``scipy.special.erf(x)`` on a ``fa.ndarray`` dispatches here when SciPy is installed; SciPy is
never needed to compute them.

>>> import numpy as np, fusedarrays as fa
>>> x = fa.asarray(np.array([0.0, 0.5], dtype=np.float32))
>>> fa.special.erf(x).get()
array([0.       , 0.5204999], dtype=float32)
"""

from __future__ import annotations

from .elementwise import SPECIAL

erf = SPECIAL["erf"]
erfc = SPECIAL["erfc"]
erfinv = SPECIAL["erfinv"]
expit = SPECIAL["expit"]
logit = SPECIAL["logit"]
gammaln = SPECIAL["gammaln"]

__all__ = ["erf", "erfc", "erfinv", "expit", "gammaln", "logit"]
