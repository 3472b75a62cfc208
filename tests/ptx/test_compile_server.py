"""The compile server (cuda/compile_server.py) and a batch's dispatcher, without a GPU: forked
workers compile the PTX this process compiles, failures keep their source, a worker or server
that dies loses no job, an idle server ends and the next batch starts another."""

from __future__ import annotations

import importlib
import os
import signal
import threading

import numpy as np
import pytest

pytest.importorskip("numba.cuda")
if not hasattr(os, "fork"):
    pytest.skip("the compile server forks its workers", allow_module_level=True)

from kernel_jobs import jobs, normal, plans  # noqa: E402

import fusedarrays as fa  # noqa: E402
from fusedarrays.cuda import compile as cc  # noqa: E402
from fusedarrays.cuda import compile_server  # noqa: E402

precompile = importlib.import_module("fusedarrays.runtime.precompile")

BAD = ("def fa_bad(n, p0):\n    st_f32(p0, 0, undefined_name)\n", "fa_bad", ("i64", "ptr"),
       "sm_90")


def kills_its_worker() -> tuple:
    """A job whose source, exec'd by the worker, ends the worker."""
    source = "import os\nos._exit(3)\ndef fa_gone(n, p0):\n    pass\n"
    return source, "fa_gone", ("i64", "ptr"), "sm_90"


def kills_its_server() -> tuple:
    """A job whose source, exec'd by the worker, kills the server that forked it, so the server
    dies while this job is at it however slowly anything runs; the worker then waits until it
    is orphaned (the server gone, not merely signalled) and ends without a result."""
    source = ("import os, signal, time\n"
              "server = os.getppid()\n"
              "os.kill(server, signal.SIGKILL)\n"
              "while os.getppid() == server:\n"
              "    time.sleep(0.01)\n"
              "os._exit(3)\n"
              "def fa_gone(n, p0):\n    pass\n")
    return source, "fa_gone", ("i64", "ptr"), "sm_90"


@pytest.fixture(scope="module")
def server():
    found = compile_server.shared_server()
    assert found.ready(timeout=120), found.broken
    return found


def dispatched(todo: list[tuple], workers: int) -> precompile._Batch:
    """The dispatcher alone (no pipeline in this thread): every job goes to a worker."""
    batch = precompile._Batch(todo, precompile._NoBar())
    batch.dispatch(workers)
    return batch


def test_forked_workers_compile_what_this_process_compiles(server):
    todo = jobs(plans(lambda x, y: fa.sin(x) * y + 1.5, lambda x, y: fa.where(x > y, x, y),
                      lambda x, y: (x * 3).astype(np.float16) + y.astype(np.float16)))
    batch = dispatched(todo, workers=2)
    assert batch.remaining == 0 and batch.worker_kernels == len(todo) and not batch.here
    for (ptx, cubin, entry, times), job in zip(batch.results, todo):
        ptx1, _, entry1, _ = cc.compile_kernel(*job)
        # the cubins differ in the mangled names, numbered per process
        assert normal(ptx) == normal(ptx1) and cubin[:4] == b"\x7fELF"
        assert normal(entry) == normal(entry1)
        assert {"numba typing+lowering", "nvvm", "link"} <= set(times)
    assert compile_server.shared_server() is server   # one server, kept between batches


def test_a_worker_failure_comes_back_as_the_compile_error_with_its_source(server):
    batch = dispatched([BAD], workers=1)
    (error,) = batch.results
    assert isinstance(error, fa.CompileError) and batch.worker_kernels == 1
    assert "undefined_name" in error.source and "fa_bad" in str(error)


def test_a_job_whose_worker_dies_is_left_to_this_process_only(server):
    (good,) = jobs(plans(lambda x, y: x - y * 2.0))
    batch = dispatched([kills_its_worker(), good], workers=2)
    assert batch.here == [0] and batch.remaining == 1 and batch.done == [False, True]
    assert server.alive()


def test_a_job_given_back_is_never_sent_to_a_worker_again():
    batch = precompile._Batch([BAD, BAD, BAD], precompile._NoBar())
    assert batch.take(from_back=False) == 0
    batch.give_back(0)   # its worker died
    assert [batch.take(from_back=False) for _ in range(2)] == [1, 2]
    assert batch.take(from_back=False) is None and batch.take(from_back=True) == 0
    # nothing left to start: this thread also takes the job sent to a worker last, once
    assert batch.take(from_back=True) == 2 and batch.take(from_back=True) == 1
    batch.finish(2, "here")
    batch.finish(2, "worker", by_worker=True)   # the second result of a job is dropped
    assert batch.results[2] == "here" and batch.worker_kernels == 0 and batch.remaining == 2


def test_a_server_that_dies_mid_batch_loses_no_job():
    doomed = compile_server.CompileServer()
    assert doomed.ready(timeout=120), doomed.broken
    (good,) = jobs(plans(lambda x, y: x * y - 7.0))
    batch = precompile._Batch([kills_its_server(), good], precompile._NoBar())
    # Only against a hang: were the server never to die, the dispatcher would wait on it.
    guard = threading.Timer(300.0, setattr, (batch, "stop", True))
    saved, compile_server._shared = compile_server._shared, doomed
    try:
        guard.start()
        batch.dispatch(1)   # job 0 sent, its worker kills the server; job 1 is never sent
    finally:
        guard.cancel()
        compile_server._shared = saved
    # The dispatcher saw the connection close, which comes a moment before the process can be
    # reaped: wait for that, not for a time.
    assert doomed.process.wait(timeout=120) == -signal.SIGKILL and not batch.stop
    assert not doomed.alive() and batch.here == [0] and list(batch.pending) == [1]


