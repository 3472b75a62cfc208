"""Gathers through device-computed indices: the per-device error word, and where it is read.

Where it sits: ``api/indexing.py`` builds a gather whose index values the host does not know
(an index array computed or held by fusedarrays) as a *flagged* gather (``graph.gather`` with a
site scalar): its kernel clamps every index into range, so no load ever leaves the gathered
axis, and an index outside ``[-extent, extent)`` is recorded in this device's error word
instead of being checked on the host (which would copy the index there: a synchronisation in
the middle of a lazy program). ``compiler/devicelib.fa_take_flagged`` writes the word; this
module owns it on the host side: the sites, the word's buffer, and :func:`check`.

The word is two int64s in a buffer the backend keeps (``[site, index]``, zero when clear). A
kernel records an offender with a compare-and-swap of ``site`` into slot 0 (from 0), and the
thread that won stores the index into slot 1: the first offender stays, and a site is never
paired with another offender's index (two plain stores from two threads could tear). The CAS
runs only for an out-of-range index, behind a branch every thread of the normal case takes
(``cuda/atomics.py``), so the normal case costs the clamp alone.

**Evaluation points.** :func:`check` runs wherever fusedarrays hands values to the host or to
another library: ``x.get()``, ``np.asarray(x)``, ``.item()`` / ``float()`` / ``int()`` /
``bool()`` / ``operator.index``, ``tolist`` and printing (both through ``get``), ``repr`` of an
array holding memory (its values), and export through ``__dlpack__`` and
``__cuda_array_interface__``. It raises NumPy's ``IndexError`` ("index 12 is out of bounds for
axis 0 with size 10"), naming the gather's expression, and clears the word. Nothing is read
unless a flagged kernel was launched on the device since the last check (``armed``): a program
without flagged gathers pays one attribute read per evaluation point, and an export of such a
program stays asynchronous.

**Threads.** One word per device, like CUDA's own asynchronous errors: the first evaluation
point on the device after the offending kernel ran, in whichever thread, reports it (the
message names the expression, so a thread that did not build it can tell). The read-and-clear
and every flagged launch hold the device's lock, so no flagged kernel is queued between the
read and the clear (its offender would be erased unseen): each recorded offender raises
exactly once. Offenders of kernels queued before one check are one error (the first is named).
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections import OrderedDict

import numpy as np

# site number → (expression, axis, extent), the newest MAX_SITES kept: a site's number is a
# scalar param of its gather (never in a key), so a loop that builds gathers never recompiles
MAX_SITES = 1 << 16
_sites: OrderedDict[int, tuple[str, int, int]] = OrderedDict()
# the sites of fa.fuse programs, kept while their program lives (release): a traced gather runs
# at every call of its function, however many lazy gathers were built since its trace
_kept: dict[int, tuple[str, int, int]] = {}
_numbers = itertools.count(1)
_sites_lock = threading.Lock()


def new_site(expression: str, axis: int, extent: int, keep: bool = False) -> int:
    """A site number (> 0) for a flagged gather of ``expression`` along ``axis`` of ``extent``
    elements, as its kernel records it. ``keep``: the site of a traced program (``fa.fuse``),
    kept until :func:`release`, not among the newest MAX_SITES."""
    with _sites_lock:
        number = next(_numbers)
        if keep:
            _kept[number] = (expression, int(axis), int(extent))
            return number
        _sites[number] = (expression, int(axis), int(extent))
        if len(_sites) > MAX_SITES:
            _sites.popitem(last=False)
    return number


def release(numbers) -> None:
    """Forget kept sites (their traced program is gone: nothing launches them again)."""
    with _sites_lock:
        for number in numbers:
            _kept.pop(number, None)


class Sites:
    """The kept sites of one traced program (``fuse/trace.py``: the tracer makes them, its
    program holds them), released when the last of those is collected: a trace that fails, a
    signature table that starts over, a fused function let go."""

    __slots__ = ("numbers", "__weakref__")

    def __init__(self):
        self.numbers: list[int] = []
        weakref.finalize(self, release, self.numbers)

    def new(self, expression: str, axis: int, extent: int) -> int:
        number = new_site(expression, axis, extent, keep=True)
        self.numbers.append(number)
        return number


class _Word:
    """One device's error word: its buffer, the lock, and whether a flagged kernel ran since
    the last check."""

    __slots__ = ("storage", "arg", "lock", "armed")

    def __init__(self, backend):
        self.storage = backend.from_host(np.zeros(2, np.int64))
        self.arg = backend.operand_arg(self.storage, np.dtype(np.int64), 0)
        self.lock = threading.Lock()
        self.armed = False


_words: dict[int, _Word] = {}   # id(backend) → its word (backends live for the process)
_making = threading.Lock()


def _word(backend) -> _Word:
    word = _words.get(id(backend))
    if word is None:
        with _making:
            word = _words.get(id(backend))
            if word is None:
                word = _words[id(backend)] = _Word(backend)
    return word


def word_arg(backend):
    """The kernel argument of ``backend``'s error word (an operand of int64 slots)."""
    return _word(backend).arg


def launch_flagged(backend, kernel, size: int, args: list, geometry) -> None:
    """``backend.launch`` of a kernel holding flagged gathers, under the word's lock (see the
    module docstring: no launch between a check's read and its clear)."""
    word = _word(backend)
    with word.lock:
        word.armed = True
        backend.launch(kernel, size, args, geometry)


def check(backend) -> None:
    """Raise the ``IndexError`` a flagged gather recorded on ``backend``'s device, once (the
    word is cleared); nothing is read unless a flagged kernel ran since the last check."""
    word = _words.get(id(backend))
    if word is None or not word.armed:
        return
    with word.lock:
        if not word.armed:
            return
        site, index = (int(v) for v in backend.to_host(word.storage, np.dtype(np.int64), 2, 0))
        if site:
            backend.zero(word.storage, 16)
        word.armed = False
    if site:
        raise _error(site, index)


def _error(site: int, index: int) -> IndexError:
    found = _sites.get(site) or _kept.get(site)
    if found is None:   # more than MAX_SITES gathers built since: the index alone
        return IndexError(f"index {index} is out of bounds (a gather through an index computed "
                          "on the device, built long ago or in a fused program since dropped)")
    expression, axis, extent = found
    return IndexError(f"index {index} is out of bounds for axis {axis} with size {extent} (in "
                      f"{expression}, whose index was computed on the device: fusedarrays "
                      "read the clamped element and reports the index at the next evaluation "
                      "point)")


def _forget() -> None:
    # a forked child starts without its parent's words (a cuda backend refuses there anyway)
    _words.clear()


os.register_at_fork(after_in_child=_forget)
