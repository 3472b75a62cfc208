"""``fa.fuse`` figures beside PyTorch and CuPy in the same run.

- Adam in place over 2^26 float32 as a fraction of a copy moving the same bytes (7 × 4 a
  parameter: p, g, m and v read, p, m and v written), launches per step, beside
  ``torch.optim.Adam(fused=True)`` and ``foreach=True`` on the same data;
- Adam over 200 tensors of 1 000 to 300 000 elements with ``f.foreach`` (one launch), in µs per
  step, beside PyTorch's fused and foreach Adam; the floor is a copy moving the same bytes;
- clip-by-global-norm then Adam over the same 200 tensors (``fa.global_norm`` in the function
  ``f.foreach`` runs: two launches), as a multiple of the memory floor — a copy moving the bytes
  the step must move: g, p, m, v read, p, m, v written, and g read once more for the norm
  (8 × 4 a parameter) — beside ``torch.nn.utils.clip_grad_norm_(foreach=True)`` then
  ``torch.optim.Adam(fused=True)``, and the launches per step;
- host µs per cached call on 1 K float32: ``f(x, y, 1.5)`` returning a new array and an
  in-place variant, the fusedarrays part alone (every launch a no-op) and a lazy
  ``(x * y + 1.5).compute()``, beside CuPy's ``ElementwiseKernel`` and ``cupy.fuse``: rounds of
  2000 calls, the contenders alternating within each round, the best round each.

Adam results are checked against NumPy (three steps from fresh state) after timing; clipped
Adam against NumPy in float64.

Usage: python benchmarks/fuse_figures.py [--smoke] [--out F.json] [--commit C] [--no-peers]
"""

from __future__ import annotations

import harness  # first: it puts this checkout's package on the path
import numpy as np

import fusedarrays as fa

ADAM = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)


def adam(p, g, m, v, lr, beta1, beta2, eps, step):
    m[...] = beta1 * m + (1 - beta1) * g
    v[...] = beta2 * v + (1 - beta2) * g * g
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    p -= step_size * (m / (np.sqrt(v) / bias_correction2_sqrt + eps))


def adam_state(rng, sizes) -> list[list[np.ndarray]]:
    """[p, g, m, v] per tensor: random parameters and gradients, m random, v positive."""
    return [[rng.standard_normal(n).astype(np.float32) for _ in range(3)]
            + [np.abs(rng.standard_normal(n)).astype(np.float32)] for n in sizes]


def torch_adam(state, **kw):
    import torch

    params = [torch.as_tensor(p, device="cuda").requires_grad_(True) for p, *_ in state]
    for param, (_, g, *_) in zip(params, state):
        param.grad = torch.as_tensor(g, device="cuda")
    opt = torch.optim.Adam(params, lr=ADAM["lr"], betas=(ADAM["beta1"], ADAM["beta2"]),
                           eps=ADAM["eps"], **kw)
    return opt.step


def clipped_adam(p, g, m, v, lr, beta1, beta2, eps, step, max_norm):
    """``clip_grad_norm_`` then Adam; under ``f.foreach`` the norm is over every tensor."""
    g = g * fa.minimum(1.0, max_norm / (fa.global_norm(g) + 1e-6))
    adam(p, g, m, v, lr, beta1, beta2, eps, step)


def torch_clipped_adam(state, max_norm):
    import torch

    step = torch_adam(state, fused=True)
    params = step.__self__.param_groups[0]["params"]

    def clipped():
        torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)
        step()
    return clipped


def check_adam(run: harness.Run, name: str, step, state) -> None:
    """Three steps of ``step(arrays, k)`` from ``state`` against NumPy's ``adam``."""
    arrays = [[fa.asarray(a) for a in tensor] for tensor in state]
    want = [[a.copy() for a in tensor] for tensor in state]
    for k in range(1, 4):
        step(arrays, k)
        for tensor in want:
            adam(*tensor, **ADAM, step=k)
    got = np.concatenate([a[0].get() for a in arrays])
    run.check(name, got, np.concatenate([t[0] for t in want]), rtol=1e-5, atol=1e-6)


