"""``torch.optim.Optimizer`` faces of the fused steps: ``AdamW``, ``Adam``, ``SGD``, ``Lion``,
``LAMB`` over PyTorch parameters.

Where it sits: the only module of fusedarrays that imports torch (``fusedarrays.optim`` loads it
on first use). The class only groups, stores state and schedules; the math is
:mod:`.functional`'s. Parameters, gradients and states are viewed through DLPack without a copy
(the views cached while the tensors live, :class:`_Views`), so the kernels read ``p.grad`` and
write ``p`` and the states in place. A step's parameters are bucketed by device and step count
(``foreach`` makes the dtype groups itself): one launch per bucket and dtype. The buckets and
their view lists are kept per param group between steps (:mod:`.plan`): a step whose
parameters and gradients are the ones of the last makes no Python call per tensor.

State keys and the ``step`` tensor are ``torch.optim``'s own (a float32 0-d cpu tensor, one
object shared by the parameters stepped together: a step adds 1 once per bucket; ``state_dict``
gives each parameter its own copy), so ``state_dict`` loads into ``torch.optim.AdamW`` and back.
Groups carry torch's keys too (``foreach``, ``fused``, ``capturable``, ...; this class ignores
them). ``master_weights=True`` keeps, for bfloat16 and float16 parameters, a float32 copy in
``state["master_param"]`` and float32 states; the step updates the copy and stores the
parameter from it, rounded to nearest even, or with ``stochastic_rounding=True`` up or down at
random from a ``fa.random`` generator seeded with ``torch.initial_seed()`` (unbiased; its
position is not in ``state_dict``).

``capturable=True`` (Adam, AdamW, LAMB; torch's meaning): the step count lives on the
parameters' device, one 0-d float32 tensor shared by the parameters of a group on a device
(``state["step"]`` of each; ``state_dict`` gives each its own copy, as torch keeps them), added
to by a launch inside the step, and read by the kernel, as is ``lr`` where it is a tensor: the
step can be captured once and replayed, by ``fa.capture()`` / ``fa.graph(opt.step)`` or inside
``torch.cuda.graph`` (after one eager step: it makes the states and foreach tables). A float
``lr`` is baked into a captured step (a scheduler's new value needs ``lr`` as a tensor).

Ordering: fa launches on the device's default (legacy) stream, which is PyTorch's default
stream. Inside ``torch.cuda.stream(s)`` the step first makes the default stream wait for ``s``
and afterwards ``s`` for the default stream (two events), so the step reads the gradients that
work queued on ``s`` wrote, and work queued on ``s`` after it reads the new parameters.
"""

from __future__ import annotations

import contextlib
import weakref

import torch

from ..api.devices import default_device
from ..api.interop import from_dlpack
from ..api.random import default_rng
from ..errors import CaptureError, DTypeError, UnsupportedOperationError
from ..runtime.capture import capturing, on_stream
from . import functional as F
from .plan import GRAD, Bucket, Plan

_LOW = (torch.bfloat16, torch.float16)


class _Views:
    """fa views of tensors through DLPack, made once per tensor (a new ``p.grad`` tensor, or
    one whose storage moved, is viewed again)."""

    def __init__(self):
        self._found: dict[int, tuple] = {}

    def __call__(self, t: torch.Tensor):
        found = self._found.get(id(t))
        if found is not None and found[0]() is t and found[1] == t.data_ptr():
            return found[2]
        if not t.is_contiguous():
            raise UnsupportedOperationError(
                f"fusedarrays.optim: a tensor of shape {tuple(t.shape)} with strides "
                f"{t.stride()} is not contiguous; the fused step walks tensors whole "
                "(pass contiguous parameters, gradients and states)")
        try:
            view = from_dlpack(t.detach())
        except (RuntimeError, BufferError, TypeError) as exc:
            raise DTypeError(f"fusedarrays.optim: a {t.dtype} tensor on {t.device} does not "
                             f"reach fusedarrays through DLPack without a copy ({exc}); use "
                             "float32 or float64 parameters") from exc
        if len(self._found) > 64 and len(self._found) % 64 == 0:
            self._found = {k: v for k, v in self._found.items() if v[0]() is not None}
        self._found[id(t)] = (weakref.ref(t), t.data_ptr(), view)
        return view

    def clear(self) -> None:
        self._found.clear()


