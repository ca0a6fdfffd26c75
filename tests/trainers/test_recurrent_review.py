"""Recurrent PPO against ML-Agents' recurrent path (1.1.0), the points a review found.

* Trajectories end at episode ends and every ``time_horizon`` steps only (ML-Agents'
  ``AgentProcessor._process_step`` hands a trajectory over at those points, and the trainer
  updates on whole trajectories): a trajectory still open when a rollout closes goes whole
  into the next rollout (``RolloutBuffer``) instead of being cut there.
* A step whose action the environment ignored (``valid`` false: a PettingZoo agent waiting for
  its game's reset, a Gymnasium next-step autoreset) does not move the memory: in ML-Agents
  such an agent asks for no decision and its memory was removed when its episode ended, so its
  next episode starts from zeros.
* Training replays acting exactly, across rollouts: each sequence starts from the memories
  recorded at its first step, and the critic's values are those of its memory carried per slot
  over the slot's whole history (ML-Agents' ``critic_memory_dict``).

The synthetic rollouts are driven step by step with random observations (as in
``test_memory.py``); the other tests drive real headless-player games over gRPC: Hallway (the
vector env) and a two-behavior scene (PettingZoo) whose Seeker waits two steps per episode for
its game's reset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from process_utils import python_path_with
from trainer_scenes import SCENE, SCENE_FOLDER
from trainer_test_support import ppo_behavior, ppo_trainer, random_outcome

from trainers.common.buffers.experience import Rollout, RolloutBuffer
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.contract import BehaviorStep, PolicyDecision
from trainers.env_manager import EnvManager
from trainers.ppo.trainer import PPOTrainer, _UpdateData
from unity_gym.pettingzoo import parallel_env

pytestmark = pytest.mark.timeout(240)

SLOTS = 3
SIZE = 3


@dataclass
class History:
    """Every decision of a trainer's slot group: its observations and its outcome."""

    observations: list[list[np.ndarray]] = field(default_factory=list)
    valid: list[np.ndarray] = field(default_factory=list)
    done: list[np.ndarray] = field(default_factory=list)

    def add(self, observations: list[np.ndarray], outcome: BehaviorStep) -> None:
        self.observations.append([np.array(entry) for entry in observations])
        self.valid.append(outcome.valid.copy())
        self.done.append(outcome.done.copy())


def _reference(trainer: PPOTrainer, history: History) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ML-Agents' memories, step by step over every slot's whole history: the policy's memory
    before each decision, the critic's, and the critic's value of each step's observation.
    A memory moves on at a step the environment took and is zeros after an episode end."""
    policy_memory = trainer.policy.memory
    critic = trainer.critic
    assert policy_memory is not None and critic.memory is not None
    steps, n = len(history.valid), len(history.valid[0])
    policy_state = torch.zeros(n, policy_memory.memory_size)
    critic_state = torch.zeros(n, critic.memory.memory_size)
    memories = np.zeros((steps, n, policy_memory.memory_size), np.float32)
    critic_memories = np.zeros((steps, n, critic.memory.memory_size), np.float32)
    values = np.zeros((steps, n), np.float32)
    with torch.no_grad():
        for t in range(steps):
            observations = trainer.tensors(history.observations[t])
            memories[t] = policy_state.numpy()
            critic_memories[t] = critic_state.numpy()
            _, policy_after = trainer.policy.act(observations, None, policy_state)
            out, critic_after = critic.memory.step(critic.encode(observations), critic_state)
            values[t] = critic.value(out).numpy()
            took = torch.as_tensor(history.valid[t]).unsqueeze(1)
            kept = torch.as_tensor(~history.done[t]).unsqueeze(1).to(torch.float32)
            policy_state = torch.where(took, policy_after, policy_state) * kept
            critic_state = torch.where(took, critic_after, critic_state) * kept
    return memories, critic_memories, values


def _close(trainer: PPOTrainer, group: int = 0) -> Rollout:
    """Close the group's rollout as an update does, without training on it."""
    last = trainer._last_observations[group]
    rollout = trainer.buffers[group].finish(None, last)
    rollout.group = group
    trainer._recurrent_values(rollout, last)
    return rollout


