"""Op-table rows → ``fa.<name>`` functions, array operators and ``__array_ufunc__``.

Everything here iterates :data:`ops.OPS`: each row becomes a module-level function (``fa.sqrt``),
its operator methods on ``fa.ndarray`` (``__add__``, ``__radd__``, ``__iadd__``), and the target
of ``np.<ufunc>(x)`` (``api/ufuncs.py`` reads the call's keywords). Result dtypes follow NumPy
(``ufunc.resolve_dtypes``, Python scalars weak).
"""

from __future__ import annotations

import functools
import sys

import numpy as np

from ..errors import UnsupportedOperationError
from ..ir import dtypes, graph, ops, scalarops
from ..ir.native import fastgraph
from . import products
from .array import (
    ScalarParam,
    _as_node,
    _check_node_limit,
    _tracing,
    _wrap,
    asarray,
    ndarray,
    runtime_write,
)

_CODES = dtypes.CODES

_LOOPS: dict[tuple, tuple] = {}   # (op, operand dtype codes or weak Python types) → loop dtypes
# The same keys → the op node's attributes ``(name, loop)`` as graph.op normalises them, for the
# operator path: it builds the node with graph.op_of, converting nothing.
_ATTRS: dict[tuple, tuple] = {}


def _operand_types(args) -> list:
    types = []
    for a in args:
        if isinstance(a, ndarray):
            types.append(a.dtype)
        elif isinstance(a, (bool, int, float, complex, np.generic)):
            types.append(dtypes.scalar_type(a))
        elif isinstance(a, ScalarParam):
            types.append(dtypes.scalar_type(a.example))
        else:
            types.append(asarray(a).dtype)
    return types


def loop_dtypes(row: ops.Op, types: list) -> tuple[np.dtype, ...]:
    """NumPy's loop dtypes (in..., out) for ``row`` on operands of ``types``."""
    if row.rule == "ufunc":
        loop = dtypes.resolve(row.ref, row.name, types)
    elif row.rule == "where":
        common = dtypes.promote(types[1:])
        loop = (np.dtype(np.bool_), common, common, common)
    elif row.rule == "loops":   # as NumPy resolves SciPy's ufuncs: the operand's own loop,
        # else the first one it casts to safely
        floats = [dtypes.BY_CODE[code] for code in row.loops]
        strong = not isinstance(types[0], dtypes.Weak)
        # a training format keeps its dtype, computed in float32 (JAX's scipy.special)
        loop = ((types[0],) * 2 if dtypes.is_minifloat(types[0]) else None) or next(
            ((dt, dt) for dt in floats if strong and dt == types[0]), None) or next(
            ((dt, dt) for dt in floats if strong and np.can_cast(types[0], dt)), None)
        if loop is None:
            dt = dtypes.BY_CODE[row.loops[0]]
            if not isinstance(types[0], dtypes.Weak):
                raise UnsupportedOperationError(f"{row.name} is not defined for {types[0]}")
            loop = (dt, dt)   # a Python scalar: the first loop, as SciPy takes a float
    elif row.rule == "clip":
        common = dtypes.promote(types)
        loop = (common,) * 4
    elif row.rule == "part":   # np.real, np.imag: a complex operand's real dtype
        dt = dtypes.promote(types[:1])
        loop = (dt, dtypes.BY_CODE[dtypes.COMPLEX_PART.get(dtypes.CODES[dt], dtypes.CODES[dt])])
    else:  # "same": the operand's own dtype
        loop = (types[0],) * 2
    if row.template(ops.template_kind(row, loop)) is None:
        shown = ", ".join(str(t) for t in types)
        hint = (f"; fusedarrays computes {row.name} on real dtypes only: compute on the real "
                f"and imaginary parts (fa.real, fa.imag), or on the host with NumPy"
                if any(d.kind == "c" for d in loop) else "")
        raise UnsupportedOperationError(
            f"{row.name} is not supported for ({shown}){hint}; see "
            f"fusedarrays.ir.ops.OPS['{row.name}']")
    return loop


