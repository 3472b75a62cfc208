"""fa.fuse figures on the GPU (issue 5), side by side with PyTorch and CuPy in one run.

- Adam step in place over 2^26 float32, as a fraction of a device-to-device copy's bandwidth
  (bytes read + written: Adam moves 7 x 4 bytes per element, a copy 2 x 4), with
  ``torch.optim.Adam(fused=True)`` and ``foreach=True`` on the same tensor beside it;
- Adam over 200 tensors of sizes drawn in [1 000, 300 000] with ``f.foreach`` (one launch), against
  ``torch.optim.Adam(fused=True)`` and ``foreach=True``, in µs per step, and the floor: those
  bytes at the copy's bandwidth;
- host µs per cached call on 1 K float32 elements: ``f(x, y, 1.5)`` returning a new array and
  an in-place variant, and the fusedarrays part alone (launch replaced by a no-op), against
  CuPy's ``ElementwiseKernel`` and ``cupy.fuse`` where CuPy is installed: the median of 7 rounds
  of 2000 calls, the contenders alternating within each round.

Device times: median over 15 batches of 10 back-to-back calls between two CUDA events recorded on
the legacy default stream, which waits for every blocking stream (fusedarrays, PyTorch and CuPy
work alike), so the host work of one call overlaps the previous kernel. Each device time is also
taken as wall time between device-wide synchronisations (``*_wall``) as a cross-check.
Results are checked against PyTorch (max relative error). Prints a table last.

Usage: python benchmarks/fuse_figures.py [out.json]
"""

import json
import statistics
import sys
import time

import numpy as np

import fusedarrays as fa
from fusedarrays.ir import graph

ADAM = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)


def adam(p, g, m, v, lr, beta1, beta2, eps, step):
    m[...] = beta1 * m + (1 - beta1) * g
    v[...] = beta2 * v + (1 - beta2) * g * g
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    p -= step_size * (m / (np.sqrt(v) / bias_correction2_sqrt + eps))


def _check(result):
    err, *values = result
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver error {err}")
    return values[0] if len(values) == 1 else values


def device_ms(fn, repeat=15, batch=10):
    """Median device ms per call (module docstring), and the same by wall clock."""
    from cuda.bindings import driver
    legacy = driver.CU_STREAM_LEGACY
    fn()
    _check(driver.cuCtxSynchronize())
    events, walls = [], []
    for _ in range(repeat):
        start, stop = (_check(driver.cuEventCreate(0)) for _ in range(2))
        t0 = time.perf_counter()
        _check(driver.cuEventRecord(start, legacy))
        for _ in range(batch):
            fn()
        _check(driver.cuEventRecord(stop, legacy))
        _check(driver.cuEventSynchronize(stop))
        _check(driver.cuCtxSynchronize())
        walls.append((time.perf_counter() - t0) * 1e3 / batch)
        events.append(_check(driver.cuEventElapsedTime(start, stop)) / batch)
        for e in (start, stop):
            _check(driver.cuEventDestroy(e))
    return statistics.median(events), statistics.median(walls)


def copy_ms(n, torch):
    """A device-to-device copy of n float32: the driver's copy and torch's ``copy_``, the faster
    of the two (the reference bandwidth)."""
    from cuda.bindings import driver
    src, dst = fa.empty(n, np.float32), fa.empty(n, np.float32)
    fa.compute(src)
    s, d = (graph.leaf_view(a._node)[0].storage.ptr for a in (src, dst))
    best = device_ms(lambda: _check(driver.cuMemcpyDtoDAsync(d, s, 4 * n,
                                                             driver.CU_STREAM_LEGACY)))[0]
    if torch is not None:
        a, b = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
        best = min(best, device_ms(lambda: b.copy_(a))[0])
    return best


def torch_adam(torch, params, grads, **kw):
    refs = [p.clone().requires_grad_(True) for p in params]
    for r, g in zip(refs, grads):
        r.grad = g.clone()
    opt = torch.optim.Adam(refs, lr=ADAM["lr"], betas=(ADAM["beta1"], ADAM["beta2"]),
                           eps=ADAM["eps"], **kw)
    return opt, refs


def max_rel(ours, theirs):
    a, b = ours.detach().cpu().numpy(), theirs.detach().cpu().numpy()
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-3)))


