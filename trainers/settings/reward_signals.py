"""``reward_signals`` (extrinsic, curiosity, RND, GAIL) and ``behavioral_cloning``: the
settings of what a trainer learns from besides its algorithm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from trainers.settings.errors import ConfigError
from trainers.settings.network import NetworkSettings
from trainers.settings.structuring import _check_positive, _check_range

__all__ = [
    "BehavioralCloningSettings",
    "CuriositySettings",
    "ExtrinsicRewardSettings",
    "GAILSettings",
    "RNDSettings",
    "RewardSignalSettings",
]

# Reward signals besides ``extrinsic`` (PPO and SAC) and their settings.
_INTRINSIC_SIGNALS: dict[str, type[RewardSignalSettings]] = {}


@dataclass
class RewardSignalSettings:
    """What every reward signal has: its rewards are scaled by ``strength`` and discounted with
    ``gamma`` by a value head of their own; ``network_settings`` shapes the signal's networks."""

    gamma: float = 0.99
    strength: float = 1.0
    network_settings: NetworkSettings = field(default_factory=NetworkSettings)

    def _validate(self, path: str) -> None:
        _check_range(path, "gamma", self.gamma, 0.0, 1.0)


@dataclass
class ExtrinsicRewardSettings(RewardSignalSettings):
    """The environment's reward."""


@dataclass
class CuriositySettings(RewardSignalSettings):
    """The curiosity (intrinsic curiosity module) signal; ``encoding_size`` is deprecated (it
    sets ``network_settings.hidden_units`` when ``network_settings`` is not given)."""

    learning_rate: float = 3e-4
    encoding_size: int | None = None

    def _validate(self, path: str) -> None:
        super()._validate(path)
        _check_positive(path, "learning_rate", self.learning_rate)


@dataclass
class RNDSettings(RewardSignalSettings):
    """The random network distillation signal; ``encoding_size`` as for curiosity."""

    learning_rate: float = 1e-4
    encoding_size: int | None = None

    def _validate(self, path: str) -> None:
        super()._validate(path)
        _check_positive(path, "learning_rate", self.learning_rate)


@dataclass
class GAILSettings(RewardSignalSettings):
    """The GAIL (generative adversarial imitation) signal, ML-Agents' keys and defaults:
    ``demo_path`` (required) is a ``.demo`` file or a folder of them; ``use_actions`` feeds the
    discriminator the actions and done flags too; ``use_vail`` adds the variational bottleneck;
    ``encoding_size`` as for curiosity."""

    learning_rate: float = 3e-4
    encoding_size: int | None = None
    use_actions: bool = False
    use_vail: bool = False
    demo_path: str | None = None

    def _validate(self, path: str) -> None:
        super()._validate(path)
        _check_range(path, "strength", self.strength, 0.0, math.inf)
        _check_positive(path, "learning_rate", self.learning_rate)
        _check_demo_path(path, self.demo_path, "GAIL")


@dataclass
class BehavioralCloningSettings:
    """``behavioral_cloning``, ML-Agents' keys and defaults: the policy also learns to copy the
    demonstrations of ``demo_path`` (required) with a learning rate of ``strength`` times the
    trainer's, annealed linearly to 0 over ``steps`` (0: constant). ``batch_size`` and
    ``num_epoch`` default to the trainer's; ``samples_per_update`` caps the demonstration
    steps of one epoch (0: all of them)."""

    demo_path: str | None = None
    strength: float = 1.0
    steps: int = 0
    batch_size: int | None = None
    num_epoch: int | None = None
    samples_per_update: int = 0

    def _validate(self, path: str) -> None:
        _check_demo_path(path, self.demo_path, "behavioral cloning")
        _check_range(path, "strength", self.strength, 0.0, math.inf)
        _check_range(path, "steps", self.steps, 0, math.inf)
        if self.batch_size is not None:
            _check_positive(path, "batch_size", self.batch_size)
        if self.num_epoch is not None:
            _check_positive(path, "num_epoch", self.num_epoch)
        _check_range(path, "samples_per_update", self.samples_per_update, 0, math.inf)


def _check_demo_path(path: str, demo_path: str | None, feature: str) -> None:
    if demo_path is None or not demo_path.strip():
        raise ConfigError(
            f"{path}.demo_path: required for {feature}; set it to a .demo file or a folder of "
            ".demo files (relative paths start at the working directory, as in mlagents-learn)."
        )


_INTRINSIC_SIGNALS.update(
    {"curiosity": CuriositySettings, "rnd": RNDSettings, "gail": GAILSettings}
)
