"""The games' own statistics (Unity's ``StatsRecorder``) in ``unity-train``'s TensorBoard.

The headless player sends ``Player/Episode Length/<behavior>`` (``AVERAGE``) at every episode
end, as a game's own ``StatsRecorder`` would; real players over gRPC, through the vector env
and the PettingZoo envs.

Aggregation as ML-Agents 1.1.0's ``StatsReporter``: ``AVERAGE`` by mean, ``SUM`` by sum,
``MOST_RECENT`` by the last value, ``HISTOGRAM`` by mean plus a ``<key>_hist`` histogram.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from trainer_test_support import RunTrain, ppo_behavior, tensorboard_scalars

from trainers.common.bookkeeping.stats import StatsReporter
from unity_gym.side_channels import StatsAggregationMethod

AVERAGE = StatsAggregationMethod.AVERAGE
SUM = StatsAggregationMethod.SUM
MOST_RECENT = StatsAggregationMethod.MOST_RECENT
HISTOGRAM = StatsAggregationMethod.HISTOGRAM


def test_game_stats_are_aggregated_as_ml_agents_does(tmp_path: Path) -> None:
    stats = StatsReporter("B", tmp_path, time.monotonic())
    try:
        stats.add_game_stats({"Goal/Correct": [(1.0, SUM), (1.0, SUM)], "Speed": [(2.0, AVERAGE)]})
        stats.add_game_stats(
            {
                "Goal/Correct": [(1.0, SUM)],
                "Speed": [(4.0, AVERAGE)],
                "Level": [(3.0, MOST_RECENT), (5.0, MOST_RECENT)],
                "Size": [(1.0, HISTOGRAM), (3.0, HISTOGRAM)],
            }
        )
        stats.write_summary(100, training=True)
        stats.add_game_stats({"Goal/Correct": [(1.0, SUM)], "Level": [(6.0, MOST_RECENT)]})
        stats.write_summary(200, training=True)
        stats.write_summary(300, training=True)  # nothing new: no value of these keys
    finally:
        stats.close()
    scalars = tensorboard_scalars(tmp_path)
    assert scalars["Goal/Correct"] == [3.0, 1.0]
    assert scalars["Speed"] == [3.0]
    assert scalars["Level"] == [5.0, 6.0]
    assert scalars["Size"] == [2.0]
    (events,) = tmp_path.glob("events.out.tfevents.*")
    accumulator = EventAccumulator(str(events))
    accumulator.Reload()
    assert accumulator.Tags()["histograms"] == ["Size_hist"]
    (histogram,) = accumulator.Histograms("Size_hist")
    assert histogram.step == 100 and histogram.histogram_value.num == 2


def test_a_stat_that_changes_its_aggregation_is_aggregated_the_new_way_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stats = StatsReporter("B", tmp_path, time.monotonic())
    try:
        stats.add_game_stats({"Level": [(1.0, SUM), (2.0, SUM)]})
        with caplog.at_level(logging.WARNING, logger="trainers"):
            stats.add_game_stats({"Level": [(6.0, AVERAGE)]})
        stats.write_summary(100, training=True)
    finally:
        stats.close()
    assert "stat 'Level' with aggregation AVERAGE after SUM" in caplog.text
    assert tensorboard_scalars(tmp_path)["Level"] == [3.0]  # mean of 1, 2 and 6


def test_unity_train_writes_the_games_stats_through_the_vector_env(run_train: RunTrain) -> None:
    # Stress episodes last exactly 6 steps; 3 game processes of 4 agents, each stepped on its
    # own: 240 steps are 20 per agent, so every game ends 3 episodes, 6 of its steps apart, and
    # their stats land in more than one 24-step summary however the games drift
    behavior = ppo_behavior(max_steps=240, summary_freq=24, checkpoint_interval=10**6)
    run = run_train({"behaviors": {"Stress": behavior}}, "--scene", "Stress", "--num-envs", "3",
                    "--env-args", "--option", "episode_length=6")  # fmt: skip
    scalars = tensorboard_scalars(run / "Stress")
    lengths = scalars["Player/Episode Length/Stress?team=0"]
    assert len(lengths) >= 2 and all(value == 6.0 for value in lengths)
    assert "Player/Cumulative Reward/Stress?team=0" in scalars


def test_unity_train_writes_the_games_stats_through_the_pettingzoo_envs(
    run_train: RunTrain,
) -> None:
    # Tennis: two teams, 2 game processes; both teams' stats reach the one Tennis trainer
    behavior = ppo_behavior(max_steps=400, summary_freq=100, checkpoint_interval=10**6)
    run = run_train(
        {"behaviors": {"Tennis": behavior}},
        "--scene",
        "Tennis",
        "--num-envs",
        "2",
        "--num-areas",
        "1",
    )
    scalars = tensorboard_scalars(run / "Tennis")
    for team in (0, 1):
        lengths = scalars[f"Player/Episode Length/Tennis?team={team}"]
        assert lengths and all(value >= 1.0 for value in lengths)
        assert f"Player/Cumulative Reward/Tennis?team={team}" in scalars
