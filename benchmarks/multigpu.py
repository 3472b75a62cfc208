"""Several GPUs in one process: Adam through ``fa.fuse`` on each GPU's own parameters, one thread
per GPU, against the same on one GPU (weak scaling: every GPU steps the same number of parameters).

- throughput of K GPUs over one, ``K × time(one GPU) / time(K GPUs)``, for K = 2 … every GPU
  (issue 33's target: ≥ 1.9 on two);
- one GPU's step as a fraction of a copy moving the same bytes (7 × 4 a parameter), for scale.

Each thread enters ``with fa.Device(k):``, makes its parameters there and steps them; the clock
runs from a barrier all threads pass to the end of the slowest, each having read back one value
of its device (which waits for its work). Results are checked against NumPy after timing.

Usage: python benchmarks/multigpu.py [--smoke] [--out F.json] [--commit C] [--steps N]
(``--smoke`` on a machine without GPUs: FUSEDARRAYS_CPU_DEVICES=2 gives two host devices)
"""

from __future__ import annotations

import threading
import time

import harness  # first: it puts this checkout's package on the path
import numpy as np

import fusedarrays as fa

ADAM = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8)


@fa.fuse
def adam(p, g, m, v, lr, beta1, beta2, eps):
    m[...] = beta1 * m + (1 - beta1) * g
    v[...] = beta2 * v + (1 - beta2) * g * g
    p[...] = p - lr * m / (fa.sqrt(v) + eps)


def adam_numpy(p, g, m, v, steps):
    p, m, v = p.astype(np.float64), m.astype(np.float64), v.astype(np.float64)
    for _ in range(steps):
        m = ADAM["beta1"] * m + (1 - ADAM["beta1"]) * g
        v = ADAM["beta2"] * v + (1 - ADAM["beta2"]) * g * g
        p = p - ADAM["lr"] * m / (np.sqrt(v) + ADAM["eps"])
    return p


def state(rng, n):
    host = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    return host + [np.abs(rng.standard_normal(n)).astype(np.float32)]


def timed(devices, host, steps: int) -> tuple[float, list]:
    """Seconds for ``steps`` Adam steps on every device at once (a thread each), and each
    device's parameters afterwards."""
    start = threading.Barrier(len(devices) + 1)
    done, errors = [None] * len(devices), []

    def work(k, device):
        try:
            with device:
                arrays = [fa.asarray(h) for h in host]
                float(arrays[0][0])              # uploaded before the clock starts
                adam(*arrays, **ADAM)            # traced and compiled before it too
                float(arrays[0][0])
                for h, a in zip(host, arrays):   # fresh state again
                    a[...] = fa.asarray(h)
                float(arrays[0][0])
                start.wait()
                for _ in range(steps):
                    adam(*arrays, **ADAM)
                float(arrays[0][0])              # this device's work is done
                done[k] = arrays[0]
        except Exception as e:   # reported by the main thread
            errors.append(e)
            start.abort()

    threads = [threading.Thread(target=work, args=(k, d)) for k, d in enumerate(devices)]
    for t in threads:
        t.start()
    start.wait()
    begin = time.perf_counter()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - begin
    if errors:
        raise errors[0]
    return seconds, done


def main() -> int:
    parser = harness.arguments(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="Adam steps per timing")
    args = parser.parse_args()
    run = harness.Run("multigpu", args)
    devices = fa.devices()
    run.env["devices"] = [str(d) for d in devices]
    n = 1 << (12 if args.smoke else 26)
    steps = args.steps or (3 if args.smoke else 100)
    host = state(run.rng(), n)
    one, _ = timed(devices[:1], host, steps)
    one = min(one, timed(devices[:1], host, steps)[0])
    copy = run.copy_time(7 * 4 * n)
    run.row(f"Adam on one GPU, 2^{n.bit_length() - 1} float32 via fa.fuse",
            copy * steps / one, "≥ 0.95", harness.COPY_UNIT, steps=steps, seconds=one)
    for k in range(2, len(devices) + 1):
        best, finished = min((timed(devices[:k], host, steps) for _ in range(2)),
                             key=lambda result: result[0])
        run.row(f"Adam via fa.fuse, one thread per GPU, {k} GPUs over one (weak scaling)",
                k * one / best, "≥ 1.9" if k == 2 else f"≥ {0.95 * k:.2g}", "× one GPU",
                gpus=k, steps=steps, seconds=best, one_gpu_seconds=one)
        want = adam_numpy(*host, steps=steps)   # from fresh state: the timed steps
        for device, p in zip(devices[:k], finished):
            run.check(f"Adam on {device} ({k} GPUs at once)", p.get(), want,
                      rtol=1e-4, atol=1e-5)
    if len(devices) < 2:
        print(f"  only {len(devices)} device(s) here: no scaling row "
              "(FUSEDARRAYS_CPU_DEVICES=2 gives two host devices)")
    return run.finish()


if __name__ == "__main__":
    raise SystemExit(main())
