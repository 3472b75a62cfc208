"""``Fused.foreach``: one launch applies a fused function to every tuple of equal-length lists.

Where it sits: :mod:`fuse` hands ``f.foreach(*args)`` here. The list arguments are split into
tuples (one per index); tuples whose arrays have the same dtypes (and the same pattern of
repeated buffers) form a group. Each group's signature traces ``f`` once on 1-D placeholders of
one of its tensors (:mod:`trace`), checks that the result is elementwise — one launch, every
load and store at the tensor's own elements — and compiles a
:class:`~..compiler.foreach_plan.ForeachPlan`, whose
kernel maps each element of the concatenated tensors to its tensor through a table of sizes and
loads that tensor's operand addresses from a table of pointers
(``compiler/foreach_codegen.py``'s ``render_foreach_kernel``; each backend packs the tables in
``foreach_args``). A call with the very same arrays as the last one (an optimizer loop) reuses
the groups and tables: it compares identities, computes the scalars and launches. Where the
function reduces across its lists (``fa.global_norm``), a launch before that one computes the
reductions' partial results (:mod:`across`).

A group's signature is :data:`signature.SIGNATURE_PARTS` of the shared (non-list) arguments and, per
list, its dtype and which lists share a buffer within a tuple; shapes and sizes are not in it
(they are table data). The arrays of a tuple must share its shape and be contiguous; tensors of
different tuples must not overlap where one of them is written. Arrays must be lists, except a
0-d array, which every tensor shares (read once: a step count or a learning rate kept on the
device, so that a captured step reads its new value, ``runtime/capture.py``); it is a table column
whose every row holds its address, and may not be written. The cpu backend runs the tensors one
after another inside its one kernel call (its pointer table in host memory).

The last call's groups are kept for the next call with the same arrays, but not the arrays: where
the caller drops an array of the last call (a gradient of the last step), the kept groups go
(:meth:`ForeachState._watch`), so they never hold a set of old arrays alive between calls.
"""

from __future__ import annotations

import operator
import weakref

from .. import compiler
from ..api import pending
from ..api.array import ndarray
from ..compiler import render
from ..errors import ShapeError, UnsupportedOperationError
from ..ir import graph, layout
from ..runtime import realize
from ..runtime.backend import mixed_devices, new_buffer
from ..runtime.capture import capturing
from ..runtime.launch import LaunchRecord
from . import across, draws, earlystores, pertensor
from .arguments import Imports, classify, hashable
from .packers import make_scalar_packer
from .signature import codegen_settings, describe_change, prepare_write, traced_call
from .views import span

_NODE = operator.attrgetter("_node")
_FOLDED = ("global", "tensor")   # 0-d values of reductions across the lists / per tensor
_ELEMENTWISE = ("foreach: {name} must be elementwise over its list arguments: one kernel, every "
                "array it reads or writes one of them and read whole (no views, no broadcasting "
                "between them, no captured arrays); call it per tensor instead")


