"""fa.profile(): per launch time, bytes and bandwidth, compile stages by name, text and HTML (on
cpu); on cuda CUDA-event device times, the copy-bandwidth reference, and reprs that read values
without a launch."""

import time

import numpy as np
import pytest
from htmlcheck import check_html

import fusedarrays as fa
from fusedarrays.runtime import records

SEED = 1603


def rand(shape, seed=SEED):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@fa.fuse
def axpy_clip(y, x, a):
    y[...] = np.clip(a * x + y, -1.5, 1.5)


def test_profile_reports_launches_bytes_and_compile_stages():
    hx, hy, hb = rand((300, 257)), rand((300, 257), SEED + 1), rand(257, SEED + 2)
    x, y, b = fa.asarray(hx), fa.asarray(hy), fa.asarray(hb)
    before = fa.stats()
    with fa.profile() as p:
        # a structure no other test builds: its kernel compiles here
        got = (fa.hypot(x, y) * 3.0 - fa.arctan(x[:, ::-1]) + b[None, :]).get()
        again = (fa.hypot(x, y) * 3.0 - fa.arctan(x[:, ::-1]) + b[None, :]).get()
        ys = [fa.asarray(rand(n, SEED + n)) for n in (100, 1000, 5000)]
        axpy_clip.foreach(ys, [fa.asarray(rand(n, SEED + 2 * n)) for n in (100, 1000, 5000)], 0.5)
    for n, yn in zip((100, 1000, 5000), ys):
        want_y = np.clip(np.float32(0.5) * rand(n, SEED + 2 * n) + rand(n, SEED + n), -1.5, 1.5)
        np.testing.assert_allclose(yn.get(), want_y, rtol=1e-6, err_msg=f"seed {SEED}")
    after = fa.stats()
    want = np.hypot(hx, hy) * np.float32(3) - np.arctan(hx[:, ::-1]) + hb[None, :]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(got, again)
    assert len(p.launches) == after["launches"] - before["launches"] == 3
    first = p.launches[0]
    assert first["elements"] == 300 * 257 and first["device_s"] > 0 and first["host_s"] > 0
    # x (twice: two views), y and the result whole, b once per column (broadcast along rows)
    assert first["bytes"] == 4 * (4 * 300 * 257 + 257)
    assert p.launches[2]["elements"] == 6100 and p.launches[2]["bytes"] == 6100 * 4 * 3
    stages = {c["stage"] for c in p.compiles if c["kernel"] == first["kernel"]}
    assert "cpu compile (numba)" in stages or "cpu load (numba cache)" in stages, stages
    # numba's stage, at the first call, says why as the compile before it did
    assert all(c["why"] for c in p.compiles if c["kernel"] == first["kernel"]), p.compiles
    assert not any(c["stage"] == "first launch" for c in p.compiles)
    rows = p.kernels()
    assert rows[0]["launches"] == 2 and rows[0]["bandwidth"] > 0
    assert p.copy_bandwidth["cpu"] > 1e8 and 0 < rows[0]["of_copy"] < 10
    text = str(p)
    assert "fa.profile: 3 launch(es)" in text and first["kernel"] in text
    tags = check_html(p._repr_html_())
    assert tags.count("svg") == 1 and "table" in tags


def test_no_profile_no_cost_and_nesting_passes_launches_out():
    x = fa.asarray(rand(1000))
    assert records.profiling[0] is None
    (x * 2.0).get()   # a launch with no profile active records nothing anywhere
    with fa.profile() as outer:
        (x + 1.0).get()
        with fa.profile() as inner:
            (x - 1.0).get()
        assert records.profiling[0] is outer
    assert records.profiling[0] is None
    assert len(inner.launches) == 1 and len(outer.launches) == 2


def test_timings_name_the_cpu_compile_and_not_the_first_launch():
    x = fa.asarray(rand(4096))
    fa.reset_stats()
    np.testing.assert_allclose((fa.cbrt(x) * fa.expm1(x) + 0.25).get(),
                               np.cbrt(rand(4096)) * np.expm1(rand(4096)) + np.float32(0.25),
                               rtol=1e-5, atol=1e-6)
    t = fa.timings()
    compiled = t.get("cpu compile (numba)", (0, 0))[1] + t.get("cpu load (numba cache)",
                                                                (0, 0))[1]
    assert compiled > 0 and t["first launch"][1] < compiled, str(t)


STUB_S = 0.02   # a stubbed step of the evaluation sleeps this long


def _slowed(fn):
    def slow(*args, **kwargs):
        time.sleep(STUB_S)
        return fn(*args, **kwargs)
    return slow


