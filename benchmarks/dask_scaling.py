"""dask over fa chunks on 1, 2, 4 workers (one GPU each, dask-cuda's ``LocalCUDACluster``),
against the same dask graphs over CuPy chunks in the same run (#33 item 6).

- compute-bound: ``sum((2u + 1)**2)`` of ``2^n`` uniform float32 draws (``--draws``, log2 of
  each size: the 2^37 row is the figure, 2^35 beside it) in chunks of ``2^c`` elements
  (``--chunk``, 2^28 = 1 GiB), drawn by the dask array backend's ``da.random.default_rng(seed)``:
  ``"fusedarrays"`` draws each chunk inside the kernel that squares and sums it, ``"cupy"``
  draws it with CuPy's generator and runs each operation as its own kernel. Seconds per
  ``compute()`` (the best of ``--repeat`` after a warm-up that compiles), speed-up against one
  worker, and CuPy's time over fa's;
- memory-bound, weak scaling: column standardisation ``(x - x.mean(0)) / x.std(0)`` of a
  float32 array with ``2^p`` elements per worker (``--per-worker``, 2^32), ``--cols`` columns,
  row chunks of ``2^c`` elements; ``x`` is drawn and persisted first, and the time is that of
  ``persist`` of the result up to every worker's device being idle. Throughput in elements per
  second, its growth against one worker, and fa's over CuPy's.

Worker counts beyond the GPUs present are skipped (said in the row). On the cpu backend (no GPU)
the workers are distributed's ``LocalCluster`` processes and there are no peers: ``--smoke`` runs
there with tiny sizes to show the script works.

Usage: python benchmarks/dask_scaling.py [--workers 1,2,4] [--draws 35,37] [--chunk 28]
       [--per-worker 32] [--cols 1024] [--repeat 3] [--protocol tcp] [--smoke] [--out F.json]
       [--commit C] [--no-peers]
"""

from __future__ import annotations

import math
import sys
import time

import harness
import numpy as np

TARGETS = {"speedup": {2: ">= 1.85", 4: ">= 3.5"}, "vs_cupy": ">= 2.5",
           "weak": {2: ">= 1.8", 4: ">= 3.5"}, "weak_vs_cupy": "> 1"}
LIBRARIES = {"fusedarrays": "fusedarrays", "dask + CuPy": "cupy"}


def _sync_worker() -> None:
    """On a worker: wait until its device is idle (fa's queue and CuPy's)."""
    if "fusedarrays" in sys.modules:
        sys.modules["fusedarrays"].runtime.backend.get_backend().synchronize()
    if "cupy" in sys.modules:
        sys.modules["cupy"].cuda.runtime.deviceSynchronize()


def host(x) -> np.ndarray:
    return x.get() if hasattr(x, "get") else np.asarray(x)


def start_cluster(workers: int, cuda: bool, protocol: str):
    import distributed

    if cuda:
        from dask_cuda import LocalCUDACluster

        cluster = LocalCUDACluster(n_workers=workers, protocol=protocol,
                                   CUDA_VISIBLE_DEVICES=list(range(workers)),
                                   dashboard_address=None)
    else:
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
    return cluster, distributed.Client(cluster)


def best_of(repeat: int, call) -> float:
    call()                                   # compiles, warms the workers and their pools
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def draw_sum(run, library: str, n: int, chunk: int) -> tuple[float, float]:
    """(seconds, result) of sum((2u + 1)**2) over 2^n draws on the library's chunks."""
    import dask
    import dask.array as da

    with dask.config.set({"array.backend": library}):
        u = da.random.default_rng(run.seed).random((1 << n,), chunks=1 << chunk,
                                                   dtype=np.float32)
    total = ((2 * u + 1) ** 2).sum()
    result = []
    seconds = best_of(run.repeat, lambda: result.append(float(host(total.compute()))))
    return seconds, result[-1]


