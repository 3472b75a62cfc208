"""Random numbers and gathers inside the consuming kernel, and arrays that leave without a copy.

- ``x + 0.1 * rng.standard_normal(x.shape, dtype=float32)`` over 2^26 float32, the graph built
  and evaluated in the timed loop (a new draw each call), as a fraction of a copy moving the
  same bytes (``x`` read, the result written: the noise never touches memory); launches per
  evaluation; peers ``torch.compile`` of ``x + 0.1 * torch.randn_like(x)`` and the same eager;
- dropout ``x * (rng.random(x.shape, dtype=float32) > p) / (1 - p)`` over 2^26 float16, the same
  way; peers ``torch.compile`` of the same text with ``torch.rand_like``, and eager
  ``F.dropout``;
- gather ``table[idx] * w``: a 2^20 float32 table (it fits in L2), 2^26 int32 indices and
  float32 weights, as a fraction of a copy moving ``idx``, ``w`` and the result; the gather is
  built once (``idx`` is a fa array, so the gather is flagged: checked on the device, no copy
  to the host) and ``(g * w).compute()`` timed; peers
  ``torch.compile`` and eager ``table[idx] * w``;
- ``x[mask].compute()`` with a fa mask over 2^26 float32, about half true: µs per call (the
  mask compacted on the device, the count read by the host, the selection gathered); peers
  eager ``x[mask]`` in PyTorch and CuPy, which read a count on the host too; and
  ``x[mask] = values`` the same way (the selected elements scattered on the device), and
  into ``x[::-1]``, a view one stride apart, by the same kernel (peer CuPy: PyTorch has no
  negative steps);
- host µs per ``torch.from_dlpack(y)`` of a computed fa array (cuda with PyTorch only).

The numbers themselves are checked against the cpu-independent reference of the stream (the
same seed's materialised draw) after timing.

Usage: python benchmarks/random_export.py [--smoke] [--out F.json] [--commit C] [--no-peers]
"""

from __future__ import annotations

import time

import harness  # first: it puts this checkout's package on the path
import numpy as np

import fusedarrays as fa


def noise_add(run: harness.Run, n: int) -> None:
    x_host = run.rng().standard_normal(n).astype(np.float32)
    x = fa.asarray(x_host)
    rng = fa.random.default_rng(run.seed)
    moved, size = 2 * n * 4, f"2^{n.bit_length() - 1}"
    copy = run.copy_time(moved)

    def fused():
        (x + np.float32(0.1) * rng.standard_normal(x.shape, dtype=np.float32)).compute()
    repeat = 3 if run.smoke else 30
    row = run.row(f"x + 0.1 * rng.standard_normal(x.shape), {size} f32, × copy",
                  copy / run.device_time(fused, repeat), ">= 0.95", "fraction of copy",
                  bytes_moved=moved)
    row.peer("torch.compile", lambda: copy / run.device_time(torch_noise(x_host, True), repeat))
    row.peer("torch eager", lambda: copy / run.device_time(torch_noise(x_host, False), repeat))
    run.row("launches per noise-add evaluation", run.launches(fused), "== 1", "launches")
    draw = fa.random.default_rng(run.seed + 1)
    got = (x + np.float32(0.1) * draw.standard_normal(x.shape, dtype=np.float32)).get()
    noise = fa.random.default_rng(run.seed + 1).standard_normal(n, dtype=np.float32).get()
    run.check("noise add", got, x_host + np.float32(0.1) * noise, rtol=1e-6, atol=1e-6)
    run.check("noise moments", [noise.mean(), noise.std()], [0.0, 1.0], rtol=0,
              atol=8 / np.sqrt(n))


def torch_noise(x_host, compiled: bool):
    import torch

    def fn(x):
        return x + 0.1 * torch.randn_like(x)
    x = torch.as_tensor(x_host, device="cuda")
    f = torch.compile(fn) if compiled else fn
    return lambda: f(x)


