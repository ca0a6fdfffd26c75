"""A headless-player scene for the trainer tests: two behaviors with different names.

The player loads it as ``--scene trainer_scenes:TwoBehaviorsScene`` when this folder is on
``PYTHONPATH`` (``process_utils.python_path_with(SCENE_FOLDER)``), so it runs as a real game
process over gRPC, like a Unity build with two behaviors.

Per training area: one ``Seeker?team=0`` agent (observation ``SeekerSensor`` (3,) = step count,
slot, 1; two continuous actions) and one ``Hider?team=0`` agent (observation ``HiderSensor`` (2,)
= step count, slot; discrete branches (3, 2) with action masks: choice ``step % 3`` of branch 0
is disabled). Both decide every step. Each executed action adds its first component to the
agent's reward (the continuous value, or the branch-0 index). The Seeker ends its episode after
``seeker_length`` actions (default 3), the Hider after ``hider_length`` (default 5). Both agents of
an area form one multi-agent group that earns a group reward of 0.25 per Academy step.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from unity_gym.player import (
    ActionSpec,
    AgentBatch,
    BehaviorSpec,
    DecisionSettings,
    Scene,
    SceneContext,
    SceneOption,
    SensorSpec,
)

SCENE = "trainer_scenes:TwoBehaviorsScene"
GROUP_REWARD = 0.25
SCENE_FOLDER = Path(__file__).resolve().parent
"""The folder to put on a game's ``PYTHONPATH`` so that it finds this module."""


class TwoBehaviorsScene(Scene):
    """A Seeker and a Hider per area, with different episode lengths (module docs)."""

    name = "TwoBehaviors"
    summary = "test scene: behaviors Seeker (continuous) and Hider (discrete, masked)"
    default_area_count = 1
    option_specs = (
        SceneOption("seeker_length", int, 3, "Seeker actions per episode"),
        SceneOption("hider_length", int, 5, "Hider actions per episode"),
    )

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Seeker?team=0`` and ``Hider?team=0``, deciding every step."""
        every_step = DecisionSettings(period=1)
        return [
            BehaviorSpec(
                name="Seeker",
                sensors=(SensorSpec("SeekerSensor", (3,)),),
                action_spec=ActionSpec(continuous_size=2),
                decision=every_step,
            ),
            BehaviorSpec(
                name="Hider",
                sensors=(SensorSpec("HiderSensor", (2,)),),
                action_spec=ActionSpec(discrete_branches=(3, 2)),
                decision=every_step,
                uses_action_mask=True,
            ),
        ]

    def setup(self, context: SceneContext) -> None:
        """One group per area holding its Seeker and its Hider."""
        super().setup(context)
        seeker, hider = context.batch("Seeker"), context.batch("Hider")
        self.lengths = {
            seeker.name: int(self.options["seeker_length"]),
            hider.name: int(self.options["hider_length"]),
        }
        self.groups = context.create_groups(context.area_count)
        seeker.set_group(slice(None), self.groups)
        hider.set_group(slice(None), self.groups)

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Nothing to reset: observations derive from the step count."""

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Step count and slot (and a constant 1 for the Seeker)."""
        steps = batch.step_count[slots].astype(np.float32)
        columns = [steps, slots.astype(np.float32)]
        if batch.spec.name == "Seeker":
            columns.append(np.ones_like(steps))
        return [np.stack(columns, axis=1)]

    def write_action_mask(self, batch: AgentBatch, slots: np.ndarray) -> np.ndarray:
        """Disable choice ``step % 3`` of branch 0 (True = disabled, Unity's wire meaning)."""
        mask = np.zeros((slots.size, batch.spec.action_spec.mask_size), dtype=bool)
        mask[np.arange(slots.size), batch.step_count[slots] % 3] = True
        return mask

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Reward the first action component; end episodes at the behavior's length."""
        if batch.spec.name == "Seeker":
            first = continuous[:, 0]
        else:
            first = discrete[:, 0].astype(np.float32)
        batch.add_reward(slots, first)
        finished = slots[batch.step_count[slots] >= self.lengths[batch.name]]
        if finished.size:
            batch.end_episode(finished)

    def after_academy_step(self) -> None:
        """Every group earns :data:`GROUP_REWARD` per step."""
        self.ctx.add_group_reward(self.groups, GROUP_REWARD)
