"""Game statistics (the stats side channel) read from UnityVectorEnv and UnityParallelEnv.

The player reports, at every episode end, ``Player/Cumulative Reward/<behavior>`` (the episode's
summed reward) and ``Player/Episode Length/<behavior>`` (its agent steps), both AVERAGE. The
Stress scene rewards the first action component and ends episodes after ``episode_length``
steps, so the expected values follow from the actions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from unity_gym.exceptions import UnityEnvironmentException
from unity_gym.pettingzoo import UnityParallelEnv
from unity_gym.side_channels import (
    EnvironmentStats,
    IncomingMessage,
    SideChannel,
    StatsAggregationMethod,
    StatsSideChannel,
)
from unity_gym.vector import UnityVectorEnv

REWARD = "Player/Cumulative Reward/Stress?team=0"
LENGTH = "Player/Episode Length/Stress?team=0"
AVERAGE = StatsAggregationMethod.AVERAGE


def values(stats: EnvironmentStats, key: str) -> list[float]:
    """The values of ``key``, checking that every one is an AVERAGE stat."""
    assert {method for _, method in stats[key]} == {AVERAGE}
    return [value for value, _ in stats[key]]


def test_vector_env_hands_out_the_episode_stats_of_every_game(
    backend: str, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(
        num_envs=4, num_processes=2, backend=backend, scene_options={"episode_length": 3}
    )
    env.reset()
    assert env.get_and_reset_stats() == {}  # no episode has ended yet
    actions = np.zeros((4, 2), dtype=np.float32)
    actions[:, 0] = [0.25, 0.5, 0.75, 1.0]  # slot i's reward per step
    returns = np.zeros(4)
    episode_returns: list[float] = []
    for _ in range(7):  # episodes end at steps 3 and 6 (step 4 begins the next ones)
        _, rewards, terminated, truncated, _ = env.step(actions)
        returns += rewards
        ended = terminated | truncated
        episode_returns += returns[ended].tolist()
        returns[ended] = 0.0
    # the second episodes got a zero action at their first decision (next-step autoreset)
    assert sorted(episode_returns) == [0.5, 0.75, 1.0, 1.5, 1.5, 2.0, 2.25, 3.0]
    stats = env.get_and_reset_stats()
    assert set(stats) == {REWARD, LENGTH}
    assert values(stats, LENGTH) == [3.0] * 8
    assert sorted(values(stats, REWARD)) == sorted(episode_returns)
    assert env.get_and_reset_stats() == {}
    env.step(actions)  # no episode ends in this step
    assert env.get_and_reset_stats() == {}


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_stats_of_replies_dropped_as_late_are_kept(
    backend: str, make_vector_env: Callable[..., UnityVectorEnv]
) -> None:
    env = make_vector_env(
        num_envs=4, num_processes=2, backend=backend, scene_options={"episode_length": 1}
    )
    env.reset()
    env.step_async(np.full((4, 2), 0.5, dtype=np.float32))  # ends every slot's episode
    env.reset()  # abandons that step: its replies arrive late and are dropped
    stats = env.get_and_reset_stats()
    assert set(stats) == {REWARD, LENGTH}
    assert values(stats, REWARD) == [0.5] * 4
    assert values(stats, LENGTH) == [1.0] * 4


def test_a_restarted_game_keeps_reporting_stats(
    make_vector_env: Callable[..., UnityVectorEnv],
) -> None:
    # crash_after=3: each game exits during the 3rd step after its launch, then is restarted.
    env = make_vector_env(
        num_envs=4,
        num_processes=2,
        backend="inprocess",
        scene_options={"episode_length": 2, "crash_after": 3},
        restarts_rate_limit_n=-1,
    )
    env.reset()
    half = np.full((4, 2), 0.5, dtype=np.float32)
    env.step(half)
    env.step(half)  # every episode ends
    before = env.get_and_reset_stats()
    assert values(before, LENGTH) == [2.0] * 4
    env.step(half)  # the crash
    assert env.restart_counts == [1, 1]
    assert env.get_and_reset_stats() == {}
    _, _, terminated, _, _ = env.step(half)
    assert not terminated.any()
    _, _, terminated, _, _ = env.step(half)  # the relaunched games' first episodes end
    assert terminated.all() and env.restart_counts == [1, 1]
    after = env.get_and_reset_stats()
    assert set(after) == {REWARD, LENGTH}
    assert values(after, REWARD) == [1.0] * 4
    assert values(after, LENGTH) == [2.0] * 4


def test_parallel_env_collects_stats_of_every_behavior() -> None:
    game = UnityParallelEnv(scene="Stress", scene_options={"teams": 2, "episode_length": 2})
    try:
        game.reset()
        assert game.get_and_reset_stats() == {}
        actions = {agent: np.full(2, 0.25, dtype=np.float32) for agent in game.agents}
        game.step(actions)
        assert game.get_and_reset_stats() == {}
        _, _, terminations, _, _ = game.step(actions)
        assert all(terminations.values()) and len(terminations) == 2
        stats = game.get_and_reset_stats()
        assert stats == {
            f"Player/{name}/Stress?team={team}": [(value, AVERAGE)]
            for team in (0, 1)
            for name, value in (("Cumulative Reward", 0.5), ("Episode Length", 2.0))
        }
        assert game.get_and_reset_stats() == {}
    finally:
        game.close()


def test_parallel_env_reads_a_given_stats_channel_across_a_restart() -> None:
    channel = StatsSideChannel()
    # crash_after=4: the game exits during the 4th step after its launch, then is restarted.
    game = UnityParallelEnv(
        scene="Stress",
        num_agents=2,
        scene_options={"episode_length": 2, "crash_after": 4},
        side_channels=[channel],
        restarts_rate_limit_n=-1,
    )
    half = {agent: np.full(2, 0.5, dtype=np.float32) for agent in game.possible_agents}
    expected = {REWARD: [(1.0, AVERAGE)] * 2, LENGTH: [(2.0, AVERAGE)] * 2}
    try:
        game.reset()
        game.step(half)
        game.step(half)  # both episodes end
        assert game.get_and_reset_stats() == expected
        assert channel.stats == {}  # the same channel: emptied
        game.reset()
        game.step(half)
        _, _, _, truncations, _ = game.step(half)  # the crash
        assert all(truncations.values()) and game.restart_count == 1
        assert game.get_and_reset_stats() == {}
        game.reset()
        game.step(half)
        _, _, terminations, _, _ = game.step(half)  # the relaunched game's episodes end
        assert all(terminations.values())
        assert game.get_and_reset_stats() == expected
    finally:
        game.close()


class _OtherStatsReader(SideChannel):
    """A user channel that serves the stats channel id with its own class."""

    def __init__(self) -> None:
        super().__init__(StatsSideChannel.CHANNEL_ID)
        self.messages = 0

    def on_message_received(self, msg: IncomingMessage) -> None:
        self.messages += 1


def test_parallel_env_with_another_stats_reader_says_where_the_stats_go() -> None:
    reader = _OtherStatsReader()
    game = UnityParallelEnv(
        scene="Stress", num_agents=2, scene_options={"episode_length": 1}, side_channels=[reader]
    )
    try:
        game.reset()
        game.step({agent: np.zeros(2, dtype=np.float32) for agent in game.agents})
        assert reader.messages == 4  # two episodes, two stats each
        with pytest.raises(UnityEnvironmentException, match="side_channels"):
            game.get_and_reset_stats()
    finally:
        game.close()
