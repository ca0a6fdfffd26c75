"""Soft Actor-Critic (ML-Agents' ``trainer_type: sac``).

:class:`SACTrainer` stores every transition in a replay buffer (sequences with memory) and
updates its policy, twin Q networks and entropy coefficients off-policy.
"""

from __future__ import annotations

from trainers.sac.trainer import SACTrainer

__all__ = ["SACTrainer"]
