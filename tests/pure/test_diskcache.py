"""The disk cache: round trips, other processes, bad files, unusable folders, the size cap."""

from __future__ import annotations

import ast
import doctest
import errno
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from childenv import pythonpath

from fusedarrays.runtime import diskcache
from fusedarrays.runtime.diskcache import FORMAT, DiskCache

REPO = Path(__file__).resolve().parents[2]
ARCH = "sm_90"
META = {"parts": {"graph": "a*b+c", "dtypes": "float32"}, "entry": "_Z6kernelPfS_S_"}


def key_of(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def body_of(key: str) -> bytes:
    """A few KB that depend only on the key, so any process can check what it reads."""
    return hashlib.shake_256(key.encode()).digest(1024 + int(key[:4], 16) % 4096)


def entry_path(root: Path, key: str, kind: str = "ptx", arch: str = ARCH) -> Path:
    return root / f"v{FORMAT}" / arch / f"{key}.{kind}"


def run_python(source: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": pythonpath(REPO)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(source), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*") if p.is_file()]


def test_round_trip_keeps_bytes_and_meta(tmp_path):
    cache = DiskCache(tmp_path)
    key = key_of("round trip")
    body = bytes(range(256)) * 7  # every byte value, NULs included
    assert cache.get(ARCH, key, "ptx") is None
    assert cache.put(ARCH, key, "ptx", body, META) is True
    assert cache.get(ARCH, key, "ptx") == (body, META)
    assert cache.get(ARCH, key, "cubin") is None  # kind is part of the address
    assert cache.get("sm_80", key, "ptx") is None  # so is arch
    assert entry_path(tmp_path, key).is_file()
    assert temp_files(tmp_path) == []
    assert cache.put(ARCH, key, "ptx", b"", {}) is True  # a rewrite replaces the whole entry
    assert cache.get(ARCH, key, "ptx") == (b"", {})


def test_another_process_reads_ours_and_writes_one_we_read(tmp_path):
    cache = DiskCache(tmp_path)
    ours, theirs = key_of("ours"), key_of("theirs")
    cache.put(ARCH, ours, "ptx", body_of(ours), META)
    child = run_python(
        """
        import hashlib, json, sys
        from fusedarrays.runtime.diskcache import DiskCache
        root, ours, theirs = sys.argv[1:]
        cache = DiskCache(root)
        body, meta = cache.get("sm_90", ours, "ptx")
        print(json.dumps({"sha": hashlib.sha256(body).hexdigest(), "meta": meta}))
        assert cache.put("sm_90", theirs, "cubin", body[::-1], {"parts": {"by": "child"}})
        """,
        str(tmp_path),
        ours,
        theirs,
    )
    seen = json.loads(child.stdout)
    assert seen == {"sha": hashlib.sha256(body_of(ours)).hexdigest(), "meta": META}
    assert cache.get(ARCH, theirs, "cubin") == (body_of(ours)[::-1], {"parts": {"by": "child"}})


def _split(data: bytes) -> tuple[bytes, dict, bytes]:
    magic, head_len = diskcache._PREFIX.unpack_from(data)
    at = diskcache._PREFIX.size
    return magic, json.loads(data[at : at + head_len]), data[at + head_len :]


def _with_header(data: bytes, **changes) -> bytes:
    magic, header, body = _split(data)
    head = json.dumps({**header, **changes}).encode()
    return diskcache._PREFIX.pack(magic, len(head)) + head + body


def _with_header_bytes(data: bytes, rewrite) -> bytes:
    _, head_len = diskcache._PREFIX.unpack_from(data)
    at = diskcache._PREFIX.size
    return data[:at] + rewrite(data[at : at + head_len]) + data[at + head_len :]


# name: (how the file is damaged, a word the DEBUG log must give as the reason)
DAMAGE = {
    "empty": (lambda d: b"", "truncated"),
    "truncated_prefix": (lambda d: d[:5], "truncated"),
    "truncated_header": (lambda d: d[: diskcache._PREFIX.size + 10], "truncated"),
    "truncated_body": (lambda d: d[:-100], "truncated"),
    "padded_body": (lambda d: d + b"\0", "padded"),
    "garbage": (lambda d: hashlib.shake_256(b"garbage").digest(len(d)), "foreign"),
    "bad_magic": (lambda d: b"NOTOURS\0" + d[8:], "foreign"),
    "foreign_format": (lambda d: _with_header(d, format=FORMAT + 1), "format"),
    "header_not_json": (lambda d: _with_header_bytes(d, lambda head: b"{" * len(head)), "JSON"),
    "header_not_utf8": (lambda d: _with_header_bytes(d, lambda head: b"\xff" * len(head)), "JSON"),
    "header_not_object": (
        lambda d: diskcache._PREFIX.pack(diskcache._MAGIC, 2) + b"[]" + d,
        "not an object",
    ),
    "wrong_sha": (lambda d: _with_header(d, body_sha256="0" * 64), "sha256"),
    "flipped_body_byte": (lambda d: d[:-1] + bytes([d[-1] ^ 0x01]), "sha256"),
}