@contextlib.contextmanager
def _on_current_stream(devices: set):
    """Order fa's launches (on the default stream) after, and before, the work of PyTorch's
    current stream on each cuda device of ``devices``."""
    pairs = []
    for device in devices:
        if device.type == "cuda":
            current = torch.cuda.current_stream(device)
            default = torch.cuda.default_stream(device)
            if current != default:
                default.wait_stream(current)
                pairs.append((current, default))
    try:
        yield
    finally:
        for current, default in pairs:
            current.wait_stream(default)


def _check_device(t: torch.Tensor, here: str) -> None:
    want = "cuda" if t.device.type == "cuda" else "cpu"
    if (want == "cuda") != (here == "cuda"):
        raise UnsupportedOperationError(
            f"fusedarrays.optim: a parameter is on {t.device} but fusedarrays' backend is "
            f"{here!r}; its writes would land in a copy. Set FUSEDARRAYS_BACKEND=cuda for cuda "
            "tensors, cpu for cpu tensors")


class _FusedOptimizer(torch.optim.Optimizer):
    """What the five optimizers share: the step loop, state creation, bucketing, views,
    master weights and the state-dict policy. A subclass names its ``_STATES`` (tensors like
    the parameter) and implements ``_run(group, bucket, step, rounding)``; ``_NAMES`` renames
    a state key to its functional step's argument."""

    _STATES: tuple[str, ...] = ()
    _NAMES = {"exp_avg": "exp_avgs", "exp_avg_sq": "exp_avg_sqs",
              "momentum_buffer": "momentum_buffers"}
    _COUNTS_STEPS = True

    def __init__(self, params, defaults: dict):
        defaults.setdefault("master_weights", False)
        defaults.setdefault("stochastic_rounding", False)
        if defaults["stochastic_rounding"] and not defaults["master_weights"]:
            raise ValueError(f"fusedarrays.optim.{type(self).__name__}: stochastic_rounding=True "
                             "rounds parameters from their float32 masters: pass "
                             "master_weights=True too")
        super().__init__(params, defaults)
        self._views = _Views()
        self._plans: dict[int, Plan] = {}     # id(param group) → its kept step (plan.py)
        # stochastic rounding's stream: seeded from torch's, so torch.manual_seed repeats it
        self._rounding = None
        if defaults["stochastic_rounding"]:
            self._rounding = default_rng(torch.initial_seed())

    def _master(self, group: dict, p: torch.Tensor) -> bool:
        return bool(group.get("master_weights")) and p.dtype in _LOW

    def _init_state(self, group: dict, p: torch.Tensor) -> dict:
        state = self.state[p]
        master = self._master(group, p)
        if master and "master_param" not in state:
            state["master_param"] = p.detach().to(torch.float32, copy=True)
        like = state["master_param"] if master else p
        for key in self._STATES:
            if key not in state:
                state[key] = torch.zeros_like(like, memory_format=torch.preserve_format)
        if self._COUNTS_STEPS and "step" not in state:
            state["step"] = (self._shared_step(group, p) if group.get("capturable")
                             else torch.tensor(0.0, dtype=torch.float32))
        return state

    def _shared_step(self, group: dict, p: torch.Tensor) -> torch.Tensor:
        """The device step count of ``group``'s parameters on ``p``'s device (made at 0)."""
        for q in group["params"]:
            step = self.state.get(q, {}).get("step")
            if step is not None and q.device == p.device and step.device == p.device:
                return step
        return torch.zeros((), dtype=torch.float32, device=p.device)

    @torch.no_grad()
    def step(self, closure=None):
        """One step over every parameter with a gradient; ``closure`` re-evaluates the loss
        (with autograd on) and its value is returned."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        here = default_device().kind
        work = [plan for plan in [self._plan(g, here) for g in self.param_groups]
                if plan.buckets]
        devices = set().union(*(plan.devices for plan in work))
        graphed = any(d.type == "cuda" for d in devices) and \
            torch.cuda.is_current_stream_capturing()
        if (graphed or capturing[0] is not None) and not all(
                p.group.get("capturable") or not self._COUNTS_STEPS for p in work):
            raise CaptureError(
                f"fusedarrays.optim.{type(self).__name__}: a step captured into a graph needs "
                "capturable=True (its step count on the device; a host count would stay the "
                "captured one at every replay)")
        # inside torch.cuda.graph: fa's launches on PyTorch's capturing stream
        with on_stream(torch.cuda.current_stream()) if graphed else _on_current_stream(devices):
            for plan in work:
                self._step_plan(plan)
        return loss

    def _shape(self, group: dict) -> tuple:
        """The group's keys that change its buckets or lists (a change builds the plan again)."""
        return bool(group.get("master_weights")), bool(group.get("capturable"))

    def _plan(self, group: dict, here: str) -> Plan:
        """``group``'s plan, checked against its parameters and gradients (plan.py)."""
        params = group["params"]
        grads = list(map(GRAD, params))
        shape = self._shape(group)
        plan = self._plans.get(id(group))
        fits = 0 if plan is None else plan.fits(group, shape, self.state, here, params, grads)
        if fits == 1:
            self._regrad(plan, grads)
        elif fits == 0:
            plan = self._plans[id(group)] = self._build(group, shape, here, params, grads)
        return plan

    def _checked_grad(self, p: torch.Tensor) -> torch.Tensor:
        if p.grad.is_sparse:
            raise UnsupportedOperationError(
                f"fusedarrays.optim.{type(self).__name__}: sparse gradients are not "
                "supported; use a dense gradient")
        return _grad_like(p)

    def _regrad(self, plan: Plan, grads: list) -> None:
        """New gradient tensors for the same parameters: only their views made again."""
        for bucket in plan.buckets:
            bucket.lists["grads"] = [self._views(self._checked_grad(p)) for p, _ in
                                     bucket.members]
        plan.remember(grads)

    def _build(self, group: dict, shape: tuple, here: str, params: list, grads: list) -> Plan:
        plan = Plan(group, shape, self.state, here, params, grads)
        for p in plan.params:
            self._checked_grad(p)
            _check_device(p, here)
        capturable = group.get("capturable")
        buckets: dict[tuple, Bucket] = {}
        for p in plan.params:
            state = self._init_state(group, p)
            master = self._master(group, p)
            count = None
            if self._COUNTS_STEPS:
                count = id(state["step"]) if capturable else float(state["step"])
            key = (p.device, count, master, self._bucket_key(state))
            if key not in buckets:
                buckets[key] = Bucket([], master, key[3])
            buckets[key].members.append((p, state))
        for (_, count, _, _), bucket in buckets.items():
            self._prepare(group, bucket, count, capturable)
        plan.buckets = list(buckets.values())
        plan.once = any(bool(b.key) for b in plan.buckets)
        return plan

    def _prepare(self, group: dict, bucket: Bucket, count, capturable) -> None:
        """A bucket's view lists and its one step count (shared by its members)."""
        members = bucket.members
        if self._COUNTS_STEPS and capturable:
            bucket.step = members[0][1]["step"]
            bucket.step_view = self._views(bucket.step)
        elif self._COUNTS_STEPS:
            bucket.step = torch.tensor(count, dtype=torch.float32)
            for _, state in members:
                state["step"] = bucket.step
        view = self._views
        lists = bucket.lists
        lists["params"] = [view(p) for p, _ in members]
        lists["grads"] = [view(_grad_like(p)) for p, _ in members]
        lists["master_params"] = ([view(s["master_param"]) for _, s in members]
                                  if bucket.master else None)
        for key in self._state_keys(group):
            lists[self._NAMES.get(key, key)] = [view(s[key]) for _, s in members]

    def _state_keys(self, group: dict) -> tuple:
        return self._STATES

    def _step_plan(self, plan: Plan) -> None:
        group = plan.group
        for bucket in plan.buckets:
            if not self._COUNTS_STEPS:
                step = 0.0
            elif bucket.step_view is not None:      # capturable: one launch adds 1
                F.increment(bucket.step_view)
                step = bucket.step_view
            else:
                bucket.step.add_(1)
                step = bucket.step.item()
            rounding = (self._rounding if bucket.master and self._rounding is not None
                        and group.get("stochastic_rounding") else False)
            self._run(group, bucket, step, rounding)
        if plan.once:
            del self._plans[id(group)]

    def _bucket_key(self, state: dict):
        return None

    def _lr(self, group: dict):
        """``lr``: a float, or a tensor's fa view (read by the kernel: capturable)."""
        lr = group["lr"]
        if torch.is_tensor(lr):
            return self._views(lr.to(torch.float32) if lr.dtype != torch.float32 else lr)
        return float(lr)

    def state_dict(self) -> dict:
        """torch's, with each parameter's own copy of a shared step count (torch keeps one
        per parameter; a shared one would be counted once per parameter there)."""
        out = super().state_dict()
        out["state"] = {k: ({**v, "step": v["step"].clone()} if torch.is_tensor(v.get("step"))
                            and v["step"].dim() == 0 else v)
                        for k, v in out["state"].items()}
        return out

    def _run(self, group: dict, bucket: Bucket, step, rounding) -> None:
        raise NotImplementedError

    def zero_grad(self, set_to_none: bool = True) -> None:
        super().zero_grad(set_to_none)
        if set_to_none:
            self._views.clear()   # the views held the old gradients' memory
            for plan in self._plans.values():
                plan.forget_grads()

    def load_state_dict(self, state_dict: dict) -> None:
        """torch's, then two corrections: torch casts every float state to its parameter's
        dtype, so a master group's float32 masters and states are taken again from
        ``state_dict``; and ``step`` becomes a cpu float32 tensor (torch's fused optimizers
        keep it on the device; this one reads it on the host)."""
        self._plans.clear()
        super().load_state_dict(state_dict)
        saved = [i for g in state_dict["param_groups"] for i in g["params"]]
        shared: dict = {}       # capturable: (group, device) → its step count
        for group_id, p in zip(saved, (p for g in self.param_groups for p in g["params"])):
            state = self.state.get(p)
            if not state:
                continue
            group = next(g for g in self.param_groups if any(q is p for q in g["params"]))
            if "step" in state and group.get("capturable"):   # one count per group and device
                key = (id(group), p.device)
                if key not in shared:
                    shared[key] = state["step"].to(p.device, torch.float32).clone()
                state["step"] = shared[key]
            elif "step" in state:
                state["step"] = state["step"].to("cpu", torch.float32)
            if self._master(group, p):
                for key, value in state_dict["state"].get(group_id, {}).items():
                    if key != "step" and torch.is_tensor(value) and value.is_floating_point():
                        state[key] = value.to(device=p.device, dtype=torch.float32,
                                              copy=True)


