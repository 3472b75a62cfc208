"""Reading an advanced index key as NumPy does, for reads (``indexing.py``) and writes
(``scatter.py``).

A key with an integer array, a boolean array or a list in it is NumPy's advanced indexing. Its
*basic* part (slices, ``None``, ``...``) is a view; each advanced entry (an integer array, an
integer beside an array, a mask standing for its ``nonzero()`` arrays) indexes one axis of that
view. Where the advanced entries stand next to each other in the key (``...`` and ``None``
separate them, even when ``...`` stands for no axis), the broadcast index's dimensions replace
them in place; otherwise they come first. Integers count as advanced entries once an array is
present: ``x[0, :, idx]`` has the index's axis first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .array import ndarray

_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
          "boolean arrays are valid indices")


@dataclass
class Key:
    """An advanced key, read: ``basic`` (the key with ``:`` for each advanced entry, one per
    axis of a mask), and per advanced entry its kind (``int``, ``array``, ``mask``), its value
    and the first axis of ``x[basic]`` it indexes (a mask: its ``ndim`` axes from there)."""

    basic: tuple
    entries: list         # (kind, value, axis)
    adjacent: bool        # the advanced entries stand next to each other in the key

    @property
    def masks_only(self) -> bool:
        return all(kind == "mask" for kind, _, _ in self.entries)

    def x_axis(self, axis: int) -> int:
        """The axis of ``x`` that axis ``axis`` of ``x[basic]`` stands for, as NumPy's errors
        name it (each ``None`` before it, a 0-d mask's included, adds an axis ``x`` lacks)."""
        return sum(b is not None for b in self.basic[:axis])


def _entry(k):
    """``(kind, value, axes consumed)`` of one key entry."""
    if k is None:
        return "none", k, 0
    if k is Ellipsis:
        return "ellipsis", k, 0
    if isinstance(k, slice):
        return "slice", k, 1
    if isinstance(k, (bool, np.bool_)):
        return "truth", bool(k), 0
    if isinstance(k, (int, np.integer)):
        return "int", int(k), 1
    if isinstance(k, list):
        k = np.asarray(k)
        if k.size == 0:
            k = k.astype(np.intp)     # [] indexes nothing, as in NumPy
    if isinstance(k, (ndarray, np.ndarray)):
        if k.dtype == np.bool_:
            if k.ndim == 0:     # its value decides the result's shape: read on the host
                return "truth", bool(host_mask(k)), 0
            return "mask", k, k.ndim
        if k.dtype.kind not in "iu":
            raise IndexError(f"arrays used as indices must be of integer (or boolean) type; "
                             f"got {k.dtype}")
        return "array", k, 1
    raise IndexError(f"{_VALID}; got {type(k).__name__}")


def parse(shape: tuple, key) -> Key:
    """``key`` over an array of ``shape`` (NumPy's errors for too many indices, a mask of the
    wrong shape, two ellipses)."""
    raw = [_entry(k) for k in (key if isinstance(key, tuple) else (key,))]
    if sum(kind == "ellipsis" for kind, _, _ in raw) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(n for _, _, n in raw)
    if consumed > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but "
                         f"{consumed} were indexed")
    if all(kind != "ellipsis" for kind, _, _ in raw):
        raw.append(("ellipsis", Ellipsis, 0))
    basic, entries, places = [], [], []
    axis = dim = 0        # the axis of x[basic] and the axis of x the next entry stands for
    for place, (kind, value, n) in enumerate(raw):
        if kind == "ellipsis":
            fill = len(shape) - consumed
            basic += [slice(None)] * fill
            axis, dim = axis + fill, dim + fill
            continue
        if kind == "mask":
            _check_mask(value, shape[dim:dim + n], dim)
        if kind == "truth":
            # NumPy's 0-d mask: a new axis of one, indexed by its nonzero() (0, or nothing)
            entries.append(("array", np.zeros(int(value), np.intp), axis))
            places.append(place)
            basic.append(None)
            axis += 1
            continue
        if kind in ("int", "array", "mask"):
            entries.append((kind, value, axis))
            places.append(place)
            basic += [slice(None)] * n
        else:
            basic.append(value)
        axis += 1 if kind == "none" else n
        dim += n
    assert any(kind != "int" for kind, _, _ in entries), key    # else ndarray made a view
    adjacent = places == list(range(places[0], places[0] + len(places)))
    return Key(tuple(basic), entries, adjacent)


def _check_mask(mask, dims: tuple, first: int) -> None:
    for a, (want, have) in enumerate(zip(dims, mask.shape)):
        if want != have and have != 0:     # NumPy lets an empty mask axis stand for any axis
            raise IndexError(f"boolean index did not match indexed array along axis "
                             f"{first + a}; size of axis is {want} but size of corresponding "
                             f"boolean axis is {have}")


def host_mask(mask) -> np.ndarray:
    """A mask's values on the host (a fa mask is computed and copied: a synchronisation)."""
    return mask.get() if isinstance(mask, ndarray) else np.asarray(mask)


def index_arrays(key: Key, nonzero=None) -> list[tuple]:
    """``(axis of x[basic], index)`` per indexed axis: integers and index arrays as given, each
    mask as its ``nonzero()`` arrays (one per axis of the mask): ``nonzero(mask)``'s for a
    fusedarrays mask where given (found on the device), else taken on the host."""
    out = []
    for kind, value, axis in key.entries:
        if kind == "mask":
            found = (nonzero(value) if nonzero is not None and isinstance(value, ndarray)
                     else np.nonzero(host_mask(value)))
            out += [(axis + a, i) for a, i in enumerate(found)]
        else:
            out.append((axis, value))
    return out
