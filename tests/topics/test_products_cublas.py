"""The cuBLAS route of products (nvmath-python), by tier.

- cpu (no GPU; skipped where cuda.core is not installed): which products the planner gives
  cuBLAS and why the others take the tiled kernel, what ``fa.explain`` says of each, the copies
  planned for views cuBLAS can't read in place, the probe with nvmath-python absent and present
  (faked in ``sys.modules``, CuPy too), and what a launch asks of nvmath (a ``Matmul`` planned
  once per signature over addresses of the guaranteed alignment, in place into the result, full
  float32 compute, the legacy default stream), through a fake ``nvmath``.
- cuda (skipped where nvmath-python is not installed): the products' values through cuBLAS
  against NumPy (tests/productcases.py, its tolerances): the shared cases (shapes past any tile,
  vectors, a broadcast batch, transposed and negative-step views) for each dtype cuBLAS takes,
  each checked to have run through nvmath; results written into arrays full of NaN (cuBLAS must
  not read the target: beta = 0) and into a transposed view (a column-major result); pending
  operands and readers; the same bits every run; and, with the route switched off, the tiled
  kernel on the same cases.
"""

import sys
import types

import numpy as np
import productcases as pc
import pytest

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.compiler.planner import plan_program
from fusedarrays.compiler.product import Blas, ProductPlan, blas_matrix
from fusedarrays.cuda import blas as cuda_blas
from fusedarrays.runtime import backend as runtime_backend

CUBLAS = Blas(name="cuBLAS via nvmath-python 1.0.0")


@pytest.fixture(autouse=True)
def _each_tier_needs(tier):
    """The cpu cases fake nvmath over cuda.core's launcher; the cuda cases need nvmath itself."""
    pytest.importorskip("nvmath" if tier == "cuda" else "cuda.core")


@pytest.fixture
def with_cublas(monkeypatch):
    """The planner offered cuBLAS, as the cuda backend offers it where nvmath is installed."""
    monkeypatch.setattr(runtime_backend, "product_blas", lambda backend: CUBLAS)


def _products(x):
    return [plan for plan, _ in fa.explain(x, arch="sm_90").kernels
            if isinstance(plan, ProductPlan)]


def test_the_float_dtypes_go_to_cublas_and_explain_says_so(with_cublas):
    for dtype in ("float16", "float32", "float64", "complex64", "complex128"):
        a, b = fa.ones((6, 5), dtype=dtype), fa.ones((5, 4), dtype=dtype)
        explanation = fa.explain(a @ b + 1, arch="sm_90")
        text = str(explanation)
        (plan,) = _products(a @ b)
        assert plan.library == CUBLAS.name and not plan.route, dtype
        assert "cuBLAS via nvmath-python 1.0.0" in text and "no kernel of ours" in text
        wide = dtype in ("float64", "complex128")
        assert ("COMPUTE_64F" if wide else "COMPUTE_32F, full float32 (no TF32)") in text
        assert "no generated source" in explanation.kernels[0][1]
        assert "cuBLAS" in explanation._repr_html_()


@pytest.mark.parametrize("left, right, why", [
    ("int32", "int32", "wrap in the integer type"),
    ("int8", "int8", "wrap in the integer type"),
    ("uint64", "uint64", "wrap in the integer type"),
    ("bool", "bool", "the or of the ands"),
    ("float32", "float64", "operands of dtypes float32 and float64"),
    ("int32", "float32", "operands of dtypes int32 and float32"),
])
def test_the_others_take_the_tiled_kernel_and_explain_says_why(with_cublas, left, right, why):
    x = fa.ones((6, 5), dtype=left) @ fa.ones((5, 4), dtype=right)
    (plan,) = _products(x)
    assert not plan.library and why in plan.route
    text = str(fa.explain(x, arch="sm_90"))
    assert "the tiled kernel, not cuBLAS" in text and why in text
    assert "cuda.shared.array" in text            # the tiled kernel's source


def test_a_batch_that_broadcasts_over_two_axes_and_empty_products_are_tiled(with_cublas):
    (plan,) = _products(fa.ones((3, 1, 5, 7)) @ fa.ones((4, 7, 2)))
    assert not plan.library and "one batch stride per operand" in plan.route
    (plan,) = _products(fa.ones((3, 0)) @ fa.ones((0, 4)))
    assert not plan.library and "K = 0" in plan.route
    # one batch axis, an operand repeated along it (stride 0): cuBLAS, nothing copied
    x = fa.ones((3, 5, 7), dtype="float32") @ fa.ones((7,), dtype="float32")
    program = fa.explain(x, arch="sm_90").program
    (plan,) = [step.plan for step in program.steps]
    assert plan.library and plan.blas[1][0] == 0 and plan.blas[0][0] == 35


