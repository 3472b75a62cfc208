"""The gather ``table[idx] * w`` with the table in a thread-block cluster's distributed shared
memory, against the same gather through L2 (benchmarks/README.md, note 7).

A probe, not a benchmark of fusedarrays: hand-written CUDA C compiled by CuPy's NVRTC, so that
the one avenue note 7 left untried is measured before any of it is built into the code
generator. Each cluster holds the table interleaved over its blocks' shared memory (element j in
block j % C at slot j // C); a look-up whose slot is past a block's 227 KB reads L2. The
``cluster 4`` rows hold nothing (``per`` 0): the same persistent 1024-thread kernel reading L2,
the control for the launch shape. ``plain`` is the kernel fusedarrays generates, by hand.
Every row's result is compared with CuPy's ``table[idx] * w``. Run on the GPU machine:
``python3 benchmarks/results/2026-11-28-h200/gather_dsmem_probe.py``.
"""

import cupy as cp
import numpy as np
from cuda.bindings import driver

SOURCE = r"""
template<int CS, int U>
__device__ __forceinline__ void body(const float* __restrict__ table, int tn,
    const int* __restrict__ idx, const float* __restrict__ w, float* __restrict__ out,
    long long nv, int per) {
  extern __shared__ float sm[];
  unsigned rank, cid, ncl;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  asm("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
  asm("mov.u32 %0, %%nclusterid.x;" : "=r"(ncl));
  for (int i = threadIdx.x; i < per; i += blockDim.x) {
    long long j = (long long)i * CS + rank;
    sm[i] = j < tn ? table[j] : 0.0f;
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
  unsigned smbase = (unsigned)__cvta_generic_to_shared(sm);
  long long g = ((long long)cid * CS + rank) * blockDim.x + threadIdx.x;
  long long stride = (long long)ncl * CS * blockDim.x;
  for (long long v = g; v < nv; v += stride * U) {
    int4 i4[U]; float4 w4[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      long long q = v + u * stride;
      if (q < nv) { i4[u] = ((const int4*)idx)[q]; w4[u] = ((const float4*)w)[q]; }
      else { i4[u] = make_int4(0, 0, 0, 0); }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      int jj[4] = {i4[u].x, i4[u].y, i4[u].z, i4[u].w};
      float t[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        unsigned j = (unsigned)jj[k];
        unsigned owner = j % CS, off = j / CS;
        if (off < (unsigned)per) {
          unsigned a;
          asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smbase + off * 4), "r"(owner));
          asm("ld.shared::cluster.f32 %0, [%1];" : "=f"(t[k]) : "r"(a));
        } else {
          t[k] = __ldg(table + j);
        }
      }
      long long q = v + u * stride;
      if (q < nv) ((float4*)out)[q] = make_float4(t[0] * w4[u].x, t[1] * w4[u].y,
                                                  t[2] * w4[u].z, t[3] * w4[u].w);
    }
  }
  // no block leaves while another may still read its shared memory
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
#define K(CS, U) extern "C" __global__ void __cluster_dims__(CS, 1, 1) __launch_bounds__(1024) \
  g##CS##_##U(const float* table, int tn, const int* idx, const float* w, float* out,      \
              long long nv, int per) { body<CS, U>(table, tn, idx, w, out, nv, per); }
K(4, 1) K(8, 1) K(16, 1) K(8, 2)
extern "C" __global__ void __launch_bounds__(256) plain(const float* __restrict__ table,
    const int* __restrict__ idx, const float* __restrict__ w, float* __restrict__ out,
    long long nv) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x; v < nv; v += stride) {
    int4 i4 = ((const int4*)idx)[v]; float4 w4 = ((const float4*)w)[v];
    ((float4*)out)[v] = make_float4(__ldg(table + i4.x) * w4.x, __ldg(table + i4.y) * w4.y,
                                    __ldg(table + i4.z) * w4.z, __ldg(table + i4.w) * w4.w);
  }
}
"""
SHARED_MAX = 227 * 1024
SMS = 132


def device_us(fn, rep=20):
    fn()
    cp.cuda.Device().synchronize()
    best = float("inf")
    for _ in range(3):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(rep):
            fn()
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) / rep * 1e3)
    return best


def allow_clusters_of_16(kernel):
    handle = driver.CUfunction(kernel.kernel.ptr)
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    (err,) = driver.cuFuncSetAttribute(handle, attribute, 1)
    assert err == driver.CUresult.CUDA_SUCCESS, err


def main():
    module = cp.RawModule(code=SOURCE, options=("-std=c++17", "-arch=sm_90"), backend="nvrtc")
    n = 1 << 26
    seed = 7
    rng = np.random.default_rng(seed)
    print(f"{seed=}, {n} look-ups; ratio: a copy's time for idx, w and out (12 bytes a look-up)")
    src, dst = cp.asarray(rng.random(n, dtype=np.float32)), cp.empty(n, cp.float32)
    copy = device_us(lambda: cp.copyto(dst, src)) * 12 / 8
    print(f"copy of 12 bytes a look-up {copy:.1f} us")
    out = cp.empty(n, cp.float32)
    w = cp.asarray(rng.random(n, dtype=np.float32))
    nv = np.int64(n // 4)
    for bits in (16, 20):
        tn = 1 << bits
        table = cp.asarray(rng.standard_normal(tn).astype(np.float32))
        idx = cp.asarray(rng.integers(0, tn, n, dtype=np.int32))
        want = table[idx] * w
        plain = module.get_function("plain")
        args = (table, idx, w, out, nv)
        t = device_us(lambda k=plain, a=args: k((SMS * 8,), (256,), a))
        print(f"table 2^{bits} plain: {t:.1f} us, {copy / t:.3f} of a copy, "
              f"equal={bool(cp.array_equal(out, want))}")
        for cs, u in ((4, 1), (8, 1), (16, 1), (8, 2)):
            kernel = module.get_function(f"g{cs}_{u}")
            per = min(SHARED_MAX // 4, -(-tn // cs)) if cs != 4 else 0
            kernel.max_dynamic_shared_size_bytes = per * 4
            if cs > 8:
                allow_clusters_of_16(kernel)
            for clusters in sorted({SMS // cs - 1, SMS // cs, 2 * SMS // cs - 1, 2 * SMS // cs}):
                out.fill(0)
                args = (table, np.int32(tn), idx, w, out, nv, np.int32(per))
                t = device_us(lambda k=kernel, g=clusters * cs, a=args, s=per * 4:
                              k((g,), (1024,), a, shared_mem=s))
                held = min(tn, per * cs) / tn
                print(f"table 2^{bits} cluster {cs:2d} U{u} clusters {clusters:3d} held "
                      f"{held:.2f}: {t:.1f} us, {copy / t:.3f} of a copy, "
                      f"equal={bool(cp.array_equal(out, want))}")


if __name__ == "__main__":
    main()
