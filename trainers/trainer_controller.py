"""The training loop: advances an asynchronous env manager and every behavior's trainer.

The env manager's slots come in *groups* that step independently (the game processes of an
asynchronous vector env; a lock-step manager has one group). One iteration: the next group
whose step finished is received, with any other group already in; each trainer records its
slots' outcomes, may update (inline, or in its own thread with ``threaded: true``), write a
summary and save a checkpoint, then decides the next actions of all these groups in one pass;
each group gets its actions at once while the other groups keep playing.

An update that closes an on-policy rollout (PPO) first waits for every group in flight and
records its step, so the rollout ends with every group settled and, with ``threaded: false``,
every step after the update is taken by the updated policy. An off-policy trainer (SAC, whose
``update_needs_settled_groups`` is false) is advanced *after* the groups received in the
iteration got their actions, so its update runs while those games compute their next step
instead of keeping them waiting. Its data are the same (everything recorded so far); the
actions sent in that iteration come from the policy before the update, one update behind
``mlagents-learn`` with ``threaded: false``, which updates before it acts (one update is
``steps_per_update`` agent steps' worth of gradient steps, a small fraction of the replay).
An update taken while no game is stepping may use more torch threads
(:mod:`trainers.common.optimization.update_threads`). The loop ends when every trainer has
reached ``max_steps`` or a stop was requested (Ctrl-C); final checkpoints and ONNX models are
then written.

With curriculum lessons (:mod:`trainers.curriculum`), every iteration feeds the trainers' steps
and recent episode rewards to the parameter manager; when a lesson changes, its values are sent
to the running games before the next actions (through the env's public ``set_env_params``), the
reward buffers are cleared and every trainer writes ``Environment/Lesson Number/<parameter>``
at its summaries. When the completed lesson has ``require_reset`` (and the games took the new
values), the games are reset as in ML-Agents: the games still stepping are awaited, every
running episode ends truncated (bootstrapping from its current observation), and every slot
starts a new episode with the new values.
"""

from __future__ import annotations

import logging
from pathlib import Path

from trainers.common.bookkeeping.progress import ProgressBar
from trainers.common.checkpoints.files import atomic_copy
from trainers.common.trainer import Trainer
from trainers.contract import BehaviorStep, PolicyDecision
from trainers.curriculum import LESSON_NUMBER_STAT, EnvironmentParameterManager
from trainers.env_manager import EnvManager
from unity_gym.exceptions import UnityException
from unity_gym.timers import hierarchical_timer, merge_timer_tree

__all__ = ["TrainerController"]

logger = logging.getLogger("trainers")


