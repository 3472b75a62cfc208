"""Advanced indexing through the CUDA kernel source (simulator): several index arrays and masks
read (a gather through host-made offsets) and written, ``x[idx] += v`` as one kernel,
``ufunc.at`` passes, nonzero and count_nonzero, and permutations equal to the cpu backend's;
against NumPy, small shapes (the simulator runs ~80 ms per 1024 elements) but each walk."""

import indexcases
import numpy as np

import fusedarrays as fa
from fusedarrays import config


def test_reads_and_writes_match_numpy():
    seed = 240
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((4, 5, 6)).astype(np.float32)
    chosen = ("two arrays", "int, slice, array", "arrays apart", "None between", "lists",
              "mask over leading axes", "mask on the last axis")
    with config.override(BACKEND="sim"):   # the tier's backend
        for vname, view in indexcases.VIEWS.items():
            host, x = base.copy(), fa.asarray(base)
            hv, xv = view(host), view(x)
            keys = indexcases.keys(rng, hv.shape)
            for kname in chosen:
                key, msg = keys[kname], f"{seed=} {vname} {kname}"
                np.testing.assert_array_equal((xv[key] * 2).get(), hv[key] * 2, err_msg=msg)
                values = rng.standard_normal(hv[key].shape).astype(np.float32)
                hv[key] = values
                xv[indexcases.as_fa_key(key)] = values
                hv[key] += 1.5
                xv[key] += 1.5
                np.testing.assert_array_equal(x.get(), host, err_msg=msg)


def test_gathered_walks_and_one_kernel_writes():
    seed = 241
    rng = np.random.default_rng(seed)
    with config.override(BACKEND="sim"):   # the tier's backend
        table = rng.standard_normal((40, 136)).astype(np.float32)
        x, want = fa.asarray(table.copy()), table.copy()
        mask = rng.random(table.shape) < 0.05
        w = rng.standard_normal(int(mask.sum())).astype(np.float32)
        flat = x[mask] * fa.asarray(w)                       # 1-D: the vector walk
        assert fa.explain(flat).vector_width == 4
        np.testing.assert_array_equal(flat.get(), table[mask] * w, err_msg=f"{seed=}")
        i, j = rng.integers(-40, 40, 3), rng.integers(-136, 136, 3)
        rows = x[i[:, None], ::-1][:, 0] + 1                 # rows of 136: the 2-D walk
        assert fa.explain(rows).plan.schedule == "rows"
        np.testing.assert_array_equal(rows.get(), table[i[:, None], ::-1][:, 0] + 1)
        k = rng.integers(-17, 17, 1)
        nd = x.reshape(40, 8, 17)[i[:, None], :, k] * 2      # arrays apart: their axes first
        assert fa.explain(nd).plan.schedule == "nd"
        np.testing.assert_array_equal(nd.get(), table.reshape(40, 8, 17)[i[:, None], :, k] * 2,
                                      err_msg=f"{seed=}")
        np.testing.assert_array_equal(x[i[:, None], j].get(), table[i[:, None], j])
        idx = np.array([3, 3, -1, 0])
        fa.reset_stats()
        x[idx] += 2.0
        want[idx] += 2.0
        assert fa.stats()["launches"] == 1
        fa.add.at(x, idx, fa.asarray(np.float32([1, 2, 3, 4])[:, None]))
        np.add.at(want, idx, np.float32([1, 2, 3, 4])[:, None])
        np.testing.assert_array_equal(x.get(), want, err_msg=f"{seed=}")


def test_nonzero_count_and_permutation():
    seed = 242
    rng = np.random.default_rng(seed)
    host = np.where(rng.random((6, 140)) < 0.5, 0, 1.5).astype(np.float32)
    with config.override(BACKEND="cpu"):   # the reference backend for the simulator's order
        cpu_perm = fa.random.default_rng(seed).permutation(300).get()
    with config.override(BACKEND="sim"):   # the tier's backend
        x = fa.asarray(host)
        for got, want in zip(fa.nonzero(x[::-1]), np.nonzero(host[::-1])):
            np.testing.assert_array_equal(got.get(), want, err_msg=f"{seed=}")
        np.testing.assert_array_equal(fa.count_nonzero(x, axis=1).get(),
                                      np.count_nonzero(host, axis=1), err_msg=f"{seed=}")
        assert int(fa.count_nonzero(x.T)) == np.count_nonzero(host)
        perm = fa.random.default_rng(seed).permutation(300).get()
    np.testing.assert_array_equal(perm, cpu_perm, err_msg=f"{seed=}")