@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_file_is_a_logged_miss_then_rewritten(tmp_path, caplog, name):
    damage, reason = DAMAGE[name]
    cache = DiskCache(tmp_path)
    key = key_of(name)
    cache.put(ARCH, key, "ptx", body_of(key), META)
    path = entry_path(tmp_path, key)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.DEBUG, logger="fusedarrays.diskcache"):
        assert cache.get(ARCH, key, "ptx") is None
    (record,) = [r for r in caplog.records if r.name == "fusedarrays.diskcache"]
    assert reason in record.getMessage() and str(path) in record.getMessage()
    assert not path.exists()  # removed, so the next reader does not pay for it again
    assert cache.put(ARCH, key, "ptx", body_of(key), META) is True
    assert cache.get(ARCH, key, "ptx") == (body_of(key), META)


@pytest.mark.parametrize(
    "onto", [(ARCH, "other key", "ptx"), (ARCH, "same", "cubin"), ("sm_80", "same", "ptx")]
)
def test_entry_moved_onto_another_address_is_a_miss(tmp_path, caplog, onto):
    arch, name, kind = onto
    cache = DiskCache(tmp_path)
    key = key_of("original")
    other = key if name == "same" else key_of(name)
    cache.put(ARCH, key, "ptx", body_of(key), META)
    target = entry_path(tmp_path, other, kind, arch)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(entry_path(tmp_path, key).read_bytes())
    with caplog.at_level(logging.DEBUG, logger="fusedarrays.diskcache"):
        assert cache.get(arch, other, kind) is None
    assert "mismatched" in caplog.text
    assert not target.exists()
    assert cache.get(ARCH, key, "ptx") == (body_of(key), META)  # the original is untouched
    assert cache.put(arch, other, kind, b"mine", META) is True
    assert cache.get(arch, other, kind) == (b"mine", META)


