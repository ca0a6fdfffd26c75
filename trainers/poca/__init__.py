"""MA-POCA: multi-agent posthumous credit assignment (ML-Agents' ``trainer_type: poca``).

:class:`POCATrainer` is PPO with a centralized critic over each multi-agent group (attention
over its members, :mod:`trainers.poca.networks`) and the group bookkeeping of
:mod:`trainers.poca.groups`.
"""

from __future__ import annotations

from trainers.poca.trainer import POCATrainer

__all__ = ["POCATrainer"]
