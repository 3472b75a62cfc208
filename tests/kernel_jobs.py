"""Compile jobs for the tests of the CUDA compile path without a GPU: kernels planned on the cpu
backend as pool-aligned device buffers would be, rendered for cuda, and PTX compared without the
names that differ from process to process."""

from __future__ import annotations

import importlib
import re
import struct

import numpy as np

import fusedarrays as fa
from fusedarrays import config
from fusedarrays.compiler import render

precompile = importlib.import_module("fusedarrays.runtime.precompile")


def plans(*exprs, n=1024):
    """One kernel plan per ``expr(x, y)`` over two random float32 vectors of ``n``."""
    with config.override(BACKEND="cpu"):
        x = fa.asarray(np.random.default_rng(0).random(n, np.float32))
        y = fa.asarray(np.random.default_rng(1).random(n, np.float32))
        return [precompile.kernel_plans([make(x, y)])[0] for make in exprs]


def jobs(plan_list, arch="sm_90"):
    """``(source, name, param types, arch)`` per plan, as a batch compile takes them."""
    return [(render(p, "cuda"), p.name, p.param_types(), arch) for p in plan_list]


def normal(ptx: str) -> str:
    # mangled names and shared arrays are numbered per process
    return re.sub(r"_ZN\w+|_cudapy_smem_\d+", "NAME", re.sub(r"//[^\n]*", "", ptx))


def code_sections(cubin: bytes) -> list[bytes]:
    """The machine code of a cubin (an ELF64 image): its ``.text.*`` sections' bytes, in order.
    Comparable across processes where the whole image is not: its string tables hold the
    mangled names, whose numbering changes their length and so the image's padding."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + k * shentsize) for k in range(shnum)]
    names_at = headers[shstrndx][4]
    sections = []
    for name, _, _, _, offset, size in headers:
        label = cubin[names_at + name:cubin.index(b"\0", names_at + name)]
        if label.startswith(b".text."):
            sections.append(cubin[offset:offset + size])
    return sections
