"""Optimizer steps as fused functions over lists of arrays: AdamW, Adam, SGD, Lion and LAMB.

Where it sits: over ``fa.fuse`` and its ``foreach`` (``fuse/foreach.py``), under the
``torch.optim`` faces of :mod:`.torch_optim`; imports no torch. Each step is one ``@fa.fuse``
function run by ``foreach`` over the lists: **one launch per dtype group** for the elementwise
optimizers, three for LAMB (``fa.tensor_norm``'s per-tensor partials, their fold, the step).
The arrays are updated in place: parameters and states must be writable arrays the backend
reaches (``fa`` arrays, CuPy or PyTorch arrays on cuda, NumPy arrays or ``fa.from_dlpack`` of
PyTorch's on cpu); gradients may be any array (a JAX gradient is only read).

Every hyper-parameter and the step counter are kernel parameters: a new learning rate (a
schedule) never retraces or recompiles. ``step`` and ``lr`` may also be 0-d arrays on the device
(float32), which the kernel reads: a step captured once (``fa.capture``) and replayed then
follows them; :func:`increment` adds one to a device step count inside the captured sequence.
The bias corrections ``1 - beta ** step`` are computed
inside the kernel from ``step`` (not on the host), so that a captured step could read ``step``
from device memory. The arithmetic follows PyTorch's ``_multi_tensor_*`` steps operation by
operation (``torch/optim/adamw.py``), so results agree to float32 rounding.

With ``master_params=`` (parameters stored in bfloat16 or float16 beside float32 masters and
float32 states) the step updates the masters and stores each parameter from its master: rounded
to nearest even, or with ``stochastic_rounding=True`` (a generator of its own, fresh entropy) or
``stochastic_rounding=fa.random.default_rng(seed)`` rounded up or down at random, unbiased
(``Generator.stochastic_round``), drawn inside the same kernel: each step draws the generator's
next numbers, the element at ``i`` of tensor ``t`` at the index ``i`` plus the sizes of the
tensors before ``t`` (``foreach``'s draws). Not inside ``fa.capture`` (a replay would reuse one
step's numbers: ``CaptureError``).

>>> import fusedarrays as fa, numpy as np
>>> from fusedarrays.optim import functional as F
>>> p, g = [fa.ones(3, np.float32)], [fa.full(3, 0.5, np.float32)]
>>> m, v = [fa.zeros(3, np.float32)], [fa.zeros(3, np.float32)]
>>> F.adamw(p, g, m, v, step=1, lr=0.1, weight_decay=0.0)
>>> p[0].get()
array([0.9, 0.9, 0.9], dtype=float32)
"""

from __future__ import annotations

from ..api.elementwise import FUNCTIONS as _F
from ..api.random import Generator, default_rng
from ..api.standard import where as _where
from ..fuse.function import fuse
from ..fuse.pertensor import tensor_norm

_sqrt, _sign = _F["sqrt"], _F["sign"]

# ---- the fused steps: one kernel per dtype group --------------------------------------------


def _store(p, w, rounding):
    """``p`` from its float32 master ``w``: rounded to nearest even, or, where ``rounding`` is
    a ``fa.random`` generator, stochastically from its stream (unbiased: small updates that
    round-to-nearest would drop survive on average), drawn in the same kernel."""
    p[...] = w if rounding is None else rounding.stochastic_round(w, p.dtype)


def _grad(g, maximize):
    # (the master kernels widen a bfloat16 gradient first: every op on a bfloat16 value
    # rounds to bfloat16, and g * g must not)
    return -g if maximize else g


def _adam_core(p, g, m, v, lr, beta1, beta2, eps, step):
    """m, v in place; returns p's new value (PyTorch's lerp, addcmul, addcdiv)."""
    m[...] = m + (1 - beta1) * (g - m)
    v[...] = v * beta2 + (1 - beta2) * g * g
    step_size = lr / (1 - beta1 ** step)
    denom = _sqrt(v) / (1 - beta2 ** step) ** 0.5 + eps
    return p - step_size * (m / denom)


@fuse
def _adamw(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step, maximize):
    g = _grad(g, maximize)
    p[...] = _adam_core(p * (1 - lr * weight_decay), g, m, v, lr, beta1, beta2, eps, step)


@fuse(static_argnames="rounding")
def _adamw_master(p, w, g, m, v, lr, beta1, beta2, eps, weight_decay, step, maximize, rounding):
    g = _grad(g.astype(w.dtype), maximize)
    w[...] = _adam_core(w * (1 - lr * weight_decay), g, m, v, lr, beta1, beta2, eps, step)
    _store(p, w, rounding)


@fuse
def _adam(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step, maximize):
    g = _grad(g, maximize) + weight_decay * p
    p[...] = _adam_core(p, g, m, v, lr, beta1, beta2, eps, step)


