"""The compile server: a process that imports numba once and forks warm workers for batches.

Where it sits: ``precompile.compile_batch`` asks it for workers beside its own pipeline; nothing
else uses it. numba types and lowers a kernel under one global lock while holding the GIL, so a
batch compiles in parallel only across processes, and a fresh process spends ~1 s importing
numba and ~1.5 s on its first compile before its first useful kernel — longer than this process
takes for a batch of 16. The server pays that once, in the background, from the first batch of a
process on: a later batch gets workers at once.

- **Started** by :func:`shared_server` with ``python -c`` (no re-import of the user's
  ``__main__``, as ``multiprocessing``'s spawn would do), in its own session (a Ctrl-C at the
  terminal is the parent's to handle), with BLAS limited to one thread and no GPU visible
  (:data:`_SERVER_ENV`): it imports :mod:`.warm` (numba warm, the driver untouched) and reports
  ``("warm",)``.
- **Forks** one worker per job. The server holds no CUDA context, no lock and no thread other
  than its own when it forks (checked), so a worker starts in ~3 ms with numba warm; each gets
  its own pipe for its one result, then exits. (A fork of the user's process hung now and then:
  a pool's threads and queues were mid-use when it forked.)
- **Messages** (``multiprocessing.connection`` over a socket pair): ``("job", batch, k, job)``
  → a worker runs :func:`.compile.compile_kernel` on ``job``; the answer is ``("done", batch, k,
  result)``, ``("failed", batch, k, CompileError)`` or ``("lost", batch, k, why)`` (the worker
  died). ``("cancel", batch)`` kills that batch's workers.
- **Ends** when the parent closes its end or exits, or after :data:`IDLE_SECONDS` without a job.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection, wait

log = logging.getLogger("fusedarrays.compile")
# An idle server (~250 MB, numba imported) ends after this long; the next batch starts another.
IDLE_SECONDS = 600.0
# The server's environment: BLAS without a thread pool (numpy's would start threads, and the
# server forks), and no GPU visible: nvJitLink initializes the CUDA driver on its first use in
# each worker, which takes ~180 ms with the H100 visible and ~20 ms with none (the link itself
# needs no GPU; the driver's JIT cache goes unused, the disk cache keeps the result).
_SERVER_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "CUDA_VISIBLE_DEVICES": ""}


class CompileServer:
    """This process's handle on one server process. One batch at a time uses it (:attr:`lock`);
    the dispatcher thread that holds the lock is the only reader of :attr:`conn`."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS):
        ours, theirs = socket.socketpair()
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
            __file__))))
        path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        code = (f"from fusedarrays.cuda.compile_server import serve; "
                f"serve({theirs.fileno()}, {float(idle_seconds)!r})")
        self.process = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, **_SERVER_ENV, "PYTHONPATH": path})
        theirs.close()
        self.conn = Connection(ours.detach())
        self.owner = os.getpid()   # a fork of this process has its copy of the socket, not use
        self.lock = threading.Lock()
        self.warm = False
        self.broken: str | None = None

    def alive(self) -> bool:
        return (self.broken is None and self.owner == os.getpid()
                and self.process.poll() is None)

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether the server has warmed up (waits up to ``timeout`` seconds for it)."""
        if not self.warm and self.broken is None and self.owner == os.getpid():
            try:
                if self.conn.poll(timeout):
                    answer = self.conn.recv()
                    self.warm = answer[0] == "warm"
                    if not self.warm:
                        self._give_up(str(answer[1]))
            except (EOFError, OSError) as e:
                self._give_up(f"it ended while warming up ({type(e).__name__}: {e})")
        return self.warm and self.alive()

    def _give_up(self, why: str) -> None:
        self.broken = why
        log.warning("fusedarrays: the compile server is unusable, so batches compile in this "
                    "process only: %s", why)

    def send(self, *message) -> None:
        self.conn.send(message)

    def receive(self, timeout: float):
        """The next answer, or None if none came within ``timeout`` seconds. Raises
        ``EOFError`` / ``OSError`` once the server is gone."""
        return self.conn.recv() if self.conn.poll(timeout) else None

    def close(self) -> None:
        """End the server: a warm one ends on its own once its connection closes; one still
        warming up (importing numba) is not waited for."""
        self.conn.close()
        try:
            self.process.wait(timeout=0.25)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait()


_shared: CompileServer | None = None
_shared_lock = threading.Lock()


def shared_server() -> CompileServer:
    """This process's compile server, started (not waited for) if there is none or it ended.
    One that could not warm up (:attr:`CompileServer.broken`) is not started again."""
    global _shared
    with _shared_lock:
        if _shared is None or (not _shared.alive() and _shared.broken is None):
            if _shared is None:
                atexit.register(_close_shared)
            else:
                _close_shared()
            _shared = CompileServer()
        return _shared


def _close_shared() -> None:
    if _shared is not None and _shared.owner == os.getpid():   # not a fork's inherited one
        _shared.close()


# --- the server process ----------------------------------------------------------------------

def serve(fd: int, idle_seconds: float = IDLE_SECONDS) -> None:
    """The server process: warm up, then serve the connection at ``fd`` until it closes."""
    conn = Connection(fd)
    try:
        _serve(conn, idle_seconds)
    except (EOFError, OSError):
        pass   # the parent went away (a broken pipe while answering): nothing to answer
    # Nothing to flush or save: skip the interpreter's teardown of numba's heap (~0.5 s).
    os._exit(0)


def _serve(conn: Connection, idle_seconds: float) -> None:
    try:
        from . import warm  # noqa: F401 - importing it is the warm-up
        threads = _native_threads()
        if len(threads) > 1:   # a fork would copy another thread's locks, not the thread
            raise RuntimeError(f"threads {threads} after warming up; a fork needs one")
    except BaseException as e:  # reported, then this server ends: batches go on without it
        conn.send(("broken", f"{type(e).__name__}: {e}"))
        return
    conn.send(("warm",))
    workers: dict[Connection, tuple[int, int, int]] = {}   # result pipe → (pid, batch, k)
    try:
        while True:
            ready = wait([conn, *workers], timeout=None if workers else idle_seconds)
            if not ready:
                return   # idle
            for r in ready:
                if r is not conn:
                    if r in workers:   # not one a "cancel" in this same round closed
                        _collect(conn, workers, r)
                    continue
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    return   # the parent is gone
                if message[0] == "job":
                    _, batch, k, job = message
                    pid, pipe = _fork_worker(conn, workers, job)
                    workers[pipe] = (pid, batch, k)
                elif message[0] == "cancel":
                    for pipe, (pid, batch, _) in list(workers.items()):
                        if batch == message[1]:
                            _kill(pid)
                            pipe.close()
                            del workers[pipe]
    finally:
        for pid, _, _ in workers.values():
            _kill(pid)


def _native_threads() -> list[str]:
    """The names of this process's threads (a CUDA driver's is ``cuda0000…``)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:   # no /proc: Python's own threads, not the native ones
        return [t.name for t in threading.enumerate()]
    names = []
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except OSError:   # ended meanwhile
            pass
    return names


def _fork_worker(conn: Connection, workers: dict, job: tuple) -> tuple[int, Connection]:
    """Fork a worker that compiles ``job`` and sends its one result down a new pipe."""
    from multiprocessing import Pipe

    reader, writer = Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:   # the worker: never returns
        code = 0
        try:
            for inherited in (conn, reader, *workers):
                inherited.close()
            writer.send(_compile(job))
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    writer.close()
    return pid, reader


def _compile(job: tuple) -> tuple[str, object]:
    from ..errors import CompileError
    from .compile import compile_kernel

    try:
        return "done", compile_kernel(*job)
    except CompileError as e:
        return "failed", e
    except Exception as e:
        return "failed", CompileError(f"a compile worker failed: {type(e).__name__}: {e}",
                                      source=job[0])


def _collect(conn: Connection, workers: dict, pipe: Connection) -> None:
    pid, batch, k = workers.pop(pipe)
    try:
        kind, payload = pipe.recv()
    except (EOFError, OSError) as e:
        kind, payload = "lost", f"the worker exited without a result ({type(e).__name__})"
    pipe.close()
    os.waitpid(pid, 0)
    conn.send((kind, batch, k, payload))


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
