"""ONNX export of a policy with ML-Agents' tensor names (loadable by Unity's inference engine).

Inputs: ``obs_0`` ... ``obs_{k-1}`` (float32; vectors ``(batch, size)``, images
``(batch, C, H, W)`` in ``[0, 1]``), for discrete actions ``action_masks``
``(batch, sum(branches))`` float (1 = allowed, 0 = masked), and for a recurrent policy
``recurrent_in`` ``(batch, 1, memory_size)``, each agent's memory. Outputs (batch dimension
dynamic):

* ``version_number`` (3, ML-Agents 2.0 model API) and ``memory_size`` (0: no recurrence);
* continuous actions: ``continuous_actions`` (sampled), ``continuous_action_output_shape``,
  ``deterministic_continuous_actions`` (the mean), all in ``[-1, 1]``;
* discrete actions: ``discrete_actions`` (sampled indices), ``discrete_action_output_shape``
  (the branch sizes), ``deterministic_discrete_actions`` (argmax), int64 ``(batch, branches)``;
* recurrent policies: ``recurrent_out`` ``(batch, 1, memory_size)``, the memories after the step
  (Unity's inference feeds them back as the next ``recurrent_in``; ML-Agents' names and shapes).
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import torch
from torch import nn

from trainers.common.checkpoints.files import atomic_target
from trainers.common.networks.models import PolicyNetwork
from trainers.common.spaces import ObservationLayout

__all__ = ["MODEL_API_VERSION", "ONNX_OPSET", "export_policy", "onnx_names"]

MODEL_API_VERSION = 3
ONNX_OPSET = 13


class _ExportablePolicy(nn.Module):
    """Wraps a policy so that its forward pass has ML-Agents' inputs and outputs."""

    version_number: torch.Tensor
    memory_size: torch.Tensor
    continuous_shape: torch.Tensor
    discrete_shape: torch.Tensor

    def __init__(self, policy: PolicyNetwork, num_observations: int) -> None:
        super().__init__()
        self.policy = policy
        self.num_observations = num_observations
        layout = policy.action_layout
        self.register_buffer("version_number", torch.tensor([float(MODEL_API_VERSION)]))
        self.register_buffer("memory_size", torch.tensor([float(policy.memory_size)]))
        self.register_buffer("continuous_shape", torch.tensor([float(layout.continuous_size)]))
        self.register_buffer(
            "discrete_shape", torch.tensor([[float(b) for b in layout.discrete_branches]])
        )

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        observations = list(inputs[: self.num_observations])
        rest = list(inputs[self.num_observations :])
        mask = rest.pop(0) if self.policy.logits_head is not None else None
        new_memories = None
        if self.policy.memory is not None:
            dist, new_memories = self.policy.act(observations, mask, rest.pop(0)[:, 0])
        else:
            dist = self.policy(observations, mask)
        sampled_cont, sampled_disc = dist.sample()
        deterministic_cont, deterministic_disc = dist.deterministic()
        outputs = [self.version_number, self.memory_size]
        if sampled_cont is not None and deterministic_cont is not None:
            outputs += [
                dist.env_continuous(sampled_cont),
                self.continuous_shape,
                dist.env_continuous(deterministic_cont),
            ]
        if sampled_disc is not None and deterministic_disc is not None:
            outputs += [sampled_disc, self.discrete_shape, deterministic_disc]
        if new_memories is not None:
            outputs.append(new_memories.unsqueeze(1))
        return tuple(outputs)


def onnx_names(policy: PolicyNetwork, layout: ObservationLayout) -> tuple[list[str], list[str]]:
    """The ONNX input and output names of ``policy``."""
    inputs = [f"obs_{i}" for i in range(len(layout.entries))]
    if policy.logits_head is not None:
        inputs.append("action_masks")
    if policy.memory is not None:
        inputs.append("recurrent_in")
    outputs = ["version_number", "memory_size"]
    if policy.mean_head is not None:
        outputs += [
            "continuous_actions",
            "continuous_action_output_shape",
            "deterministic_continuous_actions",
        ]
    if policy.logits_head is not None:
        outputs += [
            "discrete_actions",
            "discrete_action_output_shape",
            "deterministic_discrete_actions",
        ]
    if policy.memory is not None:
        outputs.append("recurrent_out")
    return inputs, outputs


def export_policy(policy: PolicyNetwork, layout: ObservationLayout, path: Path) -> None:
    """Export ``policy`` to ``path`` (atomically), batch dimension dynamic.

    ``policy`` is copied first; it must not change during that copy (``Trainer.export_onnx``
    hands over its own snapshot while another thread may be training).
    """
    snapshot = copy.deepcopy(policy).cpu().eval()
    wrapper = _ExportablePolicy(snapshot, len(layout.entries))
    dummy: list[torch.Tensor] = layout.dummy_inputs(batch=1)
    if snapshot.logits_head is not None:
        dummy.append(torch.ones((1, snapshot.action_layout.discrete_size)))
    if snapshot.memory is not None:
        dummy.append(torch.zeros((1, 1, snapshot.memory_size)))
    input_names, output_names = onnx_names(snapshot, layout)
    dynamic_axes = {name: {0: "batch"} for name in input_names}
    for name in ("continuous_actions", "deterministic_continuous_actions"):
        if name in output_names:
            dynamic_axes[name] = {0: "batch"}
    for name in ("discrete_actions", "deterministic_discrete_actions", "recurrent_out"):
        if name in output_names:
            dynamic_axes[name] = {0: "batch"}
    with atomic_target(path) as temporary, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter is deprecated but present
        torch.onnx.export(
            wrapper,
            tuple(dummy),
            str(temporary),
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            opset_version=ONNX_OPSET,
            dynamo=False,
        )