def single_tensor(run: harness.Run, n: int) -> None:
    fused = fa.fuse(adam)
    state = adam_state(run.rng(), [n])
    p, g, m, v = (fa.asarray(a) for a in state[0])
    steps = [0]

    def ours():
        steps[0] += 1
        fused(p, g, m, v, **ADAM, step=steps[0])
    copy = run.copy_time(7 * 4 * n)
    row = run.row(f"Adam in place, 2^{n.bit_length() - 1} f32 (fa.fuse), × copy",
                  copy / run.device_time(ours), ">= 0.95", "fraction of copy",
                  launches=run.launches(ours))
    for name, kw in (("torch Adam fused", {"fused": True}), ("torch Adam foreach",
                                                              {"foreach": True})):
        row.peer(name, lambda kw=kw: copy / run.device_time(torch_adam(state, **kw)))
    check_adam(run, "Adam in place", lambda arrays, k: fused(*arrays[0], **ADAM, step=k),
               adam_state(run.rng(), [min(n, 1 << 20)]))


def many_tensors(run: harness.Run, count: int, low: int, high: int) -> None:
    sizes = [int(s) for s in run.rng().integers(low, high + 1, count)]
    state = adam_state(run.rng(), sizes)
    lists = [[fa.asarray(tensor[k]) for tensor in state] for k in range(4)]
    fused = fa.fuse(adam)
    steps = [0]

    def ours():
        steps[0] += 1
        fused.foreach(*lists, **ADAM, step=steps[0])
    floor = run.copy_time(7 * 4 * sum(sizes))
    row = run.row(f"Adam over {count} tensors ({sum(sizes)} params), f.foreach",
                  run.device_time(ours) * 1e6, "<= 450", "µs per step",
                  floor_us=floor * 1e6, launches=run.launches(ours),
                  host_us=harness.device_time(ours, 20, batches=1) * 1e6)
    for name, kw in (("torch Adam fused", {"fused": True}), ("torch Adam foreach",
                                                              {"foreach": True})):
        row.peer(name, lambda kw=kw: run.device_time(torch_adam(state, **kw)) * 1e6)

    def foreach_steps(arrays, k):
        fused.foreach(*([t[j] for t in arrays] for j in range(4)), **ADAM, step=k)
    check_adam(run, "Adam foreach", foreach_steps, state)


def clipped_many_tensors(run: harness.Run, count: int, low: int, high: int) -> None:
    sizes = [int(s) for s in run.rng().integers(low, high + 1, count)]   # many_tensors' sizes
    state = adam_state(run.rng(), sizes)
    lists = [[fa.asarray(tensor[k]) for tensor in state] for k in range(4)]
    fused, max_norm = fa.fuse(clipped_adam), 1.0     # randn gradients: the norm is far above
    steps = [0]

    def ours():
        steps[0] += 1
        fused.foreach(*lists, **ADAM, step=steps[0], max_norm=max_norm)
    total = sum(sizes)
    floor = run.copy_time(8 * 4 * total)
    seconds = run.device_time(ours)
    launches = run.launches(ours)
    run.row(f"clip-by-global-norm + Adam over {count} tensors ({total} params), × floor",
            seconds / floor, "<= 2.2", "× floor", us=seconds * 1e6,
            floor_us=floor * 1e6, launches=launches).peer(
        "torch clip_grad_norm_(foreach) + Adam(fused)",
        lambda: run.device_time(torch_clipped_adam(state, max_norm)) / floor)
    run.row("launches per clip-by-global-norm + Adam step (f.foreach)", launches, "<= 2",
            "launches")
    fresh = adam_state(run.rng(), sizes)
    arrays = [[fa.asarray(a) for a in tensor] for tensor in fresh]
    want = [[a.astype(np.float64) for a in tensor] for tensor in fresh]
    norm = np.sqrt(sum(np.dot(t[1], t[1]) for t in want))
    for t in want:
        t[1] = t[1] * min(1.0, max_norm / (norm + 1e-6))
    for k in range(1, 4):
        fused.foreach(*([t[j] for t in arrays] for j in range(4)), **ADAM, step=k,
                      max_norm=max_norm)
        for t in want:
            adam(*t, **ADAM, step=k)
    run.check("clip-by-global-norm + Adam foreach (float64 NumPy)",
              np.concatenate([a[0].get() for a in arrays]),
              np.concatenate([t[0] for t in want]), rtol=1e-5, atol=1e-6)