@fuse(static_argnames="rounding")
def _adam_master(p, w, g, m, v, lr, beta1, beta2, eps, weight_decay, step, maximize, rounding):
    g = _grad(g.astype(w.dtype), maximize) + weight_decay * w
    w[...] = _adam_core(w, g, m, v, lr, beta1, beta2, eps, step)
    _store(p, w, rounding)


def _sgd_direction(p, g, buf, momentum, dampening, weight_decay, first, nesterov, maximize):
    """The step direction; ``buf`` in place. ``first`` (1.0 on a buffer's first step, which
    PyTorch starts as a copy of the gradient; else 0.0) is a parameter, so it never retraces:
    the buffer is then zeros (0 * 0 = 0 exactly) and the gradient's weight 1."""
    d = _grad(g, maximize)
    if weight_decay is not None:
        d = d + weight_decay * p
    if buf is None:
        return d
    buf[...] = (momentum * (1 - first)) * buf + (1 - dampening * (1 - first)) * d
    return d + momentum * buf if nesterov else buf


@fuse
def _sgd(p, g, lr, weight_decay, maximize):
    p[...] = p - lr * _sgd_direction(p, g, None, 0, 0, weight_decay, 0, False, maximize)


@fuse
def _sgd_momentum(p, g, buf, lr, momentum, dampening, weight_decay, first, nesterov, maximize):
    d = _sgd_direction(p, g, buf, momentum, dampening, weight_decay, first, nesterov, maximize)
    p[...] = p - lr * d


@fuse(static_argnames="rounding")
def _sgd_momentum_master(p, w, g, buf, lr, momentum, dampening, weight_decay, first, nesterov,
                         maximize, rounding):
    d = _sgd_direction(w, g.astype(w.dtype), buf, momentum, dampening, weight_decay, first,
                       nesterov, maximize)
    w[...] = w - lr * d
    _store(p, w, rounding)


@fuse(static_argnames="rounding")
def _sgd_master(p, w, g, lr, weight_decay, maximize, rounding):
    w[...] = w - lr * _sgd_direction(w, g.astype(w.dtype), None, 0, 0, weight_decay, 0, False,
                                     maximize)
    _store(p, w, rounding)


def _lion_core(p, g, m, lr, beta1, beta2, weight_decay):
    update = _sign(m * beta1 + g * (1 - beta1))
    m[...] = m * beta2 + g * (1 - beta2)
    return p * (1 - lr * weight_decay) - lr * update


@fuse
def _lion(p, g, m, lr, beta1, beta2, weight_decay, maximize):
    p[...] = _lion_core(p, _grad(g, maximize), m, lr, beta1, beta2, weight_decay)


@fuse(static_argnames="rounding")
def _lion_master(p, w, g, m, lr, beta1, beta2, weight_decay, maximize, rounding):
    g = _grad(g.astype(w.dtype), maximize)
    w[...] = _lion_core(w, g, m, lr, beta1, beta2, weight_decay)
    _store(p, w, rounding)


def _lamb_core(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step, bias_correction):
    m[...] = m * beta1 + g * (1 - beta1)
    v[...] = v * beta2 + g * g * (1 - beta2)
    if bias_correction:
        m, v = m / (1 - beta1 ** step), v / (1 - beta2 ** step)
    u = m / (_sqrt(v) + eps) + weight_decay * p
    # per tensor: the norms' partials, their fold, then this step (fuse/pertensor.py)
    w_norm, u_norm = tensor_norm(p), tensor_norm(u)
    trust = _where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
    return p - (lr * trust) * u


@fuse
def _lamb(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step, bias_correction, maximize):
    p[...] = _lamb_core(p, _grad(g, maximize), m, v, lr, beta1, beta2, eps, weight_decay, step,
                        bias_correction)


@fuse(static_argnames="rounding")
def _lamb_master(p, w, g, m, v, lr, beta1, beta2, eps, weight_decay, step, bias_correction,
                 maximize, rounding):
    g = _grad(g.astype(w.dtype), maximize)
    w[...] = _lamb_core(w, g, m, v, lr, beta1, beta2, eps, weight_decay, step, bias_correction)
    _store(p, w, rounding)


@fuse
def _add(s, by):
    s += by


# ---- the public steps -----------------------------------------------------------------------


def increment(steps, by=1.0) -> None:
    """Add ``by`` to a device step count (a 0-d array) or to each of a list of them, in place:
    one launch, so it can stand inside a captured step (``fa.capture``)."""
    if isinstance(steps, (list, tuple)):
        _add.foreach(list(steps), by)
    else:
        _add(steps, by)


def _step(step):
    """A Python step count as a float parameter; a 0-d array (on the device) as it is."""
    return step if hasattr(step, "ndim") else float(step)


_generator: list = []      # stochastic_rounding=True's generator, made on first use


