"""fa chunks under distributed's worker processes (``LocalCluster(processes=True)``, the cpu
backend here; tests/gpu/test_dask_gpu.py runs dask-cuda's cluster), judged against NumPy, and
worker processes sharing one disk cache folder.

One cluster for the module (starting one costs seconds); each graph moves chunks between the two
workers, so fa arrays cross process boundaries through distributed's serializers."""

import json
import os
import subprocess
import sys

import judge
import numpy as np
import pytest

from fusedarrays.runtime.diskcache import DiskCache

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

SEED = 20261205
FA = {"array.backend": "fusedarrays"}


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


def test_random_draw_arithmetic_sum(client):
    with dask.config.set(FA):
        u = da.random.default_rng(SEED).random((8000,), chunks=1000, dtype=np.float32)
    draws = judge.host(u.compute())                      # the workers' draws, gathered
    assert ((draws >= 0) & (draws < 1)).all() and len(set(draws.tolist())) > 7900
    got = ((2 * u + 1) ** 2).sum().compute()
    judge.check(got, ((2 * draws.astype(np.float64) + 1) ** 2).sum().astype(np.float32),
                f"sum((2u + 1)**2) on 2 worker processes (seed {SEED})", rtol=1e-5)
    with dask.config.set(scheduler="threads"):           # the same chunks in this process
        np.testing.assert_array_equal(judge.host(u.compute()), draws, f"seed {SEED}")


def test_column_standardisation(client):
    x = judge.data(SEED, shape=(400, 6), spread=True)
    d = da.from_array(x, chunks=(100, 3))
    f = d.to_backend("fusedarrays")
    got = ((f - f.mean(axis=0)) / f.std(axis=0)).compute()
    with dask.config.set(scheduler="threads"):
        want = ((d - d.mean(axis=0)) / d.std(axis=0)).compute()
    judge.check(got, want, f"(x - x.mean(0)) / x.std(0) on 2 worker processes (seed {SEED})")
    judge.check((f @ f.T).sum(axis=1).compute(), (x @ x.T).sum(axis=1),
                f"(d @ d.T).sum(1) on 2 worker processes (seed {SEED})")


def test_workers_hold_launched_chunks_at_their_true_size(client):
    x = judge.data(SEED, shape=(400, 6), spread=False).astype(np.float32)
    kept = (da.from_array(x, chunks=(100, 6)).to_backend("fusedarrays") * 2 + 1).persist()
    distributed.wait(kept)
    held = client.run(lambda dask_worker: [(type(v).__module__, v.pending)
                                           for v in dask_worker.data.values()])
    assert sum(len(v) for v in held.values()) >= 4, held
    assert all(v == ("fusedarrays.api.array", False) for vs in held.values() for v in vs), held
    sizes = client.nbytes(summary=False)
    assert {sizes[k] for k in dask.core.flatten(kept.__dask_keys__())} == {100 * 6 * 4}, sizes
    judge.check(kept.compute(), x * 2 + 1, f"persisted on workers (seed {SEED})")


# -- one disk cache folder, several processes ---------------------------------------------------

CHILD = """
import json, numpy as np, fusedarrays as fa
x = fa.asarray(np.linspace(-2.0, 3.0, 5000))
y = (np.arctan2(x, 1.5) * 3.25 + x * x).sum()
z = np.hypot(x[::2], 0.5) - 1.0
print(json.dumps({"y": float(y), "z": z.get()[::500].tolist(), **fa.stats()}))
"""


def children(cache_dir, n: int) -> list[dict]:
    env = dict(os.environ, FUSEDARRAYS_CACHE_DIR=str(cache_dir), FUSEDARRAYS_BACKEND="cpu")
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                              text=True) for _ in range(n)]
    out = [p.communicate(timeout=240)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), out
    return [json.loads(o.strip().splitlines()[-1]) for o in out]


def test_processes_racing_on_one_cache_folder_never_corrupt_it(tmp_path):
    x = np.linspace(-2.0, 3.0, 5000)
    want_y = (np.arctan2(x, 1.5) * 3.25 + x * x).sum()
    want_z = (np.hypot(x[::2], 0.5) - 1.0)[::500]
    racing = children(tmp_path, 2)                       # started together on an empty folder
    for r in racing:
        np.testing.assert_allclose(r["y"], want_y, rtol=1e-12)
        np.testing.assert_allclose(r["z"], want_z, rtol=1e-12)
    entries = [p for p in tmp_path.glob("v*/*/*.*") if not p.name.startswith(".")
               and p.suffix != ".py"]
    assert entries, list(tmp_path.rglob("*"))
    cache = DiskCache(tmp_path)
    for path in entries:                                 # each one proves itself
        key, kind = path.name.split(".")
        assert cache.get(path.parent.name, key, kind) is not None, path
    assert not [p for p in tmp_path.rglob(".*.tmp")], "a temp file was left behind"
    # a process started after them compiles nothing: every kernel is on disk, once
    (later,) = children(tmp_path, 1)
    assert later["compiles"] == 0 and later["disk_hits"] >= 2, later
    np.testing.assert_allclose(later["y"], want_y, rtol=1e-12)
