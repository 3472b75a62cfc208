"""A param group's prepared step, kept between steps: the host side of a fused optimizer step.

Where it sits: under :mod:`.torch_optim` (which alone loads it, so it may import torch). A step
over 148 tensors spent ~1 ms of host time per step re-deriving, per parameter, what had not
changed: its state, device check, bucket and the fa views of ``p``, ``p.grad`` and the states
(issue 34 item 5). A :class:`Plan` keeps that per param group: the buckets (one launch each),
their view lists and their step counts. A step then checks, in a few C-level passes over the
group (``map`` over ``id`` and ``data_ptr``, no Python call per tensor), that the same
parameters have the same gradients in the same memory, and runs one launch per bucket.

What makes it stale, and what is done then:

- new gradient tensors with the same parameters having one (``zero_grad()`` then backward):
  only the gradients' views are made again (:meth:`Plan.regrad`);
- a gradient that appears or turns ``None``, a parameter replaced or moved (``p.data = ...``),
  the group's shape keys (``master_weights``, ``capturable``; SGD's momentum on or off), a
  new ``state`` (``load_state_dict``) or the backend: the plan is built again.

Step counts: the members of a bucket share one 0-d step tensor (``state["step"]`` of each;
``state_dict`` gives each its own copy), so a step's bookkeeping is one tensor op per bucket.
"""

from __future__ import annotations

from operator import attrgetter

import torch

GRAD = attrgetter("grad")
_PTR = torch.Tensor.data_ptr


class Bucket:
    """Parameters stepped by one launch: ``lists`` are the functional step's view lists by
    argument name; ``step`` the shared count tensor (``step_view``: its fa view, capturable);
    ``key`` the subclass's bucket key (SGD: a momentum buffer's first step)."""

    __slots__ = ("members", "master", "key", "step", "step_view", "lists")

    def __init__(self, members, master, key):
        self.members, self.master, self.key = members, master, key
        self.step = self.step_view = None
        self.lists: dict = {}


class Plan:
    """One param group's buckets and what they were built from (compared at every step)."""

    __slots__ = ("group", "shape", "state", "here", "params", "param_ids", "param_ptrs",
                 "mask", "grads", "grad_ids", "grad_ptrs", "buckets", "devices", "once")

    def __init__(self, group, shape, state, here, params, grads):
        self.group, self.shape, self.state, self.here = group, shape, state, here
        self.params = [p for p, g in zip(params, grads) if g is not None]
        self.param_ids = list(map(id, params))
        self.param_ptrs = list(map(_PTR, self.params))
        self.mask = [g is not None for g in grads]
        self.devices = {p.device for p in self.params}
        self.buckets: list[Bucket] = []
        self.once = False       # SGD's first momentum step: built again after it
        self.remember(grads)

    def remember(self, grads) -> None:
        self.grads = [g for g in grads if g is not None]
        self.grad_ids = list(map(id, grads))
        self.grad_ptrs = list(map(_PTR, self.grads))

    def forget_grads(self) -> None:
        """Drop the gradients (``zero_grad(set_to_none=True)``: their memory is freed)."""
        self.grads, self.grad_ids, self.grad_ptrs = [], None, None
        for bucket in self.buckets:
            bucket.lists["grads"] = None

    def fits(self, group, shape, state, here, params, grads) -> int:
        """2: nothing changed; 1: only new gradient tensors (same parameters have one);
        0: build again."""
        if (self.group is not group or self.shape != shape or self.state is not state
                or self.here != here or self.param_ids != list(map(id, params))
                or self.param_ptrs != list(map(_PTR, self.params))):
            return 0
        if self.grad_ids == list(map(id, grads)) and \
                self.grad_ptrs == list(map(_PTR, self.grads)):
            return 2
        return 1 if self.mask == [g is not None for g in grads] else 0
