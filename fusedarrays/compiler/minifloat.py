"""The training formats' conversions as device code: bfloat16, float8_e4m3fn, float8_e5m2.

Owns how kernels load, store and round ml_dtypes' formats (``ir/dtypes.py``: ``bf16``, ``e4m3``,
``e5m2``). Values are float32 in kernels (the formats' compute type); memory holds their bits,
read and written as ``uint16``/``uint8`` (``ld_u16`` …), so no backend needs a type of its own.
The helpers are plain Python over integer bit patterns (``fa_f32_bits`` / ``fa_bits_f32``, each
backend's bit reinterpretation), compiled by every backend like :mod:`.devicelib`'s: one text, so
the cpu, sim and cuda kernels round alike, bit for bit. Float arithmetic is avoided on purpose:
NVVM contracts ``a * b - c`` into an fma, which would break a rounding trick.

Rounding is ml_dtypes' (checked bit for bit against its casts in tests/minifloatcases.py): the
float32 value rounded to nearest even (any other input is made float32 first, as ml_dtypes'
casts do: a float64 is rounded twice); bfloat16 and float8_e5m2 overflow to inf and keep a NaN's
sign as their quiet NaN (0x7FC0, 0x7E); float8_e4m3fn has no inf: an inf, a NaN and anything
that rounds past 448 becomes its NaN 0x7F (with the sign). Decoding is exact; a float8 NaN gives
float32's quiet NaN with its sign, a bfloat16 one its own bits (ml_dtypes' both).

:func:`bind` names the helpers in a backend's namespace: ``ld_<c>``, ``st_<c>``, ``cv_<c>``
(to float32 rounded to the format), ``sh_<c>`` (a shared-memory tile's element type: float32).
"""

from __future__ import annotations

from functools import cache

CODES = ("bf16", "e4m3", "e5m2")
WORDS = {"bf16": "u16", "e4m3": "u8", "e5m2": "u8"}   # the unsigned type of each format's bits

_BF16 = '''
def fa_f32_bf16(x):
    b = cv_i64(fa_f32_bits(cv_f32(x))) & cv_i64(0xFFFFFFFF)
    if (b & cv_i64(0x7FFFFFFF)) > cv_i64(0x7F800000):
        return ((b >> cv_i64(16)) & cv_i64(0x8000)) | cv_i64(0x7FC0)
    return (b + cv_i64(0x7FFF) + ((b >> cv_i64(16)) & cv_i64(1))) >> cv_i64(16)

def fa_bf16_f32(h):
    return fa_bits_f32(cv_i32(cv_i64(h) << cv_i64(16)))
'''

# One float8 format: M mantissa bits, bias B; normal shift 23 - M; below 2**LOW rounds to 0.
_FLOAT8 = '''
def fa_f32_{c}(x):
    b = cv_i64(fa_f32_bits(cv_f32(x))) & cv_i64(0xFFFFFFFF)
    sign = (b >> cv_i64(24)) & cv_i64(0x80)
    a = b & cv_i64(0x7FFFFFFF)
    if a > cv_i64(0x7F800000):
        return sign | cv_i64({nan})
    if a == cv_i64(0x7F800000):
        return sign | cv_i64({inf})
    e = (a >> cv_i64(23)) - cv_i64(127)
    if e < cv_i64({low}):
        return sign
    sig = (a & cv_i64(0x7FFFFF)) | cv_i64(0x800000)
    shift = cv_i64({shift}) + max(cv_i64({emin}) - e, cv_i64(0))
    q = sig >> shift
    rem = sig & ((cv_i64(1) << shift) - cv_i64(1))
    half = cv_i64(1) << (shift - cv_i64(1))
    if rem > half or (rem == half and (q & cv_i64(1)) == cv_i64(1)):
        q += cv_i64(1)
    mag = q + (max(e - cv_i64({emin}), cv_i64(0)) << cv_i64({m}))
    if mag > cv_i64({top}):
        return sign | cv_i64({inf})
    return sign | mag

def fa_{c}_f32(h):
    bits = cv_i64(h)
    mag = bits & cv_i64(0x7F)
    e = mag >> cv_i64({m})
    frac = mag & cv_i64({fmask})
    if {special}:
        u = {special_bits}
    elif e == cv_i64(0):
        u = cv_i64(fa_f32_bits(cv_f32(frac) * cv_f32({tiny})))
    else:
        u = ((e + cv_i64({rebias})) << cv_i64(23)) | (frac << cv_i64({up}))
    return fa_bits_f32(cv_i32(u | ((bits & cv_i64(0x80)) << cv_i64(24))))
'''

_E4M3 = dict(c="e4m3", m=3, emin=-6, low=-10, shift=20, nan="0x7F", inf="0x7F", top="0x7E",
             fmask=7, tiny="0.001953125", rebias=120, up=20,
             special="mag == cv_i64(0x7F)", special_bits="cv_i64(0x7FC00000)")
_E5M2 = dict(c="e5m2", m=2, emin=-14, low=-17, shift=21, nan="0x7E", inf="0x7C", top="0x7B",
             fmask=3, tiny="1.52587890625e-05", rebias=112, up=21,
             special="e == cv_i64(31)",
             special_bits="cv_i64(0x7F800000) if frac == cv_i64(0) else cv_i64(0x7FC00000)")

_ACCESS = '''
def fa_ld_{c}(p, i):
    return fa_{c}_f32(ld_{w}(p, i))

def fa_st_{c}(p, i, v):
    st_{w}(p, i, fa_f32_{c}(v))

def fa_cv_{c}(x):
    return fa_{c}_f32(fa_f32_{c}(x))
'''


def source() -> str:
    """Every helper of this module as one source text (:mod:`.devicelib` adds it to its own)."""
    text = _BF16 + "".join(_FLOAT8.format(**f) for f in (_E4M3, _E5M2))
    return text + "".join(_ACCESS.format(c=c, w=WORDS[c]) for c in CODES)


@cache
def helpers() -> dict:
    """name → plain Python function of every helper here (what :func:`bind` compiles where a
    backend's namespace lacks them)."""
    namespace: dict = {}
    exec(compile(source(), "<fusedarrays.minifloat>", "exec"), namespace)
    return {name: fn for name, fn in namespace.items() if name.startswith("fa_")}


def bind(ns: dict, float32, compile_helper=None) -> None:
    """Name the helpers in backend namespace ``ns`` as generated code calls them; ``float32`` is
    the backend's float32 type (a shared tile's element type). A helper ``ns`` lacks (a kernel
    compiled with no helper set, as hand-written ones are) is ``compile_helper(fn)``, bound to
    ``ns``: ``ld_bf16`` is in every namespace, as ``ld_f32`` is."""
    missing = {} if compile_helper is None else helpers().keys() - ns.keys()
    for name in missing:
        ns[name] = compile_helper(helpers()[name])
    for c in CODES:
        for op in ("ld", "st", "cv"):
            ns[f"{op}_{c}"] = ns[f"fa_{op}_{c}"]
        ns[f"sh_{c}"] = float32
