"""Parameters that live in one contiguous tensor, and their gradients in another.

A trainer's networks have a dozen small parameter tensors; an optimizer step over them costs a
dozen kernel launches per operation, which dominates on small networks. :class:`ParameterBuffer`
moves the parameters (and their gradients) into one flat data tensor and one flat gradient
tensor, so an optimizer can update everything with a handful of whole-buffer operations
(:class:`~trainers.common.optimization.flat_adam.FlatAdam`). Every parameter keeps its identity,
shape and module, so module state dicts, checkpoints and ONNX export do not change.

Groups of same-shaped parameters (the same layer of two networks) can be laid out one after
another and exposed as one stacked leaf tensor (:meth:`ParameterBuffer.stacked`): a batched
matrix product over it evaluates the layer of every network at once, and its gradient lands in
the members' gradients because it is the same memory.

Contract: gradients accumulate in place (``zero_grad`` zeroes the buffer, never sets ``None``)
and nothing may replace a member's ``data`` or ``grad`` afterwards (no ``.to(device)``; load
weights with ``load_state_dict``, which copies in place).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["ParameterBuffer", "polyak_update"]


class ParameterBuffer:
    """Moves ``parameters`` into one data tensor and their gradients into one gradient tensor.

    Args:
        parameters: distinct parameters of one dtype and device; their current values are kept.
        stacks: groups of members of one shape each, laid out one after another; group ``i``
            is then available as the leaf :meth:`stacked(i) <stacked>` of shape
            ``(len(group), *shape)``.

    Raises:
        ValueError: no parameters, duplicates, mixed dtypes or devices, or a stack that mixes
            shapes or names a parameter twice or one that is not a member.
    """

    def __init__(
        self,
        parameters: Sequence[torch.Tensor],
        stacks: Sequence[Sequence[torch.Tensor]] = (),
    ) -> None:
        self.parameters = list(parameters)
        if not self.parameters:
            raise ValueError("a parameter buffer needs at least one parameter")
        members = {id(p) for p in self.parameters}
        if len(members) != len(self.parameters):
            raise ValueError("a parameter is listed twice")
        first = self.parameters[0]
        if any(p.dtype != first.dtype or p.device != first.device for p in self.parameters):
            raise ValueError("all parameters of a buffer need one dtype and one device")
        stacked_ids: set[int] = set()
        for group in stacks:
            if not group or any(p.shape != group[0].shape for p in group):
                raise ValueError("a stack needs parameters of one shape")
            for p in group:
                if id(p) not in members or id(p) in stacked_ids:
                    raise ValueError("a stack names a parameter twice or a non-member")
                stacked_ids.add(id(p))
        # Layout: each stack's members together, then the other parameters in the given order.
        order = [p for group in stacks for p in group]
        order += [p for p in self.parameters if id(p) not in stacked_ids]
        total = sum(p.numel() for p in order)
        self.data = torch.empty(total, dtype=first.dtype, device=first.device)
        self.grad = torch.zeros(total, dtype=first.dtype, device=first.device)
        self._offsets: dict[int, int] = {}
        offset = 0
        with torch.no_grad():
            for p in order:
                view = self.data[offset : offset + p.numel()].view_as(p)
                view.copy_(p)
                p.data = view
                p.grad = self.grad[offset : offset + p.numel()].view_as(p)
                self._offsets[id(p)] = offset
                offset += p.numel()
        self._stacks: list[nn.Parameter] = []
        for group in stacks:
            start = self._offsets[id(group[0])]
            size = len(group) * group[0].numel()
            shape = (len(group), *group[0].shape)
            leaf = nn.Parameter(self.data[start : start + size].view(shape))
            leaf.grad = self.grad[start : start + size].view(shape)
            self._stacks.append(leaf)

    def stacked(self, index: int) -> nn.Parameter:
        """The leaf tensor over stack ``index``: its data and gradient are the members'."""
        return self._stacks[index]

    def offset(self, parameter: torch.Tensor) -> int:
        """Where ``parameter`` starts in :attr:`data` and :attr:`grad`."""
        return self._offsets[id(parameter)]

    def zero_grad(self) -> None:
        """Zero every gradient (in place, so the members' gradients stay views)."""
        self.grad.zero_()

    def same_layout(self, other: ParameterBuffer) -> bool:
        """Whether ``other`` holds parameters of the same shapes at the same offsets, member by
        member (a copy of the same networks, built the same way)."""
        if len(self.parameters) != len(other.parameters) or self.data.shape != other.data.shape:
            return False
        return all(
            mine.shape == theirs.shape and self.offset(mine) == other.offset(theirs)
            for mine, theirs in zip(self.parameters, other.parameters, strict=True)
        )


@torch.no_grad()
def polyak_update(source: ParameterBuffer, target: ParameterBuffer, tau: float) -> None:
    """``target <- tau * source + (1 - tau) * target`` for every parameter, as two whole-buffer
    operations; the buffers must have the same layout (check it once with
    :meth:`ParameterBuffer.same_layout`).

    Raises:
        ValueError: the buffers differ in size.
    """
    if source.data.shape != target.data.shape:
        raise ValueError("Polyak averaging needs two buffers of the same layout")
    target.data.mul_(1.0 - tau).add_(source.data, alpha=tau)
