"""Host-side parts of the cuda backend's memory module, without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("cuda.core")

from fusedarrays.cuda.memory import DeviceStorage, element_span, import_array  # noqa: E402


@pytest.mark.parametrize(("shape", "strides", "span"), [
    ((5,), (1,), (0, 4)),
    ((5,), (-1,), (-4, 0)),
    ((3, 4), (4, 1), (0, 11)),
    ((3, 4), (1, 3), (0, 11)),        # transposed
    ((3, 4), (-4, 2), (-8, 6)),       # rows reversed, every other column
    ((3, 4), (0, 1), (0, 3)),         # broadcast rows
    ((3, 0), (0, 1), (0, -1)),        # empty: no bytes
    ((), (), (0, 0)),                 # a 0-d array is one element
])
def test_element_span(shape, strides, span):
    assert element_span(shape, strides) == span
    low, high = span
    if shape and 0 not in shape:  # brute force: every index's offset lies inside, both ends hit
        offsets = [int(np.dot(ix, strides)) for ix in np.ndindex(*shape)]
        assert (min(offsets), max(offsets)) == span


def test_host_arrays_are_refused():
    with pytest.raises(TypeError, match="CUDA"):
        import_array(np.zeros(3), 0)
    with pytest.raises(TypeError, match="__cuda_array_interface__"):
        import_array(object(), 0)


def test_storage_is_plain_data():
    owner = object()
    s = DeviceStorage(0x1000, 64, owner)
    assert (s.ptr, s.nbytes, s.owner) == (0x1000, 64, owner)
    assert "64 bytes at 0x1000" in repr(s)


def test_check_unpacks_results_and_names_the_error(monkeypatch):
    from cuda.bindings import driver

    from fusedarrays.cuda import memory

    ok = driver.CUresult.CUDA_SUCCESS
    assert memory.check((ok,)) is None
    assert memory.check((ok, 5)) == 5
    assert memory.check((ok, 1, 2)) == (1, 2)
    monkeypatch.setattr(memory.driver, "cuGetErrorString", lambda err: (ok, b"out of memory"))
    with pytest.raises(memory.CudaDriverError, match="CUDA_ERROR_OUT_OF_MEMORY: out of memory"):
        memory.check((driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY, 0))
    assert issubclass(memory.CudaDriverError, RuntimeError)
