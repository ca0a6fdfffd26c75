"""Recurrent (LSTM) policies: ``network_settings.memory``.

Sequence cutting and padding on hand-made trajectories; memories carried per slot and reset at
episode ends; training on sequences reproducing exactly what the policy and critic computed
step by step; the recurrent ONNX model against torch over a whole episode; ``unity-train`` on
the built-in Hallway scene with ML-Agents' memory config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch
import yaml
from gymnasium import spaces
from trainer_test_support import RunTrain, ppo_behavior, ppo_trainer, random_outcome

from trainers.common.buffers.sequences import cut_sequences
from trainers.common.checkpoints.onnx_export import export_policy
from trainers.common.networks.lstm import LSTMMemory
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.contract import BehaviorStep
from trainers.ppo.trainer import PPOTrainer, _UpdateData, normalized_advantages
from trainers.settings import ConfigError, parse_run_options

pytestmark = pytest.mark.timeout(240)

MEMORY = {"sequence_length": 4, "memory_size": 8}
SLOTS = 3


def test_cut_sequences_pads_the_end_of_each_trajectory() -> None:
    # slot 0: trajectories [0, 4] (an episode end at t=4) and [5, 6]; slot 1: [0, 6]
    breaks = np.zeros((7, 2), dtype=bool)
    breaks[4, 0] = breaks[6, :] = True
    sequences = cut_sequences(breaks, 3, offset=100)
    # row = t * 2 + slot + offset; padding repeats the trajectory's last real row
    expected_rows = [
        [100, 102, 104],  # slot 0: t 0..2
        [106, 108, 108],  # slot 0: t 3, 4, pad
        [110, 112, 112],  # slot 0: t 5, 6, pad
        [101, 103, 105],  # slot 1: t 0..2
        [107, 109, 111],  # slot 1: t 3..5
        [113, 113, 113],  # slot 1: t 6, pad, pad
    ]
    expected_real = [
        [True, True, True],
        [True, True, False],
        [True, True, False],
        [True, True, True],
        [True, True, True],
        [True, False, False],
    ]
    assert sequences.rows.tolist() == expected_rows
    assert sequences.real.tolist() == expected_real


def test_cut_sequences_rejects_an_open_trajectory() -> None:
    with pytest.raises(ValueError, match="last step"):
        cut_sequences(np.zeros((3, 1), dtype=bool), 2)


def test_memory_settings_are_checked() -> None:
    options = parse_run_options(
        {"behaviors": {"B": {"network_settings": {"memory": {"memory_size": 64}}}}}
    )
    memory = options.trainer_settings_for("B").network_settings.memory
    assert memory is not None and (memory.sequence_length, memory.memory_size) == (64, 64)
    with pytest.raises(ConfigError, match=r"memory\.memory_size: 7 is odd"):
        parse_run_options(
            {"behaviors": {"B": {"network_settings": {"memory": {"memory_size": 7}}}}}
        )
    with pytest.raises(ConfigError, match=r"memory.*sequence_length"):
        parse_run_options(
            {"behaviors": {"B": {"network_settings": {"memory": {"sequence_length": 0}}}}}
        )


def test_sac_with_memory_is_accepted() -> None:
    data = {"trainer_type": "sac", "network_settings": {"memory": {"memory_size": 8}}}
    settings = parse_run_options({"behaviors": {"B": data}}).trainer_settings_for("B")
    memory = settings.network_settings.memory
    assert settings.trainer_type == "sac"
    assert memory is not None and (memory.sequence_length, memory.memory_size) == (64, 8)


def test_lstm_memory_starts_with_ml_agents_forget_bias() -> None:
    """ML-Agents' ``lstm_layer`` adds its forget bias 1 to both of PyTorch's bias tensors, so
    the forget gate starts at an effective bias of 2 (sigmoid about 0.88)."""
    memory = LSTMMemory(6, 8)
    lstm = memory.lstm
    half = 4
    for bias in (lstm.bias_ih_l0, lstm.bias_hh_l0):
        assert torch.equal(bias[half : 2 * half], torch.ones(half))
        assert torch.count_nonzero(torch.cat([bias[:half], bias[2 * half :]])) == 0
    biases = lstm.bias_ih_l0 + lstm.bias_hh_l0  # PyTorch adds both
    assert torch.equal(biases[half : 2 * half], torch.full((half,), 2.0))
    # With zero input and zero hidden state the cell keeps sigmoid(2) of itself per step.
    with torch.no_grad():
        cell = torch.ones(1, half)
        state = torch.cat([torch.zeros(1, half), cell], dim=1)
        _, after = memory.step(torch.zeros(1, 6), state)
    assert torch.allclose(after[:, half:], torch.sigmoid(torch.tensor(2.0)) * cell)


def _recurrent_trainer(tmp_path: Path, **network: Any) -> PPOTrainer:
    behavior = ppo_behavior(
        hyperparameters={"buffer_size": 64, "batch_size": 8},
        network_settings={"hidden_units": 8, "num_layers": 1, "memory": MEMORY, **network},
        time_horizon=6,
    )
    return ppo_trainer(
        "Toy",
        behavior,
        ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (3,), np.float32)),
        ActionLayout.from_space(spaces.Discrete(3)),
        tmp_path,
        seed=1,
    )


def _play(trainer: PPOTrainer, steps: int, seed: int = 0) -> list[np.ndarray]:
    """Drive ``trainer`` for ``steps`` env steps of random observations with some episode
    ends; returns the memory each decision started from."""
    rng = np.random.default_rng(seed)
    observations = [rng.uniform(-1, 1, (SLOTS, 3)).astype(np.float32)]
    trainer.observe(BehaviorStep.first(observations, None))
    used = []
    for t in range(steps):
        used.append(trainer.acting.memories(0, len(observations[0])).copy())
        trainer.decide(BehaviorStep.first(observations, None))
        terminated = np.zeros(SLOTS, dtype=bool)
        truncated = np.zeros(SLOTS, dtype=bool)
        if t % 5 == 3:
            terminated[0] = True
        if t % 7 == 6:
            truncated[2] = True
        outcome = random_outcome(rng, terminated, truncated, 3)
        observations = outcome.observations
        trainer.observe(outcome)
    return used


def test_memories_are_carried_per_slot_and_reset_at_episode_ends(tmp_path: Path) -> None:
    trainer = _recurrent_trainer(tmp_path)
    used = _play(trainer, 10)
    assert not used[0].any()  # every slot starts with an empty memory
    # slot 0's episode ended at t=3 and t=8, slot 2's at t=6: the next decisions start empty
    for t, slot in [(4, 0), (9, 0), (7, 2)]:
        assert not used[t][slot].any(), (t, slot)
    for t, slot in [(4, 1), (4, 2), (7, 0), (7, 1), (9, 1), (9, 2)]:
        assert np.abs(used[t][slot]).sum() > 0, (t, slot)
    # the memory carried is the LSTM's state: replaying slot 1's observations reproduces it
    recorded = trainer.buffers[0]._steps
    memory = torch.zeros(1, 8)
    with torch.no_grad():
        for t in range(10):
            assert np.allclose(recorded["memories"][t][1], memory[0].numpy(), atol=1e-6)
            obs = [torch.as_tensor(recorded["observations"][t][0][1:2])]
            _, memory = trainer.policy.act(obs, None, memory)


@pytest.mark.parametrize("shared_critic", [False, True])
def test_sequences_reproduce_the_step_by_step_log_probs_and_values(
    tmp_path: Path, shared_critic: bool
) -> None:
    trainer = _recurrent_trainer(tmp_path)
    if shared_critic:
        trainer = ppo_trainer(
            "Toy",
            ppo_behavior(
                hyperparameters={"buffer_size": 64, "batch_size": 8, "shared_critic": True},
                network_settings={"hidden_units": 8, "num_layers": 1, "memory": MEMORY},
                time_horizon=6,
            ),
            ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (3,), np.float32)),
            ActionLayout.from_space(spaces.Discrete(3)),
            tmp_path,
            seed=1,
        )
    _play(trainer, 9, seed=1)
    first = trainer.buffers[0].finish(None, trainer._last_observations[0])
    trainer._recurrent_values(first, trainer._last_observations[0])
    rollouts = [first]
    estimates = [trainer._estimates(r, r.rewards[..., None]) for r in rollouts]
    data = _UpdateData(rollouts, estimates, torch.device("cpu"), trainer.sequence_length)
    assert data.sequences is not None
    # 3 slots; trajectories cut at episode ends and every 6 steps; 4-step sequences
    assert len(data.sequences) > SLOTS
    batch = data.minibatch(torch.arange(len(data.sequences)))
    # every step of the trajectories the rollout completed (open ones wait for the next)
    assert batch.counted is not None and len(batch.counted) == first.num_valid
    with torch.no_grad():
        dist, values = trainer._evaluate(batch)
        log_probs = dist.log_probs(batch.continuous, batch.discrete)[batch.counted]
    assert torch.allclose(log_probs, batch.log_probs, atol=1e-5)
    assert torch.allclose(values[batch.counted], batch.values, atol=1e-5)
    if shared_critic:  # the critic's memories are the policy's
        assert first.critic_memories is not None and first.memories is not None
        held = first.valid  # the steps this rollout trains on
        assert np.allclose(first.critic_memories[held], first.memories[held], atol=1e-6)


def test_an_update_trains_on_sequences(tmp_path: Path) -> None:
    trainer = _recurrent_trainer(tmp_path)
    before = [p.detach().clone() for p in trainer.policy.memory.parameters()]  # type: ignore[union-attr]
    _play(trainer, 30)
    assert trainer._update_ready()
    trainer._take_update_job()()
    after = list(trainer.policy.memory.parameters())  # type: ignore[union-attr]
    assert any(not torch.equal(a, b) for a, b in zip(after, before, strict=True))
    assert 0 in trainer._critic_memories  # carried into the next rollout


def test_the_rollout_counts_and_normalizes_padding_as_ml_agents_update_buffer(
    tmp_path: Path,
) -> None:
    """ML-Agents pads each trajectory's last sequence and counts the padding: the update runs
    once the padded buffer holds *more* than ``buffer_size`` entries, and the advantages are
    normalized over real and padded entries (padded ones 0). In Hallway a third of the buffer
    is padding: ML-Agents updated after about 700 real steps where this trainer waited for 1024."""
    trainer = _recurrent_trainer(tmp_path)  # buffer_size 64, sequences of 4, horizon 6
    _play(trainer, 9, seed=1)
    buffer = trainer.buffers[0]
    padded, real = buffer.num_padded, buffer.num_valid
    assert trainer._update_size() == padded > real  # trajectories of 1 to 6 steps, some padding
    assert trainer._update_ready() == (padded > 64)
    first = buffer.finish(None, trainer._last_observations[0])
    sequences = cut_sequences(first.chain_breaks, MEMORY["sequence_length"], 0, first.valid)
    assert padded == sequences.real.size and real == sequences.real.sum() == first.num_valid

    trainer._recurrent_values(first, trainer._last_observations[0])
    estimates = [trainer._estimates(first, first.rewards[..., None])]
    data = _UpdateData([first], estimates, torch.device("cpu"), trainer.sequence_length)
    raw = torch.as_tensor(estimates[0][0]).reshape(-1)[data.valid_rows]
    with_padding = np.concatenate([raw.numpy(), np.zeros(padded - real)])
    expected = (with_padding - with_padding.mean()) / (with_padding.std() + 1e-8)
    assert np.allclose(data.advantages[data.valid_rows].numpy(), expected[:real], atol=1e-5)
    # without padding: the plain normalization
    assert torch.allclose(
        normalized_advantages(raw), (raw - raw.mean()) / (raw.std(unbiased=False) + 1e-8)
    )


def test_recurrent_onnx_matches_torch_over_an_episode(tmp_path: Path) -> None:
    behavior = ppo_behavior(
        network_settings={"hidden_units": 8, "num_layers": 2, "memory": {"memory_size": 6}}
    )
    layout = ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (4,), np.float32))
    trainer = ppo_trainer(
        "Toy",
        behavior,
        layout,
        ActionLayout.from_space(spaces.Box(-1.0, 1.0, (2,), np.float32)),
        tmp_path,
    )
    path = tmp_path / "policy.onnx"
    export_policy(trainer.policy, layout, path)
    session = onnxruntime.InferenceSession(str(path))
    assert [i.name for i in session.get_inputs()] == ["obs_0", "recurrent_in"]
    outputs = [o.name for o in session.get_outputs()]
    assert outputs[-1] == "recurrent_out"
    rng = np.random.default_rng(3)
    agents = 2
    onnx_memory = np.zeros((agents, 1, 6), dtype=np.float32)
    torch_memory = torch.zeros(agents, 6)
    for _ in range(40):
        obs = rng.uniform(-1, 1, (agents, 4)).astype(np.float32)
        result = dict(
            zip(
                outputs, session.run(None, {"obs_0": obs, "recurrent_in": onnx_memory}), strict=True
            )
        )
        with torch.no_grad():
            dist, torch_memory = trainer.policy.act([torch.as_tensor(obs)], None, torch_memory)
            raw, _ = dist.deterministic()
            expected = dist.env_continuous(raw).numpy()
        assert result["memory_size"].tolist() == [6.0]
        assert np.allclose(result["deterministic_continuous_actions"], expected, atol=1e-5)
        assert np.allclose(result["recurrent_out"][:, 0], torch_memory.numpy(), atol=1e-5)
        onnx_memory = result["recurrent_out"]


def test_unity_train_hallway_with_memory(run_train: RunTrain, tmp_path: Path) -> None:
    """ML-Agents' Hallway config (memory) trains end to end and exports a recurrent model."""
    config_path = Path(__file__).parents[2] / "trainers" / "configs" / "Hallway_ppo.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["behaviors"]["Hallway"]["max_steps"] = 2100
    run_dir = run_train(config, "--scene", "Hallway", "--num-areas", "4")
    session = onnxruntime.InferenceSession(str(run_dir / "Hallway.onnx"))
    inputs = {i.name: i.shape for i in session.get_inputs()}
    assert inputs["recurrent_in"][1:] == [1, 128]
    assert session.get_outputs()[-1].name == "recurrent_out"
