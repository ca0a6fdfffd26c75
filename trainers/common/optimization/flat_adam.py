"""Adam over a :class:`~trainers.common.optimization.parameter_buffer.ParameterBuffer`.

The arithmetic is ``torch.optim.Adam``'s (no weight decay, no AMSGrad), but a step is one
fused kernel call over the whole buffer, without the per-parameter bookkeeping of
``torch.optim.Adam.step`` (about 0.15 ms per step, a quarter of a PPO minibatch on the small
networks of ML-Agents' scenes). The state dict has
``torch.optim.Adam``'s per-parameter layout (``step``, ``exp_avg``, ``exp_avg_sq`` for every
parameter), so checkpoints written with either optimizer load into the other.

Unlike ``torch.optim.Adam``, creating, stepping and (de)serializing this optimizer never
imports ``torch._dynamo`` (``torch.optim.Optimizer`` wraps ``add_param_group``,
``state_dict`` and ``load_state_dict`` to keep them out of ``torch.compile``, and the first
call imports the compiler: more than a second of start-up).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from trainers.common.optimization.parameter_buffer import ParameterBuffer

__all__ = ["FlatAdam"]

# The other hyperparameters of ``torch.optim.Adam``'s parameter groups, at the values this
# optimizer implements (kept in the state dict so that ``torch.optim.Adam`` can load it).
_TORCH_ADAM_DEFAULTS: dict[str, Any] = {
    "weight_decay": 0.0,
    "amsgrad": False,
    "maximize": False,
    "foreach": None,
    "capturable": False,
    "differentiable": False,
    "fused": None,
    "decoupled_weight_decay": False,
}
_UNSUPPORTED = ("weight_decay", "amsgrad", "maximize")
_FUSED_DEVICES = ("cpu", "cuda")


class FlatAdam(torch.optim.Optimizer):
    """Adam whose moments are flat tensors matching ``buffer``.

    Every parameter of the buffer takes every step: one that got no gradient has a zero one
    (``torch.optim.Adam`` would skip a parameter whose gradient is ``None``; here gradients are
    never ``None``). Hyperparameters are read from the single parameter group, so setting
    ``param_groups[0]["lr"]`` changes the learning rate as with any optimizer.

    Args:
        buffer: the parameters and their gradients.
        lr: learning rate.
        betas: decay rates of the first and second moment estimates.
        eps: added to the denominator.
        fused: take each step with PyTorch's fused Adam kernel where it has one (CPU, CUDA);
            otherwise, or with ``False``, with five whole-buffer tensor operations.
    """

    def __init__(
        self,
        buffer: ParameterBuffer,
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        fused: bool = True,
    ) -> None:
        defaults = {"lr": lr, "betas": betas, "eps": eps, **_TORCH_ADAM_DEFAULTS}
        self.buffer = buffer
        super().__init__(buffer.parameters, defaults)
        self.exp_avg = torch.zeros_like(buffer.data)
        self.exp_avg_sq = torch.zeros_like(buffer.data)
        # The step count as the fused kernel takes it (a float tensor on the buffer's device).
        self._step = torch.zeros((), dtype=torch.float32, device=buffer.data.device)
        self.fused = fused and buffer.data.device.type in _FUSED_DEVICES

    @property
    def steps_taken(self) -> int:
        """Steps taken so far (restored by :meth:`load_state_dict`)."""
        return int(self._step.item())

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Called once by the constructor with the buffer's parameters: the only group.

        Raises:
            ValueError: a second group, or parameters other than the buffer's.
        """
        if self.param_groups:
            raise ValueError("FlatAdam has a single parameter group, that of its buffer")
        parameters = list(param_group["params"])
        if len(parameters) != len(self.buffer.parameters) or any(
            given is not own for given, own in zip(parameters, self.buffer.parameters, strict=True)
        ):
            raise ValueError("FlatAdam optimizes exactly the parameters of its buffer")
        self.param_groups.append({**self.defaults, **param_group, "params": parameters})

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Zero all gradients in place (``set_to_none`` is ignored: the gradients are views of
        the buffer and must stay so)."""
        self.buffer.zero_grad()

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One Adam step on every parameter; ``closure`` re-evaluates the loss first."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        group = self.param_groups[0]
        beta1, beta2 = group["betas"]
        buffer = self.buffer
        self._step.add_(1.0)
        if self.fused:
            torch._fused_adam_(
                [buffer.data],
                [buffer.grad],
                [self.exp_avg],
                [self.exp_avg_sq],
                [],
                [self._step],
                amsgrad=False,
                lr=float(group["lr"]),
                beta1=beta1,
                beta2=beta2,
                weight_decay=0.0,
                eps=group["eps"],
                maximize=False,
            )
            return loss
        steps = float(self._step)
        self.exp_avg.lerp_(buffer.grad, 1.0 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(buffer.grad, buffer.grad, value=1.0 - beta2)
        bias_correction1 = 1.0 - beta1**steps
        bias_correction2 = 1.0 - beta2**steps
        denominator = (self.exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(group["eps"])
        step_size = float(group["lr"]) / bias_correction1
        buffer.data.addcdiv_(self.exp_avg, denominator, value=-step_size)
        return loss

    def state_dict(self) -> dict[str, Any]:
        """``torch.optim.Adam``'s layout: ``state`` maps each parameter's index to its ``step``,
        ``exp_avg`` and ``exp_avg_sq``; ``param_groups`` holds the one group, its parameters
        as indices."""
        step = float(self.steps_taken)
        state = {
            index: {
                "step": torch.tensor(step),
                "exp_avg": self._moment_view(self.exp_avg, parameter).clone(),
                "exp_avg_sq": self._moment_view(self.exp_avg_sq, parameter).clone(),
            }
            for index, parameter in enumerate(self.buffer.parameters)
        }
        group = {key: value for key, value in self.param_groups[0].items() if key != "params"}
        group["params"] = list(range(len(self.buffer.parameters)))
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict of this optimizer or of a ``torch.optim.Adam`` over the same
        parameters (a parameter without state starts from zero moments).

        Raises:
            ValueError: the state dict is not an optimizer state dict, has another number of
                groups or parameters or moments of other shapes, or uses weight decay, AMSGrad
                or maximization.
        """
        groups = state_dict.get("param_groups") if isinstance(state_dict, dict) else None
        states = state_dict.get("state") if isinstance(state_dict, dict) else None
        if not isinstance(groups, list) or not isinstance(states, dict):
            raise ValueError("not an optimizer state dict (expected 'state' and 'param_groups')")
        if len(groups) != 1:
            raise ValueError(
                f"FlatAdam takes a state dict with one parameter group, not {len(groups)}"
            )
        saved_group = groups[0]
        indices = list(saved_group.get("params", []))
        parameters = self.buffer.parameters
        if len(indices) != len(parameters):
            raise ValueError(
                f"the state dict has {len(indices)} parameters, this optimizer {len(parameters)}"
            )
        used = [key for key in _UNSUPPORTED if saved_group.get(key)]
        if used:
            raise ValueError(f"FlatAdam does not implement Adam's {', '.join(used)}")
        exp_avg = torch.zeros_like(self.exp_avg)
        exp_avg_sq = torch.zeros_like(self.exp_avg_sq)
        steps = 0
        for index, parameter in zip(indices, parameters, strict=True):
            saved = states.get(index)
            if not saved:
                continue
            for name, moment in (("exp_avg", exp_avg), ("exp_avg_sq", exp_avg_sq)):
                value = torch.as_tensor(saved[name])
                if value.shape != parameter.shape:
                    raise ValueError(
                        f"the state dict's {name} of parameter {index} has shape "
                        f"{tuple(value.shape)}, the parameter {tuple(parameter.shape)}"
                    )
                self._moment_view(moment, parameter).copy_(value)
            steps = max(steps, int(float(saved["step"])))
        self.exp_avg.copy_(exp_avg)
        self.exp_avg_sq.copy_(exp_avg_sq)
        self._step.fill_(float(steps))
        group = self.param_groups[0]
        group.update({key: value for key, value in saved_group.items() if key != "params"})

    def _moment_view(self, moment: torch.Tensor, parameter: torch.Tensor) -> torch.Tensor:
        start = self.buffer.offset(parameter)
        return moment[start : start + parameter.numel()].view_as(parameter)