def single_tensor(torch, rng, copy_gbs):
    n = 1 << 26
    fused = fa.fuse(adam)
    host = [rng.standard_normal(n).astype(np.float32) for _ in range(4)]
    host[3] = np.abs(host[3])
    p, g, m, v = (fa.asarray(a) for a in host)
    step = [0]

    def ours():
        step[0] += 1
        fused(p, g, m, v, **ADAM, step=step[0])
    fa.reset_stats()
    ours()
    launches = fa.stats()["launches"]
    ms, wall = device_ms(ours)
    out = {"n": n, "adam_fa_ms": ms, "adam_fa_ms_wall": wall, "adam_fa_launches": launches,
           "adam_fa_fraction_of_copy": 7 * 4 * n / ms / 1e6 / copy_gbs}
    if torch is not None:
        params = [torch.from_numpy(host[0]).cuda()]
        grads = [torch.from_numpy(host[1]).cuda()]
        for name, kw in (("fused", {"fused": True}), ("foreach", {"foreach": True})):
            opt, _ = torch_adam(torch, params, grads, **kw)
            ms, wall = device_ms(opt.step)
            out[f"adam_torch_{name}_ms"], out[f"adam_torch_{name}_ms_wall"] = ms, wall
            out[f"adam_torch_{name}_fraction_of_copy"] = 7 * 4 * n / ms / 1e6 / copy_gbs
        # correctness: 3 steps from zero state on 2^20 elements against torch's fused Adam
        k = 1 << 20
        p_t, g_t = params[0][:k].clone(), grads[0][:k].clone()
        m_t, v_t = torch.zeros_like(p_t), torch.zeros_like(p_t)
        opt, refs = torch_adam(torch, [p_t], [g_t], fused=True)
        args = [fa.asarray(t) for t in (p_t, g_t, m_t, v_t)]
        for s in range(1, 4):
            opt.step()
            fused(*args, **ADAM, step=s)
        out["adam_max_rel_err_vs_torch"] = max_rel(p_t, refs[0])
    return out


def many_tensors(torch, rng, copy_gbs):
    sizes = [int(s) for s in rng.integers(1_000, 300_001, 200)]
    total = sum(sizes)
    out = {"tensors": len(sizes), "params": total,
           "floor_us_at_copy_bandwidth": 7 * 4 * total / copy_gbs / 1e3}
    if torch is None:
        return out
    params = [torch.randn(s, device="cuda") for s in sizes]
    grads = [torch.randn(s, device="cuda") for s in sizes]
    ms_ = [torch.zeros(s, device="cuda") for s in sizes]
    vs = [torch.zeros(s, device="cuda") for s in sizes]
    ours_p = [p.clone() for p in params]
    lists = [[fa.asarray(t) for t in ts] for ts in (ours_p, grads, ms_, vs)]  # zero-copy, once
    fused = fa.fuse(adam)
    step = [0]

    def ours():
        step[0] += 1
        fused.foreach(*lists, **ADAM, step=step[0])
    fa.reset_stats()
    ours()
    out["foreach_fa_launches_per_step"] = fa.stats()["launches"]
    ms, wall = device_ms(ours)
    out["foreach_fa_us"], out["foreach_fa_us_wall"] = ms * 1e3, wall * 1e3
    t0 = time.perf_counter()
    for _ in range(20):
        ours()
    out["foreach_fa_host_us_per_step"] = (time.perf_counter() - t0) / 20 * 1e6
    for name, kw in (("fused", {"fused": True}), ("foreach", {"foreach": True})):
        opt, refs = torch_adam(torch, params, grads, **kw)
        ms, wall = device_ms(opt.step)
        out[f"foreach_torch_{name}_us"], out[f"foreach_torch_{name}_us_wall"] = ms * 1e3, wall * 1e3
    # correctness: fresh state, 3 steps each, against torch's foreach Adam
    for t in ms_ + vs:
        t.zero_()
    for a, b in zip(ours_p, params):
        a.copy_(b)
    opt, refs = torch_adam(torch, params, grads, foreach=True)
    for k in range(1, 4):
        opt.step()
        fused.foreach(*lists, **ADAM, step=k)
    torch.cuda.synchronize()
    out["foreach_max_rel_err_vs_torch"] = max(max_rel(a, b) for a, b in zip(ours_p, refs))
    return out