def _grad_like(p: torch.Tensor) -> torch.Tensor:
    g = p.grad
    if g.dtype != p.dtype and p.dtype not in _LOW:
        raise DTypeError(f"fusedarrays.optim: a gradient of dtype {g.dtype} for a parameter "
                         f"of dtype {p.dtype}; gradients must have the parameter's dtype")
    return g


def _betas(group: dict) -> tuple[float, float]:
    beta1, beta2 = group["betas"]
    return float(beta1), float(beta2)


class Adam(_FusedOptimizer):
    """``torch.optim.Adam`` (L2 weight decay) as one fused launch per device, step and dtype.

    >>> import torch, fusedarrays.optim as fo
    >>> model = torch.nn.Linear(4, 2)
    >>> opt = fo.Adam(model.parameters(), lr=1e-3)
    """

    _STATES = ("exp_avg", "exp_avg_sq")
    _DECOUPLED = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=None,
                 amsgrad=False, *, maximize=False, master_weights=False, foreach=None,
                 capturable=False, differentiable=False, fused=None, stochastic_rounding=False):
        if weight_decay is None:
            weight_decay = 1e-2 if self._DECOUPLED else 0.0
        _check_hyper(type(self).__name__, lr=lr, eps=eps, weight_decay=weight_decay,
                     beta1=betas[0], beta2=betas[1])
        if amsgrad:
            raise UnsupportedOperationError(
                f"fusedarrays.optim.{type(self).__name__}: amsgrad=True is not implemented; "
                "use torch.optim's")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=False, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=self._DECOUPLED,
                        master_weights=master_weights, stochastic_rounding=stochastic_rounding)
        super().__init__(params, defaults)

    def _run(self, group, bucket, step, rounding):
        beta1, beta2 = _betas(group)
        step_fn = F.adamw if group.get("decoupled_weight_decay", self._DECOUPLED) else F.adam
        step_fn(**bucket.lists, stochastic_rounding=rounding, step=step, lr=self._lr(group),
                beta1=beta1, beta2=beta2, eps=float(group["eps"]),
                weight_decay=float(group["weight_decay"]), maximize=group["maximize"])