def standardise(run, client, library: str, workers: int) -> tuple[float, object]:
    """(seconds, a few standardised columns' (mean, std)) of persisting the standardisation
    of 2^p elements per worker."""
    import dask
    import dask.array as da
    import distributed

    cols = run.args.cols
    rows = workers * (1 << run.args.per_worker) // cols
    chunk_rows = max((1 << run.args.chunk) // cols, 1)
    with dask.config.set({"array.backend": library}):
        x = da.random.default_rng(run.seed).random(
            (rows, cols), chunks=(chunk_rows, cols), dtype=np.float32)
    x = x.persist()
    distributed.wait(x)
    client.run(_sync_worker)

    def once():
        z = ((x - x.mean(axis=0)) / x.std(axis=0)).persist()
        distributed.wait(z)
        client.run(_sync_worker)
        once.z = z

    seconds = best_of(run.repeat, once)
    part = once.z[:, :8]
    moments = (host(part.mean(axis=0).compute()), host(part.std(axis=0).compute()))
    del once.z                           # the workers free it before the next job
    return seconds, moments


def measure(run, workers: int, cuda: bool) -> dict:
    """Every timing on ``workers`` workers: {(job, library, size): seconds or why not}."""
    found = {}
    cluster, client = start_cluster(workers, cuda, run.args.protocol)
    try:
        for name, library in LIBRARIES.items():
            if library != "fusedarrays" and not run.peers:
                continue
            for n in run.draws:
                found["draws", name, n] = _attempt(
                    lambda n=n, lib=library: draw_sum(run, lib, n, run.args.chunk), run, name, n)
            found["standardise", name, 0] = _attempt(
                lambda lib=library: standardise(run, client, lib, workers), run, name, "std")
    finally:
        client.close()
        cluster.close()
    return found


def _attempt(call, run, name, what):
    try:
        return call()
    except ImportError as exc:
        return f"not installed ({exc.name or exc})"
    except Exception as exc:   # a peer that can't run this workload is a finding
        if name == "fusedarrays":
            raise
        return f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"


def seconds(value):
    return value[0] if isinstance(value, tuple) else value


def ratio(a, b):
    """a / b where both are figures, else the reason that is not."""
    a, b = seconds(a), seconds(b)
    for v in (a, b):
        if not isinstance(v, float):
            return v
    return a / b


def report(run, times: dict, counts: list[int]) -> None:
    one = counts[0]
    for n in run.draws:
        name = f"sum((2u + 1)**2) of 2^{n} float32 draws, 2^{run.args.chunk} per chunk"
        for w in counts:
            fa_t, cp_t = times[w].get(("draws", "fusedarrays", n)), times[w].get(
                ("draws", "dask + CuPy", n), "not measured")
            run.row(f"{name}, {w} workers: seconds", seconds(fa_t), unit="s").peer(
                "dask + CuPy", lambda cp_t=cp_t: seconds(cp_t))
            if w != one:
                run.row(f"{name}, {w} workers: speed-up over {one}",
                        ratio(times[one][("draws", "fusedarrays", n)], fa_t),
                        target=TARGETS["speedup"].get(w, "—") if n >= 37 else "—",
                        unit="×").peer("dask + CuPy", lambda n=n, cp_t=cp_t: ratio(
                            times[one].get(("draws", "dask + CuPy", n), "not measured"), cp_t))
            if run.peers:
                run.row(f"{name}, {w} workers: dask + CuPy's time over fa's", ratio(cp_t, fa_t),
                        target=TARGETS["vs_cupy"] if n >= 37 else "—", unit="×")
    name = (f"(x - x.mean(0)) / x.std(0), 2^{run.args.per_worker} float32 per worker, "
            f"{run.args.cols} columns")
    for w in counts:
        elements = w * (1 << run.args.per_worker)
        fa_t = times[w][("standardise", "fusedarrays", 0)]
        cp_t = times[w].get(("standardise", "dask + CuPy", 0), "not measured")
        run.row(f"{name}, {w} workers: G elements/s", ratio(elements / 1e9, fa_t),
                unit="G elements/s").peer("dask + CuPy", lambda e=elements, c=cp_t:
                                          ratio(e / 1e9, c))
        if w != one:
            # weak scaling: w times the elements in the time one worker takes for its share
            run.row(f"{name}, {w} workers: throughput over {one} worker(s)",
                    ratio(times[one][("standardise", "fusedarrays", 0)], fa_t) * w / one,
                    target=TARGETS["weak"].get(w, "—"), unit="×")
        if run.peers:
            run.row(f"{name}, {w} workers: fa's throughput over dask + CuPy's",
                    ratio(cp_t, fa_t), target=TARGETS["weak_vs_cupy"], unit="×")


def checks(run, times: dict, counts: list[int]) -> None:
    for w in counts:
        for (job, name, n), value in times[w].items():
            if not isinstance(value, tuple):
                continue
            if job == "draws":
                # E[(2u + 1)^2] = 13/3; the spread of a mean of 2^n draws, 10 sigma
                rtol = max(1e-3, 10 * 2.4 / (13 / 3) / math.sqrt(1 << n))
                run.check(f"{name}: sum((2u + 1)**2) of 2^{n} draws on {w} workers / 2^{n}",
                          value[1] / (1 << n), 13 / 3, rtol=rtol, atol=0)
            else:
                means, stds = value[1]
                run.check(f"{name}: standardised columns' mean on {w} workers", means,
                          np.zeros_like(means), rtol=0, atol=1e-3)
                run.check(f"{name}: standardised columns' std on {w} workers", stds,
                          np.ones_like(stds), rtol=1e-3, atol=0)


def main() -> int:
    parser = harness.arguments(__doc__.splitlines()[0])
    parser.add_argument("--workers", default=None, help="worker counts, e.g. 1,2,4 "
                        "(default 1,2,4; 1,2 with --smoke)")
    parser.add_argument("--draws", default=None, help="log2 of the draw counts (35,37)")
    parser.add_argument("--chunk", type=int, default=None, help="log2 elements per chunk (28)")
    parser.add_argument("--per-worker", type=int, default=None,
                        help="log2 elements per worker of the standardisation (32)")
    parser.add_argument("--cols", type=int, default=None, help="columns (1024)")
    parser.add_argument("--repeat", type=int, default=None, help="timed computes (3)")
    parser.add_argument("--protocol", default="tcp", help="dask-cuda's comm (tcp or ucx)")
    args = parser.parse_args()
    smoke = args.smoke
    for name, full, tiny in (("workers", "1,2,4", "1,2"), ("draws", "35,37", "16"),
                             ("chunk", 28, 12), ("per_worker", 32, 14), ("cols", 1024, 16),
                             ("repeat", 3, 1)):
        if getattr(args, name) is None:
            setattr(args, name, tiny if smoke else full)
    run = harness.Run("dask_scaling", args)
    run.repeat = args.repeat
    run.draws = [int(n) for n in str(args.draws).split(",")]
    cuda = run.backend.name == "cuda"
    run.peers = run.peers and cuda
    available = _gpus() if cuda else None
    counts, times = [], {}
    for w in (int(w) for w in str(args.workers).split(",")):
        if available is not None and w > available:
            print(f"  {w} workers: skipped, {available} GPUs present", flush=True)
            run.env.setdefault("skipped", []).append(f"{w} workers: {available} GPUs present")
            continue
        print(f"  {w} workers ...", flush=True)
        times[w] = measure(run, w, cuda)
        counts.append(w)
    report(run, times, counts)
    checks(run, times, counts)
    return run.finish()


def _gpus() -> int:
    """CUDA devices visible (the driver is initialised: this process's backend is cuda)."""
    from cuda.bindings import driver

    _, count = driver.cuDeviceGetCount()
    return int(count)


if __name__ == "__main__":
    raise SystemExit(main())
