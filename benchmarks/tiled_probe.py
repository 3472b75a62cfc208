"""Probe of the transposed broadcast kernel's swing (issue #12): ``(x.T + b[None,:]) * s[:,None]``
over 4096² float32 against a same-size copy, the same kernel on x (and the result) at several
places in memory, several tile orders, and the ``.compute()`` and ``out[...] =`` paths.

Device time by CUDA events around batches of launches of the captured kernel (its own arguments,
only the pointers moved), alternating the variants in rounds; ``--check`` (sim/cuda) only checks
that every variant computes NumPy's result; ``--host`` times the paths that reach the kernel
(:func:`host_paths`) instead. Run from the repository root (or a copy of it).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

import fusedarrays as fa  # noqa: E402
from fusedarrays.compiler import devicelib  # noqa: E402
from fusedarrays.compiler.plan import kernel_param_names  # noqa: E402

M = 4096
T = 64
OUTV = ("cur", "cur-1tile", "colmajor-1tile", "diag-1tile", "super32-1tile")


def smi(tag):
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,temperature.gpu,"
                              "power.draw,clocks_throttle_reasons.active", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as e:  # noqa: BLE001
        out = repr(e)
    print(f"[smi {tag}] {out}", flush=True)


# -- tile orders, as text edits of the generated kernel -------------------------------------------
HEAD = re.compile(r"    c0 = cv_i64\(cuda.blockIdx.x\) \* 64\n    tr = cv_i64\(cuda.blockIdx.y\)\n"
                  r"    tstep = cv_i64\(cuda.gridDim.y\)\n    while tr \* 64 < d0:\n"
                  r"        r0 = tr \* 64\n")

MAPS = {   # tile t (0 .. nr*nc-1) -> (tr, tc)
    "rowmajor": ["tr = t // nc", "tc = t - tr * nc"],
    "colmajor": ["tc = t // nr", "tr = t - tc * nr"],
    "diag": ["tc = t % nc", "tr = (t // nc + tc) % nr"],
    "super8": ["sidx = t // 64", "w = t - sidx * 64", "str_ = sidx // (nc // 8)",
               "tr = str_ * 8 + w // 8", "tc = (sidx - str_ * (nc // 8)) * 8 + w % 8"],
    "super32": ["sidx = t // 1024", "w = t - sidx * 1024", "str_ = sidx // (nc // 32)",
                "tr = str_ * 32 + w // 32", "tc = (sidx - str_ * (nc // 32)) * 32 + w % 32"],
    "band8c": [  # bands of 8 tile columns, walked down the rows (tr fastest) inside a band
        "bnd = t // (8 * nr)", "w = t - bnd * 8 * nr", "tr = w // 8", "tc = bnd * 8 + w % 8"],
}


def variant_source(src: str, mapping: str) -> str:
    lines = ["    nr = (d0 + 63) // 64", "    nc = (d1 + 63) // 64",
             "    t = cv_i64(cuda.blockIdx.x)", "    tstep = cv_i64(cuda.gridDim.x)",
             "    while t < nr * nc:"]
    lines += ["        " + ln for ln in MAPS[mapping]]
    lines += ["        c0 = tc * 64", "        r0 = tr * 64"]
    new, k = HEAD.subn("\n".join(lines) + "\n", src)
    assert k == 1, src[:800]
    new, k = re.subn(r"\n        tr \+= tstep\n", "\n        t += tstep\n", new)
    assert k == 1
    return new


def main():
    check_only = "--check" in sys.argv
    m = int(os.environ.get("PROBE_M", 128)) if check_only else M
    be = harness.backend()
    rng = np.random.default_rng(0)
    print("seed 0", flush=True)
    x = rng.standard_normal((m, m)).astype(np.float32)
    b, s = (rng.standard_normal(m).astype(np.float32) for _ in range(2))
    dx, db, ds = fa.asarray(x), fa.asarray(b), fa.asarray(s)

    def expr(mod, x_, transpose=True):
        b_, s_ = (db, ds) if mod is fa else (b, s)
        return ((x_.T if transpose else x_) + b_[None, :]) * s_[:, None]

    captured = []
    real_launch = be.launch

    def spy(launcher, n, args, geometry=()):
        captured.append((launcher, n, list(args), geometry))
        return real_launch(launcher, n, args, geometry)
    be.launch = spy
    out = fa.full((m, m), np.nan, np.float32)
    kern = {}
    for tname, tr in (("T", True), ("N", False)):
        captured.clear()
        out[...] = expr(fa, dx, tr)
        want = expr(np, x, tr)
        assert np.array_equal(out.get(), want)
        launcher, n, args, geometry = captured[-1]
        plan = fa.explain(expr(fa, dx, tr)).plan
        names = kernel_param_names(plan)[1:]
        kern[tname] = dict(launcher=launcher, n=n, args=args, geometry=geometry, plan=plan,
                           names=names, want=want)
        print(tname, plan.schedule, plan.vector_width, geometry, dict(zip(names, args)),
              flush=True)
    be.launch = real_launch
    if "--host" in sys.argv:
        return host_paths(be, expr, kern, dx, db, ds, out)

    from cuda.core import LaunchConfig
    K = kern["T"]
    plan, names = K["plan"], K["names"]
    from fusedarrays.compiler.codegen import render_kernel
    src = render_kernel(plan, "cuda")
    sm = getattr(K["launcher"], "_sm_count", 132)
    nr = nc = -(-m // T)
    variants = {}   # name -> (kernel key, launcher, grid, block)

    def cfg(launcher, grid, block, tag):
        if not hasattr(launcher, "_configs"):   # the simulator: a few blocks, the loops do the rest
            return launcher, (K["geometry"] if tag in ("1tile", "y8") else ("tiled", 1, 3))
        geom = ("probe", tag)
        launcher._configs[(K["n"], geom)] = LaunchConfig(grid=grid, block=block)
        return launcher, geom

    base_geom_grid = None
    if hasattr(K["launcher"], "_config"):
        base_geom_grid = K["launcher"]._config(K["n"], K["geometry"]).grid
    print("current grid", base_geom_grid, "sm", sm, flush=True)
    variants["cur"] = (K["launcher"], K["geometry"])
    variants["cur-1tile"] = cfg(K["launcher"], (nc, nr), (32, 8), "1tile")
    variants["cur-y8"] = cfg(K["launcher"], (nc, min(nr, 8)), (32, 8), "y8")
    ptypes = plan.param_types()
    for mp in MAPS:
        vsrc = variant_source(src, mp)
        art = be.compile(vsrc, plan.name, ptypes, devicelib.helpers())
        L = be.load(art, ptypes)
        variants[f"{mp}-1tile"] = cfg(L, (nr * nc,), (32, 8), mp + "1")
        if mp in ("rowmajor", "colmajor", "diag"):
            variants[f"{mp}-pers"] = cfg(L, (min(nr * nc, sm * 8),), (32, 8), mp + "p")
    try:
        k = K["launcher"].kernel
        print("regs", k.attributes.num_regs, "smem", k.attributes.shared_size_bytes,
              "blocks/SM", k.occupancy.max_active_blocks_per_multiprocessor((32, 8) if False
                                                                            else 256, 0),
              flush=True)
    except Exception as e:  # noqa: BLE001
        print("attributes:", repr(e))

    # correctness of every variant (NumPy's result exactly)
    ip = names.index("p0")
    op = names.index("p3")
    for vname, (L, geom) in list(variants.items()):
        res = fa.full((m, m), np.nan, np.float32)
        args = list(K["args"])
        args[op] = _pointer(be, res)
        be.launch(L, K["n"], args, geom)
        ok = np.array_equal(res.get(), K["want"])
        print(f"check {vname}: {'ok' if ok else 'WRONG'}", flush=True)
        if not ok:
            del variants[vname]
    if check_only:
        return 0

    # -- placements of x and of the result ---------------------------------------------------
    from cuda.bindings import driver

    from fusedarrays.cuda import events, memory
    nbytes = m * m * 4
    xptr0 = K["args"][ip]
    keep = []

    def pool(nb):
        st = be.alloc(nb)
        keep.append(st)
        return st.ptr

    def dcopy(dst, src_, nb):
        memory.check(driver.cuMemcpyDtoD(dst, src_, nb))

    xplaces = {"dx": xptr0}
    for i in range(3):
        p = pool(nbytes)
        dcopy(p, xptr0, nbytes)
        xplaces[f"pool{i}"] = p
    big = pool(nbytes + (40 << 20))
    for off in (0, 4 << 10, 64 << 10, 1 << 20, 2 << 20, 6 << 20, 34 << 20):
        dcopy(big + off, xptr0, nbytes)   # each copy overwrites the last: copy before timing
        xplaces[f"big+{off >> 10}K"] = (big + off, True)
    # the same 2 MiB physical pages mapped in several orders (VMM)
    try:
        prop = driver.CUmemAllocationProp()
        prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
        prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = 0
        gran = memory.check(driver.cuMemGetAllocationGranularity(
            prop, driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM))
        npages = nbytes // gran
        handles = [memory.check(driver.cuMemCreate(gran, prop, 0)) for _ in range(npages)]
        desc = driver.CUmemAccessDesc()
        desc.location = prop.location
        desc.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        perm_rng = np.random.default_rng(1)
        orders = {"vmm-inorder": list(range(npages)), "vmm-reversed": list(range(npages))[::-1],
                  "vmm-evenodd": list(range(0, npages, 2)) + list(range(1, npages, 2)),
                  "vmm-shuffled": list(perm_rng.permutation(npages))}
        for oname, order in orders.items():
            va = memory.check(driver.cuMemAddressReserve(nbytes, gran, 0, 0))
            va = int(va)
            for j, h in enumerate(order):
                memory.check(driver.cuMemMap(va + j * gran, gran, 0, handles[h], 0))
            memory.check(driver.cuMemSetAccess(va, nbytes, [desc], 1))
            xplaces[oname] = (va, "vmm", order)
        print("vmm granularity", gran, flush=True)
    except Exception as e:  # noqa: BLE001
        print("vmm failed:", repr(e), flush=True)

    outplaces = {"out": K["args"][op], "pool-o1": pool(nbytes), "pool-o2": pool(nbytes)}

    def place_x(place):
        """The device address of x at ``place``, its data written there first."""
        if isinstance(place, tuple):
            ptr = place[0]
            if place[1] is True:
                dcopy(ptr, xptr0, nbytes)
            elif place[1] == "vmm":   # identical pages in another order: fill in that order
                dcopy(ptr, xptr0, nbytes)
            return ptr
        return place

    def event_time(fn, reps=20, batches=3):
        fn()
        best = float("inf")
        for _ in range(batches):
            t = events.EventTimer().start()
            for _ in range(reps):
                fn()
            best = min(best, t.stop() / reps)
        return best

    def launch_fn(L, geom, xp, outp, kname="T"):
        args = list(kern[kname]["args"])
        args[ip], args[op] = xp, outp
        n = kern[kname]["n"]
        return lambda: be.launch(L, n, args, geom)

    src_copy = pool(nbytes)
    dst_copy = pool(nbytes)

    def copy_t():
        return event_time(lambda: dcopy(dst_copy, src_copy, nbytes), 20, 5)

    smi("start")
    results = {}

    def add(key, value):
        results.setdefault(key, []).append(value)

    rounds = 3
    t0 = time.time()
    for rnd in range(rounds):
        c = copy_t()
        add(("copy",), c)
        for xname, place in xplaces.items():
            xp = place_x(place)
            for vname, (L, geom) in variants.items():
                add(("T", vname, xname, "out"), c / event_time(launch_fn(L, geom, xp,
                                                                          outplaces["out"])))
            add(("N", "cur", xname, "out"), c / event_time(launch_fn(
                kern["N"]["launcher"], kern["N"]["geometry"], xp, outplaces["out"], "N")))
        xp = xptr0
        for oname, optr in outplaces.items():
            for vname in OUTV:
                if vname not in variants:
                    continue
                L, geom = variants[vname]
                add(("T", vname, "dx", oname), c / event_time(launch_fn(L, geom, xp, optr)))
        add(("copy",), copy_t())
        print(f"round {rnd} done {time.time() - t0:.1f}s", flush=True)
    smi("after kernels")

    def summary(key):
        v = results[key]
        return f"{min(v):.3f}-{max(v):.3f}"
    print(f"copy 64 MiB: {[round(c * 1e6, 2) for c in results[('copy',)]]} µs")
    cols = list(variants)
    print("x placement   | N cur | " + " | ".join(cols))
    for xname in xplaces:
        row = [summary(("N", "cur", xname, "out"))]
        row += [summary(("T", v, xname, "out")) for v in cols]
        print(f"{xname:13s} | " + " | ".join(row), flush=True)
    print("out placement (x = dx)")
    for oname in outplaces:
        print(f"{oname:13s} | " + " | ".join(
            f"{v} {summary(('T', v, 'dx', oname))}" for v in OUTV if v in variants), flush=True)

    # -- the library's paths: .compute() and out[...] =, wall time between syncs (harness) ----
    sync = be.synchronize
    out_ptrs = set()

    def spy2(launcher, n, args, geometry=()):
        out_ptrs.add(args[op])
        return real_launch(launcher, n, args, geometry)
    lib = {}
    outT = fa.full((m, m), np.nan, np.float32)
    for _ in range(3):
        c = copy_t()
        for tname, tr in (("T", True), ("N", False)):
            def comp(tr=tr):
                return expr(fa, dx, tr).compute()

            def write(tr=tr):
                outT[...] = expr(fa, dx, tr)
            for pname, fn in (("compute", comp), ("write", write)):
                wall = harness.device_time(fn, 50, sync, 3)
                ev = event_time(fn, 50, 3)
                be.launch = lambda *a: None
                host = harness.device_time(fn, 50, sync, 3)
                be.launch = real_launch
                lib.setdefault((tname, pname), []).append((c / wall, c / ev, host * 1e6))
        be.launch = spy2
        for _ in range(10):
            expr(fa, dx, True).compute()
        be.launch = real_launch
    print("library path | copy/wall | copy/events | host µs per call (launch stubbed)")
    for k, v in lib.items():
        print(k, " ; ".join(f"{a:.3f} {b_:.3f} {h:.1f}" for a, b_, h in v), flush=True)
    print("distinct result addresses over 30 .compute() calls:", len(out_ptrs),
          sorted(hex(p) for p in out_ptrs)[:6])
    smi("end")
    out_dir = os.environ.get("OUT")
    if out_dir:
        with open(os.path.join(out_dir, "tiled_probe.json"), "w") as f:
            json.dump({"|".join(k): v for k, v in results.items()} |
                      {"lib|" + "|".join(k): v for k, v in lib.items()}, f, indent=1)
    return 0


def host_paths(be, expr, kern, dx, db, ds, out):
    """The same kernel reached by several paths, alternating in rounds: the lazy expression
    (``.compute()``, ``out[...] =``), its views built once, ``fa.fuse``, and the captured launch
    replayed alone. Per path: copy / wall time per call (the benchmarks' figure), copy / the
    kernel's own device time (``fa.profile``), and host µs per call with the launch stubbed."""
    from cuda.bindings import driver

    from fusedarrays.cuda import events
    from fusedarrays.cuda.memory import check
    nbytes = M * M * 4
    src, dst = be.alloc(nbytes), be.alloc(nbytes)

    def copy_t():
        best = float("inf")
        for _ in range(5):
            t = events.EventTimer().start()
            for _ in range(20):
                check(driver.cuMemcpyDtoD(dst.ptr, src.ptr, nbytes))
            best = min(best, t.stop() / 20)
        return best
    a, b1 = np.ones(1, np.float32), np.ones(1, np.float32)
    ufunc = min(harness.device_time(lambda: np.add(a, b1), 20000, None, 1) for _ in range(5))
    print(f"host gauge: NumPy ufunc on 1-element arrays {ufunc * 1e6:.2f} µs", flush=True)
    real = be.launch
    paths = {}
    for tname, tr in (("T", True), ("N", False)):
        K = kern[tname]
        xv = dx.T if tr else dx
        views = (xv, db[None, :], ds[:, None])
        fused = fa.fuse(lambda x_, b_, s_: (x_ + b_[None, :]) * s_[:, None])
        fused_w = fa.fuse(lambda o, x_, b_, s_: o.__setitem__(Ellipsis, (x_ + b_[None, :])
                                                              * s_[:, None]))

        def write(tr=tr):
            out[...] = expr(fa, dx, tr)

        def pre_compute(views=views):
            return ((views[0] + views[1]) * views[2]).compute()

        def replay(K=K):
            real(K["launcher"], K["n"], K["args"], K["geometry"])
        paths[tname] = {
            "compute": lambda tr=tr: expr(fa, dx, tr).compute(), "write": write,
            "views once, compute": pre_compute,
            "fuse, new array": lambda xv=xv, f=fused: f(xv, db, ds),
            "fuse, out": lambda xv=xv, f=fused_w: f(out, xv, db, ds),
            "replay launch": replay}
        for fn in paths[tname].values():
            fn()
    sync = be.synchronize
    table = {}
    for _ in range(3):
        c = copy_t()
        for tname, group in paths.items():
            for name, fn in group.items():
                wall = harness.device_time(fn, 50, sync, 3)
                fn()
                with fa.profile() as p:
                    for _ in range(10):
                        fn()
                kernel = min((x["device_s"] for x in p.launches), default=float("nan"))
                be.launch = lambda *a: None
                host = harness.device_time(fn, 200, sync, 3) if name != "replay launch" else \
                    float("nan")
                be.launch = real
                table.setdefault((tname, name), []).append((c / wall, c / kernel, host * 1e6))
    print("path | per round: copy/wall, copy/kernel alone, host µs with the launch stubbed")
    for (tname, name), v in table.items():
        print(f"{tname} {name:20s} | " + " ; ".join(f"{w:.3f} {k:.3f} {h:5.1f}" for w, k, h in v),
              flush=True)
    # the launch itself: 200 launches queued without a synchronisation (host time only)
    for tname in ("T", "N"):
        K = kern[tname]
        best = float("inf")
        for _ in range(3):
            sync()
            start = time.perf_counter()
            for _ in range(200):
                real(K["launcher"], K["n"], K["args"], K["geometry"])
            best = min(best, (time.perf_counter() - start) / 200)
            sync()
        print(f"{tname}: host µs per launch, {len(K['args']) + 1} params: {best * 1e6:.2f}",
              flush=True)
    return 0


def _pointer(be, a):
    from fusedarrays.ir import graph
    buffer, _, _, offset = graph.leaf_view(a._resolved())
    return be.operand_arg(buffer.storage, a.dtype, offset)


if __name__ == "__main__":
    raise SystemExit(main())
