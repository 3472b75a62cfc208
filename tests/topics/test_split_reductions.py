"""Split reductions: an output's elements summed in parts, the partials folded in the same launch
by the part that finishes last, in a fixed order (the same bits every run, NumPy emulating that
order), against NumPy (tests/reductioncases.py).

- cpu at its defaults: 2^22 + 5 float32 in 513 parts over the chunks' threads.
- sim: the fold in the simulated CUDA kernel; the cpu and sim backends' exact bits alike; two
  split reductions of one program taking the counters in turn.
- cuda: 2^26 float32 in 1024 parts of 65536, and a strided sum a thread per part.
- ptx (sm_90, no GPU): the fold in one kernel, counted by an integer atomic after a fence (the
  only atomic: no float atomics in the accumulation); the walks' loads in flight together
  (16-byte vectors on ``rows``, ``COLS_TURN`` elements a turn on ``cols``).
"""

import dataclasses
import re

import numpy as np
import pytest
import reductioncases as rc

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.compiler.targets.cuda.reduce import COLS_TURN, VECTORS_PER_TURN


def test_a_split_sum_is_one_launch_and_its_fixed_order_bit_for_bit():
    # 2^22 + 5 float32: 513 parts, each summed in order in float64 and stored as float32 by
    # the chunks' threads, then, once all are done, the partials in order in float64 (the
    # launch's fold pass): NumPy emulating that order gives the same bits
    rng = np.random.default_rng(17)
    x = rng.random((1 << 22) + 5, dtype=np.float32) + np.float32(0.5)   # no -0.0
    a = fa.asarray(x)
    (step,) = fa.explain(a.sum()).program.steps
    assert step.plan.split == 513
    want = rc.fixed_order_sum(x, step.plan, 0, cpu=True)
    for _ in range(2):
        fa.reset_stats()
        got = fa.sum(a).get()
        assert fa.stats()["launches"] == 1
        assert got.tobytes() == want.tobytes(), (got, want, "seed 17")


# sim

@pytest.mark.tiers("sim")
def test_split_reductions_fold_partials_in_the_same_launch():
    # (200, 3) over axis 0: a thread per output, 4 parts each, the thread that finishes an
    # output's last part folds them; 9000 elements: 2 parts, the last block folds them;
    # 6000 of a strided view: a thread per part, 94 parts, the grid's last block folds them
    rng = np.random.default_rng(23)
    for shape, axis, parts in [((200, 3), 0, "parts per output"), ((9000,), None, "parts"),
                               ((12000,), None, "parts")]:
        x = rng.standard_normal(shape).astype(np.float32)
        a = fa.asarray(x)[::2] if shape == (12000,) else fa.asarray(x)
        x = x[::2] if shape == (12000,) else x
        assert parts in " ".join(fa.explain(a.sum(axis=axis)).program.why)
        for name in ("sum", "max", "any"):
            fa.reset_stats()
            got = getattr(fa, name)(a, axis=axis).get()
            assert fa.stats()["launches"] == 1, name
            rc.check(got, getattr(np, name)(x, axis=axis), x, f"{name} {shape} (seed 23)")


@pytest.mark.parametrize("view", ["contiguous", "strided"])
@pytest.mark.tiers("sim")
def test_a_split_full_sum_is_one_launch_and_its_fixed_order_bit_for_bit(view):
    # contiguous: 40000 elements, 5 parts of a block each (rows), the parts folded in order by
    # the block that finishes last; strided: 13334 elements, a thread per part (cols), 209
    # parts folded by the last block's threads and tree. Bits: NumPy emulating that order.
    rng = np.random.default_rng(26)
    x = rng.random(40000, dtype=np.float32) + np.float32(0.5)   # no -0.0 (see fixed_order_sum)
    a, x = (fa.asarray(x), x) if view == "contiguous" else (fa.asarray(x)[::3], x[::3])
    program = fa.explain(a.sum()).program
    (step,) = program.steps
    assert step.plan.split == (5 if view == "contiguous" else 209), program.why
    assert step.plan.schedule == ("rows" if view == "contiguous" else "cols")
    threads = 1 << (min(config.get("SIM_BLOCK"), 256).bit_length() - 1)
    want = rc.fixed_order_sum(x, step.plan, threads)
    runs = []
    for _ in range(2):
        fa.reset_stats()
        runs.append(fa.sum(a).get())
        assert fa.stats()["launches"] == 1
    assert runs[0].tobytes() == runs[1].tobytes() == want.tobytes(), (runs, want, "seed 26")
    rc.check(runs[0], x.sum(), x, "split sum (seed 26)")


