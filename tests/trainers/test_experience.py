"""Env manager bookkeeping (autoreset modes, masks, episodes) and advantage computation."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from trainers.common.buffers.experience import ReplayBuffer, Rollout, RolloutBuffer, compute_gae
from trainers.env_manager import EnvManager, PolicyDecision

ACT = {"Countdown": PolicyDecision(None, np.zeros((2, 1), dtype=np.int64))}


def _manager(mode: AutoresetMode, truncate: bool = False) -> EnvManager:
    env = gymnasium.make_vec(
        "trainer_toy_envs:Countdown-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        truncate=truncate,
    )
    return EnvManager.for_vector_env(env, "Countdown")


def test_same_step_autoreset_gives_final_observations_and_episodes() -> None:
    manager = _manager(AutoresetMode.SAME_STEP)
    try:
        first = manager.reset(seed=0)["Countdown"]
        assert first.observations[0].tolist() == [[0.0], [0.0]]
        for expected in (1.0, 2.0):
            step = manager.step(ACT)["Countdown"]
            assert step.rewards.tolist() == [expected, expected]
            assert step.valid.all() and not step.done.any() and step.episodes == []
        last = manager.step(ACT)["Countdown"]
        assert last.terminated.tolist() == [True, True]
        assert last.observations[0].tolist() == [[0.0], [0.0]]  # already reset
        assert last.final_observations[0].tolist() == [[3.0], [3.0]]
        assert last.episodes == [(6.0, 3), (6.0, 3)]
        after = manager.step(ACT)["Countdown"]
        assert after.valid.all() and after.rewards.tolist() == [1.0, 1.0]
    finally:
        manager.close()


def test_next_step_autoreset_marks_the_reset_step_invalid() -> None:
    manager = _manager(AutoresetMode.NEXT_STEP, truncate=True)
    try:
        manager.reset(seed=0)
        manager.step(ACT)
        manager.step(ACT)
        last = manager.step(ACT)["Countdown"]
        assert last.truncated.tolist() == [True, True] and not last.terminated.any()
        assert last.final_observations[0].tolist() == [[3.0], [3.0]]
        assert last.episodes == [(6.0, 3), (6.0, 3)]
        reset_step = manager.step(ACT)["Countdown"]
        assert reset_step.valid.tolist() == [False, False]
        assert reset_step.rewards.tolist() == [0.0, 0.0] and not reset_step.done.any()
        assert reset_step.observations[0].tolist() == [[0.0], [0.0]]
        resumed = manager.step(ACT)["Countdown"]
        assert resumed.valid.all() and resumed.rewards.tolist() == [1.0, 1.0]
    finally:
        manager.close()


def test_action_masks_come_from_info_with_gymnasium_convention() -> None:
    env = gymnasium.make_vec("trainer_toy_envs:MaskedCorridor-v0", num_envs=3)
    manager = EnvManager.for_vector_env(env, "MaskedCorridor")
    try:
        step = manager.reset(seed=1)["MaskedCorridor"]
        assert step.action_mask is not None
        assert step.action_mask.dtype == bool
        assert step.action_mask.tolist() == [[True, False, False, True]] * 3
    finally:
        manager.close()


def _rollout_buffer(horizon: int) -> RolloutBuffer:
    return RolloutBuffer(time_horizon=horizon, num_slots=1)


def _add(buffer: RolloutBuffer, value: float, reward: float, **flags: float) -> None:
    """One step whose observation is its value (see :func:`_finish`)."""
    buffer.add_decision([np.array([[value]])], None, np.zeros((1, 1)), None, np.zeros(1))
    buffer.add_outcome(
        np.array([reward], dtype=np.float32),
        np.array([bool(flags.get("terminated", False))]),
        np.array([bool(flags.get("truncated", False))]),
        np.array([True]),
        np.array([flags.get("final_value", 0.0)], dtype=np.float32),
    )


def _finish(buffer: RolloutBuffer, last_value: float) -> Rollout:
    """Close the rollout with a critic that reads the value off the observation."""
    calls: list[np.ndarray] = []

    def value_of(observations: list[np.ndarray]) -> np.ndarray:
        calls.append(observations[0])
        return observations[0][:, 0]

    rollout = buffer.finish(value_of, [np.array([[last_value]])])
    assert [call.shape for call in calls] == [(rollout.rewards.shape[0], 1), (1, 1)]
    return rollout


def test_gae_cuts_on_termination_and_bootstraps_truncation() -> None:
    gamma, lam = 0.9, 0.5
    buffer = _rollout_buffer(horizon=100)
    _add(buffer, 0.5, 1.0)
    _add(buffer, 0.4, 2.0, terminated=True)
    _add(buffer, 0.3, 3.0, truncated=True, final_value=2.0)
    _add(buffer, 0.2, 4.0)
    rollout = _finish(buffer, 1.0)
    advantages, returns = compute_gae(rollout, gamma, lam)
    d3 = 4.0 + gamma * 1.0 - 0.2  # bootstrap from the current observation
    d2 = 3.0 + gamma * 2.0 - 0.3  # truncated: bootstrap from the final observation, no chaining
    d1 = 2.0 - 0.4  # terminated: no bootstrap
    d0 = 1.0 + gamma * 0.4 - 0.5
    expected = [d0 + gamma * lam * d1, d1, d2, d3]
    assert advantages[:, 0] == pytest.approx(expected, rel=1e-5)
    values = np.array([0.5, 0.4, 0.3, 0.2])
    assert returns[:, 0] == pytest.approx(np.array(expected) + values, rel=1e-5)


def test_gae_bootstraps_at_time_horizon() -> None:
    gamma, lam = 0.9, 1.0
    buffer = _rollout_buffer(horizon=2)
    for value in (0.1, 0.2, 0.3):
        _add(buffer, value, 1.0)
    rollout = _finish(buffer, 0.4)
    assert rollout.chain_breaks[:, 0].tolist() == [False, True, True]
    advantages, _ = compute_gae(rollout, gamma, lam)
    d2 = 1.0 + gamma * 0.4 - 0.3
    d1 = 1.0 + gamma * 0.3 - 0.2  # cut after two steps: bootstrap, do not chain into step 2
    d0 = 1.0 + gamma * 0.2 - 0.1
    assert advantages[:, 0] == pytest.approx([d0 + gamma * lam * d1, d1, d2], rel=1e-5)


def test_replay_buffer_wraps_and_round_trips() -> None:
    buffer = ReplayBuffer(capacity=5)
    buffer.add({"x": np.arange(3, dtype=np.float32)})
    buffer.add({"x": np.arange(3, 7, dtype=np.float32)})
    assert len(buffer) == 5
    assert buffer.state()["x"].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0]  # oldest first
    copy = ReplayBuffer(capacity=5)
    copy.load(buffer.state())
    assert copy.state()["x"].tolist() == buffer.state()["x"].tolist()
    sample = copy.sample(64, np.random.default_rng(0))["x"]
    assert set(sample.tolist()) <= {2.0, 3.0, 4.0, 5.0, 6.0}


def test_truncate_last_ends_running_episodes_with_a_bootstrap() -> None:
    buffer = RolloutBuffer(time_horizon=10, num_slots=3)
    observations = [np.zeros((3, 1), dtype=np.float32)]
    no = np.zeros(3, dtype=bool)
    for terminated in (no, np.array([True, False, False])):
        buffer.add_decision(observations, None, np.zeros((3, 1), np.int64), None, np.zeros((3, 1)))
        buffer.add_outcome(np.ones(3, np.float32), terminated, no, np.ones(3, bool), np.zeros(3))
    # slot 0 already terminated: only slots 1 and 2 end (truncated, bootstrapping from 5 and 7)
    buffer.truncate_last(np.ones(3, dtype=bool), np.array([9.0, 5.0, 7.0], dtype=np.float32))
    rollout = buffer.finish(lambda obs: np.full(len(obs[0]), 2.0, np.float32), observations)
    assert rollout.episode_ends is not None
    assert rollout.episode_ends[-1].tolist() == [True, True, True]
    assert rollout.terminated[-1].tolist() == [True, False, False]
    assert rollout.next_values[-1].tolist() == [0.0, 5.0, 7.0]
    assert rollout.next_values[0].tolist() == [2.0, 2.0, 2.0]
