"""Optimizer steps written once for ``fa.fuse``; run on NumPy arrays they are the references.

Each updates its state in place with ``np.<ufunc>``, operators and ``[...] =``, which mean the
same on fa arrays (fused, traced) and on NumPy arrays (eager): the NumPy run of the very same
function is the reference, with NumPy's own dtypes and roundings. The formulas follow
``torch.optim`` (non-foreach, non-fused paths) so the GPU tests can compare with it.
"""

import numpy as np


def adam(p, g, m, v, lr, beta1, beta2, eps, step):
    m[...] = beta1 * m + (1 - beta1) * g
    v[...] = beta2 * v + (1 - beta2) * g * g
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    p -= step_size * (m / (np.sqrt(v) / bias_correction2_sqrt + eps))


def adamw(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step):
    p *= 1 - lr * weight_decay
    adam(p, g, m, v, lr, beta1, beta2, eps, step)


def sgd(p, g, buf, lr, momentum, dampening, weight_decay, nesterov):
    d = g + weight_decay * p
    buf[...] = momentum * buf + (1 - dampening) * d
    p -= lr * (d + momentum * buf if nesterov else buf)


def rmsprop(p, g, square_avg, lr, alpha, eps):
    square_avg[...] = alpha * square_avg + (1 - alpha) * g * g
    p -= lr * (g / (np.sqrt(square_avg) + eps))


def state(n, seed=0, dtype=np.float32, count=4):
    """``count`` arrays of ``n`` values (the last non-negative: a second-moment state)."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(n).astype(dtype) for _ in range(count)]
    arrays[-1] = np.abs(arrays[-1])
    return arrays


ADAM_STEPS = [dict(lr=1e-2 / k, beta1=0.9, beta2=0.999, eps=1e-8, step=k) for k in range(1, 5)]
