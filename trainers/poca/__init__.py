"""MA-POCA: multi-agent posthumous credit assignment (ML-Agents' ``trainer_type: poca``)."""

from __future__ import annotations

from trainers.poca.trainer import POCATrainer

__all__ = ["POCATrainer"]