def _puts_warn_once(cache: DiskCache, folder: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [cache.put(ARCH, key_of(str(i)), "ptx", b"body", META) for i in range(4)]
    assert results == [False] * 4
    (warning,) = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    text = str(warning.message)
    assert str(folder) in text and "memory cache only" in text
    assert "FUSEDARRAYS_CACHE_DIR" in text and "FUSEDARRAYS_CACHE=0" in text
    assert cache.usable is False and cache.info()["usable"] is False
    assert cache.get(ARCH, key_of("0"), "ptx") is None


def test_root_that_is_a_file_degrades_to_memory_only(tmp_path):
    root = tmp_path / "not-a-folder"
    root.write_bytes(b"precious")
    cache = DiskCache(root)
    assert cache.usable is True
    _puts_warn_once(cache, root)
    assert root.read_bytes() == b"precious"
    assert cache.clear() == 0 and cache.info()["entries"] == 0


def test_read_only_folder_degrades_to_memory_only(tmp_path, monkeypatch):
    cache = DiskCache(tmp_path)
    cache.put(ARCH, key_of("before"), "ptx", b"old", META)
    if os.geteuid() == 0:  # root writes through chmod, so stand in for the kernel's EROFS

        def read_only(src, dst):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(dst))

        monkeypatch.setattr(os, "replace", read_only)
    else:
        os.chmod(entry_path(tmp_path, key_of("before")).parent, 0o555)
    try:
        _puts_warn_once(cache, tmp_path)
    finally:
        os.chmod(entry_path(tmp_path, key_of("before")).parent, 0o755)
    assert temp_files(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_full_disk_degrades_and_leaves_no_temp_file(tmp_path, monkeypatch):
    real_mkstemp = tempfile.mkstemp

    def mkstemp_on_full_disk(**kwargs):
        fd, name = real_mkstemp(**kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name  # every write fails with ENOSPC

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp_on_full_disk)
    cache = DiskCache(tmp_path)
    _puts_warn_once(cache, tmp_path)
    assert temp_files(tmp_path) == []
    assert cache.info()["entries"] == 0


def test_disabled_cache_touches_nothing(tmp_path):
    root = tmp_path / "cache"
    cache = DiskCache(root, enabled=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.put(ARCH, key_of("x"), "ptx", b"x", META) is False
    assert cache.get(ARCH, key_of("x"), "ptx") is None
    assert cache.usable is False and not root.exists()


def test_size_cap_trims_least_recently_used(tmp_path):
    keys = [key_of(f"entry {i}") for i in range(8)]
    writer = DiskCache(tmp_path)
    for key in keys:
        writer.put(ARCH, key, "ptx", b"x" * 1000, META)
    size = entry_path(tmp_path, keys[0]).stat().st_size
    now = time.time()
    for age, key in enumerate(reversed(keys)):  # keys[0] is the oldest
        os.utime(entry_path(tmp_path, key), (now - 100 - 10 * age,) * 2)
    cap = int(size * 5.5)
    cache = DiskCache(tmp_path, max_bytes=cap)
    assert cache.get(ARCH, keys[0], "ptx") is not None  # a hit makes the oldest the newest
    new = key_of("new")
    assert cache.put(ARCH, new, "ptx", b"y" * 1000, META) is True
    kept = [key for key in keys if entry_path(tmp_path, key).exists()]
    removed = [key for key in keys if key not in kept]
    assert cache.info()["bytes"] <= cap
    assert removed == keys[1 : 1 + len(removed)] and removed  # oldest mtime first
    assert keys[0] in kept and entry_path(tmp_path, new).exists()
    assert cache.get(ARCH, keys[-1], "ptx") == (b"x" * 1000, META)


def test_puts_under_the_cap_scan_the_folder_once(tmp_path, monkeypatch):
    scans = []
    real_scan = DiskCache._scan
    monkeypatch.setattr(DiskCache, "_scan", lambda self: scans.append(1) or real_scan(self))
    cache = DiskCache(tmp_path, max_bytes=1 << 20)
    for i in range(20):
        cache.put(ARCH, key_of(str(i)), "ptx", b"z" * 1000, META)
    assert len(scans) == 1
    assert cache.info()["entries"] == 20


def test_info_and_clear(tmp_path):
    cache = DiskCache(tmp_path)
    assert cache.info() == {"dir": str(tmp_path), "entries": 0, "bytes": 0, "usable": True}
    cache.put("sm_80", key_of("a"), "ptx", b"a" * 10, META)
    cache.put("sm_90", key_of("a"), "cubin", b"b" * 20, META)
    cache.put("sm_90", key_of("b"), "ptx", b"c" * 30, META)
    old = tmp_path / "v0" / "sm_90" / "left-by-an-old-version"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"old")
    live_tmp = entry_path(tmp_path, key_of("b")).with_name(".in-flight.tmp")
    live_tmp.write_bytes(b"a writer between mkstemp and os.replace")
    dead_tmp = live_tmp.with_name(".crashed.tmp")
    dead_tmp.write_bytes(b"left by a writer that died")
    os.utime(dead_tmp, (time.time() - 3600,) * 2)
    stray = tmp_path / "unrelated.txt"  # outside v*/: not the cache's to count or remove
    stray.write_bytes(b"keep me")
    files = [p for p in tmp_path.glob("v*/*/*") if p != live_tmp]
    info = cache.info()
    assert info["entries"] == 5 and info["bytes"] == sum(p.stat().st_size for p in files)
    assert cache.clear() == 5
    assert live_tmp.exists() and not dead_tmp.exists()
    assert cache.info()["entries"] == 0 and cache.clear() == 0
    assert cache.get("sm_90", key_of("b"), "ptx") is None
    assert stray.read_bytes() == b"keep me"
    assert DiskCache(tmp_path / "missing").info()["entries"] == 0


@pytest.mark.parametrize(
    "arch, key, kind, meta",
    [
        (ARCH, "abc", "ptx", {}),
        (ARCH, key_of("k").upper(), "ptx", {}),
        ("../escape", key_of("k"), "ptx", {}),
        ("..", key_of("k"), "ptx", {}),
        (ARCH, key_of("k"), "ptx/../x", {}),
        (ARCH, key_of("k"), "ptx", {"key": "forged"}),
    ],
)
def test_malformed_arguments_raise_value_error(tmp_path, arch, key, kind, meta):
    cache = DiskCache(tmp_path / "cache")
    with pytest.raises(ValueError):
        cache.put(arch, key, kind, b"body", meta)
    assert list(tmp_path.iterdir()) == []


WRITER = """
    import hashlib, sys, time
    from fusedarrays.runtime.diskcache import DiskCache

    def body_of(key):  # the same rule as body_of in the test module
        return hashlib.shake_256(key.encode()).digest(1024 + int(key[:4], 16) % 4096)

    root, writer, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
    cache = DiskCache(root)
    shared = [hashlib.sha256(f"shared {i}".encode()).hexdigest() for i in range(10)]
    own = [hashlib.sha256(f"own {writer} {i}".encode()).hexdigest() for i in range(10)]
    time.sleep(max(0.0, start - time.time()))
    for round_ in range(3):
        for i, (s, o) in enumerate(zip(shared, own)):
            for key in (s, o):
                meta = {"parts": {"writer": writer}, "entry": "k"}
                assert cache.put("sm_90", key, "cubin", body_of(key), meta)
            for key in shared[: i + 1] + own[: i + 1]:  # all written by us already: never a miss
                body, meta = cache.get("sm_90", key, "cubin")
                assert body == body_of(key), key
"""


def test_eight_processes_racing_leave_every_entry_sound(tmp_path):
    env = {**os.environ, "PYTHONPATH": pythonpath(REPO)}
    start = time.time() + 0.5
    children = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(WRITER), str(tmp_path), str(w), str(start)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(8)
    ]
    for child in children:
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
    cache = DiskCache(tmp_path)
    for i in range(10):
        key = key_of(f"shared {i}")
        body, meta = cache.get(ARCH, key, "cubin")
        assert body == body_of(key) and meta["parts"]["writer"] in {str(w) for w in range(8)}
    for w in range(8):
        for i in range(10):
            key = key_of(f"own {w} {i}")
            assert cache.get(ARCH, key, "cubin") == (
                body_of(key),
                {"parts": {"writer": str(w)}, "entry": "k"},
            )
    assert cache.info()["entries"] == 10 + 8 * 10
    assert temp_files(tmp_path) == []


