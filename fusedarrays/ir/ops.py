"""The op table: one row per elementwise op.

A row holds the op's name, arity, NumPy reference, result-dtype rule, device-code template and doc
line. Array operators, ``__array_ufunc__`` dispatch, ``fa.<name>`` functions, codegen, the tests and
the docs all iterate :data:`OPS`; adding an op is adding a row.

Templates are Python expressions over the operands ``{0} {1} {2}`` (already converted to the loop
dtype's compute type). ``{t}`` is the loop's compute-type code (``f32``/``f64``: float16 computes in
float32), ``{bits}`` its bit width. A row's ``templates`` maps the loop dtype's kind — ``b`` bool,
``i`` signed, ``u`` unsigned, ``f`` float, ``iu``/``ui`` for mixed signed/unsigned loops — to the
template, ``*`` serving every kind not named but ``c`` (complex): a row computes complex values
only where it names a ``c`` template, so a template written for real values never meets a complex
one. Helper names (``fa_*``) are in :mod:`devicelib`;
``math``,
``cv_*`` and ``fa_floor_{t}``-style names are each backend's.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

import numpy as np

from . import dtypes as _dtypes
from .dtypes import ROUNDED


@dataclass(frozen=True)
class Op:
    name: str
    nin: int
    ref: object                 # the NumPy function whose results and dtypes we reproduce
    templates: dict[str, str]
    doc: str
    rule: str = "ufunc"         # "ufunc": ref.resolve_dtypes; "where"; "clip"; "loops";
    #                             "part": the operand's dtype in, its real part's out
    dunder: str | None = None   # the operator method this row backs, e.g. "__add__"
    reflected: bool = True      # whether the dunder has a reflected form (__radd__)
    aliases: tuple[str, ...] = field(default=())
    module: str = ""            # "special": a ``fa.special`` function, not a ``fa.<name>`` one
    loops: tuple[str, ...] = ()  # rule "loops": the float loops in the reference's search order

    def template(self, kind: str) -> str | None:
        if kind == "c":
            return self.templates.get("c")
        return self.templates.get(kind, self.templates.get("*"))


def _t(**kinds: str) -> dict[str, str]:
    return {("*" if k == "any" else k): v for k, v in kinds.items()}


def _math1(fn: str, complex_template: str | None = None) -> dict[str, str]:
    if complex_template is None:
        return _t(f=f"math.{fn}({{0}})")
    return _t(f=f"math.{fn}({{0}})", c=complex_template)


def _backend1(fn: str) -> dict[str, str]:
    return _t(f=f"fa_{fn}_{{t}}({{0}})")


def _rounding(fn: str, complex_template: str | None = None) -> dict[str, str]:
    kinds = _t(f=f"fa_{fn}_{{t}}({{0}})", any="{0}")  # integers are already whole
    return {**kinds, "c": complex_template} if complex_template else kinds


class SciPyRef:
    """A ``scipy.special`` ufunc by name, imported when first called: the reference of the
    ``special`` rows (SciPy is optional; a row never needs it to compile or run)."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args):
        return getattr(importlib.import_module("scipy.special"), self.name)(*args)

    def __repr__(self) -> str:
        return f"scipy.special.{self.name}"


def _special(name: str, template: str, doc: str, loops: str) -> Op:
    return Op(name, 1, SciPyRef(name), _t(f=template), doc, rule="loops", module="special",
              loops=tuple(loops.split()))


_CMP_MIXED = {
    "less": ("fa_lt_iu({0}, {1})", "fa_lt_ui({0}, {1})"),
    "less_equal": ("fa_le_iu({0}, {1})", "fa_le_ui({0}, {1})"),
    "greater": ("fa_lt_ui({1}, {0})", "fa_lt_iu({1}, {0})"),
    "greater_equal": ("fa_le_ui({1}, {0})", "fa_le_iu({1}, {0})"),
    "equal": ("fa_eq_iu({0}, {1})", "fa_eq_iu({1}, {0})"),
    "not_equal": ("(not fa_eq_iu({0}, {1}))", "(not fa_eq_iu({1}, {0}))"),
}


