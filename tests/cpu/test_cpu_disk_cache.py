"""The cpu backend's disk cache: a second process compiles nothing, damaged files are misses,
and fa.precompile fills it without a GPU (child processes: tests/cpucache_child.py)."""

import json
import os
import pathlib
import subprocess
import sys

from childenv import pythonpath

TESTS = pathlib.Path(__file__).resolve().parents[1]
REPO = TESTS.parent


def child(cache_dir, mode: str = "evaluate") -> dict:
    env = dict(os.environ, FUSEDARRAYS_CACHE_DIR=str(cache_dir), FUSEDARRAYS_BACKEND="cpu",
               PYTHONPATH=pythonpath(REPO, TESTS))
    # numba's optimisation level as users have it: at NUMBA_OPT=0 (tests/conftest.py, for
    # speed) numba calls helpers through addresses it will not cache
    env.pop("NUMBA_OPT", None)
    done = subprocess.run([sys.executable, str(TESTS / "cpucache_child.py"), mode], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def files(cache_dir, pattern: str) -> list[pathlib.Path]:
    return sorted(pathlib.Path(cache_dir).glob(f"v*/cpu-*/{pattern}"))


def test_a_second_process_compiles_nothing(tmp_path):
    first = child(tmp_path)
    assert first["ok"] and first["stats"]["compiles"] >= 6
    assert files(tmp_path, "*.src") and files(tmp_path, "__pycache__/*.nbc")
    second = child(tmp_path)
    assert second["ok"], "values from the disk cache differ from NumPy's"
    assert second["stats"]["compiles"] == 0
    assert second["stats"]["disk_hits"] == first["stats"]["compiles"]


def test_damaged_numba_files_are_compiled_again(tmp_path):
    child(tmp_path)
    damaged = files(tmp_path, "__pycache__/*.nb*")
    assert damaged
    for path in damaged:
        path.write_bytes(path.read_bytes()[:40])   # truncated
    again = child(tmp_path)
    assert again["ok"] and again["stats"]["compiles"] == 0   # the entries still hit


def test_a_damaged_entry_is_a_miss(tmp_path):
    first = child(tmp_path)
    for path in files(tmp_path, "*.src"):
        path.write_bytes(path.read_bytes()[:-7])   # the checksum no longer holds
    again = child(tmp_path)
    assert again["ok"] and again["stats"]["compiles"] == first["stats"]["compiles"]


def test_precompile_without_an_arch_fills_the_cpu_cache(tmp_path):
    report = child(tmp_path, "precompile")["report"]
    assert report["arch"].startswith("cpu-") and report["compiled"] == report["kernels"] == 5
    after = child(tmp_path)
    assert after["ok"]
    assert after["stats"]["compiles"] == 2   # only the fused function and its foreach
