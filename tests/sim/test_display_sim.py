"""Reprs and fa.profile() on the sim backend: values read without a launch; a profile of the
simulated CUDA kernel, which has no copy bandwidth to compare with. Arrays stay small."""

import numpy as np
import pytest
from htmlcheck import check_html

import fusedarrays as fa
from fusedarrays import config

SEED = 1609


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


def test_reprs_and_a_profile_on_the_simulator():
    host = np.random.default_rng(SEED).standard_normal((40, 30)).astype(np.float32)
    x = fa.asarray(host)
    before = fa.stats()
    for view, hv in ((x, host), (x[::-1, ::7], host[::-1, ::7])):
        want = np.array2string(hv, separator=", ", prefix="fa.ndarray(")
        assert repr(view).startswith(f"fa.ndarray({want}, dtype=float32"), SEED
        check_html(view._repr_html_())
    y = x[:4, :8] * 2.0 + 1.0
    check_html(y._repr_html_())
    assert fa.stats()["launches"] == before["launches"] and y.pending
    with fa.profile() as p:
        got = y.get()
    np.testing.assert_allclose(got, host[:4, :8] * 2 + 1, rtol=1e-6, err_msg=f"seed {SEED}")
    (row,) = p.kernels()
    assert row["launches"] == 1 and row["elements"] == 32 and row["device_s"] > 0
    assert p.copy_bandwidth == {"sim": None} and row["of_copy"] is None
    assert "of copy" in str(p) and check_html(p._repr_html_())