class AdamW(Adam):
    """``torch.optim.AdamW`` (decoupled weight decay, default 0.01) as one fused launch per
    device, step and dtype; its ``state_dict`` loads into ``torch.optim.AdamW`` and back."""

    _DECOUPLED = True


class SGD(_FusedOptimizer):
    """``torch.optim.SGD`` (momentum, dampening, Nesterov, weight decay, maximize)."""

    _COUNTS_STEPS = False

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, master_weights=False, foreach=None,
                 differentiable=False, fused=None, stochastic_rounding=False):
        _check_hyper("SGD", lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused,
                        master_weights=master_weights, stochastic_rounding=stochastic_rounding)
        super().__init__(params, defaults)

    def _init_state(self, group, p):
        state = super()._init_state(group, p)
        if group["momentum"] and state.get("momentum_buffer") is None:
            like = state["master_param"] if self._master(group, p) else p
            state["momentum_buffer"] = torch.zeros_like(like)
            state["_fa_first"] = True
        return state

    def _bucket_key(self, state):
        return bool(state.pop("_fa_first", False))

    def _shape(self, group):
        return (*super()._shape(group), bool(group["momentum"]))

    def _state_keys(self, group):
        return ("momentum_buffer",) if group["momentum"] else ()

    def _run(self, group, bucket, step, rounding):
        # a buffer's first step (PyTorch starts it as the gradient) is a parameter of the
        # step, so buckets split on it (_bucket_key pops the mark; the plan is built again)
        F.sgd(**bucket.lists, stochastic_rounding=rounding, lr=float(group["lr"]),
              momentum=float(group["momentum"]), dampening=float(group["dampening"]),
              weight_decay=float(group["weight_decay"]), nesterov=group["nesterov"],
              maximize=group["maximize"], first=bool(bucket.key))