def cupy_contenders(x, y):
    import cupy as cp

    ek = cp.ElementwiseKernel("float32 p, float32 q, float32 s", "float32 o", "o = p * q + s")
    p, q = cp.asarray(x.get()), cp.asarray(y.get())
    o, s = cp.empty_like(p), np.float32(1.5)

    def axpb(p, q, s):  # cupy.fuse wants a named function
        return p * q + s
    cf = cp.fuse(axpb)
    return {"cupy EK": lambda: ek(p, q, s), "cupy EK out=": lambda: ek(p, q, s, o),
            "cupy.fuse": lambda: cf(p, q, s)}


def host_costs(run: harness.Run, rounds: int, calls: int) -> None:
    rng = run.rng()
    x, y = (fa.asarray(rng.standard_normal(1024).astype(np.float32)) for _ in range(2))
    out = fa.empty(1024, np.float32)
    f = fa.fuse(lambda x, y, s: x * y + s)

    @fa.fuse
    def g(o, x, y, s):
        o[...] = x * y + s

    contenders = {"new array": lambda: f(x, y, 1.5), "in place": lambda: g(out, x, y, 1.5),
                  "lazy": lambda: (x * y + 1.5).compute()}
    peers, missing = {}, None
    if run.peers:
        try:
            peers = cupy_contenders(x, y)
        except Exception as exc:  # recorded as each CuPy peer's reason below
            missing = exc
    best = dict.fromkeys([*contenders, *peers, "new array, no launch", "in place, no launch"],
                         float("inf"))
    for _ in range(rounds):   # alternating, so that drift of the host touches all alike
        for name, call in {**contenders, **peers}.items():
            best[name] = min(best[name], run.device_time(call, calls, batches=1))
        with harness.launches_as_no_ops():   # the fusedarrays part alone
            for name in ("new array", "in place"):
                best[f"{name}, no launch"] = min(best[f"{name}, no launch"], run.device_time(
                    contenders[name], calls, batches=1))

    def peer(name):
        if name not in best:
            raise missing
        return best[name] * 1e6
    us = {name: t * 1e6 for name, t in best.items()}
    run.row("host µs per cached fa.fuse call, 1 K f32, new array", us["new array"], "<= 8", "µs",
            fusedarrays_part_us=us["new array, no launch"]).peer(
        "cupy ElementwiseKernel", lambda: peer("cupy EK")).peer(
        "cupy.fuse", lambda: peer("cupy.fuse"))
    run.row("host µs per cached fa.fuse call, 1 K f32, in place", us["in place"], "—", "µs",
            fusedarrays_part_us=us["in place, no launch"]).peer(
        "cupy ElementwiseKernel out=", lambda: peer("cupy EK out="))
    run.row("fusedarrays part of that new-array call (launch a no-op)",
            us["new array, no launch"], "—", "µs")
    run.row("host µs per cached lazy (x * y + 1.5).compute(), 1 K f32", us["lazy"], "—", "µs")
    want = x.get() * y.get() + np.float32(1.5)
    run.check("fa.fuse new array", contenders["new array"]().get(), want)
    contenders["in place"]()
    run.check("fa.fuse in place", out.get(), want)


def main() -> int:
    args = harness.arguments(__doc__.splitlines()[0]).parse_args()
    run = harness.Run("fuse_figures", args)
    single_tensor(run, 1 << (12 if run.smoke else 26))
    many_tensors(run, *((5, 100, 3000) if run.smoke else (200, 1_000, 300_000)))
    clipped_many_tensors(run, *((5, 100, 3000) if run.smoke else (200, 1_000, 300_000)))
    host_costs(run, *((2, 200) if run.smoke else (7, 2000)))
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
