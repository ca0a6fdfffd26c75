"""Basic: walk along a line to one of two goals (ML-Agents' ``Basic`` scene).

Behavior ``Basic?team=0``, one agent per area, observation ``Basic`` (20,) one-hot position,
one discrete branch of 3 (0 stay, 1 left, 2 right). A decision is requested every step (the
scene's script calls ``RequestDecision``). Each move costs -0.01; reaching the small goal
(position 7) gives +0.1, the large goal (17) +1; either ends the episode and reloads the area, so
the next episode is played by a new agent with a new id. The agent starts at 10 (positions
0..19).

Player addition: the environment parameter ``start_position`` (default 10), read when an agent
begins an episode, moves the start.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..render import BLUE, FLOOR, GREEN, WHITE, Canvas
from ..specs import ActionSpec, BehaviorSpec, SensorSpec
from .base import Scene
from .registry import register_scene

__all__ = ["BasicScene"]

POSITIONS = 20
START_POSITION = 10
SMALL_GOAL = 7
LARGE_GOAL = 17
MOVES = np.array([0, -1, 1])


@register_scene
class BasicScene(Scene):
    """A 1-D walk between a small and a large goal."""

    name = "Basic"
    summary = "walk to the small (+0.1) or large (+1) goal (discrete 3, obs one-hot 20, 1 agent)"
    default_area_count = 1
    draw_size = (320, 96)
    frame_steps = 1

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Basic?team=0``: obs ``Basic`` (20,), discrete (3), scripted decisions."""
        return [
            BehaviorSpec(
                name="Basic",
                sensors=(SensorSpec("Basic", (POSITIONS,)),),
                action_spec=ActionSpec(discrete_branches=(3,)),
                decision=None,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Allocate per-area positions."""
        super().setup(context)
        self.agents = context.batch("Basic")
        self.position = np.full(context.area_count, START_POSITION, dtype=np.int64)

    def _start(self, slots: np.ndarray) -> None:
        starts = self.ctx.parameters.read_many("start_position", START_POSITION, slots.size)
        self.position[slots] = np.clip(np.rint(starts), 0, POSITIONS - 1).astype(np.int64)

    def initialize_agents(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """A new agent stands at the start."""
        self._start(slots)

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Back to the start."""
        self._start(slots)

    def before_academy_step(self, academy_step: int) -> None:
        """The controller script requests a decision every step."""
        self.agents.request_decision(slice(None))

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """One-hot position."""
        obs = np.zeros((slots.size, POSITIONS), dtype=np.float32)
        obs[np.arange(slots.size), self.position[slots]] = 1.0
        return [obs]

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Move, pay -0.01; at a goal add its reward, end the episode and reload the area."""
        moves = MOVES[np.clip(discrete[:, 0], 0, 2)]
        self.position[slots] = np.clip(self.position[slots] + moves, 0, POSITIONS - 1)
        batch.add_reward(slots, -0.01)
        for goal, reward in ((SMALL_GOAL, 0.1), (LARGE_GOAL, 1.0)):
            reached = slots[self.position[slots] == goal]
            if reached.size:
                batch.add_reward(reached, reward)
                batch.end_episode(reached)
                batch.respawn(reached)

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The line of 20 positions from the side: the two goals (small +0.1, large +1) and the
        agent."""
        canvas = Canvas(*size, (-0.5, -0.9, POSITIONS - 0.5, 1.1))
        for cell in range(POSITIONS):
            canvas.rectangle((cell, -0.55), (0.46, 0.08), FLOOR)
        for goal, radius, label in ((SMALL_GOAL, 0.2, "+0.1"), (LARGE_GOAL, 0.42, "+1")):
            canvas.circle((goal, 0.0), radius, GREEN)
            canvas.text((goal, 0.85), label, WHITE)
        canvas.rectangle((float(self.position[area]), 0.0), (0.4, 0.4), BLUE)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Walk right, towards the large goal."""
        return (
            np.zeros((slots.size, 0), dtype=np.float32),
            np.full((slots.size, 1), 2, dtype=np.int32),
        )