class Lion(_FusedOptimizer):
    """Lion (Chen et al. 2023): ``p -= lr * (sign(b1 m + (1 - b1) g) + wd p)``, then
    ``m = b2 m + (1 - b2) g``; state ``exp_avg``."""

    _STATES = ("exp_avg",)
    _COUNTS_STEPS = False

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, *,
                 maximize=False, master_weights=False, stochastic_rounding=False):
        _check_hyper("Lion", lr=lr, weight_decay=weight_decay, beta1=betas[0], beta2=betas[1])
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay,
                                      maximize=maximize, master_weights=master_weights,
                                      stochastic_rounding=stochastic_rounding))

    def _run(self, group, bucket, step, rounding):
        beta1, beta2 = _betas(group)
        F.lion(**bucket.lists, stochastic_rounding=rounding, lr=float(group["lr"]),
               beta1=beta1, beta2=beta2, weight_decay=float(group["weight_decay"]),
               maximize=group["maximize"])


class LAMB(_FusedOptimizer):
    """LAMB (You et al. 2020): Adam's direction plus weight decay, scaled per tensor by the
    trust ratio ``‖p‖ / ‖u‖``; three launches for any number of tensors."""

    _STATES = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, *,
                 bias_correction=True, maximize=False, master_weights=False, capturable=False,
                 stochastic_rounding=False):
        _check_hyper("LAMB", lr=lr, eps=eps, weight_decay=weight_decay, beta1=betas[0],
                     beta2=betas[1])
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      bias_correction=bias_correction, maximize=maximize,
                                      master_weights=master_weights, capturable=capturable,
                                      stochastic_rounding=stochastic_rounding))

    def _run(self, group, bucket, step, rounding):
        beta1, beta2 = _betas(group)
        F.lamb(**bucket.lists, stochastic_rounding=rounding, step=step, lr=self._lr(group),
               beta1=beta1, beta2=beta2, eps=float(group["eps"]),
               weight_decay=float(group["weight_decay"]),
               bias_correction=group["bias_correction"], maximize=group["maximize"])


def _check_hyper(name: str, **values) -> None:
    """torch.optim's argument checks, with its messages' facts."""
    for key, value in values.items():
        if key.startswith("beta"):
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name}: invalid {key} {value!r}; it must be in [0, 1)")
        elif not isinstance(value, torch.Tensor) and value < 0.0:
            raise ValueError(f"{name}: invalid {key} {value!r}; it must be >= 0")


__all__ = ["LAMB", "SGD", "Adam", "AdamW", "Lion"]
