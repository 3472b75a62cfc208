"""The disk level of the kernel cache: one self-validating file per key.

Where it sits: ``keys.py`` names a kernel → the runtime asks the memory cache, then this cache,
before it runs codegen and compile (``cuda/compile.py``); what compile produces is put here, and
``cuda/load.py`` loads the body. Entries are PTX and cubins per *arch*, a string naming the
target (``sm_90``; a cpu level would name its triple and CPU, ``cpu-x86_64-skylake``), so nothing
here needs a device, and only the standard library is imported: a warm process reaches a cubin
on disk without importing numba.

Layout: ``<root>/v{FORMAT}/<arch>/<key>.<kind>``. Each file is::

    MAGIC (8 bytes) | header length (u32, little-endian) | header (JSON, utf-8) | body

The header repeats format, key, kind and arch and carries the body's length and sha256, so every
file proves itself; there is no manifest, no lock and no pickle. Anything that does not prove itself
is a miss (logged at DEBUG and removed), never an exception.

Trust: a cubin is code this process will run, and the checksum guards against corruption (a torn
write, a bad disk), not against an attacker, who would write a matching checksum. So the cache's
own folders (``<root>``, ``v{FORMAT}``, ``<arch>``) are made with mode 0700, and a folder or an
entry that another user owns or that group or others may write is a miss, never an exception,
with one RuntimeWarning per folder and instance (:meth:`DiskCache._distrusted`), so a shared
``FUSEDARRAYS_CACHE_DIR=/tmp/x`` cannot feed this process another user's kernels. Root's files
are trusted (root can change whatever this process runs anyway); a root process trusts only its
own. The folders are checked once per arch and instance (three stats); an entry on every read,
on the file opened (``fstat``), so the file checked is the file read.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import struct
import tempfile
import threading
import time
import warnings
from pathlib import Path

FORMAT = 1

_MAGIC = b"FACACHE\0"
# Fixed little-endian so machines sharing one cache folder read each other's files alike.
_PREFIX = struct.Struct("<8sI")
_RESERVED = frozenset({"format", "key", "kind", "arch", "body_sha256", "body_len"})
_KEY_RE = re.compile(r"[0-9a-f]{64}")
_KIND_RE = re.compile(r"[A-Za-z0-9_]{1,32}")
# Arch and kind become path components: no separators, and no leading "." (that is how temp files
# are told apart from entries, and it keeps "." and ".." out).
_ARCH_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
# A temp file younger than this may belong to a writer between mkstemp and os.replace.
_TMP_GRACE_S = 600.0
# Trim below the cap, not just to it, so a cache sitting at its cap is not rescanned on every put.
_LOW_WATER = 0.9
# An entry is opened as a regular file only: a symlink fails (ELOOP: a miss), a FIFO does not block.
_OPEN_FLAGS = (os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_UTIME_FD = os.utime in os.supports_fd
_UNSAFE_MODE = stat.S_IWGRP | stat.S_IWOTH

_log = logging.getLogger("fusedarrays.diskcache")


class _BadEntry(Exception):
    """A file that is not a valid entry for the key asked for; the message says why."""


class DiskCache:
    """Blobs (PTX, cubins) on disk, one file per ``(arch, key, kind)``, with an LRU size cap.

    >>> import tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> cache = DiskCache(tmp.name)
    >>> key = "ab" * 32
    >>> cache.put("sm_90", key, "ptx", b".version 8.0", {"parts": {"graph": "a*b"}, "entry": "k"})
    True
    >>> cache.get("sm_90", key, "ptx")
    (b'.version 8.0', {'entry': 'k', 'parts': {'graph': 'a*b'}})
    >>> cache.info()["entries"], cache.clear(), cache.get("sm_90", key, "ptx")
    (1, 1, None)
    >>> tmp.cleanup()
    """

    def __init__(
        self, root: str | os.PathLike, *, max_bytes: int = 1 << 30, enabled: bool = True
    ) -> None:
        self._root = Path(root)
        self._max_bytes = int(max_bytes)
        self._usable = bool(enabled)
        self._lock = threading.Lock()
        # Bytes on disk as far as this process knows; None until the first put scans the folder.
        # Other processes write too, so it is only a trigger for a scan, never trusted for trimming.
        self._estimate: int | None = None
        # arch → whether its folders (root, version, arch) are ours alone; decided once each
        # folder exists (a missing one is looked at again on the next call).
        self._folders_ok: dict[str, bool] = {}
        self._warned: set[str] = set()   # folders warned about: one warning per folder

    def __repr__(self) -> str:
        return f"DiskCache({str(self._root)!r}, max_bytes={self._max_bytes}, usable={self._usable})"

    @property
    def usable(self) -> bool:
        """False once the folder proved unwritable or another user's (or the cache was disabled):
        all calls miss."""
        return self._usable

    def get(self, arch: str, key: str, kind: str) -> tuple[bytes, dict] | None:
        """Return ``(body, meta)`` stored for the key, or None; a bad file is a logged miss, a
        file or folder another user could have written a miss with one warning per folder."""
        path = self._path(arch, key, kind)
        if not self._usable:
            return None
        ours = self._folders_ok.get(arch)
        if ours is None:
            ours = self._check_folders(arch)
        if ours is False:
            return None
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._reject(path, f"unreadable ({exc})")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return self._reject(path, "not a regular file")
            why = _distrust(st)
            if why is not None:
                self._distrusted(path.parent, f"its entry {path.name} is {why}")
                return self._reject(path, why)
            data = _read_all(fd, st.st_size)
            try:
                found = _decode(data, arch, key, kind)
            except _BadEntry as exc:
                return self._reject(path, str(exc))
            # A hit is a use: the mtime is the LRU clock. In a read-only folder the order stays.
            with contextlib.suppress(OSError):
                os.utime(fd if _UTIME_FD else path)
            return found
        except OSError as exc:
            return self._reject(path, f"unreadable ({exc})")
        finally:
            os.close(fd)

    def put(self, arch: str, key: str, kind: str, body: bytes, meta: dict) -> bool:
        """Publish ``body`` with ``meta`` (JSON-able) under the key; True if it is now on disk.

        A folder that cannot be written turns the cache off for this instance, with one
        RuntimeWarning; a folder another user could write is left alone (False, one warning for
        the folder). Malformed arguments (a key that is not a sha256, a path-like arch, meta
        naming a header field) are caller bugs and raise ValueError.
        """
        path = self._path(arch, key, kind)
        data = _encode(arch, key, kind, bytes(body), meta)
        if not self._usable:
            return False
        ours = self._folders_ok.get(arch)
        if ours is False:
            return False
        try:
            if ours is None and not self._made_ours(arch):
                return False
            try:
                _publish(path, data)
            except FileNotFoundError:  # the folder went since it was checked: make it again
                if not self._made_ours(arch):
                    return False
                _publish(path, data)
        except OSError as exc:
            self._disable(path.parent, exc)
            return False
        self._note_written(len(data), path)
        return True

    def info(self) -> dict:
        """``{"dir", "entries", "bytes", "usable"}`` for every format version under the root."""
        files = self._scan()
        return {
            "dir": str(self._root),
            "entries": len(files),
            "bytes": sum(size for _, size, _ in files),
            "usable": self._usable,
        }

    def clear(self) -> int:
        """Remove every entry under ``<root>/v*/`` (old formats too); return how many went."""
        removed = 0
        for _, _, path in self._scan():
            try:
                path.unlink()
            except OSError:
                continue
            removed += 1
        self._estimate = None
        return removed

    def folder(self, arch: str) -> Path | None:
        """arch's folder (made 0700 where missing) for files a backend manages inside it (the
        cpu backend's kernel modules and numba's cache of them), or None where the cache is
        unusable or the folder not this user's alone. Its files count in ``info``, ``clear``
        and the size cap like entries."""
        self._path(arch, "0" * 64, "x")   # validates arch
        if not self._usable:
            return None
        ours = self._folders_ok.get(arch)
        if ours is None:
            try:
                ours = self._made_ours(arch)
            except OSError as exc:
                self._disable(self._folders(arch)[-1], exc)
                return None
        return self._folders(arch)[-1] if ours else None

    def _path(self, arch: str, key: str, kind: str) -> Path:
        if not (isinstance(key, str) and _KEY_RE.fullmatch(key)):
            raise ValueError(f"disk cache key must be 64 lowercase hex digits (a sha256), {key=}")
        if not (isinstance(arch, str) and _ARCH_RE.fullmatch(arch)):
            raise ValueError(
                f"disk cache arch must look like 'sm_90' (no '/' or leading '.'), {arch=}"
            )
        if not (isinstance(kind, str) and _KIND_RE.fullmatch(kind)):
            raise ValueError(f"disk cache kind must be a plain suffix such as 'ptx', {kind=}")
        return self._root / f"v{FORMAT}" / arch / f"{key}.{kind}"

    def _folders(self, arch: str) -> tuple[Path, Path, Path]:
        version = self._root / f"v{FORMAT}"
        return self._root, version, version / arch

    def _made_ours(self, arch: str) -> bool:
        """Make arch's missing folders (mode 0700), then check them all: True if ours alone."""
        self._folders_ok.pop(arch, None)
        _make_folders(self._root, arch)
        return bool(self._check_folders(arch))

    def _check_folders(self, arch: str) -> bool | None:
        """Whether arch's folders are this user's alone (the verdict kept); None while one of
        them does not exist (nothing kept: the next call looks again)."""
        for folder in self._folders(arch):
            try:
                st = os.stat(folder)
            except OSError:
                return None  # missing, or not a folder: reading or writing fails on its own
            why = _distrust(st)
            if why is not None:
                self._folders_ok[arch] = False
                if folder != self._folders(arch)[-1]:
                    self._usable = False  # every arch's folder lies under this one
                self._distrusted(folder, f"it is {why}")
                return False
        self._folders_ok[arch] = True
        return True

    def _distrusted(self, folder: Path, why: str) -> None:
        """One RuntimeWarning per folder and instance; the runtime keeps one instance per
        cache setting, so it is one per folder and process."""
        with self._lock:
            if str(folder) in self._warned:
                return
            self._warned.add(str(folder))
        name = str(folder)
        warnings.warn(
            f"fusedarrays: not loading kernels from the disk cache folder {name!r}: {why}, so "
            "another user could have put code there; those kernels are compiled instead. Use "
            "a folder only you can write (FUSEDARRAYS_CACHE_DIR; the default is in your home) "
            f"or make this one yours alone: chown -R $USER {name!r}; chmod -R go-w {name!r}",
            RuntimeWarning,
            stacklevel=3,
        )

    def _reject(self, path: Path, why: str) -> None:
        _log.debug("disk cache miss: %s is %s; removing it", path, why)
        # Best effort: if a writer has just replaced it with a good file, this costs one recompile.
        with contextlib.suppress(OSError):
            path.unlink()
        return None

    def _disable(self, folder: Path, exc: OSError) -> None:
        with self._lock:
            if not self._usable:
                return
            self._usable = False
        warnings.warn(
            f"fusedarrays: cannot write the kernel disk cache in {str(folder)!r} ({exc}); "
            "continuing with the memory cache only. Set FUSEDARRAYS_CACHE_DIR to a writable "
            "folder, or FUSEDARRAYS_CACHE=0 to turn the disk cache off.",
            RuntimeWarning,
            stacklevel=3,
        )

    def _note_written(self, nbytes: int, keep: Path) -> None:
        if self._estimate is None:
            self._estimate = sum(size for _, size, _ in self._scan())
        else:
            self._estimate += nbytes
        if self._estimate > self._max_bytes:
            self._estimate = self._trim(keep)

    def _trim(self, keep: Path) -> int:
        files = sorted(self._scan(), key=lambda f: f[0])
        total = sum(size for _, size, _ in files)
        target = self._max_bytes * _LOW_WATER
        removed = 0
        for _, size, path in files:
            if total <= target:
                break
            if path == keep:  # the entry just written is the one the caller is about to load
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                pass  # another process trimmed it first; it is gone all the same
            except OSError:
                continue
            total -= size
            removed += 1
        _log.debug(
            "disk cache trimmed %d entries; %d bytes left (cap %d)", removed, total, self._max_bytes
        )
        return total

    def _scan(self) -> list[tuple[float, int, Path]]:
        """``(mtime, size, path)`` of every file under ``<root>/v*/<arch>/`` (and folders in it)
        but live temp files."""
        try:
            paths = list(self._root.glob("v*/*/**/*"))
        except OSError:
            return []
        found = []
        now = time.time()
        for path in paths:
            try:
                st = path.lstat()
            except OSError:
                continue  # gone since the listing, most likely trimmed by another process
            live_tmp = path.name.startswith(".") and now - st.st_mtime < _TMP_GRACE_S
            if stat.S_ISREG(st.st_mode) and not live_tmp:
                found.append((st.st_mtime, st.st_size, path))
        return found


