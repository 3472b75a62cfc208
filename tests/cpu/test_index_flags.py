"""Gathers through device-computed indices on the cpu backend: clamped and flagged, the error
raised at the next evaluation point (cases: ``tests/index_flag_cases.py``)."""

import threading

import index_flag_cases as cases
import numpy as np
import pytest

import fusedarrays as fa


def test_in_range_without_host_copies(monkeypatch):
    cases.in_range_without_host_copies(monkeypatch, seed=930)


def test_out_of_range_raises_once():
    cases.out_of_range_raises_once(seed=931)


def test_host_known_indices_raise_at_build():
    cases.host_known_indices_raise_at_build(seed=932)


def test_every_evaluation_point_checks():
    seed = 933
    rng = np.random.default_rng(seed)
    x = fa.asarray(rng.standard_normal(10))
    bad = fa.asarray(rng.integers(0, 10, 4)) + 10
    reads = {"np.asarray": np.asarray, "float": lambda a: float(a[:1].reshape(())),
             "tolist": lambda a: a.tolist(), "str": str, "item": lambda a: a[0].item(),
             "__dlpack__": lambda a: a.__dlpack__()}
    for name, read in reads.items():
        y = fa.take(x, bad)
        y.compute()     # not an evaluation point: nothing is read
        with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 10"):
            read(y)
        np.testing.assert_array_equal(x[bad - 10].get(), x.get()[bad.get() - 10],
                                      err_msg=f"{seed=} {name}")


def test_another_thread_sees_it_once():
    seed = 934
    rng = np.random.default_rng(seed)
    x = fa.asarray(rng.standard_normal(10))
    fa.take(x, fa.asarray(rng.integers(0, 10, 5)) - 30).compute()
    seen = []

    def read():
        try:
            x.get()
        except IndexError as exc:
            seen.append(str(exc))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 1 and "with size 10 (in fa.take" in seen[0], seen


def test_narrow_indices():
    cases.narrow_indices(seed=935, n=1003)
