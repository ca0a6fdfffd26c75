"""FoodCollector: agents collect green food, avoid red food and freeze rivals with a laser
(ML-Agents' ``FoodCollector`` example, ray-sensor version), in 2-D.

This module holds the game shared by the three FoodCollector scenes (:class:`FoodCollectorGame`:
arena, food, movement, laser, rewards, heuristic) and the ray-sensor scene ``FoodCollector``;
:mod:`.grid_foodcollector` and :mod:`.visual_foodcollector` add the grid-sensor and camera
versions, which differ only in what the agents observe (and in their behavior names and numbers
of areas).

ML-Agents facts followed (``FoodCollectorAgent.cs`` with hybrid actions, ``FoodCollectorArea.cs``,
``FoodCollectorSettings.cs``, ``FoodLogic.cs``, the agents, area and food of
``FoodCollectorArea.prefab`` and ``Food.prefab``, ``docs/Learning-Environment-Examples.md``):

* Behavior ``FoodCollector?team=0``; an area holds 5 agents, 25 food and 25 bad food scattered
  uniformly over ``[-45, 45]^2`` (the area's ``range`` 45) on a floor of 100 x 100 (the floor's
  box collider, 10000 x 10000 at scale 0.01). Food is never reset by an agent's episode: it is
  created when the Academy resets (``FoodCollectorSettings.EnvironmentReset``) and an eaten one
  moves to a new random spot (``respawnFood`` 1, ``FoodLogic.OnEaten``).
* Actions (hybrid): 3 continuous, each clipped to [-1, 1]: forward, right and rotate; one
  discrete branch of 2: 1 fires the laser. Decision period 5 with actions between decisions,
  max step 5000 (scene option ``max_step``); every agent acts on every step.
* ``MoveAgent``, on every action: an agent frozen for more than 4 s (200 steps) thaws. A thawed
  agent pushes along ``forward * f + right * r`` (the sum, not normalised) with a velocity change
  of ``moveSpeed`` 2 per step (``AddForce(.., VelocityChange)``, applied in the physics step that
  follows) and turns by 6 degrees (``turnSpeed`` 300 x 0.02 s) about ``-up * rotate``. Unity's
  ``Transform.Rotate`` normalises the axis, so only the sign of ``rotate`` matters: a positive
  value turns left (counter-clockwise seen from above), a negative one right, 0 not at all.
  Firing halves the push and multiplies the current velocity by 0.75 first. Then, frozen or not,
  a velocity above 5 units/s (``sqrMagnitude > 25``) is multiplied by 0.95. A firing agent casts a
  sphere of radius 2 forward over 25 units; if the first thing hit is an agent tagged ``agent``
  (not frozen), that agent freezes for 4 s: it takes no moves, turns or shots and is tagged
  ``frozenAgent``. Agents act in slot order, so one frozen by a lower slot in the same step no
  longer moves in that step.
* Rewards: touching food adds +1, touching bad food -1 (``OnCollisionEnter``); the food then
  respawns elsewhere. No other rewards, no episode end but the max step.
* Episode begin (``OnEpisodeBegin``): thaw, velocity 0, a random spot in ``[-45, 45]^2`` and a
  random whole-degree heading (``Random.Range(0, 360)``), then the environment parameters
  ``laser_length`` (default 1; it only scales the drawn laser, so it changes nothing here) and
  ``agent_scale`` (default 1: the agent's size; rays, and the grid of the grid version, scale
  with it as Unity scales them with the agent's transform).
* Agent rigid body: mass 10, drag 0.5, rotation frozen (constraints 112), a 1 x 1 x 1 box.
  Each physics step keeps ``1 - 0.5 dt`` of the velocity and kinetic friction (Unity's default
  material, 0.6, under gravity 9.81) takes ``0.6 g dt`` off the speed (:func:`~.pushblock.slide`).
  Holding forward approaches about 31 units/s.
* Food (``Food.prefab``): a sphere collider of radius 0.75, tag ``food``; bad food ``badFood``.
* Looks (materials, seen by the camera version): eating food shows the ``goodMaterial``, bad food
  the ``badMaterial``, for 0.5 s (25 steps, ``m_EffectTime``); a frozen agent shows the
  ``frozenMaterial`` until it thaws; thawing or the look's end restores the normal one.

Sensors of this (ray) version, as documented for it ("53 corresponding to velocity of agent (2),
whether agent is frozen and/or shot its laser (2), plus ray-based perception ... (49; 7 raycast
angles with 7 measurements for each)"; ``useVectorObs`` on), in wire order:

* ``RayPerceptionSensor`` ``(49,)``: 7 rays (3 per direction), tags ``food``, ``agent``,
  ``wall``, ``badFood``, ``frozenAgent`` (the detectable tags of the grid version's prefab), in
  Unity's ray layout (:mod:`unity_gym.player.raycast`).
* ``VectorSensor_size4`` ``(4,)``: the velocity in the agent's frame (right, forward), 1 if
  frozen, 1 if the agent fired on its last action.

Estimated (not in the public sources read): the ray sensor's cone, length and cast radius are
the component defaults (70 degrees, 20 units, 0.5); the wall mesh (walls' inner faces at the
floor's edge, +-50, 1 unit thick); bad food is food with another tag; the scene's number of
areas (1, the documented "5 agents"); gravity 9.81 (no multiplier). Simplifications: agents are
discs of radius ``0.5 * agent_scale`` (their boxes' corners and spin from contacts are not
modelled), agents meeting share their closing speed (equal masses, no bounce); food does not
move when touched (it is eaten at once) and an eaten one reappears at once instead of falling
from 3 units up. Unity's ``TotalScore`` statistic is not sent (it stays 0: no agent has
``contribute`` set).

Heuristic (privileged, it reads the scene's state): steer by velocity control to the nearest
food that no bad food blocks, strafing and turning to face it, away from nearby bad food; it
never fires.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..raycast import RayPerceptionSpec, RayTargets
from ..render import BLUE, FLOOR, GOLD, GREEN, GREY, PURPLE, RED, WALL, WHITE, Canvas, Colour
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import MaxStepOption, Scene
from .pushblock import DEFAULT_MATERIAL_FRICTION, GRAVITY, slide, substep_count, unit_vectors
from .registry import register_scene

__all__ = [
    "AGENTS_PER_AREA",
    "AGENT_HALF",
    "AGENT_TAG",
    "AREA_RANGE",
    "BAD_FOOD_COUNT",
    "BAD_FOOD_TAG",
    "EFFECT_STEPS",
    "FOOD_COUNT",
    "FOOD_RADIUS",
    "FOOD_TAG",
    "FREEZE_STEPS",
    "FROZEN_TAG",
    "LASER_LENGTH",
    "LASER_RADIUS",
    "LOOK_FROZEN",
    "LOOK_NORMAL",
    "LOOK_POISONED",
    "LOOK_SATIATED",
    "TAGS",
    "WALL_HALF",
    "WALL_TAG",
    "WALL_THICKNESS",
    "FoodCollectorGame",
    "FoodCollectorScene",
]

MAX_STEP = 5000
AGENTS_PER_AREA = 5
#: ``numFood`` and ``numBadFood`` of the area; food slots ``[0, 25)`` are good, the rest bad.
FOOD_COUNT = 25
BAD_FOOD_COUNT = 25
#: ``range`` of ``FoodCollectorArea``: spawns are uniform in ``[-45, 45]^2``.
AREA_RANGE = 45.0
#: Inner faces of the walls (estimated at the floor's edge) and their thickness (estimated).
WALL_HALF = 50.0
WALL_THICKNESS = 1.0
FOOD_RADIUS = 0.75
AGENT_HALF = 0.5
MOVE_SPEED = 2.0
TURN_DEGREES_PER_STEP = 6.0
AGENT_DRAG = 0.5
SPEED_CAP_SQUARED = 25.0
SPEED_CAP_FACTOR = 0.95
SHOOT_PUSH_FACTOR = 0.5
SHOOT_VELOCITY_FACTOR = 0.75
LASER_RADIUS = 2.0
LASER_LENGTH = 25.0
#: Frozen for ``Time.time > frozenTime + 4``: thawed at the 201st step after the hit.
FREEZE_STEPS = 200
#: Poisoned or satiated look for ``Time.time > effectTime + 0.5``: 25 steps.
EFFECT_STEPS = 25
#: What an agent's renderer shows (its material): normal, bad (poisoned), good (satiated),
#: frozen.
LOOK_NORMAL, LOOK_POISONED, LOOK_SATIATED, LOOK_FROZEN = range(4)
#: The colour :meth:`FoodCollectorGame.draw` gives each look.
_LOOK_COLOURS: dict[int, Colour] = {
    LOOK_NORMAL: BLUE,
    LOOK_POISONED: PURPLE,
    LOOK_SATIATED: GOLD,
    LOOK_FROZEN: GREY,
}
FIXED_DELTA_TIME = 0.02
#: Detectable tags, in the sensors' order.
TAGS = ("food", "agent", "wall", "badFood", "frozenAgent")
FOOD_TAG, AGENT_TAG, WALL_TAG, BAD_FOOD_TAG, FROZEN_TAG = range(5)

RAYS = RayPerceptionSpec(
    rays_per_direction=3, max_ray_degrees=70.0, ray_length=20.0, num_tags=len(TAGS), cast_radius=0.5
)

_LASER_BLOCKED = AGENTS_PER_AREA
_WALL_SEGMENTS = np.array(
    [
        [-WALL_HALF, -WALL_HALF, WALL_HALF, -WALL_HALF],
        [WALL_HALF, -WALL_HALF, WALL_HALF, WALL_HALF],
        [WALL_HALF, WALL_HALF, -WALL_HALF, WALL_HALF],
        [-WALL_HALF, WALL_HALF, -WALL_HALF, -WALL_HALF],
    ]
)
#: Heuristic settings: cruise speed (units/s), speed per unit of distance (1/s), how far bad
#: food repels (units) and how much clearance a path to food must keep from bad food (units).
_CRUISE_SPEED = 16.0
_APPROACH_GAIN = 3.0
_REPEL_RANGE = 3.5
_PATH_CLEARANCE = FOOD_RADIUS + AGENT_HALF + 0.6


class FoodCollectorGame(MaxStepOption, Scene):
    """The FoodCollector game without sensors: subclasses declare :meth:`behaviors` (5 agents
    per area, hybrid actions 3 + (2,)) and :meth:`collect_observations`.

    State (2-D, Unity's z is y here, headings counter-clockwise from +x in radians): per area
    ``position``, ``velocity``, ``heading``, ``frozen``, ``scale`` of its 5 agents (arrays
    ``(areas, 5, ...)``) and ``food`` ``(areas, 50, 2)``, the first 25 good. Counters since
    start-up: ``eaten_good``, ``eaten_bad``, ``freezes``.
    """

    default_area_count = 1
    fixed_delta_time = FIXED_DELTA_TIME
    draw_size = (256, 256)
    option_specs = (MaxStepOption.option(MAX_STEP),)
    behavior_name = "FoodCollector"

    def _behavior(self, sensors: tuple[SensorSpec, ...]) -> BehaviorSpec:
        """The behavior with ``sensors``: 5 agents per area, hybrid 3 + (2,), period 5."""
        return BehaviorSpec(
            name=self.behavior_name,
            sensors=sensors,
            action_spec=ActionSpec(continuous_size=3, discrete_branches=(2,)),
            agents_per_area=AGENTS_PER_AREA,
            decision=DecisionSettings(period=5, take_actions_between_decisions=True),
            max_step=self.max_step,
        )

    def setup(self, context: SceneContext) -> None:
        """Per-area agent and food state."""
        super().setup(context)
        n = context.area_count
        shape = (n, AGENTS_PER_AREA)
        self.position = np.zeros((*shape, 2))
        self.velocity = np.zeros((*shape, 2))
        self.heading = np.zeros(shape)
        self.scale = np.ones(shape)
        self.frozen = np.zeros(shape, dtype=bool)
        #: Step (of :attr:`clock`) at which each agent froze.
        self.frozen_at = np.zeros(shape, dtype=np.int64)
        #: Whether each agent fired on its last action (``m_Shoot``).
        self.shot = np.zeros(shape, dtype=bool)
        #: The material each agent shows (``LOOK_*``), whether it is poisoned or satiated, and
        #: since which step (``m_EffectTime``).
        self.look = np.full(shape, LOOK_NORMAL, dtype=np.int64)
        self.poisoned = np.zeros(shape, dtype=bool)
        self.satiated = np.zeros(shape, dtype=bool)
        self.effect_at = np.zeros(shape, dtype=np.int64)
        self.food = np.zeros((n, FOOD_COUNT + BAD_FOOD_COUNT, 2))
        #: Physics steps since start-up (Unity's ``Time.time`` / 0.02).
        self.clock = 0
        self.eaten_good = 0
        self.eaten_bad = 0
        self.freezes = 0

    @property
    def is_bad(self) -> np.ndarray:
        """Which food slots hold bad food, ``(50,)``."""
        return np.arange(FOOD_COUNT + BAD_FOOD_COUNT) >= FOOD_COUNT

    # ---- resets and episodes -----------------------------------------------------------------

    def on_environment_reset(self) -> None:
        """``FoodCollectorSettings.EnvironmentReset``: new food everywhere."""
        n = self.ctx.area_count
        self.food = self.ctx.rng.uniform(
            -AREA_RANGE, AREA_RANGE, (n, FOOD_COUNT + BAD_FOOD_COUNT, 2)
        )

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Thaw, stop, a random spot and whole-degree heading; read ``agent_scale``."""
        rng = self.ctx.rng
        areas, agents = np.divmod(slots, AGENTS_PER_AREA)
        k = slots.size
        self.frozen[areas, agents] = False
        self.poisoned[areas, agents] = False
        self.satiated[areas, agents] = False
        self.look[areas, agents] = LOOK_NORMAL
        self.shot[areas, agents] = False
        self.velocity[areas, agents] = 0.0
        self.position[areas, agents] = rng.uniform(-AREA_RANGE, AREA_RANGE, (k, 2))
        yaw = rng.integers(0, 360, k)
        self.heading[areas, agents] = np.radians(90.0 - yaw)
        params = self.ctx.parameters
        params.read_many("laser_length", 1.0, k)  # read as Unity reads it; only drawn there
        scale = np.asarray(params.read_many("agent_scale", 1.0, k))
        self.scale[areas, agents] = np.clip(scale, 0.1, 10.0)

    # ---- actions -----------------------------------------------------------------------------

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """``MoveAgent`` for every acting agent, in slot order (thaw, move, turn, fire)."""
        areas, agents = np.divmod(slots, AGENTS_PER_AREA)
        thawed = self.frozen[areas, agents] & (
            self.clock - self.frozen_at[areas, agents] > FREEZE_STEPS
        )
        self.frozen[areas[thawed], agents[thawed]] = False
        self.look[areas[thawed], agents[thawed]] = LOOK_NORMAL
        expired = self.clock - self.effect_at[areas, agents] > EFFECT_STEPS
        expired &= self.poisoned[areas, agents] | self.satiated[areas, agents]
        self.poisoned[areas[expired], agents[expired]] = False
        self.satiated[areas[expired], agents[expired]] = False
        self.look[areas[expired], agents[expired]] = LOOK_NORMAL
        act = np.clip(np.nan_to_num(continuous[:, :3]), -1.0, 1.0)
        firing = discrete[:, 0] > 0
        heading = self.heading[areas, agents] + np.radians(TURN_DEGREES_PER_STEP) * np.sign(
            act[:, 2]
        )
        moving = ~self.frozen[areas, agents]
        # Lasers in slot order: an agent frozen by a lower slot neither moves nor fires now.
        for index in np.flatnonzero(firing & moving):
            if not moving[index]:
                continue
            area, me = int(areas[index]), int(agents[index])
            victim = self._laser_victim(area, me, float(heading[index]))
            if victim is None:
                continue
            self.frozen[area, victim] = True
            self.frozen_at[area, victim] = self.clock
            self.look[area, victim] = LOOK_FROZEN
            self.freezes += 1
            later = np.flatnonzero(
                (areas == area) & (agents == victim) & (np.arange(slots.size) > index)
            )
            moving[later] = False
        shooting = firing & moving
        self.shot[areas, agents] = shooting
        forward = unit_vectors(heading)
        right = np.stack([forward[:, 1], -forward[:, 0]], axis=1)
        push = (forward * act[:, 0:1] + right * act[:, 1:2]) * MOVE_SPEED
        push = np.where(shooting[:, None], push * SHOOT_PUSH_FACTOR, push)
        velocity = self.velocity[areas, agents]
        velocity = np.where(shooting[:, None], velocity * SHOOT_VELOCITY_FACTOR, velocity)
        fast = np.einsum("ij,ij->i", velocity, velocity) > SPEED_CAP_SQUARED
        velocity = np.where(fast[:, None], velocity * SPEED_CAP_FACTOR, velocity)
        # AddForce(VelocityChange) takes effect in the physics step, after the speed cap.
        self.velocity[areas, agents] = velocity + np.where(moving[:, None], push, 0.0)
        self.heading[areas, agents] = np.where(moving, heading, self.heading[areas, agents])

    def _laser_victim(self, area: int, me: int, heading: float) -> int | None:
        """The agent (index in the area) that the laser of agent ``me`` freezes, if any."""
        targets = RayTargets(1)
        # Tags here name what was hit: an agent's index, or _LASER_BLOCKED for walls and food.
        targets.add_segments(_WALL_SEGMENTS, _LASER_BLOCKED)
        targets.add_circles(self.food[area][None], FOOD_RADIUS, _LASER_BLOCKED)
        others = np.arange(AGENTS_PER_AREA) != me
        radii = AGENT_HALF * self.scale[area]
        targets.add_circles(
            self.position[area][None], radii, np.arange(AGENTS_PER_AREA)[None], others[None]
        )
        direction = unit_vectors(np.array([[heading]]))
        hits = targets.cast(self.position[area, me][None], direction, LASER_LENGTH, LASER_RADIUS)
        if not hits.hit[0, 0] or hits.tag[0, 0] == _LASER_BLOCKED:
            return None  # nothing, a wall or food first
        victim = int(hits.tag[0, 0])
        return None if self.frozen[area, victim] else victim

    # ---- physics -----------------------------------------------------------------------------

    def after_academy_step(self) -> None:
        """Drag and friction, moves with walls and agent contacts, eating, then the clock."""
        dt = self.fixed_delta_time
        loss = DEFAULT_MATERIAL_FRICTION * GRAVITY * dt
        velocity = slide(self.velocity, AGENT_DRAG * dt, loss)
        position = self.position.copy()
        radius = AGENT_HALF * self.scale
        substeps = substep_count(velocity.reshape(-1, 2), np.zeros((0, 2)), dt)
        for _ in range(substeps):
            position += velocity * (dt / substeps)
            position, velocity = _agent_contacts(position, velocity, radius)
            bound = (WALL_HALF - radius)[..., None]
            out_high, out_low = position > bound, position < -bound
            velocity = np.where(
                (out_high & (velocity > 0)) | (out_low & (velocity < 0)), 0.0, velocity
            )
            position = np.clip(position, -bound, bound)
            self.position, self.velocity = position, velocity
            self._eat(radius)
        self.clock += 1

    def _eat(self, radius: np.ndarray) -> None:
        """Rewards for food touched (lowest slot first); eaten food moves to a new spot."""
        gap = self.position[:, :, None, :] - self.food[:, None, :, :]
        touching = np.einsum("nafc,nafc->naf", gap, gap) <= (radius[..., None] + FOOD_RADIUS) ** 2
        if not touching.any():
            return
        batch = self.ctx.batch(self.behavior_name)
        bad = self.is_bad
        for area, agent, item in zip(*np.nonzero(touching), strict=True):
            point = self.food[area, item]
            if (
                np.sum((self.position[area, agent] - point) ** 2)
                > (radius[area, agent] + FOOD_RADIUS) ** 2
            ):
                continue  # already eaten by a lower slot and moved away
            slot = int(area) * AGENTS_PER_AREA + int(agent)
            if bad[item]:
                batch.add_reward([slot], -1.0)
                self.eaten_bad += 1
                self.poisoned[area, agent] = True
                self.look[area, agent] = LOOK_POISONED
            else:
                batch.add_reward([slot], 1.0)
                self.eaten_good += 1
                self.satiated[area, agent] = True
                self.look[area, agent] = LOOK_SATIATED
            self.effect_at[area, agent] = self.clock
            self.food[area, item] = self.ctx.rng.uniform(-AREA_RANGE, AREA_RANGE, 2)

    # ---- observations shared by the versions -------------------------------------------------

    def agent_frames(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions ``(k, 2)``, forward and right unit vectors ``(k, 2)`` of agents ``slots``."""
        areas, agents = np.divmod(slots, AGENTS_PER_AREA)
        forward = unit_vectors(self.heading[areas, agents])
        right = np.stack([forward[:, 1], -forward[:, 0]], axis=1)
        return self.position[areas, agents], forward, right

    def agent_tags(self, areas: np.ndarray) -> np.ndarray:
        """Tag index of every agent of ``areas``, ``(k, 5)``: ``agent`` or ``frozenAgent``."""
        return np.where(self.frozen[areas], FROZEN_TAG, AGENT_TAG)

    # ---- pictures for people -----------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The area from above: walls, good food (green) and bad food (red), the agents (blue;
        grey while frozen, purple while poisoned, gold while satiated) with their headings, and
        the laser (white, 25 units ahead) of agents that fired on their last action."""
        reach = WALL_HALF + WALL_THICKNESS
        canvas = Canvas(*size, (-reach, -reach, reach, reach))
        canvas.rectangle((0.0, 0.0), (WALL_HALF, WALL_HALF), FLOOR, outline=WALL)
        bad = self.is_bad
        for centre, is_bad in zip(self.food[area], bad, strict=True):
            canvas.circle(centre, FOOD_RADIUS, RED if is_bad else GREEN, min_pixels=3.0)
        forward = unit_vectors(self.heading[area])
        lasers = self.position[area] + LASER_LENGTH * forward
        for shooter in np.flatnonzero(self.shot[area] & ~self.frozen[area]):
            canvas.segments(
                np.concatenate([self.position[area, shooter], lasers[shooter]]), WHITE, width=1.0
            )
        for agent in range(AGENTS_PER_AREA):
            canvas.agent(
                self.position[area, agent],
                0.5 * float(self.scale[area, agent]),
                float(self.heading[area, agent]),
                _LOOK_COLOURS[int(self.look[area, agent])],
            )
        return canvas.picture()

    # ---- heuristic ---------------------------------------------------------------------------

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Velocity control towards the nearest food not blocked by bad food, turning to face
        it and keeping off bad food; never fires."""
        areas, agents = np.divmod(slots, AGENTS_PER_AREA)
        position, forward, right = self.agent_frames(slots)
        velocity = self.velocity[areas, agents]
        food = self.food[areas]  # (k, 50, 2)
        bad = self.is_bad
        to_food = food - position[:, None, :]
        distance = np.linalg.norm(to_food, axis=2)
        # Paths blocked by bad food: bad food near the segment to a good one.
        good_to = to_food[:, ~bad]  # (k, 25, 2)
        bad_to = to_food[:, bad]  # (k, 25, 2)
        along = (
            np.einsum("kgc,kbc->kgb", good_to, bad_to)
            / np.maximum(np.einsum("kgc,kgc->kg", good_to, good_to), 1e-9)[..., None]
        )
        closest = np.clip(along, 0.0, 1.0)[..., None] * good_to[:, :, None, :]
        miss = np.linalg.norm(closest - bad_to[:, None, :, :], axis=3).min(axis=2)
        cost = distance[:, ~bad] + np.where(miss < _PATH_CLEARANCE, 1000.0, 0.0)
        target = good_to[np.arange(slots.size), np.argmin(cost, axis=1)]
        gap = np.linalg.norm(target, axis=1)
        speed = np.minimum(_CRUISE_SPEED, _APPROACH_GAIN * gap + 4.0)
        wanted = target * (speed / np.maximum(gap, 1e-9))[:, None]
        near_bad = distance[:, bad] < _REPEL_RANGE
        away = -bad_to / np.maximum(distance[:, bad], 1e-9)[..., None]
        wanted += (away * near_bad[..., None]).sum(axis=1) * _CRUISE_SPEED
        change = (wanted - velocity) / MOVE_SPEED
        continuous = np.zeros((slots.size, 3), dtype=np.float32)
        continuous[:, 0] = np.clip(np.einsum("kc,kc->k", change, forward), -1.0, 1.0)
        continuous[:, 1] = np.clip(np.einsum("kc,kc->k", change, right), -1.0, 1.0)
        error = np.arctan2(
            forward[:, 0] * target[:, 1] - forward[:, 1] * target[:, 0],
            np.einsum("kc,kc->k", forward, target),
        )
        turn = np.abs(error) > np.radians(TURN_DEGREES_PER_STEP / 2.0)
        continuous[:, 2] = np.where(turn, np.sign(error), 0.0)
        return continuous, np.zeros((slots.size, 1), dtype=np.int32)


@register_scene
class FoodCollectorScene(FoodCollectorGame):
    """Collect food with a ray sensor and a 4-value vector; hybrid actions, 5 agents."""

    name = "FoodCollector"
    summary = (
        "collect food, avoid bad food, freeze rivals (rays 49 + vector 4, hybrid 3+[2], 5 agents)"
    )

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``FoodCollector?team=0``: rays (49,) and vector (4,); continuous 3 + discrete (2),
        period 5, max step 5000 (option ``max_step``)."""
        return [
            self._behavior(
                (
                    SensorSpec("RayPerceptionSensor", (RAYS.observation_size,)),
                    SensorSpec("VectorSensor_size4", (4,)),
                )
            )
        ]

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Rays (food, agents, walls, bad food, frozen agents) and the agent's own state."""
        k = slots.size
        areas, agents = np.divmod(slots, AGENTS_PER_AREA)
        position, forward, right = self.agent_frames(slots)
        scale = self.scale[areas, agents]
        vector = np.zeros((k, 4), dtype=np.float32)
        velocity = self.velocity[areas, agents]
        vector[:, 0] = np.einsum("kc,kc->k", velocity, right)
        vector[:, 1] = np.einsum("kc,kc->k", velocity, forward)
        vector[:, 2] = self.frozen[areas, agents]
        vector[:, 3] = self.shot[areas, agents]
        rays = np.zeros((k, RAYS.observation_size), dtype=np.float32)
        # Rays and their cast radius scale with the agent's transform: one cast per scale.
        for value in np.unique(scale):
            rows = np.flatnonzero(scale == value)
            spec = RayPerceptionSpec(
                RAYS.rays_per_direction,
                RAYS.max_ray_degrees,
                RAYS.ray_length * float(value),
                RAYS.num_tags,
                RAYS.cast_radius * float(value),
            )
            targets = RayTargets(rows.size)
            targets.add_segments(_WALL_SEGMENTS, WALL_TAG)
            food = self.food[areas[rows]]
            targets.add_circles(
                food, FOOD_RADIUS, np.where(self.is_bad, BAD_FOOD_TAG, FOOD_TAG)[None]
            )
            others = np.arange(AGENTS_PER_AREA)[None, :] != agents[rows, None]
            targets.add_circles(
                self.position[areas[rows]],
                AGENT_HALF * self.scale[areas[rows]],
                self.agent_tags(areas[rows]),
                others,
            )
            rays[rows] = spec.perceive(
                targets, position[rows], self.heading[areas[rows], agents[rows]]
            )
        return [rays, vector]


def _agent_contacts(
    position: np.ndarray, velocity: np.ndarray, radius: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Separate overlapping agent discs of an area and remove their closing speed (equal masses,
    no bounce). Arrays ``(areas, 5, ...)``."""
    offset = position[:, :, None, :] - position[:, None, :, :]
    distance = np.sqrt(np.einsum("nijc,nijc->nij", offset, offset))
    reach = radius[:, :, None] + radius[:, None, :]
    eye = np.eye(AGENTS_PER_AREA, dtype=bool)[None]
    overlap = (distance < reach) & ~eye
    if not overlap.any():
        return position, velocity
    normal = offset / np.maximum(distance, 1e-9)[..., None]
    depth = np.where(overlap, reach - distance, 0.0)
    position = position + 0.5 * np.einsum("nij,nijc->nic", depth, normal)
    relative = velocity[:, :, None, :] - velocity[:, None, :, :]
    closing = np.minimum(np.einsum("nijc,nijc->nij", relative, normal), 0.0)
    velocity = velocity - 0.5 * np.einsum("nij,nijc->nic", np.where(overlap, closing, 0.0), normal)
    return position, velocity
