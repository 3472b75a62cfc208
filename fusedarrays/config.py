"""Every ``FUSEDARRAYS_*`` setting, in one table.

Owns the name, type, default, help text and whether a setting changes generated code (such settings
are part of every kernel's structure key). Values are parsed strictly from ``os.environ`` the first
time they are read; :func:`override` changes them for a block (tests, notebooks). Nothing else in
the
package reads ``os.environ``. Bottom layer: imports nothing from the package but ``errors``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected 0/1/true/false, got {text!r}")


def _parse_backend(text: str) -> str:
    value = text.strip().lower()
    if value not in ("auto", "cuda", "cpu", "sim"):
        raise ValueError(f"expected one of auto, cuda, cpu, sim; got {text!r}")
    return value


def _parse_positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(f"expected a positive integer, got {text!r}")
    return value


def _parse_workers(text: str) -> int | None:
    if text.strip().lower() == "auto":
        return None
    value = int(text)
    if value < 0:
        raise ValueError(f"expected auto or a count of 0 or more, got {text!r}")
    return value


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fusedarrays")


@dataclass(frozen=True)
class Setting:
    name: str
    parse: Callable[[str], Any]
    default: Callable[[], Any]
    help: str
    affects_codegen: bool = False
    # changes how an evaluation is planned without changing any kernel's code (which library
    # computes a product): evaluations' launch records are built again when it changes
    affects_plans: bool = False


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("BACKEND", _parse_backend, lambda: "auto",
                "cuda, cpu, sim, or auto (cuda where a GPU is visible, else cpu)."),
        Setting("MAX_NODES", _parse_positive_int, lambda: 512,
                "A pending graph with more distinct nodes than this evaluates by itself "
                "(a shared subexpression counts once).",
                affects_codegen=False),
        Setting("NATIVE", _parse_bool, lambda: True,
                "Build lazy expressions' nodes in C where the extension was built (0: the "
                "Python path, the reference it matches). Read once, at import."),
        Setting("CACHE", _parse_bool, lambda: True, "0 turns the disk cache off."),
        Setting("CACHE_DIR", str, _default_cache_dir,
                "Folder of the disk cache (default $XDG_CACHE_HOME/fusedarrays)."),
        Setting("CACHE_SIZE", _parse_positive_int, lambda: 1 << 30,
                "Size cap of the disk cache in bytes; least recently used entries go first."),
        Setting("LOG_COMPILES", _parse_bool, lambda: False,
                "1 logs every compile and why it happened."),
        Setting("COMPILE_WORKERS", _parse_workers, lambda: None,
                "Worker processes for a batch compile (fa.precompile of many kernels), forked "
                "by a compile server the first batch starts; 0: none and no server; auto: one "
                "fewer than the CPUs from 4 CPUs on."),
        Setting("CPU_PARALLEL", _parse_bool, lambda: True,
                "cpu backend: run a kernel's chunks on one thread per CPU (0: on the calling "
                "thread alone)."),
        Setting("SIM_BLOCK", _parse_positive_int, lambda: 32,
                "sim backend: threads per block (each is a Python thread)."),
        Setting("CPU_DEVICES", _parse_positive_int, lambda: 1,
                "cpu backend: how many host devices there are (cpu, cpu:1, ...), each with its "
                "own memory and kernels, so that code written for several GPUs runs (and its "
                "device errors show) on a machine without one."),
        Setting("CUBLAS", _parse_bool, lambda: True,
                "cuda backend: matrix products (matmul, @, tensordot) of float16, float32, "
                "float64, complex64 and complex128 run in cuBLAS through nvmath-python where "
                "it is installed (pip install fusedarrays[cublas]), at full float32 or float64 "
                "precision; 0 keeps them on the generated tiled kernel. Other dtypes always "
                "take the tiled kernel.",
                affects_plans=True),
    )
}

_overrides: list[dict[str, Any]] = []
_parsed: dict[str, Any] = {}
_generation = 0  # changes whenever a value may have: lets callers cache what they derive


def generation() -> int:
    """A number that changes whenever any setting may have changed (an override began or
    ended); values derived from settings can be cached until it does."""
    return _generation


def get(name: str) -> Any:
    """The current value of setting ``name`` (without the ``FUSEDARRAYS_`` prefix)."""
    for layer in reversed(_overrides):
        if name in layer:
            return layer[name]
    if name in _parsed:
        return _parsed[name]
    setting = SETTINGS[name]
    env = "FUSEDARRAYS_" + name
    raw = os.environ.get(env)
    if raw is None:
        value = setting.default()
    else:
        try:
            value = setting.parse(raw)
        except ValueError as exc:
            raise ConfigError(f"{env}={raw!r} is invalid: {exc}. {setting.help}") from None
    _parsed[name] = value
    return value


@contextlib.contextmanager
def override(**values: Any) -> Iterator[None]:
    """Set settings for the duration of a ``with`` block: ``override(MAX_NODES=8)``."""
    unknown = set(values) - set(SETTINGS)
    if unknown:
        raise ConfigError(f"unknown setting(s) {sorted(unknown)}; known: {sorted(SETTINGS)}")
    global _generation
    _overrides.append(dict(values))
    _generation += 1
    try:
        yield
    finally:
        _overrides.pop()
        _generation += 1


def codegen_settings() -> tuple[tuple[str, str], ...]:
    """The settings that change generated code, as key parts."""
    return tuple((s.name, repr(get(s.name))) for s in SETTINGS.values() if s.affects_codegen)


def plan_settings() -> tuple[tuple[str, str], ...]:
    """The settings that change how evaluations are planned (but no kernel's code)."""
    return tuple((s.name, repr(get(s.name))) for s in SETTINGS.values() if s.affects_plans)


def describe() -> str:
    """One line per setting: name, current value, help."""
    return "\n".join(f"FUSEDARRAYS_{s.name}={get(s.name)!r}: {s.help}" for s in SETTINGS.values())
