"""Complex operands whose elements are not aligned to their size (a complex128 buffer 8 bytes off
16, a complex64 one 4 off 8: a CuPy or torch complex view of float data starting at an odd
element, imported zero-copy) read and written through each walk in numba's simulator, against
NumPy. The simulator checks every typed access's alignment as the device does
(``cuda/sim.py``), so a kernel that takes such an element in one whole-element access (which
faults on the GPU and loses the CUDA context) fails here; the planner gives these operands
access by parts (``compiler/plan.Operand.access``)."""

import complexcases
import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.errors import CompileError

WALKS = complexcases.MISALIGNED_WALKS


@pytest.fixture(autouse=True)
def sim_backend():
    with config.override(BACKEND="sim"):
        yield


@pytest.mark.parametrize("walk", list(WALKS))
@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_misaligned_complex_read_and_written(dtype, walk):
    seed = 7000 + 10 * list(WALKS).index(walk) + dtype.itemsize
    complexcases.check_misaligned_walk(dtype, walk, seed)


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_aligned_and_misaligned_operands_take_different_kernels(dtype):
    rng = np.random.default_rng(7101)
    host = complexcases.random_complex(rng, (300,), dtype)
    aligned, split = fa.asarray(host), complexcases.misaligned(host)
    plans = [fa.explain(x * 2 + 1).plan for x in (aligned, split)]
    assert plans[0].key != plans[1].key
    assert [o.access for o in plans[0].operands] == [plans[0].operands[0].code] * 2
    assert plans[1].operands[0].access == plans[1].operands[0].code + "_split"
    np.testing.assert_array_equal((split * 2 + 1).get(), (aligned * 2 + 1).get())


@pytest.mark.parametrize("dtype", complexcases.COMPLEX, ids=str)
def test_misaligned_complex_reductions_and_scans(dtype):
    seed = 7200 + dtype.itemsize
    rng = np.random.default_rng(seed)
    host = complexcases.random_complex(rng, (6, 140), dtype)
    z = complexcases.misaligned(host)
    tol = dict(rtol=1e-5 if dtype == np.complex64 else 1e-12, err_msg=f"seed {seed}")
    np.testing.assert_allclose(fa.sum(z, axis=1).get(), host.sum(axis=1), **tol)
    np.testing.assert_allclose(fa.sum(z).get(), host.sum(), **tol)
    np.testing.assert_allclose(fa.cumulative_sum(z, axis=1).get(), np.cumsum(host, axis=1),
                               **tol)


def test_the_simulator_refuses_a_misaligned_whole_element_access():
    """The check the device makes: ld_c128 (one 16-byte access) at an address 8 off 16."""
    from fusedarrays.runtime.backend import get_backend

    backend = get_backend()
    z = complexcases.misaligned(np.arange(4, dtype=np.complex128))
    (buffer,) = z._node.buffers
    source = ("def k(n, p0):\n"
              "    i = cuda.grid(1)\n"
              "    if i < n:\n"
              "        x = ld_c128(p0, i)\n")
    kernel = backend.compile(source, "k", ("i64", "ptr"), {})
    with pytest.raises(CompileError, match=r"ld_c128: a 16-byte access at address 0x[0-9a-f]+"):
        backend.launch(kernel, 4, [backend.operand_arg(buffer.storage, np.dtype("c16"), 0)])