def test_views_read_in_place_or_copied_first(with_cublas):
    a = fa.asarray(np.ones((8, 6), np.float32))
    b = fa.asarray(np.ones((6, 5), np.float32))
    # transposed views have a unit-stride axis: read in place, as column-major matrices
    program = fa.explain(a.T.T @ fa.asarray(np.ones((5, 6), np.float32)).T,
                         arch="sm_90").program
    assert len(program.steps) == 1 and program.steps[0].plan.blas[1][:3] == (0, 1, 6)
    # a step on the unit axis or a negative step: copied into a contiguous temporary first
    for view in (a[:, ::-1], a[::-1, ::-1], a[:, ::2][:, :3].T.T):
        other = b[:view.shape[1]]
        program = fa.explain(view @ other, arch="sm_90").program
        kinds = [type(step.plan).__name__ for step in program.steps]
        assert kinds == ["KernelPlan", "ProductPlan"], (view.shape, kinds)
        assert "a copy of a" in program.why[0] and "for cuBLAS" in program.why[0]
        assert program.steps[1].plan.blas[0][1:3] == (view.shape[1], 1)


def test_the_setting_and_the_host_backends_keep_the_tiled_kernel(monkeypatch):
    # FUSEDARRAYS_CUBLAS=0 is the switch under test here, not a changed default
    with config.override(CUBLAS=False):
        assert "FUSEDARRAYS_CUBLAS=0" in runtime_backend.product_blas(None).why_not
    assert "cpu backend" in runtime_backend.product_blas(runtime_backend.get_backend("cpu")
                                                        ).why_not
    x = fa.ones((4, 3)) @ fa.ones((3, 2))
    (plan,) = [p for p, _ in fa.explain(x).kernels]
    assert not plan.library and "cpu backend runs the generated kernel" in plan.route
    assert "the tiled kernel, not cuBLAS" in str(fa.explain(x))


def test_blas_matrix_layouts():
    assert blas_matrix(4, 3, 3, 1) == (3, 1)          # row-major
    assert blas_matrix(4, 3, 5, 1) == (5, 1)          # row-major, padded rows
    assert blas_matrix(4, 3, 1, 4) == (1, 4)          # column-major (a transposed view)
    assert blas_matrix(4, 3, 2, 1) is None            # rows overlap
    assert blas_matrix(4, 3, -3, 1) is None           # a negative step
    assert blas_matrix(4, 3, 6, 2) is None            # no unit stride
    assert blas_matrix(1, 3, 0, 1) == (3, 1)          # a row vector: its row stride unused
    assert blas_matrix(1, 3, 7, 2) == (1, 2)          # ... read as a column-major matrix
    assert blas_matrix(4, 1, 1, 0) == (1, 4)          # a column vector
    assert blas_matrix(4, 1, 0, 1) is None            # a broadcast column
    assert blas_matrix(1, 1, 0, 0) == (1, 1)


# -- the probe and the launch, with nvmath faked -------------------------------------------------

class _Recorder:
    def __init__(self):
        self.matmuls, self.calls = [], []


def _fake_nvmath(record: _Recorder) -> dict:
    """Modules standing in for nvmath-python and CuPy: what cuda/blas.py imports, recording its
    calls."""
    nvmath = types.ModuleType("nvmath")
    nvmath.__version__ = "1.0.0"
    linalg = types.ModuleType("nvmath.linalg")
    advanced = types.ModuleType("nvmath.linalg.advanced")
    cupy = types.ModuleType("cupy")

    class UnownedMemory:
        def __init__(self, ptr, size, owner, device_id):
            self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id

    class MemoryPointer:
        def __init__(self, memory, offset):
            self.mem, self.ptr = memory, memory.ptr + offset

    class ndarray:
        def __init__(self, shape, dtype, memptr, strides):
            self.shape, self.dtype, self.data, self.strides = (tuple(shape), np.dtype(dtype),
                                                               memptr, tuple(strides))

    cupy.cuda = types.SimpleNamespace(UnownedMemory=UnownedMemory, MemoryPointer=MemoryPointer)
    cupy.ndarray = ndarray

    class Options(types.SimpleNamespace):
        pass

    class Matmul:
        def __init__(self, a, b, c=None, *, beta=None, options=None, stream=None):
            self.operands, self.beta, self.options, self.stream = (a, b, c), beta, options, stream
            self.planned_over = (a, b, c)
            self.planned = self.freed = False
            record.matmuls.append(self)

        def plan(self, preferences=None, stream=None):
            self.preferences, self.planned = preferences, True

        def reset_operands_unchecked(self, a=None, b=None, c=None):
            self.operands = (a, b, c)

        def execute(self, stream=None):
            record.calls.append((self, self.operands, stream))

        def free(self):
            self.freed = True

    linalg.ComputeType = types.SimpleNamespace(COMPUTE_32F="32F", COMPUTE_64F="64F")
    advanced.Matmul, advanced.MatmulOptions, advanced.MatmulPlanPreferences = (Matmul, Options,
                                                                              Options)
    advanced.MatmulReductionScheme = types.SimpleNamespace(COMPUTE_TYPE=2)
    advanced.MatmulNumericalImplFlags = types.SimpleNamespace(ALL=(1 << 64) - 1,
                                                              GAUSSIAN=1 << 32)
    nvmath.linalg, linalg.advanced = linalg, advanced
    return {"nvmath": nvmath, "nvmath.linalg": linalg, "nvmath.linalg.advanced": advanced,
            "cupy": cupy}


