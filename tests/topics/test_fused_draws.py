"""fa.random draws inside fa.fuse, by tier: each call takes its keys from the generator (a host
value the packer reads per call), so every call draws fresh numbers, the very ones lazy code
making the same draws in the same order gets.

- cpu: several launches of one call share a key; foreach draws what the function draws on the
  concatenation of the tensors; stochastic rounding inside a fused step (and
  fusedarrays.optim's stochastic_rounding=True); refusals: inside fa.capture, a reduction of a
  draw, stochastic_rounding without master weights.
- sim (the CUDA kernels in numba's simulator, tiny arrays) and cuda: foreach's draws by the
  tensors' places in the concatenation, on the element walk (a bfloat16 store) and the 128-bit
  vector walk (float32 only, lanes at g - start + L), the same bits as lazy code on the same
  backend; on the device also a 2^20-element fused call and stochastic rounding of bfloat16
  parameters from float32 masters in fusedarrays.optim's torch class.
"""

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.fuse.pertensor import tensor_norm
from fusedarrays.optim import functional as F

SEED = 34091
SIZES = [5, 4097, 3, 300]
SIM_SEED = 34093
SIM_SIZES = [5, 9, 3]
CUDA_SEED = 34097
CUDA_SIZES = [5, 4097, 3, 70_001, 1 << 16]     # misaligned tails, several chunks


def data(shape, dtype=np.float32, seed=SEED):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_each_call_draws_the_numbers_lazy_code_draws():
    rng = fa.random.default_rng(1)

    @fa.fuse
    def noisy(x, scale):
        return x + scale * rng.random(x.shape, dtype=np.float32) - rng.standard_normal(x.shape)

    x = fa.asarray(data((300, 257)))
    got = [noisy(x, 0.5).get() for _ in range(3)]
    lazy = fa.random.default_rng(1)
    for k, g in enumerate(got):
        want = (x + 0.5 * lazy.random(x.shape, dtype=np.float32)
                - lazy.standard_normal(x.shape)).get()
        np.testing.assert_array_equal(g, want, err_msg=f"call {k}")
    assert not np.array_equal(got[0], got[1])


def test_launches_of_one_call_share_a_draw():
    rng = fa.random.default_rng(2)

    @fa.fuse
    def two(x):     # two shapes: two launches, both reading the draw
        u = rng.random(x.shape, dtype=np.float32)
        return x + u, (x * u)[1]

    x = fa.asarray(data((4, 5000)))
    a, b = two(x)
    assert len(next(iter(two._entries.values())).launches) == 2
    u = fa.random.default_rng(2).random(x.shape, dtype=np.float32)
    np.testing.assert_array_equal(a.get(), (x + u).get())
    np.testing.assert_array_equal(b.get(), (x * u)[1].get())


@pytest.mark.parametrize("dtype", [fa.bfloat16, fa.float16])
@pytest.mark.parametrize("view", ["whole", "transposed", "reversed"])
def test_stochastic_round_inside_fuse_equals_lazy(dtype, view):
    rng = fa.random.default_rng(3)

    @fa.fuse
    def store(w, p):
        p[...] = rng.stochastic_round(w, dtype)

    base = fa.asarray(data((300, 257)))
    w = {"whole": base, "transposed": base.T, "reversed": base[::-1, ::-2]}[view]
    p = fa.zeros(w.shape, dtype)
    lazy = fa.random.default_rng(3)
    for call in range(2):
        store(w, p)
        want = lazy.stochastic_round(w, dtype)
        np.testing.assert_array_equal(p.astype(np.float32).get(),
                                      want.astype(np.float32).get(), err_msg=f"call {call}")


def test_stochastic_round_inside_fuse_is_unbiased():
    rng = fa.random.default_rng(4)

    @fa.fuse
    def store(w, p):
        p[...] = rng.stochastic_round(w, fa.bfloat16)

    x = 1 + 2 ** -10        # a quarter of bfloat16's spacing above 1
    w, p = fa.full(100_000, x, dtype=np.float32), fa.zeros(100_000, fa.bfloat16)
    means = []
    for _ in range(3):
        store(w, p)
        means.append(p.astype(np.float64).get().mean())
    assert all(abs(m - x) < 2e-4 for m in means), means
    assert len(set(means)) == 3                  # fresh numbers each call


@fa.fuse
def foreach_store(w, p, rng):
    p[...] = rng.stochastic_round(w, fa.bfloat16)


