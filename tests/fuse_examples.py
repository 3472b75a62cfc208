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


# -- clip-by-global-norm, then Adam (fa.global_norm: the norm across a foreach list) --------------
def clipped_adam(p, g, m, v, lr, beta1, beta2, eps, step, max_norm):
    """``torch.nn.utils.clip_grad_norm_`` then Adam, the gradient clipped as a local value (not
    written back: one read of ``g`` fewer). Under ``f.foreach`` the norm is over every tensor."""
    import fusedarrays as fa

    g = g * fa.minimum(1.0, max_norm / (fa.global_norm(g) + 1e-6))
    adam(p, g, m, v, lr, beta1, beta2, eps, step)


def clipped_adam_reference(states, lr, beta1, beta2, eps, step, max_norm):
    """:func:`clipped_adam` over every ``[p, g, m, v]`` of ``states`` in float64 NumPy, the norm
    over all the gradients; returns the new ``[p, m, v]`` per tensor (``states`` untouched)."""
    norm = np.sqrt(sum(np.sum(np.square(s[1].astype(np.float64))) for s in states))
    clip = min(1.0, max_norm / (norm + 1e-6))
    out = []
    for p, g, m, v in ([a.astype(np.float64) for a in s] for s in states):
        g = g * clip
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        step_size = lr / (1 - beta1 ** step)
        p = p - step_size * (m / (np.sqrt(v) / (1 - beta2 ** step) ** 0.5 + eps))
        out.append([p, m, v])
    return out
