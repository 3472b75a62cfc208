"""Stochastic rounding to bfloat16 and float16: ``Generator.stochastic_round(x, dtype)``.

Each value rounds to one of the two neighbours ``a <= |x| < a + ulp`` of the format around it,
the upper one with probability ``(|x| - a) / ulp``, so the mean of many roundings is ``x``
exactly (training keeps small updates that round-to-nearest would drop). It is built from fused
ops over a uniform draw of the generator (``fa.random``'s Philox stream), so it runs inside the
kernel that stores the result, and every backend gives the same bits: each step is exact in the
input's float type: the format's spacing from float32's (``|x| - nextafter(|x|, 0)`` scaled by a
power of two, at least the format's smallest subnormal), ``a = trunc(|x| / ulp) * ulp``, and the
fraction ``(|x| - a) / ulp`` has at most 16 bits (13 for float16), so a float32 uniform (24 bits)
below it happens with exactly that probability; float64 inputs round from float64 with a float64
uniform (53 bits). Infinities and NaN pass as the cast gives them; magnitudes beyond the format's
largest finite value become infinities as a cast makes them.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError
from ..ir import dtypes
from .array import asarray
from .elementwise import FUNCTIONS as F

# format → (mantissa bits, smallest normal exponent)
_FORMATS = {"float16": (10, -14), "bfloat16": (7, -126)}


def stochastic_round(rng, x, dtype):
    """``x`` rounded to ``dtype`` (bfloat16 or float16) up or down at random, unbiased: the
    upper neighbour with probability the distance to the lower one over their spacing.

    >>> import fusedarrays as fa, numpy as np
    >>> rng = fa.random.default_rng(0)
    >>> y = rng.stochastic_round(fa.full(100000, 1 + 2**-10, dtype=fa.float32), fa.bfloat16)
    >>> sorted(set(y.astype(fa.float32).get().tolist()))
    [1.0, 1.0078125]
    """
    dt = dtypes.as_dtype(dtype, what="Generator.stochastic_round dtype")
    if dt.name not in _FORMATS:
        raise DTypeError(f"Generator.stochastic_round: dtype {dt} is not supported (bfloat16 and "
                         "float16 are); round to float8 with .astype, to nearest even")
    x = asarray(x)
    if dtypes.kind(x.dtype) not in "fiub":
        raise DTypeError(f"Generator.stochastic_round: x of dtype {x.dtype} is not real; pass "
                         "a float, integer or bool array")
    wide = np.dtype(np.float64) if x.dtype.itemsize == 8 else np.dtype(np.float32)
    v = x.astype(wide) if x.dtype != wide else x
    mant, emin = _FORMATS[dt.name]
    bits = np.finfo(wide).nmant                  # 23 or 52: the input type's mantissa bits
    u = rng.random(x.shape, dtype=wide)
    ax = F["abs"](v)
    ulp = F["maximum"]((ax - F["nextafter"](ax, 0.0)) * float(2.0 ** (bits - mant)),
                     float(2.0 ** (emin - mant)))
    low = F["trunc"](ax / ulp) * ulp
    mag = F["where"](u < (ax - low) / ulp, low + ulp, low)
    return F["where"](F["isinf"](v), v, F["copysign"](mag, v)).astype(dt)
