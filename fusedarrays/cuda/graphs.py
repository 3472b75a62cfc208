"""CUDA graphs of recorded launches, and launches on another stream: the cuda side of
``fa.capture`` and ``fa.on_stream`` (``runtime/capture.py``).

Where it sits: below the capture, reached through the backend seam (``CudaBackend.graphs``).
A capture records launches without running them; :meth:`GraphTools.build` queues them, in
order, on the stream of a ``cuda.core`` graph builder (stream capture: ``begin_building`` …
``end_building``, ``complete``) and uploads the executable graph once, so a replay is one
``cuGraphLaunch`` on fa's stream (the legacy default stream) or on a stream the caller names.
Kernel arguments are the recorded values (device addresses, scalars): what must change per
replay lives in device memory that the kernels read.
:meth:`GraphTools.launch_on` queues one launch on a foreign stream (``fa.on_stream``: a
``torch.cuda.graph`` capture's). Only generated kernels are captured: a cuBLAS product
(``cuda/blas.py``) raises :class:`~..errors.CaptureError`.
"""

from __future__ import annotations

from cuda.core import LEGACY_DEFAULT_STREAM, Stream

from ..errors import CaptureError, UnsupportedOperationError
from .launch import Launcher


class GraphTools:
    """One device's graph builder and foreign-stream launches (its context current around
    every driver call)."""

    def __init__(self, device, context):
        self._device, self._context = device, context

    def as_stream(self, obj) -> Stream:
        """A ``cuda.core`` Stream for ``obj``: a Stream or graph builder as it is; an object
        with ``__cuda_stream__`` (cuda.core's protocol), ``cuda_stream`` (``torch.cuda.Stream``)
        or ``ptr`` (CuPy); a ``cudaStream_t`` as an int."""
        if isinstance(obj, Stream) or type(obj).__name__ == "GraphBuilder":
            return obj
        if hasattr(obj, "__cuda_stream__"):
            handle = obj.__cuda_stream__()[1]
        elif hasattr(obj, "cuda_stream"):
            handle = obj.cuda_stream
        elif hasattr(obj, "ptr"):
            handle = obj.ptr
        elif isinstance(obj, int):
            handle = obj
        else:
            raise UnsupportedOperationError(
                f"fa.on_stream: a {type(obj).__name__} is not a stream; pass a "
                "torch.cuda.Stream, a cuda.core Stream, a CuPy stream or a cudaStream_t (int)")
        if not handle:
            return LEGACY_DEFAULT_STREAM
        with self._context:
            return Stream.from_handle(int(handle))

    def launch_on(self, stream, launcher, n: int, args: list, geometry: tuple) -> None:
        """Queue one launch on ``stream`` (a Stream or graph builder)."""
        with self._context:
            _launcher(launcher).launch_on(stream, n, args, geometry)

    def build(self, launches: list) -> CudaGraph:
        """One executable graph of ``launches`` (``(launcher, args, n, geometry)`` each, in
        order), uploaded."""
        for launcher, *_ in launches:
            _launcher(launcher)
        with self._context:
            builder = self._device.create_graph_builder()
            # thread_local: the recorded launches are queued by this thread alone, and other
            # threads' work on the legacy stream goes on meanwhile
            builder.begin_building("thread_local")
            try:
                for launcher, args, n, geometry in launches:
                    launcher.launch_on(builder, n, args, geometry)
            finally:
                builder.end_building()
            graph = builder.complete()
            builder.close()
            graph.upload(LEGACY_DEFAULT_STREAM)
        return CudaGraph(graph, self)


class CudaGraph:
    """An executable graph: :meth:`launch` is one graph launch (a few microseconds of host
    time, whatever the number of kernels)."""

    __slots__ = ("graph", "tools")

    def __init__(self, graph, tools: GraphTools):
        self.graph, self.tools = graph, tools

    def launch(self, stream=None) -> None:
        context = self.tools._context
        previous = context.enter()
        try:
            self.graph.launch(LEGACY_DEFAULT_STREAM if stream is None
                              else self.tools.as_stream(stream))
        finally:
            if previous:
                context.leave(previous)

    def __del__(self):
        graph = getattr(self, "graph", None)
        if graph is not None and not graph.is_closed:
            try:
                with self.tools._context:
                    graph.close()
            except Exception:   # noqa: BLE001 - at exit the driver may be gone
                pass


def _launcher(kernel) -> Launcher:
    if not isinstance(kernel, Launcher):
        raise CaptureError(
            f"fa.capture: a {type(kernel).__name__} launch (a matrix product through cuBLAS) "
            "can't be recorded into a CUDA graph by fusedarrays; set FUSEDARRAYS_CUBLAS=0 "
            "for the generated product kernel, or keep the product out of the captured step")
    return kernel
