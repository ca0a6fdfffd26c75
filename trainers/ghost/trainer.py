"""The ghost trainer: self-play for the teams of one behavior name.

A :class:`GhostTrainer` wraps the learning trainer (PPO or SAC, unchanged) of one behavior name
and drives every slot of all its teams (``Tennis?team=0`` and ``Tennis?team=1``: team = the
``?team=<t>`` suffix, 0 without one). One team learns at a time (the run's
:class:`~trainers.ghost.controller.GhostController` says which):

* the learning team's slots act with the wrapped trainer's policy and are recorded by it: the
  wrapped trainer sees every slot, but only the learning team's steps are ``valid``, so only
  they are learned from and counted as steps;
* the other teams' slots act with a frozen snapshot policy: nothing of them is recorded, and
  their agent steps are counted as *ghost steps* only.

Schedule (ML-Agents facts, ``mlagents/trainers/ghost/trainer.py``; every comparison is strict,
checked after the wrapped trainer's own update step):

* a snapshot of the learning policy is kept when the wrapped trainer's steps since the last one
  exceed ``save_steps``; the window holds the last ``window`` snapshots (a ring, the initial
  policy is the first). Snapshots are only taken while this behavior's policy learns;
* the opponents swap policy when the ghost steps since the last swap exceed ``swap_steps``, or
  when the learning team changes: with probability ``play_against_latest_model_ratio`` the
  current learning policy (copied then), else a snapshot drawn uniformly from the window;
* the learning team changes when the wrapped trainer's steps since the last change exceed
  ``team_change``. At a change, the episodes the wrapped trainer was recording end truncated
  there (they bootstrap from the current observations), as they are not its to learn any more.
  This differs from ML-Agents on purpose: there ``TrainerController`` resets the environment
  when ``GhostController.should_reset()`` reports the change, and ``AgentProcessor.end_episode``
  drops the steps not yet handed to the trainer; here the games play on and those steps are
  learned from, cut where the team changed.

ELO: after each episode a learning slot finishes with a terminal step, the result (win/draw/loss
from the sign of the slot's last reward, group reward included) rates the learning policy against
the snapshot the opponents play with (:mod:`trainers.ghost.elo`). An interrupted episode
(``truncated``: max step, a restarted game) is no game and rates nothing, as ML-Agents'
``GhostTrainer._process_trajectory`` rates only trajectories that are done and not
``interrupted``. Every snapshot keeps the ELO the learner had when it was taken; the current
policy's ELO is the last entry. As in ML-Agents, a game against the latest policy changes nothing
(both sides are the learner). ``Self-play/ELO`` is the mean ELO after the games of a summary
period (the current ELO when none ended).

Checkpoints hold the wrapped trainer's state plus, under :data:`SELF_PLAY_STATE_KEY`, the
snapshot window (tensors), the ELOs, the opponents' current weights and the schedule counters,
so ``--resume`` carries on where the run stopped. ONNX models are the learning policy's.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from trainers.common.networks.acting import ActingPolicy
from trainers.common.networks.models import PolicyNetwork
from trainers.common.trainer import CheckpointMismatchError, Trainer
from trainers.contract import BehaviorStep, PolicyDecision
from trainers.ghost.controller import GhostController
from trainers.ghost.elo import game_result
from trainers.settings import SelfPlaySettings

__all__ = ["ELO_STAT", "SELF_PLAY_STATE_KEY", "GhostTrainer"]

logger = logging.getLogger("trainers")

SELF_PLAY_STATE_KEY = "self_play"
"""The checkpoint entry of the ghost trainer's own state."""

ELO_STAT = "Self-play/ELO"

Weights = dict[str, torch.Tensor]


