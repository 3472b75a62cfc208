"""``einsum`` (``fa.einsum``, ``np.einsum`` on fa arrays) and ``np.einsum_path``.

Where it sits: over :mod:`.array`, :mod:`.reductions` and :mod:`.products`; re-exported by the
namespace, behind ``np.einsum`` (``api/npfunctions.py``) and so ``xr.dot``. NumPy's subscript
grammar whole: explicit ``->`` or the implicit output (the labels seen once, sorted, after the
ellipsis dimensions), ``...`` broadcasting, a label repeated in one operand (its diagonal), any
number of operands, NumPy's interleaved form ``einsum(x, [0, 1], y, [1, 2])``.

Every einsum is an elementwise product of broadcast views followed by sums. The routes:

- **Views.** A label repeated in one operand is a diagonal *view* (the axes merged, their
  strides added: :func:`diagonal_view`); every operand is transposed and given axes of one so
  that its labels line up. Nothing is copied.
- **Fused** (every contraction where no axis is a product axis: ``'i,i'``, ``'ij->'``,
  ``'ij,j->i'``, ``'i,j->ij'``, ``'ij,ij,ij->'``): the broadcast product of the operands and one
  fused reduction (``sum``; ``any`` of ``&`` for bools) over the labels no later step needs, one
  kernel, the operands' pending expressions inside it. Work that is memory-bound stays so.
- **matmul** (two operands sharing a contracted label of extent > 1 and each keeping a free
  label: ``'ij,jk->ik'``, ``'bij,bjk->bik'``, ``'ijk,ikl->jl'``): a batched product. Each
  operand's labels go to ``batch, free, contracted`` / ``batch, contracted, free`` (views,
  labels only one operand holds and no later step needs summed away first by the fused route),
  are reshaped to matrices (a copy where the strides allow no view, as ``tensordot``) and one
  :func:`~.products.matmul` kernel multiplies them.

More than two operands contract pairwise: left to right with ``optimize=False`` (NumPy's
default), else in the order of ``np.einsum_path(..., optimize=optimize)`` computed on the shapes
(``True``, ``'greedy'``, ``'optimal'`` or an explicit ``['einsum_path', (0, 1), ...]``); the
order changes no value beyond rounding. A step with nothing to sum stays a lazy product and is
fused into the next step. Result dtype: ``np.result_type`` of the operands, or ``dtype=`` under
``casting=`` (NumPy's check); integers wrap as NumPy's, float16 is summed in float32 and rounded
once.

>>> import fusedarrays as fa, numpy as np
>>> a = fa.asarray(np.arange(6.).reshape(2, 3))
>>> fa.einsum("ij,j->i", a, fa.asarray(np.ones(3))).get()
array([ 3., 12.])
>>> fa.einsum("ii->i", fa.asarray(np.arange(9).reshape(3, 3))).get()
array([0, 4, 8])
"""

from __future__ import annotations

import string

import numpy as np

from ..errors import DTypeError, ShapeError
from ..ir import dtypes, layout
from .array import asarray, ndarray
from .manipulation import broadcast_to, expand_dims
from .products import matmul
from .reductions import reduce
from .refusals import options_text, refusal

_LETTERS = string.ascii_letters       # NumPy's labels: a-z then A-Z in the interleaved form


def diagonal_view(view, groups: list[list[int]]):
    """A layout view with each group of axes (of equal extents) merged into one axis at the
    group's place in ``groups``: its stride the sum of theirs, so index ``i`` reads element
    ``(i, i, …)`` of those axes. ``[[0, 1]]`` is the main diagonal of a matrix (``'ii->i'``)."""
    shape, strides, offset = view
    return (tuple(shape[g[0]] for g in groups),
            tuple(sum(strides[a] for a in g) for g in groups), offset)


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """NumPy's ``einsum``: the Einstein summation of ``operands`` per the subscripts, lazy.

    Views and one fused reduction where no axis is a product axis, a ``matmul`` kernel where
    two operands share a contracted axis and each keeps a free one (the module docstring says
    which). ``optimize`` only orders the pairwise contractions of three or more operands.

    >>> import fusedarrays as fa, numpy as np
    >>> m = fa.asarray(np.arange(4.).reshape(2, 2))
    >>> fa.einsum("ij,jk->ik", m, m).get()
    array([[ 2.,  3.],
           [ 6., 11.]])
    >>> float(fa.einsum("ii", m))
    3.0
    """
    if out is not None:
        raise refusal("einsum with out=", "assign the result: out[...] = fa.einsum(...)")
    if order not in ("K", "A", "C", "F"):
        raise refusal(f"einsum with {options_text({'order': order})}")
    subscripts, arrays = _subscripts_of(operands)
    arrays = [asarray(a) for a in arrays]
    inputs, output = _parse(subscripts, [a.ndim for a in arrays])
    dt = _result_dtype(arrays, dtype, casting)
    arrays = [a if a.dtype == dt else a.astype(dt) for a in arrays]
    terms = [_diagonal(a, labels, i) for i, (a, labels) in enumerate(zip(arrays, inputs))]
    extents = _extents(terms)
    for indices in _path(optimize, subscripts, arrays):
        chosen = [terms[i] for i in indices]
        rest = [t for i, t in enumerate(terms) if i not in indices]
        keep = set(output).union(*(labels for _, labels in rest))
        terms = rest + [_contract(chosen, keep, extents, dt)]
    (result, labels), = terms
    if set(labels) != set(output):     # a lone operand: its sums, a view if it has none
        result, labels = _fused([(result, labels)], set(output), dt)
    if labels != output:
        result = result.transpose(tuple(labels.index(x) for x in output))
    return result


