"""Steps captured once and replayed (``fa.capture``, ``fa.graph``: CUDA graphs), ``fa.on_stream``.

Where it sits: in the runtime, beside the launch records (:mod:`.launch`), whose one launch path
(``LaunchRecord.launch_with``) hands every launch to the active capture while one is active.

- ``with fa.capture() as g:`` *records* the launches of the block (an ``fa.fuse`` call, a
  ``foreach``, lazy evaluations, any sequence of them) without running them; ``g.replay()`` runs
  them. On cuda the recorded launches become one CUDA graph (``cuda.core``'s graph builder,
  ``cuda/graphs.py``), so a replay is one graph launch on fa's stream whatever the number of
  kernels; on cpu and sim a replay launches the recorded kernels again, in order, with the same
  arguments. ``fa.graph(fn, *args)`` records ``fn(*args)``.
- Every kernel argument is fixed at capture: scalars (a learning rate passed as a float) are
  baked into the graph. What changes per step must live in device memory and be read by the
  kernel: a 0-d array operand (``step``, ``lr``), written between replays or by a kernel inside
  the graph (``step += 1``, a fused op of one element): PyTorch's ``capturable``.
- Memory: arrays allocated while recording (a fused function's results, temporaries, the
  per-tensor partials of ``fa.tensor_norm``) are kept by the graph for its whole life, so its
  replays never write memory that was given back; each replay overwrites them (a captured
  function's returned arrays are the graph's static outputs, as PyTorch's). Nothing is read on
  the host while recording (``.get()``, ``synchronize``): the recorded work has not run, so a
  read raises :class:`~..errors.CaptureError`.
- ``with fa.on_stream(stream):`` (a ``torch.cuda.Stream``, a ``cuda.core`` ``Stream``, or a
  ``cudaStream_t`` as an int) queues fa's launches of the block on that stream, at once, in
  program order with the stream's other work: how fa's steps enter a ``torch.cuda.graph``
  capture, whose stream is PyTorch's current one. fa's memory is ordered on its own stream, so
  the block allocates nothing (an in-place step over arrays that exist, with the foreach tables
  of an earlier call); an allocation raises :class:`~..errors.CaptureError`. On the host
  backends it changes nothing.

A capture belongs to the thread that opened it; other threads' launches run as usual. One
capture at a time per process.
"""

from __future__ import annotations

import threading

from ..errors import CaptureError, UnsupportedOperationError

# The active capture (Recording or StreamLaunches), or None: the one flag the launch path and
# new_buffer read, so that no capture costs nothing.
capturing: list = [None]
_lock = threading.Lock()


class _Capture:
    """What a recording and a stream redirection share: the owning thread, and refusing host
    reads of the backends while active."""

    what = "fa.capture()"

    def __init__(self):
        self.thread = threading.get_ident()
        self._patched: list = []

    def mine(self) -> bool:
        return threading.get_ident() == self.thread

    def __enter__(self):
        with _lock:
            if capturing[0] is not None:
                raise CaptureError(f"{self.what}: {capturing[0].what} is already active (in "
                                   "this or another thread); captures do not nest")
            capturing[0] = self
        return self

    def __exit__(self, kind, exc, tb):
        capturing[0] = None
        return False

    def host_read(self, what: str) -> None:
        """A host read (``what``) inside the capture: refused in its thread."""
        if self.mine():
            raise CaptureError(
                f"{self.what}: {what} reads device memory on the host while launches are "
                "captured (the captured work has not run: it runs at each replay); read "
                "results after the capture block, after g.replay()")


class Recording(_Capture):
    """The launches of a ``with fa.capture()`` block, in order, and the memory they use."""

    def __init__(self):
        super().__init__()
        self.launches: list[tuple] = []   # (record, args, size, geometry)
        self.kept: list = []              # memory allocated while recording
        self.graph: Graph | None = None

    def take(self, record, args: list, size: int, geometry: tuple) -> bool:
        """Record one launch (True), or False for another thread's (it runs as usual)."""
        if not self.mine():
            return False
        if record.flagged:
            raise CaptureError(
                f"{self.what}: kernel {record.name} checks gather indices on the device and "
                "raises at the next evaluation point, which a replay has none of; clip the "
                "indices (fa.clip) or gather outside the captured step")
        backends = {r.backend for r, *_ in self.launches[:1]}
        if backends and record.backend not in backends:
            raise CaptureError(f"{self.what}: launches on two devices ({backends.pop().device} "
                               f"and {record.backend.device}); capture one device's work")
        self.launches.append((record, list(args), size, geometry))
        return True

    def allocating(self, what: str) -> None:
        """Memory is about to be made for ``what``: allowed (the graph keeps it)."""

    def keep(self, obj) -> None:
        if self.mine():
            self.kept.append(obj)

    def kept_buffer(self, buffer):
        self.keep(buffer)
        return buffer

    def __exit__(self, kind, exc, tb):
        super().__exit__(kind, exc, tb)
        if kind is None:
            self.graph = Graph(self.launches, self.kept)
        return False

    def replay(self, stream=None) -> None:
        if self.graph is None:
            raise CaptureError("fa.capture(): replay() after the capture block has ended")
        self.graph.replay(stream)

    def __repr__(self) -> str:
        return f"<fa.capture: {len(self.launches)} launches{'' if self.graph else ', open'}>"


