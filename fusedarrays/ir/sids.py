"""Interned structure ids (:mod:`.graph` re-exports them): a node's ``sid`` is a small integer
for a tuple of its structure, an op's ``(name, loop dtypes)`` has a small number of its own
(``attrs_id``), and a buffer's alignment enters a key only as its class (``align_class``).
"""

from __future__ import annotations

import itertools

from . import layout

# Structure → sid. Numbers are never reused: once the table is cleared (a process making new
# shapes forever), a structure seen again gets a new number, which only costs a cache miss.
_sids: dict[tuple, int] = {}
_next_sid = itertools.count(1)
_MAX_SIDS = 1 << 20
# Alignment classes: the planner asks only whether an address allows 16-byte (vector) accesses.
VECTOR_ALIGN = layout.VECTOR_BYTES


def align_class(align: int) -> int:
    """What a key holds of a buffer's alignment: the planner's vector width reads no more."""
    return align if align < VECTOR_ALIGN else VECTOR_ALIGN


def _sid(structure: tuple) -> int:
    found = _sids.get(structure)
    if found is None:
        if len(_sids) >= _MAX_SIDS:
            _sids.clear()
        found = _sids.setdefault(structure, next(_next_sid))
    return found


_attrs_ids: dict[tuple, int] = {}


def attrs_id(attrs: tuple) -> int:
    """A small number for an op's ``(name, loop dtypes)``: what its sid holds of them (hashing
    dtypes at every op costs more than the rest of the key)."""
    found = _attrs_ids.get(attrs)
    if found is None:
        found = _attrs_ids.setdefault(attrs, len(_attrs_ids) + 1)
    return found
