"""NumPy functions on fa arrays on the cuda backend: the implemented ones give device arrays, the
others raise naming themselves; a NumPy argument written in place is refused (an upload copy),
one only read is fine."""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config

SEED = 1311


@pytest.fixture(autouse=True)
def cuda_backend():
    with config.override(BACKEND="cuda"):
        yield


def _host(count=1):
    rng = np.random.default_rng(SEED)
    return [rng.standard_normal(1 << 16).astype(np.float32) for _ in range(count)]


def test_where_and_clip_stay_on_the_device_and_match_numpy():
    (h,) = _host()
    x = fa.asarray(h)
    fa.reset_stats()
    w, c = np.where(x > 0, x, 0.5 * x), np.clip(x, -0.5, 0.5)
    assert isinstance(w, fa.ndarray) and isinstance(c, fa.ndarray)
    assert fa.stats()["launches"] == 0             # lazy: built, not run
    fa.compute(w, c)
    assert fa.stats()["launches"] == 1             # one kernel for both
    assert "on cuda" in repr(w) and "on cuda" in repr(c)
    np.testing.assert_array_equal(w.get(), np.where(h > 0, h, 0.5 * h), err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(c.get(), np.clip(h, -0.5, 0.5), err_msg=f"seed {SEED}")


def test_an_unimplemented_function_raises_naming_it():
    x = fa.asarray(_host()[0])
    for call, named in [(np.average, "np.average"), (np.cov, "np.cov"),
                        (np.maximum.accumulate, "np.maximum.accumulate")]:
        with pytest.raises(fa.UnsupportedOperationError) as info:
            call(x)
        assert str(info.value).startswith(named + " "), info.value


def test_numpy_arguments_read_only_or_not_on_cuda():
    hp, hg = _host(2)

    @fa.fuse
    def descend(p, g, lr):
        p -= lr * g

    frozen = hp.copy()
    frozen.flags.writeable = False
    with pytest.raises(fa.UnsupportedOperationError, match="only copy to the device"):
        descend(frozen, hg, 0.1)               # written: the upload would lose the write
    g = hg.copy()
    g.flags.writeable = False
    p = fa.asarray(hp)
    descend(p, g, 0.1)                         # only read: uploaded, fine
    np.testing.assert_allclose(p.get(), hp - np.float32(0.1) * hg, rtol=1e-6, atol=1e-7,
                               err_msg=f"seed {SEED}")
