"""Rendering ``fa.random`` draws: a plan's ``random`` instructions as device code.

Pure text, called by :mod:`.codegen`. A draw's value at stream index ``g`` is
``fa_rand_<dist>(seed, key, g, ...)`` (:mod:`.devicelib`): Philox4x32-10 of the block ``g //
G`` (``G`` = 4 elements per block for one 32-bit word each, 2 for two words each), then the
word(s) of ``g``'s place in its block turned into the distribution's value. ``g`` is the element's
logical (C-order) index in the draw, never a thread's or a vector's number, so every backend,
schedule and vector width reads the same numbers. A plan's instruction carries ``(dist,
mapping)``: ``mapping`` None when the draw is read in the kernel's own C order (a fresh draw of
the output's shape), else ``(shape, strides, offset)`` mapping the kernel's logical index to the
stream's (a view or a broadcast of a draw; its sizes are then in the kernel's key).

Where the flat walk moves whole vectors (``V`` elements from ``j * V``, ``V`` a multiple of
``G``), the ``V // G`` blocks of a vector are computed once and shared by its lanes, and a
Box-Muller pair once for its two normals: the same numbers as element by element, at a quarter
of the Philox work for 32-bit draws.
"""

from __future__ import annotations

# elements per Philox block, and the compute type the helper returns
GROUP = {"uniform_f32": 4, "normal": 4, "normal_f32": 4, "uniform_f64": 2, "integers": 2}
NATURAL = {"uniform_f32": "f32", "uniform_f64": "f64", "normal": "f64", "normal_f32": "f32",
           "integers": "i64"}


def stream_index(mapping, position: str) -> str:
    """The stream index of the element at the kernel's logical index ``position``."""
    if mapping is None:
        return position
    shape, strides, offset = mapping
    terms, step = [str(offset)], 1
    for extent, stride in zip(reversed(shape), reversed(strides)):
        if extent != 1 and stride != 0:
            terms.append(f"(({position} // {step}) % {extent}) * {stride}")
        step *= extent
    return "(" + " + ".join(terms) + ")"


def _typed(code: str, dist: str, expr: str) -> str:
    return expr if code == NATURAL[dist] else f"cv_{code}({expr})"


def element(code: str, arg: tuple, names: list[str], position: str) -> str:
    """One element's value: ``arg`` = ``(dist, mapping)``, ``names`` the seed, key and the
    distribution's other inputs as rendered values."""
    dist, mapping = arg
    args = ", ".join([names[0], names[1], stream_index(mapping, position), *names[2:]])
    return _typed(code, dist, f"fa_rand_{dist}({args})")


def shares_blocks(arg: tuple, width: int) -> bool:
    """Whether a vector of ``width`` lanes from ``j * width`` can share this draw's blocks."""
    return arg[1] is None and width % GROUP[arg[0]] == 0


def block_lines(var: int, arg: tuple, names: list[str], vector: str, width: int) -> list[str]:
    """The Philox blocks (and Box-Muller pairs) of vector ``vector`` of ``width`` elements."""
    dist = arg[0]
    per = width // GROUP[dist]
    lines = [f"h{var}_{m} = fa_philox_at({names[0]}, {names[1]}, {vector} * {per} + {m})"
             for m in range(per)]
    if dist in ("normal", "normal_f32"):
        bm = "fa_bm" if dist == "normal" else "fa_bm_f32"
        lines += [f"n{var}_{m}_{p} = {bm}(h{var}_{m}[{2 * p}], h{var}_{m}[{2 * p + 1}])"
                  for m in range(per) for p in range(2)]
    return lines


def lane(code: str, var: int, arg: tuple, names: list[str], k: int) -> str:
    """Lane ``k``'s value from the blocks :func:`block_lines` computed."""
    dist = arg[0]
    m, w = divmod(k, GROUP[dist])
    h = f"h{var}_{m}"
    if dist == "uniform_f32":
        expr = f"fa_u01_f32({h}[{w}])"
    elif dist == "normal":
        expr = f"n{var}_{m}_{w // 2}[{w % 2}]"
    elif dist == "normal_f32":
        expr = f"cv_f32(n{var}_{m}_{w // 2}[{w % 2}])"
    elif dist == "uniform_f64":
        expr = f"fa_u01_f64({h}[{2 * w}], {h}[{2 * w + 1}])"
    else:
        expr = (f"(cv_i64({names[2]}) + fa_int_span({h}[{2 * w}], {h}[{2 * w + 1}], "
                f"{names[3]}))")
    return _typed(code, dist, expr)


# A float32 uniform u = k * 2**-24 (k its word's top 24 bits) compared with a value p computed
# outside the element loop is the integer comparison of k with a threshold of p's (philox.py's
# fa_u24_*), which needs no conversion of k to a float (a conversion runs at an eighth of float32's
# rate on the H100: dropout's mask): op → (the threshold's helper, the comparison) for ``u op p``,
# and for ``p op u`` under the op's mirror.
U24_FORMS = {"greater": ("gt", "above"), "greater_equal": ("ge", "above"),
             "less": ("lt", "below"), "less_equal": ("le", "below")}
MIRROR = {"greater": "less", "less": "greater", "greater_equal": "less_equal",
          "less_equal": "greater_equal"}


def u24_comparisons(body, level: dict) -> dict[int, tuple]:
    """var → ``(draw, value, helper, comparison)`` for each instruction of ``body`` comparing a
    float32 uniform draw with a float32 or float64 value of a lower ``level``."""
    draws = {i.var for i in body if i.kind == "random" and i.arg[0] == "uniform_f32"}
    out = {}
    for ins in body:
        if ins.kind != "op" or ins.arg[0] not in U24_FORMS:
            continue
        name, loop = ins.arg
        a, b = ins.inputs
        if loop[0] != loop[1] or loop[0] not in ("f32", "f64") or a == b:
            continue
        if a in draws and level[b] < 2:
            out[ins.var] = (a, b) + U24_FORMS[name]
        elif b in draws and level[a] < 2:
            out[ins.var] = (b, a) + U24_FORMS[MIRROR[name]]
    return out


def u24_thresholds(comparisons: dict) -> dict[int, dict]:
    """The value's var → its thresholds' helpers (a dict as an ordered set), from
    :func:`u24_comparisons`: each computed once, where its value is."""
    out: dict[int, dict] = {}
    for _, value, helper, _ in comparisons.values():
        out.setdefault(value, {})[helper] = None
    return out


def u24_word(var: int, arg: tuple, names: list[str], position: str, lane: int | None) -> str:
    """The 32-bit word of a float32 uniform draw: lane ``lane``'s of the blocks
    :func:`block_lines` computed (``lane`` None: the element at ``position``'s own block)."""
    if lane is not None:
        m, w = divmod(lane, GROUP[arg[0]])
        return f"h{var}_{m}[{w}]"
    return f"fa_rand_word({names[0]}, {names[1]}, {stream_index(arg[1], position)})"
