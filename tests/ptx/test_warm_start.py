"""Warm start and precompile without a GPU: real PTX and cubins for sm_90 on disk, read back by
fresh processes that must not compile or import numba. The device side is recorded by
``tests/cachefakes.FakeCudaBackend`` instead of run (tests/gpu runs it for real)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from childenv import pythonpath

pytest.importorskip("numba.cuda")

import fusedarrays as fa  # noqa: E402
from fusedarrays import config  # noqa: E402
from fusedarrays.errors import DeviceUnavailableError  # noqa: E402
from fusedarrays.runtime import realize as runtime  # noqa: E402
from fusedarrays.runtime.diskcache import FORMAT, DiskCache  # noqa: E402

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent

# A fresh process on the fake cuda device: evaluates the expressions named in argv, prints what
# it compiled, loaded and launched, and whether numba was imported.
EVALUATE = """
import json, sys
import numpy as np
from cachefakes import FakeCudaBackend, install
import fusedarrays as fa

backend = install(FakeCudaBackend())
x = fa.asarray(np.arange(1000, dtype=np.float32))
y = fa.asarray(np.ones(1000, dtype=np.float32))
exprs = {"axpb": lambda: x * y + 1.5, "sqrt": lambda: fa.sqrt(x) - y,
         "f64": lambda: x.astype(np.float64) * 2.0, "max": lambda: fa.maximum(x, y) / 3.0}
for name in sys.argv[1:]:
    exprs[name]().compute()
print(json.dumps({"stats": fa.stats(), "loaded": backend.loaded, "launches": backend.launches,
                  "numba": "numba" in sys.modules, "timings": fa.timings()}))
"""

# A fresh process on the cpu backend (no GPU): precompiles the expressions named in argv.
PRECOMPILE = """
import json, sys
import numpy as np
import fusedarrays as fa

x = fa.asarray(np.arange(1000, dtype=np.float32))
y = fa.asarray(np.ones(1000, dtype=np.float32))
exprs = {"axpb": lambda: x * y + 1.5, "sqrt": lambda: fa.sqrt(x) - y,
         "f64": lambda: x.astype(np.float64) * 2.0, "max": lambda: fa.maximum(x, y) / 3.0}
