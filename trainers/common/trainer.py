"""The trainer of one behavior: acting, recording, updating, summaries and checkpoints.

Concrete trainers (:mod:`trainers.ppo`, :mod:`trainers.sac`) implement the algorithm; this base
class owns what they share:

* step counting (agent steps, summed over slots) and ``max_steps``;
* ``threaded: true``: updates run in one background thread while the environment keeps
  stepping. Networks are guarded by :attr:`Trainer.model_lock`, taken per forward pass when
  acting and per gradient step when learning, so acting interleaves with an update;
* summaries every ``summary_freq`` steps and checkpoints every ``checkpoint_interval`` steps
  (atomic files; see :mod:`trainers.common.checkpoints.files`);
* checkpoint state: module and optimizer state dicts plus counters, loadable with
  ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from trainers.common.bookkeeping.stats import StatsReporter
from trainers.common.checkpoints.files import CheckpointManager
from trainers.common.checkpoints.onnx_export import export_policy
from trainers.common.networks.models import PolicyNetwork
from trainers.common.networks.precision import update_precision
from trainers.common.optimization.update_threads import UpdateThreadGovernor
from trainers.common.spaces import ActionLayout, ObservationLayout
from trainers.contract import BehaviorStep, PolicyDecision
from trainers.settings import ConfigError, Precision, TrainerSettings
from unity_gym.timers import get_timer_tree, hierarchical_timer, reset_timers

__all__ = [
    "CHECKPOINT_FORMAT",
    "CheckpointMismatchError",
    "Trainer",
    "TrainerContext",
    "check_checkpoint_state",
]

logger = logging.getLogger("trainers")

CHECKPOINT_FORMAT = "unity-train-checkpoint/1"


class CheckpointMismatchError(ConfigError):
    """A checkpoint does not fit the trainer (other algorithm, observations or actions)."""


# The parts every checkpoint of CHECKPOINT_FORMAT has, and their types.
_CHECKPOINT_PARTS: dict[str, type] = {
    "trainer_type": str,
    "step": int,
    "update_count": int,
    "modules": dict,
    "optimizers": dict,
}


def check_checkpoint_state(state: dict[str, Any], source: object = "the checkpoint") -> None:
    """Check that a checkpoint of this program's format is complete.

    A state of another format is not checked: :meth:`Trainer.load_state_dict` refuses it as a
    mismatch. Parts that are there but do not fit a trainer are mismatches too, not damage.

    Args:
        state: the loaded checkpoint.
        source: named in the error (e.g. the file's path).

    Raises:
        ValueError: a part every checkpoint has is missing or of the wrong type (the file was
            damaged or written by something else).
    """
    if state.get("format") != CHECKPOINT_FORMAT:
        return
    wrong = [key for key, kind in _CHECKPOINT_PARTS.items() if not isinstance(state.get(key), kind)]
    for group in ("modules", "optimizers"):
        parts = state.get(group)
        if isinstance(parts, dict):
            wrong += [
                f"{group}.{name}" for name, part in parts.items() if not isinstance(part, dict)
            ]
    if not isinstance(state.get("extra", {}), dict):
        wrong.append("extra")
    if wrong:
        raise ValueError(f"{source} is damaged: {', '.join(wrong)} missing or of the wrong type")


@dataclass
class TrainerContext:
    """Everything a trainer needs from the run besides its settings.

    Attributes:
        artifact_dir: ``<run>/<behavior>``: event files and checkpoints.
        checkpoints: ``None`` in inference mode (nothing is saved).
        update_threads: the most torch threads an update taken while the environment is idle
            may use (see :mod:`trainers.common.optimization.update_threads`); 1 keeps every update
            on the current thread count.
        precision: the precision updates run in (:mod:`trainers.common.networks.precision`).
    """

    behavior_name: str
    settings: TrainerSettings
    observation_layout: ObservationLayout
    action_layout: ActionLayout
    device: torch.device
    seed: int
    training: bool
    artifact_dir: Path
    stats: StatsReporter
    checkpoints: CheckpointManager | None
    update_threads: int = 1
    precision: Precision = "float32"


class Trainer(ABC):
    """Base class of a behavior's trainer (see the module docstring)."""

    trainer_type: ClassVar[str]
    # PPO must not collect a second rollout before the previous update is applied; SAC may.
    wait_for_running_update: ClassVar[bool]
    # PPO closes its rollout with the values of every slot group's current observations, so its
    # update is taken when no group has a decision awaiting its outcome; SAC needs no such pause,
    # and the controller advances it after sending the next actions, while the games step.
    update_needs_settled_groups: ClassVar[bool]
    policy: PolicyNetwork

    def __init__(self, context: TrainerContext) -> None:
        self.context = context
        self.settings = context.settings
        self.behavior_name = context.behavior_name
        self.device = context.device
        self.training = context.training
        self.step = 0
        self.update_count = 0
        self.model_lock = threading.Lock()
        self.rng = np.random.default_rng(context.seed)
        self._executor: ThreadPoolExecutor | None = None
        if self.settings.threaded and self.training:
            self._executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"trainer-{context.behavior_name}"
            )
        self._pending: Future[None] | None = None
        self._thread_trees: list[dict[str, Any]] = []
        self._thread_trees_lock = threading.Lock()
        self._next_summary = self.settings.summary_freq
        self._next_checkpoint = self.settings.checkpoint_interval
        self._thread_governor: UpdateThreadGovernor | None = None
        if context.update_threads > 1 and self._executor is None:
            base = torch.get_num_threads()
            if context.update_threads > base:
                self._thread_governor = UpdateThreadGovernor(context.update_threads, base)

    # -- algorithm interface ---------------------------------------------------------------

    @abstractmethod
    def decide(self, step: BehaviorStep) -> PolicyDecision:
        """Choose actions for every slot from ``step.observations`` (and record them)."""

    def decide_many(self, steps: Sequence[BehaviorStep]) -> list[PolicyDecision]:
        """:meth:`decide` for several slot groups (trainers may batch them in one pass)."""
        return [self.decide(step) for step in steps]

    @abstractmethod
    def observe(self, step: BehaviorStep) -> None:
        """Record the environment's answer to the last :meth:`decide`."""

    @abstractmethod
    def _update_ready(self) -> bool:
        """Whether enough experience is there for an update."""

    @abstractmethod
    def _take_update_job(self) -> Callable[[], None]:
        """Detach the experience needed by the next update and return the update to run."""

    @abstractmethod
    def _update_size(self) -> int:
        """The size of the update :meth:`_take_update_job` would take now, in the trainer's
        unit of work (its duration per unit is compared across updates)."""

    @abstractmethod
    def modules(self) -> dict[str, nn.Module]:
        """Named networks saved in checkpoints (and loaded by ``--initialize-from``)."""

    @abstractmethod
    def optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """Named optimizers saved in checkpoints."""

    #: Prefixes of the parts a configuration may add to a run: a reward signal's
    #: (``reward_signal.<key>.<name>``) and behavioral cloning's (``behavioral_cloning.<name>``).
    optional_prefixes: tuple[str, ...] = ("reward_signal.", "behavioral_cloning.")

    def optional_parts(self) -> set[str]:
        """Names among :meth:`modules` and :meth:`optimizers` that a checkpoint may lack (parts
        added by a newer configuration, those named with :attr:`optional_prefixes`): they keep
        their current state, with a warning."""
        names = set(self.modules()) | set(self.optimizers())
        return {name for name in names if name.startswith(self.optional_prefixes)}

    def extra_state(self) -> dict[str, Any]:
        """Algorithm-specific counters to save (tensors, numbers, strings)."""
        return {}

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`extra_state` saved."""
        del state

    def save_auxiliary(self, directory: Path) -> None:
        """Write extra files next to the checkpoint (e.g. SAC's replay buffer)."""
        del directory

    def load_auxiliary(self, directory: Path) -> None:
        """Read what :meth:`save_auxiliary` wrote."""
        del directory

    # -- progress --------------------------------------------------------------------------

    @property
    def is_done(self) -> bool:
        """Whether ``max_steps`` has been reached."""
        return self.step >= self.settings.max_steps

    def interrupt_episodes(self, group: int) -> None:
        """The environment is about to be reset: the episodes of ``group``'s slots end
        truncated at their current observations (the last ones :meth:`observe` received).

        Called only while no decision of the group awaits its outcome. Nothing by default
        (a trainer that bootstraps truncated steps from the next observation, such as SAC,
        already has what it needs).
        """
        del group

    def record_episodes(self, step: BehaviorStep) -> None:
        """Feed finished episodes to the statistics."""
        for reward, length in step.episodes:
            self.context.stats.add_episode(reward, length)

    @property
    def still_training(self) -> bool:
        """Whether updates may still be taken: training and ``step <= max_steps`` (ML-Agents'
        ``Trainer.should_still_train``, so an update that falls due at ``max_steps`` exactly
        is taken before the final save)."""
        return self.training and self.step <= self.settings.max_steps

    @property
    def update_due(self) -> bool:
        """Whether :meth:`advance` would start an update now (enough new experience)."""
        return self.still_training and self._update_ready()

    @property
    def update_running(self) -> bool:
        """Whether an update is running in the trainer thread (``threaded: true``)."""
        return self._pending is not None and not self._pending.done()

    def advance(self, environment_idle: Callable[[], bool] | None = None) -> None:
        """Run (or hand to the trainer thread) an update if enough experience is there.

        The controller calls it in every loop, also once ``max_steps`` is reached (as
        ML-Agents' ``TrainerController`` advances every trainer); past it no update is taken
        (:attr:`still_training`).

        Args:
            environment_idle: asked just before an inline update runs: whether nothing else
                computes meanwhile (no game is stepping, no other trainer thread is updating),
                so that the update may use more torch threads (:class:`UpdateThreadGovernor`).
        """
        self._collect_finished_update()
        if not self.update_due:
            return
        if self._pending is not None:
            if not self.wait_for_running_update:
                return
            with hierarchical_timer("wait_for_update"):
                self._pending.result()
            self._pending = None
        logger.debug("%s: %s update at step %d", self.behavior_name, self.trainer_type, self.step)
        if self._executor is None:
            governor = self._thread_governor
            if governor is not None and (environment_idle is None or not environment_idle()):
                governor = None
            threads = (
                contextlib.nullcontext()
                if governor is None
                else governor.update(self._update_size())
            )
            with hierarchical_timer(f"{self.trainer_type}_update"), threads:
                job = self._take_update_job()
                with self._update_precision():
                    job()
        else:
            job = self._take_update_job()
            self._pending = self._executor.submit(self._threaded_job, job)

    def wait_for_updates(self) -> None:
        """Block until a running background update has finished (re-raising its error)."""
        if self._pending is not None:
            future, self._pending = self._pending, None
            future.result()

    def _collect_finished_update(self) -> None:
        if self._pending is not None and self._pending.done():
            future, self._pending = self._pending, None
            future.result()  # re-raise a failure of the trainer thread here

    def _update_precision(self) -> contextlib.AbstractContextManager[object]:
        """The context an update job runs in (bfloat16 autocast for ``bf16-mixed``)."""
        return update_precision(self.context.precision, self.device)

    def _threaded_job(self, job: Callable[[], None]) -> None:
        with hierarchical_timer(f"{self.trainer_type}_update"), self._update_precision():
            job()
        tree = get_timer_tree()
        reset_timers()
        with self._thread_trees_lock:
            self._thread_trees.append(tree)

    def take_thread_timer_trees(self) -> list[dict[str, Any]]:
        """Timer trees recorded in the trainer thread since the last call."""
        with self._thread_trees_lock:
            trees, self._thread_trees = self._thread_trees, []
        return trees

    def maybe_write_summary(self) -> None:
        """Write a summary if ``summary_freq`` steps have passed since the last one.

        Summaries past ``max_steps`` (a behavior that finished while others of the run go on
        acting) say ``Not Training.`` and write ``Is Training`` 0, as ML-Agents' trainers do
        (``Trainer.should_still_train``: training and ``step <= max_steps``).
        """
        if self.step >= self._next_summary:
            freq = self.settings.summary_freq
            self._next_summary = (self.step // freq + 1) * freq
            self.context.stats.write_summary(self.step, training=self.still_training)

    def maybe_checkpoint(self) -> None:
        """Save a checkpoint if ``checkpoint_interval`` steps have passed since the last one."""
        if self.step >= self._next_checkpoint and not self.is_done:  # done: final save follows
            interval = self.settings.checkpoint_interval
            self._next_checkpoint = (self.step // interval + 1) * interval
            self.save_checkpoint()

    def _reset_schedules_after_load(self) -> None:
        freq, interval = self.settings.summary_freq, self.settings.checkpoint_interval
        self._next_summary = (self.step // freq + 1) * freq
        self._next_checkpoint = (self.step // interval + 1) * interval

    # -- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """A consistent snapshot of everything a checkpoint holds (taken under the model lock)."""
        with self.model_lock:
            state = {
                "format": CHECKPOINT_FORMAT,
                "behavior_name": self.behavior_name,
                "trainer_type": self.trainer_type,
                "step": int(self.step),
                "update_count": int(self.update_count),
                "modules": {name: m.state_dict() for name, m in self.modules().items()},
                "optimizers": {name: o.state_dict() for name, o in self.optimizers().items()},
                "extra": self.extra_state(),
                "torch_rng_state": torch.get_rng_state(),
            }
            return copy.deepcopy(state)

    def load_state_dict(self, state: dict[str, Any], *, restore_progress: bool) -> None:
        """Load a checkpoint: networks always; optimizers and counters if ``restore_progress``.

        Raises:
            CheckpointMismatchError: the checkpoint is from another algorithm, its networks
                have other shapes, or (``restore_progress``) its optimizer state does not fit.
            ValueError: the checkpoint is incomplete (see :func:`check_checkpoint_state`).
        """
        if state.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointMismatchError(
                f"not a unity-train checkpoint (format {state.get('format')!r})."
            )
        check_checkpoint_state(state)
        if state.get("trainer_type") != self.trainer_type:
            raise CheckpointMismatchError(
                f"the checkpoint was trained with {state.get('trainer_type')!r} but behavior "
                f"{self.behavior_name} uses {self.trainer_type!r}; use a checkpoint of the "
                "same trainer_type."
            )
        optional = self.optional_parts()
        missing = sorted(
            name
            for group, parts in (("modules", self.modules()), ("optimizers", self.optimizers()))
            for name in parts
            if name in optional and name not in state[group]
        )
        if missing:
            logger.warning(
                "%s: the checkpoint has no %s (written before they were configured?); they "
                "start fresh.",
                self.behavior_name,
                ", ".join(missing),
            )
        with self.model_lock:
            for name, module in self.modules().items():
                if name in missing:
                    continue
                self._load_part(
                    module,
                    state["modules"],
                    name,
                    what=f"network {name!r}",
                    cause="different observations, actions or network_settings?",
                )
            if restore_progress:
                for name, optimizer in self.optimizers().items():
                    if name in missing:
                        continue
                    self._load_part(
                        optimizer,
                        state["optimizers"],
                        name,
                        what=f"optimizer {name!r}",
                        cause="a damaged checkpoint, or one written by another program?",
                        advice="start over with --force or use --initialize-from, which loads "
                        "the networks only",
                    )
                self.step = int(state["step"])
                self.update_count = int(state["update_count"])
                self.load_extra_state(state.get("extra", {}))
                rng_state = state.get("torch_rng_state")
                if isinstance(rng_state, torch.Tensor):
                    torch.set_rng_state(rng_state)
        if restore_progress:
            self._reset_schedules_after_load()

    def _load_part(
        self,
        target: nn.Module | torch.optim.Optimizer,
        saved: dict[str, Any],
        name: str,
        *,
        what: str,
        cause: str,
        advice: str = "",
    ) -> None:
        """Load ``saved[name]`` into ``target``.

        Raises:
            CheckpointMismatchError: the part is missing or does not load; the message says
                that ``what`` does not fit, the likely ``cause``, the ``advice`` and the
                underlying error.
        """
        try:
            target.load_state_dict(saved[name])
        except (KeyError, RuntimeError, ValueError) as exc:
            way_out = f"; {advice}" if advice else ""
            raise CheckpointMismatchError(
                f"{what} of the checkpoint does not fit behavior {self.behavior_name} "
                f"({cause}){way_out}: {exc}"
            ) from exc

    def save_checkpoint(self, *, final: bool = False) -> Path | None:
        """Write a checkpoint now (and its ONNX model); ``None`` in inference mode."""
        manager = self.context.checkpoints
        if manager is None:
            return None
        with hierarchical_timer("save_checkpoint"):
            state = self.state_dict()
            path = manager.save(
                state,
                self.step,
                lambda onnx_path: self.export_onnx(onnx_path, state["modules"]["policy"]),
                self.context.stats.last_mean_reward,
                final=final,
            )
            self.save_auxiliary(manager.directory)
        logger.info("Exported %s", path.with_suffix(".onnx"))
        return path

    def export_onnx(self, path: Path, policy_state: dict[str, Any] | None = None) -> None:
        """Export the policy to ``path`` (ML-Agents tensor names).

        Args:
            policy_state: weights to export (e.g. those of the checkpoint being written, so the
                ``.pt`` and ``.onnx`` files match even while a trainer thread keeps learning);
                the current weights when ``None``.
        """
        with self.model_lock:
            snapshot = copy.deepcopy(self.policy)
        if policy_state is not None:
            snapshot.load_state_dict(policy_state)
        export_policy(snapshot, self.context.observation_layout, path)

    def close(self) -> None:
        """Stop the trainer thread (after its running update) and close the statistics."""
        try:
            self.wait_for_updates()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
            self.context.stats.close()

    # -- helpers for subclasses ------------------------------------------------------------

    def tensors(self, observations: Sequence[np.ndarray | torch.Tensor]) -> list[torch.Tensor]:
        """Raw observation batches to network-format tensors on the trainer's device."""
        return self.context.observation_layout.to_tensors(observations, self.device)

    def mask_tensor(self, mask: np.ndarray | None) -> torch.Tensor | None:
        """A bool action mask ``(n, choices)`` as the float tensor the policy takes."""
        if mask is None:
            return None
        return torch.as_tensor(mask, device=self.device).to(torch.float32)