def _check_replay(
    trainer: PPOTrainer,
    rollout: Rollout,
    first_step: int,
    reference: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """The rollout's trained steps (``valid``) hold ML-Agents' memories and values, and its
    sequences reproduce the recorded log probabilities and values (rollout row ``t`` is
    decision ``first_step + t``)."""
    rows = slice(first_step, first_step + len(rollout.valid))
    memories, critic_memories, values = (part[rows] for part in reference)
    held = rollout.valid
    assert held.any()
    assert rollout.memories is not None and rollout.critic_memories is not None
    np.testing.assert_allclose(rollout.memories[held], memories[held], atol=1e-5)
    np.testing.assert_allclose(rollout.critic_memories[held], critic_memories[held], atol=1e-5)
    np.testing.assert_allclose(rollout.values[held], values[held], atol=1e-5)
    estimates = [trainer._estimates(rollout, rollout.rewards[..., None])]
    data = _UpdateData([rollout], estimates, torch.device("cpu"), trainer.sequence_length)
    assert data.sequences is not None
    batch = data.minibatch(torch.arange(len(data.sequences)))
    assert batch.counted is not None and len(batch.counted) == rollout.num_valid
    with torch.no_grad():
        dist, sequence_values = trainer._evaluate(batch)
        log_probs = dist.log_probs(batch.continuous, batch.discrete)[batch.counted]
    torch.testing.assert_close(log_probs, batch.log_probs, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sequence_values[batch.counted], batch.values, atol=1e-5, rtol=1e-5)


def _ends(rollout: Rollout, breaks: np.ndarray) -> None:
    """Every slot's trained steps end at one of ``breaks`` (episode ends and horizon cuts),
    never where the rollout happened to close."""
    for slot in range(rollout.valid.shape[1]):
        rows = np.flatnonzero(rollout.valid[:, slot])
        if len(rows):
            assert breaks[rows[-1], slot], (slot, rows[-1])


# -- the rollout buffer on its own ------------------------------------------------------------


def _record(buffer: RolloutBuffer, t: int, done: list[bool], valid: list[bool]) -> None:
    """Step ``t`` of two slots, observation ``[t, slot]``."""
    observations = [np.array([[t, 0], [t, 1]], np.float32)]
    buffer.add_decision(observations, None, np.zeros((2, 1), np.int64), None, np.zeros((2, 1)))
    outcome = np.array(done)
    buffer.add_outcome(np.ones(2, np.float32), outcome, np.zeros(2, bool), np.array(valid),
                       np.zeros(2, np.float32))  # fmt: skip


def _held_steps(rollout: Rollout) -> set[tuple[int, int]]:
    times, slots = np.nonzero(rollout.valid)
    observed = rollout.observations[0][times, slots]
    return {(int(t), int(s)) for t, s in observed}


def test_a_rollout_holds_whole_trajectories_and_carries_open_ones_over() -> None:
    buffer = RolloutBuffer(time_horizon=3, num_slots=2)
    # slot 0: episode ends at t=1, then t=2, 3 open; slot 1: horizon cut at t=2, t=3 open
    for t, done in enumerate([[False, False], [True, False], [False, False], [False, False]]):
        _record(buffer, t, done, [True, True])
    assert buffer.num_valid == 5  # the two completed trajectories
    first = buffer.finish(None, [np.zeros((2, 2), np.float32)])
    assert _held_steps(first) == {(0, 0), (1, 0), (0, 1), (1, 1), (2, 1)}
    assert first.num_valid == 5 and buffer.num_valid == 0
    assert buffer.num_steps == 2  # t=2 and t=3 are kept
    # slot 0: cut at t=4 (3 steps since its episode began), t=5 open; slot 1: cut at t=5
    for t in (4, 5):
        _record(buffer, t, [False, False], [True, True])
    assert buffer.num_valid == 6
    second = buffer.finish(None, [np.zeros((2, 2), np.float32)])
    assert _held_steps(second) == {(2, 0), (3, 0), (4, 0), (3, 1), (4, 1), (5, 1)}
    # every step is trained on once; only slot 0's t=5 is still open
    assert not _held_steps(first) & _held_steps(second)
    assert buffer.num_steps == 1 and buffer.num_valid == 0
    assert second.episode_ends is not None and not second.episode_ends.any()


def test_trajectories_ended_by_the_trainer_count_towards_the_update_padded() -> None:
    # a team change or a reset ends trajectories (truncate_last), not only the game: ML-Agents'
    # update buffer then holds them, each padded to whole sequences
    buffer = RolloutBuffer(time_horizon=10, num_slots=2, sequence_length=4)
    for t in range(3):
        _record(buffer, t, [False, False], [True, True])
    assert (buffer.num_valid, buffer.num_padded) == (0, 0)
    buffer.truncate_last(np.array([True, False]), np.zeros(2, np.float32))
    assert (buffer.num_valid, buffer.num_padded) == (3, 4)
    _record(buffer, 3, [False, True], [True, True])
    assert (buffer.num_valid, buffer.num_padded) == (7, 8)  # slot 1: 4 steps, one sequence
    assert _held_steps(buffer.finish(None, [np.zeros((2, 2), np.float32)])) == {
        (0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (3, 1)
    }  # fmt: skip


def test_a_callers_own_field_is_carried_over_with_the_steps_it_belongs_to() -> None:
    # MA-POCA records each step's group ids beside the buffer's own fields
    buffer = RolloutBuffer(time_horizon=3, num_slots=2)
    for t, done in enumerate([[False, False], [True, False], [False, False], [False, False]]):
        _record(buffer, t, done, [True, True])
        buffer.add_field("tag", np.array([t, t]))
    assert buffer.stacked("tag")[:, 0].tolist() == [0, 1, 2, 3]
    assert buffer.latest("tag").tolist() == [3, 3]
    buffer.finish(None, [np.zeros((2, 2), np.float32)])
    # t=2 and t=3 are kept for the next rollout (see the test above), and their entries with them
    assert buffer.stacked("tag")[:, 0].tolist() == [2, 3]
    assert buffer.stacked("valid").shape == (2, 2)
    with pytest.raises(ValueError, match="field of the rollout buffer itself"):
        buffer.add_field("valid", np.ones(2, bool))


def test_an_open_trajectory_without_taken_steps_is_not_kept() -> None:
    buffer = RolloutBuffer(time_horizon=5, num_slots=2)
    _record(buffer, 0, [True, True], [True, True])
    _record(buffer, 1, [False, False], [False, True])  # slot 0 waits for its reset
    rollout = buffer.finish(None, [np.zeros((2, 2), np.float32)])
    assert _held_steps(rollout) == {(0, 0), (0, 1)}
    assert buffer.num_steps == 1  # slot 1's t=1 opens its next trajectory; slot 0 has none
    _record(buffer, 2, [True, True], [True, True])
    assert _held_steps(buffer.finish(None, [np.zeros((2, 2), np.float32)])) == {
        (2, 0), (1, 1), (2, 1)
    }  # fmt: skip


# -- a recurrent trainer over synthetic steps --------------------------------------------------


def _trainer(tmp_path: Path) -> PPOTrainer:
    behavior = ppo_behavior(
        hyperparameters={"buffer_size": 32, "batch_size": 8},
        network_settings={
            "hidden_units": 8,
            "num_layers": 1,
            "memory": {"sequence_length": 4, "memory_size": 8},
        },
        time_horizon=6,
    )
    return ppo_trainer(
        "Toy",
        behavior,
        ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (SIZE,), np.float32)),
        ActionLayout.from_space(spaces.Discrete(3)),
        tmp_path,
        seed=2,
    )