class Entry:
    """A traced group signature: the multi-tensor kernel, where each operand comes from (a list
    column or an output), and the scalar packer; where the function reduces across the lists,
    the launch before it (``across``, :mod:`across`)."""

    def __init__(self, fused, program, tracer, backend, why: str, key, lists: list,
                 found: list = (), shared: tuple = (), early: list = ()):
        self.program, self.backend, self.why, self.key = program, backend, why, key
        message = _ELEMENTWISE.format(name=fused.__qualname__)
        self._shared_roots = {tracer.root_of(p) for p in shared}
        if self._shared_roots & set(program.written):
            raise UnsupportedOperationError(
                f"foreach: {fused.__qualname__} writes a 0-d array that every tensor shares; "
                "one launch over many tensors would race on it (write it in a call of its own, "
                "e.g. a fused step += 1 before the foreach)")
        if any(i.kind == "gather" for plan, _ in program.launches
               for i in plan.body):
            raise UnsupportedOperationError(
                f"foreach: {fused.__qualname__} gathers (x[idx], fa.take, "
                "fa.take_along_axis): a gather loads its array at index values, which a "
                "foreach launch, walking its tensors element by element through one table, "
                "does not do; call the fused function per tensor instead")
        if len(program.launches) != 1 or program.temps:
            raise UnsupportedOperationError(message)
        plan, sources = program.launches[0]
        self._offsets = {tracer.root_of(p): graph.leaf_view(tracer.placeholders[p]._node)[3]
                         for p in (*lists, *shared)}
        # the shared 0-d arrays' columns follow the lists' (every row: the same address)
        column_of = {tracer.root_of(p): c
                     for c, p in reversed(list(enumerate((*lists, *shared))))}
        self._check(plan, sources, message, ("arg", "out") + _FOLDED)
        # one table column per distinct array: a list column, or an output
        sources = [(kind, column_of[k] if kind == "arg" else k) for kind, k in sources]
        table = list(dict.fromkeys(s for s in sources if s[0] not in _FOLDED))
        # the reductions across the lists (or per tensor: fuse/pertensor.py) the kernel folds,
        # in the order of its operands
        self.fold_from = tuple(k for kind, k in sources if kind == "global")
        self.per_tensor = tuple(k for kind, k in sources if kind == "tensor")
        found = pertensor.split(fused, found, self.fold_from, self.per_tensor)
        self.fold_from = self.fold_from or self.per_tensor
        self.across = None
        if self.fold_from:
            def column(source) -> int:     # the first launch may read columns this one doesn't
                found_column = ("arg", column_of[source[1]])
                if found_column not in table:
                    table.append(found_column)
                return table.index(found_column)
            self.across = across.Across(fused, found, self.fold_from, plan.shape, column,
                                        lambda p, s, m: self._check(p, s, m, ("arg",)), early)
            self.across.compile(len(table), backend)
        self.sources = table
        folds = tuple((k, *self.across.kinds[j]) for k, (kind, j) in enumerate(sources)
                      if kind in _FOLDED)
        self.plan = compiler.plan_foreach(plan, tuple(-1 if s[0] in _FOLDED else table.index(s)
                                             for s in sources), folds, len(table))
        self.fold = None
        if self.per_tensor:
            self.plan, self.fold = pertensor.per_tensor(self.plan, self.across, backend)
        # sized per call (the tensors' total): launched with launch_with
        self.record = LaunchRecord(backend, realize.kernel_for(self.plan, backend),
                                   make_scalar_packer(plan, backend), name=self.plan.name,
                                   traffic=self.plan.traffic())
        self.written_columns = sorted({column_of[r] for r in program.written})
        # per written buffer, every list column viewing it
        self.writes_through = tuple(tuple(c for c, p in enumerate(lists)
                                          if tracer.root_of(p) == r) for r in program.written)
        self.output_dtypes = [dt for dt, _ in program.outputs]
        self.hosts = tuple(tracer.hosts)    # per call, before any launch: draws' keys
        # a draw's stream index is the element's in the concatenation of every tuple in list
        # order (meta holds each tensor's start in it: _draw_offsets)
        self.draws = any(i.kind == "random" for i in plan.body)

    def _check(self, plan, sources, message: str, kinds: tuple) -> None:
        """Every operand of ``plan`` reads a list argument whole or writes an output whole (or,
        where ``kinds`` has it, is the 0-d value of a reduction across the lists)."""
        for o, (kind, k) in zip(plan.operands, sources):
            if kind in _FOLDED and kind in kinds:
                continue
            if kind == "arg" and k in self._shared_roots and o.layout == "B" \
                    and not o.output and o.offset == self._offsets[k]:
                continue       # a shared 0-d array: read through its table column
            if kind not in kinds or o.layout != "C" or not (
                    (kind == "out" and o.offset == 0)
                    or (kind == "arg" and o.offset == self._offsets[k])):
                raise UnsupportedOperationError(message)

    def plans(self) -> list:
        """``(plan, render)`` of each launch of a call, in order (``f.explain()``)."""
        first = [(self.across.plan, render)] if self.across else []
        first += [(self.fold[0], render)] if self.fold else []
        return first + [(self.plan, render)]


