"""Float division compiles to PTX for sm_90 (no GPU needed) by one rule
(``compiler/divisions.by_reciprocal``): a float32 division by a divisor computed outside its
dividend's loop takes the divisor's reciprocal once and a multiply and two fmas an element,
``div.rn`` only on a side block for dividends outside the reciprocal's span (zeros stay on the fast
path); a division by per-element values is a plain ``div.rn`` with no selects around it."""

import re

import numpy as np
import pytest

pytest.importorskip("numba.cuda")

import fusedarrays as fa  # noqa: E402
from fusedarrays import config  # noqa: E402


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):   # arrays on the cpu; PTX for sm_90 by arch=
        yield


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
def test_division_by_a_scalar_takes_its_reciprocal_once(divisor):
    x = fa.asarray(np.random.default_rng(1621).standard_normal(4096).astype(np.float32))
    b = 1.7 if divisor == "python float" else fa.asarray(np.float32(1.7))
    ex = fa.explain(x / b, arch="sm_90")
    assert ex.vector_width == 4 and "fa_divby_f32" in ex.source
    _uniform_divisions(ex.ptx, 4)


def test_division_by_a_rows_constant_takes_its_reciprocal_once_a_row():
    rng = np.random.default_rng(1622)
    x = fa.asarray(rng.standard_normal((64, 256)).astype(np.float32))
    s = fa.asarray(rng.standard_normal((64, 1)).astype(np.float32))
    ex = fa.explain(x / s, arch="sm_90")
    assert ex.plan.schedule == "rows" and "fa_divby_f32" in ex.source
    _uniform_divisions(ex.ptx, 4)


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


def test_float64_division_by_a_scalar_is_a_plain_div_rn():
    x = fa.asarray(np.random.default_rng(1624).standard_normal(4096))
    ptx = fa.explain(x / 1.7, arch="sm_90").ptx
    assert len(re.findall(r"div\.rn\.f64", ptx)) >= 2
    assert not re.search(r"selp\.f64|setp\.\w+\.f64|rcp\.|fma\.", ptx)
