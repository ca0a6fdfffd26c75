"""The Tennis diagnostic :mod:`benchmarks.tennis_outcomes`: every point is counted once under one
of the scene's rules, the heuristic beats random actions, the same seed plays the same points,
and an exported ``unity-train`` model plays (the built-in scene, in this process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_test_support import RunTrain

from benchmarks.tennis_outcomes import RULES, main, play_outcomes
from trainers.settings import load_config_file

pytestmark = pytest.mark.timeout(180)

CONFIG = Path(__file__).parents[2] / "trainers" / "configs" / "Tennis_ppo.yaml"


def test_the_heuristic_beats_random_actions_and_every_point_has_a_rule() -> None:
    outcomes = play_outcomes(None, points=120, seed=1)
    assert outcomes.points == 120
    assert set(outcomes.lost) | set(outcomes.won) <= set(RULES)
    assert outcomes.win_rate >= 0.8  # the heuristic returns nearly every ball
    # random actions lose points by several rules: the serve and bounced balls not returned
    assert outcomes.won["did not return the serve"] > 0
    assert outcomes.won["did not return a ball that bounced"] > 0
    assert "120 points, trained side won" in outcomes.report()
    again = play_outcomes(None, points=120, seed=1)
    assert again.lost == outcomes.lost and again.won == outcomes.won
    other = play_outcomes(None, points=120, seed=2)
    assert (other.lost, other.won) != (outcomes.lost, outcomes.won)


def test_an_exported_model_plays_and_bad_input_is_refused(
    run_train: RunTrain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_config_file(CONFIG)
    behavior = config["behaviors"]["Tennis"]
    behavior.update(max_steps=64, summary_freq=64, time_horizon=32)
    behavior["hyperparameters"].update(buffer_size=64, batch_size=32, num_epoch=1)
    behavior["network_settings"]["hidden_units"] = 16
    run = run_train(config, "--scene", "Tennis", "--seed", "3")
    assert main([str(run / "Tennis.onnx"), "--points", "30", "--sampled"]) == 0
    out = capsys.readouterr().out
    assert "30 points, trained side won" in out and "against random actions, seed 1" in out

    assert main([str(tmp_path / "missing.onnx"), "--points", "1"]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(ValueError, match="points must be positive"):
        play_outcomes(None, points=0)
