"""fa.random on the cpu backend at its defaults: the streams against a NumPy Philox4x32-10, the
same numbers through every schedule and view, one kernel per fused expression, no recompile for
a new seed, distributions (moments, Kolmogorov-Smirnov against SciPy where installed)."""

import numpy as np
import pytest
import randomcases

import fusedarrays as fa

pytestmark = pytest.mark.usefixtures("cpu_backend")


def test_streams_match_numpy_philox():
    for seed in (0, 7, 2**40 + 3):
        n = 1001
        rng = fa.random.default_rng(seed)
        np.testing.assert_array_equal(rng.random(n, dtype=np.float32).get(),
                                      randomcases.uniform_f32(seed, n, key=0), err_msg=f"{seed=}")
        np.testing.assert_array_equal(rng.random(n).get(),
                                      randomcases.uniform_f64(seed, n, key=1), err_msg=f"{seed=}")
        np.testing.assert_array_equal(rng.integers(-3, 2**32 - 3, n).get(),
                                      randomcases.integers(seed, n, -3, 2**32, key=2),
                                      err_msg=f"{seed=}")
        normal = rng.standard_normal(n).get()
        np.testing.assert_allclose(normal, randomcases.normal_approx(seed, n, key=3),
                                   rtol=1e-13, atol=1e-14, err_msg=f"{seed=}")
        # float32 normals: the same numbers to the accuracy of float32 work, within 4 float32
        # ulps of their pair's radius sqrt(-2 ln u)
        single = fa.random.default_rng(seed)
        for _ in range(3):
            single.random(1)
        pairs = randomcases.normal_approx(seed, n + 1, key=3)
        radius = np.repeat(np.hypot(pairs[0::2], pairs[1::2]), 2)[:n]
        error = np.abs(single.standard_normal(n, dtype=np.float32).get() - normal)
        assert np.all(error <= 4 * 2.0**-24 * radius), (seed, np.max(error / radius) * 2**24)


@pytest.mark.parametrize("case", randomcases.CASES, ids=lambda c: c.__name__)
def test_draws_read_the_same_numbers_in_every_schedule(case):
    seed = 1500 + randomcases.CASES.index(case)
    result, expected = case(seed)
    np.testing.assert_array_equal(result.get(), expected(randomcases.materialised),
                                  err_msg=f"{seed=}")


def test_schedules_reached():
    schedules = {case.__name__: fa.explain(case(3)[0]).plan.schedule
                 for case in randomcases.CASES}
    assert {"flat", "rows", "tiled", "nd"} <= set(schedules.values()), schedules


def test_noise_add_is_one_kernel_reading_x_only():
    x = fa.asarray(np.random.default_rng(5).standard_normal(4096).astype(np.float32))
    y = x + 0.1 * fa.random.default_rng(5).standard_normal(x.shape, dtype=np.float32)
    plan = fa.explain(y).plan
    assert [o.output for o in plan.operands] == [False, True]   # reads x, writes y: no noise
    fa.reset_stats()
    y.compute()
    assert fa.stats()["launches"] == 1


def test_new_seed_or_draw_never_recompiles():
    x = fa.asarray(np.random.default_rng(6).standard_normal(2048).astype(np.float32))
    first = (x * fa.random.default_rng(1).random(2048, dtype=np.float32)).get()
    fa.reset_stats()
    rng = fa.random.default_rng(2)
    values = [(x * rng.random(2048, dtype=np.float32)).get() for _ in range(3)]
    assert fa.stats()["compiles"] == 0
    assert not np.array_equal(values[0], values[1]) and not np.array_equal(first, values[0])


def test_stream_prefix_and_write_into_views():
    seed = 77
    full = fa.random.default_rng(seed).standard_normal(500).get()
    np.testing.assert_array_equal(fa.random.default_rng(seed).standard_normal(37).get(),
                                  full[:37])
    host = np.random.default_rng(seed).standard_normal(1000)
    out = fa.asarray(host.copy())
    out[::-2] = fa.random.default_rng(seed).standard_normal(500)
    expect = host.copy()
    expect[::-2] = full
    np.testing.assert_array_equal(out.get(), expect, err_msg=f"{seed=}")
    into = fa.empty(500)
    fa.random.default_rng(seed).standard_normal(out=into)
    np.testing.assert_array_equal(into.get(), full)


def test_moments_and_ks():
    seed, n = 2024, 200_000
    rng = fa.random.default_rng(seed)
    u32, u64 = rng.random(n, dtype=np.float32).get(), rng.random(n).get()
    z = rng.standard_normal(n).get()
    g = rng.normal(3.0, 2.0, n).get()
    k = rng.integers(10, 20, n).get()
    b = rng.bernoulli(0.3, n).get()
    for u in (u32, u64):
        assert 0.0 <= u.min() and u.max() < 1.0
        assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / n) and abs(u.var() - 1 / 12) < 2e-3
    assert abs(z.mean()) < 4 / np.sqrt(n) and abs(z.var() - 1) < 0.015
    assert abs(g.mean() - 3) < 8 / np.sqrt(n) and abs(g.std() - 2) < 0.02
    assert abs((z ** 3).mean()) < 0.03 and abs((z ** 4).mean() - 3) < 0.08
    assert k.min() == 10 and k.max() == 19 and k.dtype == np.int64
    counts = np.bincount(k - 10, minlength=10)
    assert np.all(np.abs(counts - n / 10) < 5 * np.sqrt(n / 10)), counts
    assert b.dtype == np.bool_ and abs(b.mean() - 0.3) < 5 * np.sqrt(0.21 / n)
    stats = pytest.importorskip("scipy.stats")
    for sample, cdf in ((u32, "uniform"), (u64, "uniform"), (z, "norm")):
        assert stats.kstest(sample, cdf).pvalue > 1e-3, (cdf, seed)