def _play(
    trainer: PPOTrainer, steps: int, history: History, rng: np.random.Generator, start: int
) -> None:
    """Episodes end at different times per slot; after each of slot 0's episode ends its
    next action is ignored (a next-step autoreset)."""
    observations = history.observations[-1] if history.observations else None
    if observations is None:
        observations = [rng.uniform(-1, 1, (SLOTS, SIZE)).astype(np.float32)]
        trainer.observe(BehaviorStep.first(observations, None))
    else:
        observations = trainer._last_observations[0]
    for t in range(start, start + steps):
        trainer.decide(BehaviorStep.first(observations, None))
        terminated = np.zeros(SLOTS, bool)
        truncated = np.zeros(SLOTS, bool)
        terminated[0] = t % 5 == 2
        truncated[2] = t % 7 == 6
        outcome = random_outcome(rng, terminated, truncated, SIZE)
        outcome.valid[0] = t % 5 != 3  # the step after slot 0's episode end
        history.add(observations, outcome)
        observations = outcome.observations
        trainer.observe(outcome)


def test_training_replays_acting_across_rollouts(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path)
    history = History()
    rng = np.random.default_rng(4)
    _play(trainer, 11, history, rng, 0)
    first = _close(trainer)
    kept = trainer.buffers[0].num_steps
    assert kept, "some trajectory was open when the rollout closed"
    _play(trainer, 13, history, rng, 11)
    second = _close(trainer)
    reference = _reference(trainer, history)
    # the first rollout's rows are decisions 0..10; the second's start `kept` rows earlier
    _check_replay(trainer, first, 0, reference)
    _check_replay(trainer, second, 11 - kept, reference)
    valid = np.stack(history.valid)
    breaks = np.stack(history.done)
    since = np.zeros(SLOTS, int)
    for t in range(len(valid)):  # horizon cuts: every 6 taken steps of a trajectory
        since += valid[t]
        cut = (since >= 6) & ~breaks[t]
        since[breaks[t] | cut] = 0
        breaks[t] |= cut
    _ends(first, breaks[: len(first.valid)])
    _ends(second, breaks[11 - kept :])
    # each taken step of a completed trajectory is trained on exactly once
    trained = first.valid.sum() + second.valid.sum()
    still_open = trainer.buffers[0].num_open
    assert trained + still_open == valid.sum()
    # ignored steps are in no sequence (their rows are not trained on)
    assert not first.valid[~valid[: len(first.valid)]].any()