class GhostTrainer(Trainer):
    """Self-play around ``trainer`` (see the module documentation).

    Args:
        trainer: the learning trainer of the behavior name; its settings have ``self_play``.
            The ghost owns it from now on (and closes it).
        slot_teams: the team id of each of the behavior's slots, in slot order. A step that
            holds only some slots names them (:attr:`BehaviorStep.slots`).
        controller: the run's controller, shared by every ghost trainer of the run.

    Raises:
        ValueError: ``trainer`` has no ``self_play`` settings, or no slot.
    """

    trainer_type: ClassVar[str] = "ghost"
    wait_for_running_update: ClassVar[bool] = True
    # The wrapped trainer decides when updates run; settling every group first is always safe.
    update_needs_settled_groups: ClassVar[bool] = True

    def __init__(
        self, trainer: Trainer, slot_teams: Sequence[int], controller: GhostController
    ) -> None:
        if trainer.settings.self_play is None:
            raise ValueError(f"behavior {trainer.behavior_name} has no self_play settings.")
        if not slot_teams:
            raise ValueError(f"behavior {trainer.behavior_name} has no slot to play.")
        self.trainer = trainer  # first: the base initializer sets ``step`` (forwarded to it)
        super().__init__(trainer.context)
        if self._executor is not None:  # the wrapped trainer runs the updates
            self._executor.shutdown(wait=False)
            self._executor = None
        self.self_play: SelfPlaySettings = trainer.settings.self_play
        self.controller = controller
        self.slot_teams = np.asarray(slot_teams, dtype=np.int64)
        self.teams = sorted({int(team) for team in slot_teams})
        for team in self.teams:
            controller.subscribe(team, self)
        self.rng = np.random.default_rng([self.context.seed, 0x5E1F])
        self.learning_team = controller.learning_team
        self.ghost_step = 0
        self.last_save = 0
        self.last_swap = 0
        self.last_team_change = 0
        self.snapshots: list[Weights] = []
        self.snapshot_counter = 0
        self.policy_elos = [float(self.self_play.initial_elo)] * (self.self_play.window + 1)
        self.current_opponent = 0
        policy = trainer.policy
        self._opponents: dict[int, PolicyNetwork] = {}
        #: Each opponent team's snapshot acting for its slots, with their memories.
        self._opponent_acting: dict[int, ActingPolicy] = {}
        for team in self.teams:
            opponent = copy.deepcopy(policy)
            opponent.requires_grad_(False)
            opponent.eval()
            self._opponents[team] = opponent
            self._opponent_acting[team] = ActingPolicy(
                opponent,
                self.context.observation_layout,
                trainer.device,
                deterministic=self.settings.network_settings.deterministic,
            )
        self._learning_rows: dict[int, np.ndarray] = {}  # group -> learning slots at decision
        self._groups: set[int] = set()
        self._interrupt_after_outcome: set[int] = set()
        self._rated_since_summary = False
        self._reset_window()

    # -- forwarded to the wrapped trainer --------------------------------------------------

    @property
    def step(self) -> int:
        """The wrapped trainer's steps (the learning team's agent steps)."""
        return self.trainer.step

    @step.setter
    def step(self, value: int) -> None:
        self.trainer.step = value

    @property
    def update_due(self) -> bool:
        """Whether the wrapped trainer would update now."""
        return self.trainer.update_due

    @property
    def update_running(self) -> bool:
        """Whether the wrapped trainer's thread is updating."""
        return self.trainer.update_running

    def _update_ready(self) -> bool:
        return self.trainer.update_due

    def _take_update_job(self) -> Callable[[], None]:
        raise NotImplementedError("the wrapped trainer takes its own updates (advance).")

    def _update_size(self) -> int:
        return 0

    def modules(self) -> dict[str, nn.Module]:
        """The wrapped trainer's networks."""
        return self.trainer.modules()

    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """The wrapped trainer's optimizers."""
        return self.trainer.optimizers()

    def optional_parts(self) -> set[str]:
        """The wrapped trainer's optional parts."""
        return self.trainer.optional_parts()

    def save_auxiliary(self, directory: Path) -> None:
        """The wrapped trainer's extra files."""
        self.trainer.save_auxiliary(directory)

    def load_auxiliary(self, directory: Path) -> None:
        """The wrapped trainer's extra files."""
        self.trainer.load_auxiliary(directory)

    def export_onnx(self, path: Path, policy_state: dict[str, Any] | None = None) -> None:
        """Export the learning policy (the wrapped trainer's)."""
        self.trainer.export_onnx(path, policy_state)

    def wait_for_updates(self) -> None:
        """Wait for the wrapped trainer's running update."""
        self.trainer.wait_for_updates()

    def take_thread_timer_trees(self) -> list[dict[str, Any]]:
        """The wrapped trainer's thread timer trees."""
        return self.trainer.take_thread_timer_trees()

    def close(self) -> None:
        """Close the wrapped trainer (its thread and statistics)."""
        self.trainer.close()

    # -- ELO -------------------------------------------------------------------------------

    @property
    def current_elo(self) -> float:
        """The learning policy's ELO (the last entry of :attr:`policy_elos`)."""
        return self.policy_elos[-1]

    @property
    def opponent_elo(self) -> float:
        """The ELO of the policy the opponents play with (the current ELO for the latest)."""
        return self.policy_elos[self.current_opponent]

    def change_opponent_elo(self, change: float) -> None:
        """Lower the opponents' policy's ELO by ``change``."""
        self.policy_elos[self.current_opponent] -= change

    def _rate(self, final_reward: float) -> None:
        change = self.controller.rate_game(self.current_elo, game_result(final_reward))
        self.policy_elos[-1] += change
        self.context.stats.add(ELO_STAT, self.current_elo)
        self._rated_since_summary = True

    # -- acting and recording --------------------------------------------------------------

    def decide(self, step: BehaviorStep) -> PolicyDecision:
        return self.decide_many([step])[0]

    def decide_many(self, steps: Sequence[BehaviorStep]) -> list[PolicyDecision]:
        """The wrapped trainer decides (and records) for every slot; the non-learning teams'
        actions are then replaced by their snapshot policy's, one forward pass per team over
        the slots of all ``steps``."""
        decisions = self.trainer.decide_many(steps)
        out, teams_of_steps = [], []
        for step, decision in zip(steps, decisions, strict=True):
            teams = self._teams_of(step)
            teams_of_steps.append(teams)
            self._learning_rows[step.group] = teams == self.learning_team
            self._groups.add(step.group)
            out.append(
                PolicyDecision(
                    None if decision.continuous is None else decision.continuous.copy(),
                    None if decision.discrete is None else decision.discrete.copy(),
                )
            )
        for team in self.teams:
            if team == self.learning_team:
                continue
            parts = [
                (step, rows, decision)
                for step, teams, decision in zip(steps, teams_of_steps, out, strict=True)
                if (rows := np.flatnonzero(teams == team)).size
            ]
            if parts:
                self._act_opponent(team, parts)
        return out

    def _act_opponent(
        self, team: int, parts: list[tuple[BehaviorStep, np.ndarray, PolicyDecision]]
    ) -> None:
        """Fill the ``rows`` of each ``(step, rows, decision)`` of ``parts`` with the actions of
        ``team``'s snapshot policy (one forward pass over all of them)."""
        actions = self._opponent_acting[team].act(
            [step for step, _, _ in parts], [rows for _, rows, _ in parts]
        )
        for index, (_, rows, decision) in enumerate(parts):
            for piece, target in (
                (actions.continuous, decision.continuous),
                (actions.discrete, decision.discrete),
            ):
                if piece is not None and target is not None:
                    target[rows] = piece[actions.part(index)]

    def observe(self, step: BehaviorStep) -> None:
        """Rate the learning team's terminated (not interrupted) episodes, count the other
        teams' steps as ghost steps and hand the wrapped trainer the step with only the learning
        slots valid and only their finished episodes, so that ``Environment/Cumulative
        Reward`` and ``Episode Length`` are the learning team's (ML-Agents' wrapped trainer,
        which records the cumulative reward, receives the learning team's trajectories only)."""
        learning = self._learning_rows.pop(step.group, None)
        if learning is None:
            learning = self._teams_of(step) == self.learning_team
        finished = step.terminated & ~step.truncated  # interrupted episodes are no game
        for row in np.flatnonzero(finished & step.valid & learning):
            self._rate(float(step.rewards[row]))
        self.ghost_step += int((step.valid & ~learning).sum())
        episodes = step.episodes
        if episodes:  # one per done row, in row order
            ended = np.flatnonzero(step.done)
            episodes = [e for e, row in zip(episodes, ended, strict=True) if learning[row]]
        self.trainer.observe(
            dataclasses.replace(step, valid=step.valid & learning, episodes=episodes)
        )
        for acting in self._opponent_acting.values():
            acting.observe(step)
        if step.group in self._interrupt_after_outcome:
            self._interrupt_after_outcome.discard(step.group)
            self.trainer.interrupt_episodes(step.group)

    def interrupt_episodes(self, group: int) -> None:
        """The wrapped trainer's episodes of ``group`` end truncated; opponent memories reset."""
        self.trainer.interrupt_episodes(group)
        for acting in self._opponent_acting.values():
            acting.clear(group)

    def _teams_of(self, step: BehaviorStep) -> np.ndarray:
        if step.slots is not None:
            return self.slot_teams[step.slots]
        if len(step.valid) != len(self.slot_teams):
            raise ValueError(
                f"self-play for {self.behavior_name} got a step of {len(step.valid)} slots but "
                f"the behavior has {len(self.slot_teams)} and the step does not say which "
                "(BehaviorStep.slots)."
            )
        return self.slot_teams

    # -- the schedule ----------------------------------------------------------------------

    def advance(self, environment_idle: Callable[[], bool] | None = None) -> None:
        """The wrapped trainer's update step, then snapshots, opponent swaps and team changes
        (see the module documentation)."""
        self.trainer.advance(environment_idle)
        if not self.training:
            return
        step = self.trainer.step
        settings = self.self_play
        assert settings.team_change is not None  # resolved by validation
        if step - self.last_team_change > settings.team_change:
            self.controller.change_learning_team(step)
            self.last_team_change = step
        next_team = self.controller.learning_team
        if step - self.last_save > settings.save_steps:
            self._save_snapshot()
            self.last_save = step
        changed = next_team != self.learning_team
        if changed or self.ghost_step - self.last_swap > settings.swap_steps:
            if changed:
                self._end_learning_episodes()
                logger.info(
                    "%s: team %d learns from step %d (ELO %.1f).",
                    self.behavior_name,
                    next_team,
                    step,
                    self.current_elo,
                )
            self.learning_team = next_team
            self._swap_snapshots()
            self.last_swap = self.ghost_step

    def _end_learning_episodes(self) -> None:
        """The wrapped trainer's recorded episodes end truncated now (or after the outcome of
        a group whose decision is still awaited)."""
        for group in sorted(self._groups):
            if group in self._learning_rows:
                self._interrupt_after_outcome.add(group)
            else:
                self.trainer.interrupt_episodes(group)

    def _current_weights(self) -> Weights:
        trainer = self.trainer
        with trainer.model_lock:
            return {k: v.detach().clone() for k, v in trainer.policy.state_dict().items()}

    def _save_snapshot(self) -> None:
        """Keep the learning policy in the window (the oldest is replaced once it is full)."""
        weights = self._current_weights()
        if self.snapshot_counter < len(self.snapshots):
            self.snapshots[self.snapshot_counter] = weights
        else:
            self.snapshots.append(weights)
        self.policy_elos[self.snapshot_counter] = self.current_elo
        self.snapshot_counter = (self.snapshot_counter + 1) % self.self_play.window

    def _swap_snapshots(self) -> None:
        """Each non-learning team plays the latest policy (with the configured ratio) or a
        snapshot drawn uniformly from the window."""
        for team in self.teams:
            if team == self.learning_team:
                continue
            if self.rng.uniform() < 1.0 - self.self_play.play_against_latest_model_ratio:
                index = int(self.rng.integers(len(self.snapshots)))
                weights = self.snapshots[index]
            else:
                index = -1
                weights = self._current_weights()
            self.current_opponent = index
            self._opponents[team].load_state_dict(weights)
            logger.debug(
                "%s: ghost step %d, team %d plays snapshot %s (team %d learns).",
                self.behavior_name,
                self.ghost_step,
                team,
                "latest" if index < 0 else index,
                self.learning_team,
            )

    def _reset_window(self) -> None:
        """The window holds the current policy only; every opponent plays it."""
        self.snapshots = []
        self.snapshot_counter = 0
        self._save_snapshot()
        self.current_opponent = 0
        for opponent in self._opponents.values():
            opponent.load_state_dict(self.snapshots[0])

    # -- summaries and checkpoints ---------------------------------------------------------

    def maybe_write_summary(self) -> None:
        """Write the summary when due, with ``Self-play/ELO`` (the current ELO when no game
        ended since the last summary)."""
        if self.step >= self._next_summary:
            if not self._rated_since_summary:
                self.context.stats.add(ELO_STAT, self.current_elo)
            self._rated_since_summary = False
            logger.info(
                "%s: ELO %.1f (team %d learns).",
                self.behavior_name,
                self.current_elo,
                self.learning_team,
            )
        super().maybe_write_summary()

    def state_dict(self) -> dict[str, Any]:
        """The wrapped trainer's checkpoint plus the self-play state."""
        state = self.trainer.state_dict()
        state[SELF_PLAY_STATE_KEY] = self.self_play_state()
        return state

    def self_play_state(self) -> dict[str, Any]:
        """Snapshots, ELOs, opponents and schedule (tensors and plain values only)."""
        return {
            "learning_team": int(self.learning_team),
            "ghost_step": int(self.ghost_step),
            "last_save": int(self.last_save),
            "last_swap": int(self.last_swap),
            "last_team_change": int(self.last_team_change),
            "snapshot_counter": int(self.snapshot_counter),
            "current_opponent": int(self.current_opponent),
            "policy_elos": [float(elo) for elo in self.policy_elos],
            "snapshots": [dict(weights) for weights in self.snapshots],
            "opponents": {
                str(team): {k: v.detach().clone() for k, v in opponent.state_dict().items()}
                for team, opponent in self._opponents.items()
            },
            "controller": self.controller.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any], *, restore_progress: bool) -> None:
        """Load the wrapped trainer's part; with ``restore_progress`` also the self-play state
        (missing: a warning, and self-play starts over from the loaded policy). Without it
        (``--initialize-from``, inference) the window starts over from the loaded policy.

        Raises:
            CheckpointMismatchError: the wrapped trainer's part does not fit, or the saved
                snapshots do not fit the policy.
        """
        self.trainer.load_state_dict(state, restore_progress=restore_progress)
        saved = state.get(SELF_PLAY_STATE_KEY) if restore_progress else None
        if restore_progress and not isinstance(saved, dict):
            logger.warning(
                "%s: the checkpoint has no self-play state (written without self_play?); the "
                "snapshot window, ELO and team schedule start over.",
                self.behavior_name,
            )
        if isinstance(saved, dict):
            self._load_self_play_state(saved)
        else:
            self._reset_window()
        if restore_progress:
            self._reset_schedules_after_load()

    def _load_self_play_state(self, saved: dict[str, Any]) -> None:
        window = self.self_play.window
        snapshots = [dict(weights) for weights in saved.get("snapshots", [])]
        if not snapshots:
            self._reset_window()
            return
        try:
            for weights in snapshots:  # check that every snapshot fits before changing anything
                self._opponents[self.teams[0]].load_state_dict(weights)
            for team, weights in saved.get("opponents", {}).items():
                if int(team) in self._opponents:
                    self._opponents[int(team)].load_state_dict(weights)
        except RuntimeError as exc:
            raise CheckpointMismatchError(
                f"the self-play snapshots of the checkpoint do not fit behavior "
                f"{self.behavior_name} (different observations, actions or network_settings?): "
                f"{exc}"
            ) from exc
        elos = [float(elo) for elo in saved.get("policy_elos", [])]
        initial = float(self.self_play.initial_elo)
        current = elos[-1] if elos else initial
        kept = elos[:-1][:window]
        self.policy_elos = [*kept, *[initial] * (window - len(kept)), current]
        self.snapshots = snapshots[:window]
        self.snapshot_counter = int(saved.get("snapshot_counter", 0)) % window
        if self.snapshot_counter > len(self.snapshots):
            self.snapshot_counter = len(self.snapshots) % window
        opponent = int(saved.get("current_opponent", 0))
        self.current_opponent = opponent if -1 <= opponent < len(self.snapshots) else 0
        self.ghost_step = int(saved.get("ghost_step", 0))
        self.last_save = int(saved.get("last_save", 0))
        self.last_swap = int(saved.get("last_swap", 0))
        self.last_team_change = int(saved.get("last_team_change", 0))
        controller = saved.get("controller")
        if isinstance(controller, dict) and not self.controller.load_state_dict(controller):
            logger.warning(
                "%s: the checkpoint's self-play teams differ from the game's %s; the team "
                "schedule starts over.",
                self.behavior_name,
                self.controller.teams,
            )
        self.learning_team = self.controller.learning_team
