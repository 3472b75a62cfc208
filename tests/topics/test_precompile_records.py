"""fa.precompile builds the launch records of the evaluations it is given: their first
evaluation is a look-up (nothing planned, nothing compiled), on the cpu backend at its defaults."""

import numpy as np

import fusedarrays as fa

SEED = 20261124


def test_precompile_builds_each_evaluations_launch_record():
    rng = np.random.default_rng(SEED)
    a, b = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    x, y = fa.asarray(a), fa.asarray(b)
    one = x * y + 2.5
    pair = (fa.sqrt(fa.abs(x)) - y, x * 3.0)          # evaluated together: one launch
    report = fa.precompile(one, pair)
    assert report["kernels"] == 2 and one.pending and pair[0].pending
    fa.reset_stats()
    got = one.get()
    fa.compute(*pair)
    stages = dict(fa.timings())
    assert "plan" not in stages and "codegen" not in stages, stages
    stats = fa.stats()
    assert stats["launches"] == 2 and stats["compiles"] == 0 and stats["memory_hits"] >= 2
    np.testing.assert_allclose(got, a * b + np.float32(2.5), rtol=1e-6, err_msg=f"seed {SEED}")
    np.testing.assert_allclose(pair[0].get(), np.sqrt(np.abs(a)) - b, rtol=1e-6)
    np.testing.assert_allclose(pair[1].get(), a * np.float32(3), rtol=1e-6)