def test_host_time_per_evaluation_covers_the_whole_evaluation(monkeypatch):
    """Host time is the evaluation's, entry to return: a slow step before the launch (the
    result's allocation, the record's key and look-up, a fused call's run) or after it
    (foreach assembling its results) is in it, not only the launch call; evaluations inside
    another count as part of it."""
    hx = rand((64, 130))
    x = fa.asarray(hx)
    out = fa.empty((64, 130), np.float32)
    lists = [fa.asarray(rand(n, SEED + n)) for n in (10, 300)]

    def step(a):
        return fa.sinh(a) * 0.75 - a

    # compile, and build each evaluation's launch record, outside the profile
    step(x).get(), fa.compute(step(x), step(x) + 1.0), fa.compute(step(x), out=out)
    axpy_clip(out, x, 0.5), axpy_clip.foreach(lists, [fa.asarray(rand(n)) for n in (10, 300)], 0.25)
    from fusedarrays.fuse import foreach, function
    from fusedarrays.runtime import realize
    monkeypatch.setattr(realize, "new_buffer", _slowed(realize.new_buffer))
    monkeypatch.setattr(realize, "_run_key", _slowed(realize._run_key))
    monkeypatch.setattr(function._Entry, "run", _slowed(function._Entry.run))
    monkeypatch.setattr(foreach, "_assemble", _slowed(foreach._assemble))
    with fa.profile() as p:
        got = step(x).get()
        fa.compute(step(x), step(x) + 1.0)
        fa.compute(step(x), out=out)                 # a write inside fa.compute: one evaluation
        axpy_clip(out, x, 0.5)
        axpy_clip.foreach(lists, [fa.asarray(rand(n)) for n in (10, 300)], 0.25)
    np.testing.assert_allclose(got, np.sinh(hx) * np.float32(0.75) - hx, rtol=1e-5, atol=1e-6)
    entries = [e["entry"] for e in p.evaluations]
    assert entries == ["x.get()", "fa.compute", "fa.compute", "axpy_clip()",
                       "axpy_clip.foreach()"], entries
    assert [len(e["kernels"]) for e in p.evaluations] == [1, 1, 1, 1, 1]
    assert len(p.launches) == 5 and not any(e["compiled"] for e in p.evaluations), p
    for e, launch in zip(p.evaluations, p.launches):
        assert e["launch_s"] == launch["host_s"] < e["host_s"], e
        assert e["host_s"] >= e["launch_s"] + STUB_S, e
    groups = p.evaluation_groups()
    assert groups[0]["entry"] == "x.get()" and groups[0]["host_s"] >= STUB_S
    text = str(p)
    assert "host each" in text and "axpy_clip.foreach()" in text


def test_an_evaluation_that_compiles_is_marked_and_strided_copies_join_it():
    x = fa.asarray(rand((40, 70)))
    with fa.profile() as p:
        got = np.asarray(fa.log1p(fa.abs(x)) * 1.25 + 0.5)   # a structure no other test builds
        (x.T * 1.0).get()
        x.T.get()          # no evaluation but the strided copy's, which .get() makes
    want = np.log1p(np.abs(rand((40, 70)))) * np.float32(1.25) + np.float32(0.5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    first = p.evaluations[0]
    assert first["entry"] == "np.asarray(x)" and first["compiled"], first
    assert first["host_s"] >= sum(c["seconds"] for c in p.compiles
                                  if c["kernel"] == first["kernels"][0])
    assert [e["entry"] for e in p.evaluations] == ["np.asarray(x)", "x.get()", "x.get()"]
    assert p.evaluation_groups()[0]["host_s"] is None        # every one of them compiled


def test_a_reduction_launch_counts_the_elements_it_walks():
    """A row or reduction kernel's size counts rows or outputs; the profile counts elements."""
    hx = rand((96, 500))
    x = fa.asarray(hx)
    with fa.profile() as p:
        got = fa.softmax(x).get()            # one kernel, row by row
        total = float(x.sum())
    e = np.exp(hx - hx.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(total, hx.sum(dtype=np.float64), rtol=1e-5)
    assert p.launches[0]["elements"] == 96 * 500
    assert p.launches[1]["elements"] == 96 * 500    # the sum's one kernel (split, folded in it)
    assert [e["entry"] for e in p.evaluations] == ["x.get()", "x.get()"]


# cuda

CUDA_SEED = 1607


def _cuda_rand(shape, seed=CUDA_SEED):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.tiers("cuda")
def test_profile_times_launches_with_events_against_the_copy_bandwidth():
    n = 1 << 24
    ha, hb, hc = _cuda_rand(n), _cuda_rand(n, CUDA_SEED + 1), _cuda_rand(n, CUDA_SEED + 2)
    a, b, c = fa.asarray(ha), fa.asarray(hb), fa.asarray(hc)
    with fa.profile() as p:
        for _ in range(4):
            r = (a * b + c * 0.75 - fa.hypot(a, c)).compute()
    want = ha * hb + hc * np.float32(0.75) - np.hypot(ha, hc)
    np.testing.assert_allclose(r.get(), want, rtol=2e-6, atol=2e-6, err_msg=f"seed {CUDA_SEED}")
    assert len(p.launches) == 4 and all(x["bytes"] == 16 * n for x in p.launches)
    stages = {c["stage"] for c in p.compiles}
    assert {"numba typing+lowering", "nvvm", "link"} <= stages, stages  # a fresh cache folder
    (row,) = p.kernels()
    copy = p.copy_bandwidth[row["device"]]
    assert copy > 5e11, copy                      # an H100 copies at ~3 TB/s
    assert 0.3 < row["of_copy"] < 1.2, row        # an elementwise kernel runs near copy speed
    assert all(0 < x["device_s"] < 0.05 for x in p.launches)
    check_html(p._repr_html_())


@pytest.mark.tiers("cuda")
def test_reprs_on_the_gpu_read_values_without_a_launch():
    host = _cuda_rand((300, 400))
    x = fa.asarray(host)
    views = [x, x.T, x[::-2, 3::5], x[::-1]]
    before = fa.stats()
    for v, hv in zip(views, [host, host.T, host[::-2, 3::5], host[::-1]]):
        want = np.array2string(hv, separator=", ", prefix="fa.ndarray(")
        assert repr(v).startswith(f"fa.ndarray({want}, dtype=float32"), CUDA_SEED
        check_html(v._repr_html_())
    pending = x * 2.0 + x.T.T
    check_html(pending._repr_html_())
    after = fa.stats()
    assert (after["compiles"], after["launches"]) == (before["compiles"], before["launches"])
