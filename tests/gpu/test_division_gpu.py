"""Float division on the device (``fa_div``: a zero dividend kept from the hardware division's
slow path) gives NumPy's IEEE quotient bit for bit, over every finite float16 pair and random
float32 bit patterns of every exponent, through the rows and the flat walks."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def _same(got, want) -> np.ndarray:
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[got.itemsize]
    return (got.view(bits) == want.view(bits)) | (np.isnan(got) & np.isnan(want))


def _mismatches(a: np.ndarray, b: np.ndarray, got: np.ndarray) -> str:
    with np.errstate(all="ignore"):
        want = a / b
    bad = ~_same(got, want)
    if not bad.any():
        return ""
    i = tuple(np.argwhere(bad)[0])
    bi = tuple(min(k, n - 1) for k, n in zip(i, b.shape))
    return (f"{int(bad.sum())} differ; first: {a[i]!r} / {b[bi]!r} gave {got[i]!r}, "
            f"NumPy {want[i]!r}")


HALVES = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
HALVES = HALVES[np.isfinite(HALVES)]       # zeros and subnormals included


def test_every_float16_pair():
    """A (256, 63488) block of every finite half over a column of 256 divisors at a time."""
    a = np.broadcast_to(HALVES, (256, HALVES.size))
    block = fa.asarray(a.copy())
    for start in range(0, HALVES.size, 256):
        b = HALVES[start:start + 256].reshape(-1, 1)
        message = _mismatches(a, b, (block / fa.asarray(b)).get())
        assert not message, f"divisors from {start}: {message}"


@pytest.mark.parametrize("seed", [1601, 1602, 1603])
def test_random_float32_patterns(seed):
    """Dividends and divisors of every exponent (uniform random bits, so subnormals, infinities
    and NaNs too), and near-1 magnitudes where data usually lies."""
    rng = np.random.default_rng(seed)
    print(f"{seed=}")
    for near_one in (False, True):
        a = rng.integers(0, 1 << 32, (64, 1 << 18), dtype=np.uint64).astype(np.uint32)
        a = a.view(np.float32)
        b = rng.integers(0, 1 << 32, (64, 1), dtype=np.uint64).astype(np.uint32).view(np.float32)
        if near_one:
            scale = 10.0 ** rng.integers(-8, 8, (64, 1))
            b = (rng.standard_normal((64, 1)) * scale).astype(np.float32)
            a[:, ::2] = (rng.standard_normal((64, 1 << 17)) * 1e3).astype(np.float32)
            a[:, ::7] = 0.0
        message = _mismatches(a, b, (fa.asarray(a) / fa.asarray(b)).get())
        assert not message, message
        full = np.broadcast_to(b, a.shape).copy()
        message = _mismatches(a, full, (fa.asarray(a) / fa.asarray(full)).get())
        assert not message, message


def test_float64_zero_dividends():
    rng = np.random.default_rng(1604)
    a = rng.standard_normal(1 << 20)
    a[::3] = 0.0
    a[1::9] = -0.0
    b = rng.standard_normal(1 << 20) * 1e-3
    b[::11] = np.inf
    b[::13] = 0.0
    message = _mismatches(a, b, (fa.asarray(a) / fa.asarray(b)).get())
    assert not message, message
    message = _mismatches(a, np.float64(-3.5), (fa.asarray(a) / np.float64(-3.5)).get())
    assert not message, message
