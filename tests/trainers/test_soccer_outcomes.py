"""The SoccerTwos diagnostic :mod:`benchmarks.soccer_outcomes`: outcomes add up, the heuristic
team beats a random one, only the trained team's actions are counted, the same seed plays the
same games, and an exported ``unity-train`` model plays (the built-in scene, in this process)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from trainer_test_support import RunTrain

from benchmarks.policy_eval import OnnxPolicy
from benchmarks.soccer_outcomes import OUTCOMES, main, play_outcomes
from trainers.settings import load_config_file

pytestmark = pytest.mark.timeout(180)

CONFIG = Path(__file__).parents[2] / "trainers" / "configs" / "SoccerTwos_poca.yaml"


def test_the_heuristic_team_beats_a_random_team_and_outcomes_add_up() -> None:
    outcomes = play_outcomes(None, games=16, seed=1)
    assert outcomes.games == 16 and set(outcomes.counts) <= set(OUTCOMES)
    assert sum(len(steps) for steps in outcomes.steps.values()) == 16
    assert all(0 < s <= 5000 for steps in outcomes.steps.values() for s in steps)
    assert outcomes.share("won") >= 0.75  # the heuristic wins nearly every game
    assert outcomes.share("won") + outcomes.share("lost") + outcomes.share("drawn") == 1.0
    # the heuristic never sidesteps, while the random team does a third of the time: every
    # counted decision is the trained team's
    for in_sight in (True, False):
        assert sum(outcomes.actions[in_sight].values()) > 0
        assert outcomes.branch_shares(in_sight, 1) == [1.0, 0.0, 0.0]
    again = play_outcomes(None, games=16, seed=1)
    assert again.counts == outcomes.counts and again.steps == outcomes.steps


def test_an_exported_model_plays_and_bad_input_is_refused(
    run_train: RunTrain, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_config_file(CONFIG)
    behavior = config["behaviors"]["SoccerTwos"]
    behavior.update(max_steps=64, summary_freq=64, time_horizon=32)
    behavior["hyperparameters"].update(buffer_size=64, batch_size=32, num_epoch=1)
    behavior["network_settings"]["hidden_units"] = 16
    run = run_train(config, "--scene", "SoccerTwos", "--seed", "3")
    outcomes = play_outcomes(run / "SoccerTwos.onnx", games=4, seed=2, sampled=True)
    assert outcomes.games == 4
    assert sum(outcomes.actions[False].values()) > 0
    # the sampled actions of a barely trained policy use every value of every branch
    for branch in range(3):
        shares = outcomes.branch_shares(False, branch)
        assert min(shares) > 0.1 and sum(shares) == pytest.approx(1.0)

    policy = OnnxPolicy(run / "SoccerTwos.onnx")
    with pytest.raises(ValueError, match="takes 2 observation inputs, not 1"):
        policy.run([np.zeros((1, 264), np.float32)])
    assert main([str(tmp_path / "missing.onnx"), "--games", "1"]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(ValueError, match="games must be positive"):
        play_outcomes(None, games=0)