@pytest.mark.tiers("sim")
def test_a_vectorised_split_sum_folds_each_threads_vectors_in_order():
    # 40000 float32 over 24 binades: the order shows in the bits. A thread folds the 4 lanes of
    # its vectors tx, tx + blockDim, ... in order: NumPy emulating that order, not the order of
    # an element-by-element walk (threads interleaved by element), gives the sim's bits.
    rng = np.random.default_rng(2)
    x = (rng.random(40000, dtype=np.float32)
         * np.float32(2) ** rng.integers(-12, 12, 40000)).astype(np.float32)
    (step,) = fa.explain(fa.asarray(x).sum()).program.steps
    assert (step.plan.schedule, step.plan.vector_width, step.plan.chunk % 4) == ("rows", 4, 0)
    threads = 1 << (min(config.get("SIM_BLOCK"), 256).bit_length() - 1)
    want = rc.fixed_order_sum(x, step.plan, threads)
    scalar = rc.fixed_order_sum(x, dataclasses.replace(step.plan, vector_width=1), threads)
    assert want.tobytes() != scalar.tobytes(), "seed 2: the data no longer tells the orders apart"
    assert fa.sum(fa.asarray(x)).get().tobytes() == want.tobytes(), (want, "seed 2")
    # a view whose first element is not 16-byte aligned walks element by element
    (step,) = fa.explain(fa.asarray(x)[1:].sum()).program.steps
    assert step.plan.vector_width == 1
    rc.check(fa.sum(fa.asarray(x)[1:]).get(), x[1:].sum(), x[1:], "unaligned split sum (seed 2)")


@pytest.mark.tiers("sim")
def test_split_reductions_give_cpu_and_sim_the_same_exact_bits():
    # integer sums and maxima are exact: the backends agree bit for bit (as before the fold
    # moved into the reduction's launch), each in one launch
    rng = np.random.default_rng(27)
    ints = rng.integers(-1000, 1000, 30000).astype(np.int32)
    floats = rng.standard_normal(30000)
    results = {}
    for backend in ("cpu", "sim"):
        with config.override(BACKEND=backend):
            fa.reset_stats()
            results[backend] = [fa.asarray(ints).sum().get(), fa.asarray(floats).max().get(),
                                fa.asarray(ints.reshape(100, 300)).sum(axis=0).get()]
            assert fa.stats()["launches"] == 3, backend
    for got_cpu, got_sim in zip(results["cpu"], results["sim"]):
        assert got_cpu.tobytes() == got_sim.tobytes(), "seed 27"
    np.testing.assert_array_equal(results["sim"][0], ints.sum())
    np.testing.assert_array_equal(results["sim"][1], floats.max())
    np.testing.assert_array_equal(results["sim"][2], ints.reshape(100, 300).sum(axis=0))


@pytest.mark.tiers("sim")
def test_two_split_reductions_of_one_program_use_the_counters_in_turn():
    rng = np.random.default_rng(28)
    x = rng.standard_normal((3, 9000)).astype(np.float32)
    a = fa.asarray(x)
    fa.reset_stats()
    got = (a.sum(axis=1, keepdims=True) - a.max(axis=0).sum()).get()
    assert fa.stats()["launches"] == 4   # three reductions (two split, one not), the result
    rc.check(got, x.sum(axis=1, keepdims=True) - x.max(axis=0).sum(), x, "two splits (seed 28)")


# cuda

