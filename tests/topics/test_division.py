"""Float division gives NumPy's IEEE quotient bit for bit, on every tier.

- Every tier (``tests/divisioncases.py``): divisions by a divisor computed outside its dividend's
  loop, the generated reciprocal and ``fa_divby`` lines in every walk.
- cuda: ``fa_div`` (div.rn) by per-element divisors, ``fa_divby`` from the reciprocal of a
  divisor computed outside the dividend's loop (a scalar, a 0-d array, a row's constant; zero
  dividends on its fast path), over every finite float16 pair and random float32 bit patterns
  of every exponent, through the rows and the flat walks.
- ptx: one rule (``compiler/divisions.by_reciprocal``) in PTX for sm_90: a float32 division by a
  divisor computed outside its dividend's loop takes the divisor's reciprocal once and a multiply
  and two fmas an element, ``div.rn`` only on a side block for dividends outside the
  reciprocal's span (zeros stay on the fast path); a division by per-element values is a plain
  ``div.rn`` with no selects around it. The device's arithmetic of those lines is also checked on
  numba's CPU target (``tests/ptx/test_intrinsic_values.py``).
"""

import re

import numpy as np
import pytest
from divisioncases import DIVISORS, check_uniform_divisions

import fusedarrays as fa

# (seed, size) of tests/divisioncases.py's walks on each tier: the simulator's kept small
UNIFORM = {"cpu": (1631, 4099), "sim": (1632, 203), "cuda": (1644, 1 << 16)}


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_uniform_divisors_divide_as_numpy(tier):
    seed, size = UNIFORM[tier]
    check_uniform_divisions(seed, size=size)


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


@pytest.mark.tiers("cuda")
def test_every_float16_pair():
    """A (256, 63488) block of every finite half over a column of 256 divisors at a time."""
    a = np.broadcast_to(HALVES, (256, HALVES.size))
    block = fa.asarray(a.copy())
    for start in range(0, HALVES.size, 256):
        b = HALVES[start:start + 256].reshape(-1, 1)
        message = _mismatches(a, b, (block / fa.asarray(b)).get())
        assert not message, f"divisors from {start}: {message}"


@pytest.mark.parametrize("seed", [1601, 1602, 1603])
@pytest.mark.tiers("cuda")
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


@pytest.mark.tiers("cuda")
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


@pytest.mark.parametrize("seed", [1605, 1606])
@pytest.mark.tiers("cuda")
def test_row_kernel_divides_by_its_row_constant_as_numpy(seed):
    """A row kernel's division by a value constant along the row goes through the row's
    reciprocal (fa_divrcp, fa_divby): random float32 bit patterns as dividends (zeros, signed,
    and subnormals among them) over divisors of every kind, and near 1."""
    rng = np.random.default_rng(seed)
    print(f"{seed=}")
    for near_one in (False, True):
        a = rng.integers(0, 1 << 32, (256, 4096), dtype=np.uint64).astype(np.uint32)
        a = a.view(np.float32)
        a = np.where(np.isfinite(a), a, np.float32(0.5))   # a row's max must stay finite
        a[:, :64], a[:, 64:80] = 0.0, -0.0
        b = rng.integers(0, 1 << 32, (256, 1), dtype=np.uint64).astype(np.uint32).view(np.float32)
        if near_one:
            b = (rng.standard_normal((256, 1)) * 10.0 ** rng.integers(-3, 4, (256, 1)))
            b = b.astype(np.float32)
        b[:4, 0] = [np.inf, -np.inf, np.nan, 0.0]
        fa_a = fa.asarray(a)
        m = fa_a.max(axis=-1, keepdims=True)
        got = (fa_a / (fa.asarray(b) + (m - m))).get()     # one row kernel: the max, then a / b
        want_m = a.max(axis=-1, keepdims=True)
        with np.errstate(all="ignore"):
            message = _mismatches(a, b + (want_m - want_m), got)
        assert not message, f"{near_one=}: {message}"


