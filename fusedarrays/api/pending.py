"""The registry of pending arrays: before a buffer is written, the pending arrays that read it are
computed (:func:`.array.compute_readers`), so a write never changes a pending result.

One registration per pending array, nothing per buffer: intermediate arrays are made by the
thousand and die at once, writes are fewer. Where the C extension is built
(:mod:`..ir.native`) the registry is ``_fastgraph``'s: the arrays by plain pointer in creation
order, each leaving it as it dies, with no weak reference made per array. Otherwise it is the
list of weak references below, pruned of dead and computed entries at every scan and whenever
it doubles (appends need no lock: they only add at the end; prunes take one and replace only
the part they scanned).

- :func:`register` ``(array)``: a new pending array;
- :func:`readers` ``(buffer)``: the registered arrays still pending that read ``buffer``, in
  creation order (``None``: only drop those computed);
- :func:`any_registered` ``()``: whether a write has anything to look at.
"""

from __future__ import annotations

import threading
import weakref

from ..ir.native import fastgraph

if fastgraph is not None:
    register = fastgraph.pending_add
    readers = fastgraph.pending_readers

    def any_registered() -> bool:
        return fastgraph.pending_count() > 0

else:
    _refs: list[weakref.ref] = []
    _prune_at = [1024]
    _pruning = threading.Lock()

    def register(array) -> None:
        _refs.append(weakref.ref(array))
        if len(_refs) > _prune_at[0]:
            readers(None)

    def readers(buffer) -> list:
        found = []
        with _pruning:
            n = len(_refs)
            live = []
            for ref in _refs[:n]:
                a = ref()
                if a is not None and a.pending:
                    live.append(ref)
                    if buffer is not None and buffer in a._node.buffers:
                        found.append(a)
            _refs[:n] = live
            _prune_at[0] = max(1024, 2 * len(live))
        return found

    def any_registered() -> bool:
        return bool(_refs)