def build(row: ops.Op, args) -> graph.Node:
    """The graph node of ``row`` applied to ``args`` (arrays, NumPy data or scalars)."""
    if len(args) != row.nin:
        raise TypeError(f"{row.name} takes {row.nin} operand(s), got {len(args)}")
    node = _build_cached(row, args)
    if node is not None:
        return node
    arrays = [a if isinstance(a, (ndarray, bool, int, float, complex, np.generic, ScalarParam))
              else asarray(a) for a in args]
    types = _operand_types(arrays)
    # NumPy's resolution costs microseconds and depends only on the op and operand types.
    type_key = (row.name, *[t.pytype if isinstance(t, dtypes.Weak) else dtypes.CODES[t]
                            for t in types])
    loop = _LOOPS.get(type_key)
    if loop is None:
        loop = _LOOPS[type_key] = loop_dtypes(row, types)
    inputs = []
    for a, want in zip(arrays, loop):
        value = a.example if isinstance(a, ScalarParam) else a   # a traced scalar types as this
        if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
            if not isinstance(value, bool):
                dtypes.check_scalar_fits(value, want, row.name)
            inputs.append(scalarops.number_scalar(a, want))
        else:
            inputs.append(_as_node(a))
    node = graph.op(row.name, tuple(inputs), loop)
    found = _ATTRS[type_key] = (node.attrs, graph.attrs_id(node.attrs))
    if row.nin <= 2:
        kinds = [a._node.dtype if type(a) is ndarray else type(a) for a in args]
        if all(k is float or k is int or isinstance(k, np.dtype) for k in kinds):
            # the dtypes ride along in the value: their ids can't be reused while it lives
            python = [k for k, kind in enumerate(kinds) if kind is float or kind is int]
            if row.nin == 1 or not python:
                if fastgraph is not None:
                    OPERATORS[row.name].remember(-1, kinds[0], kinds[1] if row.nin == 2 else
                                                 None, *found, None, 0, False)
                else:
                    _FAST[row.name][tuple(map(id, kinds)) if row.nin == 2 else id(kinds[0])] = (
                        *found, kinds)
            elif len(python) == 1:   # an array and a Python scalar: the scalar's dtype and sid
                k = python[0]
                if fastgraph is not None:
                    OPERATORS[row.name].remember(
                        _NATIVE_KINDS[k, kinds[k]], kinds[1 - k], None, *found, loop[k],
                        graph.scalar_sid(loop[k]), kinds[k] is int and loop[k].kind in "iu")
                else:
                    _FAST_SCALAR[row.name][k, kinds[k]][id(kinds[1 - k])] = (
                        *found, kinds, loop[k], graph.scalar_sid(loop[k]))
    return node


def _build_cached(row: ops.Op, args) -> graph.Node | None:
    """:func:`build` for the common case: arrays and Python floats or ints whose loop dtypes
    were resolved before. None where the general path must run."""
    type_key = [row.name]
    for a in args:
        kind = type(a)
        if kind is ndarray:
            type_key.append(_CODES[a._node.dtype])
        elif kind is float or kind is int:
            type_key.append(kind)                 # as the general path keys a weak scalar
        else:
            return None
    found = _ATTRS.get(tuple(type_key))
    if found is None:
        return None
    attrs, aid = found
    inputs = []
    for a, want in zip(args, attrs[1]):
        kind = type(a)
        if kind is ndarray:
            inputs.append(a._resolved())
        else:
            if kind is int:
                dtypes.check_scalar_fits(a, want, row.name)
            inputs.append(scalarops.number_scalar(a, want))
    return graph.op_of(tuple(inputs), attrs, aid)


# Per binary op: (id of each operand's dtype, or of float / int for a Python scalar) → (attrs,
# attrs id, the dtypes). Identities, since hashing a NumPy dtype costs more than a dict look-up;
# a dtype object seen for the first time takes the general path once (build), which fills this.
_FAST: dict[str, dict] = {row.name: {} for row in ops.OPS.values() if row.nin <= 2}
# Per binary op and (the Python scalar's position, its type): the array's dtype identity →
# (attrs, attrs id, the kinds, the scalar's dtype, the scalar's sid). One dict per case, so a
# look-up hashes one int, not a tuple.
_FAST_SCALAR: dict[str, dict] = {row.name: {(k, t): {} for k in (0, 1) for t in (float, int)}
                                 for row in ops.OPS.values() if row.nin == 2}


