"""``fusedarrays.optim``: optimizer steps as fused multi-tensor kernels.

Two faces over the same fused functions (:mod:`.functional`):

- functional steps over lists of arrays of any library fa reaches (``adamw``, ``adam``,
  ``sgd``, ``lion``, ``lamb``), in place, one launch per dtype group (LAMB: three);
- ``torch.optim.Optimizer`` subclasses over PyTorch parameters (``AdamW``, ``Adam``, ``SGD``,
  ``Lion``, ``LAMB``, :mod:`.torch_optim`), imported on first use: ``import fusedarrays`` and
  ``import fusedarrays.optim`` import no torch.
"""

from __future__ import annotations

from .functional import adam, adamw, lamb, lion, sgd

_TORCH_CLASSES = ("AdamW", "Adam", "SGD", "Lion", "LAMB")


def __getattr__(name: str):
    if name in _TORCH_CLASSES:
        from . import torch_optim

        return getattr(torch_optim, name)
    raise AttributeError(f"module 'fusedarrays.optim' has no attribute {name!r}")


__all__ = ["LAMB", "SGD", "Adam", "AdamW", "Lion", "adam", "adamw", "lamb", "lion", "sgd"]
