"""Cache keys as named lists of parts.

The structure key (from :mod:`plan`) names what the generated code depends on: graph, operand
dtypes and layouts, scalar dtypes, rank, vector and index width, codegen-affecting config and the
codegen version. The disk key adds the GPU architecture and the toolchain versions, so an upgrade
never loads a stale kernel; the memory key adds the device. Every key is a sha256 of a canonical
text, the same in every process. :func:`explain_miss` says which parts differ.
"""

from __future__ import annotations

import hashlib

from . import __version__ as _package_version


def digest(parts: tuple[tuple[str, str], ...]) -> str:
    text = "\n".join(f"{name}={value}" for name, value in parts)
    return hashlib.sha256(text.encode()).hexdigest()


def structure_parts(parts: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return parts + (("package", _package_version),)


def disk_parts(structure_key: str, arch: str, toolchain: dict[str, str]):
    return (("structure", structure_key), ("arch", arch)) + tuple(sorted(toolchain.items()))


def explain_miss(parts: tuple[tuple[str, str], ...],
                 nearest: tuple[tuple[str, str], ...] | None) -> str:
    """Why a kernel compiled: first of its graph, or the parts that differ from ``nearest``."""
    if nearest is None:
        return "first compile of this graph"
    old, new = dict(nearest), dict(parts)
    changed = [f"{name}: {old.get(name)} → {new.get(name)}" for name in new
               if old.get(name) != new.get(name)]
    return "; ".join(changed) or "same parts (evicted from the memory cache)"
