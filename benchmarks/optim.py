"""``fusedarrays.optim`` figures beside PyTorch's optimizers in the same run (torch tensors).

- AdamW over a GPT-2-small-sized set (124 M parameters in 148 tensors: :func:`gpt2_sizes`),
  ``fusedarrays.optim.AdamW`` on float32 parameters, as a multiple of the memory floor — a copy
  moving the bytes a step must move (p, g, m, v read; p, m, v written: 28 bytes a parameter) —
  beside ``torch.optim.AdamW(fused=True)`` and a ``torch.compile``d ``foreach`` step;
- the same with bfloat16 parameters and gradients and float32 master weights and states
  (``master_weights=True``: master, g, m, v read; master, m, v, p written: 28 bytes), beside
  torch's fused AdamW on float32 masters then ``_foreach_copy_`` into the bfloat16 parameters;
- LAMB over 200 tensors (three launches: the norms' partials, their fold, the step), as a
  multiple of the same 28-byte floor (the partials' launch reads p, g, m, v and stores m, v;
  the step reads p, m, v and stores p: 40 bytes, 1.43x the floor by bytes);
- the AdamW step over the GPT-2-small set captured once (``capturable=True``, ``fa.graph``) and
  replayed: host µs per replay (target ≤ 10), and its device time as a multiple of the floor,
  beside ``torch.optim.AdamW(fused=True, capturable=True)`` replayed as a ``torch.cuda.graph``;
- a 100-step training loop of a ~50 M parameter MLP with ``fusedarrays.optim.AdamW`` in place
  of ``torch.optim.AdamW(fused=True)``: the losses checked equal to float32 rounding, and the
  optimizer's share of a step (optimizer µs / step µs) for both.

``--smoke`` runs tiny sizes on any backend (torch's cpu tensors on the cpu backend).

Usage: python benchmarks/optim.py [--smoke] [--out F.json] [--commit C] [--no-peers]
"""

from __future__ import annotations

import time

import harness  # first: it puts this checkout's package on the path
import numpy as np

import fusedarrays as fa
import fusedarrays.optim as fo

KW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)


def gpt2_sizes(scale: int = 1) -> list[int]:
    """The 148 parameter tensors of GPT-2 small (124 M parameters); ``scale`` divides every
    dimension (a smoke run's tiny set)."""
    d, vocab, ctx = 768 // scale, 50257 // scale, 1024 // scale
    layer = [d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * 4 * d, 4 * d, 4 * d * d, d]
    return [vocab * d, ctx * d] + layer * 12 + [d, d]