class StreamLaunches(_Capture):
    """``with fa.on_stream(stream):``: each launch queued on ``stream`` at once."""

    what = "fa.on_stream()"

    def __init__(self, stream):
        super().__init__()
        self.stream = stream
        self._targets: dict = {}     # backend → its stream object (made on first launch)

    def take(self, record, args: list, size: int, geometry: tuple) -> bool:
        backend = record.backend
        if not self.mine() or backend.graphs is None:
            return False              # another thread, or a host backend: launched as usual
        if record.flagged:
            raise CaptureError(f"{self.what}: kernel {record.name} checks gather indices with "
                               "a host read after it; gather outside the block")
        tools = backend.graphs()
        target = self._targets.get(backend)
        if target is None:
            target = self._targets[backend] = tools.as_stream(self.stream)
        tools.launch_on(target, record.kernel, size, args, geometry)
        return True

    def allocating(self, what: str) -> None:
        if self.mine():
            raise CaptureError(
                f"{self.what}: {what} would allocate memory, which fa orders on its own "
                "stream, not on the stream of this block (or of a torch.cuda.graph capture). "
                "Inside the block run in-place steps over arrays that exist, and call a "
                "foreach step once before it with the same arrays (that call makes its tables)")

    def keep(self, obj) -> None:
        pass

    def kept_buffer(self, buffer):
        return buffer


class Graph:
    """Recorded launches, replayable: one CUDA graph on cuda (built at the end of the capture,
    uploaded once), the launches themselves on the host backends."""

    def __init__(self, launches: list, kept: list):
        self.launches, self._kept = launches, kept
        self.backend = launches[0][0].backend if launches else None
        self._exec = None
        if self.backend is not None and self.backend.graphs is not None:
            self._exec = self.backend.graphs().build(
                [(r.kernel, args, size, geometry) for r, args, size, geometry in launches])

    def replay(self, stream=None) -> None:
        """Run the recorded launches once more (cuda: one graph launch on fa's stream, or on
        ``stream``, e.g. PyTorch's current one)."""
        active = capturing[0]
        if self._exec is not None:
            if active is not None and active.mine():
                raise CaptureError("replay() inside a capture: a CUDA graph's launch is not "
                                   "recorded; replay the graph outside the block")
            self._exec.launch(stream)
            return
        for record, args, size, geometry in self.launches:
            record.launch_with(args, size, geometry)

    def __repr__(self) -> str:
        where = "a CUDA graph" if self._exec is not None else "launches replayed in order"
        return f"<fa graph: {len(self.launches)} launches, {where}>"


def capture() -> Recording:
    """Record the launches of a block to replay them (see the module docstring).

    >>> import fusedarrays as fa, numpy as np
    >>> @fa.fuse
    ... def add_one(s):
    ...     s += 1
    >>> step = fa.zeros((), np.float32)
    >>> add_one(step)                  # compiled outside the capture: nothing new inside
    >>> with fa.capture() as g:
    ...     add_one(step)              # recorded, not run
    >>> for _ in range(3):
    ...     g.replay()
    >>> float(step.get())
    4.0
    """
    return Recording()


def graph(fn, *args, **kwargs) -> Recording:
    """``fn(*args, **kwargs)`` recorded once (nothing runs): ``g = fa.graph(step, p, g, m, v)``
    then ``g.replay()`` per step. The result's ``.outputs`` is what ``fn`` returned, its arrays
    computed by the graph (each replay overwrites them). In a ``with fa.capture()`` block,
    ``x.compute()`` a lazy result inside the block to have the graph compute it."""
    with Recording() as recording:
        outputs = fn(*args, **kwargs)
        for x in outputs if isinstance(outputs, (tuple, list)) else (outputs,):
            if hasattr(x, "compute"):   # a lazy result: computed by the graph
                x.compute()
        recording.outputs = outputs
    return recording


def on_stream(stream) -> StreamLaunches:
    """Queue fa's launches of a block on ``stream`` (see the module docstring)."""
    if stream is None:
        raise UnsupportedOperationError("fa.on_stream: pass a stream (torch.cuda.Stream, a "
                                        "cuda.core Stream or a cudaStream_t as an int)")
    return StreamLaunches(stream)


def refuse_host_read(what: str) -> None:
    """Raise where a capture of this thread is active (``.get()`` and friends call it)."""
    active = capturing[0]
    if active is not None:
        active.host_read(what)


__all__ = ["Graph", "capture", "graph", "on_stream"]
