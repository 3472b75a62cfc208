"""The kernel caches through the runtime, with real results: disk round trips, bad files, an
unusable folder, version changes, the switch and the size cap, one compile per arch, explained
compiles, and the hot path's reuse of plans. The backend is the cpu one with a disk level
(``tests/cachefakes.py``); each test is a fresh "device" so no memory-cache entry is shared."""

from __future__ import annotations

import itertools
import json
import logging
import warnings
from pathlib import Path

import numpy as np
import pytest
from cachefakes import DiskCpuBackend, backend_module, install
from htmlcheck import check_html

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.runtime import realize as runtime
from fusedarrays.runtime.diskcache import FORMAT

_devices = itertools.count()


@pytest.fixture
def cache_dir(tmp_path):
    saved = dict(backend_module._active)
    runtime._artifacts.clear()  # kernels kept in memory for devices of an arch with no disk
    with config.override(BACKEND="cpu", CACHE_DIR=str(tmp_path)):
        yield tmp_path
    backend_module._active.clear()
    backend_module._active.update(saved)


def new_device() -> DiskCpuBackend:
    """As a new process would be: nothing in memory for it, only the disk."""
    return install(DiskCpuBackend(f"cpu-disk-{next(_devices)}"))


def rand(n=100, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


def axpb(a, b, scale=1.5):
    got = (fa.asarray(a) * fa.asarray(b) + scale).get()
    np.testing.assert_allclose(got, a * b + a.dtype.type(scale), rtol=1e-6)
    return got


def entries(root: Path, kind: str = "src") -> list[Path]:
    return sorted((root / f"v{FORMAT}" / "sm_test").glob(f"*.{kind}"))


def test_a_second_process_loads_from_disk(cache_dir):
    a, b = rand(), rand(seed=1)
    first = new_device()
    fa.reset_stats()
    axpb(a, b)
    assert fa.stats()["compiles"] == 1 and fa.stats()["disk_hits"] == 0
    # one entry: the kernel's source (its module file and numba's cache of it come at numba's
    # default optimisation level only; tests/cpu/test_cpu_disk_cache.py runs that)
    assert len(entries(cache_dir)) == 1
    info = fa.cache_info()
    assert info["dir"] == str(cache_dir) and info["entries"] == 1 and info["bytes"] > 0
    assert str(cache_dir) in str(info) and "files" in str(info)   # shown as a table, not a dict
    assert "table" in check_html(info._repr_html_())
    second = new_device()
    fa.reset_stats()
    axpb(rand(seed=2), rand(seed=3), scale=-2.0)
    assert fa.stats()["compiles"] == 0 and fa.stats()["disk_hits"] == 1
    assert second.loads == first.loads  # the same kernel, loaded from its file


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign", "other key", "empty"])
def test_bad_files_are_misses_and_get_rewritten(cache_dir, damage):
    a, b = rand(), rand(seed=1)
    new_device()
    axpb(a, b)
    (path,) = entries(cache_dir)
    good = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "garbage":
        path.write_bytes(bytes(range(256)) * 4)
    elif damage == "foreign":
        path.write_bytes(b"\x7fELF" + good[4:])
    elif damage == "other key":
        path.write_bytes(good.replace(path.stem.encode(), b"0" * 64))
    else:
        path.write_bytes(b"")
    new_device()
    fa.reset_stats()
    axpb(a, b)  # no exception: a miss
    assert fa.stats()["compiles"] == 1 and fa.stats()["disk_hits"] == 0
    assert path.read_bytes() == good  # rewritten whole
    new_device()
    fa.reset_stats()
    axpb(a, b)
    assert fa.stats()["disk_hits"] == 1


@pytest.mark.parametrize("unusable", ["a file", "read-only"])
def test_an_unusable_folder_warns_once_and_results_stay_right(tmp_path, cache_dir, unusable):
    if unusable == "a file":
        folder = tmp_path / "not-a-folder"
        folder.write_text("")
    else:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
        probe = folder / "probe"
        try:
            probe.write_text("")
            pytest.skip("running as a user who can write into read-only folders")
        except OSError:
            pass
    with config.override(CACHE_DIR=str(folder)), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        new_device()
        axpb(rand(), rand(seed=1))
        axpb(rand(dtype=np.float64), rand(dtype=np.float64))
        assert fa.cache_info()["usable"] is False
        new_device()  # another device of the arch loads the kernel kept in memory
        fa.reset_stats()
        axpb(rand(), rand(seed=1))
        assert fa.stats()["compiles"] == 0
    cache_warnings = [w for w in seen if "kernel disk cache" in str(w.message)]
    assert len(cache_warnings) == 1 and cache_warnings[0].category is RuntimeWarning


def test_a_toolchain_version_change_misses(cache_dir, monkeypatch):
    a, b = rand(), rand(seed=1)
    new_device()
    axpb(a, b)
    from fusedarrays.cuda.compile import toolchain_versions

    newer = {**toolchain_versions(), "numba": "99.0.0"}
    monkeypatch.setenv("FA_TEST_TOOLCHAIN", json.dumps(newer))
    new_device()
    fa.reset_stats()
    axpb(a, b)
    assert fa.stats()["compiles"] == 1 and fa.stats()["disk_hits"] == 0
    assert len(entries(cache_dir)) == 2  # the old entry stays for the old toolchain
    headers = [p.read_bytes() for p in entries(cache_dir)]
    assert all(b"numba" not in h or b"99.0.0" not in h for h in headers)  # parts are structure


def test_an_edit_to_the_kernel_code_misses(cache_dir, tmp_path_factory, monkeypatch):
    # The kernel code read from a copy, so that one of its files can be edited.
    from fusedarrays.compiler import keys

    copy = tmp_path_factory.mktemp("package")
    for name in keys.KERNEL_CODE:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_bytes((Path(keys._PACKAGE) / name).read_bytes())
    monkeypatch.setattr(keys, "_PACKAGE", str(copy))
    monkeypatch.setattr(keys, "_code_version", None)
    a, b = rand(), rand(seed=1)
    new_device()
    axpb(a, b)
    new_device()
    fa.reset_stats()
    axpb(a, b)
    assert fa.stats()["compiles"] == 0 and fa.stats()["disk_hits"] == 1
    helpers = copy / "compiler" / "devicelib.py"
    helpers.write_text(helpers.read_text().replace("cv_i64(0)", "cv_i64(0 * a)", 1))
    monkeypatch.setattr(keys, "_code_version", None)  # as a new process would read it
    new_device()
    fa.reset_stats()
    axpb(a, b)
    assert fa.stats()["compiles"] == 1 and fa.stats()["disk_hits"] == 0
    assert len(entries(cache_dir)) == 2


def test_a_cache_folder_others_can_write_is_not_loaded_from(cache_dir, monkeypatch):
    a, b = rand(), rand(seed=1)
    new_device()
    axpb(a, b)
    (path,) = entries(cache_dir)
    cache_dir.chmod(0o777)  # as a shared FUSEDARRAYS_CACHE_DIR=/tmp/x would be
    monkeypatch.setattr(runtime, "_disk", {})  # a new process: its folders not checked yet
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            for compiles in (1, 0):  # the second device: the kernel kept in memory for the arch
                new_device()
                fa.reset_stats()
                axpb(a, b)
                assert fa.stats()["compiles"] == compiles and fa.stats()["disk_hits"] == 0
            assert fa.cache_info()["usable"] is False
    finally:
        cache_dir.chmod(0o700)
    (warning,) = [w for w in seen if "disk cache folder" in str(w.message)]
    assert warning.category is RuntimeWarning and "writable by group or others" in str(
        warning.message)
    assert entries(cache_dir) == [path]  # left as it was


def test_cache_off_writes_nothing_and_still_compiles_once_per_arch(cache_dir):
    with config.override(CACHE=False):   # the subject: the disk cache off
        first = new_device()
        fa.reset_stats()
        axpb(rand(), rand(seed=1))
        second = new_device()
        axpb(rand(), rand(seed=1))
        assert fa.stats()["compiles"] == 1 and fa.stats()["disk_hits"] == 0
        assert first.loads == second.loads  # each device loaded it once
        assert fa.cache_info()["enabled"] is False
    assert entries(cache_dir) == [] and fa.cache_info()["entries"] == 0


def test_clear_cache_empties_the_folder_and_memory(cache_dir):
    new_device()
    axpb(rand(), rand(seed=1))
    assert fa.cache_info()["entries"] == 1
    assert fa.clear_cache() == 1
    assert fa.cache_info()["entries"] == 0 and fa.cache_info()["memory_entries"] == 0
    fa.reset_stats()
    axpb(rand(), rand(seed=1))
    assert fa.stats()["compiles"] == 1


def test_the_size_cap_trims_old_entries(cache_dir):
    with config.override(CACHE_SIZE=3000):   # the subject: a cap a few entries pass
        new_device()
        for dtype in (np.float32, np.float64, np.int32, np.int64, np.int16):
            axpb(rand(dtype=np.float64).astype(dtype), rand(seed=1).astype(dtype), 3)
        assert 0 < fa.cache_info()["bytes"] <= 3000
        assert len(entries(cache_dir)) < 5


def test_why_a_kernel_compiled_is_explained_and_logged(cache_dir, caplog):
    new_device()
    x32 = fa.asarray(rand())
    e = fa.sqrt(x32) + 2.0
    assert fa.explain(e).why.startswith("not compiled in this process yet; it would be: ")
    e.compute()
    assert fa.explain(fa.sqrt(x32) + 2.0).why == "first compile of this graph"
    x64 = fa.asarray(rand(dtype=np.float64))
    # the subject: what the compile log says
    with config.override(LOG_COMPILES=True), caplog.at_level(logging.WARNING, "fusedarrays"):
        (fa.sqrt(x64) + 2.0).compute()
    why = fa.explain(fa.sqrt(x64) + 2.0).why
    assert why.startswith("in0 dtype float32 → float64; out1 dtype float32 → float64; "
                          "a0 dtype float32 → float64")
    (record,) = [r for r in caplog.records if "compiling" in r.getMessage()]
    assert why in record.getMessage()
    new_device()  # arrays made now live there
    x64 = fa.asarray(rand(dtype=np.float64))
    (fa.sqrt(x64) + 2.0).compute()
    assert fa.explain(fa.sqrt(x64) + 2.0).why == "loaded from the disk cache (sm_test)"


def test_timings_name_the_stages(cache_dir):
    new_device()
    fa.reset_stats()
    axpb(rand(), rand(seed=1))
    axpb(rand(), rand(seed=1))
    t = fa.timings()
    assert {"plan", "codegen", "compile", "disk read", "disk write", "load", "first launch",
            "launch"} <= set(t)
    assert t["first launch"][0] == 1 and t["launch"][0] == 1 and t["codegen"][0] == 1
    assert str(t).splitlines()[0].split() == ["stage", "count", "total", "mean"]


# -- the hot path: plans reused by trace signature -------------------------------------------

@pytest.fixture
def cpu():
    with config.override(BACKEND="cpu"):
        yield


def plans() -> int:
    return fa.timings().get("plan", (0, 0.0))[0]


def test_same_signature_plans_once_and_new_values_arrive(cpu):
    x, y = fa.asarray(rand()), fa.asarray(rand(seed=1))
    fa.reset_stats()
    for k in range(20):
        np.testing.assert_allclose((x * y + k).get(), rand() * rand(seed=1) + np.float32(k),
                                   rtol=1e-6)
    assert plans() == 1 and fa.stats()["launches"] == 20


def test_sharing_pattern_and_views_are_part_of_the_signature(cpu):
    a, b = rand(), rand(seed=1)
    x, y = fa.asarray(a), fa.asarray(b)
    for _ in range(3):  # alternate so a wrongly shared launch record would show
        np.testing.assert_allclose((x * y).get(), a * b)
        np.testing.assert_allclose((x * x).get(), a * a)
        np.testing.assert_allclose((x[1:] * y[:-1]).get(), a[1:] * b[:-1])
        np.testing.assert_allclose((x[:-1] * y[1:]).get(), a[:-1] * b[1:])
        np.testing.assert_allclose((x[::2] + y[1::2]).get(), a[::2] + b[1::2])
        np.testing.assert_allclose((x.reshape(10, 10).T + y.reshape(10, 10)).get(),
                                   a.reshape(10, 10).T + b.reshape(10, 10))


def test_a_computed_subexpression_is_read_not_recomputed(cpu):
    a, b = rand(), rand(seed=1)
    x, y = fa.asarray(a), fa.asarray(b)
    for _ in range(3):
        t = x * y
        w = t + 1.0
        np.testing.assert_allclose(t.get(), a * b)
        np.testing.assert_allclose(w.get(), a * b + 1)


def test_in_place_updates_repeat_correctly(cpu):
    a = rand()
    x = fa.asarray(a)
    fa.reset_stats()
    for _ in range(5):
        x += 1.0
        x *= 0.5
    want = a.copy()
    for _ in range(5):
        want = (want + np.float32(1)) * np.float32(0.5)
    np.testing.assert_allclose(x.get(), want, rtol=1e-6)
    assert plans() == 2


def test_threads_or_not_one_kernel(cpu):
    """CPU_PARALLEL decides how a kernel's chunks are run, not the kernel: no recompile."""
    a = rand(1 << 16)
    x = fa.asarray(a)
    fa.reset_stats()
    threaded = (x * 3.0).get()
    compiles = fa.stats()["compiles"]
    with config.override(CPU_PARALLEL=False):   # the subject: the serial setting
        serial = (x * 3.0).get()
    assert plans() == 1 and fa.stats()["compiles"] == compiles
    np.testing.assert_array_equal(threaded, a * np.float32(3.0))
    np.testing.assert_array_equal(serial, threaded)


def test_several_outputs_of_one_shape_launch_once(cpu):
    a, b = rand(), rand(seed=1)
    x, y = fa.asarray(a), fa.asarray(b)
    fa.reset_stats()
    for k in range(3):
        p, q = fa.compute(x + k, y * k)
        np.testing.assert_allclose(p.get(), a + np.float32(k))
        np.testing.assert_allclose(q.get(), b * np.float32(k))
    assert fa.stats()["launches"] == 3 and plans() == 1
