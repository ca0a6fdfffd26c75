"""The settings of one behavior's trainer: algorithm hyperparameters (PPO, SAC, POCA),
self-play and everything else under ``behaviors.<name>``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from trainers.settings.errors import ConfigError
from trainers.settings.network import NetworkSettings
from trainers.settings.reward_signals import (
    BehavioralCloningSettings,
    ExtrinsicRewardSettings,
    RewardSignalSettings,
)
from trainers.settings.structuring import _check_positive, _check_range

__all__ = [
    "Hyperparameters",
    "PPOHyperparameters",
    "SACHyperparameters",
    "ScheduleType",
    "SelfPlaySettings",
    "TrainerSettings",
    "TrainerType",
]

ScheduleType = Literal["linear", "constant"]


TrainerType = Literal["ppo", "sac", "poca"]
"""The built-in trainer types (plugins add others: :mod:`trainers.plugins`)."""


@dataclass
class PPOHyperparameters:
    """PPO hyperparameters (``trainer_type: ppo``); defaults are ML-Agents'.

    ``shared_critic``: the critic is a value head on the policy's own network (ML-Agents'
    ``SharedActorCritic``) instead of a network of its own.
    """

    batch_size: int = 1024
    buffer_size: int = 10240
    learning_rate: float = 3.0e-4
    beta: float = 5.0e-3
    epsilon: float = 0.2
    lambd: float = 0.95
    num_epoch: int = 3
    shared_critic: bool = False
    learning_rate_schedule: ScheduleType = "linear"
    beta_schedule: ScheduleType | None = None
    epsilon_schedule: ScheduleType | None = None

    def _validate(self, path: str) -> None:
        _check_positive(path, "batch_size", self.batch_size)
        _check_positive(path, "buffer_size", self.buffer_size)
        if self.buffer_size < self.batch_size:
            raise ConfigError(
                f"{path}.buffer_size: {self.buffer_size} is smaller than batch_size "
                f"{self.batch_size}; use a buffer_size that is at least (ideally a multiple of) "
                "batch_size."
            )
        _check_positive(path, "learning_rate", self.learning_rate)
        _check_range(path, "beta", self.beta, 0.0, math.inf)
        _check_positive(path, "epsilon", self.epsilon)
        _check_range(path, "lambd", self.lambd, 0.0, 1.0)
        _check_positive(path, "num_epoch", self.num_epoch)
        # ML-Agents: beta and epsilon follow the learning-rate schedule unless given.
        if self.beta_schedule is None:
            self.beta_schedule = self.learning_rate_schedule
        if self.epsilon_schedule is None:
            self.epsilon_schedule = self.learning_rate_schedule


@dataclass
class SACHyperparameters:
    """SAC hyperparameters (``trainer_type: sac``); defaults are ML-Agents'."""

    batch_size: int = 128
    buffer_size: int = 50000
    learning_rate: float = 3.0e-4
    learning_rate_schedule: ScheduleType = "constant"
    buffer_init_steps: int = 0
    tau: float = 0.005
    steps_per_update: float = 1.0
    save_replay_buffer: bool = False
    init_entcoef: float = 1.0
    reward_signal_steps_per_update: float | None = None

    def _validate(self, path: str) -> None:
        _check_positive(path, "batch_size", self.batch_size)
        _check_positive(path, "buffer_size", self.buffer_size)
        if self.buffer_size < self.batch_size:
            raise ConfigError(
                f"{path}.buffer_size: {self.buffer_size} is smaller than batch_size "
                f"{self.batch_size}; the replay buffer must hold at least one batch."
            )
        _check_positive(path, "learning_rate", self.learning_rate)
        _check_range(path, "buffer_init_steps", self.buffer_init_steps, 0, math.inf)
        _check_range(path, "tau", self.tau, 1e-12, 1.0)
        _check_positive(path, "steps_per_update", self.steps_per_update)
        _check_positive(path, "init_entcoef", self.init_entcoef)
        if self.reward_signal_steps_per_update is None:
            self.reward_signal_steps_per_update = self.steps_per_update
        _check_positive(path, "reward_signal_steps_per_update", self.reward_signal_steps_per_update)


Hyperparameters = PPOHyperparameters | SACHyperparameters


@dataclass
class SelfPlaySettings:
    """``self_play``, ML-Agents' keys and defaults (see :mod:`trainers.ghost`).

    A snapshot of the learning policy is kept every ``save_steps`` steps in a window of the last
    ``window`` snapshots; the opponents switch to another snapshot every ``swap_steps`` of their
    own steps (the latest policy with probability ``play_against_latest_model_ratio``, else a
    random one of the window); the learning team changes every ``team_change`` steps (default:
    5 x ``save_steps``, as in ML-Agents). ``initial_elo`` is the ELO every policy starts with.
    """

    save_steps: int = 20000
    team_change: int | None = None
    swap_steps: int = 2000
    window: int = 10
    play_against_latest_model_ratio: float = 0.5
    initial_elo: float = 1200.0

    def _validate(self, path: str) -> None:
        _check_positive(path, "save_steps", self.save_steps)
        if self.team_change is None:
            self.team_change = 5 * self.save_steps
        _check_positive(path, "team_change", self.team_change)
        _check_positive(path, "swap_steps", self.swap_steps)
        if self.window < 1:
            raise ConfigError(
                f"{path}.window: must be at least 1 (the number of snapshots opponents are "
                f"drawn from), got {self.window}."
            )
        _check_range(
            path, "play_against_latest_model_ratio", self.play_against_latest_model_ratio, 0, 1
        )


@dataclass
class TrainerSettings:
    """Everything that configures the trainer of one behavior."""

    # a built-in TrainerType or the name of a unity_train.trainer_type plugin (trainers.plugins)
    trainer_type: str = "ppo"
    # for a plugin's trainer type: an instance of its hyperparameters dataclass
    hyperparameters: Hyperparameters = field(default_factory=PPOHyperparameters)
    network_settings: NetworkSettings = field(default_factory=NetworkSettings)
    reward_signals: dict[str, RewardSignalSettings] = field(
        default_factory=lambda: {"extrinsic": ExtrinsicRewardSettings()}
    )
    init_path: str | None = None
    keep_checkpoints: int = 5
    even_checkpoints: bool = False
    checkpoint_interval: int = 500000
    max_steps: int = 500000
    time_horizon: int = 64
    summary_freq: int = 50000
    threaded: bool = False
    self_play: SelfPlaySettings | None = None
    behavioral_cloning: BehavioralCloningSettings | None = None

    @property
    def extrinsic(self) -> RewardSignalSettings:
        """The extrinsic reward-signal settings.

        A config without ``reward_signals.extrinsic`` (accepted as in ML-Agents 1.1.0, e.g.
        GAIL alone) gets strength 0: the environment's rewards weigh nothing. Unlike
        ML-Agents, which then has no extrinsic value head, the trainers keep that head (it
        learns values of zero rewards) and still report ``Policy/Extrinsic Reward`` (0).
        """
        return self.reward_signals.get("extrinsic") or ExtrinsicRewardSettings(strength=0.0)

    def _validate(self, path: str) -> None:
        _check_positive(path, "keep_checkpoints", self.keep_checkpoints)
        _check_positive(path, "checkpoint_interval", self.checkpoint_interval)
        _check_range(path, "max_steps", self.max_steps, 0, math.inf)
        _check_positive(path, "time_horizon", self.time_horizon)
        _check_positive(path, "summary_freq", self.summary_freq)
        if self.even_checkpoints:
            self.checkpoint_interval = max(1, self.max_steps // self.keep_checkpoints)
