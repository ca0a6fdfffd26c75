"""Tennis: two rackets keep a ball in play over a net (ML-Agents' ``Tennis``), as a 2-D side view.

Behaviors ``Tennis?team=0`` (agent A, left half) and ``Tennis?team=1`` (agent B, right half),
18 areas with one agent of each. Observation ``StackingSensor_size3_VectorSensor_size9`` (27,),
three stacked reports of 9 values in the agent's own mirrored frame (x multiplied by -1 for B,
so both see themselves on the negative side): own x, own y, own vx, own vy, ball x, ball y,
ball vx, ball vy (positions relative to the area centre), and the racket tilt as
``sin(tilt / 2)`` (a quaternion component, like Unity's ``rotation.z``). Three continuous actions
(clipped to [-1, 1]): horizontal speed (x 30 units/s, towards the net when positive), jump (when
above 0.5 and standing), racket tilt (x ``angle`` degrees; positive turns the face upwards).
Decision period 5 with actions between, no max step.

Rules (Unity's ``HitWall``): a point is lost by the side whose floor the ball hits on the
service, twice in a row, or right after its own hit; by the side that hits the ball twice in a
row; by the side that hits into the net (before the ball has bounced or been returned) or out
over the opponent's back wall; and by the side whose back wall the ball reaches after a valid
bounce on its floor. The winner's reward is *set* to +1, the loser's to -1, both agents end
their episode, then a new point is served: the ball starts above a random side (8 to 10 units
out) and flies up and outwards, so the receiver must return it before it lands.

Physics (simpler than PhysX): floor at y = -3.5, net at x = 0 up to y = -2, back walls at
x = +-12; rackets are segments of length 2 around the agent, which moves at the commanded speed,
falls with gravity 9.81 and cannot come closer than 1 unit to the net. The ball (radius
``scale / 2``) falls with 15 units/s^2, bounces off the floor with restitution 0.8 and leaves a
racket reflected (restitution 0.5) plus a 12 units/s swing along the racket's normal and a
fifth of the racket's velocity; its speed is clamped as in Unity (|vx| <= 40, vy <= 35). The
ball is advanced in 4 sub-steps per step so that it cannot pass through a racket. Environment
parameters read at each episode begin: ``angle`` (55, the tilt range) and ``scale`` (0.5, the
ball diameter).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..render import BLUE, FLOOR, RED, WALL, WHITE, Canvas
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import Scene
from .registry import register_scene

__all__ = ["TennisScene"]

COURT_HALF = 12.0
FLOOR_Y = -3.5
NET_TOP = -2.0
REST_Y = -1.5
NET_CLEARANCE = 1.0
RACKET_HALF = 1.0
RACKET_THICKNESS = 0.1
MOVE_SPEED = 30.0
JUMP_SPEED = 7.0
AGENT_GRAVITY = 9.81
BALL_GRAVITY = 15.0
FLOOR_RESTITUTION = 0.8
RACKET_RESTITUTION = 0.5
SWING_SPEED = 12.0
RACKET_VELOCITY_SHARE = 0.2
MAX_BALL_VX = 40.0
MAX_BALL_VY = 35.0
SUBSTEPS = 4
SERVE_VX, SERVE_VY = 1.0, 10.0

# Rally state of an area (Unity's HitWall.FloorHit).
SERVICE, UNSET, FLOOR_A, FLOOR_B = 0, 1, 2, 3
NOBODY = -1
#: Side multiplier of agents A (team 0) and B (team 1): B sees a mirrored court.
_SIDE = np.array([1.0, -1.0])


@register_scene
class TennisScene(Scene):
    """Two-player 2-D tennis; one agent per team per area, +-1 per point."""

    name = "Tennis"
    summary = "2-D tennis, one agent per team (stacked obs 27, continuous 3, 36 agents)"
    default_area_count = 18
    fixed_delta_time = 0.02
    draw_size = (320, 176)

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Tennis?team=0`` and ``Tennis?team=1``: obs 9 stacked 3x, continuous 3, period 5."""
        return [
            BehaviorSpec(
                name="Tennis",
                team_id=team,
                sensors=(SensorSpec("VectorSensor_size9", (9,), stack_size=3),),
                action_spec=ActionSpec(continuous_size=3),
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=0,
            )
            for team in (0, 1)
        ]

    def setup(self, context: SceneContext) -> None:
        """Per-area rackets (index 0 = A, 1 = B), ball and rally state."""
        super().setup(context)
        n = context.area_count
        self.teams = (context.batch("Tennis?team=0"), context.batch("Tennis?team=1"))
        self.agent_position = np.zeros((n, 2, 2))
        self.agent_velocity = np.zeros((n, 2, 2))
        self.tilt = np.zeros((n, 2))  # degrees, own frame, positive = face up
        self.tilt_range = np.full((n, 2), 55.0)
        self.ball_position = np.zeros((n, 2))
        self.ball_velocity = np.zeros((n, 2))
        self.ball_radius = np.full(n, 0.25)
        self.last_hitter = np.full(n, NOBODY, dtype=np.int64)
        self.last_floor = np.full(n, SERVICE, dtype=np.int64)
        self.net_passed = np.zeros(n, dtype=bool)
        #: Points won by team 0 and team 1 since start-up (Unity's score boards).
        self.points = np.zeros(2, dtype=np.int64)

    # ---- episodes ----------------------------------------------------------------------------

    def on_environment_reset(self) -> None:
        """Serve in every area."""
        self._serve(np.arange(self.ctx.area_count))

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Back to the baseline (6 to 8 units from the net), still; read ``angle`` and ``scale``."""
        team = batch.spec.team_id
        rng = self.ctx.rng
        params = self.ctx.parameters
        k = slots.size
        self.agent_position[slots, team, 0] = -_SIDE[team] * rng.uniform(6.0, 8.0, size=k)
        self.agent_position[slots, team, 1] = REST_Y
        self.agent_velocity[slots, team] = 0.0
        self.tilt[slots, team] = 0.0
        self.tilt_range[slots, team] = params.read_many("angle", 55.0, k)
        diameter = np.clip(params.read_many("scale", 0.5, k), 0.1, 2.0)
        self.ball_radius[slots] = diameter / 2.0

    def _serve(self, areas: np.ndarray) -> None:
        """Unity's ``MatchReset``: the ball above a random side, flying up and outwards."""
        rng = self.ctx.rng
        k = areas.size
        side = np.where(rng.integers(0, 2, size=k) == 0, -1.0, 1.0)
        self.ball_position[areas, 0] = side * rng.uniform(8.0, 10.0, size=k)
        self.ball_position[areas, 1] = 1.0
        self.ball_velocity[areas, 0] = side * SERVE_VX
        self.ball_velocity[areas, 1] = SERVE_VY
        self.last_hitter[areas] = NOBODY
        self.last_floor[areas] = SERVICE
        self.net_passed[areas] = False

    # ---- observations and actions ------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Own and ball state in the agent's mirrored frame, plus the racket tilt."""
        team = batch.spec.team_id
        side = _SIDE[team]
        obs = np.empty((slots.size, 9), dtype=np.float32)
        obs[:, 0] = side * self.agent_position[slots, team, 0]
        obs[:, 1] = self.agent_position[slots, team, 1]
        obs[:, 2] = side * self.agent_velocity[slots, team, 0]
        obs[:, 3] = self.agent_velocity[slots, team, 1]
        obs[:, 4] = side * self.ball_position[slots, 0]
        obs[:, 5] = self.ball_position[slots, 1]
        obs[:, 6] = side * self.ball_velocity[slots, 0]
        obs[:, 7] = self.ball_velocity[slots, 1]
        obs[:, 8] = np.sin(np.radians(self.tilt[slots, team]) / 2.0)
        return [obs]

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Set the horizontal speed, jump from the floor, tilt the racket."""
        team = batch.spec.team_id
        action = np.clip(continuous[:, :3], -1.0, 1.0)
        standing = self.agent_position[slots, team, 1] <= REST_Y + 1e-6
        jump = (action[:, 1] > 0.5) & standing
        self.agent_velocity[slots, team, 1] = np.where(
            jump, JUMP_SPEED, self.agent_velocity[slots, team, 1]
        )
        self.agent_velocity[slots, team, 0] = _SIDE[team] * MOVE_SPEED * action[:, 0]
        self.tilt[slots, team] = self.tilt_range[slots, team] * action[:, 2]

    # ---- physics and rules -------------------------------------------------------------------

    def after_academy_step(self) -> None:
        """Move rackets and ball, apply the rules; finished points end both episodes."""
        dt = self.fixed_delta_time
        self._move_rackets(dt)
        winner = np.full(self.ctx.area_count, NOBODY, dtype=np.int64)
        sub_dt = dt / SUBSTEPS
        for _ in range(SUBSTEPS):
            live = winner == NOBODY
            if not live.any():
                break
            self._advance_ball(sub_dt, live)
            self._racket_contacts(live, winner)
            self._floor_net_and_walls(winner == NOBODY, winner)
        finished = np.flatnonzero(winner != NOBODY)
        if finished.size:
            self._award(finished, winner[finished])

    def _move_rackets(self, dt: float) -> None:
        velocity = self.agent_velocity
        velocity[:, :, 1] -= AGENT_GRAVITY * dt
        position = self.agent_position + velocity * dt
        landed = position[:, :, 1] <= REST_Y
        position[:, :, 1] = np.where(landed, REST_Y, position[:, :, 1])
        velocity[:, :, 1] = np.where(landed, 0.0, velocity[:, :, 1])
        # Each racket stays on its own half, at least NET_CLEARANCE from the net.
        own = -_SIDE[None, :] * position[:, :, 0]
        own = np.clip(own, NET_CLEARANCE, COURT_HALF - RACKET_THICKNESS)
        position[:, :, 0] = -_SIDE[None, :] * own
        self.agent_position = position

    def _advance_ball(self, dt: float, live: np.ndarray) -> None:
        velocity = self.ball_velocity
        velocity[:, 1] -= BALL_GRAVITY * dt
        np.clip(velocity[:, 0], -MAX_BALL_VX, MAX_BALL_VX, out=velocity[:, 0])
        np.minimum(velocity[:, 1], MAX_BALL_VY, out=velocity[:, 1])
        self.ball_position += np.where(live[:, None], velocity * dt, 0.0)

    def _racket_contacts(self, live: np.ndarray, winner: np.ndarray) -> None:
        offset = self.ball_position[:, None, :] - self.agent_position
        reach = RACKET_HALF + RACKET_THICKNESS + self.ball_radius
        near = live[:, None] & (np.einsum("ntj,ntj->nt", offset, offset) < (reach**2)[:, None])
        if not near.any():
            return
        for team in (0, 1):
            areas = np.flatnonzero(near[:, team] & (winner == NOBODY))
            if not areas.size:
                continue
            tilt = np.radians(self.tilt[areas, team])
            nx, ny = _SIDE[team] * np.cos(tilt), np.sin(tilt)
            ox, oy = offset[areas, team, 0], offset[areas, team, 1]
            # The racket runs along (-ny, nx); the ball's nearest point on it and its distance.
            lengthwise = np.clip(oy * nx - ox * ny, -RACKET_HALF, RACKET_HALF)
            gap_x, gap_y = ox + ny * lengthwise, oy - nx * lengthwise
            close = (
                gap_x * gap_x + gap_y * gap_y < (self.ball_radius[areas] + RACKET_THICKNESS) ** 2
            )
            flip = np.where(ox * nx + oy * ny >= 0.0, 1.0, -1.0)  # the face the ball is on
            fx, fy = nx * flip, ny * flip
            racket_velocity = self.agent_velocity[areas, team]
            incoming = self.ball_velocity[areas]
            closing = (incoming[:, 0] - racket_velocity[:, 0]) * fx + (
                incoming[:, 1] - racket_velocity[:, 1]
            ) * fy
            hit = close & (closing < 0.0)
            if not hit.any():
                continue
            double = hit & (self.last_hitter[areas] == team)
            winner[areas[double]] = 1 - team
            valid = hit & ~double
            hitters = areas[valid]
            if hitters.size:
                f = np.stack([fx[valid], fy[valid]], axis=1)
                normal_speed = np.minimum(np.einsum("ij,ij->i", incoming[valid], f), 0.0)
                bounced = incoming[valid] - (1.0 + RACKET_RESTITUTION) * normal_speed[:, None] * f
                self.ball_velocity[hitters] = (
                    bounced + RACKET_VELOCITY_SHARE * racket_velocity[valid] + SWING_SPEED * f
                )
                returned = (self.last_floor[hitters] != SERVICE) & ~self.net_passed[hitters]
                self.net_passed[hitters[returned]] = True
                self.last_hitter[hitters] = team
                self.last_floor[hitters] = UNSET

    def _floor_net_and_walls(self, live: np.ndarray, winner: np.ndarray) -> None:
        ball, velocity, radius = self.ball_position, self.ball_velocity, self.ball_radius
        reach = np.abs(ball[:, 0])
        candidates = live & (
            (ball[:, 1] - radius <= FLOOR_Y) | (reach < radius) | (reach + radius >= COURT_HALF)
        )
        if not candidates.any():
            return
        side = np.where(ball[:, 0] < 0.0, 0, 1)  # 0 = A's half
        # Floor.
        floor = live & (ball[:, 1] - radius <= FLOOR_Y) & (velocity[:, 1] < 0.0)
        own_floor = np.where(side == 0, FLOOR_A, FLOOR_B)
        lost = floor & (
            (self.last_hitter == side)
            | (self.last_floor == own_floor)
            | (self.last_floor == SERVICE)
        )
        winner[lost] = 1 - side[lost]
        bounce = floor & ~lost
        self.last_floor[bounce] = own_floor[bounce]
        self.net_passed[bounce] = True
        ball[bounce, 1] = FLOOR_Y + radius[bounce]
        velocity[bounce, 1] = -FLOOR_RESTITUTION * velocity[bounce, 1]
        live = live & ~lost
        # Net: a thin wall at x = 0 up to NET_TOP.
        touching = (np.abs(ball[:, 0]) < radius) & (ball[:, 1] - radius < NET_TOP)
        net = live & touching & (ball[:, 0] * velocity[:, 0] < 0.0)
        faulted = net & ~self.net_passed & (self.last_hitter != NOBODY)
        winner[faulted] = 1 - self.last_hitter[faulted]
        rebound = net & ~faulted
        velocity[rebound, 0] *= -0.5
        ball[rebound, 0] = np.sign(ball[rebound, 0] + 1e-9) * radius[rebound]
        live = live & ~faulted
        # Back walls: wall A at -COURT_HALF, wall B at +COURT_HALF.
        for wall, sign in ((0, -1.0), (1, 1.0)):
            reached = live & (sign * ball[:, 0] + radius >= COURT_HALF)
            if not reached.any():
                continue
            floor_hit = FLOOR_A if wall == 0 else FLOOR_B
            wall_side_loses = (self.last_hitter == wall) | (self.last_floor == floor_hit)
            winner[reached] = np.where(wall_side_loses[reached], 1 - wall, wall)

    def _award(self, areas: np.ndarray, winners: np.ndarray) -> None:
        np.add.at(self.points, winners, 1)
        for team, batch in enumerate(self.teams):
            batch.set_reward(areas, np.where(winners == team, np.float32(1.0), np.float32(-1.0)))
        for batch in self.teams:
            batch.end_episode(areas)
        self._serve(areas)

    # ---- heuristic ---------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The court from the side: agent A's racket (blue) on the left, B's (red) on the
        right, the net and the ball."""
        canvas = Canvas(*size, (-COURT_HALF, FLOOR_Y - 0.6, COURT_HALF, 9.0))
        canvas.rectangle((0.0, FLOOR_Y - 0.3), (COURT_HALF, 0.3), FLOOR)
        canvas.segments(
            [[-COURT_HALF, FLOOR_Y, -COURT_HALF, 9.0], [COURT_HALF, FLOOR_Y, COURT_HALF, 9.0]],
            WALL,
            width=2,
        )
        canvas.segments([0.0, FLOOR_Y, 0.0, NET_TOP], WALL, width=3)
        for team, colour in enumerate((BLUE, RED)):
            tilt = np.radians(self.tilt[area, team])
            normal = np.array([_SIDE[team] * np.cos(tilt), np.sin(tilt)])
            along = RACKET_HALF * np.array([-normal[1], normal[0]])
            centre = self.agent_position[area, team]
            canvas.segments(np.concatenate([centre - along, centre + along]), colour, width=4)
        canvas.circle(self.ball_position[area], float(self.ball_radius[area]), WHITE, min_pixels=5)
        return canvas.picture()

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Run under the falling ball, racket tilted 40 to 50 degrees up, from the newest report."""
        obs = observations[0][:, -9:]
        x, ball_x, ball_y = obs[:, 0], obs[:, 4], obs[:, 5]
        ball_vx, ball_vy = obs[:, 6], obs[:, 7]
        hit_height = REST_Y + 0.3
        # When will the ball come down to the hitting height (later root)?
        a, b, c = -0.5 * BALL_GRAVITY, ball_vy, ball_y - hit_height
        root = np.sqrt(np.maximum(b * b - 4.0 * a * c, 0.0))
        t = np.maximum((-b - root) / (2.0 * a), 0.0)
        landing = ball_x + ball_vx * t
        leaving = ball_vx > 0.5
        coming = ~leaving & (landing < -NET_CLEARANCE)
        # Wait under an incoming ball; keep still while the own shot leaves; else go home.
        target = np.where(coming, landing - 0.3, np.where(leaving & (ball_x < 0.0), x, -7.0))
        # An action lasts a decision period (5 steps of up to 0.6 units).
        move = np.clip((target - x) / 3.0, -1.0, 1.0)
        tilt_range = self.tilt_range[slots, batch.spec.team_id]
        # Deep in the court the racket opens up to 50 degrees to clear the net.
        degrees = 40.0 + 10.0 * np.clip((-x - 7.0) / 4.0, 0.0, 1.0)
        tilt = np.clip(degrees / np.maximum(tilt_range, 1e-6), -1.0, 1.0)
        actions = np.stack([move, np.zeros_like(move), tilt], axis=1).astype(np.float32)
        return actions, np.zeros((slots.size, 0), np.int32)