def _binary_method(row: ops.Op, reflected: bool = False):
    """``a <op> b`` as an operator method (``b <op> a`` where ``reflected``): :func:`apply`
    without ``out``, with the common case (arrays and Python scalars whose loop was resolved
    before) written out, as it runs on every operator call: look up the loop by the operands'
    dtype identities, build the node, wrap. In C where the extension is built."""
    if fastgraph is not None:   # the same cases, in C (a reflected call: its operands swapped)
        native = OPERATORS[row.name]
        if reflected:
            return lambda b, a: native(a, b)
        return lambda a, b: native(a, b)    # a function: installed on the class, it binds
    fast, name = _FAST[row.name], row.name
    scalar = _FAST_SCALAR[row.name]
    right_float, right_int = scalar[1, float], scalar[1, int]
    left_float, left_int = scalar[0, float], scalar[0, int]

    def method(a, b):
        ka, kb = type(a), type(b)
        if ka is ndarray:
            na = a._node
            if kb is ndarray:
                nb = b._node
                found = fast.get((id(na.dtype), id(nb.dtype)))
                if found is not None:
                    if na.realized is not None:
                        na = a._resolved()
                    if nb.realized is not None:
                        nb = b._resolved()
                    return _wrap(graph.op_of((na, nb), found[0], found[1]))
            elif kb is float:
                found = right_float.get(id(na.dtype))
                if found is not None:
                    if na.realized is not None:
                        na = a._resolved()
                    return _wrap(scalarops.op_scalar(na, b, found[3], found[4], found[0],
                                                     found[1]))
            elif kb is int:
                found = right_int.get(id(na.dtype))
                if found is not None:
                    if na.realized is not None:
                        na = a._resolved()
                    dtypes.check_scalar_fits(b, found[3], name)
                    return _wrap(scalarops.op_scalar(na, b, found[3], found[4], found[0],
                                                     found[1]))
        elif kb is ndarray and (ka is float or ka is int):
            return scalar_first(a, b)
        return apply(row, a, b)

    def scalar_first(a, b):
        """``a <op> b`` for a Python scalar ``a`` and an array ``b``."""
        ka, nb = type(a), b._node
        found = (left_float if ka is float else left_int).get(id(nb.dtype))
        if found is None:
            return apply(row, a, b)
        if nb.realized is not None:
            nb = b._resolved()
        if ka is int:
            dtypes.check_scalar_fits(a, found[3], name)
        return _wrap(scalarops.op_scalar(nb, a, found[3], found[4], found[0], found[1], True))

    if reflected:   # b.__r<op>__(a): mostly a Python scalar a, one call straight to its case
        def reflected_method(b, a):
            ka = type(a)
            if (ka is float or ka is int) and type(b) is ndarray:
                return scalar_first(a, b)
            return method(a, b)
        return reflected_method
    return method


def _unary_method(row: ops.Op):
    """``fa.<op>(x)`` / ``-x`` on an array whose loop was resolved before, written out."""
    fast = _FAST[row.name]
    if fastgraph is not None:   # the same case, in C
        native = OPERATORS[row.name]

        def method(a, out=None):
            return native(a) if out is None else apply(row, a, out=out)
        return method

    def method(a, out=None):
        if type(a) is ndarray and out is None:
            node = a._node
            found = fast.get(id(node.dtype))
            if found is not None:
                if node.realized is not None:
                    node = a._resolved()
                return _wrap(graph.op_of((node,), found[0], found[1]))
        return apply(row, a, out=out)
    return method


def apply(row: ops.Op, *args, out=None):
    node = build(row, args)
    if out is None:
        return _wrap(node)
    out = out[0] if isinstance(out, tuple) else out
    if not isinstance(out, ndarray):
        raise UnsupportedOperationError(f"{row.name}: out= must be a fa.ndarray, got "
                                        f"{type(out).__name__}")
    _check_cast(row, node.dtype, out.dtype)
    runtime_write(out._destination(), node)
    return out


# The C operator path (ir/native.py): one Operator per row of at most two operands, told each
# loop the Python path above resolved (build), its fallback that Python path. Its kinds of
# scalar entries, by (position, Python type), as ir/fastgraph/operators.c numbers them.
_NATIVE_KINDS = {(1, float): 0, (1, int): 1, (0, float): 2, (0, int): 3}
OPERATORS: dict = {} if fastgraph is None else {
    row.name: fastgraph.Operator(row.name, row.nin, functools.partial(apply, row),
                                 dtypes.check_scalar_fits)
    for row in ops.OPS.values() if row.nin <= 2}


def _check_cast(row: ops.Op, have: np.dtype, want: np.dtype) -> None:
    if not np.can_cast(have, want, "same_kind"):
        raise UnsupportedOperationError(
            f"Cannot cast {row.name} output from {have} to {want} with casting rule "
            f"'same_kind'; compute into a new array or use .astype()")


