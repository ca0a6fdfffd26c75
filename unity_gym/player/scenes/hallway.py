"""Hallway: remember a symbol, then pick the matching goal (ML-Agents' ``Hallway`` scene), in 2-D.

Behavior ``Hallway?team=0``, 16 areas with one agent each. Two sensors stacked over 3 reports (wire
order): ``StackingSensor_size3_RayPerceptionSensor`` (105,) and
``StackingSensor_size3_VectorSensor_size1`` (3,). A ray report is 5 rays (forward, then +-35 and
+-70 degrees) x (5 tags ``symbol_O_Goal``, ``symbol_X_Goal``, ``symbol_O``, ``symbol_X``, ``wall``
+ no-hit flag + hit fraction), 12 long with a cast radius of 0.5, in Unity's layout
(:mod:`unity_gym.player.raycast`); the vector is the agent's step count over the max step. One
discrete branch of 5: 0 nothing, 1 forward, 2 backward, 3 turn right, 4 turn left. Decision period
6 with actions between decisions, max step 3000 (scene option ``max_step``). Every executed action
adds -1/max step; touching the goal of the episode's symbol sets the reward to +1, touching the
other goal sets it to -0.1; both end the episode. Each episode also adds ``Goal/Correct`` or
``Goal/Wrong`` (sum) to the stats channel, and 0 to both at its begin, as Unity does.

The point of the scene: the symbol (an O or an X block in the middle of the hallway) is seen only
from within the rays' 12 units, and the goals (at the far end, more than 14 units beyond any
symbol) only from further on, so a policy without memory cannot tell which goal is right when it
gets there.

Physics and layout (simpler than PhysX; Unity's z is y here): a hallway 19 wide and 49.5 long
(x in [-9.5, 9.5], y in [-24.75, 24.75]). An episode draws the symbol (O or X, equally likely):
the O block (4 wide, 1 deep) at (U(-3, 3), U(-5, 5)), the X block at (0, U(-5, 5)) (Unity moves
the unused one out of the level); the two 4 x 4 goals at (7, 22.29) and (-7, 22.29) in a random
order; the agent (a disc of radius 0.5) at (U(-3, 3), -15 + U(-5, 5)) with a random heading. The
agent turns 3 degrees per step and is stopped by the walls, the symbol block and the goals.

Movement follows Unity's setup (ml-agents ``Project/Assets/ML-Agents/Examples/Hallway``), not a
speed cap: ``HallwayAgent.MoveAgent`` adds ``agentRunSpeed`` = 1.5 (``Hallway.unity``,
``HallwaySettings``) to the velocity along the facing direction with ``ForceMode.VelocityChange``
for actions 1 (forward) and 2 (backward, -1.5), on every 0.02 s physics step (decision period 6,
actions between decisions); actions 3 and 4 rotate by 150 degrees/s (3 per step) and leave the
world-frame velocity as it is. The agent's Rigidbody (``SymbolFinderArea.prefab``) has mass 25
(no effect on a VelocityChange) and ``m_Drag`` 2, which PhysX applies as a factor
1 - 2 * 0.02 = 0.96 per step. Friction: the agent's and the floor's colliders have no material
(``m_Material: {fileID: 0}``), so they use Unity's default, documented (Unity Manual, Physic
Material) as dynamic friction 0.6, bounciness 0 and Friction Combine Average: 0.6. Under gravity
9.81 x the scene's ``gravityMultiplier`` 2, kinetic friction takes 0.6 * 19.62 * 0.02 = 0.235
units/s off the speed per step. Per step: v' = max(|v + push| * 0.96 - 0.235, 0) along
v + push, which levels off near 30 units/s (0.6 units per step); this is a simplified PhysX
model, not checked against a Unity build. Moves are split into sub-steps of at most 0.25 units,
so that no speed carries the agent through a wall, the symbol block or a goal; a contact removes
the velocity into the obstacle (bounciness 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..raycast import RayPerceptionSpec, RayTargets
from ..render import BLUE, FLOOR, ORANGE, PURPLE, WALL, WHITE, Canvas
from ..side_channels import StatAggregation
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import MaxStepOption, Scene
from .pushblock import disc_box_contact
from .registry import register_scene

__all__ = ["HallwayScene"]

MAX_STEP = 3000
CORRECT_REWARD = 1.0
WRONG_REWARD = -0.1
HALL_X = 9.5
HALL_Y = 24.75
AGENT_RADIUS = 0.5
FIXED_DELTA_TIME = 0.02  # the scene's fixedDeltaTime override (Hallway.unity)
#: ``HallwaySettings.agentRunSpeed`` (Hallway.unity): the velocity change per push step.
AGENT_RUN_SPEED = 1.5
#: The agent Rigidbody's ``m_Drag`` (SymbolFinderArea.prefab); PhysX keeps 1 - drag * dt per step.
AGENT_DRAG = 2.0
DRAG_FACTOR = 1.0 - AGENT_DRAG * FIXED_DELTA_TIME
#: ``gravityMultiplier`` of the scene's project-settings override (Hallway.unity).
GRAVITY_MULTIPLIER = 2.0
GRAVITY = 9.81 * GRAVITY_MULTIPLIER
#: Dynamic friction of Unity's default physics material (agent and floor, combine Average).
DYNAMIC_FRICTION = 0.6
#: Speed that kinetic friction removes per step (units/s).
FRICTION_PER_STEP = DYNAMIC_FRICTION * GRAVITY * FIXED_DELTA_TIME
#: The speed at which a push every step is balanced by drag and friction (about 30 units/s).
TOP_SPEED = (AGENT_RUN_SPEED * DRAG_FACTOR - FRICTION_PER_STEP) / (1.0 - DRAG_FACTOR)
#: ``HallwayAgent.MoveAgent`` rotates 150 degrees/s.
TURN_DEGREES_PER_STEP = 150.0 * FIXED_DELTA_TIME
#: The longest move of one collision sub-step (units).
MAX_SUBSTEP = 0.25
#: The heuristic's speed limit (units/s), its assumed braking (units/s^2), the largest angle
#: (degrees) between its facing and the velocity error at which it pushes, and the velocity error
#: it accepts without acting.
HEURISTIC_SPEED = 12.0
HEURISTIC_BRAKING = 20.0
HEURISTIC_ALIGN_DEGREES = 25.0
HEURISTIC_TOLERANCE = 2.0
SYMBOL_HALF = np.array([2.0, 0.5])
GOAL_HALF = 2.0
GOAL_X = 7.0
GOAL_Y = 22.29
O_GOAL_TAG, X_GOAL_TAG, O_TAG, X_TAG, WALL_TAG = 0, 1, 2, 3, 4
#: Symbols: 0 = O, 1 = X.
O_SYMBOL, X_SYMBOL = 0, 1

RAYS = RayPerceptionSpec(
    rays_per_direction=2, max_ray_degrees=70.0, ray_length=12.0, num_tags=5, cast_radius=0.5
)
_WALLS = np.array(
    [
        [-HALL_X, -HALL_Y, HALL_X, -HALL_Y],
        [HALL_X, -HALL_Y, HALL_X, HALL_Y],
        [HALL_X, HALL_Y, -HALL_X, HALL_Y],
        [-HALL_X, HALL_Y, -HALL_X, -HALL_Y],
    ]
)
_GOAL_EXTENT = np.array([[GOAL_HALF, GOAL_HALF], [GOAL_HALF, GOAL_HALF]])
#: (forward, turn) per action, turn positive = counter-clockwise (Unity's 3 turns clockwise).
_ACTIONS = np.array([[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])


def _unit(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(angles), np.sin(angles)], axis=-1)


@register_scene
class HallwayScene(MaxStepOption, Scene):
    """See a symbol, remember it, touch the matching goal; rays 105 + vector 3, discrete 5."""

    name = "Hallway"
    summary = (
        "remember a symbol, go to its goal (rays 105 + vector 3 stacked, discrete 5, 16 agents)"
    )
    default_area_count = 16
    draw_size = (160, 360)
    fixed_delta_time = FIXED_DELTA_TIME
    option_specs = (MaxStepOption.option(MAX_STEP),)

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Hallway?team=0``: ray and step sensors stacked 3x, discrete (5), period 6, max step
        3000 (option ``max_step``)."""
        return [
            BehaviorSpec(
                name="Hallway",
                sensors=(
                    SensorSpec("RayPerceptionSensor", (RAYS.observation_size,), stack_size=3),
                    SensorSpec("VectorSensor_size1", (1,), stack_size=3),
                ),
                action_spec=ActionSpec(discrete_branches=(5,)),
                decision=DecisionSettings(period=6, take_actions_between_decisions=True),
                max_step=self.max_step,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-area agent, symbol and goal state."""
        super().setup(context)
        n = context.area_count
        self.position = np.zeros((n, 2))
        self.velocity = np.zeros((n, 2))
        self.heading = np.zeros(n)
        #: The episode's symbol (0 = O, 1 = X) and its block's centre.
        self.symbol = np.zeros(n, dtype=np.int64)
        self.symbol_position = np.zeros((n, 2))
        #: x of the O goal (the X goal is at the other side).
        self.o_goal_x = np.full(n, GOAL_X)
        #: Episodes ended at the right and at the wrong goal since start-up.
        self.correct = 0
        self.wrong = 0

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Draw the symbol and the goal sides; place the agent near the start."""
        k = slots.size
        rng = self.ctx.rng
        symbol = rng.integers(0, 2, size=k)
        x = np.where(symbol == O_SYMBOL, rng.uniform(-3.0, 3.0, size=k), 0.0)
        self.symbol[slots] = symbol
        self.symbol_position[slots] = np.stack([x, rng.uniform(-5.0, 5.0, size=k)], axis=1)
        self.position[slots] = np.stack(
            [rng.uniform(-3.0, 3.0, size=k), -15.0 + rng.uniform(-5.0, 5.0, size=k)], axis=1
        )
        self.heading[slots] = rng.uniform(-np.pi, np.pi, size=k)
        self.velocity[slots] = 0.0
        self.o_goal_x[slots] = np.where(rng.integers(0, 2, size=k) == 0, GOAL_X, -GOAL_X)
        stats = self.ctx.stats
        for key in ("Goal/Correct", "Goal/Wrong"):
            for _ in range(k):
                stats.add(key, 0.0, StatAggregation.SUM)

    def goal_centres(self, areas: np.ndarray) -> np.ndarray:
        """``(k, 2, 2)``: the O goal's and the X goal's centres."""
        o_x = self.o_goal_x[areas]
        y = np.full(areas.size, GOAL_Y)
        return np.stack([np.stack([o_x, y], 1), np.stack([-o_x, y], 1)], axis=1)

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Rays (goals, the episode's symbol, walls) and the step count over the max step."""
        k = slots.size
        targets = RayTargets(k)
        targets.add_segments(_WALLS, WALL_TAG)
        targets.add_boxes(
            self.goal_centres(slots), _GOAL_EXTENT, np.array([O_GOAL_TAG, X_GOAL_TAG])
        )
        tags = np.where(self.symbol[slots] == O_SYMBOL, O_TAG, X_TAG)[:, None]
        targets.add_boxes(self.symbol_position[slots, None, :], SYMBOL_HALF[None], tags)
        rays = RAYS.perceive(targets, self.position[slots], self.heading[slots])
        steps = (batch.step_count[slots] / self.max_step)[:, None]
        return [rays, steps]

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Turn the agent and push it (a velocity change of 1.5 along its facing); every executed
        action costs 1/max step."""
        action = _ACTIONS[np.clip(discrete[:, 0], 0, len(_ACTIONS) - 1)]
        heading = self.heading[slots] + np.radians(TURN_DEGREES_PER_STEP) * action[:, 1]
        self.heading[slots] = heading
        self.velocity[slots] += _unit(heading) * (AGENT_RUN_SPEED * action[:, 0:1])
        batch.add_reward(slots, -1.0 / self.max_step)

    def after_academy_step(self) -> None:
        """Drag and friction, then the move; walls, symbol blocks and goals stop the agents, and
        touching a goal ends the episode."""
        speed = np.sqrt(np.einsum("ij,ij->i", self.velocity, self.velocity))
        slowed = np.maximum(speed * DRAG_FACTOR - FRICTION_PER_STEP, 0.0)
        self.velocity *= np.where(speed > 0.0, slowed / np.maximum(speed, 1e-12), 0.0)[:, None]
        areas = np.arange(self.position.shape[0])
        goals = np.moveaxis(self.goal_centres(areas), 1, 0)
        goal_half = np.array([GOAL_HALF, GOAL_HALF])
        touching = np.zeros((areas.size, 2), dtype=bool)
        substeps = max(
            1, int(np.ceil(slowed.max(initial=0.0) * self.fixed_delta_time / MAX_SUBSTEP))
        )
        dt = self.fixed_delta_time / substeps
        limit = np.array([HALL_X - AGENT_RADIUS, HALL_Y - AGENT_RADIUS])
        for _ in range(substeps):
            moved = self.position + self.velocity * dt
            clipped = np.clip(moved, -limit, limit)
            # A wall removes the velocity into it.
            self.velocity = np.where(clipped != moved, 0.0, self.velocity)
            moved = clipped
            for side, (centres, half) in enumerate(
                [(self.symbol_position, SYMBOL_HALF), (goals[0], goal_half), (goals[1], goal_half)]
            ):
                normal, depth = disc_box_contact(moved, centres, half)
                hit = depth > 0.0
                moved += normal * depth[:, None]
                pressing = np.minimum(np.einsum("ij,ij->i", self.velocity, normal), 0.0)
                self.velocity -= normal * np.where(hit, pressing, 0.0)[:, None]
                if side > 0:
                    touching[:, side - 1] |= hit
            self.position = moved
        reached = touching.any(axis=1)
        if not reached.any():
            return
        ended = np.flatnonzero(reached)
        right = touching[ended, self.symbol[ended]]
        self.correct += int(right.sum())
        self.wrong += int((~right).sum())
        stats = self.ctx.stats
        for hit in right.tolist():
            stats.add("Goal/Correct" if hit else "Goal/Wrong", 1.0, StatAggregation.SUM)
        batch = self.ctx.batch("Hallway")
        batch.set_reward(ended, np.where(right, CORRECT_REWARD, WRONG_REWARD))
        batch.end_episode(ended)

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The hallway from above (the far end with the goals at the top): the O goal and the O
        symbol in orange, the X ones in purple, the agent in blue."""
        canvas = Canvas(*size, (-HALL_X, -HALL_Y, HALL_X, HALL_Y))
        canvas.rectangle((0.0, 0.0), (HALL_X, HALL_Y), FLOOR, outline=WALL)
        colours = (ORANGE, PURPLE)
        for symbol, centre in enumerate(self.goal_centres(np.array([area]))[0]):
            canvas.rectangle(centre, (GOAL_HALF, GOAL_HALF), colours[symbol])
            canvas.text(centre, "OX"[symbol], WHITE, size=14)
        symbol = int(self.symbol[area])
        canvas.rectangle(self.symbol_position[area], SYMBOL_HALF, colours[symbol])
        canvas.text(self.symbol_position[area] + (0.0, 1.6), "OX"[symbol], WHITE, size=12)
        canvas.agent(self.position[area], AGENT_RADIUS, float(self.heading[area]), BLUE)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Privileged script (knows the symbol): pass below the symbol to the side of the right
        goal, then go up to it.

        It steers the velocity, not just the heading: the wanted velocity points at the target,
        at most ``HEURISTIC_SPEED`` and slow enough near a lane corner to stop there
        (``HEURISTIC_BRAKING``); the agent pushes forward or backward when the velocity error
        lies along its facing, coasts when the error is small, and otherwise turns.
        """
        agent = self.position[slots]
        goal = self.goal_centres(slots)[np.arange(slots.size), self.symbol[slots]]
        lane = np.stack([goal[:, 0], self.symbol_position[slots, 1] - 2.5], axis=1)
        early = (agent[:, 1] < lane[:, 1] + 0.5) & (np.abs(agent[:, 0] - goal[:, 0]) > 1.0)
        target = np.where(early[:, None], lane, goal)
        wanted = target - agent
        distance = np.sqrt(np.einsum("ij,ij->i", wanted, wanted))
        # Into the goal at full speed; to a lane corner slowly enough to stop there.
        cap = np.where(
            early,
            np.minimum(HEURISTIC_SPEED, np.sqrt(2.0 * HEURISTIC_BRAKING * distance)),
            HEURISTIC_SPEED,
        )
        error = wanted / np.maximum(distance, 1e-9)[:, None] * cap[:, None] - self.velocity[slots]
        facing = _unit(self.heading[slots])
        along = np.einsum("ij,ij->i", error, facing)
        across = facing[:, 0] * error[:, 1] - facing[:, 1] * error[:, 0]
        # The angle of the error's line to the facing, folded into [-90, 90] degrees.
        angle = np.arctan2(across * np.sign(along + 1e-12), np.abs(along))
        action = np.where(
            np.abs(angle) > np.radians(HEURISTIC_ALIGN_DEGREES),
            np.where(angle > 0.0, 4, 3),
            np.where(along > 0.0, 1, 2),
        )
        action = np.where(np.hypot(along, across) < HEURISTIC_TOLERANCE, 0, action)
        return np.zeros((slots.size, 0), np.float32), action[:, None].astype(np.int32)