def dropout(run: harness.Run, n: int, p: float = 0.1) -> None:
    x_host = run.rng().standard_normal(n).astype(np.float16)
    x = fa.asarray(x_host)
    rng = fa.random.default_rng(run.seed)
    moved, size = 2 * n * 2, f"2^{n.bit_length() - 1}"
    copy = run.copy_time(moved)

    def fused():
        (x * (rng.random(x.shape, dtype=np.float32) > p) / (1 - p)).compute()
    repeat = 3 if run.smoke else 30
    row = run.row(f"dropout x * (rng.random(x.shape) > p) / (1 - p), {size} f16, × copy",
                  copy / run.device_time(fused, repeat), ">= 0.95", "fraction of copy",
                  bytes_moved=moved)
    row.peer("torch.compile", lambda: copy / run.device_time(torch_dropout(x_host, p, True),
                                                             repeat))
    row.peer("F.dropout", lambda: copy / run.device_time(torch_dropout(x_host, p, False),
                                                         repeat))
    run.row("launches per dropout evaluation", run.launches(fused), "== 1", "launches")
    draw = fa.random.default_rng(run.seed + 2)
    got = (x * (draw.random(x.shape, dtype=np.float32) > p) / (1 - p)).get()
    u = fa.random.default_rng(run.seed + 2).random(n, dtype=np.float32).get()
    want = x_host * (u > p) / np.float16(1 - p)
    run.check("dropout f16", got, want, rtol=1e-3, atol=1e-3)
    run.check("dropout keep fraction", [(u > p).mean()], [1 - p], rtol=0, atol=6 / np.sqrt(n))


def torch_dropout(x_host, p: float, compiled: bool):
    import torch

    x = torch.as_tensor(x_host, device="cuda")
    if not compiled:
        return lambda: torch.nn.functional.dropout(x, p)
    f = torch.compile(lambda x: x * (torch.rand_like(x, dtype=torch.float32) > p) / (1 - p))
    return lambda: f(x)


def gather(run: harness.Run, n: int, table_size: int) -> None:
    rng = run.rng()
    table_h = rng.standard_normal(table_size).astype(np.float32)
    idx_h = rng.integers(0, table_size, n).astype(np.int32)
    w_h = rng.standard_normal(n).astype(np.float32)
    table, idx, w = fa.asarray(table_h), fa.asarray(idx_h), fa.asarray(w_h)
    g = table[idx]
    moved, size = 3 * n * 4, f"2^{n.bit_length() - 1}"
    copy = run.copy_time(moved)

    def fused():
        (g * w).compute()
    repeat = 3 if run.smoke else 30
    row = run.row(f"gather table[idx] * w, {size} int32 indices, 2^"
                  f"{table_size.bit_length() - 1} f32 table, × copy",
                  copy / run.device_time(fused, repeat), ">= 0.60", "fraction of copy",
                  bytes_moved=moved)
    row.peer("torch.compile", lambda: copy / run.device_time(torch_gather(table_h, idx_h, w_h,
                                                                          True), repeat))
    row.peer("torch eager", lambda: copy / run.device_time(torch_gather(table_h, idx_h, w_h,
                                                                        False), repeat))
    run.row("launches per gather evaluation", run.launches(fused), "== 1", "launches")
    run.check("gather", (g * w).get(), table_h[idx_h] * w_h, rtol=0, atol=0)