class _Group:
    """The tuples of one signature in a call: their entry, sizes, and the last call's tables.
    Its arrays are the call's (:meth:`bind`), dropped after it (:meth:`release`)."""

    def __init__(self, entry: Entry, members: list[int], rows: list):
        self.entry, self.members, self.rows = entry, members, rows
        self._columns: tuple | None = None
        self.shapes = [row[0].shape for row in rows]
        sizes = [layout.size_of(s) for s in self.shapes]
        self.live = [k for k, n in enumerate(sizes) if n]
        self.meta = (compiler.foreach_meta([sizes[k] for k in self.live],
                                  width=entry.plan.vector_width) if self.live else None)
        self.total = sum(sizes)
        # the kernel walks the concatenation with each tensor padded to whole vectors
        self.padded = int(self.meta[len(self.live)]) if self.live else 0
        self.tables = None      # (args, keep-alive), kept while the function returns nothing

    def bind(self, columns: list, shared: tuple) -> None:
        """This call's arrays: ``columns`` of leaf nodes per list, ``shared`` 0-d nodes."""
        self._columns, self.rows = (columns, shared), None

    def release(self) -> None:
        self._columns = self.rows = None

    def call_rows(self) -> list:
        """Per member tuple its leaf nodes: the lists', then the shared 0-d arrays'."""
        if self.rows is None:
            columns, shared = self._columns
            self.rows = [[column[t] for column in columns] + list(shared)
                         for t in self.members]
        return self.rows
    def run(self, values) -> list[list[ndarray]]:
        """Launch over every tensor; return per output a list of new arrays (one per tuple)."""
        outs, tables = self.start(values)
        return self.finish(values, outs, tables, [])

    def start(self, values) -> tuple[list, tuple | None]:
        """Before any launch of the call: the pending readers of what it writes computed, the
        outputs allocated, the tables made (or the last call's)."""
        entry = self.entry
        if pending.any_registered():
            for row in self.call_rows():
                for c in entry.written_columns:
                    prepare_write(row[c].attrs[0])
        backend = entry.backend
        outs = [[new_buffer(backend, layout.size_of(shape) * dt.itemsize)
                 for shape in self.shapes] for dt in entry.output_dtypes]
        tables = None
        if self.live:
            tables = self.tables
            if tables is None:
                capture = capturing[0]
                if capture is not None:   # fa.on_stream refuses it; fa.capture keeps them
                    capture.allocating("the tables of a foreach call over new arrays")
                rows = [[self._operand(k, kind, c, outs) for kind, c in entry.sources]
                        for k in self.live]
                self._flag_aligned(rows, backend)
                tables = backend.foreach_args(self.meta, rows)
                if not outs:
                    self.tables = tables
                elif capture is not None:
                    capture.keep(tables)
        return outs, tables

    def finish(self, values, outs, tables, across_args: list) -> list[list[ndarray]]:
        """The foreach launch (``across_args``: the partials it folds, :mod:`across`); per
        output a list of new arrays (one per tuple)."""
        entry = self.entry
        if self.live:
            record = entry.record
            record.launch_with(tables[0] + across_args + record.pack(values), self.padded,
                               ("flat", self.padded // entry.plan.vector_width))
        return [[ndarray(graph.leaf(o, dt, shape, layout.contiguous_strides(shape), 0))
                 for o, shape in zip(column, self.shapes)]
                for column, dt in zip(outs, entry.output_dtypes)]

    def _flag_aligned(self, rows: list, backend) -> None:
        """Set each tensor's flag in ``meta``: 1 where every operand starts 16-byte aligned
        (the kernel's 128-bit accesses need it; other tensors go element by element)."""
        if self.entry.plan.vector_width == 1:
            return
        end = len(self.meta) - (len(rows) if self.entry.draws else 0)
        flags = self.meta[end - len(rows):end]
        for t, row in enumerate(rows):
            flags[t] = all((backend.address(storage) + offset * dtype.itemsize) % 16 == 0
                           for storage, dtype, offset in row)

    def _operand(self, k: int, kind: str, c: int, outs) -> tuple:
        """(storage, dtype, element offset) of operand source ``(kind, c)`` in tuple ``k``."""
        if kind == "out":
            return outs[c][k].storage, self.entry.output_dtypes[c], 0
        node = self.call_rows()[k][c]
        buffer, view = node.attrs
        return buffer.storage, node.dtype, view[2]


class ForeachState:
    """A fused function's foreach entries, and the groups of its last call."""

    def __init__(self, fused):
        self.fused = fused
        self._entries: dict[tuple, Entry] = {}
        self._last: tuple | None = None     # (columns of leaf nodes, shared part, groups)
        self._last_key = None
        self._token = None                  # which _last the weak references watch
        self._watching: list = []

    def entries(self) -> list:
        return list(self._entries.items())

    def call(self, args, kwargs):
        fused = self.fused
        items, kwnames, static = fused.items(args, kwargs)
        lists = [p for p, a in enumerate(items)
                 if p not in static and isinstance(a, (list, tuple))]
        if not lists:
            raise TypeError(f"foreach: {fused.__qualname__} got no list argument")
        count = len(items[lists[0]])
        if any(len(items[p]) != count for p in lists):
            raise ValueError(f"foreach: the list arguments have lengths "
                             f"{[len(items[p]) for p in lists]}; they must be equal")
        tokens, values, arrays = self._shared(items, lists, len(args), kwnames, static)
        try:   # map in C: this runs over every tensor of every call
            columns = [list(map(_NODE, items[p])) for p in lists]
        except AttributeError:
            columns = None                  # not all fa arrays: the slow path converts them
        last = self._last
        shared_nodes = tuple(values[p] for p in arrays)
        shared = (tokens, codegen_settings(), shared_nodes)
        if last is None or last[1] != shared or last[0] != columns:
            imports = Imports()
            columns = [[_leaf(a, fused.name_of(p, len(args), kwnames), p, t, imports)
                        for t, a in enumerate(items[p])] for p in lists]
            if imports.uploaded:
                raise UnsupportedOperationError(
                    "foreach: NumPy arrays in the lists would be device copies on the cuda "
                    "backend (writes lost); pass fa.asarray(...) arrays or CuPy/PyTorch arrays")
            imports.check_disjoint(list({n.attrs[0]: None for c in columns for n in c}))
            groups = self._group(columns, lists, tokens, values, len(args), kwnames, arrays)
            if imports.readonly or imports.copied:
                for g in groups:
                    imports.check_writes(tuple(tuple((lists[c], t) for c in through)
                                               for through in g.entry.writes_through
                                               for t in g.members), fused.__qualname__)
            last = self._last = (columns, shared, groups)
            self._watch([a for p in lists for a in items[p]] + [items[p] for p in arrays])
        groups = last[2]
        for g in groups:
            g.bind(last[0], shared_nodes)
        values = draws.group_values(groups, values, fused.__qualname__)   # draws' keys
        try:
            if any(g.entry.per_tensor for g in groups):
                return _assemble(pertensor.run(groups, values), items, count)
            if any(g.entry.across is not None for g in groups):
                return _assemble(across.run(groups, values), items, count)
            return _assemble([(g, g.run(values)) for g in groups], items, count)
        finally:
            for g in groups:
                g.release()

    def _watch(self, objects: list) -> None:
        """Keep the last call's groups (and through them its arrays' nodes) only while the
        caller keeps every array of that call: a weak reference to each calls this off when
        one goes (a new gradient replaced the last), so nothing here holds old arrays alive.
        An object that can't be weakly referenced is not watched (kept until another call)."""
        token = self._token = object()
        this = weakref.ref(self)

        def forget(_, token=token):
            state = this()
            if state is not None and state._token is token:
                state._last = None

        refs = []
        for obj in {id(o): o for o in objects}.values():
            try:
                refs.append(weakref.ref(obj, forget))
            except TypeError:
                pass
        self._watching = refs

    def _shared(self, items, lists, nargs, kwnames, static):
        """Tokens and values of the non-list arguments (list positions: None), and the
        positions of the 0-d arrays every tensor shares (their values: leaf nodes)."""
        tokens, values, arrays = [], [], []
        for position, a in enumerate(items):
            if position in lists:
                token, value = None, None
            elif type(a) in (int, float) and position not in static:
                token, value = type(a), a
            elif position in static:
                who = self.fused.name_of(position, nargs, kwnames)
                token, value = ("static", hashable(a, who)), a
            else:
                who = self.fused.name_of(position, nargs, kwnames)
                found = a if type(a) is ndarray else classify(a, who, Imports(), position)
                if type(found) is tuple:
                    token, value = found
                elif found.ndim:
                    raise TypeError(f"foreach: {who} is an array of shape {found.shape}; pass "
                                    "arrays as lists (repeat a shared one); only a 0-d array "
                                    "may be shared by every tensor")
                else:
                    value = _leaf(found, who, position, 0, Imports())
                    token = ("shared", value.dtype)
                    arrays.append(position)
            tokens.append(token)
            values.append(value)
        return tuple(tokens), values, arrays

    def _group(self, columns, lists, tokens, values, nargs, kwnames,
                arrays=()) -> list[_Group]:
        by_key: dict[tuple, list[int]] = {}
        backend = None
        for t in range(len(columns[0])):
            row = [column[t] for column in columns]
            for c, node in enumerate(row):
                buffer, shape, strides, _ = graph.leaf_view(node)
                backend = backend or buffer.backend
                if buffer.backend is not backend:
                    raise mixed_devices(f"foreach: element {t} of list {c}", backend,
                                        buffer.backend)
                if shape != row[0].shape:
                    raise ShapeError(f"foreach: the arrays of tuple {t} have shapes "
                                     f"{[n.shape for n in row]}; they must be equal")
                if not layout.is_contiguous(shape, strides):
                    raise UnsupportedOperationError(
                        f"foreach: element {t} of list {c} is not contiguous; pass contiguous "
                        "arrays (or call the function per tensor)")
            buffers = [node.attrs[0] for node in row]
            alias = tuple(next(k for k, b in enumerate(buffers) if b is buf) for buf in buffers)
            by_key.setdefault((tuple(node.dtype for node in row), alias), []).append(t)
        shared = [values[p] for p in arrays]
        for p, node in zip(arrays, shared):
            other = node.attrs[0].backend
            if backend is not None and other is not backend:
                raise mixed_devices(f"foreach: {self.fused.name_of(p, nargs, kwnames)}",
                                    backend, other)
        groups = []
        for (dts, alias), members in by_key.items():
            full = list(tokens)
            for p, dt in zip(lists, dts):
                full[p] = ("list", dt)
            key = (backend.device_key, codegen_settings(), nargs, kwnames, tuple(full), alias)
            rows = [[column[t] for column in columns] + shared for t in members]
            entry = self._entries.get(key) or self._trace(key, rows, lists, values, backend,
                                                          tuple(arrays))
            groups.append(_Group(entry, members, rows))
        _check_overlaps(groups)
        draws.draw_offsets(groups, columns[0])
        return groups

    def _trace(self, key, rows, lists, values, backend, arrays=()) -> Entry:
        row = max(rows, key=lambda r: layout.size_of(r[0].shape))  # not a degenerate 1-element
        leaves = {p: values[p] for p in arrays}    # the shared 0-d arrays, as they are
        for p, node in zip(lists, row):
            buffer, shape, _, offset = graph.leaf_view(node)
            leaves[p] = graph.leaf(buffer, node.dtype, (layout.size_of(shape),), (1,), offset)
        why = describe_change(self.fused, self._last_key, key)
        tracer, result = traced_call(self.fused, backend, leaves, values, key, why,
                                     across=True)
        memo: dict = {}   # each reduction across the lists, over the values before the step
        found = [(index, red.attrs[0], tracer.resolve(red.inputs[0], memo), red.dtype)
                 for index, red in tracer.across]
        # the writes that don't need the reductions, made by their launch (earlystores)
        early = earlystores.Early([node for _, _, node, _ in found])
        program = tracer.program(result, memo, early.rewrite)
        entry = Entry(self.fused, program, tracer, backend, why, key, lists, found, arrays,
                      early.stores)
        self._entries[key] = entry
        self._last_key = key
        return entry


def _leaf(a, who: str, p: int, t: int, imports: Imports) -> graph.Node:
    if type(a) is not ndarray:
        found = classify(a, f"element {t} of {who}", imports, (p, t))
        if type(found) is tuple:
            raise TypeError(f"foreach: element {t} of {who} is a {type(a).__name__}, not an "
                            "array")
        a = found
    node = a._resolved()
    return node if node.kind == "leaf" else a.compute()._resolved()


def _check_overlaps(groups: list[_Group]) -> None:
    """Tensors of different tuples may share memory only where neither is written."""
    by_buffer: dict = {}
    for group in groups:
        written = set(group.entry.written_columns)
        for t, row in zip(group.members, group.rows):
            for c, node in enumerate(row):
                buffer, shape, strides, offset = graph.leaf_view(node)
                low, high = span((shape, strides, offset))
                if high >= low:
                    by_buffer.setdefault(buffer, []).append((low, high, t, c in written))
    for found in by_buffer.values():
        if len({t for _, _, t, _ in found}) < 2:
            continue
        found.sort()
        everything, written_only = _Reach(), _Reach()
        for low, high, t, written in found:   # by start: a conflict shows as an earlier reach
            other = (everything if written else written_only).other(t)
            if other[0] >= low:
                raise UnsupportedOperationError(
                    f"foreach: tensors {other[1]} and {t} of the lists overlap in memory and "
                    "one of them is written; one launch would race between them")
            everything.add(high, t)
            if written:
                written_only.add(high, t)


class _Reach:
    """The highest end seen, and the highest from another tuple than that one's."""

    def __init__(self):
        self.best = self.second = (-1, -1)

    def add(self, high: int, t: int) -> None:
        if t == self.best[1]:
            self.best = (max(high, self.best[0]), t)
        elif high > self.best[0]:
            self.best, self.second = (high, t), self.best
        elif high > self.second[0]:
            self.second = (high, t)

    def other(self, t: int) -> tuple[int, int]:
        return self.best if self.best[1] != t else self.second


def _assemble(results: list, items, count: int):
    """Per returned value, a list over the tuples (in the caller's order)."""
    if not results or results[0][0].entry.program.items is None:
        return None
    kind, spec = results[0][0].entry.program.items
    specs = (spec,) if kind == "one" else spec
    columns = [[None] * count for _ in specs]
    for group, outs in results:
        for j, (what, k) in enumerate(specs):
            for idx, t in enumerate(group.members):
                columns[j][t] = items[k][t] if what == "arg" else outs[k][idx]
    return columns[0] if kind == "one" else tuple(columns)