def test_dtypes_and_errors():
    rng = fa.random.default_rng(0)
    assert rng.random(3).dtype == np.float64 and rng.uniform(1, 2, 3).dtype == np.float64
    assert rng.standard_normal(3, dtype=np.float32).dtype == np.float32
    assert rng.integers(0, 5, 3, dtype=np.uint8).dtype == np.uint8
    assert rng.random().shape == ()
    with pytest.raises(fa.DTypeError, match="float16"):
        rng.random(3, dtype=np.float16)
    with pytest.raises(ValueError, match="low >= high"):
        rng.integers(5, 5)
    with pytest.raises(ValueError, match="out of range"):
        rng.integers(0, 300, dtype=np.uint8)
    with pytest.raises(fa.UnsupportedOperationError, match="2\\*\\*32"):
        rng.integers(0, 2**40)
    with pytest.raises(ValueError):
        fa.random.default_rng(-1)

    @fa.fuse
    def noisy(x):
        return x + rng.standard_normal(x.shape)

    with pytest.raises(fa.UnsupportedOperationError, match="fa.fuse"):
        noisy(fa.asarray(np.ones(4)))


def test_draws_passed_to_and_captured_by_fuse():
    seed = 1600
    rng = fa.random.default_rng(seed)
    host = np.random.default_rng(seed).standard_normal(300)
    x = fa.asarray(host)
    captured = rng.standard_normal(300)

    @fa.fuse
    def add(x, n):
        return x + n

    @fa.fuse
    def scaled(x):
        return x * captured

    first, second = rng.standard_normal(300), rng.standard_normal(300)
    np.testing.assert_array_equal(add(x, first).get(), host + first.get(), err_msg=f"{seed=}")
    np.testing.assert_array_equal(add(x, second).get(), host + second.get(), err_msg=f"{seed=}")
    for _ in range(2):                    # a captured draw is one array: the same each call
        np.testing.assert_array_equal(scaled(x).get(), host * captured.get())


def test_permutation_sorts_the_stream_stably():
    """``permutation(n)`` is the stable argsort of one float64 draw (the stream's own numbers,
    so the same on every backend); an array is permuted along an axis by a fused gather."""
    for seed in (3, 2**33 + 1):
        rng = fa.random.default_rng(seed)
        perm = rng.permutation(5000)
        want = np.argsort(randomcases.uniform_f64(seed, 5000, key=0), kind="stable")
        assert perm.dtype == np.int64
        np.testing.assert_array_equal(perm.get(), want, err_msg=f"{seed=}")
        host = np.random.default_rng(seed).standard_normal((6, 300)).astype(np.float32)
        x = fa.asarray(host)
        got = rng.permutation(x[:, ::-1], axis=1) * 2       # key 1: 300 keys
        order = np.argsort(randomcases.uniform_f64(seed, 300, key=1), kind="stable")
        np.testing.assert_array_equal(got.get(), host[:, ::-1][:, order] * 2,
                                      err_msg=f"{seed=}")
        rng.shuffle(x)                                      # key 2: 6 keys, in place
        order = np.argsort(randomcases.uniform_f64(seed, 6, key=2), kind="stable")
        np.testing.assert_array_equal(x.get(), host[order], err_msg=f"{seed=}")
    assert fa.random.default_rng(1).permutation(0).shape == (0,)
    with pytest.raises(ValueError, match="non-negative"):
        fa.random.default_rng(1).permutation(-1)
    with pytest.raises(np.exceptions.AxisError):
        fa.random.default_rng(1).permutation(fa.asarray(np.float32(1.0)))
    with pytest.raises(TypeError, match="fa.ndarray"):
        fa.random.default_rng(1).shuffle(np.arange(3))


@pytest.mark.parametrize("wide", [False, True], ids=["float32", "float64"])
def test_uniform_comparisons_with_edge_scalars_match_numpy(wide):
    """A float32 uniform compared with a scalar threshold (in the kernel, the word's top 24 bits
    against an integer threshold of the scalar's): each edge value, both orders, every op, a
    float32 comparison (a Python float) and a float64 one (a NumPy float64)."""
    seed = 1620 + wide
    for p in randomcases.scalar_edges(seed):
        p = np.float64(p) if wide else p
        result, expected = randomcases.scalar_comparisons(seed, p)
        np.testing.assert_array_equal(result.get(), expected(randomcases.materialised),
                                      err_msg=f"{seed=} {p=}")