def mask_select(run: harness.Run, n: int) -> None:
    """``x[mask]`` with a fusedarrays mask, about half true: the mask compacted on the device
    (three launches and the count read by the host), the selection gathered by a fourth. Each
    peer also reads a count on the host; µs per call, the selection computed."""
    rng = run.rng()
    x_h = rng.standard_normal(n).astype(np.float32)
    m_h = rng.random(n) < 0.5
    x, m = fa.asarray(x_h), fa.asarray(m_h)

    def fused():
        x[m].compute()
    repeat = 3 if run.smoke else 20
    row = run.row(f"x[mask].compute(), a fa mask, 2^{n.bit_length() - 1} f32, half true",
                  run.device_time(fused, repeat) * 1e6, "—", "µs")
    row.peer("torch x[mask]", lambda: run.device_time(torch_select(x_h, m_h), repeat) * 1e6)
    row.peer("cupy x[mask]", lambda: run.device_time(cupy_select(x_h, m_h), repeat) * 1e6)
    run.row("launches per x[mask].compute()", run.launches(fused), "== 4", "launches")
    run.check("x[mask]", x[m].get(), x_h[m_h], rtol=0, atol=0)
    v_h = rng.standard_normal(int(m_h.sum())).astype(np.float32)
    v = fa.asarray(v_h)

    def write():
        x[m] = v
    row = run.row(f"x[mask] = values, a fa mask, 2^{n.bit_length() - 1} f32, half true",
                  run.device_time(write, repeat) * 1e6, "—", "µs")
    row.peer("torch x[mask] = v", lambda: run.device_time(torch_write(x_h, m_h, v_h), repeat)
             * 1e6)
    row.peer("cupy x[mask] = v", lambda: run.device_time(cupy_write(x_h, m_h, v_h), repeat)
             * 1e6)
    want = x_h.copy()
    want[m_h] = v_h
    run.check("x[mask] = values", x.get(), want, rtol=0, atol=0)
    r = x[::-1]     # a view one stride apart, written by the same kernel

    def write_reversed():
        r[m] = v
    row = run.row(f"x[::-1][mask] = values, a fa mask, 2^{n.bit_length() - 1} f32, half true",
                  run.device_time(write_reversed, repeat) * 1e6, "—", "µs")
    row.peer("cupy x[::-1][mask] = v",
             lambda: run.device_time(cupy_write(x_h, m_h, v_h, reversed_view=True), repeat)
             * 1e6)
    want[::-1][m_h] = v_h
    run.check("x[::-1][mask] = values", x.get(), want, rtol=0, atol=0)


def torch_select(x_h, m_h):
    import torch

    x, m = torch.as_tensor(x_h, device="cuda"), torch.as_tensor(m_h, device="cuda")
    return lambda: x[m]


def cupy_select(x_h, m_h):
    import cupy

    x, m = cupy.asarray(x_h), cupy.asarray(m_h)
    return lambda: x[m]


def torch_write(x_h, m_h, v_h):
    import torch

    x, m, v = (torch.as_tensor(a, device="cuda") for a in (x_h, m_h, v_h))

    def write():
        x[m] = v
    return write


def cupy_write(x_h, m_h, v_h, reversed_view=False):
    import cupy

    x, m, v = cupy.asarray(x_h), cupy.asarray(m_h), cupy.asarray(v_h)
    if reversed_view:
        x = x[::-1]

    def write():
        x[m] = v
    return write


def torch_gather(table_h, idx_h, w_h, compiled: bool):
    import torch

    table, w = (torch.as_tensor(a, device="cuda") for a in (table_h, w_h))
    idx = torch.as_tensor(idx_h.astype(np.int64), device="cuda")

    def fn(table, idx, w):
        return table[idx] * w
    f = torch.compile(fn) if compiled else fn
    return lambda: f(table, idx, w)


def export_cost(run: harness.Run) -> None:
    if run.backend.name != "cuda":
        return
    try:
        import torch
    except ImportError:
        return
    y = (fa.asarray(np.ones(1024, np.float32)) * 2).compute()
    rounds = 2000
    start = time.perf_counter()
    for _ in range(rounds):
        torch.from_dlpack(y)
    run.row("host µs per torch.from_dlpack(y), computed y", (time.perf_counter() - start)
            / rounds * 1e6, "—", "µs")
    run.check("torch.from_dlpack values", torch.from_dlpack(y).cpu().numpy(), np.full(1024, 2.0))


def main() -> int:
    args = harness.arguments(__doc__.splitlines()[0]).parse_args()
    run = harness.Run("random_export", args)
    noise_add(run, 1 << (12 if run.smoke else 26))
    dropout(run, 1 << (12 if run.smoke else 26))
    gather(run, 1 << (12 if run.smoke else 26), 1 << (10 if run.smoke else 20))
    mask_select(run, 1 << (12 if run.smoke else 26))
    export_cost(run)
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
