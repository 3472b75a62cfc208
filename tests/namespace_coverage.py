"""The namespace's coverage, generated from the code: which Array API 2024.12 names
``fusedarrays`` has (the ``linalg`` extension's under ``fa.linalg``), and which NumPy ufuncs the
op table covers (and why the rest are left out).

``python tests/namespace_coverage.py`` prints the README's coverage section;
``--write`` replaces it in README.md (between the ``coverage`` markers);
tests/pure/test_namespace_coverage.py fails when README.md and the code disagree.
The standard's names are its 2024.12 name lists (data-apis/array-api,
``src/array_api_stubs/_2024_12/*.py``, ``__all__``), copied here as data.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

import fusedarrays as fa
from fusedarrays.ir import ops

STANDARD_2024_12 = {
    "constants": "e inf nan newaxis pi",
    "data types": "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 "
                  "complex64 complex128",
    "creation": "arange asarray empty empty_like eye from_dlpack full full_like linspace "
                "meshgrid ones ones_like tril triu zeros zeros_like",
    "data-type functions": "astype can_cast finfo iinfo isdtype result_type",
    "elementwise": "abs acos acosh add asin asinh atan atan2 atanh bitwise_and "
                   "bitwise_left_shift bitwise_invert bitwise_or bitwise_right_shift "
                   "bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1 floor "
                   "floor_divide greater greater_equal hypot imag isfinite isinf isnan less "
                   "less_equal log log1p log2 log10 logaddexp logical_and logical_not "
                   "logical_or logical_xor maximum minimum multiply negative not_equal "
                   "nextafter positive pow real reciprocal remainder round sign signbit sin sinh "
                   "square sqrt subtract tan tanh trunc",
    "indexing": "take take_along_axis",
    "inspection": "__array_namespace_info__",
    "linear algebra": "matmul matrix_transpose tensordot vecdot",
    "manipulation": "broadcast_arrays broadcast_to concat expand_dims flip moveaxis "
                    "permute_dims repeat reshape roll squeeze stack tile unstack",
    "searching": "argmax argmin count_nonzero nonzero searchsorted where",
    "set": "unique_all unique_counts unique_inverse unique_values",
    "sorting": "argsort sort",
    "statistical": "cumulative_prod cumulative_sum max mean min prod std sum var",
    "utility": "all any diff",
    "linalg extension": "cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm "
                        "matrix_power matrix_rank matrix_transpose outer pinv qr slogdet solve "
                        "svd svdvals tensordot trace vecdot vector_norm",
}
# the categories whose names live in a namespace of their own (an extension)
EXTENSIONS = {"linalg extension": "linalg"}
BEGIN, END = "<!-- coverage: begin (tests/namespace_coverage.py --write) -->", \
    "<!-- coverage: end -->"
README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _numpy_ufuncs() -> list[str]:
    return sorted({v.__name__ for v in vars(np).values() if isinstance(v, np.ufunc)})


def section() -> str:
    """The README's coverage section, from the code."""
    lines = ["| Array API 2024.12 | in `fusedarrays` | missing |", "|---|---|---|"]
    total = have = 0
    for category, names in STANDARD_2024_12.items():
        names = names.split()
        space = getattr(fa, EXTENSIONS[category], None) if category in EXTENSIONS else fa
        missing = [n for n in names if not hasattr(space, n)]
        total, have = total + len(names), have + len(names) - len(missing)
        lines.append(f"| {category} | {len(names) - len(missing)}/{len(names)} | "
                     f"{' '.join(f'`{n}`' for n in missing) or '—'} |")
    lines.append(f"| **all** | **{have}/{total}** | |")
    ufuncs = _numpy_ufuncs()
    rows = [u for u in ufuncs if getattr(np, u) in ops.BY_UFUNC]
    lines += ["", f"NumPy ufuncs: **{len(rows)} of {len(ufuncs)}** are op-table rows "
              "(`fa.<name>` and `np.<ufunc>(x)`); the others, and why:", ""]
    for name in ufuncs:
        if name not in rows:
            lines.append(f"- `{name}`: {ops.LEFT_OUT.get(name, 'not yet a row')}")
    special = ", ".join(f"`{n}`" for n in ops.SPECIAL)
    lines += ["", f"`fa.special`: {special} (SciPy's `scipy.special.<name>(x)` on a "
              "`fa.ndarray` dispatches to them)."]
    return "\n".join(lines)


def readme_section(text: str) -> str:
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[start:stop].strip()


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        text = README.read_text()
        start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
        README.write_text(text[:start] + "\n" + section() + "\n" + text[stop:])
    else:
        print(section())
