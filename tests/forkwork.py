"""Work that tests run in other processes and threads: importable by name, as multiprocessing's
spawn and forkserver children need (they import this module from the parent's ``sys.path``).

Every function takes plain values and returns plain values, so that it pickles both ways.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback

import numpy as np


def inputs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Three float32 arrays of random values (never zeros) drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(0.5, 4.0, n).astype(np.float32) for _ in range(3))


def expected(seed: int, n: int) -> np.ndarray:
    """NumPy's value of :func:`evaluate`'s expression."""
    a, b, c = inputs(seed, n)
    return np.sqrt(a) * b - c / np.float32(3.0)


def evaluate(job: tuple[str, int, int]) -> tuple[str, int, np.ndarray]:
    """``job = (backend, seed, n)``: evaluate ``sqrt(a) * b - c / 3`` on ``backend`` at its
    default settings; return this process's fusedarrays file, its pid and the values."""
    import fusedarrays as fa
    from fusedarrays import config

    backend, seed, n = job
    with config.override(BACKEND=backend):
        a, b, c = (fa.asarray(x) for x in inputs(seed, n))
        values = (fa.sqrt(a) * b - c / 3.0).get()
    return fa.__file__, os.getpid(), values


def fork_child(work, failed: int = 1) -> int:
    """Fork; the child runs ``work()`` and exits with the code it returns (``failed`` where it
    raises, its traceback printed), never returning into the caller (pytest). Returns the
    child's pid to the parent, for :func:`wait_or_kill`."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = failed
        try:
            code = work()
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def wait_or_kill(pid: int, timeout: float) -> int | None:
    """The exit status of child ``pid`` (``os.waitstatus_to_exitcode``), waiting at most
    ``timeout`` seconds; None if it had to be killed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None