def test_an_idle_server_ends_and_the_next_batch_starts_another():
    idle = compile_server.CompileServer(idle_seconds=0.5)
    assert idle.ready(timeout=120), idle.broken
    assert idle.process.wait(timeout=120) == 0 and not idle.alive()   # the timeout: a hang
    saved, compile_server._shared = compile_server._shared, idle
    try:
        fresh = compile_server.shared_server()
    finally:
        compile_server._shared = saved
    assert fresh is not idle and fresh.ready(timeout=120), fresh.broken
    # It ends on its own once its connection closes. (close() waits a quarter second for that,
    # then terminates it: on a loaded machine that comes first, so the test waits itself.)
    fresh.conn.close()
    assert fresh.process.wait(timeout=120) == 0


def test_a_batch_with_a_warm_server_sends_it_jobs_and_keeps_job_order(server, monkeypatch):
    ops = [fa.exp, fa.log1p, fa.cos, fa.tanh, fa.sqrt, fa.floor]
    todo = jobs(plans(*[lambda x, y, f=f: f(x) * y - 0.5 for f in ops]))
    sent = []
    a_job_sent = threading.Event()
    send, pipeline = compile_server.CompileServer.send, precompile._pipeline

    def noting_send(self, *message):
        sent.append(message[0])
        send(self, *message)
        if message[0] == "job":
            a_job_sent.set()

    def pipeline_once_a_job_is_sent(batch):
        # Else this thread could take every job before the dispatcher thread is scheduled (a
        # loaded machine): the batch would be right, but would not show that jobs go out.
        assert a_job_sent.wait(timeout=300), "the dispatcher sent no job"
        pipeline(batch)

    monkeypatch.setattr(compile_server.CompileServer, "send", noting_send)
    monkeypatch.setattr(precompile, "_pipeline", pipeline_once_a_job_is_sent)
    results, done_by = precompile.compile_batch(todo, workers=3, progress=False)
    # Which side finishes a job first varies (this thread also takes jobs sent to workers once
    # none is left to start), so the results are checked, not who made them.
    assert done_by["workers"] == 3 and "job" in sent
    for (ptx, _, entry, _), job in zip(results, todo):
        assert job[1] in entry   # each result is its own job's
        assert normal(ptx) == normal(cc.compile_kernel(*job)[0])


def test_a_fork_of_this_process_starts_its_own_server(server, monkeypatch):
    """In a fork (another pid, the parent's handle inherited), a batch gets a server of its
    own, and the parent's is neither used nor closed. Simulated by the pid: forking the test
    process itself, which has threads, could deadlock."""
    parent = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: parent + 1)
    assert not server.alive() and not server.ready()   # the parent's: not this process's
    own = compile_server.shared_server()
    try:
        assert own is not server and own.owner == parent + 1
        compile_server._close_shared()   # the fork's exit closes its own server only
        assert own.process.poll() is not None
    finally:
        compile_server._shared = server
    monkeypatch.undo()
    assert server.alive() and server.ready()


def test_a_server_that_cannot_warm_up_is_not_started_again(monkeypatch, caplog):
    import shutil
    import sys

    monkeypatch.setattr(sys, "executable", shutil.which("true"))   # ends at once, says nothing
    broken = compile_server.CompileServer()
    broken.process.wait(timeout=120)
    assert not broken.ready(timeout=5) and "ended while warming up" in broken.broken
    saved, compile_server._shared = compile_server._shared, broken
    try:
        assert compile_server.shared_server() is broken   # not restarted
        batch = precompile._Batch(jobs(plans(lambda x, y: x + y)), precompile._NoBar())
        batch.dispatch(2)   # returns at once: the job stays for this thread
        assert list(batch.pending) == [0] and batch.worker_kernels == 0
    finally:
        compile_server._shared = saved
    assert "compile server is unusable" in caplog.text


@pytest.mark.parametrize("raw, cpus, expected", [("auto", 16, 15), ("auto", 2, 0), ("3", 2, 3),
                                                  ("0", 16, 0)])
def test_compile_workers_setting(monkeypatch, raw, cpus, expected):
    from fusedarrays import config

    monkeypatch.setenv("FUSEDARRAYS_COMPILE_WORKERS", raw)   # the subject: parsing it
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(config, "_parsed", {})
    assert precompile.default_workers() == expected
    monkeypatch.setenv("FUSEDARRAYS_COMPILE_WORKERS", "-1")   # the subject: a bad value
    monkeypatch.setattr(config, "_parsed", {})
    with pytest.raises(ValueError, match="FUSEDARRAYS_COMPILE_WORKERS=.-1."):
        precompile.default_workers()


def test_compile_errors_pickle_with_their_source():
    import pickle

    error = fa.CompileError("numba-cuda could not compile kernel 'k'", source="def k():\n  x\n")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is fa.CompileError and again.source == error.source
    assert str(again) == str(error)