def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """``np.einsum_path`` on fa arrays: NumPy's plan, computed on the shapes and dtypes alone
    (NumPy arrays of stride 0 stand in for the operands; nothing is read or copied)."""
    subscripts, arrays = _subscripts_of(operands)
    stand_ins = [_stand_in(a) for a in arrays]
    return np.einsum_path(subscripts, *stand_ins, optimize=optimize, einsum_call=einsum_call)


def _stand_in(x) -> np.ndarray:
    x = x if isinstance(x, (ndarray, np.ndarray)) else np.asarray(x)
    return np.broadcast_to(np.zeros((), x.dtype), x.shape)


def _subscripts_of(operands: tuple) -> tuple[str, list]:
    """The subscripts string and the operands, from either of NumPy's forms: ``("ij,j", a, b)``
    or interleaved ``(a, [0, 1], b, [1], [0])`` (labels ints 0-51 or ``...``)."""
    if not operands:
        raise ShapeError("einsum: no subscripts given; call einsum('ij,j->i', a, b)")
    if isinstance(operands[0], str):
        return operands[0], list(operands[1:])
    arrays, terms = list(operands[0::2]), [_sublist(s) for s in operands[1::2]]
    if len(terms) == len(arrays):
        return ",".join(terms), arrays
    return ",".join(terms[:len(arrays) - 1]) + "->" + _sublist(arrays[-1]), arrays[:-1]


def _sublist(sublist) -> str:
    try:
        items = list(sublist)
    except TypeError:
        raise TypeError(f"einsum: a sublist must be a list of ints or Ellipsis, got "
                        f"{sublist!r}") from None
    text = ""
    for item in items:
        if item is Ellipsis:
            text += "..."
        elif isinstance(item, (int, np.integer)) and 0 <= item < len(_LETTERS):
            text += _LETTERS[int(item)]
        else:
            raise ShapeError(f"einsum: subscript {item!r} in a sublist is not an int in "
                             f"[0, {len(_LETTERS)}) or Ellipsis")
    return text


def _split_term(term: str, where: str) -> tuple[str, str | None]:
    """``term`` split at its ellipsis: ``(before + after, before)``; ``before`` None without
    one. Checks the characters."""
    bad = [c for c in term.replace("...", "") if c not in _LETTERS]
    if bad or term.count("...") > 1:
        raise ShapeError(f"einsum: subscripts {where} {term!r} hold {bad[0]!r}: only letters "
                         "and one '...' may appear" if bad else
                         f"einsum: subscripts {where} {term!r} hold more than one '...'")
    if "..." not in term:
        return term, None
    before, after = term.split("...")
    return before + after, before


def _parse(subscripts: str, ndims: list[int]) -> tuple[list[tuple], tuple]:
    """Each operand's labels and the output's: letters, and ints ``0..E-1`` for the ``E``
    broadcast dimensions of the ellipsis (right-aligned across operands, as NumPy)."""
    text = subscripts.replace(" ", "")
    head, arrow, tail = text.partition("->")
    if "->" in tail or "-" in head or ">" in head:
        raise ShapeError(f"einsum: subscripts {subscripts!r} need at most one '->' and no "
                         "other '-' or '>'")
    terms = head.split(",")
    if len(terms) != len(ndims):
        raise ShapeError(f"einsum: subscripts {subscripts!r} name {len(terms)} operands, "
                         f"{len(ndims)} were given")
    inputs, ellipsis = [], 0
    for k, (term, ndim) in enumerate(zip(terms, ndims)):
        letters, before = _split_term(term, f"of operand {k}")
        extra = ndim - len(letters)
        if extra < 0 or (before is None and extra):
            raise ShapeError(f"einsum: operand {k} has {ndim} dimensions but its subscripts "
                             f"{term!r} name {len(letters)}"
                             + ("" if extra < 0 else "; add '...' to broadcast the others"))
        ellipsis = max(ellipsis, extra)
        inputs.append((letters, before, extra))
    labels = [tuple(lt[:len(b)]) + tuple(range(ellipsis - n, ellipsis)) + tuple(lt[len(b):])
              if b is not None else tuple(lt) for lt, b, n in inputs]
    return labels, _output(subscripts, tail if arrow else None, labels, ellipsis)


