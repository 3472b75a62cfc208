"""fa.random cases shared by the cpu, sim and gpu tiers: a NumPy reference of the streams, and
expressions that read draws through every schedule (flat with vectors and a tail, rows, tiled,
nd), through views with negative steps, broadcasts and strided outputs.

Each case builds its draws from ``fa.random.default_rng(seed)`` and returns ``(result, expected)``
where ``expected(stream)`` computes the result in NumPy from the draws' flat streams (``stream``
maps ``(seed, dist, dtype, size)`` to the cpu backend's materialised draw), so comparing them
checks that a draw reads the same numbers whatever the kernel around it.
"""

from __future__ import annotations

import numpy as np

import fusedarrays as fa

_M = np.uint64(0xFFFFFFFF)


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 over NumPy uint64 arrays (each holding 32-bit words)."""
    c0, c1, c2, c3, k0, k1 = (np.asarray(v, np.uint64) for v in (c0, c1, c2, c3, k0, k1))
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0
        p1 = np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _M,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _M)
        k0 = (k0 + np.uint64(0x9E3779B9)) & _M
        k1 = (k1 + np.uint64(0xBB67AE85)) & _M
    return np.stack([c0, c1, c2, c3], axis=-1)


def seed_words(seed: int) -> int:
    """The 64-bit Philox key of ``default_rng(seed)`` (its SeedSequence)."""
    words = np.random.SeedSequence(seed).generate_state(2, np.uint32)
    return int(words[0]) | int(words[1]) << 32


def words(seed: int, key: int, blocks: int) -> np.ndarray:
    """The 32-bit words of ``blocks`` Philox blocks of draw ``key``, in stream order."""
    s, b = seed_words(seed), np.arange(blocks, dtype=np.uint64)
    out = philox(b & _M, b >> np.uint64(32), key & 0xFFFFFFFF, key >> 32, s & 0xFFFFFFFF,
                 s >> 32)
    return out.reshape(-1)


def uniform_f32(seed: int, n: int, key: int = 0) -> np.ndarray:
    w = words(seed, key, -(-n // 4))[:n]
    return ((w >> np.uint64(8)).astype(np.float64) * 2.0 ** -24).astype(np.float32)


def uniform_f64(seed: int, n: int, key: int = 0) -> np.ndarray:
    w = words(seed, key, -(-n // 2))[:2 * n].reshape(n, 2)
    return ((w[:, 0] >> np.uint64(5)).astype(np.float64) * 67108864.0
            + (w[:, 1] >> np.uint64(6)).astype(np.float64)) * 2.0 ** -53


def integers(seed: int, n: int, low: int, span: int, key: int = 0) -> np.ndarray:
    w = words(seed, key, -(-n // 2))[:2 * n].reshape(n, 2)
    s = np.uint64(span)
    return (w[:, 0] * s + ((w[:, 1] * s) >> np.uint64(32)) >> np.uint64(32)).astype(
        np.int64) + low


def normal_approx(seed: int, n: int, key: int = 0) -> np.ndarray:
    """Box-Muller from libm (the library computes it from exact operations: equal to ~1e-15)."""
    w = words(seed, key, -(-n // 4)).reshape(-1, 2).astype(np.float64)
    r = np.sqrt(-2.0 * np.log((w[:, 0] + 1.0) * 2.0 ** -32))
    theta = 2.0 * np.pi * w[:, 1] * 2.0 ** -32
    return np.stack([r * np.cos(theta), r * np.sin(theta)], axis=-1).reshape(-1)[:n]


# -- expressions through every schedule ------------------------------------------------------
def _data(seed: int, shape, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def noise_add_flat(seed):
    """(x + noise) * 0.1, float32, 1-D with a tail: flat, 128-bit vectors (no product feeds a
    sum, which NVVM would contract into an fma: the cases compare bits)."""
    x = _data(seed, 1003)
    rng = fa.random.default_rng(seed)
    result = (fa.asarray(x) + rng.standard_normal(1003, dtype=np.float32)) * np.float32(0.1)
    return result, lambda s: (x + s(seed, "normal", np.float32, 1003)) * np.float32(0.1)


def dropout_f16(seed):
    """A float16 dropout: 8 lanes, two Philox blocks a vector."""
    x = _data(seed, 517, np.float16)
    rng = fa.random.default_rng(seed)
    keep = rng.random(517, dtype=np.float32) > np.float32(0.25)
    result = fa.asarray(x) * keep / np.float16(0.75)

    def expected(s):
        return x * (s(seed, "random", np.float32, 517) > np.float32(0.25)) / np.float16(0.75)
    return result, expected


def two_word_draws(seed):
    """float64 uniforms and integers (two words an element) into a float32 result."""
    rng = fa.random.default_rng(seed)
    u, k = rng.random(301), rng.integers(-5, 7, 301, dtype=np.int32)
    result = (u + k).astype(np.float32)

    def expected(s):
        return (s(seed, "random", np.float64, 301)
                + s(seed, "integers", np.int32, 301, key=1)).astype(np.float32)
    return result, expected


def rows(seed):
    """A broadcast row and a draw of the full shape: the rows walk."""
    x, b = _data(seed, (6, 136)), _data(seed + 1, 136)
    rng = fa.random.default_rng(seed)
    result = (fa.asarray(x) + fa.asarray(b)[None, :]) * rng.standard_normal((6, 136),
                                                                            dtype=np.float32)
    return result, lambda s: (x + b[None, :]) * s(seed, "normal", np.float32, 816).reshape(6, 136)


def tiled(seed):
    """A transposed operand plus a draw: full tiles with 128-bit accesses, and an edge tile (one
    row of three 64 x 64 tiles, the last 8 columns wide)."""
    x = _data(seed, (136, 64))
    rng = fa.random.default_rng(seed)
    result = fa.asarray(x).T + rng.random((64, 136), dtype=np.float32)
    return result, lambda s: x.T + s(seed, "random", np.float32, 8704).reshape(64, 136)


def nd_views(seed):
    """3-D, a strided operand, a transposed draw with a negative step: the nd walk."""
    x = _data(seed, (3, 5, 8))
    rng = fa.random.default_rng(seed)
    draw = rng.standard_normal((8, 5, 3))
    result = fa.asarray(x)[:, ::-1, :] - draw.T[::-1]

    def expected(s):
        return x[:, ::-1, :] - s(seed, "normal", np.float64, 120).reshape(8, 5, 3).T[::-1]
    return result, expected


def broadcast_draw(seed):
    """One draw of a row broadcast over rows: its stream index repeats down the columns."""
    x = _data(seed, (5, 140))
    rng = fa.random.default_rng(seed)
    result = fa.asarray(x) * rng.random(140, dtype=np.float32)
    return result, lambda s: x * s(seed, "random", np.float32, 140)[None, :]


def _comparisons(u, p):
    """Every comparison of ``u`` with ``p`` in both orders, as the bits of an int32 (each a draw's
    word against a threshold of p's in the kernel: compiler/streams.U24_FORMS)."""
    tests = [u > p, u >= p, u < p, u <= p, p > u, p >= u, p < u, p <= u]
    return sum(t * np.int32(1 << k) for k, t in enumerate(tests))


_SPECIAL = [np.float32(v) for v in (0.0, -0.0, 2.0**-24, 2.0**-25, 1 - 2.0**-24, 1.0, -1.0,
                                     0.1, np.nan, np.inf, -np.inf)]


def _near(v: np.float32, k: int) -> np.float32:
    """Variant ``k % 5`` of a stream value: itself, a grid step (2**-24) above or below, its
    float32 neighbours (between grid points below 0.5)."""
    step = np.float32(2.0**-24)
    return [v, v + step, v - step, np.nextafter(v, np.float32(2)),
            np.nextafter(v, np.float32(-1))][k % 5]


def uniform_thresholds_by_row(seed):
    """A float32 uniform compared with a column of edge thresholds (the rows walk: each row's
    thresholds once a row), with 128-bit vectors: rows 0-14 against one of their own values and
    its neighbours, the rest against specials."""
    shape = (15 + len(_SPECIAL), 136)
    stream = uniform_f32(seed, shape[0] * shape[1]).reshape(shape)
    p = np.array([_near(stream[i, 3], i) for i in range(15)] + _SPECIAL, np.float32)[:, None]
    u = fa.random.default_rng(seed).random(shape, dtype=np.float32)
    return _comparisons(u, fa.asarray(p)), lambda s: _comparisons(
        s(seed, "random", np.float32, shape[0] * shape[1]).reshape(shape), p)


def masked_half_specials(seed):
    """float16 values times a mask, the mask on either side (an exact product in the kernel, no
    rounding): infinities and NaN times 0, signed zeros, the largest and smallest halves."""
    x = _data(seed, 1029, np.float16)
    x[:8] = [np.inf, -np.inf, np.nan, -0.0, 0.0, 65504, -6e-8, 6e-8]
    x[8:16] = x[:8]
    rng = fa.random.default_rng(seed)
    keep = rng.random(1029, dtype=np.float32) < np.float32(0.5)
    fx = fa.asarray(x)
    result = fx * keep - keep * fx[::-1]

    def expected(s):
        k = s(seed, "random", np.float32, 1029) < np.float32(0.5)
        with np.errstate(invalid="ignore"):   # inf * 0, as the kernel computes it
            return x * k - k * x[::-1]
    return result, expected


CASES = [noise_add_flat, dropout_f16, two_word_draws, rows, tiled, nd_views, broadcast_draw,
         uniform_thresholds_by_row, masked_half_specials]


def scalar_comparisons(seed: int, p, n: int = 1003):
    """``(result, expected)``: a float32 uniform compared with the scalar ``p`` (a Python float:
    a float32 comparison; a np.float64: a float64 one), flat with vectors and a tail."""
    u = fa.random.default_rng(seed).random(n, dtype=np.float32)
    return _comparisons(u, p), lambda s: _comparisons(s(seed, "random", np.float32, n), p)


def scalar_edges(seed: int, n: int = 1003) -> list:
    """Edge thresholds of the stream :func:`scalar_comparisons` draws, as Python floats: three
    of its values and their neighbours, and the specials."""
    stream = uniform_f32(seed, n)
    return [float(v) for v in [_near(stream[i], k) for i in (1, 7, 40) for k in range(5)]
            + _SPECIAL]


def materialised(seed, dist, dtype, size, key=0):
    """The cpu backend's flat draw number ``key`` of ``default_rng(seed)``."""
    rng = fa.random.default_rng(seed)
    for _ in range(key):
        rng.random(1)
    if dist == "integers":
        return rng.integers(-5, 7, size, dtype=dtype).get()
    draw = rng.random if dist == "random" else rng.standard_normal
    return draw(size, dtype=dtype).get()