# NumPy orders complex values lexicographically: by real part, then imaginary part; a NaN in
# either imaginary part makes the real parts' strict order false (its CLT, CLE macros).
_CMP_COMPLEX = {
    "equal": "({0} == {1})", "not_equal": "({0} != {1})",
    "less": "fa_clt({0}, {1})", "less_equal": "fa_cle({0}, {1})",
    "greater": "fa_clt({1}, {0})", "greater_equal": "fa_cle({1}, {0})",
}


def _cmp(name: str, symbol: str) -> dict[str, str]:
    iu, ui = _CMP_MIXED[name]
    return _t(any=f"({{0}} {symbol} {{1}})", iu=iu, ui=ui, c=_CMP_COMPLEX[name])


def _logic(template: str) -> dict[str, str]:
    return _t(any=template, c=template)   # ``!= 0`` and ``== 0`` read both parts


_ROWS = [
    # arithmetic
    Op("add", 2, np.add, _t(any="({0} + {1})", b="({0} | {1})", c="({0} + {1})"), "a + b",
       dunder="__add__"),
    Op("subtract", 2, np.subtract, _t(any="({0} - {1})", c="({0} - {1})"), "a - b",
       dunder="__sub__"),
    Op("multiply", 2, np.multiply, _t(any="({0} * {1})", b="({0} & {1})", c="({0} * {1})"),
       "a * b", dunder="__mul__"),
    Op("true_divide", 2, np.true_divide,
       _t(f="fa_div_{t}({0}, {1})", c="fa_cdiv_{t}({0}, {1})"),
       "a / b, always a float (or complex)", dunder="__truediv__", aliases=("divide",)),
    Op("floor_divide", 2, np.floor_divide,
       _t(i="fa_fdiv_i({0}, {1})", u="fa_fdiv_u({0}, {1})", f="fa_fdiv_{t}({0}, {1})"),
       "a // b; integer division by zero gives 0", dunder="__floordiv__"),
    Op("remainder", 2, np.remainder,
       _t(i="fa_mod_i({0}, {1})", u="fa_mod_u({0}, {1})", f="fa_mod_{t}({0}, {1})"),
       "a % b with the sign of b; integer remainder by zero gives 0", dunder="__mod__",
       aliases=("mod",)),
    Op("power", 2, np.power,
       _t(i="fa_pow_i({0}, {1})", u="fa_pow_u({0}, {1})", f="({0} ** {1})",
          c="({0} ** {1})"),
       "a ** b; a negative integer exponent gives the truncated value (NumPy raises)",
       dunder="__pow__", aliases=("pow",)),
    Op("negative", 1, np.negative, _t(any="(-{0})", u="fa_neg_u({0})", c="(-{0})"), "-a",
       dunder="__neg__", reflected=False),
    Op("positive", 1, np.positive, _t(any="{0}", c="{0}"), "+a", dunder="__pos__", reflected=False),
    Op("absolute", 1, np.absolute, _t(any="abs({0})", u="{0}", b="{0}", c="abs({0})"),
       "|a|; of a complex value its real modulus",
       dunder="__abs__", reflected=False, aliases=("abs",)),
    Op("sign", 1, np.sign,
       _t(f="fa_sign_{t}({0})", i="fa_sign_i({0})", u="fa_sign_u({0})", c="fa_csign_{t}({0})"),
       "-1, 0 or 1; NaN stays; a complex a / |a|"),
    Op("reciprocal", 1, np.reciprocal,
       _t(f="(1.0 / {0})", i="fa_recip_i({0})", u="fa_recip_u({0})", c="fa_crecip_{t}({0})"),
       "1 / a; integers give 1/a truncated (0 for 0)"),
    Op("square", 1, np.square, _t(any="({0} * {0})", b="({0} & {0})", c="fa_csquare_{t}({0})"),
       "a * a"),
    Op("sqrt", 1, np.sqrt, _math1("sqrt", "fa_csqrt_{t}({0})"), "square root"),
    Op("cbrt", 1, np.cbrt, _backend1("cbrt"), "cube root"),
    # exponentials and logarithms
    Op("exp", 1, np.exp, _math1("exp", "fa_cexp_{t}({0})"), "e ** a"),
    Op("exp2", 1, np.exp2, _backend1("exp2"), "2 ** a"),
    Op("expm1", 1, np.expm1, _math1("expm1", "fa_cexpm1_{t}({0})"), "e ** a - 1, exact near 0"),
    Op("log", 1, np.log, _math1("log", "fa_clog_{t}({0})"), "natural logarithm"),
    Op("log2", 1, np.log2, _math1("log2", "fa_clog2_{t}({0})"), "base-2 logarithm"),
    Op("log10", 1, np.log10, _math1("log10", "fa_clog10_{t}({0})"), "base-10 logarithm"),
    Op("log1p", 1, np.log1p, _math1("log1p", "fa_clog1p_{t}({0})"), "log(1 + a), exact near 0"),
    # trigonometric and hyperbolic
    Op("sin", 1, np.sin, _math1("sin", "fa_csin_{t}({0})"), "sine"),
    Op("cos", 1, np.cos, _math1("cos", "fa_ccos_{t}({0})"), "cosine"),
    Op("tan", 1, np.tan, _math1("tan", "fa_ctan_{t}({0})"), "tangent"),
    Op("arcsin", 1, np.arcsin, _math1("asin", "fa_casin_{t}({0})"), "inverse sine",
       aliases=("asin",)),
    Op("arccos", 1, np.arccos, _math1("acos", "fa_cacos_{t}({0})"), "inverse cosine",
       aliases=("acos",)),
    Op("arctan", 1, np.arctan, _math1("atan", "fa_catan_{t}({0})"), "inverse tangent",
       aliases=("atan",)),
    Op("arctan2", 2, np.arctan2, _t(f="math.atan2({0}, {1})"), "angle of (b, a)",
       aliases=("atan2",)),
    Op("sinh", 1, np.sinh, _math1("sinh", "fa_csinh_{t}({0})"), "hyperbolic sine"),
    Op("cosh", 1, np.cosh, _math1("cosh", "fa_ccosh_{t}({0})"), "hyperbolic cosine"),
    Op("tanh", 1, np.tanh, _math1("tanh", "fa_ctanh_{t}({0})"), "hyperbolic tangent"),
    Op("arcsinh", 1, np.arcsinh, _math1("asinh", "fa_casinh_{t}({0})"), "inverse hyperbolic sine",
       aliases=("asinh",)),
    Op("arccosh", 1, np.arccosh, _math1("acosh", "fa_cacosh_{t}({0})"), "inverse hyperbolic cosine",
       aliases=("acosh",)),
    Op("arctanh", 1, np.arctanh, _math1("atanh", "fa_catanh_{t}({0})"),
       "inverse hyperbolic tangent", aliases=("atanh",)),
    Op("hypot", 2, np.hypot, _t(f="math.hypot({0}, {1})"), "sqrt(a*a + b*b) without overflow"),
    # rounding
    Op("floor", 1, np.floor, _rounding("floor"), "round down"),
    Op("ceil", 1, np.ceil, _rounding("ceil"), "round up"),
    Op("trunc", 1, np.trunc, _rounding("trunc"), "round toward zero"),
    Op("rint", 1, np.rint, _rounding("rint", "fa_crint_{t}({0})"), "round half to even"),
    # extrema and selection
    Op("maximum", 2, np.maximum, _t(any="fa_maximum({0}, {1})"), "larger; NaN propagates"),
    Op("minimum", 2, np.minimum, _t(any="fa_minimum({0}, {1})"), "smaller; NaN propagates"),
    Op("fmax", 2, np.fmax, _t(any="fa_fmax({0}, {1})"), "larger; NaN ignored"),
    Op("fmin", 2, np.fmin, _t(any="fa_fmin({0}, {1})"), "smaller; NaN ignored"),
    Op("clip", 3, np.clip, _t(any="fa_minimum(fa_maximum({0}, {1}), {2})"),
       "minimum(maximum(a, lo), hi)", rule="clip"),
    Op("copy", 1, np.copy, _t(any="{0}", c="{0}"), "a copy in new memory", rule="same"),
    Op("where", 3, np.where, _t(any="({1} if {0} else {2})", c="({1} if {0} else {2})"),
       "b where cond else c",
       rule="where"),
    Op("copysign", 2, np.copysign, _t(f="math.copysign({0}, {1})"), "|a| with the sign of b"),
    # {bits} is the loop dtype's width: float16 steps in float16's spacing, not its float32's
    Op("nextafter", 2, np.nextafter, _t(f="fa_nextafter_f{bits}({0}, {1})"),
       "the next float after a toward b (one step of the dtype's spacing)"),
    # predicates
    Op("isnan", 1, np.isnan, _t(f="({0} != {0})", any="False", c="({0} != {0})"),
       "a is NaN (complex: either part)"),
    Op("isinf", 1, np.isinf, _t(f="math.isinf({0})", any="False", c="cmath.isinf({0})"),
       "a is +-inf (complex: either part, as NumPy)"),
    Op("isfinite", 1, np.isfinite,
       _t(f="(({0} - {0}) == ({0} - {0}))", any="True", c="cmath.isfinite({0})"),
       "a is neither NaN nor +-inf"),
    Op("signbit", 1, np.signbit,
       _t(f="(math.copysign(1.0, {0}) < 0.0)", i="({0} < 0)", any="False"), "sign bit set"),
    # logic
    Op("logical_and", 2, np.logical_and, _logic("(({0} != 0) & ({1} != 0))"), "a and b"),
    Op("logical_or", 2, np.logical_or, _logic("(({0} != 0) | ({1} != 0))"), "a or b"),
    Op("logical_xor", 2, np.logical_xor, _logic("(({0} != 0) ^ ({1} != 0))"), "a xor b"),
    Op("logical_not", 1, np.logical_not, _logic("({0} == 0)"), "not a"),
    # comparisons
    Op("equal", 2, np.equal, _cmp("equal", "=="), "a == b", dunder="__eq__", reflected=False),
    Op("not_equal", 2, np.not_equal, _cmp("not_equal", "!="), "a != b", dunder="__ne__",
       reflected=False),
    Op("less", 2, np.less, _cmp("less", "<"), "a < b", dunder="__lt__", reflected=False),
    Op("less_equal", 2, np.less_equal, _cmp("less_equal", "<="), "a <= b", dunder="__le__",
       reflected=False),
    Op("greater", 2, np.greater, _cmp("greater", ">"), "a > b", dunder="__gt__",
       reflected=False),
    Op("greater_equal", 2, np.greater_equal, _cmp("greater_equal", ">="), "a >= b",
       dunder="__ge__", reflected=False),
    # bits
    Op("bitwise_and", 2, np.bitwise_and, _t(any="({0} & {1})"), "a & b", dunder="__and__"),
    Op("bitwise_or", 2, np.bitwise_or, _t(any="({0} | {1})"), "a | b", dunder="__or__"),
    Op("bitwise_xor", 2, np.bitwise_xor, _t(any="({0} ^ {1})"), "a ^ b", dunder="__xor__"),
    Op("invert", 1, np.invert, _t(any="(~{0})", b="(not {0})"), "~a (logical not for bool)",
       dunder="__invert__", reflected=False, aliases=("bitwise_not", "bitwise_invert")),
    Op("left_shift", 2, np.left_shift,
       _t(i="fa_shl_i({0}, {1}, {bits})", u="fa_shl_u({0}, {1}, {bits})"),
       "a << b; shifts past the width give 0", dunder="__lshift__",
       aliases=("bitwise_left_shift",)),
    Op("right_shift", 2, np.right_shift,
       _t(i="fa_shr_i({0}, {1}, {bits})", u="fa_shr_u({0}, {1}, {bits})"),
       "a >> b; shifts past the width give 0 or -1", dunder="__rshift__",
       aliases=("bitwise_right_shift",)),
    # added with the namespace: NumPy ufuncs the op table lacked
    Op("conjugate", 1, np.conjugate, _t(any="{0}", c="{0}.conjugate()"),
       "complex conjugate: a itself for real dtypes", aliases=("conj",)),
    # NumPy's np.real and np.imag are functions, not ufuncs: rule "part" gives a complex
    # operand's real dtype and keeps a real one's
    Op("real", 1, np.real, _t(any="{0}", c="{0}.real"),
       "the real part: a itself for real dtypes", rule="part"),
    Op("imag", 1, np.imag, _t(any="cv_{t}(0)", c="{0}.imag"),
       "the imaginary part: zeros of a's dtype for real dtypes", rule="part"),
    Op("fabs", 1, np.fabs, _t(f="abs({0})"), "|a| as a float"),
    Op("logaddexp", 2, np.logaddexp, _t(f="fa_logaddexp_{t}({0}, {1})"),
       "log(exp(a) + exp(b)) without overflow"),
    Op("logaddexp2", 2, np.logaddexp2, _t(f="fa_logaddexp2_{t}({0}, {1})"),
       "log2(2**a + 2**b) without overflow"),
    Op("deg2rad", 1, np.deg2rad, _t(f="fa_deg2rad_{t}({0})"), "degrees to radians"),
    Op("radians", 1, np.radians, _t(f="fa_deg2rad_{t}({0})"), "degrees to radians"),
    Op("rad2deg", 1, np.rad2deg, _t(f="fa_rad2deg_{t}({0})"), "radians to degrees"),
    Op("degrees", 1, np.degrees, _t(f="fa_rad2deg_{t}({0})"), "radians to degrees"),
    Op("fmod", 2, np.fmod,
       _t(i="fa_cfmod_i({0}, {1})", u="fa_mod_u({0}, {1})", f="fa_fmod_{t}({0}, {1})"),
       "C's remainder, with the sign of a; integer fmod by zero gives 0"),
    Op("bitwise_count", 1, np.bitwise_count, _t(i="fa_popcount_i({0})", u="fa_popcount_u({0})"),
       "number of 1 bits in |a|"),
    Op("heaviside", 2, np.heaviside, _t(f="fa_heaviside_{t}({0}, {1})"),
       "0 where a < 0, b where a == 0, 1 where a > 0; NaN stays"),
    Op("float_power", 2, np.float_power, _t(f="({0} ** {1})"), "a ** b in float64"),
    Op("gcd", 2, np.gcd, _t(i="fa_gcd_i({0}, {1})", u="fa_gcd_u({0}, {1})"),
       "greatest common divisor of |a| and |b|"),
    Op("lcm", 2, np.lcm, _t(i="fa_lcm_i({0}, {1})", u="fa_lcm_u({0}, {1})"),
       "least common multiple of |a| and |b|"),
    # fa.special: SciPy's ufuncs (scipy.special.<name>(x) on a fa array dispatches here)
    _special("erf", "math.erf({0})", "error function", "f64 f32"),
    _special("erfc", "math.erfc({0})", "1 - erf(a), exact for large a", "f64 f32"),
    _special("erfinv", "fa_erfinv_{t}({0})", "inverse error function", "f32 f64"),
    _special("expit", "fa_expit_{t}({0})", "logistic sigmoid 1 / (1 + exp(-a))", "f64 f32"),
    _special("logit", "fa_logit_{t}({0})", "log(a / (1 - a)), the inverse of expit",
             "f64 f32"),
    _special("gammaln", "math.lgamma({0})", "log |gamma(a)|", "f64 f32"),
]