def _output(subscripts: str, tail: str | None, inputs: list[tuple], ellipsis: int) -> tuple:
    seen = [x for labels in inputs for x in labels if isinstance(x, str)]
    if tail is None:      # implicit: the ellipsis, then the letters seen once, sorted
        return tuple(range(ellipsis)) + tuple(sorted(x for x in set(seen)
                                                     if seen.count(x) == 1))
    letters, before = _split_term(tail, "of the output")
    for x in letters:
        if x not in seen or letters.count(x) > 1:
            raise ShapeError(f"einsum: output subscript {x!r} of {subscripts!r} "
                             + ("appears twice" if x in seen else "is no input's"))
    if before is None:
        if ellipsis:
            raise ShapeError(f"einsum: the operands of {subscripts!r} have {ellipsis} "
                             "broadcast dimensions ('...') the output doesn't name; add "
                             "'...' to the output")
        return tuple(letters)
    return tuple(before) + tuple(range(ellipsis)) + tuple(letters[len(before):])


def _result_dtype(arrays: list[ndarray], dtype, casting: str) -> np.dtype:
    if dtype is None:
        if any(dtypes.is_minifloat(a.dtype) for a in arrays):    # JAX's promotion
            return dtypes.jax_promote([a.dtype for a in arrays], "einsum")
        return np.result_type(*(a.dtype for a in arrays))
    dt = np.dtype(dtype)
    for k, a in enumerate(arrays):
        if not np.can_cast(a.dtype, dt, casting):
            raise DTypeError(f"einsum: operand {k} of dtype {a.dtype} can't be cast to "
                             f"dtype={dt} under casting={casting!r}; pass "
                             "casting='same_kind' or 'unsafe', or another dtype")
    return dt


def _diagonal(x: ndarray, labels: tuple, k: int) -> tuple[ndarray, tuple]:
    """``x`` with each label that it repeats made one axis, its diagonal (a view)."""
    unique = tuple(dict.fromkeys(labels))
    if len(unique) == len(labels):
        return x, labels
    groups = [[i for i, y in enumerate(labels) if y == label] for label in unique]
    for label, group in zip(unique, groups):
        if len({x.shape[i] for i in group}) > 1:
            raise ShapeError(f"einsum: operand {k} repeats label {label!r} on axes of "
                             f"extents {[x.shape[i] for i in group]}; a repeated label takes "
                             "a diagonal, which needs equal extents")
    return x._view(lambda v: diagonal_view(v, groups)), unique


def _extents(terms: list[tuple]) -> dict:
    """Each label's extent, broadcast across the operands (1 stretches, as NumPy's)."""
    extents: dict = {}
    for x, labels in terms:
        for label, extent in zip(labels, x.shape):
            known = extents.get(label, 1)
            if extent != 1 and known not in (1, extent):
                name = f"'{label}'" if isinstance(label, str) else "'...'"
                raise ShapeError(f"einsum: label {name} has extents {known} and {extent} in "
                                 f"the operands of shapes {[t.shape for t, _ in terms]}; they "
                                 "must be equal (or 1, which broadcasts)")
            extents[label] = max(known, extent) if extent != 1 else known
    return extents


def _path(optimize, subscripts: str, arrays: list[ndarray]) -> list[tuple]:
    """The contractions, in ``np.einsum_path``'s form: each takes the listed operands out and
    appends their result."""
    n = len(arrays)
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        steps = [tuple(s) for s in optimize[1:]]
    elif optimize is False or n <= 2:
        steps = [(0, 1)] * (n - 1)
    else:
        plan = np.einsum_path(subscripts, *map(_stand_in, arrays),
                              optimize="greedy" if optimize is True else optimize)
        steps = [tuple(s) for s in plan[0][1:]]
    count = n
    for s in steps:
        if not s or any(not 0 <= i < count for i in s) or len(set(s)) != len(s):
            raise ShapeError(f"einsum: contraction {s} of path {steps} does not name distinct "
                             f"operands among {count}")
        count += 1 - len(s)
    if count != 1:
        raise ShapeError(f"einsum: path {steps} leaves {count} operands, not one")
    return steps


