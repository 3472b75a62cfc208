"""``fa.nextafter`` compiles to PTX for sm_90 without a GPU: the float's bits reinterpreted in
registers (libdevice's ``float_as_int`` family: ``mov.b32``/``mov.b64``, no memory round trip and
no call), at float16, float32 and float64, fused with the ops around it."""

import re

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config


@pytest.fixture(autouse=True)
def cpu_arrays():
    with config.override(BACKEND="cpu"):
        yield


@pytest.mark.parametrize("dtype, reg", [(np.float16, "b32"), (np.float32, "b32"),
                                        (np.float64, "b64")], ids=["float16", "float32",
                                                                   "float64"])
def test_nextafter_reinterprets_bits_in_registers(dtype, reg):
    rng = np.random.default_rng(3204)
    x = fa.asarray(rng.standard_normal(4096).astype(dtype))
    ptx = fa.explain(fa.nextafter(x * 2, x) + 1, arch="sm_90").ptx
    assert ".entry" in ptx and "call" not in ptx.split(".entry", 1)[1]
    assert re.search(rf"mov\.{reg}\s+%f[d]?\d+, %r[d]?\d+", ptx), "bits back to a float"
    assert re.search(rf"mov\.{reg}\s+%r[d]?\d+, %f[d]?\d+", ptx), "a float's bits"
