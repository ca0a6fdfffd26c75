"""Slow: the bundled configs learn CartPole (PPO) and Pendulum (SAC).

Run with ``pytest -m slow tests/trainers/test_learning.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from trainer_test_support import RunTrain

from trainers.settings import load_config_file

CONFIG_DIR = Path(__file__).resolve().parents[2] / "trainers" / "configs"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _last_mean_reward(behavior_dir: Path) -> float:
    (event_file,) = behavior_dir.glob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(event_file))
    accumulator.Reload()
    return float(accumulator.Scalars("Environment/Cumulative Reward")[-1].value)


def test_ppo_learns_cartpole(run_train: RunTrain) -> None:
    config = load_config_file(CONFIG_DIR / "CartPole_ppo.yaml")
    run = run_train(config, "--gym-id", "CartPole-v1", "--num-envs", "4", "--seed", "1")
    assert _last_mean_reward(run / "CartPole") >= 400.0


def test_sac_learns_pendulum(run_train: RunTrain) -> None:
    config = load_config_file(CONFIG_DIR / "Pendulum_sac.yaml")
    run = run_train(config, "--gym-id", "Pendulum-v1", "--seed", "1")
    assert _last_mean_reward(run / "Pendulum") >= -250.0
