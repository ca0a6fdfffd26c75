"""Stress: a configurable synthetic scene for benchmarks and fault tests.

Everything an agent observes is derived from counters and its actions, so tests can assert exact
values. Vector observation ``VectorSensor_size<obs_size>`` of agent in slot ``s``:

====== ===========================================================================
index  value
====== ===========================================================================
0      agent step count in the current episode
1      agent id
2      Academy step count since the last reset
3      number of episodes this slot has begun (1 in the first episode)
4      first component of the last executed action (continuous, else discrete), 0 at episode
       begin
5      environment parameter ``stress_value`` read at episode begin (default 0)
6      slot
j >= 7 ``j + 0.001 * agent step count``
====== ===========================================================================

(cut to ``obs_size``). With ``visual=png`` or ``visual=float`` a second sensor ``StressCamera`` of
shape ``visual_shape`` (``CxHxW``) holds ``((7 s + 31 c + 3 h + w + step) % 256) / 255`` at channel
``c``, row ``h``, column ``w``. With ``entities=MxS`` a variable-length sensor ``StressBuffer``
(Unity's ``BufferSensor``: shape ``(M, S)``, dimension properties ``[VARIABLE_SIZE, NONE]``)
follows: its first ``agent step count % (M + 1)`` rows are present, row ``e`` holding ``1 + e + 0.1
j + 0.01 s`` at column ``j``; the other rows are zeros (absent entities), so an agent sees 0 to
``M`` entities. Every executed action adds its first component to the reward. ``teams=2`` makes two
behaviors ``Stress?team=0/1`` (one agent each per area); ``group_size=k`` puts consecutive agents of
a behavior in groups of ``k``, each group earning a group reward of 1 per Academy step. Faults:
``crash_after=N`` exits with code 3 at Academy step ``N``; ``hang_after=N`` stops answering at step
``N`` (the process exits when its parent dies); ``crash_once=PATH`` exits with code 3 while the
scene starts unless the file ``PATH`` exists, which it creates first (so of the games sharing
``PATH``, one crashes once at start-up).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..specs import (
    ActionSpec,
    BehaviorSpec,
    Compression,
    DecisionSettings,
    DimensionProperty,
    SensorSpec,
)
from .base import Scene, SceneOption
from .registry import register_scene

__all__ = ["CRASH_EXIT_CODE", "StressScene"]

logger = logging.getLogger("unity_gym.player")

#: Exit code of a simulated crash (``crash_after``).
CRASH_EXIT_CODE = 3


def _parse_shape(text: str) -> tuple[int, int, int]:
    try:
        c, h, w = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise PlayerError(f"visual_shape {text!r}: expected CxHxW, e.g. 3x84x84") from None
    if min(c, h, w) <= 0:
        raise PlayerError(f"visual_shape {text!r}: dimensions must be positive")
    return c, h, w


def _parse_entities(text: str) -> tuple[int, int] | None:
    if not text.strip():
        return None
    try:
        count, size = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise PlayerError(f"entities {text!r}: expected MxS, e.g. 4x3") from None
    if min(count, size) <= 0:
        raise PlayerError(f"entities {text!r}: both sizes must be positive")
    return count, size


def _parse_branches(text: str) -> tuple[int, ...]:
    if not text.strip():
        return ()
    try:
        branches = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise PlayerError(f"discrete {text!r}: expected branch sizes like 3,2") from None
    if any(b <= 0 for b in branches):
        raise PlayerError(f"discrete {text!r}: branch sizes must be positive")
    return branches


@register_scene
class StressScene(Scene):
    """Synthetic agents with configurable observations, actions, timing and faults."""

    name = "Stress"
    summary = "synthetic agents: configurable sizes, timing and faults (see --option)"
    default_area_count = 4
    option_specs = (
        SceneOption("obs_size", int, 8, "vector observation size"),
        SceneOption("visual", str, "none", "visual observation: none, png or float"),
        SceneOption("visual_shape", str, "3x16x16", "visual observation shape CxHxW"),
        SceneOption("entities", str, "", "variable-length sensor MxS (max entities x size)"),
        SceneOption("stack", int, 1, "observations stacked per sensor"),
        SceneOption("continuous", int, 2, "continuous action size"),
        SceneOption("discrete", str, "", "discrete branch sizes, e.g. 3,2"),
        SceneOption("action_mask", bool, False, "mask action (step % size) in each branch"),
        SceneOption("decision_period", int, 1, "decision requester period"),
        SceneOption("decision_offset", int, 0, "decision requester offset"),
        SceneOption("actions_between", bool, True, "take actions between decisions"),
        SceneOption("max_step", int, 0, "episode interrupted after this many steps (0 = never)"),
        SceneOption("episode_length", int, 0, "episode ends after this many steps (0 = never)"),
        SceneOption("teams", int, 1, "number of behaviors Stress?team=<i>"),
        SceneOption("group_size", int, 0, "agents per multi-agent group (0 = no groups)"),
        SceneOption("step_time", float, 0.0, "seconds of simulated compute per Academy step"),
        SceneOption("jitter", float, 0.0, "relative random variation of step_time (0..1)"),
        SceneOption("crash_after", int, 0, "exit with code 3 at this Academy step (0 = never)"),
        SceneOption("hang_after", int, 0, "stop answering at this Academy step (0 = never)"),
        SceneOption("crash_once", str, "", "exit with code 3 at start-up unless this file exists"),
    )

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Stress?team=<i>`` for each team, built from the options."""
        opts = self.options
        obs_size = int(opts["obs_size"])
        if obs_size < 1:
            raise PlayerError("obs_size must be >= 1")
        stack = int(opts["stack"])
        sensors = [SensorSpec(f"VectorSensor_size{obs_size}", (obs_size,), stack_size=stack)]
        visual = str(opts["visual"]).lower()
        if visual not in ("none", "png", "float"):
            raise PlayerError(f"visual={visual!r}: expected none, png or float")
        if visual != "none":
            compression = Compression.PNG if visual == "png" else Compression.NONE
            shape = _parse_shape(str(opts["visual_shape"]))
            sensors.append(SensorSpec("StressCamera", shape, compression, stack_size=stack))
        entities = _parse_entities(str(opts["entities"]))
        if entities is not None:
            sensors.append(
                SensorSpec(
                    "StressBuffer",
                    entities,
                    dimension_properties=(
                        int(DimensionProperty.VARIABLE_SIZE),
                        int(DimensionProperty.NONE),
                    ),
                )
            )
        branches = _parse_branches(str(opts["discrete"]))
        continuous = int(opts["continuous"])
        if continuous == 0 and not branches:
            raise PlayerError("Stress needs actions: set continuous > 0 or discrete branches")
        try:
            decision = DecisionSettings(
                period=int(opts["decision_period"]),
                offset=int(opts["decision_offset"]),
                take_actions_between_decisions=bool(opts["actions_between"]),
            )
        except ValueError as exc:
            raise PlayerError(str(exc)) from None
        teams = int(opts["teams"])
        if teams < 1:
            raise PlayerError("teams must be >= 1")
        return [
            BehaviorSpec(
                name="Stress",
                team_id=team,
                sensors=tuple(sensors),
                action_spec=ActionSpec(continuous, branches),
                decision=decision,
                max_step=int(opts["max_step"]),
                uses_action_mask=bool(opts["action_mask"]) and bool(branches),
            )
            for team in range(teams)
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-slot counters, groups and the timing generator."""
        super().setup(context)
        opts = self.options
        if opts["crash_once"]:
            _crash_once(str(opts["crash_once"]))
        self.obs_size = int(opts["obs_size"])
        self.episode_length = int(opts["episode_length"])
        self.step_time = float(opts["step_time"])
        self.jitter = min(max(float(opts["jitter"]), 0.0), 1.0)
        self.crash_after = int(opts["crash_after"])
        self.hang_after = int(opts["hang_after"])
        visual = str(opts["visual"]).lower()
        self.visual_shape = _parse_shape(str(opts["visual_shape"])) if visual != "none" else None
        self.entities = _parse_entities(str(opts["entities"]))
        self._timing_rng = np.random.default_rng([context.seed, 0x5EED])
        n = context.area_count
        self.episodes: dict[str, np.ndarray] = {}
        self.last_action: dict[str, np.ndarray] = {}
        self.parameter: dict[str, np.ndarray] = {}
        self.group_ids = np.zeros(0, dtype=np.int32)
        group_size = int(opts["group_size"])
        groups = []
        for batch in self._batches():
            self.episodes[batch.name] = np.zeros(n, dtype=np.int64)
            self.last_action[batch.name] = np.zeros(n, dtype=np.float32)
            self.parameter[batch.name] = np.zeros(n, dtype=np.float32)
            if group_size > 0:
                count = -(-batch.size // group_size)
                ids = context.create_groups(count)
                batch.set_group(slice(None), np.repeat(ids, group_size)[: batch.size])
                groups.append(ids)
        if groups:
            self.group_ids = np.concatenate(groups)

    def _batches(self) -> list[AgentBatch]:
        return [self.ctx.batch(spec.full_name) for spec in self.behaviors()]

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Count the episode, clear the last action, read ``stress_value``."""
        self.episodes[batch.name][slots] += 1
        self.last_action[batch.name][slots] = 0.0
        values = self.ctx.parameters.read_many("stress_value", 0.0, slots.size)
        self.parameter[batch.name][slots] = values

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """The documented counters (and the synthetic image)."""
        k = slots.size
        steps = batch.step_count[slots].astype(np.float32)
        columns = [
            steps,
            batch.ids[slots].astype(np.float32),
            np.full(k, self.ctx.academy_step, dtype=np.float32),
            self.episodes[batch.name][slots].astype(np.float32),
            self.last_action[batch.name][slots],
            self.parameter[batch.name][slots],
            slots.astype(np.float32),
        ]
        vector = np.empty((k, self.obs_size), dtype=np.float32)
        for j in range(self.obs_size):
            vector[:, j] = columns[j] if j < len(columns) else j + 0.001 * steps
        observations = [vector]
        if self.visual_shape is not None:
            observations.append(self._picture(batch, slots))
        if self.entities is not None:
            observations.append(self._entities(batch, slots, *self.entities))
        return observations

    def _picture(self, batch: AgentBatch, slots: np.ndarray) -> np.ndarray:
        """The synthetic camera picture (module documentation)."""
        assert self.visual_shape is not None
        c, h, w = self.visual_shape
        grid = (
            7 * slots[:, None, None, None]
            + 31 * np.arange(c)[None, :, None, None]
            + 3 * np.arange(h)[None, None, :, None]
            + np.arange(w)[None, None, None, :]
            + batch.step_count[slots][:, None, None, None]
        )
        return (grid % 256).astype(np.float32) / 255.0

    @staticmethod
    def _entities(batch: AgentBatch, slots: np.ndarray, max_entities: int, size: int) -> np.ndarray:
        """The variable-length sensor's rows (module documentation)."""
        rows = np.arange(max_entities)
        values = (
            1.0
            + rows[None, :, None]
            + 0.1 * np.arange(size)[None, None, :]
            + 0.01 * slots[:, None, None]
        )
        present = rows[None, :] < (batch.step_count[slots] % (max_entities + 1))[:, None]
        return np.where(present[:, :, None], values, 0.0).astype(np.float32)

    def write_action_mask(self, batch: AgentBatch, slots: np.ndarray) -> np.ndarray:
        """Disable action ``step % size`` in each branch of size > 1."""
        branches = batch.spec.action_spec.discrete_branches
        mask = np.zeros((slots.size, sum(branches)), dtype=bool)
        offset = 0
        steps = batch.step_count[slots]
        for size in branches:
            if size > 1:
                mask[np.arange(slots.size), offset + steps % size] = True
            offset += size
        return mask

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Reward the first action component; end episodes at ``episode_length``."""
        first = continuous[:, 0] if continuous.shape[1] else discrete[:, 0].astype(np.float32)
        self.last_action[batch.name][slots] = first
        batch.add_reward(slots, first)
        if self.episode_length > 0:
            finished = slots[batch.step_count[slots] >= self.episode_length]
            if finished.size:
                batch.end_episode(finished)

    def before_academy_step(self, academy_step: int) -> None:
        """Inject the configured faults."""
        total = self.ctx.total_steps
        if self.crash_after and total >= self.crash_after:
            logger.error("Stress: simulated crash at Academy step %d", total)
            logging.shutdown()
            sys.stdout.flush()
            os._exit(CRASH_EXIT_CODE)
        if self.hang_after and total >= self.hang_after:
            logger.warning("Stress: simulated hang at Academy step %d", total)
            for handler in logging.getLogger().handlers + logger.handlers:
                handler.flush()
            _hang_until_orphaned()

    def after_academy_step(self) -> None:
        """Group rewards, then the simulated compute time."""
        if self.group_ids.size:
            self.ctx.add_group_reward(self.group_ids, 1.0)
        if self.step_time > 0:
            spread = self._timing_rng.uniform(-1.0, 1.0) * self.jitter
            time.sleep(max(0.0, self.step_time * (1.0 + spread)))

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Deterministic actions cycling with the agent's step count."""
        spec = batch.spec.action_spec
        steps = batch.step_count[slots]
        continuous = np.repeat(((steps % 10) / 10.0)[:, None], spec.continuous_size, axis=1)
        discrete = np.zeros((slots.size, spec.discrete_size), dtype=np.int32)
        for branch, size in enumerate(spec.discrete_branches):
            discrete[:, branch] = steps % size
        return continuous.astype(np.float32), discrete.astype(np.int32)


def _crash_once(marker: str) -> None:
    """Exit with :data:`CRASH_EXIT_CODE` unless ``marker`` exists (created atomically first)."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return
    logger.error("Stress: simulated crash at start-up (crash_once=%s)", marker)
    logging.shutdown()
    sys.stdout.flush()
    os._exit(CRASH_EXIT_CODE)


def _hang_until_orphaned() -> None:
    """Block forever, but exit once the parent process is gone (no orphans left behind)."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(CRASH_EXIT_CODE)
