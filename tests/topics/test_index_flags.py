"""Gathers through device-computed indices: clamped and flagged, in range NumPy's values with no
copy to the host before the kernel, out of range NumPy's IndexError raised at the next
evaluation point, once (cases: ``tests/index_flag_cases.py``; runtime/indexflags.py), on every
tier; on cuda the context healthy after; in PTX for sm_90 a clamp by min/max, the gathered load
always made, and the error word's record (a compare-and-swap, then a store for the thread that
won it) behind a branch over the record alone, so nothing on the normal path reads the
compare-and-swap's result (cuda/atomics.py)."""

import re
import threading

import index_flag_cases as cases
import numpy as np
import pytest

import fusedarrays as fa

# seeds of each tier's cases, and the length of narrow_indices' gathers (the simulator's short)
SEEDS = {"cpu": (930, 931, 935), "sim": (940, 941, 942), "cuda": (950, 951, 953)}
NARROW = {"cpu": 1003, "sim": 37, "cuda": 4099}


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_in_range_without_host_copies(monkeypatch, tier):
    cases.in_range_without_host_copies(monkeypatch, seed=SEEDS[tier][0])


@pytest.mark.tiers("cpu", "sim")
def test_out_of_range_raises_once(tier):
    cases.out_of_range_raises_once(seed=SEEDS[tier][1])


@pytest.mark.tiers("cuda")
def test_out_of_range_raises_once_and_the_context_stays_healthy():
    cases.out_of_range_raises_once(seed=951)
    seed = 952
    rng = np.random.default_rng(seed)
    table = rng.standard_normal(1 << 20).astype(np.float32)
    raw = rng.integers(-(1 << 20), 1 << 20, 1 << 22)
    i = fa.asarray(raw)
    bad = fa.take(fa.asarray(table), i * 3)            # most of them out of range
    with pytest.raises(IndexError, match=r"out of bounds for axis 0 with size 1048576"):
        (bad * 2).get()
    np.testing.assert_array_equal(fa.take(fa.asarray(table), i + 0).get(), table[raw],
                                  err_msg=f"{seed=}")
    total = float(fa.sum(fa.asarray(table)))      # the context still launches and reads
    assert total == pytest.approx(float(table.sum(dtype=np.float64)), rel=1e-4, abs=1e-2)


@pytest.mark.tiers("cpu", "sim", "cuda")
def test_narrow_indices(tier):
    cases.narrow_indices(seed=SEEDS[tier][2], n=NARROW[tier])


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


@pytest.mark.tiers("ptx")
def test_clamp_and_predicated_flag():
    seed = 960
    rng = np.random.default_rng(seed)
    x = fa.asarray(rng.standard_normal(1000).astype(np.float32))
    i = fa.asarray(rng.integers(0, 1000, 4096).astype(np.int32))
    ptx = fa.explain(fa.take(x, i * 3 - 7), arch="sm_90").ptx
    body = ptx[ptx.index(".entry"):]
    assert re.search(r"max\.s64", body) and re.search(r"min\.s64", body)      # the clamp
    lines = body.splitlines()
    records = [ln for ln in lines if "atom.global.cas.b64" in ln]
    assert records
    for ln in records:      # one asm block: the branch, then the record, then its label
        assert re.search(r"@p bra (\w+);.*atom\.global\.cas\.b64.*@w st\.global\.b64.*\1: }",
                         ln), ln
    # the gathered loads stand outside the records, unpredicated: never skipped
    gathered = [ln for ln in lines if re.search(r"ld\.global\.f32", ln)]
    assert len(gathered) == 5 and not any("@" in ln for ln in gathered)    # 4 lanes + the tail
    host_checked = fa.explain(fa.take(x, rng.integers(0, 1000, 4096)), arch="sm_90").ptx
    assert "atom.global.cas" not in host_checked                # host-known: unchanged