@pytest.fixture
def fresh_probe(monkeypatch):
    monkeypatch.setattr(cuda_blas, "_probed", [])
    monkeypatch.setattr(cuda_blas, "_plans", type(cuda_blas._plans)())


def test_the_probe_without_nvmath(monkeypatch, fresh_probe):
    monkeypatch.setitem(sys.modules, "nvmath", None)         # import nvmath raises ImportError
    blas = cuda_blas.probe()
    assert not blas.name and "nvmath-python is not installed" in blas.why_not
    assert "fusedarrays[cublas]" in blas.why_not


def test_the_probe_with_nvmath_and_cupy_and_without_cupy(monkeypatch, fresh_probe):
    for name, module in _fake_nvmath(_Recorder()).items():
        monkeypatch.setitem(sys.modules, name, module)
    assert cuda_blas.probe() == Blas(name="cuBLAS via nvmath-python 1.0.0")
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setattr(cuda_blas, "_probed", [])
    blas = cuda_blas.probe()
    assert not blas.name and "CuPy is not" in blas.why_not


def _cublas_plan(node, out_shape) -> ProductPlan:
    out = (types.SimpleNamespace(uid=-1, align=256), node.dtype, out_shape,
           tuple(int(np.prod(out_shape[k + 1:])) for k in range(len(out_shape))), 0)
    program = plan_program([(node, out)], node.params, 256, blas=CUBLAS)
    (step,) = program.steps
    return step.plan


def test_a_launch_plans_once_in_place_at_full_precision_on_the_legacy_stream(monkeypatch,
                                                                             fresh_probe):
    from cuda.core import LEGACY_DEFAULT_STREAM

    record = _Recorder()
    for name, module in _fake_nvmath(record).items():
        monkeypatch.setitem(sys.modules, name, module)
    base = fa.asarray(np.ones((3, 9, 7), np.float32))
    a = base[:, 1:6, :]                   # offset 7 elements: 28 bytes, aligned to 4
    b = fa.asarray(np.ones((7, 2), np.float32))
    plan = _cublas_plan((a @ b)._resolved(), (3, 5, 2))
    assert plan.blas == ((63, 7, 1, 4), (0, 2, 1, 16), (10, 2, 1, 16))
    product = cuda_blas.CublasProduct(plan, 0)
    args = [1 << 20, 2 << 20, 3 << 20]    # the buffers' addresses (then the plan's integers)
    for _ in range(3):
        product(plan.size, args + plan.int_args(), plan.geometry())
    (matmul,) = record.matmuls            # planned once, then looked up
    assert matmul.planned and matmul.beta == 0 and matmul.options.inplace
    assert matmul.options.compute_type == "32F"
    assert matmul.preferences.reduction_scheme_mask == 2
    assert not matmul.preferences.numerical_impl_mask & (1 << 32)   # no Gaussian complex
    placeholders = [o.data.ptr - (1 << 40) for o in matmul.planned_over]
    assert placeholders == [4, 16, 16]    # planned at exactly the guaranteed alignment
    assert len(record.calls) == 3
    _, (ra, rb, rc), stream = record.calls[-1]
    assert stream == int(LEGACY_DEFAULT_STREAM.handle) and matmul.stream == stream
    assert [ra.data.ptr, rb.data.ptr, rc.data.ptr] == [(1 << 20) + 28, 2 << 20, 3 << 20]
    assert (ra.shape, ra.strides) == ((3, 5, 7), (252, 28, 4))    # CuPy's strides: bytes
    assert (rb.shape, rb.strides) == ((3, 7, 2), (0, 8, 4))
    assert (rc.shape, rc.strides) == ((3, 5, 2), (40, 8, 4))
    assert rc.dtype == np.float32 and rc.data.mem.device_id == 0
    assert [x.data.mem.size for x in (ra, rb, rc)] == [4 * (2 * 63 + 4 * 7 + 6 + 1),
                                                       4 * (6 * 2 + 1 + 1), 4 * 30]
    assert cuda_blas.free_plans() == 1 and matmul.freed


