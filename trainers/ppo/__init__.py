"""Proximal Policy Optimization (ML-Agents' ``trainer_type: ppo``).

:class:`PPOTrainer` records rollouts of every slot group, values them with its critic (one
value head per reward signal) and updates policy and critic with the clipped surrogate; POCA
(:mod:`trainers.poca`) extends it.
"""

from __future__ import annotations

from trainers.ppo.trainer import PPOTrainer

__all__ = ["PPOTrainer"]