class TrainerController:
    """Owns the loop over one env manager and its trainers (one per behavior).

    Args:
        env_manager: steps the environment (a vector env or PettingZoo envs).
        trainers: trainer per behavior name (every behavior of the env manager).
        run_dir: ``<results>/<run-id>``; final ONNX models are copied to ``<run_dir>/<name>.onnx``.
        artifact_names: file-safe name per behavior (for the final model's file name).
        seed: passed to the environment's first reset (``None``: unseeded).
        progress: optional progress bar (updated with the slowest trainer's step).
        curriculum: the environment parameters' lessons (None: no curriculum).
    """

    def __init__(
        self,
        env_manager: EnvManager,
        trainers: dict[str, Trainer],
        run_dir: Path,
        artifact_names: dict[str, str],
        seed: int | None,
        progress: ProgressBar | None = None,
        curriculum: EnvironmentParameterManager | None = None,
    ) -> None:
        missing = set(env_manager.behavior_names) - set(trainers)
        if missing:
            raise ValueError(f"no trainer for behaviors {sorted(missing)}")
        self.env_manager = env_manager
        self.trainers = trainers
        self.run_dir = run_dir
        self.artifact_names = artifact_names
        self.seed = seed
        self.progress = progress
        self.stop_requested = False
        has_lessons = curriculum is not None and curriculum.has_curriculum
        self.curriculum = curriculum if has_lessons else None
        self._params_refused = False
        if self.curriculum is not None:
            self._prepare_curriculum(self.curriculum)

    def request_stop(self) -> None:
        """Finish the current iteration, then save and stop (safe to call from a signal handler)."""
        self.stop_requested = True

    @property
    def all_done(self) -> bool:
        """Whether every trainer reached ``max_steps``."""
        return all(trainer.is_done for trainer in self.trainers.values())

    def run(self) -> None:
        """Train until every trainer is done or a stop is requested, then save final models.

        If the environment fails (a :class:`UnityException`), the models are saved before the
        error propagates, as ``mlagents-learn`` does.
        """
        try:
            with hierarchical_timer("TrainerController.start_learning"):
                self._loop()
        except UnityException:
            logger.error("The environment failed; saving the models before stopping.")
            self.finish()
            raise
        self.finish()

    def _loop(self) -> None:
        manager = self.env_manager
        trainers = self.trainers
        progress = self.progress
        settling = [t for t in trainers.values() if t.update_needs_settled_groups]
        while_stepping = [t for t in trainers.values() if not t.update_needs_settled_groups]
        self._decide_and_send(manager.start(self.seed))
        while not self.stop_requested and not self.all_done:
            with hierarchical_timer("TrainerController.advance"):
                received = self._record(manager.receive_ready())
                self._record_game_stats()
                if any(t.update_due and t.update_needs_settled_groups for t in settling):
                    with hierarchical_timer("settle_groups"):
                        while manager.in_flight:
                            received += self._record([manager.receive()])
                self._advance_trainers(settling)
                if self.curriculum is not None and self._advance_curriculum(self.curriculum):
                    received = self._reset_for_lesson(received)
                self._decide_and_send(received)
                self._advance_trainers(while_stepping)
            if progress is not None:
                progress.update(min(t.step for t in trainers.values()))

    def _advance_trainers(self, trainers: list[Trainer]) -> None:
        """Each of ``trainers`` may update, write a summary and save a checkpoint."""
        for trainer in trainers:
            # every trainer, done or not, as ML-Agents' TrainerController: a done one takes no
            # update, but a self-play schedule must go on changing the learning team, or the
            # other teams' behaviors never reach max_steps
            trainer.advance(environment_idle=self._environment_idle)
            trainer.maybe_write_summary()
            trainer.maybe_checkpoint()

    def _prepare_curriculum(self, curriculum: EnvironmentParameterManager) -> None:
        unknown = sorted(curriculum.behaviors() - set(self.trainers))
        if unknown:
            logger.warning(
                "Completion criteria name behavior(s) %s that this environment does not have "
                "(it has %s); those lessons never end.",
                unknown,
                sorted(self.trainers),
            )
        for name, trainer in self.trainers.items():
            trainer.context.stats.keep_recent_rewards(curriculum.reward_buffer_size(name))
        self._write_lesson_gauges(curriculum)

    def _write_lesson_gauges(self, curriculum: EnvironmentParameterManager) -> None:
        lessons = curriculum.lesson_numbers()
        for trainer in self.trainers.values():
            for name in curriculum.curriculum_parameters:
                trainer.context.stats.set_gauge(LESSON_NUMBER_STAT + name, lessons[name])

    def _advance_curriculum(self, curriculum: EnvironmentParameterManager) -> bool:
        """Move lessons on; send new values to the games (see the module documentation).

        Returns:
            Whether a completed lesson asked for ``require_reset`` and the games took the new
            values (the caller then resets them).
        """
        trainers = self.trainers
        changed, must_reset = curriculum.update(
            {name: trainer.step for name, trainer in trainers.items()},
            {name: trainer.settings.max_steps for name, trainer in trainers.items()},
            {name: trainer.context.stats.recent_rewards() for name, trainer in trainers.items()},
        )
        if not changed:
            return False
        for trainer in trainers.values():
            trainer.context.stats.clear_recent_rewards()
        self._write_lesson_gauges(curriculum)
        applied = self.env_manager.set_env_params(curriculum.current_env_params())
        if not applied and not self._params_refused:
            self._params_refused = True
            logger.warning(
                "The environment has no set_env_params method, so new lesson values cannot "
                "reach it (only Unity games take environment parameters); lessons still "
                "advance and are recorded."
            )
        return must_reset and applied

    def _reset_for_lesson(
        self, received: list[dict[str, BehaviorStep]]
    ) -> list[dict[str, BehaviorStep]]:
        """Reset the games for a lesson with ``require_reset`` (as ML-Agents does): wait for
        the games still stepping, end every running episode truncated, reset every slot.

        Returns:
            The first steps of every group after the reset (to decide on).
        """
        manager = self.env_manager
        with hierarchical_timer("lesson_reset"):
            settled = list(received)
            while manager.in_flight:
                settled += self._record([manager.receive()])
            for steps in settled:
                for name, step in steps.items():
                    self.trainers[name].interrupt_episodes(step.group)
            logger.info("The completed lesson asked for require_reset: the games were reset.")
            return manager.start(None)

    def _environment_idle(self) -> bool:
        """No game is stepping and no trainer thread is updating (an update has the CPU)."""
        return not self.env_manager.in_flight and not any(
            trainer.update_running for trainer in self.trainers.values()
        )

    def _record(self, groups: list[dict[str, BehaviorStep]]) -> list[dict[str, BehaviorStep]]:
        """Every trainer records its slots' outcomes in ``groups`` (returned as given).

        Once every trainer is done, the remaining groups are not recorded: the run ends at
        ``max_steps`` (as with one group at a time) rather than past it.
        """
        for steps in groups:
            if self.all_done:
                break
            for name, step in steps.items():
                self.trainers[name].observe(step)
        return groups

    def _record_game_stats(self) -> None:
        """Every trainer records the games' own statistics (as ML-Agents, each behavior's
        TensorBoard gets all of them)."""
        stats = self.env_manager.take_game_stats()
        if stats:
            for trainer in self.trainers.values():
                trainer.context.stats.add_game_stats(stats)

    def _decide_and_send(self, groups: list[dict[str, BehaviorStep]]) -> None:
        """Each trainer decides for its slots of all ``groups`` at once; then each group is sent."""
        per_group: list[dict[str, PolicyDecision]] = [{} for _ in groups]
        for name, trainer in self.trainers.items():
            indices = [i for i, steps in enumerate(groups) if name in steps]
            chosen = trainer.decide_many([groups[i][name] for i in indices])
            for index, decision in zip(indices, chosen, strict=True):
                per_group[index][name] = decision
        for steps, decisions in zip(groups, per_group, strict=True):
            self.env_manager.send(next(iter(steps.values())).group, decisions)

    def finish(self) -> None:
        """Wait for running updates, then write final checkpoints and copy the ONNX models."""
        if self.progress is not None:
            self.progress.close()
        if self.stop_requested:
            logger.info("Learning was interrupted. Please wait while the models are saved.")
        for name, trainer in self.trainers.items():
            trainer.wait_for_updates()
            path = trainer.save_checkpoint(final=True)
            if path is None:
                continue
            source = path.with_suffix(".onnx")
            target = self.run_dir / f"{self.artifact_names[name]}.onnx"
            atomic_copy(source, target)
            logger.info("Copied %s to %s.", source, target)
        self._merge_thread_timers()

    def _merge_thread_timers(self) -> None:
        for name, trainer in self.trainers.items():
            for tree in trainer.take_thread_timer_trees():
                merge_timer_tree(tree, root_name=f"trainer_thread.{name}", is_parallel=True)

    def close(self) -> None:
        """Stop trainer threads, close statistics and the environment."""
        try:
            for trainer in self.trainers.values():
                trainer.close()
        finally:
            self.env_manager.close()
