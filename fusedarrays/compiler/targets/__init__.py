"""Code generation by target: the target is the outer axis. One module per target (``cuda/``,
a package with a module per plan family; ``cpu.py``), each covering every plan kind
(``compiler/protocol.py``) with:

- ``RENDERERS``: plan kind → the function giving that plan's kernel source on the target;
- ``walk_text(plan)``: how the kernel walks its data there, in words (``fa.explain``).

The front door (``compiler/__init__.py``'s ``render`` and ``walk_text``) imports a target's
module on first use. What every target writes alike stays in the generator modules, free of any
target: an element's loads, instructions and stores (``codegen._Renderer``), a reduction's fold
and store (``reduction_codegen``), a row kernel's sections (``rowfusion.RowRenderer``), a
scan's, a product's and the multi-tensor kernels' pieces (``scan_codegen``, ``product_codegen``,
``foreach_codegen``, ``tensor_fold``). A target's module writes the walks around them: loops,
grids, shared memory, block trees, and declares its policies (``WIDE_SUMS``: whether float32
sums accumulate in float64; cpu's True, cuda's False). Adding a target is one new module here
with a row per plan kind, its name in ``compiler.TARGETS``, and a backend that supplies the
names the source calls.
"""
