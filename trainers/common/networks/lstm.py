"""The recurrent memory block: an LSTM after a network's body (``network_settings.memory``).

ML-Agents' facts it follows (``torch_entities/layers.py``, ``networks.py``): one LSTM layer
whose input is the body's ``hidden_units`` features and whose hidden size is
``memory_size // 2``; an agent's memory is the hidden state and the cell state side by side
(``memory_size`` floats, hidden first); weights Glorot-uniform per gate block, biases zero but
the forget gate's: ML-Agents' ``lstm_layer`` adds its ``forget_bias`` of 1 to the forget block
of *every* bias tensor, and PyTorch's LSTM has two (``bias_ih`` and ``bias_hh``, summed), so the
gate starts at an effective bias of 2 (sigmoid 0.88 instead of 0.73: a seen symbol fades over
tens of steps rather than a few). The heads read the LSTM's output (``memory_size // 2``
features).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["LSTMMemory"]

#: Added to the forget gate's block of each of PyTorch's two bias tensors (ML-Agents' value).
FORGET_BIAS = 1.0


class LSTMMemory(nn.Module):
    """One LSTM layer carrying ``memory_size`` floats of memory per agent.

    Args:
        input_size: features per step (the body's ``hidden_units``).
        memory_size: memory floats per agent (even: hidden state then cell state).
    """

    def __init__(self, input_size: int, memory_size: int) -> None:
        super().__init__()
        if memory_size <= 0 or memory_size % 2:
            raise ValueError(f"memory_size must be positive and even, got {memory_size}")
        self.memory_size = memory_size
        self.output_size = memory_size // 2
        self.lstm = nn.LSTM(input_size, self.output_size, batch_first=True)
        with torch.no_grad():
            for name, parameter in self.lstm.named_parameters():
                for gate in parameter.split(self.output_size):  # input, forget, cell, output
                    if name.startswith("weight"):
                        nn.init.xavier_uniform_(gate)
                    else:
                        nn.init.zeros_(gate)
                if name.startswith("bias"):  # bias_ih and bias_hh alike, as ML-Agents
                    parameter[self.output_size : 2 * self.output_size].add_(FORGET_BIAS)

    def forward(
        self, features: torch.Tensor, memories: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run sequences.

        Args:
            features: ``(sequences, length, input_size)``.
            memories: ``(sequences, memory_size)``, the memory before each sequence's first step.

        Returns:
            The outputs ``(sequences, length, memory_size // 2)`` and the memories after each
            sequence's last step ``(sequences, memory_size)``.
        """
        half = self.output_size
        hidden = memories[:, :half].unsqueeze(0).contiguous()
        cell = memories[:, half:].unsqueeze(0).contiguous()
        outputs, (hidden, cell) = self.lstm(features, (hidden, cell))
        return outputs, torch.cat([hidden[0], cell[0]], dim=1)

    def step(
        self, features: torch.Tensor, memories: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step for a batch of agents: ``features`` ``(n, input_size)`` and ``memories``
        ``(n, memory_size)`` to outputs ``(n, memory_size // 2)`` and the new memories."""
        outputs, memories = self(features.unsqueeze(1), memories)
        return outputs[:, 0], memories
