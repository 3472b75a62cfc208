"""A fused function's signature: what a call's arguments must repeat to reuse a trace, in words;
tracing a signature; what a fused call does before it writes into an argument.

Shared by :mod:`function` (one call per signature) and :mod:`foreach` (one launch per group of
tuples).
"""

from __future__ import annotations

import logging

import numpy as np

from .. import config
from ..api import array, pending
from . import trace

log = logging.getLogger("fusedarrays.compile")
# What a signature holds, named as f.explain() and a retrace's reason name them (fuse.function).
SIGNATURE_PARTS = ("backend", "settings", "arguments", "kind", "dtype", "view", "alignment",
                   "static", "aliases")


_settings_memo: list = [None, None]


def codegen_settings() -> tuple:
    """The settings that change generated code, re-read only when a setting may have changed."""
    generation = config.generation()
    if _settings_memo[0] != generation:
        _settings_memo[:] = [generation, config.codegen_settings()]
    return _settings_memo[1]


def traced_call(fused, backend, leaves: dict, values: list, key, why: str,
                across: bool = False):
    """Run ``fused.fn`` once on placeholders (``leaves``: position → leaf to stand in for),
    traced scalars and static values; return ``(tracer, result)``. ``across``: a foreach
    trace, where ``fa.global_norm`` reduces across the lists."""
    if config.get("LOG_COMPILES"):
        log.warning("fusedarrays: tracing %s: %s", fused.__qualname__, why)
    _, _, nargs, kwnames, tokens, _ = key
    tracer = trace.Tracer(fused.__qualname__, backend)
    tracer.across = [] if across else None
    tracer.host_base = len(values)      # host values (a draw's key) follow the arguments
    call = []
    for position, (token, value) in enumerate(zip(tokens, values)):
        if position in leaves:
            call.append(tracer.array(position, leaves[position]))
        elif type(token) is tuple and token[0] == "static":
            call.append(value)
        else:
            who = fused.name_of(position, nargs, kwnames)
            call.append(trace.TracedScalar(("arg", position), value, who))
    result = tracer.run(fused.fn, call[:nargs], dict(zip(kwnames, call[nargs:])))
    fused.traces += 1
    fused.why = why
    return tracer, result


# -- a traced signature ---------------------------------------------------------------------------


def prepare_write(buffer) -> None:
    """Before a fused call overwrites ``buffer``: compute the pending arrays that read it (as
    ``array.runtime_write`` does)."""
    if pending.any_registered():
        array.compute_readers(buffer)


def describe(fused, key) -> dict[tuple[str, str], str]:
    """``{(part, subject): value}`` of a signature, its parts named as in SIGNATURE_PARTS."""
    device, settings, nargs, kwnames, tokens, aliases = key
    out = {("backend", ""): device,
           ("settings", ""): ", ".join(f"{name}={value}" for name, value in settings) or "-",
           ("arguments", ""): f"{nargs} positional" + (f", keywords {', '.join(kwnames)}"
                                                      if kwnames else "")}
    arrays = []
    for position, token in enumerate(tokens):
        who = fused.name_of(position, nargs, kwnames)
        if isinstance(token, type):
            out[("kind", who)], out[("dtype", who)] = "Python scalar", token.__name__
        elif isinstance(token, np.dtype):
            out[("kind", who)], out[("dtype", who)] = "NumPy scalar", str(token)
        elif token[0] == "static":
            out[("kind", who)], out[("static", who)] = "static", repr(token[1])
        elif token[0] == "list":
            out[("kind", who)], out[("dtype", who)] = "list of arrays", str(token[1])
            arrays.append(who)
        elif token[0] == "shared":    # foreach: a 0-d array every tensor reads
            out[("kind", who)], out[("dtype", who)] = "0-d array (shared)", str(token[1])
        else:
            dtype, (shape, strides, offset), aligned, _ = token
            out[("kind", who)], out[("dtype", who)] = "array", str(dtype)
            out[("view", who)] = f"shape {shape} strides {strides} offset {offset}"
            out[("alignment", who)] = ("16-byte aligned" if aligned else
                                       "not 16-byte aligned")
            arrays.append(who)
    shared = [f"{arrays[k]} shares the buffer of {arrays[j]}"
              for k, j in enumerate(aliases or ()) if j != k]
    out[("aliases", "")] = "; ".join(shared) or "none"
    return out


def describe_change(fused, old, new) -> str:
    """Why signature ``new`` traces: the first call, or each part that differs from ``old``."""
    if old is None:
        return "first call"
    before, after = describe(fused, old), describe(fused, new)
    if before[("arguments", "")] != after[("arguments", "")]:   # every later part shifts
        return f"arguments {before[('arguments', '')]} → {after[('arguments', '')]}"
    changes = [f"{who + ' ' if who else ''}{part} {before.get((part, who), '(none)')} → {value}"
               for (part, who), value in after.items() if before.get((part, who)) != value]
    changes += [f"{who + ' ' if who else ''}{part} {value} → (none)"
                for (part, who), value in before.items() if (part, who) not in after]
    return "; ".join(changes) or "same signature (the signature table was full)"