def test_foreach_draws_the_concatenation():
    ws = [fa.asarray(data(n, seed=SEED + k)) for k, n in enumerate(SIZES)]
    ps = [fa.zeros(n, fa.bfloat16) for n in SIZES]
    rng, lazy = fa.random.default_rng(5), fa.random.default_rng(5)
    for call in range(2):
        foreach_store.foreach(ws, ps, rng)
        want = lazy.stochastic_round(fa.concat(ws), fa.bfloat16).astype(np.float32).get()
        got = np.concatenate([p.astype(np.float32).get() for p in ps])
        np.testing.assert_array_equal(got, want, err_msg=f"call {call}")


def test_foreach_dtype_groups_draw_by_list_order():
    rng, lazy = fa.random.default_rng(6), fa.random.default_rng(6)

    @fa.fuse
    def noisy(x):
        x += rng.random(x.shape, dtype=np.float32)

    host = [data(n, dtype, SEED + k) for k, (n, dtype) in
            enumerate(zip(SIZES, [np.float32, np.float64, np.float32, np.float64]))]
    xs = [fa.asarray(a.copy()) for a in host]
    noisy.foreach(xs)
    u = lazy.random(sum(SIZES), dtype=np.float32).get()
    starts = np.cumsum([0] + SIZES)
    for k, (x, a) in enumerate(zip(xs, host)):
        np.testing.assert_array_equal(x.get(), a + u[starts[k]:starts[k + 1]].astype(a.dtype),
                                      err_msg=f"tensor {k}")


def test_draws_refused_inside_a_capture():
    rng = fa.random.default_rng(7)

    @fa.fuse
    def noisy(x):
        x += rng.random(x.shape, dtype=np.float32)

    x = fa.asarray(data(64))
    noisy(x)
    with pytest.raises(fa.CaptureError, match="noisy draws random numbers"):
        with fa.capture():
            noisy(x)


def test_reducing_a_draw_refused():
    rng = fa.random.default_rng(8)

    @fa.fuse
    def bad(x):
        x /= tensor_norm(x + rng.random(x.shape, dtype=np.float32))

    with pytest.raises(fa.UnsupportedOperationError, match="reduction of a fa.random draw"):
        bad.foreach([fa.asarray(data(n)) for n in SIZES])


def master_lists(seed=SEED):
    w = [fa.asarray(data(n, seed=seed + k)) for k, n in enumerate(SIZES)]
    g = [fa.asarray(data(n, seed=seed + 10 + k)).astype(fa.bfloat16) for k, n in enumerate(SIZES)]
    m = [fa.zeros(n, np.float32) for n in SIZES]
    v = [fa.zeros(n, np.float32) for n in SIZES]
    return [a.astype(fa.bfloat16) for a in w], w, g, m, v


@pytest.mark.parametrize("step", ["adamw", "lamb"])
def test_optim_master_step_with_stochastic_rounding(step):
    p, w, g, m, v = master_lists()
    p0, w0, g0, m0, v0 = master_lists()
    fn = getattr(F, step)
    fn(p, g, m, v, step=1, lr=1e-2, master_params=w,
       stochastic_rounding=fa.random.default_rng(9))
    fn(p0, g0, m0, v0, step=1, lr=1e-2, master_params=w0)      # to nearest: the same masters
    for k in range(len(SIZES)):
        np.testing.assert_array_equal(w[k].get(), w0[k].get(), err_msg=f"master {k}")
    want = fa.random.default_rng(9).stochastic_round(fa.concat(w0), fa.bfloat16)
    got = np.concatenate([a.astype(np.float32).get() for a in p])
    np.testing.assert_array_equal(got, want.astype(np.float32).get())
    nearest = np.concatenate([a.astype(np.float32).get() for a in p0])
    assert (got != nearest).any()


def test_stochastic_rounding_needs_master_weights():
    p, _, g, m, v = master_lists()
    with pytest.raises(ValueError, match="master_params"):
        F.adamw(p, g, m, v, step=1, stochastic_rounding=True)
    with pytest.raises(TypeError, match="bool or a fa.random.Generator"):
        F.adamw(p, g, m, v, step=1, master_params=p, stochastic_rounding=3)


def test_torch_class_stochastic_rounding():
    torch = pytest.importorskip("torch")
    import fusedarrays.optim as fo

    torch.manual_seed(SEED)
    lin = torch.nn.Linear(64, 70).to(torch.bfloat16)
    with pytest.raises(ValueError, match="master_weights=True"):
        fo.AdamW(lin.parameters(), stochastic_rounding=True)
    opt = fo.AdamW(lin.parameters(), lr=1e-3, master_weights=True, stochastic_rounding=True)
    lin(torch.randn(8, 64, dtype=torch.bfloat16)).float().square().sum().backward()
    opt.step()
    differs = 0
    for q in lin.parameters():
        w = opt.state[q]["master_param"]
        ulp = (w.abs() * 2.0 ** -7).clamp_min(2.0 ** -133)
        assert bool(((q.float() - w).abs() <= ulp).all())
        differs += int((q != w.to(torch.bfloat16)).sum())
    assert differs > 0          # some parameters rounded away from nearest