def test_an_update_waits_for_whole_trajectories(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path)
    history = History()
    rng = np.random.default_rng(5)
    _play(trainer, 4, history, rng, 0)
    # 12 steps taken, but only slot 0's first episode (3 steps) has ended; it counts as one
    # whole sequence of 4, as ML-Agents' update buffer counts its padding
    assert trainer._update_size() == 4 and trainer.buffers[0].num_valid == 3
    _play(trainer, 14, history, rng, 4)
    assert trainer.update_due
    trainer._take_update_job()()
    assert trainer.update_count == 1
    assert trainer.buffers[0].num_steps > 0  # open trajectories wait for the next update


# -- real games ---------------------------------------------------------------------------------


def _drive(manager: EnvManager, trainers: dict[str, PPOTrainer], steps: int,
           histories: dict[str, History], current: dict[str, BehaviorStep]
           ) -> dict[str, BehaviorStep]:  # fmt: skip
    for _ in range(steps):
        decisions: dict[str, PolicyDecision] = {}
        for name, trainer in trainers.items():
            decisions[name] = trainer.decide(current[name])
        observations = {name: current[name].observations for name in trainers}
        current = manager.step(decisions)
        for name, trainer in trainers.items():
            histories[name].add(observations[name], current[name])
            trainer.observe(current[name])
    return current


def _hallway_trainer(slots: Any, tmp_path: Path) -> PPOTrainer:
    behavior = ppo_behavior(
        hyperparameters={"buffer_size": 256, "batch_size": 32},
        network_settings={
            "hidden_units": 16,
            "num_layers": 1,
            "normalize": False,
            "memory": {"sequence_length": 8, "memory_size": 16},
        },
        time_horizon=20,
        max_steps=100_000,
    )
    return ppo_trainer(
        "Hallway", behavior, slots.observation_layout, slots.action_layout, tmp_path, seed=3
    )