def _encode(arch: str, key: str, kind: str, body: bytes, meta: dict) -> bytes:
    clash = sorted(_RESERVED.intersection(meta))
    if clash:
        raise ValueError(f"disk cache meta may not use the header's own fields: {clash}")
    header = {
        **meta,
        "format": FORMAT,
        "key": key,
        "kind": kind,
        "arch": arch,
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "body_len": len(body),
    }
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return _PREFIX.pack(_MAGIC, len(head)) + head + body


def _decode(data: bytes, arch: str, key: str, kind: str) -> tuple[bytes, dict]:
    if len(data) < _PREFIX.size:
        raise _BadEntry(f"truncated ({len(data)} bytes, shorter than the {_PREFIX.size}-byte head)")
    magic, head_len = _PREFIX.unpack_from(data)
    if magic != _MAGIC:
        raise _BadEntry(f"foreign (magic {magic!r}, expected {_MAGIC!r})")
    body_at = _PREFIX.size + head_len
    if body_at > len(data):
        raise _BadEntry(f"truncated in the header ({len(data)} bytes, header ends at {body_at})")
    try:
        header = json.loads(data[_PREFIX.size : body_at].decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise _BadEntry(f"corrupt (header is not JSON: {exc})") from None
    if not isinstance(header, dict):
        raise _BadEntry(f"corrupt (header is a {type(header).__name__}, not an object)")
    # Format first: a file from another format version may lay out everything else differently.
    for field, want in (("format", FORMAT), ("key", key), ("kind", kind), ("arch", arch)):
        if header.get(field) != want:
            raise _BadEntry(f"mismatched (header {field}={header.get(field)!r}, expected {want!r})")
    body = data[body_at:]
    if header.get("body_len") != len(body):
        raise _BadEntry(f"truncated or padded (body_len={header.get('body_len')!r}, {len(body)=})")
    if header.get("body_sha256") != hashlib.sha256(body).hexdigest():
        raise _BadEntry("corrupt (body sha256 differs from the header's)")
    return body, {name: value for name, value in header.items() if name not in _RESERVED}


def _process_uid() -> int | None:
    """The user this process runs as (None where there are no uids: nothing is checked)."""
    return os.geteuid() if hasattr(os, "geteuid") else None


def _distrust(st: os.stat_result) -> str | None:
    """Why a file or folder with this stat may hold another user's writing, or None.

    Trusted owners: this process's user, and root, which can change whatever this process runs
    anyway (a root process so trusts only its own files)."""
    uid = _process_uid()
    if uid is None:
        return None
    if st.st_uid != uid and st.st_uid != 0:
        return f"owned by uid {st.st_uid}, not by this process's user (uid {uid}) or root"
    if st.st_mode & _UNSAFE_MODE:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):#o})"
    return None


def _read_all(fd: int, size: int) -> bytes:
    """The file's bytes: one read of the size ``fstat`` gave (and one more to see its end)."""
    parts = []
    while chunk := os.read(fd, size + 1):
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _make_folders(root: Path, arch: str) -> None:
    """``<root>/v{FORMAT}/<arch>``, each folder made here with mode 0700 whatever the umask; the
    folders above the root as ``mkdir -p`` makes them."""
    root.parent.mkdir(parents=True, exist_ok=True)
    version = root / f"v{FORMAT}"
    for folder in (root, version, version / arch):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue
        os.chmod(folder, 0o700)  # mkdir's mode passes through the umask


def _publish(path: Path, data: bytes) -> None:
    # The temp file sits beside the final path so os.replace is one rename within a filesystem:
    # a reader sees the old file or the whole new one, and writers racing on one key each publish
    # a complete file (the last rename wins). Never write the final path in place.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
