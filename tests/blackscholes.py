"""Black-Scholes call and put prices written once for NumPy and for fusedarrays.

``prices(xp, ...)`` takes the array namespace (``numpy`` or ``fusedarrays``) so a test can build the
lazy graph and its NumPy reference from one text. The normal CDF is Abramowitz and Stegun 7.1.26
(erf to 1.5e-7 with one ``exp``), since neither namespace has ``erf``: it uses ``exp``, ``abs`` and
``sign``; ``log`` and ``sqrt`` come in through d1.
"""

import numpy as np

# Abramowitz and Stegun 7.1.26: erf(z) ~ 1 - t (a1 + t (a2 + ... + t a5)) exp(-z^2), t = 1/(1+pz).
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
# A Python float (weak, NEP 50): float32 data stays float32 (a NumPy float64 would promote it).
_SQRT_HALF = 0.7071067811865476


def normal_cdf(xp, x):
    z = xp.abs(x) * _SQRT_HALF
    t = 1.0 / (1.0 + _P * z)
    poly = t * (_A[0] + t * (_A[1] + t * (_A[2] + t * (_A[3] + t * _A[4]))))
    erf = 1.0 - poly * xp.exp(-(z * z))
    return 0.5 * (1.0 + xp.sign(x) * erf)


def prices(xp, S, K, T, r, sigma):
    """(call, put) for spot ``S``, strike ``K``, years ``T``, rate ``r`` and volatility."""
    vol_t = sigma * xp.sqrt(T)
    d1 = (xp.log(S / K) + (r + 0.5 * sigma * sigma) * T) / vol_t
    d2 = d1 - vol_t
    discounted = K * xp.exp(-r * T)
    call = S * normal_cdf(xp, d1) - discounted * normal_cdf(xp, d2)
    put = discounted * normal_cdf(xp, -d2) - S * normal_cdf(xp, -d1)
    return call, put


def inputs(n: int, seed: int, dtype=np.float32) -> dict:
    """Market data for ``n`` options from ``seed``: spots 10-100, strikes near them, 0.1-3 years,
    rates 0-10 %, volatilities 5-60 %."""
    rng = np.random.default_rng(seed)
    S = rng.uniform(10.0, 100.0, n)
    return {"S": S.astype(dtype),
            "K": (S * rng.uniform(0.7, 1.3, n)).astype(dtype),
            "T": rng.uniform(0.1, 3.0, n).astype(dtype),
            "r": rng.uniform(0.0, 0.1, n).astype(dtype),
            "sigma": rng.uniform(0.05, 0.6, n).astype(dtype)}


def normal_cdf_erf(xp, erf, x):
    """The normal CDF through an exact ``erf`` (``fa.special.erf``, ``scipy.special.erf``)."""
    return 0.5 * (1.0 + erf(x * _SQRT_HALF))


def prices_erf(xp, erf, S, K, T, r, sigma):
    """:func:`prices` with the CDF from ``erf`` (``xp`` the namespace, ``erf`` its erf)."""
    vol_t = sigma * xp.sqrt(T)
    d1 = (xp.log(S / K) + (r + 0.5 * sigma * sigma) * T) / vol_t
    d2 = d1 - vol_t
    discounted = K * xp.exp(-r * T)
    call = S * normal_cdf_erf(xp, erf, d1) - discounted * normal_cdf_erf(xp, erf, d2)
    put = discounted * normal_cdf_erf(xp, erf, -d2) - S * normal_cdf_erf(xp, erf, -d1)
    return call, put
