"""PTX facts of the cuda backend, checked without a GPU: hand-written kernels through compile_ptx.

The kernels use the names generated code uses (``ld_<t>``, ``st_<t>``, ``cv_<t>``, vector accesses,
``fa_<fn>_<t>``) and the assertions name the instructions the design relies on.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba.cuda")

from fusedarrays.cuda.compile import (
    arch_cc,
    compile_ptx,
    entry_name,
    link_cubin,
    toolchain_versions,
)  # noqa: E402
from fusedarrays.errors import CompileError  # noqa: E402

ARCH = "sm_90"
COPY_PARAMS = ("i64", "ptr", "ptr")


def ptx_of(body: str, params=COPY_PARAMS, helpers=None, name="k") -> str:
    """PTX of a kernel ``name(n, p0, p1, …)`` running ``body`` once per thread ``i < n``.

    One pass rather than the generated grid-stride loop, which NVVM unrolls: instruction counts
    then say what one access compiles to.
    """
    names = ["n"] + [f"p{k}" for k in range(len(params) - 1)]
    lines = "\n".join("        " + ln for ln in body.strip().splitlines())
    source = (f"def {name}({', '.join(names)}):\n"
              "    i = cv_i64(cuda.grid(1))\n"
              "    if i < n:\n"
              f"{lines}\n")
    ptx, entry = compile_ptx(source, name, params, ARCH, helpers if helpers is not None else {})
    assert f".entry {entry}(" in ptx
    return ptx


def count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


def test_f32_load_and_store_are_global():
    ptx = ptx_of("st_f32(p1, i, ld_f32(p0, i) * cv_f32(2.0))")
    assert "ld.global.f32" in ptx
    assert "st.global.f32" in ptx
    assert re.search(r"\bld\.f32|\bst\.f32", ptx) is None  # no generic-space accesses


def test_f16_loads_16_bits_and_widens_to_f32():
    ptx = ptx_of("st_f32(p1, i, ld_f16(p0, i))")
    assert re.search(r"ld\.global\.(u16|b16)", ptx)
    assert "cvt.f32.f16" in ptx


def test_f16_stores_16_bits_rounded_to_nearest_even():
    ptx = ptx_of("st_f16(p1, i, ld_f32(p0, i))")
    assert "cvt.rn.f16.f32" in ptx
    assert re.search(r"st\.global\.(u16|b16)", ptx)


def test_f16_arithmetic_may_narrow_to_exact_f16_instructions():
    # half → float, one float op, round to half is exactly the half op for + - * /, and NVVM
    # knows it: the float32 compute type costs nothing here.
    ptx = ptx_of("st_f16(p1, i, cv_f16(ld_f16(p0, i) * ld_f16(p1, i)))")
    assert "mul.f16" in ptx or ("cvt.f32.f16" in ptx and "cvt.rn.f16.f32" in ptx)


def test_f16_store_of_f64_rounds_once():
    # float64 → half directly (NumPy's single rounding), not through float32
    ptx = ptx_of("st_f16(p1, i, ld_f64(p0, i))")
    assert "cvt.rn.f16.f64" in ptx
    assert "cvt.rn.f32.f64" not in ptx


def test_bool_is_a_byte_stored_as_0_or_1():
    ptx = ptx_of("st_b1(p1, i, not ld_b1(p0, i))")
    assert "ld.global.u8" in ptx
    assert "st.global.u8" in ptx


@pytest.mark.parametrize("code", ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f64"])
def test_every_dtype_loads_and_stores(code):
    ptx = ptx_of(f"st_{code}(p1, i, cv_{code}(ld_{code}(p0, i) + cv_{code}(1)))")
    assert count(ptx, r"ld\.global\.") == 1
    assert count(ptx, r"st\.global\.") == 1


def test_v4_f32_is_one_128_bit_load_and_store():
    ptx = ptx_of("a, b, c, d = ldv4_f32(p0, i)\nstv4_f32(p1, i, a * cv_f32(2.0), b, c, d)")
    assert "ld.global.v4.f32" in ptx
    assert "st.global.v4.f32" in ptx
    assert count(ptx, r"ld\.global\.") == 1


@pytest.mark.parametrize("code", ["i32", "u32"])
def test_v4_integers_are_128_bit(code):
    ptx = ptx_of(f"a, b, c, d = ldv4_{code}(p0, i)\nstv4_{code}(p1, i, d, c, b, a)")
    assert count(ptx, r"ld\.global\.v4\.") == 1
    assert count(ptx, r"st\.global\.v4\.") == 1


def test_v8_f16_is_one_128_bit_load_not_two_64_bit():
    ptx = ptx_of("a, b, c, d, e, f, g, h = ldv8_f16(p0, i)\n"
                 "stv8_f16(p1, i, h, g, f, e, d, c, b, a * cv_f32(2.0))")
    assert count(ptx, r"ld\.global\.v4\.u32") == 1
    assert count(ptx, r"ld\.global\.") == 1  # in particular no ld.global.v2.u32 / .v4.u16 pair
    assert count(ptx, r"st\.global\.v4\.") == 1
    assert count(ptx, r"st\.global\.") == 1


@pytest.mark.parametrize("code", ["f32", "f64"])
def test_libdevice_helpers_compile_inline(code):
    calls = " + ".join(f"fa_{fn}_{code}(x)" for fn in ("floor", "ceil", "trunc", "rint", "cbrt",
                                                       "exp2"))
    ptx = ptx_of(f"x = ld_{code}(p0, i)\nst_{code}(p1, i, {calls} + fa_fmod_{code}(x, x))")
    assert f"st.global.{code}" in ptx
    assert "cvt.rmi" in ptx and "cvt.rpi" in ptx and "cvt.rzi" in ptx and "cvt.rni" in ptx
    assert "call" not in ptx.split(".entry")[1]  # libdevice is inlined


def test_math_module_is_in_the_namespace():
    ptx = ptx_of("st_f32(p1, i, math.sqrt(ld_f32(p0, i)))")
    assert "sqrt.rn.f32" in ptx


def _twice(x):
    return cv_f32(x * 2)  # noqa: F821 - cv_f32 comes from the device namespace


def _twice_plus_one(x):
    return _twice(x) + cv_f32(1)  # noqa: F821 - helpers see each other by name


def test_helpers_from_plain_functions_compile_inlined():
    helpers = {"_twice": _twice, "_twice_plus_one": _twice_plus_one}
    ptx = ptx_of("st_f32(p1, i, _twice_plus_one(ld_f32(p0, i)))", helpers=helpers)
    body = ptx.split(".entry")[1]
    assert "ld.global.f32" in body and "st.global.f32" in body
    assert "call" not in body and ".func" not in ptx


def test_scalar_parameter_types():
    params = ("i64", "ptr", "f16", "b1", "i8", "i32", "u16", "u64", "f64")
    names = ", ".join(["n", "p0", "a", "b", "c", "d", "e", "f", "g"])
    source = (f"def k({names}):\n    if n > 0:\n"
              "        st_f64(p0, 0, a + b + c + d + e + f + g)\n")
    ptx, entry = compile_ptx(source, "k", params, ARCH, {})
    # float16 travels as f32 (pre-rounded by the runtime), bool as one byte, pointers as u64
    assert re.findall(r"\.param\s+\.(\w+)", ptx) == [
        "u64", "u64", "f32", "u8", "u8", "u32", "u16", "u64", "f64"]
    assert entry == entry_name(ptx)


def test_compile_error_carries_the_source():
    with pytest.raises(CompileError) as info:
        ptx_of("st_f32(p1, i, undefined_name(i))")
    assert "undefined_name" in str(info.value)
    assert "def k(n, p0, p1):" in info.value.source
    assert "   1  def k(n, p0, p1):" in str(info.value)  # numbered source in the message


def test_a_missing_kernel_is_a_compile_error():
    with pytest.raises(CompileError, match="defines no function 'k2'"):
        compile_ptx("def k(n):\n    pass\n", "k2", ("i64",), ARCH, {})


def test_unknown_parameter_type_is_a_compile_error():
    with pytest.raises(CompileError, match="unknown kernel parameter type"):
        compile_ptx("def k(n):\n    pass\n", "k", ("c32",), ARCH, {})


def test_arch_strings():
    assert arch_cc("sm_90") == (9, 0)
    assert arch_cc("sm_100") == (10, 0)
    assert arch_cc("sm_90a") == (9, 0)
    with pytest.raises(ValueError, match="arch"):
        arch_cc("compute_90")


def test_link_cubin_gives_an_elf_image():
    ptx = ptx_of("st_f32(p1, i, ld_f32(p0, i))")
    cubin = link_cubin(ptx, ARCH)
    assert isinstance(cubin, bytes)
    assert cubin[:4] == b"\x7fELF"


def test_toolchain_versions_name_every_tool_from_source_to_cubin():
    versions = toolchain_versions()
    assert sorted(versions) == ["cuda-core", "llvmlite", "numba", "numba-cuda", "nvjitlink",
                                "nvvm"]
    assert all(isinstance(v, str) and v for v in versions.values())


def test_ptx_does_not_depend_on_numba_environment_variables():
    # The disk key has no place for NUMBA_OPT or NUMBA_CUDA_DEBUGINFO, so they must not matter.
    source = "def k(n, p0):\n    if n > 0:\n        st_f32(p0, 0, math.exp(ld_f32(p0, 1)))\n"
    code = ("import sys\n"
            "from fusedarrays.cuda.compile import compile_ptx\n"
            f"sys.stdout.write(compile_ptx({source!r}, 'k', ('i64', 'ptr'), 'sm_90', {{}})[0])\n")
    ptxs = {run_python(code, NUMBA_OPT=level, NUMBA_CUDA_DEBUGINFO=debug)
            for level, debug in (("0", "1"), ("3", "0"))}
    assert len(ptxs) == 1


def run_python(code: str, **env: str) -> str:
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **env,
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", code], check=True, cwd=root, env=env,
                          capture_output=True, text=True).stdout


def test_warm_path_modules_do_not_import_numba():
    # A process that finds its kernels in the disk cache imports these and computes the key.
    code = ("import sys\n"
            "import fusedarrays.cuda.backend, fusedarrays.cuda.compile as c\n"
            "c.toolchain_versions()\n"
            "assert 'numba' not in sys.modules, sorted(m for m in sys.modules if 'numba' in m)\n")
    run_python(code)