def test_float64_computes_in_64f_and_old_plans_are_freed(monkeypatch, fresh_probe):
    record = _Recorder()
    for name, module in _fake_nvmath(record).items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(cuda_blas, "MAX_PLANS", 2)
    for n in (3, 4, 5):
        x = fa.ones((4, 6), dtype="complex128") @ fa.ones((6, n), dtype="complex128")
        plan = _cublas_plan(x._resolved(), (4, n))
        cuda_blas.CublasProduct(plan, 0)(plan.size, [256, 512, 768], ())
    assert [m.options.compute_type for m in record.matmuls] == ["64F"] * 3
    assert [m.freed for m in record.matmuls] == [True, False, False]


# cuda

def _route(x) -> list[str]:
    return [plan.library or "tiled" for plan, _ in fa.explain(x).kernels
            if isinstance(plan, ProductPlan)]


@pytest.mark.tiers("cuda")
def test_nvmath_is_found_and_products_of_float_dtypes_take_it():
    assert cuda_blas.probe().name.startswith("cuBLAS via nvmath-python"), cuda_blas.probe()
    for dtype in ("float16", "float32", "float64", "complex64", "complex128"):
        assert _route(fa.ones((3, 4), dtype=dtype) @ fa.ones((4, 2), dtype=dtype)) == [
            cuda_blas.probe().name]
    assert _route(fa.ones((3, 4), dtype="int32") @ fa.ones((4, 2), dtype="int32")) == ["tiled"]


@pytest.mark.tiers("cuda")
@pytest.mark.parametrize("m, k, n, dtypes", [
    (67, 130, 45, ["float32"]),
    (300, 257, 129, ["float64"]),
    (100, 70, 90, ["float16", "complex64", "complex128"]),
])
def test_the_shared_cases_through_cublas_match_numpy(m, k, n, dtypes):
    cuda_blas.free_plans()
    pc.check_matmul_cases(m, k, n, dtypes, "gpu cublas")
    assert cuda_blas._plans, "no product went through nvmath"


@pytest.mark.tiers("cuda")
def test_results_written_over_nan_and_into_a_transposed_view():
    seed = pc.seed_of("gpu cublas targets")
    rng = np.random.default_rng(seed)
    for dtype in ("float32", "float16", "complex128"):
        a, b = pc.sample(rng, dtype, (130, 70)), pc.sample(rng, dtype, (70, 90))
        x, y = fa.asarray(a), fa.asarray(b)
        out = fa.asarray(np.full((130, 90), np.nan, dtype))
        out[...] = x @ y
        pc.check(out.get(), a, b, f"{dtype} into NaN (seed {seed})")
        column_major = fa.asarray(np.full((90, 130), np.nan, dtype))
        column_major.T[...] = x @ y
        pc.check(column_major.get().T, a, b, f"{dtype} into a transposed view (seed {seed})")


@pytest.mark.tiers("cuda")
def test_pending_operands_readers_and_the_same_bits_every_run():
    seed = pc.seed_of("gpu cublas pending")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((512, 384)).astype(np.float32)
    b = rng.standard_normal((384, 640)).astype(np.float32)
    x, y = fa.asarray(a), fa.asarray(b)
    got = ((x * 2) @ y.T.T + 1).get() - np.float32(1)
    np.testing.assert_allclose(got, (a * 2) @ b, rtol=1e-4, atol=1e-3, err_msg=f"seed {seed}")
    first = (x @ y).get()
    pc.check(first, a, b, f"512 x 384 x 640 (seed {seed})")
    assert first.tobytes() == (x @ y).get().tobytes()


@pytest.mark.tiers("cuda")
def test_the_tiled_kernel_where_cublas_is_switched_off():
    # FUSEDARRAYS_CUBLAS=0: the tiled kernel every float product takes without nvmath-python,
    # checked on the device that has nvmath too
    with config.override(CUBLAS=False):
        assert _route(fa.ones((3, 4)) @ fa.ones((4, 2))) == ["tiled"]
        pc.check_matmul_cases(67, 130, 45, ["float32", "complex64"], "gpu tiled")