@pytest.mark.tiers("cuda")
def test_row_reciprocal_quotient_over_every_dividend_significand():
    """fa_divby(a, b, fa_divrcp(b)) against div.rn for every float32 a in [1, 2) over 4096
    divisors spread over [1, 2) and its ends (cuda/division.py: every one of the 2^23 divisors
    once took 75 s on the H100, none differing); powers of two scale the rest."""
    from numba import cuda, types

    from fusedarrays.cuda import intrinsics

    source = '''
def check(bad, divisors):
    b = divisors[cuda.blockIdx.x]
    y = fa_divrcp_f32(b)
    i = cuda.threadIdx.x
    count = 0
    while i < 8388608:
        a = cv_f32(1.0) + cv_f32(i) * cv_f32(1.1920928955078125e-07)
        if fa_divby_f32(a, b, y) != a / b:
            count += 1
        i += cuda.blockDim.x
    if count:
        cuda.atomic.add(bad, 0, count)
'''
    namespace = dict(intrinsics.device_namespace({}))
    exec(source, namespace)
    check = cuda.jit(types.void(types.int64[:], types.float32[:]))(namespace["check"])
    steps = np.r_[np.arange(0, 1 << 23, 2048), [1, 2, 3, (1 << 23) - 2, (1 << 23) - 1]]
    divisors = (np.float32(1) + steps.astype(np.float32) * np.float32(2.0 ** -23))
    bad = cuda.to_device(np.zeros(1, np.int64))
    check[divisors.size, 256](bad, cuda.to_device(divisors.astype(np.float32)))
    assert bad.copy_to_host()[0] == 0


