"""Warm start on a real device: a second process loads the cubin from disk, compiles nothing,
imports no numba, and computes the right values; precompile for this GPU's arch, then run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from childenv import pythonpath

REPO = Path(__file__).resolve().parents[2]

EVALUATE = """
import json, sys, time
import numpy as np
import fusedarrays as fa
x = fa.asarray(np.arange(4096, dtype=np.float32))
y = fa.asarray(np.full(4096, 2, dtype=np.float32))
fa._get_backend().synchronize()
start = time.perf_counter()
r = (x * y + 1.5).compute()
fa._get_backend().synchronize()
first_ms = (time.perf_counter() - start) * 1e3
ok = bool(np.array_equal(r.get(), np.arange(4096, dtype=np.float32) * 2 + 1.5))
print(json.dumps({"stats": fa.stats(), "numba": "numba" in sys.modules, "ok": ok,
                  "first_ms": first_ms}))
"""

PRECOMPILE = """
import json
import numpy as np
import fusedarrays as fa
x = fa.asarray(np.arange(4096, dtype=np.float32))
y = fa.asarray(np.full(4096, 2, dtype=np.float32))
print(json.dumps(fa.precompile(x * y + 1.5)))
"""


def run(script: str, cache: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": pythonpath(REPO), "FUSEDARRAYS_CACHE_DIR": str(cache),
           "FUSEDARRAYS_BACKEND": "cuda"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_warm_process_runs_from_the_disk_cache_without_numba(tmp_path):
    cold = run(EVALUATE, tmp_path)
    assert cold["ok"] and cold["stats"]["compiles"] == 1
    warm = run(EVALUATE, tmp_path)
    assert warm["ok"] and warm["numba"] is False
    assert warm["stats"]["compiles"] == 0 and warm["stats"]["disk_hits"] == 1


def test_precompile_for_this_gpu_then_run_without_compiling(tmp_path):
    report = run(PRECOMPILE, tmp_path)
    assert report["compiled"] == 1 and report["arch"].startswith("sm_")
    warm = run(EVALUATE, tmp_path)
    assert warm["ok"] and warm["numba"] is False and warm["stats"]["compiles"] == 0
