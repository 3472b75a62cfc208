"""The cpu backend's disk cache: a second process compiles nothing, damaged files are misses,
and fa.precompile fills it without a GPU (child processes: tests/cpucache_child.py)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
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


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A cache folder the first child process filled, and that child's answer: each test below
    takes a copy of it (modification times kept, as numba's index wants), so the first compile
    runs once for the module."""
    cache_dir = tmp_path_factory.mktemp("filled")
    first = child(cache_dir)
    assert first["ok"] and first["stats"]["compiles"] >= 6
    assert files(cache_dir, "*.src") and files(cache_dir, "__pycache__/*.nbc")
    return cache_dir, first


def copy_of(filled, tmp_path) -> pathlib.Path:
    return pathlib.Path(shutil.copytree(filled[0], tmp_path / "cache"))


def test_a_second_process_compiles_nothing(filled, tmp_path):
    cache_dir = copy_of(filled, tmp_path)
    second = child(cache_dir)
    assert second["ok"], "values from the disk cache differ from NumPy's"
    assert second["stats"]["compiles"] == 0
    assert second["stats"]["disk_hits"] == filled[1]["stats"]["compiles"]


def test_damaged_numba_files_are_compiled_again(filled, tmp_path):
    cache_dir = copy_of(filled, tmp_path)
    damaged = files(cache_dir, "__pycache__/*.nb*")
    assert damaged
    for path in damaged:
        path.write_bytes(path.read_bytes()[:40])   # truncated
    again = child(cache_dir)
    assert again["ok"] and again["stats"]["compiles"] == 0   # the entries still hit


def test_a_damaged_entry_is_a_miss(filled, tmp_path):
    cache_dir = copy_of(filled, tmp_path)
    for path in files(cache_dir, "*.src"):
        path.write_bytes(path.read_bytes()[:-7])   # the checksum no longer holds
    again = child(cache_dir)
    assert again["ok"] and again["stats"]["compiles"] == filled[1]["stats"]["compiles"]


def test_precompile_without_an_arch_fills_the_cpu_cache(tmp_path):
    report = child(tmp_path, "precompile")["report"]
    assert report["arch"].startswith("cpu-") and report["compiled"] == report["kernels"] == 5
    after = child(tmp_path)
    assert after["ok"]
    assert after["stats"]["compiles"] == 2   # only the fused function and its foreach
