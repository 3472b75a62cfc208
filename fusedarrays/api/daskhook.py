"""fa registered with dask, distributed and dask-cuda whatever order they and fusedarrays are
imported in.

``import fusedarrays`` calls :func:`watch`: where one of them is imported already, fa registers
at once (:func:`.daskchunks.register`: the chunk type, distributed's ``cuda`` and ``dask``
serializer families, dask-cuda's device-memory look-up); for those imported later a finder on
``sys.meta_path`` lets their import finish, then registers. Without it a process that imported
fusedarrays first had fa's serializers only once it optimized a dask graph: until then
distributed sent fa arrays by pickle through the host (never as device buffers) and could not
load a ``dask``-family frame of one.

The finder imports nothing, answers None at once for any other module and leaves
``sys.meta_path`` once every watched module has come. A registration that fails warns and
leaves the import itself alone.
"""

from __future__ import annotations

import sys
import threading

WATCHED = ("dask.array", "distributed", "dask_cuda")

_busy = threading.local()   # a registration under way in this thread (it imports dask.array)


def watch() -> None:
    """Register now if a watched module is imported; watch for the others."""
    if any(name in sys.modules for name in WATCHED):
        _register()
    later = {name for name in WATCHED if name not in sys.modules}
    if later and not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(later))


def _register() -> None:
    if getattr(_busy, "on", False):     # dask.array imported by daskchunks, registering already
        return
    _busy.on = True
    try:
        from . import daskchunks

        daskchunks.register()
    except Exception as e:  # noqa: BLE001 - the user's import of dask must not fail for fa
        import warnings

        warnings.warn(f"fusedarrays could not register with dask/distributed ({e!r}): fa arrays "
                      "go to dask as plain objects and to distributed by pickle; call "
                      "fusedarrays.api.daskchunks.register() to see why", stacklevel=2)
    finally:
        _busy.on = False


class _AfterImport:
    """A meta-path finder: for a watched module the spec the other finders give, its loader
    wrapped to register fa once the module is executed."""

    def __init__(self, names: set[str]):
        self.pending = names

    def find_spec(self, name, path, target=None):
        if name not in self.pending:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if not hasattr(spec.loader, "exec_module"):
            return spec
        self.pending.discard(name)
        if not self.pending:    # returning a spec ends the import system's walk of the list
            sys.meta_path.remove(self)
        spec.loader = _ThenRegister(spec.loader)
        return spec


class _ThenRegister:
    """A loader: ``loader`` executes the module (which sees ``loader`` as its own), then fa
    registers."""

    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _register()
