"""MA-POCA: attention over absent members, the group critic's shapes, group rewards and returns on
a hand-made episode, group ids from real PushBlockCollab games, and a short ``unity-train`` run of
the bundled config on the built-in PushBlockCollab scene (real player over gRPC)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch
from gymnasium import spaces
from trainer_test_support import RunTrain, tensorboard_scalars

from trainers.common.bookkeeping.stats import GROUP_CUMULATIVE_REWARD, StatsReporter
from trainers.common.buffers.experience import generalized_advantages
from trainers.common.checkpoints.files import load_checkpoint
from trainers.common.networks.attention import EntityEmbedding, ResidualSelfAttention
from trainers.common.networks.models import build_normalizer
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.env_manager import GROUP_ID_SPAN, EnvManager, PolicyDecision
from trainers.ghost import SELF_PLAY_STATE_KEY
from trainers.poca.groups import credit_early_finishers, group_layout, poca_rewards
from trainers.poca.networks import GroupCritic
from trainers.settings import NetworkSettings, load_config_file
from unity_gym.pettingzoo import parallel_env

pytestmark = pytest.mark.timeout(120)

CONFIGS = Path(__file__).resolve().parents[2] / "trainers" / "configs"
CONFIG = CONFIGS / "PushBlockCollab_poca.yaml"
SOCCER_CONFIG = CONFIGS / "SoccerTwos_poca.yaml"


def _attention() -> tuple[EntityEmbedding, ResidualSelfAttention]:
    torch.manual_seed(0)
    return EntityEmbedding(5, 8), ResidualSelfAttention(8)


def test_absent_entities_do_not_change_the_pooled_output() -> None:
    embed, attention = _attention()
    entities = torch.randn(4, 3, 5)
    absent = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.0, 1.0]])
    before = attention(embed(entities), absent)
    garbage = entities.clone()
    garbage[absent.bool()] = torch.randn(int(absent.sum()), 5) * 100.0
    after = attention(embed(garbage), absent)
    torch.testing.assert_close(before, after)
    padded = entities.clone()
    padded[absent.bool()] = float("nan")  # ML-Agents pads absent members with NaN
    torch.testing.assert_close(attention(embed(padded), absent), before)
    # without the mask the padding would count
    assert not torch.allclose(before, attention(embed(garbage), torch.zeros_like(absent)))
    # a row with one present entity pools to that entity alone, wherever it sits
    alone = attention(embed(entities[1:2, :1]), torch.zeros(1, 1))
    torch.testing.assert_close(before[1:2], alone)


def test_permuting_present_members_leaves_the_pooled_output_unchanged() -> None:
    embed, attention = _attention()
    entities = torch.randn(2, 4, 5)
    absent = torch.tensor([[0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0]])
    order = torch.tensor([2, 0, 3, 1])
    pooled = attention(embed(entities), absent)
    permuted = attention(embed(entities[:, order]), absent[:, order])
    torch.testing.assert_close(pooled, permuted)
    # the pooled output is per row: swapping the batch rows swaps the outputs
    swapped = attention(embed(entities.flip(0)), absent.flip(0))
    torch.testing.assert_close(swapped, pooled.flip(0))


def _critic(heads: int) -> GroupCritic:
    torch.manual_seed(1)
    layout = ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (6,), np.float32))
    action = ActionLayout.from_space(spaces.MultiDiscrete([3, 2]))
    settings = NetworkSettings(hidden_units=16, num_layers=2)
    return GroupCritic(layout, action, settings, build_normalizer(layout, False), heads=heads)


@pytest.mark.parametrize("heads", [1, 2])
def test_group_critic_values_and_baselines_have_one_row_per_agent(heads: int) -> None:
    critic = _critic(heads)
    batch, mates = 5, 2
    own = critic.encode([torch.randn(batch, 6)])
    teammates = critic.encode([torch.randn(batch * mates, 6)]).reshape(batch, mates, -1)
    discrete = torch.tensor([[2, 1], [0, 0], [1, 1], [2, 0], [0, 1]] * mates)
    actions = critic.flat_actions(None, discrete).reshape(batch, mates, -1)
    assert actions.shape == (batch, mates, 3 + 2)
    absent = torch.tensor(
        [[False, False], [False, True], [True, True], [False, False], [True, False]]
    )
    shape = (batch,) if heads == 1 else (batch, heads)
    values = critic.values(own, teammates, absent)
    baselines = critic.baselines(own, teammates, actions, absent)
    assert values.shape == shape and baselines.shape == shape
    # padding entries change neither
    noisy = teammates.clone()
    noisy[absent] = 50.0
    torch.testing.assert_close(critic.values(own, noisy, absent), values)
    torch.testing.assert_close(critic.baselines(own, noisy, actions, absent), baselines)
    # the baseline depends on the teammates' actions, the value does not see them
    other = critic.flat_actions(None, (discrete + 1) % 2).reshape(batch, mates, -1)
    changed = critic.baselines(own, teammates, other, absent)
    assert not torch.allclose(changed[:2], baselines[:2])
    torch.testing.assert_close(changed[2], baselines[2])  # row 2 has no teammate
    assert float(critic.max_members) == 3.0


def test_group_rewards_and_early_finishers_on_a_hand_made_episode() -> None:
    # Slots 0 and 1 are group 7, slot 2 is alone. Slot 1 finishes at t=1; the group goes on and
    # earns 1.0 at t=2 and 2.0 at t=3, when slot 0 ends the group's episode.
    ids = np.array([[7, 7, 0]] * 4)
    valid = np.array([[1, 1, 1], [1, 1, 1], [1, 0, 1], [1, 0, 1]], dtype=bool)
    group_rewards = np.array([[0.5, 0.5, 0], [0, 0, 0], [1.0, 0, 0], [2.0, 0, 0]], np.float32)
    own = np.array([[1.0, 2.0, 4.0], [0, 3.0, 0], [0, 0, 0], [0, 0, 0]], np.float32)
    rewards = np.where(valid, own + group_rewards, 0.0).astype(np.float32)
    terminated = np.zeros((4, 3), dtype=bool)
    terminated[1, 1] = terminated[3, 0] = True
    truncated = np.zeros_like(terminated)
    layout = group_layout(ids, valid)
    assert layout.width == 1
    assert layout.mates[0].tolist() == [[1], [0], [0]]
    assert layout.absent[0].tolist() == [[False], [False], [True]]
    assert layout.absent[2, 0, 0]  # slot 1 is gone from t=2

    scaled = poca_rewards(rewards, group_rewards, layout, valid)
    # own + teammates' own + group reward
    assert scaled[0].tolist() == pytest.approx([1.0 + 2.0 + 0.5, 2.0 + 1.0 + 0.5, 4.0])
    assert scaled[1].tolist() == pytest.approx([3.0, 3.0, 0.0])
    assert scaled[2].tolist() == pytest.approx([1.0, 0.0, 0.0])

    gamma = 0.5
    next_values = np.zeros((4, 3), np.float32)
    following, ends = credit_early_finishers(
        ids, valid, terminated, truncated, group_rewards, next_values, gamma
    )
    assert not ends[1, 1] and ends[3, 0]  # the early finisher now bootstraps
    assert following[1, 1] == pytest.approx(1.0 + gamma * 2.0)
    following[1, 1] = 0.0
    assert not following.any()  # nothing else changed
    # a rollout that closes before the group ends: the group's value covers the rest
    cut = np.array([[0, 0, 0], [0, 0, 0], [4.0, 0, 0]], np.float32)
    early, _ = credit_early_finishers(
        ids[:3], valid[:3], terminated[:3], truncated[:3], group_rewards[:3], cut, gamma
    )
    assert early[1, 1] == pytest.approx(1.0 + gamma * 4.0)
    following, _ = credit_early_finishers(
        ids, valid, terminated, truncated, group_rewards, next_values, gamma
    )

    chain_breaks = terminated.copy()
    chain_breaks[-1] = True
    values = np.zeros((4, 3), np.float32)
    _, returns = generalized_advantages(scaled, values, following, ends, chain_breaks, gamma, 1.0)
    # slot 1 at t=1: its reward, then the group's later rewards, discounted
    assert returns[1, 1] == pytest.approx(3.0 + gamma * 1.0 + gamma**2 * 2.0)
    assert returns[0, 0] == pytest.approx(3.5 + gamma * 3.0 + gamma**2 * 1.0 + gamma**3 * 2.0)
    # without the credit the finisher would see nothing after its last step
    _, plain = generalized_advantages(
        scaled, values, next_values, terminated, chain_breaks, gamma, 1.0
    )
    assert plain[1, 1] == pytest.approx(3.0)


def test_the_parallel_manager_reports_groups_unique_across_games() -> None:
    options = {"max_environment_steps": "5000"}
    envs = [
        parallel_env(
            scene="PushBlockCollab",
            num_areas=1,
            seed=3 + i,
            worker_id=i,
            no_graphics=True,
            scene_options=options,
        )
        for i in range(2)
    ]
    manager = EnvManager.for_parallel_envs(envs, asynchronous=False)
    try:
        (name,) = manager.behavior_names
        first = manager.reset(3)[name]
        assert first.group_ids is not None and first.group_rewards is not None
        step = manager.step({name: _noop(manager, name)})[name]
        for ids in (first.group_ids, step.group_ids):
            assert ids is not None
            games = [ids[:3], ids[3:]]  # slots: game 0's three agents, then game 1's
            for index, game in enumerate(games):
                assert len(set(game.tolist())) == 1 and game[0] != 0
                assert game[0] // GROUP_ID_SPAN == index
        assert step.group_rewards is not None
        # every area pays its group -0.5 / max_environment_steps per Academy step (5 a decision)
        assert step.group_rewards.tolist() == pytest.approx([-0.5 / 5000 * 5] * 6)
        assert step.rewards.tolist() == pytest.approx(step.group_rewards.tolist())
    finally:
        manager.close()


def _noop(manager: EnvManager, name: str) -> PolicyDecision:
    """Action 0 (no movement) for every slot of ``name``."""
    slots = manager.behaviors[name]
    return PolicyDecision(None, np.zeros((slots.num_slots, 1), dtype=np.int64))


def test_bundled_poca_config_trains_push_block_collab_and_exports_onnx(
    run_train: RunTrain,
) -> None:
    config = load_config_file(CONFIG)
    behavior = config["behaviors"]["PushBlockCollab"]
    assert behavior["trainer_type"] == "poca"
    behavior["max_steps"] = 192  # one update of a shortened rollout
    behavior["hyperparameters"].update(buffer_size=96, batch_size=32, num_epoch=1)
    behavior["summary_freq"] = 96
    # group episodes interrupted after 40 Academy steps (8 decisions): groups end and bootstrap
    run = run_train(config, "--scene", "PushBlockCollab", "--num-areas", "1", "--seed", "2",
                    "--no-graphics", "--env-args", "--option",
                    "max_environment_steps=40")  # fmt: skip
    state = load_checkpoint(run / "PushBlockCollab" / "checkpoint.pt")
    assert state["trainer_type"] == "poca" and state["update_count"] >= 1
    scalars = tensorboard_scalars(run / "PushBlockCollab")
    tags = (
        "Losses/Baseline Loss",
        "Policy/Extrinsic Baseline Estimate",
        "Losses/Value Loss",
        "Losses/Policy Loss",
        "Policy/Extrinsic Value Estimate",
        "Environment/Group Cumulative Reward",
    )
    for tag in tags:
        assert tag in scalars and all(np.isfinite(scalars[tag]))
    session = onnxruntime.InferenceSession(str(run / "PushBlockCollab.onnx"))
    assert {i.name for i in session.get_inputs()} == {"obs_0", "action_masks"}


def test_summary_line_shows_the_mean_group_reward_as_ml_agents_does(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stats = StatsReporter("Collab", tmp_path, time.monotonic())
    try:
        stats.add_episode(-0.5, 10)
        stats.add_episode(1.5, 10)
        with caplog.at_level(logging.INFO, logger="trainers"):
            stats.write_summary(100, training=True)
            stats.add_episode(2.0, 10)
            stats.add(GROUP_CUMULATIVE_REWARD, 3.0)
            stats.add(GROUP_CUMULATIVE_REWARD, 1.0)
            stats.write_summary(200, training=True)
    finally:
        stats.close()
    first, second = (r.getMessage() for r in caplog.records if "Step:" in r.getMessage())
    assert "Mean Reward: 0.500. Std of Reward: 1.000. Training." in first
    assert "Mean Reward: 2.000. Mean Group Reward: 2.000. Training." in second


def test_bundled_soccer_twos_config_trains_poca_with_self_play_and_exports_onnx(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_config_file(SOCCER_CONFIG)
    behavior = config["behaviors"]["SoccerTwos"]
    assert behavior["trainer_type"] == "poca" and "self_play" in behavior
    behavior["max_steps"] = 160  # learning team's steps: team 0, then team 1 from step 81
    behavior["summary_freq"] = 80
    behavior["time_horizon"] = 32
    behavior["hyperparameters"].update(buffer_size=64, batch_size=32, num_epoch=1)
    behavior["network_settings"]["hidden_units"] = 32
    behavior["self_play"].update(save_steps=20, swap_steps=15, team_change=80, window=3)
    run = run_train(config, "--scene", "SoccerTwos", "--num-areas", "1", "--seed", "3",
                    "--no-graphics", "--env-args", "--option",
                    "max_environment_steps=60")  # fmt: skip
    err = capsys.readouterr().err
    assert "self-play is not configured" not in err
    state = load_checkpoint(run / "SoccerTwos" / "checkpoint.pt")
    assert state["trainer_type"] == "poca" and state["update_count"] >= 2
    self_play = state[SELF_PLAY_STATE_KEY]
    assert self_play["controller"]["learning_team"] == 1  # the team changed once
    assert self_play["ghost_step"] > 0 and len(self_play["snapshots"]) == 3
    scalars = tensorboard_scalars(run / "SoccerTwos")
    for tag in ("Self-play/ELO", "Losses/Baseline Loss", "Environment/Group Cumulative Reward"):
        assert tag in scalars and all(np.isfinite(scalars[tag]))
    session = onnxruntime.InferenceSession(str(run / "SoccerTwos.onnx"))
    assert {i.name for i in session.get_inputs()} >= {"obs_0", "action_masks"}