@pytest.mark.parametrize("seed", [1641, 1642])
@pytest.mark.tiers("cuda")
def test_division_by_a_scalar_over_random_patterns(seed):
    """Random float32 bit patterns (every exponent; a fifth of them ±0) over Python floats,
    NumPy float32 scalars and 0-d arrays of every kind (random bit patterns and DIVISORS), each
    through the divisor's reciprocal (fa_divby in the kernel's source)."""
    rng = np.random.default_rng(seed)
    print(f"{seed=}")
    a = rng.integers(0, 1 << 32, 1 << 22, dtype=np.uint64).astype(np.uint32).view(np.float32)
    a[::5], a[1::10] = 0.0, -0.0
    a[2::9] = (rng.standard_normal(a[2::9].size) * 1e3).astype(np.float32)
    x = fa.asarray(a)
    bits = rng.integers(0, 1 << 32, 24, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near = (rng.standard_normal(8) * 10.0 ** rng.integers(-8, 8, 8)).astype(np.float32)
    for b in [*DIVISORS, *bits, *near]:
        for divisor in (b, np.float32(b), fa.asarray(np.float32(b))):
            assert "fa_divby_f32" in fa.explain(x / divisor).source
            want_b = np.float32(b)
            message = _mismatches(a, np.reshape(want_b, (1,)), (x / divisor).get())
            assert not message, f"/ {type(divisor).__name__} {b!r}: {message}"


@pytest.mark.tiers("cuda")
def test_float16_dropout():
    """``x * mask / (1 - p)`` over float16 bit patterns (f32's reciprocal quotient rounded to
    float16 is NumPy's float16 quotient)."""
    rng = np.random.default_rng(1643)
    h = rng.integers(0, 1 << 16, 1 << 22, dtype=np.uint64).astype(np.uint16).view(np.float16)
    mask = rng.random(h.shape) > 0.1
    x, m = fa.asarray(h), fa.asarray(mask)
    for p in (0.1, 0.5, 0.9):
        with np.errstate(all="ignore"):
            want = h * mask / np.float16(1 - p)
        got = (x * m / (1 - p)).get()
        assert _same(got, want).all(), f"{p=}: {int((~_same(got, want)).sum())} differ"


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

def _blocks(ptx: str) -> list[list[str]]:
    """The kernel's basic blocks: its instructions between labels, comments dropped."""
    blocks = [[]]
    for line in ptx[ptx.index("{"):].splitlines():
        line = line.split("//")[0].strip()
        if re.match(r"^\$L\w+:$", line):
            blocks.append([])
        elif line and line not in "{}":
            blocks[-1].append(line)
    return blocks


def _uniform_divisions(ptx: str, lanes: int, kind: str = "f32") -> None:
    """One reciprocal; in the loop two fmas a lane and every div.rn in a block of its own (the
    fallback for an out-of-span dividend: the division and the branch back). LLVM also
    unswitches the loop on the divisor's being in span: that copy, for divisors such as 0 or
    inf, divides every element and holds no fma."""
    assert len(re.findall(rf"rcp\.rn\.{kind}", ptx)) == 1
    assert len(re.findall(rf"fma\.rn\.{kind}", ptx)) >= 2 * lanes
    fallbacks = 0
    for block in _blocks(ptx):
        if not any(f"div.rn.{kind}" in ins for ins in block):
            continue
        if len(block) == 2 and block[1].startswith("bra"):
            fallbacks += 1
        else:   # the loop for a divisor out of span
            assert not any(f"fma.rn.{kind}" in ins for ins in block), block
    assert fallbacks >= lanes


@pytest.mark.parametrize("divisor", ["python float", "0-d array"])
@pytest.mark.tiers("ptx")
def test_division_by_a_scalar_takes_its_reciprocal_once(divisor):
    x = fa.asarray(np.random.default_rng(1621).standard_normal(4096).astype(np.float32))
    b = 1.7 if divisor == "python float" else fa.asarray(np.float32(1.7))
    ex = fa.explain(x / b, arch="sm_90")
    assert ex.vector_width == 4 and "fa_divby_f32" in ex.source
    _uniform_divisions(ex.ptx, 4)


@pytest.mark.tiers("ptx")
def test_division_by_a_rows_constant_takes_its_reciprocal_once_a_row():
    rng = np.random.default_rng(1622)
    x = fa.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    s = fa.asarray(rng.standard_normal((64, 1)).astype(np.float32))
    ex = fa.explain(x / s, arch="sm_90")
    assert ex.plan.schedule == "rows" and "fa_divby_f32" in ex.source
    _uniform_divisions(ex.ptx, 4)


@pytest.mark.tiers("ptx")
def test_dropout_divides_by_the_reciprocal_of_1_minus_p():
    """``x * mask / (1 - p)`` in float16: every masked element is a zero dividend, which
    div.rn.f32 would send to its slow-path subroutine. float16 operands all lie in the
    reciprocal's span, so the division is ``fa_divbyh``: one reciprocal, a multiply and two fmas
    a lane and a select, with no div.rn and no branch in the loop (cuda/division.py)."""
    x = fa.asarray(np.random.default_rng(123).standard_normal(4096).astype(np.float16))
    rng = fa.random.default_rng(4)
    ex = fa.explain(x * (rng.random(x.shape, dtype=np.float32) > 0.1) / (1 - 0.1),
                    arch="sm_90")
    assert "fa_divbyh_f32" in ex.source and "fa_divrcph_f32" in ex.source
    assert len(re.findall(r"rcp\.rn\.f32", ex.ptx)) == 1
    assert "div.rn" not in ex.ptx
    assert len(re.findall(r"fma\.rn\.f32", ex.ptx)) >= 2 * 8
    assert len(re.findall(r"selp\.f32", ex.ptx)) >= 8


@pytest.mark.parametrize("kind", ["f32", "f64"])
@pytest.mark.tiers("ptx")
def test_division_by_an_array_is_a_plain_div_rn(kind):
    """Black-Scholes' divisions: no zero-dividend selects (they cost a compute-bound kernel
    a tenth of its speed on the H100), no reciprocal, no float compares."""
    rng = np.random.default_rng(1623)
    dtype = np.float32 if kind == "f32" else np.float64
    x, z = (fa.asarray(rng.standard_normal(4096).astype(dtype)) for _ in range(2))
    for expr in (x / z, 1.0 / (1.0 + z)):
        ptx = fa.explain(expr, arch="sm_90").ptx
        assert len(re.findall(rf"div\.rn\.{kind}", ptx)) >= 1
        assert not re.search(rf"selp\.{kind}|setp\.\w+\.{kind}|rcp\.|fma\.", ptx)


@pytest.mark.tiers("ptx")
def test_float64_division_by_a_scalar_is_a_plain_div_rn():
    x = fa.asarray(np.random.default_rng(1624).standard_normal(4096))
    ptx = fa.explain(x / 1.7, arch="sm_90").ptx
    assert len(re.findall(r"div\.rn\.f64", ptx)) >= 2
    assert not re.search(r"selp\.f64|setp\.\w+\.f64|rcp\.|fma\.", ptx)
