"""DungeonEscape: three agents must sacrifice one of them to slay a dragon, then unlock the door
with the key it drops (ML-Agents' cooperative ``DungeonEscape`` scene, MA-POCA), in 2-D.

Facts followed (Unity's ``DungeonEscapeAgent`` prefab, ``PushAgentEscape``,
``DungeonEscapeEnvController`` and ``SimpleNPC`` scripts): behavior ``DungeonEscape?team=0``,
three agents per platform registered in one ``SimpleMultiAgentGroup``. Sensors (wire order):
``StackingSensor_size3_BackRayPerceptionSensor`` (243,) = 3 x 9 rays (4 per direction, 40
degrees, looking backwards), ``StackingSensor_size3_RayPerceptionSensor`` (405,) = 3 x 15 rays (7
per direction, 60 degrees), both 40 units long with a cast radius of 0.5 over the 7 detectable
tags ``wall``, ``agent``, ``dragon``, ``key``, ``lock``, ``portal``, ``keyDragon`` (+ no-hit flag
+ hit fraction per ray, :mod:`unity_gym.player.raycast`), and ``VectorSensor_size1`` (1,): whether
the agent holds the key (``sensor.AddObservation(IHaveAKey)``). One discrete branch of 7 (the
moves of ``PushBlock``: 0 nothing, 1 forward, 2 backward, 3 turn right, 4 turn left, 5 strafe
left, 6 strafe right); decision period 5 with actions between decisions; agent max step 0.

Episode rules (``DungeonEscapeEnvController``), evaluated after each physics step in agent order:

* an agent touching the dragon slays it (``KilledByBaddie``): the dragon is gone, the agent is
  removed (``agent.gameObject.SetActive(false)``: it reports one terminal step and leaves the
  group, :meth:`~unity_gym.player.academy.AgentBatch.disable`, while the others play on) and the
  key drops where the dragon was;
* an agent touching the key while it lies on the floor picks it up (``IHaveAKey``);
* an agent touching the portal (``TouchedHazard``) ends the group episode if it carries the key or
  is the last agent left, and is removed otherwise;
* an agent with the key touching the door (``lock``) unlocks it (``UnlockDoor``): group reward
  +1, ``EndGroupEpisode``;
* the dragon reaching the portal escapes (``BaddieTouchedBlock``): ``EndGroupEpisode`` without
  reward;
* after ``MaxEnvironmentSteps`` (25000, the script's default; option ``max_environment_steps``,
  0 = never) the controller calls ``GroupEpisodeInterrupted``.

Every group episode end resets the platform (``ResetScene``): removed agents come back
(``SetActive(true)``: new ids, a new episode) and rejoin the group, agents go to random free
spots of the middle half of the platform (Unity's ``Physics.CheckBox`` with half extents 2.5
around each spot) with random headings, the key is hidden, and the dragon returns to its start
with a new walking speed ``Random.Range(1, 7)`` units/s. The environment parameter
``absorbing_state`` (0) is read at each platform reset: when non-zero, removed agents are not
disabled but moved far away (Unity: to a random spot 200 to 2000 units off the platform), where
they keep deciding and see nothing. No individual rewards.

Simplifications: the platform, the agents' motion and walls come from
:mod:`~unity_gym.player.scenes.pushblock` (square platform of side 24, agents are discs of radius
0.5 pushed by ``agentRunSpeed`` with drag 4, Rigidbody mass 10 as in the prefab) with the
gravity and friction of :mod:`~unity_gym.player.scenes.pushblock_collab` (the scene's
``PushBlockSettings``); agents pass through each other. The dragon (a disc of radius 1) walks
straight from the corner ``(-8, 8)`` to the portal (a 2 x 2 box in the opposite corner around
``(10, -10)``; Unity's cave sits at ``(10.02, -10.03)``); the door is a 2 x 2 box in the middle of
the far wall that blocks agents without the key; the key is a disc of radius 0.5. Unity turns the
whole platform by a random multiple of 90 degrees at each reset, which the agents cannot tell
apart from a fixed platform. 8 platforms (``DungeonEscapePlatform`` to ``DungeonEscapePlatform
(7)`` in DungeonEscape.unity). A trainer RESET resets every platform (as PushBlockCollab does).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..raycast import RayPerceptionSpec, RayTargets
from ..render import BLUE, FLOOR, GOLD, PURPLE, RED, WALL, Canvas
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import SceneOption
from .pushblock import (
    AGENT_DRAG,
    AGENT_RADIUS,
    ARENA_HALF,
    GRAVITY,
    SPAWN_HALF,
    clamp_to_arena,
    disc_box_contact,
    slide,
    substep_count,
)
from .pushblock_collab import AGENTS_PER_AREA, FRICTION, GRAVITY_MULTIPLIER, GroupedPushAgents
from .registry import register_scene

__all__ = [
    "BACK_RAYS",
    "DOOR_CENTRE",
    "DRAGON_START",
    "FRONT_RAYS",
    "MAX_ENVIRONMENT_STEPS",
    "PORTAL_CENTRE",
    "TAGS",
    "DungeonEscapeScene",
]

MAX_ENVIRONMENT_STEPS = 25000
TAGS = ("wall", "agent", "dragon", "key", "lock", "portal", "keyDragon")
WALL_TAG, AGENT_TAG, DRAGON_TAG, KEY_TAG, LOCK_TAG, PORTAL_TAG = range(6)
#: ``RayPerceptionSensor``: 7 rays per direction, 60 degrees, 40 long, sphere cast radius 0.5.
FRONT_RAYS = RayPerceptionSpec(
    rays_per_direction=7, max_ray_degrees=60.0, ray_length=40.0, num_tags=7, cast_radius=0.5
)
#: ``BackRayPerceptionSensor`` on the child ``Backward`` turned 180 degrees: 4 rays per
#: direction, 40 degrees.
BACK_RAYS = RayPerceptionSpec(
    rays_per_direction=4,
    max_ray_degrees=40.0,
    ray_length=40.0,
    num_tags=7,
    cast_radius=0.5,
    heading_offset_degrees=180.0,
)
STACK = 3
PORTAL_CENTRE = np.array([10.0, -10.0])
PORTAL_HALF = 1.0
DOOR_CENTRE = np.array([0.0, ARENA_HALF])
DOOR_HALF = 1.0
DRAGON_START = np.array([-8.0, 8.0])
DRAGON_RADIUS = 1.0
#: ``SimpleNPC.SetRandomWalkSpeed``: ``Random.Range(1f, 7f)`` units per second.
DRAGON_SPEED_RANGE = (1.0, 7.0)
KEY_RADIUS = 0.5
UNLOCK_REWARD = 1.0
#: ``GetRandomSpawnPos`` rejects spots where a 5 x 5 box (``CheckBox`` half extents 2.5) touches
#: a collider: centres closer than 2.5 + the other body's half size on both axes.
SPAWN_CLEARANCE = 2.5
#: Where absorbed agents wait (Unity: ``Random.Range(200f, 2000f)`` along x): far beyond reach.
_ABSORBED_X = (200.0, 2000.0)

_WALLS = np.array(
    [
        [-ARENA_HALF, -ARENA_HALF, ARENA_HALF, -ARENA_HALF],
        [ARENA_HALF, -ARENA_HALF, ARENA_HALF, ARENA_HALF],
        [ARENA_HALF, ARENA_HALF, -ARENA_HALF, ARENA_HALF],
        [-ARENA_HALF, ARENA_HALF, -ARENA_HALF, -ARENA_HALF],
    ]
)
#: The door's colour in :meth:`DungeonEscapeScene.draw`.
_DOOR = (0.55, 0.36, 0.2)
#: Heuristic: where the agents that do not fight the dragon wait, below the door.
_WAIT_SPOTS = np.array([[-3.0, 7.0], [3.0, 7.0], [0.0, 5.0]])
_TURN_THRESHOLD = np.radians(15.0)


@register_scene
class DungeonEscapeScene(GroupedPushAgents):
    """Three agents per platform: one slays the dragon, another takes its key to the door."""

    name = "DungeonEscape"
    summary = (
        "MA-POCA dungeon: slay the dragon, fetch the key, unlock the door; agents removed "
        "mid-episode (rays 243+405, vector 1, discrete 7, 3/area)"
    )
    default_area_count = 8
    draw_size = (256, 256)
    fixed_delta_time = 0.02
    option_specs = (
        SceneOption(
            "max_environment_steps",
            int,
            MAX_ENVIRONMENT_STEPS,
            "steps before the platform's group episode is interrupted (0 = never)",
        ),
    )

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``DungeonEscape?team=0``: two stacked ray sensors and the key flag, discrete (7)."""
        if int(self.options["max_environment_steps"]) < 0:
            raise PlayerError("max_environment_steps must be >= 0 (0 = never interrupt)")
        return [
            BehaviorSpec(
                name="DungeonEscape",
                sensors=(
                    SensorSpec(
                        "RayPerceptionSensor", (FRONT_RAYS.observation_size,), stack_size=STACK
                    ),
                    SensorSpec(
                        "BackRayPerceptionSensor", (BACK_RAYS.observation_size,), stack_size=STACK
                    ),
                    SensorSpec("VectorSensor_size1", (1,)),
                ),
                action_spec=ActionSpec(discrete_branches=(7,)),
                agents_per_area=AGENTS_PER_AREA,
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=0,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-platform agents, dragon and key; one multi-agent group per platform."""
        super().setup(context)
        n = context.area_count
        self.max_environment_steps = int(self.options["max_environment_steps"])
        self.agents = context.batch("DungeonEscape")
        self.agent_position = np.zeros((n, AGENTS_PER_AREA, 2))
        self.agent_velocity = np.zeros((n, AGENTS_PER_AREA, 2))
        self.heading = np.zeros((n, AGENTS_PER_AREA))
        self.has_key = np.zeros((n, AGENTS_PER_AREA), dtype=bool)
        #: Agents moved off the platform with ``absorbing_state`` (still enabled).
        self.absorbed = np.zeros((n, AGENTS_PER_AREA), dtype=bool)
        self.absorbing = np.zeros(n, dtype=bool)
        self.remaining = np.full(n, AGENTS_PER_AREA)
        self.dragon_position = np.zeros((n, 2))
        self.dragon_speed = np.ones(n)
        self.dragon_alive = np.zeros(n, dtype=bool)
        self.key_position = np.zeros((n, 2))
        self.key_on_floor = np.zeros(n, dtype=bool)
        self.timer = np.zeros(n, dtype=np.int64)
        #: Group id of each platform.
        self.groups = context.create_groups(n)
        self.agents.set_group(slice(None), np.repeat(self.groups, AGENTS_PER_AREA))
        #: Outcomes since start-up: doors unlocked, dragons slain, dragons escaped, agents lost
        #: to the portal.
        self.escapes = 0
        self.dragons_slain = 0
        self.dragons_escaped = 0
        self.portal_losses = 0

    # ---- platform reset and episodes ---------------------------------------------------------

    def in_play(self) -> np.ndarray:
        """``(areas, 3)``: agents on the platform (enabled and not absorbed)."""
        active = self.agents.active.reshape(-1, AGENTS_PER_AREA)
        return active & ~self.absorbed

    def on_environment_reset(self) -> None:
        """Reset every platform."""
        self.reset_areas(np.arange(self.ctx.area_count))

    def reset_areas(self, areas: np.ndarray) -> None:
        """Unity's ``ResetScene`` for these platforms.

        Args:
            areas: platform indices ``(k,)``.
        """
        k = areas.size
        if k == 0:
            return
        rng = self.ctx.rng
        self.absorbing[areas] = (
            np.asarray(self.ctx.parameters.read_many("absorbing_state", 0.0, k)) != 0.0
        )
        self.timer[areas] = 0
        self.remaining[areas] = AGENTS_PER_AREA
        slots = (areas[:, None] * AGENTS_PER_AREA + np.arange(AGENTS_PER_AREA)).reshape(-1)
        self.agents.enable(slots)
        self.agents.set_group(slots, np.repeat(self.groups[areas], AGENTS_PER_AREA))
        self.absorbed[areas] = False
        self.has_key[areas] = False
        self.dragon_position[areas] = DRAGON_START
        self.dragon_speed[areas] = rng.uniform(*DRAGON_SPEED_RANGE, size=k)
        self.dragon_alive[areas] = True
        self.key_on_floor[areas] = False
        # Random free spots: clear of the dragon and of the agents placed before.
        placed = np.zeros((k, AGENTS_PER_AREA, 2))
        for j in range(AGENTS_PER_AREA):
            spot = rng.uniform(-SPAWN_HALF, SPAWN_HALF, size=(k, 2))
            for _ in range(100):
                crowded = np.all(
                    np.abs(spot - DRAGON_START) < SPAWN_CLEARANCE + DRAGON_RADIUS, axis=1
                )
                for other in range(j):
                    crowded |= np.all(
                        np.abs(spot - placed[:, other]) < SPAWN_CLEARANCE + AGENT_RADIUS, axis=1
                    )
                if not crowded.any():
                    break
                spot[crowded] = rng.uniform(-SPAWN_HALF, SPAWN_HALF, size=(int(crowded.sum()), 2))
            placed[:, j] = spot
        self.agent_position[areas] = placed
        self.heading[areas] = rng.uniform(-np.pi, np.pi, size=(k, AGENTS_PER_AREA))
        self.agent_velocity[areas] = 0.0

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """``OnEpisodeBegin``: the agent holds no key (the platform reset places it)."""
        areas, me = np.divmod(slots, AGENTS_PER_AREA)
        self.has_key[areas, me] = False

    # ---- observations ------------------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Front rays, back rays (walls, other agents, dragon, key, door, portal), key flag."""
        areas, me = np.divmod(slots, AGENTS_PER_AREA)
        k = slots.size
        origins = self.agent_position[areas, me]
        headings = self.heading[areas, me]
        targets = RayTargets(k)
        targets.add_segments(_WALLS, WALL_TAG)
        others = self.in_play()[areas] & (np.arange(AGENTS_PER_AREA)[None, :] != me[:, None])
        targets.add_circles(self.agent_position[areas], AGENT_RADIUS, AGENT_TAG, active=others)
        targets.add_circles(
            self.dragon_position[areas, None, :],
            DRAGON_RADIUS,
            DRAGON_TAG,
            active=self.dragon_alive[areas, None],
        )
        targets.add_circles(
            self.key_position[areas, None, :],
            KEY_RADIUS,
            KEY_TAG,
            active=self.key_on_floor[areas, None],
        )
        targets.add_boxes(DOOR_CENTRE[None, :], np.full((1, 2), DOOR_HALF), LOCK_TAG)
        targets.add_boxes(PORTAL_CENTRE[None, :], np.full((1, 2), PORTAL_HALF), PORTAL_TAG)
        return [
            FRONT_RAYS.perceive(targets, origins, headings),
            BACK_RAYS.perceive(targets, origins, headings),
            self.has_key[areas, me, None].astype(np.float32),
        ]

    # ---- actions and the platform controller -------------------------------------------------

    def after_academy_step(self) -> None:
        """The controller's timer, the dragon's walk, physics, then the collision rules
        (``MoveAgent`` is :meth:`GroupedPushAgents.on_action_received`)."""
        self._count_step()
        self._walk_dragons()
        self._move_agents()
        self._collisions()

    def _walk_dragons(self) -> None:
        """``SimpleNPC.FixedUpdate``: ``MovePosition`` towards the portal at the walk speed."""
        gap = PORTAL_CENTRE - self.dragon_position
        distance = np.maximum(np.linalg.norm(gap, axis=1), 1e-9)
        step = np.minimum(self.dragon_speed * self.fixed_delta_time, distance)
        moving = self.dragon_alive[:, None]
        self.dragon_position += np.where(moving, gap * (step / distance)[:, None], 0.0)

    def _move_agents(self) -> None:
        """Drag and friction, then sub-steps; walls and the locked door stop the agents."""
        dt = self.fixed_delta_time
        loss = FRICTION * GRAVITY * GRAVITY_MULTIPLIER * dt
        playing = self.in_play()
        velocity = slide(self.agent_velocity, AGENT_DRAG * dt, loss) * playing[..., None]
        position = self.agent_position.copy()
        substeps = substep_count(velocity, np.zeros((0, 2)), dt)
        flat = (-1, 2)
        for _ in range(substeps):
            position += velocity * (dt / substeps)
            normal, depth = disc_box_contact(
                position.reshape(flat),
                np.broadcast_to(DOOR_CENTRE, (position[..., 0].size, 2)),
                DOOR_HALF,
            )
            blocked = (depth > 0.0) & ~self.has_key.reshape(-1)
            normal = normal.reshape(position.shape)
            depth = np.where(blocked, depth, 0.0).reshape(playing.shape)
            position += normal * depth[..., None]
            closing = -np.einsum("nac,nac->na", velocity, normal)
            velocity += normal * np.where(depth > 0.0, np.maximum(closing, 0.0), 0.0)[..., None]
            clamped, stopped = clamp_to_arena(position, velocity, ARENA_HALF - AGENT_RADIUS)
            position = np.where(playing[..., None], clamped, position)
            velocity = np.where(playing[..., None], stopped, velocity)
        self.agent_position, self.agent_velocity = position, velocity

    def _remove(self, areas: np.ndarray, me: int) -> None:
        """Take agent ``me`` of these platforms out: disabled, or moved far away (absorbing)."""
        absorbing = self.absorbing[areas]
        gone = areas[absorbing]
        if gone.size:
            rng = self.ctx.rng
            self.absorbed[gone, me] = True
            self.agent_position[gone, me, 0] = rng.uniform(*_ABSORBED_X, size=gone.size)
            self.agent_position[gone, me, 1] = rng.uniform(-1000.0, 1000.0, size=gone.size)
            self.agent_velocity[gone, me] = 0.0
        disabled = areas[~absorbing]
        if disabled.size:
            self.agents.disable(disabled * AGENTS_PER_AREA + me)

    def _end_areas(self, areas: np.ndarray, reward: float = 0.0) -> None:
        if areas.size:
            if reward:
                self.ctx.add_group_reward(self.groups[areas], reward)
            self.ctx.end_group_episode(self.groups[areas])
            self.reset_areas(areas)

    def _collisions(self) -> None:
        """The collision callbacks, agent by agent, then the dragon at the portal."""
        n = self.ctx.area_count
        ended = np.zeros(n, dtype=bool)
        portal_half = np.full((n, 2), PORTAL_HALF)
        door_half = np.full((n, 2), DOOR_HALF)
        for me in range(AGENTS_PER_AREA):
            here = self.in_play()[:, me] & ~ended
            position = self.agent_position[:, me]
            # The dragon: it dies, the agent is sacrificed, the key drops.
            gap = np.linalg.norm(position - self.dragon_position, axis=1)
            slain = np.flatnonzero(here & self.dragon_alive & (gap < AGENT_RADIUS + DRAGON_RADIUS))
            if slain.size:
                self.dragons_slain += int(slain.size)
                self.dragon_alive[slain] = False
                self.remaining[slain] -= 1
                self.has_key[slain, me] = False
                self.key_position[slain] = self.dragon_position[slain]
                self.key_on_floor[slain] = True
                self._remove(slain, me)
                here[slain] = False
            # The portal: fatal; with the key or as the last one, the group episode ends.
            _, depth = disc_box_contact(
                position, np.broadcast_to(PORTAL_CENTRE, (n, 2)), portal_half
            )
            hazard = np.flatnonzero(here & (depth > 0.0))
            if hazard.size:
                self.portal_losses += int(hazard.size)
                self.remaining[hazard] -= 1
                over = (self.remaining[hazard] == 0) | self.has_key[hazard, me]
                self._remove(hazard[~over], me)
                here[hazard] = False
                ended[hazard[over]] = True
                self._end_areas(hazard[over])
            # The door, with the key: escape.
            _, depth = disc_box_contact(position, np.broadcast_to(DOOR_CENTRE, (n, 2)), door_half)
            unlocked = np.flatnonzero(here & self.has_key[:, me] & (depth > 0.0))
            if unlocked.size:
                self.escapes += int(unlocked.size)
                self.has_key[unlocked, me] = False
                here[unlocked] = False
                ended[unlocked] = True
                self._end_areas(unlocked, UNLOCK_REWARD)
            # The key (a trigger) on the floor.
            gap = np.linalg.norm(self.agent_position[:, me] - self.key_position, axis=1)
            found = np.flatnonzero(here & self.key_on_floor & (gap < AGENT_RADIUS + KEY_RADIUS))
            self.has_key[found, me] = True
            self.key_on_floor[found] = False
        # The dragon escapes through the portal.
        nearest = np.clip(
            self.dragon_position, PORTAL_CENTRE - PORTAL_HALF, PORTAL_CENTRE + PORTAL_HALF
        )
        reached = np.linalg.norm(self.dragon_position - nearest, axis=1) < DRAGON_RADIUS
        escaped = np.flatnonzero(~ended & self.dragon_alive & reached)
        if escaped.size:
            self.dragons_escaped += int(escaped.size)
            self._end_areas(escaped)

    # ---- heuristic ---------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The platform from above: the door (brown, top), the portal (purple), the dragon
        (red), the key (gold) while on the floor, and the agents still in play (the key's holder
        ringed in gold)."""
        canvas = Canvas(*size, (-ARENA_HALF, -ARENA_HALF, ARENA_HALF, ARENA_HALF))
        canvas.rectangle((0.0, 0.0), (ARENA_HALF, ARENA_HALF), FLOOR)
        canvas.segments(_WALLS, WALL, width=2)
        canvas.rectangle(DOOR_CENTRE, (DOOR_HALF, DOOR_HALF), _DOOR)
        canvas.rectangle(PORTAL_CENTRE, (PORTAL_HALF, PORTAL_HALF), PURPLE)
        if self.dragon_alive[area]:
            canvas.circle(self.dragon_position[area], DRAGON_RADIUS, RED, min_pixels=6)
        if self.key_on_floor[area]:
            canvas.circle(self.key_position[area], KEY_RADIUS, GOLD, min_pixels=5)
        playing = self.in_play()[area]
        for agent in np.flatnonzero(playing):
            position = self.agent_position[area, agent]
            if self.has_key[area, agent]:
                canvas.circle(position, 1.2 * AGENT_RADIUS, GOLD, min_pixels=11)
            canvas.agent(position, AGENT_RADIUS, float(self.heading[area, agent]), BLUE)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The agent nearest the dragon charges it; once the key lies on the floor everyone runs
        for it, and its holder runs to the door; the others wait below the door."""
        areas, me = np.divmod(slots, AGENTS_PER_AREA)
        position = self.agent_position[areas, me]
        playing = self.in_play()
        dragon_gap = np.linalg.norm(self.agent_position - self.dragon_position[:, None, :], axis=2)
        champion = np.argmin(np.where(playing, dragon_gap, np.inf), axis=1)[areas]
        target = _WAIT_SPOTS[me].copy()
        waiting = np.ones(slots.size, dtype=bool)
        charge = self.dragon_alive[areas] & (champion == me)
        target[charge] = self.dragon_position[areas[charge]]
        fetch = self.key_on_floor[areas]
        target[fetch] = self.key_position[areas[fetch]]
        holder = self.has_key[areas, me]
        target[holder] = DOOR_CENTRE - np.array([0.0, DOOR_HALF])
        waiting &= ~(charge | fetch | holder)
        gap = target - position
        bearing = np.arctan2(gap[:, 1], gap[:, 0]) - self.heading[areas, me]
        bearing = (bearing + np.pi) % (2.0 * np.pi) - np.pi
        action = np.where(bearing > _TURN_THRESHOLD, 4, np.where(bearing < -_TURN_THRESHOLD, 3, 1))
        arrived = waiting & (np.linalg.norm(gap, axis=1) < 1.5)
        action = np.where(arrived, 0, action)
        return np.zeros((slots.size, 0), np.float32), action.astype(np.int32)[:, None]
