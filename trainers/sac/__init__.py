"""Soft Actor-Critic."""

from __future__ import annotations

from trainers.sac.trainer import SACTrainer

__all__ = ["SACTrainer"]