def inplace(row: ops.Op, target: ndarray, other) -> ndarray:
    """``target <op>= other``. A pending target that is no view and has none stays pending:
    its node becomes ``target <op> other`` (cast back to its dtype), the same object, so every
    name bound to it sees the change and nothing runs. Computing it first and writing into it
    gave the same values at the cost of a launch; keeping it pending lets ``x[idx] += v``
    reach the write as one expression (api/scatter.py)."""
    if (target._view_of is None and target._views is None and _tracing.tracer is None
            and target.pending):
        node = build(row, (target, other))
        _check_cast(row, node.dtype, target.dtype)
        target._node = graph.cast(node, target.dtype)
        _check_node_limit(target._node, target)
        return target
    apply(row, target, other, out=target)
    return target


def _function(row: ops.Op):
    if row.nin == 1:
        fn = _unary_method(row)
    elif row.nin == 2:
        method = _binary_method(row)

        def fn(a, b, out=None):
            return method(a, b) if out is None else apply(row, a, b, out=out)
    else:
        def fn(*args, out=None):
            return apply(row, *args, out=out)
    fn.__name__ = row.name
    fn.__qualname__ = row.name
    fn.__doc__ = f"{row.doc}. Elementwise and lazy; values and dtypes as ``np.{row.name}``."
    return fn


FUNCTIONS = {row.name: _function(row) for row in ops.OPS.values() if not row.module}
FUNCTIONS.update({alias: FUNCTIONS[name] for alias, name in ops.ALIASES.items()})
# fa.special's functions (api/special.py), from the rows of that module
SPECIAL = {name: _function(row) for name, row in ops.SPECIAL.items()}


def _install_operators() -> None:
    # in C, the array type's own slots (forward and reflected) where the extension is built
    slots = set(fastgraph.slot_dunders()) if fastgraph is not None else set()
    if slots:
        fastgraph.install_operators({row.dunder: OPERATORS[row.name] for row in ops.OPS.values()
                                     if row.dunder in slots})
    for row in ops.OPS.values():
        if row.dunder is None:
            continue
        name = row.dunder.strip("_")
        if row.nin == 2 and row.reflected:
            setattr(ndarray, f"__i{name}__", lambda self, other, _r=row: inplace(_r, self, other))
        if row.dunder in slots:
            continue
        if row.nin == 1:
            setattr(ndarray, row.dunder, _unary_method(row))
            continue
        setattr(ndarray, row.dunder, _binary_method(row))
        if row.reflected:
            setattr(ndarray, f"__r{name}__", _binary_method(row, reflected=True))


_install_operators()


def _fast_power(a, b) -> str | None:
    """The unary op NumPy's ``ndarray`` operator computes ``a ** b`` with, if any: to the
    Python int 2 every numeric array is ``square``d; a floating (or complex) one to the int -1
    or the float 0.5 takes ``reciprocal`` or ``sqrt`` (NumPy's fast_scalar_power; ``np.power``
    itself has no such rule). The same bits as NumPy, and no ``pow`` per element: the
    ``(x - mu) ** 2`` of a variance is one multiply."""
    if type(a) is not ndarray:
        return None
    kind, tb = a.dtype.kind, type(b)
    if tb is int and b == 2 and kind in "biufc":
        return "square"
    if kind in "fc" and ((tb is int and b == -1) or (tb is float and b == 0.5)):
        return "reciprocal" if tb is int else "sqrt"
    return None


def _power(a, b, _generic=ndarray.__pow__):
    fast = _fast_power(a, b)
    return _generic(a, b) if fast is None else FUNCTIONS[fast](a)


def _ipower(a, b):
    fast = _fast_power(a, b)
    return inplace(ops.OPS["power"], a, b) if fast is None else FUNCTIONS[fast](a, out=a)


ndarray.__pow__, ndarray.__ipow__ = _power, _ipower


# ufunc method name → its handler(ufunc, inputs, kwargs): "__call__", "reduce", "accumulate",
# "outer" (api/ufuncs.py, which installs ndarray.__array_ufunc__), "at" (api/scatter.py)
UFUNC_METHODS: dict = {}


# NumPy's product ufuncs: fa.matmul (a product kernel, not fused), fa.vecdot (a reduction)
_PRODUCTS = {np.matmul: products.matmul, np.vecdot: products.vecdot}


def _scipy_row(ufunc) -> ops.Op | None:
    """The ``fa.special`` row of ``scipy.special.<name>`` (SciPy is imported by then, if it is
    the caller's ufunc), else None."""
    row = ops.SPECIAL.get(getattr(ufunc, "__name__", ""))
    module = sys.modules.get("scipy.special")
    if row is not None and module is not None and getattr(module, row.name, None) is ufunc:
        return row
    return None