def test_hallway_rollouts_end_only_where_ml_agents_trajectories_end(tmp_path: Path) -> None:
    """Hallway's 16 agents in one game: the update is due once 256 steps of whole trajectories
    are in, not after 16 env steps of open ones; training replays acting over two rollouts."""
    env = gymnasium.make_vec(
        "unity_gym:Unity-v0",
        num_envs=None,  # type: ignore[arg-type]
        num_processes=1,
        scene="Hallway",
        autoreset_mode=AutoresetMode.SAME_STEP,
        backend="inprocess",
        timeout_wait=30,
        seed=3,
    )
    manager = EnvManager.for_vector_env(env, "Hallway")
    try:
        slots = manager.behaviors["Hallway"]
        assert slots.num_slots == 16
        trainer = _hallway_trainer(slots, tmp_path)
        history = History()
        current = manager.reset(seed=3)
        trainer.observe(current["Hallway"])
        current = _drive(manager, {"Hallway": trainer}, 16, {"Hallway": history}, current)
        # 256 steps taken, none in a completed trajectory unless an agent reached a goal
        done_steps = int(sum(d.sum() for d in history.done))
        assert not trainer.update_due or done_steps
        while not trainer.update_due:
            current = _drive(manager, {"Hallway": trainer}, 1, {"Hallway": history}, current)
        first_length = len(history.valid)
        first = _close(trainer)
        kept = trainer.buffers[0].num_steps
        current = _drive(manager, {"Hallway": trainer}, 25, {"Hallway": history}, current)
        second = _close(trainer)
        reference = _reference(trainer, history)
        _check_replay(trainer, first, 0, reference)
        _check_replay(trainer, second, first_length - kept, reference)
        # trajectories end at episode ends or every 20 steps (all agents started together)
        breaks = np.stack(history.done)
        horizon = np.zeros_like(breaks)
        since = np.zeros(16, int)
        for t in range(len(breaks)):
            since += 1
            horizon[t] = (since >= 20) & ~breaks[t]
            since[breaks[t] | horizon[t]] = 0
        breaks |= horizon
        _ends(first, breaks[:first_length])
        _ends(second, breaks[first_length - kept :])
        assert first.num_valid >= 256
    finally:
        manager.close()


def test_a_waiting_agent_keeps_its_memory_and_starts_its_next_episode_from_zeros(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The two-behavior scene's Seeker ends its episode after 3 actions and waits 2 steps
    (``valid`` false) for the game's reset. Its ignored actions must not move its memory, so
    each episode's first decision starts from zeros, as in ML-Agents; training replays it."""
    monkeypatch.setenv("PYTHONPATH", python_path_with(SCENE_FOLDER))
    env = parallel_env(scene=SCENE, num_areas=2, seed=9, worker_id=0, no_graphics=True)
    try:
        manager = EnvManager.for_parallel_envs([env], asynchronous=False)
    except BaseException:
        env.close()
        raise
    try:
        recurrent = {"sequence_length": 4, "memory_size": 8}
        trainers = {}
        for name in manager.behavior_names:
            slots = manager.behaviors[name]
            network: dict[str, Any] = {"hidden_units": 8, "num_layers": 1}
            if name == "Seeker":
                network["memory"] = recurrent
            behavior = ppo_behavior(
                hyperparameters={"buffer_size": 24, "batch_size": 8},
                network_settings=network,
                time_horizon=16,
            )
            trainers[name] = ppo_trainer(
                name, behavior, slots.observation_layout, slots.action_layout, tmp_path / name
            )
        histories = {name: History() for name in trainers}
        current = manager.reset(9)
        for name, trainer in trainers.items():
            trainer.observe(current[name])
        current = _drive(manager, trainers, 12, histories, current)
        seeker, history = trainers["Seeker"], histories["Seeker"]
        valid = np.stack(history.valid)[:, 0]
        assert valid.tolist() == [True, True, True, False, False] * 2 + [True, True]
        buffer = seeker.buffers[0]
        recorded = np.stack(buffer._steps["memories"])
        # the first decision of each episode (decisions 0, 5 and 10) starts from zeros
        for t in (0, 5, 10):
            assert not recorded[t].any(), t
        assert np.abs(recorded[6]).sum() > 0  # memory moves within an episode
        rollout = _close(seeker)
        _check_replay(seeker, rollout, 0, _reference(seeker, history))
        assert rollout.num_valid == 2 * 2 * 3  # two whole episodes of both Seekers
    finally:
        manager.close()