@pytest.mark.tiers("cuda")
def test_a_split_sum_of_2_26_is_one_launch_and_its_fixed_order_bit_for_bit():
    # 2^26 float32: 1024 parts of 65536, each by a block of 256 threads and its tree, the
    # partials by the block that finishes last (threads interleaved, then the tree); ten runs,
    # each the bits of NumPy emulating that order (no float atomics: the order never varies)
    x = np.random.default_rng(45).random(1 << 26, dtype=np.float32) + np.float32(0.5)
    a = fa.asarray(x)
    (step,) = fa.explain(a.sum()).program.steps
    assert (step.plan.split, step.plan.schedule) == (1024, "rows")
    want = rc.fixed_order_sum(x, step.plan, 256)
    fa.reset_stats()
    runs = {fa.sum(a).get().tobytes() for _ in range(10)}
    assert fa.stats()["launches"] == 10
    assert runs == {want.tobytes()}, (runs, want, "seed 45")
    strided = x[: 3 << 16][::3]                 # a thread per part, the grid's last block folds
    (step,) = fa.explain(a[: 3 << 16][::3].sum()).program.steps
    assert step.plan.schedule == "cols" and step.plan.split >= 128
    got = {fa.sum(a[: 3 << 16][::3]).get().tobytes() for _ in range(5)}
    assert got == {rc.fixed_order_sum(strided, step.plan, 256).tobytes()}, "seed 45"


# ptx: PTX for sm_90 from arrays on the cpu (no GPU needed)

def _ptx_of(array):
    explanation = fa.explain(array, arch="sm_90")
    return explanation, explanation.ptx


@pytest.mark.tiers("ptx")
def test_split_reductions_fold_in_one_kernel_counted_by_an_integer_atomic_after_a_fence():
    """A split reduction is one kernel: each part's partial stored, ``membar.gl``
    (cuda.threadfence), then one integer ``atom.global.add`` on the output's counter; the
    accumulation itself has no atomics (no float atomic anywhere)."""
    rng = np.random.default_rng(38)
    x = fa.asarray(rng.standard_normal(1 << 16).astype(np.float32))
    m = fa.asarray(rng.standard_normal((300, 3)).astype(np.float32))
    seen = set()
    for array in (((x - 1.5) ** 2).sum(), x[::3].sum(), m.sum(axis=0), m.max(axis=0),
                  fa.asarray(rng.standard_normal((4, 20000)).astype(np.float16)).sum(axis=1)):
        explanation, ptxs = _ptx_of(array)
        assert explanation.launches == 1 and len(ptxs) == 1
        ((plan, _),), (ptx,) = explanation.kernels, ptxs
        assert plan.split > 1
        seen.add(plan.schedule)
        atomics = re.findall(r"^\s*(?:@%p\d+\s+)?((?:atom|red)\.\S+)", ptx, re.M)
        assert atomics and set(atomics) == {"atom.global.add.u32"}, atomics
        assert "membar.gl" in ptx or "fence.sc.gpu" in ptx
        fence = min(ptx.find(f) for f in ("membar.gl", "fence.sc.gpu") if f in ptx)
        assert fence < ptx.find("atom.global.add.u32")   # the partial's store fenced first
    assert seen == {"rows", "cols"}


@pytest.mark.tiers("ptx")
def test_split_walks_issue_their_loads_together():
    """Bytes in flight: the ``rows`` walk of an aligned contiguous sum loads 16-byte vectors,
    ``VECTORS_PER_TURN`` of each input a turn (an H200 needs ~40 KB in flight an SM; 4-byte
    loads one at a time gave 16 KB and half a copy's rate); a misaligned view walks element by
    element; a split ``cols`` walk loads ``COLS_TURN`` elements a turn before folding them."""
    rng = np.random.default_rng(39)
    x, y = (fa.asarray(rng.standard_normal(1 << 20).astype(np.float32)) for _ in range(2))
    explanation, (ptx,) = _ptx_of(((x - y) ** 2).sum())
    ((plan, _),) = explanation.kernels
    assert (plan.schedule, plan.vector_width, plan.split) == ("rows", 4, 128)
    assert _most_in_one_block(r"ld\.global\.v4\.f32", ptx) == 2 * VECTORS_PER_TURN
    _, (ptx,) = _ptx_of(x[1:].sum())
    assert "ld.global.v4" not in ptx
    explanation, (ptx,) = _ptx_of(fa.asarray(rng.standard_normal((4096, 64)).astype(np.float32))
                                  .sum(axis=0))
    ((plan, _),) = explanation.kernels
    assert plan.schedule == "cols" and plan.split > 1
    assert _most_in_one_block(r"ld\.global\.f32", ptx) >= COLS_TURN   # NVVM's own unroll: 4


def _most_in_one_block(pattern: str, ptx: str) -> int:
    """The most matches of ``pattern`` in one basic block of ``ptx`` (a loop turn's body)."""
    return max(len(re.findall(pattern, block))
               for block in re.split(r"^\$L__BB\d+_\d+:", ptx, flags=re.M))
