"""fa.profile() and the reprs on the GPU: CUDA-event device times, the copy-bandwidth reference,
compile stages by name; reprs read values without a launch."""

import numpy as np
import pytest
from htmlcheck import check_html

import fusedarrays as fa
from fusedarrays import config

SEED = 1607


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def rand(shape, seed=SEED):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_profile_times_launches_with_events_against_the_copy_bandwidth():
    n = 1 << 24
    ha, hb, hc = rand(n), rand(n, SEED + 1), rand(n, SEED + 2)
    a, b, c = fa.asarray(ha), fa.asarray(hb), fa.asarray(hc)
    with fa.profile() as p:
        for _ in range(4):
            r = (a * b + c * 0.75 - fa.hypot(a, c)).compute()
    want = ha * hb + hc * np.float32(0.75) - np.hypot(ha, hc)
    np.testing.assert_allclose(r.get(), want, rtol=2e-6, atol=2e-6, err_msg=f"seed {SEED}")
    assert len(p.launches) == 4 and all(x["bytes"] == 16 * n for x in p.launches)
    stages = {c["stage"] for c in p.compiles}
    assert {"numba typing+lowering", "nvvm", "link"} <= stages, stages  # a fresh cache folder
    (row,) = p.kernels()
    copy = p.copy_bandwidth[row["device"]]
    assert copy > 5e11, copy                      # an H100 copies at ~3 TB/s
    assert 0.3 < row["of_copy"] < 1.2, row        # an elementwise kernel runs near copy speed
    assert all(0 < x["device_s"] < 0.05 for x in p.launches)
    check_html(p._repr_html_())


def test_reprs_on_the_gpu_read_values_without_a_launch():
    host = rand((300, 400))
    x = fa.asarray(host)
    views = [x, x.T, x[::-2, 3::5], x[::-1]]
    before = fa.stats()
    for v, hv in zip(views, [host, host.T, host[::-2, 3::5], host[::-1]]):
        want = np.array2string(hv, separator=", ", prefix="fa.ndarray(")
        assert repr(v).startswith(f"fa.ndarray({want}, dtype=float32"), SEED
        check_html(v._repr_html_())
    pending = x * 2.0 + x.T.T
    check_html(pending._repr_html_())
    after = fa.stats()
    assert (after["compiles"], after["launches"]) == (before["compiles"], before["launches"])
