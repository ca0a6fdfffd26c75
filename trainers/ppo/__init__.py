"""Proximal Policy Optimization."""

from __future__ import annotations

from trainers.ppo.trainer import PPOTrainer

__all__ = ["PPOTrainer"]