def params_of(torch, sizes, device, dtype, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    ps = [torch.nn.Parameter(torch.randn(n, device=device, generator=gen).to(dtype))
          for n in sizes]
    for p in ps:
        p.grad = (torch.randn(p.shape, device=device, generator=gen) * 1e-2).to(dtype)
    return ps


def step_time(run, opt) -> float:
    return run.device_time(opt.step, 3 if run.smoke else 20)


def adamw_rows(run, torch, device) -> None:
    sizes = gpt2_sizes(32 if run.smoke else 1)
    n = sum(sizes)
    floor = run.copy_time(28 * n)
    ps = params_of(torch, sizes, device, torch.float32, run.seed)
    ours = fo.AdamW(ps, **KW)
    row = run.row(f"AdamW over {len(sizes)} tensors ({n / 1e6:.1f} M float32), × memory floor",
                  step_time(run, ours) / floor, target="<= 1.05", unit="× floor",
                  launches=run.launches(ours.step))

    def peer(**kw):
        theirs = torch.optim.AdamW(params_of(torch, sizes, device, torch.float32, run.seed),
                                   **KW, **kw)
        return step_time(run, theirs) / floor

    def compiled():
        theirs = torch.optim.AdamW(params_of(torch, sizes, device, torch.float32, run.seed),
                                   **KW, foreach=True)
        return run.device_time(torch.compile(theirs.step), 20) / floor

    row.peer("torch AdamW(fused=True)", lambda: peer(fused=True))
    row.peer("torch.compile AdamW step", compiled)
    ps = params_of(torch, sizes, device, torch.bfloat16, run.seed)
    ours = fo.AdamW(ps, **KW, master_weights=True)
    try:
        ours.step()
    except fa.DTypeError as exc:     # torch's bfloat16 through DLPack: #34 item 1
        print(f"  bfloat16 row skipped: {exc}")
        return
    row = run.row(f"AdamW over {len(sizes)} tensors, bfloat16 params + float32 master, "
                  "× memory floor", step_time(run, ours) / floor, target="<= 1.10",
                  unit="× floor", launches=run.launches(ours.step))

    def fused_master():
        low = params_of(torch, sizes, device, torch.bfloat16, run.seed)
        masters = [torch.nn.Parameter(p.detach().float()) for p in low]
        theirs = torch.optim.AdamW(masters, **KW, fused=True)

        def step():
            for m, p in zip(masters, low):
                m.grad = p.grad.float()
            theirs.step()
            torch._foreach_copy_([p.data for p in low], [m.data for m in masters])
        return run.device_time(step, 20) / floor

    row.peer("torch AdamW(fused=True) on masters + copy", fused_master)


def host_us(fn, calls: int = 200) -> float:
    """Host microseconds per call of ``fn`` (the call returns once its work is queued)."""
    fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def graph_rows(run, torch, device, sync) -> None:
    """AdamW captured once and replayed: host µs per replay, device time × floor."""
    sizes = gpt2_sizes(32 if run.smoke else 1)
    floor = run.copy_time(28 * sum(sizes))
    ours = fo.AdamW(params_of(torch, sizes, device, torch.float32, run.seed),
                    **{**KW, "lr": torch.tensor(KW["lr"], device=device)}, capturable=True)
    ours.step()                          # eager: states, tables, compiles
    graph = fa.graph(ours.step)
    sync()
    row = run.row(f"AdamW over {len(sizes)} tensors replayed (fa.graph, capturable): host µs "
                  "per replay", host_us(graph.replay, 20 if run.smoke else 500),
                  target="<= 10", unit="µs", launches=len(graph.launches),
                  device_x_floor=run.device_time(graph.replay, 20) / floor)
    sync()

    def torch_graphed():
        if device != "cuda":
            return "cuda only"
        theirs = torch.optim.AdamW(params_of(torch, sizes, device, torch.float32, run.seed),
                                   **{**KW, "lr": torch.tensor(KW["lr"], device=device)},
                                   fused=True, capturable=True)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            theirs.step()
        torch.cuda.current_stream().wait_stream(side)
        captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(captured):
            theirs.step()
        return host_us(captured.replay, 500)

    row.peer("torch AdamW(fused, capturable) in torch.cuda.graph: host µs", torch_graphed)


def lamb_row(run, torch, device) -> None:
    rng = run.rng()
    sizes = [int(s) for s in rng.integers(1, 3_000 if run.smoke else 1_200_000, 200)]
    floor = run.copy_time(28 * sum(sizes))
    ours = fo.LAMB(params_of(torch, sizes, device, torch.float32, run.seed), lr=1e-3,
                   weight_decay=1e-2)
    run.row(f"LAMB over 200 tensors ({sum(sizes) / 1e6:.1f} M float32), × memory floor",
            step_time(run, ours) / floor, target="<= 1.4", unit="× floor",
            launches=run.launches(ours.step))


def mlp(torch, device, width: int, depth: int):
    torch.manual_seed(1234)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 16)).to(device)


def training_rows(run, torch, device, sync) -> None:
    width, depth, batch, steps = (64, 2, 8, 5) if run.smoke else (4096, 3, 256, 100)
    gen = torch.Generator(device=device).manual_seed(run.seed)
    x = torch.randn(batch, width, device=device, generator=gen)
    y = torch.randn(batch, 16, device=device, generator=gen)
    results = {}
    for name, make in (("fusedarrays", lambda ps: fo.AdamW(ps, lr=1e-4)),
                       ("torch", lambda ps: __import__("torch").optim.AdamW(
                           ps, lr=1e-4, fused=device == "cuda"))):
        model = mlp(torch, device, width, depth)
        opt = make(model.parameters())
        losses, opt_s, total_s = [], 0.0, 0.0
        for _ in range(steps):
            sync()
            start = time.perf_counter()
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            sync()
            middle = time.perf_counter()
            opt.step()
            sync()
            end = time.perf_counter()
            losses.append(loss.item())
            opt_s, total_s = opt_s + end - middle, total_s + end - start
        results[name] = (np.array(losses), opt_s / total_s, opt_s / steps)
    params = sum(p.numel() for p in mlp(torch, "cpu", width, depth).parameters())
    ours, theirs = results["fusedarrays"], results["torch"]
    row = run.row(f"{steps}-step MLP training ({params / 1e6:.1f} M params): optimizer share "
                  "of a step", ours[1], target="< torch's", unit="share",
                  optimizer_us=ours[2] * 1e6)
    row.peer("torch AdamW(fused=True)", lambda: theirs[1])
    run.check(f"{steps}-step MLP losses, fusedarrays.optim.AdamW vs torch's", ours[0],
              theirs[0], rtol=1e-4, atol=1e-6)


def main() -> int:
    import torch

    args = harness.arguments(__doc__.splitlines()[0]).parse_args()
    run = harness.Run("optim", args)
    device = "cuda" if run.backend.name == "cuda" else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    adamw_rows(run, torch, device)
    lamb_row(run, torch, device)
    graph_rows(run, torch, device, sync)
    training_rows(run, torch, device, sync)
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
