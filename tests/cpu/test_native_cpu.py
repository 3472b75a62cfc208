"""The C hot path (``ir/fastgraph``) as users reach it, on the cpu backend at its defaults: the
operators it builds (NumPy's values and errors, the first call of a dtype combination through
the Python path and every later one in C), the registry of pending arrays, the launch packer
(the same arguments as the Python packer it replaces), and the Python path end to end with
``FUSEDARRAYS_NATIVE=0`` (the reference, and what runs where no compiler built the
extension)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import fusedarrays as fa
from fusedarrays.api import pending
from fusedarrays.compiler.planner import plan_program
from fusedarrays.ir import layout, native
from fusedarrays.runtime import launch, realize
from fusedarrays.runtime import program as program_module
from fusedarrays.runtime.backend import BUFFER_ADDRESS

# only a run that chose the Python path skips these (tests/pure/test_native.py fails a run
# where the extension should be there and is not)
needs_native = pytest.mark.skipif(native.fastgraph is None, reason="the Python path")
SEED = 20261127


def test_operators_match_numpy_the_first_time_and_every_later_time():
    print(f"seed {SEED}")
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((300, 400)).astype(np.float32)
    y = rng.uniform(0.5, 2.0, (300, 400)).astype(np.float32)
    i8 = rng.integers(-100, 100, (300, 400), dtype=np.int8)
    a, b, k = fa.asarray(x), fa.asarray(y), fa.asarray(i8)
    cases = [
        (lambda m, p, q, r: p * q + 2.0, "mul add float"),
        (lambda m, p, q, r: 1.5 - p[::-1, ::-1] / q, "scalar first, reversed views"),
        (lambda m, p, q, r: -(p.T[::2] % 3.0), "unary of a strided transpose"),
        (lambda m, p, q, r: (p < q) & (q >= 1.0), "comparisons and bool and"),
        (lambda m, p, q, r: 2.0 > p, "a reflected comparison"),
        (lambda m, p, q, r: abs(r) + 7 - r * 3, "int8 with Python ints"),
        (lambda m, p, q, r: (r << 1) ^ ~r, "shifts, xor, invert"),
        (lambda m, p, q, r: p // 0.75 + r, "floor division, int8 promoted"),
        (lambda m, p, q, r: m.sqrt(q) * m.exp(-p * p), "functions"),
    ]
    for fn, name in cases:
        want = fn(np, x, y, i8)
        for _ in range(3):     # the first call resolves the loop; the next ones are built in C
            got = fn(fa, a, b, k)
            assert got.dtype == want.dtype, name
            np.testing.assert_allclose(got.get(), want, rtol=2e-6, err_msg=name)


def test_a_python_int_that_does_not_fit_raises_on_every_call():
    k = fa.asarray(np.arange(6, dtype=np.int8))
    assert (k + 100).get().tolist() == list(range(100, 106))   # the loop is now known
    for _ in range(2):
        with pytest.raises(OverflowError, match="300 out of bounds for int8"):
            k + 300
        with pytest.raises(OverflowError, match="-129 out of bounds for int8"):
            -129 * k


def test_other_operands_take_the_python_path():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = fa.asarray(x)
    for _ in range(2):
        assert (a * np.float32(2)).get().tolist() == (x * np.float32(2)).tolist()
        assert (x + a).get().tolist() == (x + x).tolist()     # NumPy first: __array_ufunc__
        assert (a + x[0]).get().tolist() == (x + x[0]).tolist()
        assert (a * True).dtype == np.float32
    with pytest.raises(TypeError):
        a + "text"


@needs_native
def test_pending_arrays_leave_the_registry_when_they_die_or_are_computed():
    a = fa.asarray(np.ones(8, np.float32))
    base = native.fastgraph.pending_count()
    made = [a * float(k) for k in range(50)]
    assert native.fastgraph.pending_count() == base + 50
    del made[10:]
    assert native.fastgraph.pending_count() == base + 10
    fa.compute(*made[:5])
    assert pending.readers(None) == [] or all(r.pending for r in pending.readers(None))
    assert native.fastgraph.pending_count() == base + 5
    readers = pending.readers(a._node.attrs[0])
    assert [id(r) for r in readers] == [id(m) for m in made[5:]]     # in creation order


def test_a_write_computes_the_pending_readers_of_its_buffer_first():
    x = np.arange(10, dtype=np.float32)
    a = fa.asarray(x.copy())
    readers = [a * 2.0, a[::-1] + 1.0, (a * a)[2:]]
    a[...] = -1.0
    assert readers[0].get().tolist() == (x * 2).tolist()
    assert readers[1].get().tolist() == (x[::-1] + 1).tolist()
    assert readers[2].get().tolist() == (x * x)[2:].tolist()


def _same_argument(got, want) -> bool:
    if isinstance(want, tuple):     # the cpu backend's operand: (typed view, element offset)
        return (len(got) == 2 and got[1] == want[1] and got[0].dtype == want[0].dtype
                and np.shares_memory(got[0], want[0]) and got[0].shape == want[0].shape)
    return type(got) is type(want) and np.array_equal(got, want)


@needs_native
def test_the_c_packer_binds_what_the_python_packer_binds(monkeypatch):
    print(f"seed {SEED}")
    rng = np.random.default_rng(SEED)
    x, y = rng.standard_normal((2, 64, 48)).astype(np.float32)
    a, b = fa.asarray(x), fa.asarray(y)
    backend = a._node.attrs[0].backend
    cases = [a * b + 2.0, 0.5 * (1.0 - a[::-1]) / b.T.T, (a - 3.0).sum(axis=0) * 2.0,
             fa.sqrt(abs(a)).sum()]
    for e in cases:
        node = e._node
        params = node.params
        out = realize.new_buffer(backend, 4 * max(1, int(np.prod(node.shape))))
        outputs = [(node, (out, node.dtype, node.shape, layout.contiguous_strides(node.shape),
                           0))]
        program = plan_program(outputs, params, backend.alloc_align or 1)
        temps = [realize.new_buffer(backend, 4096) for _ in program.temps]
        bound = list(params) + [program_module._Slot(t) for t in temps]
        for step in program.steps:
            if not step.plan.size:
                continue
            c_pack = launch.graph_packer(step.plan, len(bound), backend)
            with monkeypatch.context() as m:
                m.setattr(launch, "fastgraph", None)
                py_pack = launch.graph_packer(step.plan, len(bound), backend)
            assert isinstance(c_pack, native.fastgraph.GraphPacker)
            targets = (out,) if step.out < 0 else (temps[step.out],)
            if step.partials >= 0:
                targets = (temps[step.partials], *targets)
            got, want = c_pack(bound, targets), py_pack(bound, targets)
            assert len(got) == len(want) and all(map(_same_argument, got, want))
            if len(program.steps) == 1:     # a plain evaluation binds the params dict
                got = c_pack(params, targets)
                assert all(map(_same_argument, got, want))


def test_the_python_path_runs_end_to_end_without_the_extension():
    script = (
        "import numpy as np, fusedarrays as fa\n"
        "from fusedarrays.ir import native\n"
        "assert not native.NATIVE\n"
        "rng = np.random.default_rng(3)\n"
        "x, y = rng.standard_normal((2, 300, 400)).astype(np.float32)\n"
        "a, b = fa.asarray(x), fa.asarray(y)\n"
        "for _ in range(2):\n"
        "    c = (1.0 - a * b) / (a * a + 2.0)\n"
        "    want = (np.float32(1.0) - x * y) / (x * x + np.float32(2.0))\n"
        "    np.testing.assert_allclose(c.get(), want, rtol=1e-6)\n"
        "d = -a[::-1] + b\n"
        "a[...] = 0.5\n"
        "np.testing.assert_allclose(d.get(), -x[::-1] + y, rtol=1e-6)\n"
        "u, v = fa.compute(a + b, a - b)\n"
        "np.testing.assert_allclose(v.get(), 0.5 - y, rtol=1e-6)\n"
        "np.testing.assert_allclose(float((b * b).sum()), float((y * y).sum()), rtol=1e-5)\n"
        "print('ok')\n")
    env = dict(os.environ, FUSEDARRAYS_NATIVE="0", FUSEDARRAYS_BACKEND="cpu")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@needs_native
def test_packers_compute_an_address_attribute_as_operand_arg_would(monkeypatch):
    """A backend that names its storage's address attribute (``operand_at``: cuda's ``ptr``)
    gets each pointer as that address plus the element offset's bytes, computed by the packer
    (in C for lazy evaluation, in generated source for the Python packer): the same arguments as
    through ``operand_arg`` itself. Storages stand in for device memory with a ``ptr``."""
    print(f"seed {SEED + 1}")
    rng = np.random.default_rng(SEED + 1)
    x, y = rng.standard_normal((2, 64, 48)).astype(np.float32)
    a, b = fa.asarray(x), fa.asarray(y.astype(np.float64))
    backend = a._node.attrs[0].backend

    class Storage:
        def __init__(self, ptr):
            self.ptr = ptr

    def through_call(storage, dtype, k):
        return storage.ptr + k * dtype.itemsize

    by_attribute = type("AtPtr", (), {"operand_at": "ptr", "operand_arg": staticmethod(
        through_call), "counters": backend.counters})()
    by_call = type("ByCall", (), {"operand_at": None, "operand_arg": staticmethod(through_call),
                                  "counters": backend.counters})()
    # the cpu backend's mode, over storages that export no buffer: operand_arg, as by_call
    by_buffer = type("ByBuffer", (), {"operand_at": BUFFER_ADDRESS, "operand_arg": staticmethod(
        through_call), "counters": backend.counters})()
    cases = [a * b + 2.0, a[3:] * 2.0 - b[:61], a[3:, 5:] * 2 - b[::-1, 5:][3:],
             (a[1:] - 3.0).sum(axis=0)]
    reached = []
    for e in cases:
        node = e._node
        params = node.params
        out = realize.new_buffer(backend, 8 * max(1, int(np.prod(node.shape))))
        plan = plan_program([(node, (out, node.dtype, node.shape,
                                     layout.contiguous_strides(node.shape), 0))],
                            params, 256).steps[-1].plan
        buffers = {p.attrs[0] for p in params if p.kind == "leaf"} | {out}
        for buffer in buffers:       # device-like addresses: 256-byte aligned, above 2**47
            monkeypatch.setattr(buffer, "storage",
                                Storage(0x7F00_0000_0000 + 256 * int(rng.integers(1 << 20))))
        packed = []
        for stand_in in (by_attribute, by_call, by_buffer):
            packed.append(launch.graph_packer(plan, len(params), stand_in)(params, (out,)))
            with monkeypatch.context() as m:
                m.setattr(launch, "fastgraph", None)
                packed.append(launch.graph_packer(plan, len(params), stand_in)(params, (out,)))
        assert all(len(p) == len(packed[0]) and all(map(_same_argument, p, packed[0]))
                   for p in packed), packed
        reached.append(any(type(v) is int and v % 256 for v in packed[0]))
    assert any(reached), "no case folds an offset into a pointer"


@needs_native
def test_a_storages_buffer_gives_its_address_and_else_operand_arg_is_asked():
    """``operand_at = BUFFER_ADDRESS`` (the cpu backend): a storage's pointer is the first byte
    of the C-contiguous buffer it exports plus the offset's bytes, read in C
    (``_fastgraph.buffer_address``, the generated Python packer of ``fa.fuse``); a storage that
    exports none (not contiguous, no buffer at all) is ``operand_arg``'s."""
    print(f"seed {SEED + 2}")
    rng = np.random.default_rng(SEED + 2)
    data = rng.standard_normal(40)
    f8, f4 = np.dtype(np.float64), np.dtype(np.float32)
    assert native.fastgraph.buffer_address(data) == data.ctypes.data
    assert native.fastgraph.buffer_address(data[::2]) is None      # not contiguous
    assert native.fastgraph.buffer_address(3.5) is None             # no buffer
    asked = []

    def operand_arg(storage, dtype, k):
        asked.append(storage)
        return 1000 + k * dtype.itemsize

    stand_in = type("ByBuffer", (), {"operand_at": BUFFER_ADDRESS,
                                     "operand_arg": staticmethod(operand_arg)})()
    packer = launch.Packer(stand_in)
    packer.pointer("S", f8, 3)
    packer.pointer("S", f4, 5, memo=True)
    pack = packer.function("S", "test packer")
    for storage, want in ((data, [data.ctypes.data + 24, data.ctypes.data + 20]),
                          (data[1::2], [1024, 1020]), (data[::-1], [1024, 1020])):
        asked.clear()
        assert pack(storage) == want and len(asked) == (want[0] == 1024) * 2
