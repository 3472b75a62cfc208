"""Code generation by target: one module per target (``cuda.py``, ``cpu.py``), each a table
``RENDERERS`` from every plan kind (``compiler/protocol.py``) to the function giving that plan's
kernel source for the target. The front door (``compiler/__init__.py``'s ``render``) imports a
target's module on first use; adding a target is one module here with a row per plan kind.

The renderers the tables name still live beside their plans (``compiler/codegen.py``,
``reduction_codegen.py``, ``rowfusion.py``, ``scan_codegen.py``, ``product_codegen.py``,
``compact.py``, ``foreach_codegen.py``), each taking the target as an argument.
"""