OPS: dict[str, Op] = {row.name: row for row in _ROWS}
ALIASES: dict[str, str] = {alias: row.name for row in _ROWS for alias in row.aliases}
# NumPy's ufuncs that are no row, and why (the README's coverage table reads this).
LEFT_OUT: dict[str, str] = {
    "divmod": "two results; `a // b` and `a % b` fuse into one kernel",
    "frexp": "two results (mantissa, exponent)",
    "modf": "two results; `a - trunc(a)` and `trunc(a)` fuse into one kernel",
    "ldexp": "needs exact scaling past the exponent range (two steps of 2**k); not yet",
    "spacing": "not in the Array API: `fa.nextafter(x, fa.copysign(fa.inf, x)) - x`",
    "isnat": "datetime dtypes are not supported",
    "matmul": "a product, not elementwise: `fa.matmul` / `@` (unfused)",
    "matvec": "a product, not elementwise: `fa.matmul`",
    "vecmat": "a product, not elementwise: `fa.matmul`",
    "vecdot": "a product, not elementwise: `fa.vecdot` (unfused)",
}
BY_UFUNC: dict[object, Op] = {row.ref: row for row in _ROWS if isinstance(row.ref, np.ufunc)}
SPECIAL: dict[str, Op] = {row.name: row for row in _ROWS if row.module == "special"}