def _contract(terms: list[tuple], keep: set, extents: dict, dt: np.dtype) -> tuple:
    """One step of the path: two operands that form a matrix product through ``matmul``, any
    other set through the fused route."""
    if len(terms) == 2 and _is_product(terms[0][1], terms[1][1], keep, extents):
        return _matmul(terms[0], terms[1], keep, extents, dt)
    return _fused(terms, keep, dt)


def _is_product(a: tuple, b: tuple, keep: set, extents: dict) -> bool:
    """A contracted label of extent > 1 shared by both, and a free label kept by each."""
    contracted = [x for x in a if x in b and x not in keep]
    return (layout.size_of(tuple(extents[x] for x in contracted)) > 1
            and any(x in keep and x not in b for x in a)
            and any(x in keep and x not in a for x in b))


def _fused(terms: list[tuple], keep: set, dt: np.dtype) -> tuple[ndarray, tuple]:
    """The broadcast product of ``terms`` summed over the labels not in ``keep``: elementwise
    work and one fused reduction (none where nothing is summed: the product stays pending)."""
    order = tuple(dict.fromkeys(x for _, labels in terms for x in labels))
    # NumPy's float16 accumulator (and JAX's for bfloat16, float8): float32, rounded once
    wide = np.dtype(np.float32) if dtypes.CODES[dt] in dtypes.ROUNDED else dt
    product = None
    for x, labels in terms:
        mine = sorted(labels, key=order.index)
        x = x.transpose(tuple(labels.index(y) for y in mine)) if tuple(mine) != labels else x
        missing = tuple(i for i, y in enumerate(order) if y not in labels)
        x = expand_dims(x, axis=missing) if missing else x
        x = x if x.dtype == wide else x.astype(wide)
        product = x if product is None else (product & x if dt.kind == "b" else product * x)
    summed = tuple(i for i, y in enumerate(order) if y not in keep)
    if summed:
        product = (reduce("any", product, summed) if dt.kind == "b"
                   else reduce("sum", product, summed, dtype=wide))
    product = product if product.dtype == dt else product.astype(dt)
    return product, tuple(y for y in order if y in keep)


def _matmul(a: tuple, b: tuple, keep: set, extents: dict, dt: np.dtype) -> tuple:
    """``a`` and ``b`` contracted by one batched ``matmul``: labels to ``batch, free, k`` and
    ``batch, k, free`` (views), reshaped to matrices, multiplied, reshaped back."""
    (x, xl), (y, yl) = a, b
    # labels only one operand holds and no later step needs: summed first (fused route)
    if any(v not in keep and v not in yl for v in xl):
        x, xl = _fused([(x, xl)], keep | set(yl), dt)
    if any(v not in keep and v not in xl for v in yl):
        y, yl = _fused([(y, yl)], keep | set(xl), dt)
    batch = [v for v in xl if v in yl and v in keep]
    contracted = [v for v in xl if v in yl and v not in keep]
    free_x = [v for v in xl if v not in yl]
    free_y = [v for v in yl if v not in xl]
    k = layout.size_of(tuple(extents[v] for v in contracted))
    # a free label's own extent (1 where a later operand broadcasts it), not the einsum's
    free_shape = (tuple(x.shape[xl.index(v)] for v in free_x)
                  + tuple(y.shape[yl.index(v)] for v in free_y))
    x = _matrix(x, xl, batch, free_x, contracted, extents, k, first=True)
    y = _matrix(y, yl, batch, free_y, contracted, extents, k, first=False)
    result = matmul(x, y)
    shape = result.shape[:-2] + free_shape
    if shape != result.shape:
        result = result.reshape(shape)
    return result, tuple(batch + free_x + free_y)


def _matrix(x: ndarray, labels: tuple, batch: list, free: list, contracted: list,
            extents: dict, k: int, first: bool) -> ndarray:
    """``x`` as a stack of matrices ``(batch…, free, k)`` (``first``) or ``(batch…, k, free)``:
    a transpose, the contracted axes broadcast to their extents, a reshape."""
    axes = batch + (free + contracted if first else contracted + free)
    x = x.transpose(tuple(labels.index(v) for v in axes))
    nb = len(batch)
    target = x.shape[:nb] + tuple(extents[v] if v in contracted else x.shape[nb + i]
                                  for i, v in enumerate(axes[nb:]))
    if target != x.shape:
        x = broadcast_to(x, target)
    m = layout.size_of(tuple(x.shape[nb + axes[nb:].index(v)] for v in free))
    shape = x.shape[:nb] + ((m, k) if first else (k, m))
    return x if shape == x.shape else x.reshape(shape)