# sim and cuda

@fa.fuse
def noisy(x, rng):
    x += rng.random(x.shape, dtype=np.float32)


@fa.fuse
def rounded(w, p, rng):
    p[...] = rng.stochastic_round(w, fa.bfloat16)


@pytest.mark.parametrize("tier, sizes, seed, key", [
    ("sim", SIM_SIZES, SIM_SEED, 1), ("cuda", CUDA_SIZES, CUDA_SEED, 2)], indirect=["tier"],
    ids=["sim", "cuda"])
def test_foreach_vector_walk_draws_the_concatenation(tier, sizes, seed, key):
    host = [data(n, seed=seed + k) for k, n in enumerate(sizes)]
    xs = [fa.asarray(a.copy()) for a in host]
    noisy.foreach(xs, fa.random.default_rng(key))
    u = fa.random.default_rng(key).random(sum(sizes), dtype=np.float32).get()
    starts = np.cumsum([0] + sizes)
    for k, (x, a) in enumerate(zip(xs, host)):
        np.testing.assert_array_equal(x.get(), a + u[starts[k]:starts[k + 1]],
                                      err_msg=f"tensor {k} (seed {seed})")


@pytest.mark.tiers("sim")
def test_stochastic_round_fused_and_foreach():
    ws = [fa.asarray(data(n, seed=SIM_SEED + k)) for k, n in enumerate(SIM_SIZES)]
    ps = [fa.zeros(n, fa.bfloat16) for n in SIM_SIZES]
    rounded.foreach(ws, ps, fa.random.default_rng(2))
    want = fa.random.default_rng(2).stochastic_round(fa.concat(ws), fa.bfloat16)
    got = np.concatenate([p.astype(np.float32).get() for p in ps])
    np.testing.assert_array_equal(got, want.astype(np.float32).get())
    rng, lazy = fa.random.default_rng(3), fa.random.default_rng(3)
    rounded(ws[1], ps[1], rng)
    np.testing.assert_array_equal(ps[1].astype(np.float32).get(),
                                  lazy.stochastic_round(ws[1], fa.bfloat16)
                                  .astype(np.float32).get())


@pytest.mark.tiers("cuda")
def test_fused_call_draws_as_lazy_code():
    x = fa.asarray(data(1 << 20, seed=CUDA_SEED).reshape(1024, 1024))
    rng, lazy = fa.random.default_rng(1), fa.random.default_rng(1)
    for _ in range(2):
        y = x.copy()
        noisy(y, rng)
        np.testing.assert_array_equal(y.get(), (x + lazy.random(x.shape, dtype=np.float32))
                                      .get())


@pytest.mark.tiers("cuda")
def test_foreach_stochastic_round_equals_lazy():
    ws = [fa.asarray(data(n, seed=CUDA_SEED + k)) for k, n in enumerate(CUDA_SIZES)]
    ps = [fa.zeros(n, fa.bfloat16) for n in CUDA_SIZES]
    rng, lazy = fa.random.default_rng(3), fa.random.default_rng(3)
    for _ in range(2):
        rounded.foreach(ws, ps, rng)
        want = lazy.stochastic_round(fa.concat(ws), fa.bfloat16).astype(np.float32).get()
        np.testing.assert_array_equal(
            np.concatenate([p.astype(np.float32).get() for p in ps]), want)


@pytest.mark.tiers("cuda")
def test_torch_adamw_master_weights_stochastic_rounding():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without cuda")
    import fusedarrays.optim as fo

    torch.manual_seed(CUDA_SEED)
    lin = torch.nn.Linear(256, 300).cuda().to(torch.bfloat16)
    opt = fo.AdamW(lin.parameters(), lr=1e-3, master_weights=True, stochastic_rounding=True)
    lin(torch.randn(8, 256, device="cuda", dtype=torch.bfloat16)).float().square().sum() \
        .backward()
    opt.step()
    torch.cuda.synchronize()
    differs = 0
    for q in lin.parameters():
        w = opt.state[q]["master_param"]
        gap = (q.float() - w).abs()
        ulp = (w.abs() * 2.0 ** -7).clamp_min(2.0 ** -133)
        assert bool((gap <= ulp).all())
        differs += int((q != w.to(torch.bfloat16)).sum())
    assert differs > 0          # some parameters rounded away from nearest