def _kind(dtype: np.dtype) -> str:
    return _dtypes.kind(dtype)   # "f" for the training formats too


def template_kind(row: Op, loop: tuple[np.dtype, ...]) -> str:
    """Which of a row's templates serves this loop (see the module docstring)."""
    if row.rule == "part":
        return _kind(loop[0])
    if row.rule != "ufunc":
        return _kind(loop[-1])
    kinds = {_kind(d) for d in loop[:row.nin]}
    return "".join(_kind(d) for d in loop[:row.nin]) if len(kinds) > 1 else _kind(loop[0])


# Loops whose template, on operands of the loop's compute types, already has the result's compute
# type in every backend — numba's CUDA and CPU typing, and NumPy scalars in the simulator — so
# codegen writes no cast around it (each cast is one more call for numba to type and lower, ~0.5
# ms a kernel line). Keyed by op, the dtype codes ``c`` of the *uniform* loops: every input ``c``
# (``where``: its condition bool, both branches ``c``). Not listed, and kept: small integers
# (numba computes ``int8 + int8`` in int64), float16 results (the cast rounds), ``1.0 / float32``
# (float64 in numba), ``not b`` (a Python bool in the simulator), literal results (``isnan`` of
# an integer is the constant False). tests/ptx/test_typed_loops.py derives this table from the
# backends and fails, printing the new one, when it drifts.
_ALL = "b1 i8 i16 i32 i64 u8 u16 u32 u64 f32 f64"
_FLOATS, _WIDE = "f32 f64", "i64 u64 f32 f64"
_HALF = "f16 bf16 e4m3 e5m2"   # ir/dtypes.ROUNDED: their comparisons and tests type as float32's
_CMP = "b1 i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 " + _HALF
_CX = " c64 c128"   # complex templates and helpers keep their type
TYPED: dict[str, frozenset[str]] = {name: frozenset(codes.split()) for name, codes in {
    "add": "b1 " + _WIDE + _CX, "subtract": _WIDE + _CX, "multiply": "b1 " + _WIDE + _CX,
    "true_divide": _FLOATS + _CX, "floor_divide": _WIDE, "remainder": _WIDE,
    "power": _WIDE + _CX, "negative": _WIDE + _CX, "positive": _ALL.removeprefix("b1 ") + _CX,
    "absolute": _ALL + _CX, "sign": _WIDE + _CX, "reciprocal": "i64 u64 f64" + _CX,
    "square": _WIDE + _CX,
    **{name: _FLOATS + _CX for name in (
        "sqrt", "exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh")},
    **{name: _FLOATS + _CX for name in ("expm1", "log2", "log10", "log1p", "rint")},
    **{name: _FLOATS for name in ("cbrt", "exp2", "arctan2", "hypot", "copysign", "nextafter")},
    **{name: _FLOATS + _CX for name in (
        "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh")},
    **{name: _ALL for name in ("floor", "ceil", "trunc", "maximum", "minimum", "fmax", "fmin",
                               "clip")},
    **{name: _ALL + _CX for name in ("copy", "where", "real", "imag")},
    **{name: "f32 f64 " + _HALF + _CX for name in ("isnan", "isinf", "isfinite")},
    "signbit": "f32 f64 " + _HALF,
    **{name: _CMP + _CX for name in ("logical_and", "logical_or", "logical_xor", "logical_not",
                                     "equal", "not_equal", "less", "less_equal", "greater",
                                     "greater_equal")},
    **{name: "b1 i64 u64" for name in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    **{name: "i64 u64" for name in ("invert", "left_shift", "right_shift", "gcd", "lcm")},
    "conjugate": _ALL.removeprefix("b1 ") + _CX, "float_power": "f64", "fmod": _WIDE,
    **{name: _FLOATS for name in ("deg2rad", "rad2deg", "radians", "degrees", "fabs",
                                  "heaviside", "logaddexp", "logaddexp2", "erf", "erfc",
                                  "erfinv", "expit", "logit", "gammaln")},
}.items()}


def keeps_type(name: str, loop: tuple[str, ...]) -> bool:
    """Whether op ``name``'s template on the loop ``loop`` (dtype codes, in… out) already yields
    the result's compute type, so that a cast to it would change nothing (see :data:`TYPED`)."""
    inputs = loop[1:-1] if name == "where" else loop[:-1]
    return (loop[-1] not in ROUNDED and len(set(inputs)) == 1
            and inputs[0] in TYPED.get(name, ()))