arrays = [exprs[name]() for name in sys.argv[1:]]
report = fa.precompile(*arrays, arch="sm_90", workers=0)
assert all(a.pending for a in arrays) and fa.stats()["launches"] == 0
print(json.dumps(report))
"""


def run(script: str, cache: Path, *args: str, backend: str = "cuda", **env) -> dict:
    full = {**os.environ, "PYTHONPATH": pythonpath(REPO, TESTS),
            "FUSEDARRAYS_CACHE_DIR": str(cache), "FUSEDARRAYS_BACKEND": backend, **env}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=full,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def cubins(cache: Path) -> list[Path]:
    return sorted((cache / f"v{FORMAT}" / "sm_90").glob("*.cubin"))


def test_a_warm_process_loads_the_cubin_and_never_imports_numba(tmp_path):
    cold = run(EVALUATE, tmp_path, "axpb")
    assert cold["stats"]["compiles"] == 1 and cold["numba"]
    assert {"numba typing+lowering", "nvvm", "link", "disk write", "load"} <= set(cold["timings"])
    warm = run(EVALUATE, tmp_path, "axpb")
    assert warm["stats"] == {"compiles": 0, "launches": 1, "memory_hits": 0, "disk_hits": 1}
    assert warm["numba"] is False
    assert warm["loaded"] == cold["loaded"]          # the same cubin (entry name and sha256)
    assert warm["launches"] == cold["launches"]
    (path,) = cubins(tmp_path)
    body, meta = DiskCache(tmp_path).get("sm_90", path.stem, "cubin")
    assert body[:4] == b"\x7fELF" and meta["entry"] == warm["loaded"][0][0]
    assert meta["parts"]["operands"].startswith("in:f32")
    ptx, _ = DiskCache(tmp_path).get("sm_90", path.stem, "ptx")
    assert f".entry {meta['entry']}(".encode() in ptx


def test_precompile_without_a_gpu_then_a_warm_start(tmp_path):
    report = run(PRECOMPILE, tmp_path, "axpb", "sqrt", "f64", backend="cpu")
    assert report["arch"] == "sm_90" and report["kernels"] == 3 and report["compiled"] == 3
    assert len(cubins(tmp_path)) == 3
    again = run(PRECOMPILE, tmp_path, "axpb", "sqrt", "f64", backend="cpu")
    assert again["compiled"] == 0 and again["cached"] == 3
    warm = run(EVALUATE, tmp_path, "axpb", "sqrt", "f64")
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["disk_hits"] == 3
    assert warm["numba"] is False and len(warm["launches"]) == 3


def test_eight_processes_precompiling_at_once_leave_every_entry_sound(tmp_path):
    env = {**os.environ, "PYTHONPATH": pythonpath(REPO, TESTS),
           "FUSEDARRAYS_CACHE_DIR": str(tmp_path), "FUSEDARRAYS_BACKEND": "cpu"}
    names = ["axpb", "sqrt", "f64", "max"]
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(PRECOMPILE),
                               names[k % 4], names[(k + 1) % 4]], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k in range(8)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert json.loads(out.splitlines()[-1])["kernels"] == 2
    cache = DiskCache(tmp_path)
    paths = cubins(tmp_path)
    assert len(paths) == 4 and not [p for p in tmp_path.rglob(".*") if p.is_file()]
    for path in paths:
        for kind in ("cubin", "ptx"):
            assert cache.get("sm_90", path.stem, kind) is not None
    warm = run(EVALUATE, tmp_path, *names)
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["disk_hits"] == 4


def test_precompile_compiles_a_batch_in_worker_processes(tmp_path):
    x = fa.asarray(np.arange(64, dtype=np.float32))
    arrays = [fa.sin(x) + 1.0, fa.cos(x) * 2.0, fa.exp(x) - 3.0, fa.tanh(x) / 4.0]
    with config.override(CACHE_DIR=str(tmp_path)):
        fa.reset_stats()
        report = fa.precompile(*arrays, arch="sm_90", workers=1, progress=False)
        assert report["compiled"] == 4 and report["workers"] == 1
        assert fa.stats()["compiles"] == 4 and fa.stats()["launches"] == 0
        assert fa.timings()["nvvm"][0] == 4
        assert fa.cache_info()["entries"] == 8
        assert fa.explain(arrays[0]).why == "precompiled for sm_90"
        again = fa.precompile(*arrays, arch="sm_90")
    assert again["compiled"] == 0 and again["cached"] == 4
    assert all(a.pending for a in arrays)


def test_precompile_plans_evaluations_as_compute_does(tmp_path):
    x = fa.asarray(np.arange(64, dtype=np.float32))
    z = fa.asarray(np.arange(8, dtype=np.float32))
    with config.override(CACHE_DIR=str(tmp_path)):
        together = fa.precompile((x + 1.0, x * 2.0, z - 1.0, x), arch="sm_90", workers=0)
        alone = fa.precompile([x + 1.0, x * 2.0], arch="sm_90", workers=0)
    assert together["kernels"] == 2  # one launch per shape; a computed array needs none
    assert alone["kernels"] == 2 and alone["compiled"] == 2


def test_precompile_without_an_arch_compiles_for_the_active_host_backend():
    """On the cpu backend, the cpu kernels (tests/cpu/test_cpu_disk_cache.py: a new process
    then compiles nothing); on sim, which has no disk level, an arch is needed."""
    with config.override(BACKEND="cpu"):
        report = fa.precompile(fa.asarray(np.ones(4)) + 1)
    assert report["arch"].startswith("cpu-") and report["kernels"] == 1
    with config.override(BACKEND="sim"), pytest.raises(DeviceUnavailableError, match="arch="):
        fa.precompile(fa.asarray(np.ones(4)) + 1)
    with pytest.raises(ValueError, match="sm_90"):
        fa.precompile(fa.asarray(np.ones(4)) + 1, arch="gfx90a")


def test_devices_of_one_arch_share_one_compile(tmp_path):
    sys.path.insert(0, str(TESTS))
    from cachefakes import FakeCudaBackend, backend_module, install

    saved = dict(backend_module._active)
    try:
        with config.override(BACKEND="cuda", CACHE=False):   # the subject: no disk level
            fa.reset_stats()
            devices = [install(FakeCudaBackend(f"fake:{k}:sm_90")) for k in range(2)]
            for device in devices:
                install(device)
                (fa.asarray(np.ones(16, np.float32)) * 7.0 - 1.0).compute()
            assert fa.stats()["compiles"] == 1
            assert devices[0].loaded == devices[1].loaded and len(devices[0].loaded) == 1
    finally:
        backend_module._active.clear()
        backend_module._active.update(saved)
        runtime._artifacts.clear()


def test_the_warm_path_imports_no_numba():
    code = ("import sys, fusedarrays, fusedarrays.runtime.realize, fusedarrays.runtime.precompile, "
            "fusedarrays.cuda.backend, fusedarrays.cuda.load, fusedarrays.cuda.launch, "
            "fusedarrays.cuda.memory\n"
            "from fusedarrays.cuda.compile import toolchain_versions\n"
            "toolchain_versions()\n"
            "bad = [m for m in ('numba', 'llvmlite') if m in sys.modules]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ,
                                                                   "PYTHONPATH": pythonpath(REPO)})


def test_precompile_with_the_disk_cache_off_keeps_kernels_in_memory(tmp_path):
    x = fa.asarray(np.arange(64, dtype=np.float32))
    # the subject: the disk cache off
    with config.override(CACHE_DIR=str(tmp_path), CACHE=False), \
            pytest.warns(RuntimeWarning, match="memory only"):
        report = fa.precompile(fa.log1p(x) * 5.0, arch="sm_90", workers=0)
        assert fa.cache_info()["entries"] == 0   # of this folder
    assert report["compiled"] == 1 and not list(tmp_path.rglob("*.cubin"))
    runtime._artifacts.clear()
