"""SoccerTwos: two teams of two play soccer (ML-Agents' ``SoccerTwos`` scene), top-down in 2-D.

Behaviors ``SoccerTwos?team=0`` (blue) and ``SoccerTwos?team=1`` (purple), 8 fields with two
agents of each team (16 agents per behavior). Two ray sensors, stacked over 3 reports, named
after the team (wire order, blue shown): ``StackingSensor_size3_BlueRayPerceptionSensor`` (264,)
= 11 rays over +-60 degrees ahead, and ``StackingSensor_size3_BlueRayPerceptionSensorReverse``
(72,) = 3 rays over +-45 degrees behind; each ray reports 6 tags + 2 values in Unity's
``RayPerceptionSensor`` layout (see :mod:`unity_gym.player.raycast`). As in Unity, the tag order
is relative to the team: ball, own goal, opposing goal, wall, teammate, opponent. Rays reach 20
units with a cast radius of 0.5.

Three discrete branches of 3: forward (0 none, 1 forward, 2 back), sideways (0 none, 1 right,
2 left, at 0.3 of the forward push) and turn (0 none, 1 left, 2 right, 2 degrees per step).
Decision period 5 with actions between, agent max step 0. Multi-agent groups: one per team per
field, created blue then purple field by field (ids from 1). When the ball enters a goal, the
scoring team's group gets ``1 - t / 5000`` (``t`` = steps since kickoff), the other group -1,
both groups end their episode and the field kicks off again; after 5000 steps without a goal
both groups' episodes are interrupted (option ``max_environment_steps``, Unity's
``MaxEnvironmentSteps``, changes the 5000). Individual reward: ``0.2 * ball_touch`` for each
touch of the ball (environment parameter ``ball_touch``, default 0, read at each episode begin).

Physics (simpler than PhysX): a 32 x 16 field with 6 wide goals at x = +-16 (blue defends
-16); agents are discs of radius 0.5 that accelerate towards 5 units/s; the ball (radius 0.5)
rolls with drag, bounces off walls and agents (restitution 0.8 and 0.5) and gets a 12 units/s
kick from an agent that touches it while pushing forward. Kickoff: agents near their starting
spots (blue at x = -7, purple at +7, y = +-3, x jittered by +-3, facing the opposing goal within
+-10 degrees), the ball at rest within 2.5 of the centre. Option ``kickoff`` = ``shot_blue`` or
``shot_purple`` instead starts the ball at the centre flying into a goal (for tests).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..raycast import RayPerceptionSpec, RayTargets
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import Scene, SceneOption
from .registry import register_scene

__all__ = ["SoccerTwosScene"]

MAX_ENVIRONMENT_STEPS = 5000
HALF_LENGTH = 16.0
HALF_WIDTH = 8.0
GOAL_HALF_WIDTH = 3.0
AGENT_RADIUS = 0.5
BALL_RADIUS = 0.5
RUN_SPEED = 5.0
AGENT_DAMPING = 0.8
LATERAL_FACTOR = 0.3
TURN_DEGREES_PER_STEP = 2.0
KICK_SPEED = 12.0
MAX_BALL_SPEED = 25.0
BALL_DAMPING = 0.985
WALL_RESTITUTION = 0.8
AGENT_RESTITUTION = 0.5
SHOT_SPEED = 25.0
BLUE, PURPLE = 0, 1
TEAM_NAMES = ("Blue", "Purple")
BALL_TAG, OWN_GOAL_TAG, OPPOSING_GOAL_TAG, WALL_TAG, TEAMMATE_TAG, OPPONENT_TAG = range(6)

FORWARD_RAYS = RayPerceptionSpec(
    rays_per_direction=5, max_ray_degrees=60.0, ray_length=20.0, num_tags=6, cast_radius=0.5
)
BACKWARD_RAYS = RayPerceptionSpec(
    rays_per_direction=1,
    max_ray_degrees=45.0,
    ray_length=20.0,
    num_tags=6,
    cast_radius=0.5,
    heading_offset_degrees=180.0,
)

_WALLS = np.array(
    [
        [-HALF_LENGTH, -HALF_WIDTH, HALF_LENGTH, -HALF_WIDTH],
        [-HALF_LENGTH, HALF_WIDTH, HALF_LENGTH, HALF_WIDTH],
        [-HALF_LENGTH, -HALF_WIDTH, -HALF_LENGTH, -GOAL_HALF_WIDTH],
        [-HALF_LENGTH, GOAL_HALF_WIDTH, -HALF_LENGTH, HALF_WIDTH],
        [HALF_LENGTH, -HALF_WIDTH, HALF_LENGTH, -GOAL_HALF_WIDTH],
        [HALF_LENGTH, GOAL_HALF_WIDTH, HALF_LENGTH, HALF_WIDTH],
    ]
)
#: Goal mouths: the goal each team defends (blue at -x, purple at +x).
_GOAL_MOUTHS = np.array(
    [
        [-HALF_LENGTH, -GOAL_HALF_WIDTH, -HALF_LENGTH, GOAL_HALF_WIDTH],
        [HALF_LENGTH, -GOAL_HALF_WIDTH, HALF_LENGTH, GOAL_HALF_WIDTH],
    ]
)
#: Starting spots of the four players of a field: blue 0, blue 1, purple 0, purple 1.
_START = np.array([[-7.0, 3.0], [-7.0, -3.0], [7.0, 3.0], [7.0, -3.0]])
_START_HEADING = np.array([0.0, 0.0, np.pi, np.pi])
_KICKOFFS = ("random", "shot_blue", "shot_purple")
_TURN = np.radians(TURN_DEGREES_PER_STEP) * np.array([0.0, 1.0, -1.0])
_AXIS = np.array([0.0, 1.0, -1.0])


@register_scene
class SoccerTwosScene(Scene):
    """2 vs 2 soccer with multi-agent group rewards; 8 fields."""

    name = "SoccerTwos"
    summary = "2 vs 2 soccer, group rewards (stacked rays 264+72, discrete 3x3x3, 32 agents)"
    default_area_count = 8
    fixed_delta_time = 0.02
    option_specs = (
        SceneOption(
            "max_environment_steps",
            int,
            MAX_ENVIRONMENT_STEPS,
            "steps without a goal before both groups are interrupted (0 = never)",
        ),
        SceneOption(
            "kickoff",
            str,
            "random",
            "random (ball at rest near the centre), shot_blue or shot_purple (a shot into a goal)",
        ),
    )

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``SoccerTwos?team=0/1``: team-named ray sensors stacked 3x, discrete (3, 3, 3)."""
        kickoff = str(self.options["kickoff"])
        if kickoff not in _KICKOFFS:
            raise PlayerError(f"kickoff={kickoff!r}: expected one of {', '.join(_KICKOFFS)}")
        if int(self.options["max_environment_steps"]) < 0:
            raise PlayerError("max_environment_steps must be >= 0 (0 = never interrupt)")
        return [
            BehaviorSpec(
                name="SoccerTwos",
                team_id=team,
                sensors=(
                    SensorSpec(
                        f"{TEAM_NAMES[team]}RayPerceptionSensor",
                        (FORWARD_RAYS.observation_size,),
                        stack_size=3,
                    ),
                    SensorSpec(
                        f"{TEAM_NAMES[team]}RayPerceptionSensorReverse",
                        (BACKWARD_RAYS.observation_size,),
                        stack_size=3,
                    ),
                ),
                action_spec=ActionSpec(discrete_branches=(3, 3, 3)),
                agents_per_area=2,
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=0,
            )
            for team in (BLUE, PURPLE)
        ]

    def setup(self, context: SceneContext) -> None:
        """Field state (players ``[blue 0, blue 1, purple 0, purple 1]``), groups per team."""
        super().setup(context)
        n = context.area_count
        self.kickoff = str(self.options["kickoff"])
        self.max_environment_steps = int(self.options["max_environment_steps"])
        self.teams = (context.batch("SoccerTwos?team=0"), context.batch("SoccerTwos?team=1"))
        self.position = np.zeros((n, 4, 2))
        self.velocity = np.zeros((n, 4, 2))
        self.heading = np.zeros((n, 4))
        self.kicking = np.zeros((n, 4), dtype=bool)
        self.touching = np.zeros((n, 4), dtype=bool)
        self.ball_touch = np.zeros((n, 4))
        self.ball_position = np.zeros((n, 2))
        self.ball_velocity = np.zeros((n, 2))
        self.timer = np.zeros(n, dtype=np.int64)
        groups = context.create_groups(2 * n).reshape(n, 2)
        #: Group id of each field's blue (column 0) and purple (column 1) team.
        self.groups = groups
        for team, batch in enumerate(self.teams):
            batch.set_group(slice(None), np.repeat(groups[:, team], 2))
        #: Goals scored by blue and purple since start-up.
        self.goals = np.zeros(2, dtype=np.int64)

    # ---- kickoff and episodes ----------------------------------------------------------------

    def on_environment_reset(self) -> None:
        """Kick off on every field."""
        self._kick_off(np.arange(self.ctx.area_count))

    def _kick_off(self, fields: np.ndarray) -> None:
        """Unity's ``ResetScene``: players near their spots, the ball near the centre."""
        rng = self.ctx.rng
        k = fields.size
        start = np.broadcast_to(_START, (k, 4, 2)).copy()
        start[:, :, 0] += rng.uniform(-3.0, 3.0, size=(k, 4))
        self.position[fields] = start
        self.heading[fields] = _START_HEADING + np.radians(rng.uniform(-10.0, 10.0, size=(k, 4)))
        self.velocity[fields] = 0.0
        self.touching[fields] = False
        if self.kickoff == "random":
            self.ball_position[fields] = rng.uniform(-2.5, 2.5, size=(k, 2))
            self.ball_velocity[fields] = 0.0
        else:
            direction = 1.0 if self.kickoff == "shot_blue" else -1.0
            self.ball_position[fields] = 0.0
            self.ball_velocity[fields] = [direction * SHOT_SPEED, 0.0]
        self.timer[fields] = 0

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Read ``ball_touch`` (the players are placed by the kickoff)."""
        players = 2 * batch.spec.team_id + slots % 2
        touch = self.ctx.parameters.read_many("ball_touch", 0.0, slots.size)
        self.ball_touch[slots // 2, players] = touch

    # ---- observations and actions ------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Forward and backward rays with team-relative tags."""
        team = batch.spec.team_id
        fields = slots // 2
        me = 2 * team + slots % 2
        mate = 2 * team + 1 - slots % 2
        rivals = 2 * (1 - team)
        k = slots.size
        targets = RayTargets(k)
        targets.add_segments(_WALLS, WALL_TAG)
        targets.add_segments(_GOAL_MOUTHS[team : team + 1], OWN_GOAL_TAG)
        targets.add_segments(_GOAL_MOUTHS[1 - team : 2 - team], OPPOSING_GOAL_TAG)
        bodies = np.stack(
            [
                self.ball_position[fields],
                self.position[fields, mate],
                self.position[fields, rivals],
                self.position[fields, rivals + 1],
            ],
            axis=1,
        )
        radii = np.array([BALL_RADIUS, AGENT_RADIUS, AGENT_RADIUS, AGENT_RADIUS])
        tags = np.array([BALL_TAG, TEAMMATE_TAG, OPPONENT_TAG, OPPONENT_TAG])
        targets.add_circles(bodies, radii, tags)
        origins = self.position[fields, me]
        headings = self.heading[fields, me]
        return [
            FORWARD_RAYS.perceive(targets, origins, headings),
            BACKWARD_RAYS.perceive(targets, origins, headings),
        ]

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Turn, then push forward/back and sideways; pushing forward makes a touch a kick."""
        fields = slots // 2
        players = 2 * batch.spec.team_id + slots % 2
        action = np.clip(discrete[:, :3], 0, 2)
        heading = self.heading[fields, players] + _TURN[action[:, 2]]
        self.heading[fields, players] = heading
        forward = np.stack([np.cos(heading), np.sin(heading)], axis=1)
        right = np.stack([forward[:, 1], -forward[:, 0]], axis=1)
        push = forward * _AXIS[action[:, 0], None] + right * (
            LATERAL_FACTOR * _AXIS[action[:, 1], None]
        )
        self.velocity[fields, players] += push * (RUN_SPEED * (1.0 - AGENT_DAMPING))
        self.kicking[fields, players] = action[:, 0] == 1

    # ---- physics, goals and the environment timer --------------------------------------------

    def after_academy_step(self) -> None:
        """The field controller's timer, then physics; goals reward and end the groups."""
        self.timer += 1
        limit = self.max_environment_steps
        expired = np.flatnonzero(self.timer >= limit) if limit > 0 else np.zeros(0, np.intp)
        if expired.size:
            self.ctx.interrupt_group_episode(self.groups[expired].reshape(-1))
            self._kick_off(expired)
        self._move_players()
        self._move_ball()
        scorer = np.where(
            self.ball_position[:, 0] > HALF_LENGTH,
            BLUE,
            np.where(self.ball_position[:, 0] < -HALF_LENGTH, PURPLE, -1),
        )
        fields = np.flatnonzero(scorer >= 0)
        if fields.size:
            self._goal(fields, scorer[fields])

    def _goal(self, fields: np.ndarray, scorers: np.ndarray) -> None:
        np.add.at(self.goals, scorers, 1)
        winners = self.groups[fields, scorers]
        losers = self.groups[fields, 1 - scorers]
        limit = self.max_environment_steps or MAX_ENVIRONMENT_STEPS
        self.ctx.add_group_reward(winners, 1.0 - self.timer[fields] / limit)
        self.ctx.add_group_reward(losers, -1.0)
        self.ctx.end_group_episode(self.groups[fields, PURPLE])
        self.ctx.end_group_episode(self.groups[fields, BLUE])
        self._kick_off(fields)

    def _move_players(self) -> None:
        dt = self.fixed_delta_time
        position = self.position + self.velocity * dt
        # Players push each other apart (equal masses).
        for a, b in ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)):
            gap = position[:, b] - position[:, a]
            distance = np.sqrt(np.einsum("ij,ij->i", gap, gap))
            overlap = 2.0 * AGENT_RADIUS - distance
            hit = overlap > 0.0
            if hit.any():
                direction = gap[hit] / np.maximum(distance[hit], 1e-9)[:, None]
                position[hit, a] -= direction * (overlap[hit, None] / 2.0)
                position[hit, b] += direction * (overlap[hit, None] / 2.0)
        position[:, :, 0] = np.clip(
            position[:, :, 0], -HALF_LENGTH + AGENT_RADIUS, HALF_LENGTH - AGENT_RADIUS
        )
        position[:, :, 1] = np.clip(
            position[:, :, 1], -HALF_WIDTH + AGENT_RADIUS, HALF_WIDTH - AGENT_RADIUS
        )
        self.position = position

    def _move_ball(self) -> None:
        dt = self.fixed_delta_time
        ball = self.ball_position + self.ball_velocity * dt
        velocity = self.ball_velocity * BALL_DAMPING
        # Players: the ball bounces off them; a new touch while pushing forward is a kick.
        gap = ball[:, None, :] - self.position
        distance = np.sqrt(np.einsum("fpi,fpi->fp", gap, gap))
        contact = distance < AGENT_RADIUS + BALL_RADIUS
        new_touch = contact & ~self.touching
        self.touching = contact
        if contact.any():
            normal = gap / np.maximum(distance, 1e-9)[:, :, None]
            for player in range(4):
                hit = contact[:, player]
                if not hit.any():
                    continue
                n = normal[hit, player]
                ball[hit] = self.position[hit, player] + n * (AGENT_RADIUS + BALL_RADIUS)
                relative = velocity[hit] - self.velocity[hit, player]
                closing = np.minimum(np.einsum("ij,ij->i", relative, n), 0.0)
                velocity[hit] -= (1.0 + AGENT_RESTITUTION) * closing[:, None] * n
                kick = new_touch[hit, player] & self.kicking[hit, player]
                velocity[hit] += n * (KICK_SPEED * kick)[:, None]
            self._reward_touches(new_touch)
        speed = np.sqrt(np.einsum("ij,ij->i", velocity, velocity))
        velocity *= (np.minimum(speed, MAX_BALL_SPEED) / np.maximum(speed, 1e-9))[:, None]
        # Side walls, then the end walls outside the goal mouths.
        for axis, limit in ((1, HALF_WIDTH - BALL_RADIUS), (0, HALF_LENGTH - BALL_RADIUS)):
            beyond = np.abs(ball[:, axis]) > limit
            if axis == 0:
                beyond &= np.abs(ball[:, 1]) > GOAL_HALF_WIDTH - BALL_RADIUS
            if beyond.any():
                ball[beyond, axis] = np.sign(ball[beyond, axis]) * limit
                velocity[beyond, axis] *= -WALL_RESTITUTION
        self.ball_position = ball
        self.ball_velocity = velocity
        self.velocity *= AGENT_DAMPING

    def _reward_touches(self, new_touch: np.ndarray) -> None:
        rewarded = new_touch & (self.ball_touch != 0.0)
        if not rewarded.any():
            return
        for team, batch in enumerate(self.teams):
            for index in range(2):
                fields = np.flatnonzero(rewarded[:, 2 * team + index])
                if fields.size:
                    batch.add_reward(
                        2 * fields + index, 0.2 * self.ball_touch[fields, 2 * team + index]
                    )

    # ---- heuristic ---------------------------------------------------------------------------

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Player 0 gets behind the ball and dribbles it at the goal; player 1 guards the goal."""
        team = batch.spec.team_id
        fields = slots // 2
        index = slots % 2
        players = 2 * team + index
        me = self.position[fields, players]
        ball = self.ball_position[fields]
        attack = 1.0 if team == BLUE else -1.0
        goal = np.array([attack * HALF_LENGTH, 0.0])
        own_goal = -goal
        to_goal = goal - ball
        to_goal /= np.maximum(np.linalg.norm(to_goal, axis=1, keepdims=True), 1e-9)
        offset = me - ball
        behind = np.einsum("ij,ij->i", offset, to_goal) < -0.3
        across = np.abs(to_goal[:, 0] * offset[:, 1] - to_goal[:, 1] * offset[:, 0]) < 0.8
        side = np.stack([-to_goal[:, 1], to_goal[:, 0]], axis=1)
        side *= np.where(np.einsum("ij,ij->i", offset, side) >= 0.0, 1.0, -1.0)[:, None]
        chase = np.where(
            (behind & across)[:, None],
            ball + to_goal,
            np.where(
                behind[:, None],
                ball - 1.5 * to_goal,
                ball - 1.5 * to_goal + 1.5 * side,
            ),
        )
        guard = own_goal + 0.25 * (ball - own_goal)
        target = np.where((index == 0)[:, None], chase, guard)
        wanted = target - me
        distance = np.linalg.norm(wanted, axis=1)
        angle = np.arctan2(wanted[:, 1], wanted[:, 0]) - self.heading[fields, players]
        angle = (angle + np.pi) % (2.0 * np.pi) - np.pi
        turn = np.where(np.abs(angle) < np.radians(10.0), 0, np.where(angle > 0.0, 1, 2))
        forward = np.where((np.abs(angle) < np.radians(60.0)) & (distance > 0.4), 1, 0)
        actions = np.stack([forward, np.zeros_like(forward), turn], axis=1).astype(np.int32)
        return np.zeros((slots.size, 0), np.float32), actions