def host_costs(cp, rng, rounds=7, calls=2000):
    """Host µs per call of each contender: ``rounds`` rounds of ``calls`` back-to-back calls,
    the contenders alternating within each round (so that a host's drift touches all alike);
    the median round, and every round under ``<key>_rounds``."""
    x, y = (fa.asarray(rng.standard_normal(1024).astype(np.float32)) for _ in range(2))
    out_arr = fa.empty(1024, np.float32)
    f = fa.fuse(lambda x, y, s: x * y + s)

    @fa.fuse
    def g(o, x, y, s):
        o[...] = x * y + s

    backend = fa._get_backend()
    real = backend.launch

    contenders = {"host_us_fa_fuse_new_array": lambda: f(x, y, 1.5),
                  "host_us_fa_fuse_in_place": lambda: g(out_arr, x, y, 1.5),
                  "host_us_fa_lazy": lambda: (x * y + 1.5).compute()}
    if cp is not None:
        ek = cp.ElementwiseKernel("float32 p, float32 q, float32 s", "float32 o", "o = p * q + s")
        p1, q1 = cp.asarray(x.get()), cp.asarray(y.get())
        o1 = cp.empty_like(p1)
        s = np.float32(1.5)

        def axpb(p, q, s):  # cupy.fuse needs a named function (a lambda fails in NVRTC)
            return p * q + s
        cf = cp.fuse(axpb)
        contenders.update({"host_us_cupy_elementwise_kernel": lambda: ek(p1, q1, s),
                           "host_us_cupy_elementwise_kernel_out": lambda: ek(p1, q1, s, o1),
                           "host_us_cupy_fuse": lambda: cf(p1, q1, s)})

    def per_call(fn):
        backend.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - t0
        backend.synchronize()
        return elapsed / calls * 1e6

    def without_launch(fn):   # the fusedarrays part alone: the launch replaced by a no-op
        backend.launch = lambda *args: None
        try:
            return per_call(fn)
        finally:
            backend.launch = real

    measured = {key: [] for key in contenders}
    measured["host_us_fa_fuse_new_array_no_launch"] = []
    measured["host_us_fa_fuse_in_place_no_launch"] = []
    for fn in contenders.values():
        fn()
    for _ in range(rounds):
        for key, fn in contenders.items():
            measured[key].append(per_call(fn))
        measured["host_us_fa_fuse_new_array_no_launch"].append(without_launch(
            contenders["host_us_fa_fuse_new_array"]))
        measured["host_us_fa_fuse_in_place_no_launch"].append(without_launch(
            contenders["host_us_fa_fuse_in_place"]))
    out = {key: statistics.median(values) for key, values in measured.items()}
    out.update({key + "_rounds": values for key, values in measured.items()})
    return out


def _optional(name):
    try:
        return __import__(name)
    except ImportError:
        return None


def table(r) -> str:
    def f(key, fmt="{:.3f}"):
        value = r.get(key)
        return "-" if value is None else fmt.format(value)
    rows = [
        ("Adam in place 2^26 f32, fraction of copy", f("adam_fa_fraction_of_copy"),
         f"torch fused {f('adam_torch_fused_fraction_of_copy')}, "
         f"foreach {f('adam_torch_foreach_fraction_of_copy')}", ">= 0.95"),
        ("Adam 200 tensors foreach, us/step", f("foreach_fa_us", "{:.0f}"),
         f"torch fused {f('foreach_torch_fused_us', '{:.0f}')}, foreach "
         f"{f('foreach_torch_foreach_us', '{:.0f}')}; floor "
         f"{f('floor_us_at_copy_bandwidth', '{:.0f}')}", "<= 450"),
        ("host us/cached fuse call, 1K, new array", f("host_us_fa_fuse_new_array", "{:.1f}"),
         f"cupy EK {f('host_us_cupy_elementwise_kernel', '{:.1f}')}, cupy.fuse "
         f"{f('host_us_cupy_fuse', '{:.1f}')}", "<= 8"),
        ("host us/cached fuse call, 1K, in place", f("host_us_fa_fuse_in_place", "{:.1f}"),
         f"cupy EK out= {f('host_us_cupy_elementwise_kernel_out', '{:.1f}')}", ""),
        ("  fusedarrays part (launch a no-op)", f("host_us_fa_fuse_new_array_no_launch",
                                                   "{:.1f}"),
         f"in place {f('host_us_fa_fuse_in_place_no_launch', '{:.1f}')}", ""),
    ]
    width = max(len(row[0]) for row in rows)
    lines = [f"{'figure':<{width}}  {'fusedarrays':>11}  {'target':>7}  peers (same run)"]
    lines += [f"{a:<{width}}  {b:>11}  {d:>7}  {c}" for a, b, c, d in rows]
    return "\n".join(lines)


def main(path=None):
    torch, cp = _optional("torch"), _optional("cupy")
    if fa.backend() != "cuda":
        raise SystemExit(f"needs the cuda backend (got {fa.backend()})")
    rng = np.random.default_rng(0)
    n = 1 << 26
    copy = copy_ms(n, torch)
    copy_gbs = 2 * 4 * n / copy / 1e6
    result = {"device": fa._get_backend().device.name, "copy_ms": copy, "copy_GBps": copy_gbs}
    result.update(single_tensor(torch, rng, copy_gbs))
    result.update(many_tensors(torch, rng, copy_gbs))
    result.update(host_costs(cp, rng))
    result["torch"] = getattr(torch, "__version__", None)
    result["cupy"] = getattr(cp, "__version__", None)
    result["stats"] = fa.stats()
    result["timings"] = {k: list(v) for k, v in fa.timings().items()}
    if path:
        with open(path, "w") as out:
            json.dump(result, out, indent=1, default=str)
    print(json.dumps(result, indent=1, default=str))
    print(table(result))


if __name__ == "__main__":
    main(*sys.argv[1:])