def _rounding(stochastic_rounding, master_params):
    """The generator a master step rounds the parameters from, or None (to nearest)."""
    if stochastic_rounding is None or stochastic_rounding is False:
        return None
    if master_params is None:
        raise ValueError("stochastic_rounding rounds 16-bit parameters from their float32 "
                         "masters: pass master_params= (torch classes: master_weights=True)")
    if stochastic_rounding is True:
        if not _generator:
            _generator.append(default_rng())
        return _generator[0]
    if not isinstance(stochastic_rounding, Generator):
        raise TypeError(f"stochastic_rounding must be a bool or a fa.random.Generator, got "
                        f"{type(stochastic_rounding).__name__}")
    return stochastic_rounding


def _masters(kernel_plain, kernel_master, params, master_params, lists, scalars,
             stochastic_rounding=False):
    rounding = _rounding(stochastic_rounding, master_params)
    if master_params is None:
        return kernel_plain.foreach(params, *lists, *scalars)
    return kernel_master.foreach(params, master_params, *lists, *scalars, rounding)


def adamw(params, grads, exp_avgs, exp_avg_sqs, *, step, lr=1e-3, beta1=0.9, beta2=0.999,
          eps=1e-8, weight_decay=1e-2, maximize=False, master_params=None,
          stochastic_rounding=False) -> None:
    """AdamW (decoupled weight decay) in place over the lists: ``torch.optim.AdamW``'s step.
    ``step`` counts from 1 (the step being taken)."""
    _masters(_adamw, _adamw_master, params, master_params, (grads, exp_avgs, exp_avg_sqs),
             (lr, beta1, beta2, eps, weight_decay, _step(step), bool(maximize)),
             stochastic_rounding)


def adam(params, grads, exp_avgs, exp_avg_sqs, *, step, lr=1e-3, beta1=0.9, beta2=0.999,
         eps=1e-8, weight_decay=0.0, maximize=False, master_params=None,
         stochastic_rounding=False) -> None:
    """Adam (L2 weight decay added to the gradient) in place: ``torch.optim.Adam``'s step."""
    _masters(_adam, _adam_master, params, master_params, (grads, exp_avgs, exp_avg_sqs),
             (lr, beta1, beta2, eps, weight_decay, _step(step), bool(maximize)),
             stochastic_rounding)


def sgd(params, grads, momentum_buffers=None, *, lr=1e-3, momentum=0.0, dampening=0.0,
        weight_decay=0.0, nesterov=False, maximize=False, first=False,
        master_params=None, stochastic_rounding=False) -> None:
    """SGD in place: ``torch.optim.SGD``'s step. ``momentum_buffers`` (needed where
    ``momentum`` is not 0): arrays like the parameters; on their ``first`` step they must hold
    zeros and become the gradient, as PyTorch's buffers start."""
    wd = float(weight_decay) if weight_decay else None
    if not momentum:
        _masters(_sgd, _sgd_master, params, master_params, (grads,), (lr, wd, bool(maximize)),
                 stochastic_rounding)
        return
    if momentum_buffers is None:
        raise ValueError(f"sgd: momentum={momentum} needs momentum_buffers (zeros like the "
                         "parameters, before the first step)")
    _masters(_sgd_momentum, _sgd_momentum_master, params, master_params,
             (grads, momentum_buffers), (lr, momentum, dampening, wd, 1.0 if first else 0.0,
                                         bool(nesterov), bool(maximize)), stochastic_rounding)


def lion(params, grads, exp_avgs, *, lr=1e-4, beta1=0.9, beta2=0.99, weight_decay=0.0,
         maximize=False, master_params=None, stochastic_rounding=False) -> None:
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms") in place:
    ``p -= lr * (sign(beta1 * m + (1 - beta1) * g) + weight_decay * p)``, then
    ``m = beta2 * m + (1 - beta2) * g``."""
    _masters(_lion, _lion_master, params, master_params, (grads, exp_avgs),
             (lr, beta1, beta2, weight_decay, bool(maximize)), stochastic_rounding)


def lamb(params, grads, exp_avgs, exp_avg_sqs, *, step, lr=1e-3, beta1=0.9, beta2=0.999,
         eps=1e-6, weight_decay=0.0, bias_correction=True, maximize=False,
         master_params=None, stochastic_rounding=False) -> None:
    """LAMB (You et al. 2020) in place: Adam's direction ``u = m̂ / (sqrt(v̂) + eps) + wd * p``
    scaled per tensor by the trust ratio ``‖p‖ / ‖u‖`` (1 where either norm is 0), then
    ``p -= lr * trust * u``. Three launches per dtype group for any number of tensors
    (``fa.tensor_norm``: the norms' partials, their fold per tensor, the step)."""
    _masters(_lamb, _lamb_master, params, master_params, (grads, exp_avgs, exp_avg_sqs),
             (lr, beta1, beta2, eps, weight_decay, _step(step), bool(bias_correction),
              bool(maximize)), stochastic_rounding)


def kernels() -> dict:
    """The fused functions by name (``f.explain()``, ``fa.explain(f)`` on them)."""
    return {name[1:]: f for name, f in globals().items()
            if name.startswith("_") and hasattr(f, "foreach")}


__all__ = ["adam", "adamw", "increment", "kernels", "lamb", "lion", "sgd"]
