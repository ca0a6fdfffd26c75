"""SAC with a recurrent (LSTM) policy: ``network_settings.memory`` with ``trainer_type: sac``.

The sequence replay on hand-made steps; through the trainer API on synthetic steps: memories
carried per slot and reset at episode ends, replayed sequences of one agent in order starting
from the memory it acted with, log-probabilities recomputed over a sequence equal to the acting
ones, padding left out of the losses, updates with a curiosity signal, the replay saved and
loaded; ``unity-train`` on the built-in Hallway scene with a SAC memory config, exporting a
recurrent ONNX model.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch
import yaml
from gymnasium import spaces
from trainer_test_support import RunTrain, random_outcome, sac_behavior

from trainers.common.bookkeeping.stats import StatsReporter
from trainers.common.buffers.experience import SequenceReplayBuffer
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.common.trainer import CheckpointMismatchError, TrainerContext
from trainers.contract import BehaviorStep
from trainers.sac.trainer import SACTrainer, _SequenceInputs
from trainers.settings import parse_run_options

pytestmark = pytest.mark.timeout(240)

LENGTH = 4
MEMORY = {"sequence_length": LENGTH, "memory_size": 8}
SLOTS = 3
OBS = 3


def _trainer(
    tmp_path: Path,
    action_space: spaces.Space[Any],
    memory: bool = True,
    save_replay: bool = False,
    steps_per_update: float = 4.0,
    **overrides: Any,
) -> SACTrainer:
    """A training SAC trainer on the CPU for 3-float observations, without checkpoints."""
    network: dict[str, Any] = {"hidden_units": 8, "num_layers": 1}
    if memory:
        network["memory"] = MEMORY
    behavior = sac_behavior(
        hyperparameters={
            "batch_size": 8,
            "buffer_init_steps": 0,
            "steps_per_update": steps_per_update,
            "save_replay_buffer": save_replay,
        },
        network_settings=network,
        **overrides,
    )
    options = parse_run_options({"behaviors": {"B": behavior}})
    return SACTrainer(
        TrainerContext(
            behavior_name="B",
            settings=options.trainer_settings_for("B"),
            observation_layout=ObservationLayout.from_space(
                spaces.Box(-1.0, 1.0, (OBS,), np.float32)
            ),
            action_layout=ActionLayout.from_space(action_space),
            device=torch.device("cpu"),
            seed=1,
            training=True,
            artifact_dir=tmp_path,
            stats=StatsReporter("B", tmp_path, time.monotonic()),
            checkpoints=None,
        )
    )


def _play(trainer: SACTrainer, steps: int, seed: int = 0) -> list[dict[str, Any]]:
    """Drive ``trainer`` for ``steps`` env steps of random observations, slot 0 terminating
    every 5 steps and slot 2 truncated every 7; returns per step the observations, the memory
    each slot acted from and the log-probability of its (discrete) action under the acting
    distribution."""
    rng = np.random.default_rng(seed)
    observations = [rng.uniform(-1, 1, (SLOTS, OBS)).astype(np.float32)]
    trainer.observe(BehaviorStep.first(observations, None))
    record = []
    for t in range(steps):
        step = BehaviorStep.first(observations, None)
        memory = trainer.acting.memories(step.group, len(step.valid)).copy()
        with torch.no_grad():
            dist, _ = trainer.policy.act(
                [torch.as_tensor(observations[0])], None, torch.as_tensor(memory)
            )
        decision = trainer.decide(step)
        entry: dict[str, Any] = {"obs": observations[0], "memory": memory}
        if decision.discrete is not None:
            with torch.no_grad():
                log_probs = dist.log_probs(None, torch.as_tensor(decision.discrete))
            entry["log_prob"] = log_probs.sum(dim=1).numpy()
        record.append(entry)
        terminated = np.zeros(SLOTS, dtype=bool)
        truncated = np.zeros(SLOTS, dtype=bool)
        terminated[0] = t % 5 == 3
        truncated[2] = t % 7 == 6
        outcome = random_outcome(rng, terminated, truncated, OBS)
        observations = outcome.observations
        trainer.observe(outcome)
    return record


def _locate(record: list[dict[str, Any]], obs: np.ndarray) -> tuple[int, int]:
    """The (step, slot) whose observation is ``obs`` (random floats: unique)."""
    for t, entry in enumerate(record):
        hits = np.flatnonzero((entry["obs"] == obs).all(axis=1))
        if hits.size:
            return t, int(hits[0])
    raise AssertionError("observation not recorded")


def test_sequence_replay_gathers_each_agent_in_order_and_pads() -> None:
    buffer = SequenceReplayBuffer(capacity=40, sequence_length=3)
    for t in range(5):  # group 0: slots 0 and 1; slot 0's episode ends at t=1
        batch = {"x": np.array([[t, 0], [t, 1]], dtype=np.float32)}
        memories = np.array([[t, 0.0], [t, 1.0]], dtype=np.float32)
        buffer.add(0, np.array([0, 1]), batch, memories, np.array([t == 1, False]))
        # group 1 has its own slot 0, interleaved
        buffer.add(
            1,
            np.array([0]),
            {"x": np.array([[t, 10]], np.float32)},
            memories[:1] + 5,
            np.array([False]),
        )
    buffer.close(0)  # an environment reset ends group 0's open sequences
    state = buffer.state()
    xs = state["x"].tolist()
    # (in the order the sequences ended) slot 0: t 0..1 padded; slots 1 and 0 of group 0 at
    # t 0..2 and t 2..4; group 1's slot 0 at t 0..2; then the closed ones: slot 1 t 3..4
    assert xs == [
        [[0, 0], [1, 0], [1, 0]],
        [[0, 1], [1, 1], [2, 1]],
        [[0, 10], [1, 10], [2, 10]],
        [[2, 0], [3, 0], [4, 0]],
        [[3, 1], [4, 1], [4, 1]],
    ]
    assert state["real"].tolist() == [
        [True, True, False],
        [True, True, True],
        [True, True, True],
        [True, True, True],
        [True, True, False],
    ]
    # each sequence keeps the memory before its first step
    assert state["memory"].tolist() == [[0, 0], [0, 1], [5, 5], [2, 0], [3, 1]]
    assert len(buffer) == 15 and buffer.num_sequences == 5
    sample = buffer.sample(7, np.random.default_rng(0))  # 7 // 3 = 2 whole sequences
    assert sample["x"].shape == (2, 3, 2) and sample["real"].shape == (2, 3)
    copy = SequenceReplayBuffer(capacity=40, sequence_length=3)
    copy.load(state)
    assert all(np.array_equal(copy.state()[k], v) for k, v in state.items())
    with pytest.raises(ValueError, match="sequences of 3 steps, not 4"):
        SequenceReplayBuffer(capacity=40, sequence_length=4).load(state)


def test_memories_reset_per_agent_and_sequences_replay_the_acting_policy(
    tmp_path: Path,
) -> None:
    trainer = _trainer(tmp_path, spaces.Discrete(3))
    record = _play(trainer, 12)
    assert not record[0]["memory"].any()  # every slot starts with an empty memory
    # slot 0 terminated at t=3 and t=8, slot 2 was truncated at t=6: the next decisions start empty
    for t, slot in [(4, 0), (9, 0), (7, 2)]:
        assert not record[t]["memory"][slot].any(), (t, slot)
    for t, slot in [(4, 1), (4, 2), (7, 0), (7, 1), (9, 2)]:
        assert np.abs(record[t]["memory"][slot]).sum() > 0, (t, slot)

    state = trainer.replay.state()
    assert isinstance(trainer.replay, SequenceReplayBuffer)
    assert trainer.replay.num_sequences >= 6
    padded = 0
    for s in range(len(state["real"])):
        real = state["real"][s]
        count = int(real.sum())
        assert real[:count].all() and not real[count:].any()  # padding only at the end
        padded += LENGTH - count
        t0, slot = _locate(record, state["obs_0"][s, 0])
        # the memory it starts from is the one the agent acted with at its first step
        np.testing.assert_array_equal(state["memory"][s], record[t0]["memory"][slot])
        for k in range(count):  # consecutive steps of the same agent
            np.testing.assert_array_equal(state["obs_0"][s, k], record[t0 + k]["obs"][slot])
        # a short sequence is one whose episode ended
        assert count == LENGTH or state["done"][s, count - 1] == 1.0
    assert padded > 0

    # the log-probabilities recomputed over the sequences equal the acting ones
    sample = {key: value for key, value in state.items()}
    rows, inputs = trainer._sequence_inputs(sample)
    assert isinstance(inputs, _SequenceInputs)
    with torch.no_grad():
        dist = inputs.policy(trainer.policy)
        recomputed = dist.log_probs(None, torch.as_tensor(rows["action"])).sum(dim=1).numpy()
    acting = []
    for obs in rows["obs_0"]:
        t, slot = _locate(record, obs)
        acting.append(record[t]["log_prob"][slot])
    np.testing.assert_allclose(recomputed, acting, atol=1e-5)

    # the successors are read along the same sequence: inside an episode, the successor of a
    # step is the next step, with the memory the policy carried there
    with torch.no_grad():
        now = inputs.policy(trainer.policy).branch_logits[0]
        following = inputs.policy(trainer.policy, following=True).branch_logits[0]
    counts = state["real"].sum(axis=1)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pairs = [
        start + k for start, count in zip(starts, counts, strict=True) for k in range(count - 1)
    ]
    assert pairs
    torch.testing.assert_close(following[pairs], now[[i + 1 for i in pairs]])


def test_padded_steps_do_not_change_an_update(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, spaces.Discrete(3))
    _play(trainer, 12)
    state = trainer.replay.state()
    real = state["real"]
    assert not real.all()
    corrupted = {key: value.copy() for key, value in state.items()}
    for key in ("obs_0", "next_obs_0", "env_reward"):
        corrupted[key][~real] = 1e3
    corrupted["action"][~real] = 2
    saved = trainer.state_dict()
    first = trainer._update_once(state)
    trainer.load_state_dict(saved, restore_progress=True)
    second = trainer._update_once(corrupted)
    np.testing.assert_array_equal(first, second)
    # while a real step's data does change it
    trainer.load_state_dict(saved, restore_progress=True)
    changed = {key: value.copy() for key, value in state.items()}
    changed["env_reward"][real] += 1.0
    assert not np.array_equal(first, trainer._update_once(changed))


def test_continuous_updates_with_curiosity_train_every_lstm(tmp_path: Path) -> None:
    signals = {
        "extrinsic": {"gamma": 0.99, "strength": 1.0},
        "curiosity": {"gamma": 0.9, "strength": 0.1, "network_settings": {"hidden_units": 4}},
    }
    box = spaces.Box(-1.0, 1.0, (2,), np.float32)
    trainer = _trainer(tmp_path, box, steps_per_update=20.0, reward_signals=signals)
    lstms = [trainer.policy.memory, trainer.q1.memory, trainer.q2.memory, trainer.q1_target.memory]
    before = [[p.detach().clone() for p in lstm.parameters()] for lstm in lstms if lstm is not None]
    assert len(before) == 4
    _play(trainer, 16)
    assert trainer._update_ready()
    trainer._take_update_job()()
    assert trainer.update_count > 0 and trainer.signal_update_count > 0
    for lstm, old in zip(lstms, before, strict=True):
        assert lstm is not None
        assert any(not torch.equal(a, b) for a, b in zip(lstm.parameters(), old, strict=True))


def test_interrupted_episodes_clear_memories_and_end_open_sequences(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, spaces.Discrete(3))
    _play(trainer, 2)
    replay = trainer.replay
    assert isinstance(replay, SequenceReplayBuffer) and replay.num_sequences == 0
    assert trainer.acting.memories(0, SLOTS).any()
    trainer.interrupt_episodes(0)
    assert not trainer.acting.memories(0, SLOTS).any()
    assert replay.num_sequences == SLOTS
    assert replay.state()["real"].sum(axis=1).tolist() == [2] * SLOTS


def test_the_sequence_replay_is_saved_and_loaded(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, spaces.Discrete(3), save_replay=True)
    _play(trainer, 12)
    trainer.save_auxiliary(tmp_path)
    copy = _trainer(tmp_path, spaces.Discrete(3), save_replay=True)
    copy.load_auxiliary(tmp_path)
    saved, loaded = trainer.replay.state(), copy.replay.state()
    assert saved.keys() == loaded.keys()
    assert all(np.array_equal(saved[k], loaded[k]) for k in saved)
    plain = _trainer(tmp_path, spaces.Discrete(3), memory=False, save_replay=True)
    with pytest.raises(CheckpointMismatchError, match=r"holds sequences.*delete the file"):
        plain.load_auxiliary(tmp_path)


def test_unity_train_hallway_with_sac_memory(run_train: RunTrain) -> None:
    """A SAC memory config trains on the built-in Hallway scene and exports a recurrent model."""
    config_path = Path(__file__).parents[2] / "trainers" / "configs" / "Hallway_sac.yaml"
    config = yaml.safe_load(config_path.read_text())
    behavior = config["behaviors"]["Hallway"]
    behavior["max_steps"] = 640  # 40 steps of the 16 agents of one area
    behavior["hyperparameters"].update(batch_size=64, steps_per_update=20.0)
    behavior["network_settings"].update(
        hidden_units=16, memory={"sequence_length": 8, "memory_size": 16}
    )
    run_dir = run_train(config, "--scene", "Hallway", "--num-areas", "1", "--seed", "2")
    session = onnxruntime.InferenceSession(str(run_dir / "Hallway.onnx"))
    inputs = {i.name: i.shape for i in session.get_inputs()}
    assert inputs["recurrent_in"][1:] == [1, 16]
    assert session.get_outputs()[-1].name == "recurrent_out"
    saved = torch.load(run_dir / "Hallway" / "checkpoint.pt", weights_only=True)
    assert saved["update_count"] > 0
    assert "memory.lstm.weight_ih_l0" in saved["modules"]["q1"]
