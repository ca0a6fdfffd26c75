"""Self-play (``self_play``): the ghost trainer around PPO.

ELO against hand-computed values; the snapshot, swap and team-change cadence and the ELO
bookkeeping on a ghost driven by hand through the trainer API (synthetic steps); resume of the
snapshot window, ELO and counters through a real checkpoint file; ``unity-train`` on the built-in
Tennis scene with self-play (a real player over gRPC), its exported policy played against random
with deterministic and sampled actions (:mod:`benchmarks.policy_eval`); configuration errors.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch
from gymnasium import spaces
from trainer_test_support import RunTrain, ppo_behavior, ppo_trainer, tensorboard_scalars

from benchmarks.policy_eval import OnnxPolicy, play_against_random
from trainers.common.checkpoints.files import load_checkpoint, save_checkpoint
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.contract import BehaviorStep
from trainers.env_manager import EnvManager
from trainers.ghost import (
    SELF_PLAY_STATE_KEY,
    GhostController,
    GhostTrainer,
    elo_change,
    expected_score,
    game_result,
    team_of,
)
from trainers.settings import ConfigError, parse_run_options
from unity_gym.pettingzoo import parallel_env

pytestmark = pytest.mark.timeout(120)

TEAMS = [0, 1, 0, 1]  # two games, one agent per team each
SELF_PLAY = {
    "save_steps": 4,
    "swap_steps": 3,
    "team_change": 10,
    "window": 2,
    "play_against_latest_model_ratio": 0.0,
    "initial_elo": 1000.0,
}


def test_elo_matches_hand_computed_values() -> None:
    assert expected_score(1200.0, 1200.0) == 0.5
    # 1 / (1 + 10 ** (-200 / 400)) = 1 / (1 + 0.316227766) = 0.759746927
    assert math.isclose(expected_score(1400.0, 1200.0), 0.759746927, abs_tol=1e-9)
    assert math.isclose(expected_score(1200.0, 1400.0), 0.240253073, abs_tol=1e-9)
    # ML-Agents' change is result - expected (no K-factor)
    assert elo_change(1200.0, 1200.0, 1.0) == 0.5
    assert math.isclose(elo_change(1400.0, 1200.0, 0.0), -0.759746927, abs_tol=1e-9)
    assert math.isclose(elo_change(1400.0, 1200.0, 0.5), -0.259746927, abs_tol=1e-9)
    # with a chess K-factor of 16: 16 * (1 - 0.240253073) = 12.15595083
    assert math.isclose(elo_change(1200.0, 1400.0, 1.0, k_factor=16.0), 12.15595083, abs_tol=1e-7)
    assert [game_result(r) for r in (2.0, 0.1, 0.0, -0.01)] == [1.0, 1.0, 0.5, 0.0]
    assert [team_of(b) for b in ("Tennis?team=1", "Tennis?team=0", "Tennis")] == [1, 0, 0]


def _ghost(
    tmp_path: Path, controller: GhostController | None = None, teams: list[int] = TEAMS
) -> GhostTrainer:
    layout = ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (3,), np.float32))
    actions = ActionLayout.from_space(spaces.Box(-1.0, 1.0, (2,), np.float32))
    behavior = ppo_behavior(
        self_play=SELF_PLAY,
        hyperparameters={"batch_size": 8, "buffer_size": 16},
        time_horizon=8,
        max_steps=10_000,
        summary_freq=10_000,
    )
    trainer = ppo_trainer("Duel", behavior, layout, actions, tmp_path, seed=3)
    return GhostTrainer(trainer, teams, controller or GhostController())


def _step(
    rng: np.random.Generator,
    rewards: list[float] | None = None,
    done: list[bool] | None = None,
    valid: list[bool] | None = None,
    n: int = len(TEAMS),
) -> BehaviorStep:
    observations = [rng.normal(size=(n, 3)).astype(np.float32)]
    return BehaviorStep(
        observations=observations,
        action_mask=None,
        rewards=np.asarray(rewards or [0.0] * n, dtype=np.float32),
        terminated=np.asarray(done or [False] * n, dtype=bool),
        truncated=np.zeros(n, dtype=bool),
        valid=np.asarray(valid or [True] * n, dtype=bool),
        final_observations=observations,
        final_action_mask=None,
    )


def _play(ghost: GhostTrainer, step: BehaviorStep) -> None:
    """One iteration as the training loop runs it: the outcome of the last decision, the
    update step, the next decision."""
    ghost.observe(step)
    ghost.advance()
    ghost.decide(step)


def test_snapshot_swap_and_team_change_cadence(tmp_path: Path) -> None:
    ghost = _ghost(tmp_path)
    rng = np.random.default_rng(0)
    assert ghost.learning_team == 0 and len(ghost.snapshots) == 1  # the initial policy
    ghost.decide(_step(rng))  # the first decision: no outcome to record
    history = []
    for _ in range(8):
        _play(ghost, _step(rng))
        counters = (ghost.step, ghost.ghost_step, ghost.snapshot_counter, ghost.last_swap)
        history.append((*counters, ghost.learning_team))
    # Each iteration: 2 learning steps (the wrapped trainer's) and 2 ghost steps.
    # save: step - last_save > 4 at steps 6 and 12 (window 2: the ring index goes 1 -> 0 -> 1);
    # swap: ghost_step - last_swap > 3 at 4, 8, 12, 16; team change: step > 10 at step 12,
    # which also swaps (last_swap = 12).
    assert history == [
        (2, 2, 1, 0, 0),
        (4, 4, 1, 4, 0),
        (6, 6, 0, 4, 0),
        (8, 8, 0, 8, 0),
        (10, 10, 0, 8, 0),
        (12, 12, 1, 12, 1),
        (14, 14, 1, 12, 1),
        (16, 16, 1, 16, 1),
    ]
    assert len(ghost.snapshots) == 2 and ghost.last_team_change == 12
    assert ghost.controller.state_dict() == {"learning_team": 1, "queue": [0]}
    # Only the learning team's valid steps count: team 1 now learns (slots 1 and 3).
    ghost.observe(_step(rng, valid=[True, False, True, True]))
    assert (ghost.step, ghost.ghost_step) == (17, 18)
    ghost.close()


def test_elo_is_rated_against_the_opponents_snapshot(tmp_path: Path) -> None:
    ghost = _ghost(tmp_path)
    rng = np.random.default_rng(1)
    ghost.decide(_step(rng))
    # slot 0 (team 0, learning) wins, slot 2 (team 0) loses, slots 1 and 3 (opponents) ignored
    ghost.observe(_step(rng, rewards=[1.0, -1.0, -1.0, 1.0], done=[True] * 4))
    # win against snapshot 0 (1000 vs 1000): +0.5; loss at 1000.5 vs 999.5:
    # 0 - 1 / (1 + 10 ** (-1 / 400)) = -0.501439 (hand-computed)
    after_win = 1000.5
    loss = -1.0 / (1.0 + 10.0 ** ((999.5 - after_win) / 400.0))
    assert math.isclose(loss, -0.5014390, abs_tol=1e-6)
    assert math.isclose(ghost.current_elo, after_win + loss)
    assert math.isclose(ghost.policy_elos[0], 999.5 - loss)  # the opponent's moves opposite
    assert math.isclose(ghost.current_elo + ghost.policy_elos[0], 2000.0)
    # a game against the latest policy (index -1: the learner itself) changes nothing
    ghost.current_opponent = -1
    before = ghost.current_elo
    ghost.decide(_step(rng))
    ghost.observe(_step(rng, rewards=[1.0, 0.0, 1.0, 0.0], done=[True] * 4))
    assert math.isclose(ghost.current_elo, before)
    ghost.close()


def test_interrupted_episodes_are_not_rated(tmp_path: Path) -> None:
    """ML-Agents' ``GhostTrainer._process_trajectory`` rates a trajectory only when it is done
    and not ``interrupted`` (a max-step time-out, a restarted game): such an episode is no
    game, whatever its last reward (a shaping penalty would otherwise count as a loss)."""
    ghost = _ghost(tmp_path)
    rng = np.random.default_rng(4)
    ghost.decide(_step(rng))
    interrupted = _step(rng, rewards=[-0.5, 0.5, 0.0, 0.0], done=[False] * 4)
    interrupted.truncated = np.ones(4, dtype=bool)  # every slot timed out
    ghost.observe(interrupted)
    assert ghost.policy_elos == [1000.0] * 3  # nobody rated: learner and snapshot unchanged
    # both at once (terminated and truncated) is still an interruption, not a result
    ghost.decide(_step(rng))
    both = _step(rng, rewards=[1.0, -1.0, 1.0, -1.0], done=[True] * 4)
    both.truncated = np.ones(4, dtype=bool)
    ghost.observe(both)
    assert ghost.policy_elos == [1000.0] * 3
    # a terminal step with the same reward is a game: the learner loses to snapshot 0
    ghost.decide(_step(rng))
    ghost.observe(_step(rng, rewards=[-0.5, 0.5, 0.0, 0.0], done=[True, True, False, False]))
    assert math.isclose(ghost.current_elo, 999.5) and math.isclose(ghost.policy_elos[0], 1000.5)
    ghost.close()


def test_only_the_learning_team_s_episodes_reach_the_statistics(tmp_path: Path) -> None:
    ghost = _ghost(tmp_path)
    ghost.context.stats.keep_recent_rewards(10)
    rng = np.random.default_rng(2)
    ghost.decide(_step(rng))
    step = _step(rng, rewards=[1.0, -1.0, 0.5, -0.5], done=[True, True, False, True])
    step.episodes = [(3.0, 7), (-3.0, 7), (-2.0, 9)]  # rows 0, 1 and 3, as the env manager lists
    ghost.observe(step)
    # team 0 learns (rows 0 and 2): only row 0's episode is the learning team's
    assert ghost.context.stats.recent_rewards() == [3.0]
    ghost.close()


@pytest.mark.parametrize("memory", [None, {"memory_size": 8, "sequence_length": 4}])
def test_opponents_of_several_groups_act_as_when_decided_one_group_at_a_time(
    tmp_path: Path, memory: dict[str, int] | None
) -> None:
    """One snapshot forward pass over the slots of several groups gives each group the
    actions (and, with memory, the memories) it gets when decided alone."""
    layout = ObservationLayout.from_space(spaces.Box(-1.0, 1.0, (3,), np.float32))
    actions = ActionLayout.from_space(spaces.Box(-1.0, 1.0, (2,), np.float32))
    behavior = ppo_behavior(
        self_play=SELF_PLAY,
        network_settings={"deterministic": True, "memory": memory, "normalize": False},
    )

    def ghost(name: str) -> GhostTrainer:
        torch.manual_seed(3)  # the same initial weights for both
        trainer = ppo_trainer("Duel", behavior, layout, actions, tmp_path / name, seed=3)
        return GhostTrainer(trainer, TEAMS, GhostController())

    together, alone = ghost("together"), ghost("alone")
    rng = np.random.default_rng(4)
    opponents = [1, 3]  # team 1's slots; team 0 learns
    for _ in range(3):  # later rounds act on the memories the earlier ones left
        steps = [_step(rng), _step(rng)]
        steps[1].group = 1
        joint = together.decide_many(steps)
        for step, decision in zip(steps, joint, strict=True):
            single = alone.decide_many([step])[0]
            assert decision.continuous is not None and single.continuous is not None
            np.testing.assert_allclose(
                decision.continuous[opponents], single.continuous[opponents], atol=1e-6
            )
        assert not np.allclose(joint[0].continuous[opponents], joint[1].continuous[opponents])
    together.close()
    alone.close()


def test_asymmetric_teams_take_turns_across_two_ghost_trainers(tmp_path: Path) -> None:
    controller = GhostController()  # one behavior name per team, one schedule for both
    striker = _ghost(tmp_path / "s", controller, teams=[0, 0])
    goalie = _ghost(tmp_path / "g", controller, teams=[1, 1])
    rng = np.random.default_rng(4)
    for ghost in (striker, goalie):
        ghost.decide(_step(rng, n=2))
    # a striker (learning) wins against the goalie's snapshot 0: 1000 vs 1000, +0.5 / -0.5
    striker.observe(_step(rng, rewards=[1.0, 0.0], done=[True, False], n=2))
    goalie.observe(_step(rng, rewards=[-1.0, 0.0], done=[True, False], n=2))
    assert striker.current_elo == 1000.5 and goalie.policy_elos[0] == 999.5
    assert goalie.current_elo == 1000.0  # the goalie did not learn: not rated
    counts = []
    for _ in range(9):
        for ghost in (striker, goalie):
            ghost.advance()
            ghost.decide(_step(rng, n=2))
        for ghost in (striker, goalie):
            ghost.observe(_step(rng, n=2))
        counts.append((striker.step, goalie.step, striker.ghost_step, goalie.ghost_step))
    # the striker learns until its step exceeds team_change (10, at 12); then the goalie does,
    # from the decision after the change, and the striker's steps are ghost steps
    assert counts[3] == (10, 0, 0, 10) and counts[4] == (12, 0, 0, 12)
    assert counts[5] == (12, 2, 2, 12) and counts[8] == (12, 8, 8, 12)
    assert striker.learning_team == goalie.learning_team == 1
    for ghost in (striker, goalie):
        ghost.close()


def test_two_behaviors_cannot_play_the_same_team(tmp_path: Path) -> None:
    controller = GhostController()
    first = _ghost(tmp_path / "a", controller)
    with pytest.raises(ValueError, match=r"team 0 is played by both 'Duel' and 'Duel'"):
        _ghost(tmp_path / "b", controller)
    first.close()


def test_resume_restores_window_elo_counters_and_team(tmp_path: Path) -> None:
    ghost = _ghost(tmp_path / "a")
    rng = np.random.default_rng(2)
    ghost.decide(_step(rng))
    for index in range(9):  # PPO updates at step 16 (buffer_size)
        done = [index % 3 == 2] * 4
        rewards = [1.0, -1.0, 1.0, -1.0] if done[0] else None
        _play(ghost, _step(rng, rewards=rewards, done=done))
    saved = ghost.self_play_state()
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(ghost.state_dict(), path)  # loaded back with weights_only=True
    ghost.close()

    resumed = _ghost(tmp_path / "b")
    resumed.load_state_dict(load_checkpoint(path), restore_progress=True)
    restored = resumed.self_play_state()
    assert resumed.step == 18 and resumed.learning_team == 1
    for key in ("learning_team", "ghost_step", "last_save", "last_swap", "last_team_change",
                "snapshot_counter", "current_opponent", "policy_elos", "controller"):  # fmt: skip
        assert restored[key] == saved[key], key
    assert restored["policy_elos"][-1] != 1000.0  # games were rated
    assert len(restored["snapshots"]) == len(saved["snapshots"]) == 2
    for mine, theirs in zip(restored["snapshots"], saved["snapshots"], strict=True):
        assert all(torch.equal(mine[k], theirs[k]) for k in theirs)
    for team, weights in saved["opponents"].items():
        assert all(torch.equal(restored["opponents"][team][k], weights[k]) for k in weights)
    # the window holds the trained snapshot of step 18, not the new trainer's initial policy
    fresh = _ghost(tmp_path / "c")
    initial = fresh.snapshots[0]
    assert not all(torch.equal(initial[k], resumed.snapshots[1][k]) for k in initial)
    # --initialize-from: networks only; the window starts over from the loaded policy
    fresh.load_state_dict(load_checkpoint(path), restore_progress=False)
    assert fresh.step == 0 and len(fresh.snapshots) == 1 and fresh.current_elo == 1000.0
    policy = fresh.trainer.policy.state_dict()
    assert all(torch.equal(fresh.snapshots[0][k], policy[k]) for k in policy)
    for ghost_trainer in (resumed, fresh):
        ghost_trainer.close()


@pytest.mark.parametrize(
    ("self_play", "message"),
    [
        ({"window": 0}, r"self_play\.window: must be at least 1"),
        ({"save_steps": -5}, r"self_play\.save_steps: must be greater than 0"),
        ({"swap_steps": 0}, r"self_play\.swap_steps: must be greater than 0"),
        ({"team_change": -1}, r"self_play\.team_change: must be greater than 0"),
        ({"play_against_latest_model_ratio": 1.5}, r"play_against_latest_model_ratio: must be"),
        ({"windows": 3}, r"self_play\.windows: unknown key; did you mean window\?"),
    ],
)
def test_bad_self_play_settings_name_the_key(self_play: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_run_options({"behaviors": {"Tennis": {"self_play": self_play}}})


def test_self_play_defaults_are_ml_agents() -> None:
    options = parse_run_options({"behaviors": {"A": {"self_play": {}}, "B": {"self_play": {
        "save_steps": 100}}}})  # fmt: skip
    settings = options.trainer_settings_for("A").self_play
    assert settings is not None
    assert (settings.save_steps, settings.team_change, settings.swap_steps, settings.window) == (
        20000, 100000, 2000, 10)  # fmt: skip
    assert (settings.play_against_latest_model_ratio, settings.initial_elo) == (0.5, 1200.0)
    other = options.trainer_settings_for("B").self_play
    assert other is not None and other.team_change == 500  # 5 x save_steps


def test_tennis_trains_with_self_play_and_exports_onnx(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    behavior = ppo_behavior(
        max_steps=240,
        summary_freq=80,
        checkpoint_interval=240,
        self_play={"save_steps": 40, "swap_steps": 30, "team_change": 100, "window": 3},
    )
    run = run_train({"behaviors": {"Tennis": behavior}}, "--scene", "Tennis", "--num-areas", "2",
                    "--seed", "5", "--no-graphics")  # fmt: skip
    err = capsys.readouterr().err
    assert "self-play is not configured" not in err
    assert "PPO + self-play" in err
    session = onnxruntime.InferenceSession(str(run / "Tennis.onnx"))
    assert {i.name: list(i.shape) for i in session.get_inputs()} == {"obs_0": ["batch", 27]}
    elo = tensorboard_scalars(run / "Tennis")["Self-play/ELO"]
    assert len(elo) == 3 and all(math.isfinite(value) for value in elo)
    state = load_checkpoint(run / "Tennis" / "checkpoint.pt")
    assert state["trainer_type"] == "ppo" and 240 <= state["step"] < 240 + 2
    self_play = state[SELF_PLAY_STATE_KEY]
    # 240 learning steps: team 0 then team 1 (changes at steps > 100 and > 200)
    assert self_play["controller"] == {"learning_team": 0, "queue": [1]}
    assert self_play["last_team_change"] > 200
    assert len(self_play["snapshots"]) == 3  # the initial policy + snapshots, window 3
    assert self_play["ghost_step"] >= 200
    # The benchmarks play the exported policy: its deterministic actions repeat for one
    # observation, its sampled ones (Unity's default inference) vary; both play whole points.
    env = parallel_env(scene="Tennis", seed=5)
    try:
        observations, _ = env.reset()
        agent = env.possible_agents[0]
        layouts = (
            ObservationLayout.from_space(env.observation_space(agent)),
            ActionLayout.from_space(env.action_space(agent)),
        )
    finally:
        env.close()
    for sampled, distinct in ((False, 1), (True, 8)):
        policy = OnnxPolicy(run / "Tennis.onnx", sampled=sampled)
        actions = {tuple(policy.act(observations[agent], *layouts)) for _ in range(8)}
        assert len(actions) == distinct
        record = play_against_random("Tennis", run / "Tennis.onnx", 2, seed=5, sampled=sampled)
        assert record.games == 2 and record.draws == 0


def test_tennis_self_play_resumes_with_its_window_elo_and_schedule(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    self_play = {"save_steps": 20, "swap_steps": 10, "team_change": 50, "window": 2}
    flags = ("--scene", "Tennis", "--num-areas", "1", "--seed", "6", "--no-graphics")
    config = {"behaviors": {"Tennis": ppo_behavior(max_steps=60, self_play=self_play)}}
    run = run_train(config, *flags)
    first = load_checkpoint(run / "Tennis" / "checkpoint.pt")[SELF_PLAY_STATE_KEY]
    config["behaviors"]["Tennis"]["max_steps"] = 80
    run_train(config, *flags, "--resume")
    assert "no self-play state" not in capsys.readouterr().err
    second = load_checkpoint(run / "Tennis" / "checkpoint.pt")[SELF_PLAY_STATE_KEY]
    # 60 steps (one learning slot): snapshots at 21 and 42 (ring of 2), team 1 learns from step
    # 51; 20 more steps carry on from there: no team change, one more snapshot at 63
    assert first["controller"] == second["controller"] == {"learning_team": 1, "queue": [0]}
    assert first["last_team_change"] == second["last_team_change"]
    assert second["ghost_step"] > first["ghost_step"]
    assert first["last_save"] < second["last_save"] and second["last_save"] > 60
    assert second["snapshot_counter"] == (first["snapshot_counter"] + 1) % 2
    kept = 1 - first["snapshot_counter"]  # the snapshot the resumed run did not replace
    weights = first["snapshots"][kept]
    assert all(torch.equal(second["snapshots"][kept][k], weights[k]) for k in weights)


def test_self_play_on_a_game_with_one_team_is_a_config_error(
    run_train: RunTrain, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {"behaviors": {"3DBall": ppo_behavior(self_play={"window": 5})}}
    run_train(config, "--scene", "3DBall", "--no-graphics", expect=2)
    assert "behaviors.3DBall.self_play: this game has a single team" in capsys.readouterr().err


def test_self_play_on_asynchronous_games(run_train: RunTrain) -> None:
    # two game processes, each its own slot group: the ghost reads each step's slots
    behavior = ppo_behavior(
        max_steps=160,
        summary_freq=80,
        checkpoint_interval=10**6,
        self_play={"save_steps": 30, "swap_steps": 20, "team_change": 60, "window": 2},
    )
    run = run_train({"behaviors": {"Tennis": behavior}}, "--scene", "Tennis", "--num-envs", "2",
                    "--num-areas", "1", "--seed", "4", "--no-graphics")  # fmt: skip
    state = load_checkpoint(run / "Tennis" / "checkpoint.pt")
    assert 160 <= state["step"] < 160 + 4 and state["update_count"] >= 1
    self_play = state[SELF_PLAY_STATE_KEY]
    assert self_play["last_team_change"] > 120  # teams changed at steps > 60 and > 120
    assert self_play["ghost_step"] >= 120  # the other team's slots played in both games
    elo = tensorboard_scalars(run / "Tennis")["Self-play/ELO"]
    assert elo and all(math.isfinite(value) for value in elo)


def test_tennis_rollout_holds_the_learning_team_only_and_ends_its_episodes_at_team_changes(
    tmp_path: Path,
) -> None:
    """A ghost over the real Tennis game (two areas, player over gRPC), stepped as the training
    loop steps it, with team changes every 60 learning steps. What the wrapped PPO would train
    on (its rollout, closed with its critic) must hold, as ML-Agents' ghost hands its wrapped
    trainer only the learning team's trajectories and ends them at a team change:

    * only the steps of the team that learned when the decision was made are valid;
    * the advantage recursion never runs from a valid step into a step that is not valid (at a
      team change the old learner's episodes end there, bootstrapping from the value of the
      observation that followed), so no advantage mixes the opponent's turn into the learner's;
    * every point ends both agents' episodes, terminated, +1 for the winner's team and -1 for
      the other's, and the learner's ELO moves only with its points."""
    env = parallel_env(scene="Tennis", seed=9, num_areas=2, no_graphics=True)
    try:
        manager = EnvManager.for_parallel_envs([env], asynchronous=False)
        slots = manager.behaviors["Tennis"]
        teams = np.asarray(manager.slot_teams["Tennis"])
        assert sorted(teams.tolist()) == [0, 0, 1, 1]
        behavior = ppo_behavior(
            hyperparameters={"buffer_size": 100_000},  # no update: the rollout stays recorded
            time_horizon=1000,
            max_steps=100_000,
            summary_freq=100_000,
            self_play={"save_steps": 40, "swap_steps": 30, "team_change": 60, "window": 3},
        )
        layout, actions = slots.observation_layout, slots.action_layout
        trainer = ppo_trainer("Tennis", behavior, layout, actions, tmp_path, seed=9)
        ghost = GhostTrainer(trainer, teams.tolist(), GhostController())
        current = manager.reset(9)["Tennis"]
        learning_at, points = [], 0
        while ghost.step <= 200:  # team changes after steps 60, 120 and 180
            decision = ghost.decide(current)
            learning_at.append(ghost.learning_team)
            current = manager.step({"Tennis": decision})["Tennis"]
            ended = current.done & current.valid
            if ended.any():
                # Tennis ends both agents of an area at once: one winner, one loser
                assert current.terminated[ended].all() and not current.truncated.any()
                assert np.array_equal(np.abs(current.rewards[ended]), np.ones(ended.sum()))
                assert current.rewards[ended].sum() == 0.0
                points += int(ended.sum()) // 2
            ghost.observe(current)
            ghost.advance()
        assert ghost.controller.state_dict()["learning_team"] == 1  # three changes: 0 1 0 1
        assert points >= 1
        buffer = trainer.buffers[0]

        def value_of(observations: list[np.ndarray]) -> np.ndarray:
            with torch.no_grad():
                return trainer.critic(trainer.tensors(observations)).numpy()

        rollout = buffer.finish(value_of, current.observations)
    finally:
        env.close()
    learning = np.asarray(learning_at)
    assert rollout.valid.shape == (len(learning), len(teams))
    # 1. only the learning team's decisions are learned from, and all of them
    assert not (rollout.valid & (teams[None, :] != learning[:, None])).any()
    assert rollout.num_valid == ghost.step
    # 2. no advantage chain runs from a valid step into one that is not valid
    chained = rollout.valid[:-1] & ~rollout.chain_breaks[:-1]
    assert not (chained & ~rollout.valid[1:]).any()
    # 3. at each team change the old learner's episodes end truncated, bootstrapped from the
    # value of the next observation (the same observation the next row holds)
    changes = np.flatnonzero(learning[:-1] != learning[1:])
    assert len(changes) == 3
    for t in changes:
        old = np.flatnonzero(teams == learning[t])
        for slot in old:
            if not rollout.valid[t, slot]:
                continue  # the slot waited for the other area's point
            assert rollout.episode_ends[t, slot]
            if not rollout.terminated[t, slot]:
                assert math.isclose(
                    rollout.next_values[t, slot], rollout.values[t + 1, slot], abs_tol=1e-5
                )