# -- trust: folders 0700, nothing another user could have written is loaded -------------------

FOREIGN_UID = 4242


def folders_of(root: Path, arch: str = ARCH) -> list[Path]:
    return [root, root / f"v{FORMAT}", root / f"v{FORMAT}" / arch]


def make_foreign(monkeypatch, paths) -> None:
    """Give ``paths`` to another user: for real where the tests run as root, else by making this
    process another user (then every file is foreign, but folder verdicts already kept stay)."""
    if os.geteuid() == 0:
        for path in paths:
            os.chown(path, FOREIGN_UID, FOREIGN_UID)
    else:
        monkeypatch.setattr(diskcache, "_process_uid", lambda: FOREIGN_UID)


def cache_warnings(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077, 0o277], ids=oct)
def test_cache_folders_are_made_0700_whatever_the_umask(tmp_path, umask):
    root = tmp_path / "cache"
    old = os.umask(umask)
    try:
        assert DiskCache(root).put(ARCH, key_of("k"), "ptx", b"x", META) is True
    finally:
        os.umask(old)
    for folder in folders_of(root):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert entry_path(root, key_of("k")).stat().st_mode & 0o077 == 0
    assert DiskCache(root).get(ARCH, key_of("k"), "ptx") == (b"x", META)


@pytest.mark.parametrize("mode", [0o775, 0o777], ids=oct)
@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_folder_others_can_write_is_a_miss_with_one_warning(tmp_path, which, mode):
    root = tmp_path / "cache"
    names = [key_of(f"k{i}") for i in range(3)]
    writer = DiskCache(root)
    for key in names:
        writer.put(ARCH, key, "cubin", body_of(key), META)
    folder = folders_of(root)[which]
    os.chmod(folder, mode)
    cache = DiskCache(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [cache.get(ARCH, key, "cubin") for key in names] == [None] * 3
        assert cache.get(ARCH, names[0], "ptx") is None
        assert cache.put(ARCH, key_of("new"), "cubin", b"x", META) is False
    (text,) = cache_warnings(caught)
    assert repr(str(folder)) in text and f"writable by group or others (mode {mode:#o})" in text
    assert "FUSEDARRAYS_CACHE_DIR" in text
    assert all(entry_path(root, key, "cubin").exists() for key in names)  # left alone
    assert not entry_path(root, key_of("new"), "cubin").exists()
    assert cache.info()["usable"] is (folder == folders_of(root)[-1])
    os.chmod(folder, 0o700)
    assert DiskCache(root).get(ARCH, names[0], "cubin") == (body_of(names[0]), META)


def _entries_in_two_archs(root: Path) -> list[tuple[str, str]]:
    cache = DiskCache(root)
    found = [(arch, key_of(f"{arch} {i}")) for arch in ("sm_80", ARCH) for i in range(3)]
    for arch, key in found:
        assert cache.put(arch, key, "cubin", body_of(key), META)
    return found


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666], ids=oct)
def test_entries_others_can_write_are_misses_with_one_warning_per_folder(tmp_path, mode):
    found = _entries_in_two_archs(tmp_path)
    for arch, key in found:
        os.chmod(entry_path(tmp_path, key, "cubin", arch), mode)
    cache = DiskCache(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [cache.get(arch, key, "cubin") for arch, key in found] == [None] * len(found)
    texts = cache_warnings(caught)
    assert len(texts) == 2  # one per folder, not one per entry
    for text, arch in zip(texts, ("sm_80", ARCH)):
        assert repr(str(tmp_path / f"v{FORMAT}" / arch)) in text
        assert f"writable by group or others (mode {mode:#o})" in text
    assert not any(entry_path(tmp_path, key, "cubin", arch).exists() for arch, key in found)
    arch, key = found[0]
    assert cache.put(arch, key, "cubin", body_of(key), META) is True  # ours again: 0600
    assert cache.get(arch, key, "cubin") == (body_of(key), META)


def test_entries_another_user_owns_are_misses_with_one_warning_per_folder(tmp_path,
                                                                          monkeypatch):
    found = _entries_in_two_archs(tmp_path)
    cache = DiskCache(tmp_path)
    for arch, key in found[::3]:  # the folders of both archs checked (and kept) as ours
        assert cache.get(arch, key, "cubin") == (body_of(key), META)
    make_foreign(monkeypatch, [entry_path(tmp_path, key, "cubin", arch) for arch, key in found])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [cache.get(arch, key, "cubin") for arch, key in found] == [None] * len(found)
    texts = cache_warnings(caught)
    assert len(texts) == 2 and all(f"owned by uid {FOREIGN_UID if os.geteuid() == 0 else ''}"
                                   in text for text in texts)
    assert repr(str(tmp_path / f"v{FORMAT}" / "sm_80")) in texts[0]


@pytest.mark.parametrize("mode", [0o755, 0o777], ids=oct)
def test_kernels_planted_in_a_shared_folder_are_not_loaded(tmp_path, monkeypatch, mode):
    # FUSEDARRAYS_CACHE_DIR=/tmp/x, made first by another user who put a kernel in it: a valid
    # entry, checksum and all. As root (the tests here) the folder is really another user's,
    # so this is also a root process refusing a folder that a user owns.
    shared = tmp_path / "x"
    key = key_of("planted")
    assert DiskCache(shared).put(ARCH, key, "cubin", b"\x7fELF planted", META)
    for folder in folders_of(shared):
        os.chmod(folder, mode)
    make_foreign(monkeypatch, [*folders_of(shared), entry_path(shared, key, "cubin")])
    cache = DiskCache(shared)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cache.get(ARCH, key, "cubin") is None
        assert cache.get("sm_80", key, "cubin") is None
        assert cache.put(ARCH, key_of("mine"), "cubin", b"mine", META) is False
    (text,) = cache_warnings(caught)
    assert repr(str(shared)) in text and "owned by uid" in text
    assert cache.usable is False and entry_path(shared, key, "cubin").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs files that root owns")
def test_files_root_owns_are_trusted_by_every_user(tmp_path, monkeypatch):
    cache = DiskCache(tmp_path)
    assert cache.put(ARCH, key_of("k"), "cubin", b"from root", META)
    monkeypatch.setattr(diskcache, "_process_uid", lambda: FOREIGN_UID)  # a user reading them
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert DiskCache(tmp_path).get(ARCH, key_of("k"), "cubin") == (b"from root", META)


def test_a_hit_costs_one_fstat_and_the_folders_are_checked_once(tmp_path, monkeypatch):
    names = [key_of(f"k{i}") for i in range(10)]
    writer = DiskCache(tmp_path)
    for key in names:
        writer.put(ARCH, key, "cubin", body_of(key), META)
    cache = DiskCache(tmp_path)
    calls = []
    for name in ("stat", "lstat", "fstat", "open"):
        real = getattr(os, name)
        monkeypatch.setattr(
            os, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k)
        )
    found = [cache.get(ARCH, key, "cubin") for key in names]
    monkeypatch.undo()
    assert found == [(body_of(key), META) for key in names]
    assert sorted(calls) == sorted(["stat"] * 3 + ["fstat"] * 10 + ["open"] * 10)


def test_docstring_example_runs():
    result = doctest.testmod(diskcache)
    assert result.attempted > 0 and result.failed == 0


def test_imports_only_the_standard_library():
    tree = ast.parse(Path(diskcache.__file__).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
    allowed = set(sys.stdlib_module_names) | {"__future__", "fusedarrays.errors"}
    assert {n for n in names if n.split(".")[0] not in allowed and n not in allowed} == set()
