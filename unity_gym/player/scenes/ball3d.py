"""3DBall: each agent tilts a platform to keep a ball on it (ML-Agents' ``3DBall`` scene).

Behavior ``3DBall?team=0``, 12 areas with one agent each, observation ``VectorSensor_size8``:
platform rotation z and x (quaternion components ``sin(angle / 2)``), ball position relative to
the platform (x, y, z) and ball velocity (x, y, z). Two continuous actions rotate the platform
about z and x by up to 2 degrees per step; tilt is clamped to +-25 degrees. Decision period 5 with
actions between decisions, max step 5000. Every executed action *sets* the reward to 0.1; a ball
that falls (more than 3 units off-centre or 2 below) gives -1 and ends the episode.

Physics (simpler than PhysX): the ball drops from 4 units above the platform, lands on it and
rolls down the slope with the acceleration of a solid sphere (5/7 g sin(tilt)), slowed by rolling
resistance that decreases with its mass; past the edge (2.5) it falls. While it rests on the
platform its relative height is exactly ``0.25 + 0.5 * scale`` (platform half-thickness plus ball
radius). Environment parameters ``mass`` (1), ``gravity`` (9.81) and ``scale`` (1) are read at each
episode begin, one read per agent.

:meth:`Ball3DScene.render` draws the areas with :mod:`unity_gym.player.render` (the platform as
a 5 x 0.5 x 5 box, the ball as a sphere of radius ``0.5 * scale``) from the camera of
ML-Agents' ``Visual3DBall`` prefab: 7 above and 8 behind the platform, pitched 30 degrees down,
vertical field of view 60. :meth:`Ball3DScene.draw` (videos) uses a closer camera.
``3DBallHard`` and ``Visual3DBall`` (modules ``ball3d_hard`` and
``visual3dball``) reuse this scene's physics, rewards and episode ends.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..render import BACKGROUND, Camera, Material, render_box_and_sphere, rotation_zx
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .base import Scene
from .registry import register_scene

__all__ = ["AGENT_CAMERA", "VIEW_CAMERA", "Ball3DScene"]

PLATFORM_HALF_WIDTH = 2.5
PLATFORM_HALF_THICKNESS = 0.25
MAX_TILT_DEGREES = 25.0
DEGREES_PER_ACTION = 2.0
DROP_HEIGHT = 4.0
ROLLING_RESISTANCE = 0.2  # deceleration (units/s^2) of a ball of mass 1
_SLOPE_SIGN = np.array([-1.0, 1.0])
_FELL_REWARD = np.float32(-1.0)
_ALIVE_REWARD = np.float32(0.1)

#: The camera of ML-Agents' ``Visual3DBall`` prefab, relative to the platform's centre: local
#: position (0, 7, -8), rotation 30 degrees about x, field of view 60; 84 x 84 pixels as its
#: camera sensor.
AGENT_CAMERA = Camera(
    position=(0.0, 7.0, -8.0), pitch_degrees=30.0, fov_degrees=60.0, width=84, height=84
)
#: The camera of :meth:`Ball3DScene.draw` (for people): a little closer than the agent's and
#: pitched towards the platform's centre, so that the platform fills the picture and a ball
#: dropped from 4 above is still seen; the camera's colours on the pictures' grey.
VIEW_CAMERA = Camera(
    position=(0.0, 6.0, -7.0), pitch_degrees=36.0, fov_degrees=56.0, width=320, height=240
)
_VIEW = Material(background=BACKGROUND)


@register_scene
class Ball3DScene(Scene):
    """Balance a ball on a tilting platform; one agent per area."""

    name = "3DBall"
    summary = "balance a ball on a tilting platform (continuous 2, obs 8, 12 agents)"
    default_area_count = 12

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``3DBall?team=0``: obs (8,), continuous 2, period 5, max step 5000."""
        return [
            BehaviorSpec(
                name="3DBall",
                sensors=(SensorSpec("VectorSensor_size8", (8,)),),
                action_spec=ActionSpec(continuous_size=2),
                decision=DecisionSettings(period=5, take_actions_between_decisions=True),
                max_step=5000,
            )
        ]

    def setup(self, context: SceneContext) -> None:
        """Allocate per-area platform and ball state."""
        super().setup(context)
        n = self.ctx.area_count
        self.tilt = np.zeros((n, 2))  # degrees about z, about x
        self.planar = np.zeros((n, 2))  # ball x, z relative to the platform centre
        self.height = np.zeros(n)  # ball centre above the platform centre
        self.planar_velocity = np.zeros((n, 2))
        self.vertical_velocity = np.zeros(n)
        self.on_platform = np.zeros(n, dtype=bool)
        self.mass = np.ones(n)
        self.gravity = np.full(n, 9.81)
        self.scale = np.ones(n)
        self._rest = np.full(n, PLATFORM_HALF_THICKNESS + 0.5)
        self._signed_slope_gain = np.zeros((n, 2))  # 5/7 g dt, times -1 (about z) and +1
        self._resistance = np.zeros(n)
        self._rest_low = self._rest - 0.5  # below this height the ball has passed the platform
        # Scratch arrays of after_academy_step.
        self._rolled = np.zeros((n, 2))
        self._kept = np.zeros(n)
        self._height_step = np.zeros(n)

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """Random tilt in +-10 degrees, ball 4 above a random point, parameters re-read."""
        k = slots.size
        rng = self.ctx.rng
        self.tilt[slots] = rng.uniform(-10.0, 10.0, size=(k, 2))
        self.planar[slots, 0] = rng.uniform(-1.5, 1.5, size=k)
        self.planar[slots, 1] = rng.uniform(-1.5, 1.5, size=k)
        self.height[slots] = DROP_HEIGHT
        self.planar_velocity[slots] = 0.0
        self.vertical_velocity[slots] = 0.0
        self.on_platform[slots] = False
        params = self.ctx.parameters
        self.mass[slots] = np.maximum(params.read_many("mass", 1.0, k), 1e-3)
        self.gravity[slots] = params.read_many("gravity", 9.81, k)
        self.scale[slots] = params.read_many("scale", 1.0, k)
        dt = self.fixed_delta_time
        self._rest[slots] = PLATFORM_HALF_THICKNESS + 0.5 * self.scale[slots]
        self._signed_slope_gain[slots] = ((5.0 / 7.0) * dt * self.gravity[slots])[:, None]
        self._signed_slope_gain[slots] *= _SLOPE_SIGN
        self._rest_low[slots] = self._rest[slots] - 0.5
        self._resistance[slots] = ROLLING_RESISTANCE * dt / self.mass[slots]

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """``[rot z, rot x, ball dx, dy, dz, vx, vy, vz]``."""
        obs = np.empty((slots.size, 8), dtype=np.float32)
        obs[:, 0:2] = np.sin(np.radians(self.tilt[slots]) / 2.0)
        obs[:, 2:5:2] = self.planar[slots]
        obs[:, 3] = self.height[slots]
        obs[:, 5:8:2] = self.planar_velocity[slots]
        obs[:, 6] = self.vertical_velocity[slots]
        return [obs]

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Tilt the platform, then reward 0.1 or end the episode with -1 if the ball fell."""
        # Every area at once (the usual case: slots are 0..n-1) works on the arrays in place;
        # the arithmetic is the same either way.
        every = slots.size == self.tilt.shape[0]
        tilt = self.tilt if every else self.tilt[slots]
        step = np.minimum(continuous[:, :2], 1.0)
        np.maximum(step, -1.0, out=step)
        step *= DEGREES_PER_ACTION
        tilt += step
        np.minimum(tilt, MAX_TILT_DEGREES, out=tilt)
        np.maximum(tilt, -MAX_TILT_DEGREES, out=tilt)
        if every:
            height, planar = self.height, self.planar
        else:
            self.tilt[slots] = tilt
            height, planar = self.height[slots], self.planar[slots]
        off = np.abs(planar) > 3.0
        fell = (height < -2.0) | off[:, 0] | off[:, 1]
        batch.set_reward(slots, np.where(fell, _FELL_REWARD, _ALIVE_REWARD))
        if np.count_nonzero(fell):
            batch.end_episode(slots[fell])

    def after_academy_step(self) -> None:
        """Advance every ball by one fixed timestep (rolling on the platform, or flying).

        Written with few numpy calls on preallocated arrays (12 areas make each call's overhead,
        not its arithmetic, the cost); the arithmetic is the same as the formulas say.
        """
        dt = self.fixed_delta_time
        rolling = self.on_platform
        # Rolling: a solid sphere accelerates with 5/7 g sin(tilt) (towards -x for a positive
        # z tilt, +z for a positive x tilt), minus rolling resistance. The sign is folded into
        # the gain: (s * g) * -1 and s * (g * -1) round to the same value.
        rolled = np.radians(self.tilt, out=self._rolled)
        np.sin(rolled, out=rolled)
        rolled *= self._signed_slope_gain
        rolled += self.planar_velocity
        speed = np.sqrt(np.einsum("ij,ij->i", rolled, rolled))
        kept = np.subtract(speed, self._resistance, out=self._kept)
        np.maximum(kept, 0.0, out=kept)
        np.maximum(speed, 1e-12, out=speed)
        kept /= speed
        rolled *= kept[:, None]
        if rolling.all():
            self._roll_every_ball(rolled)
            return
        planar_velocity = np.where(rolling[:, None], rolled, self.planar_velocity)
        vertical = self.gravity * dt
        np.subtract(self.vertical_velocity, vertical, out=vertical)
        vertical[rolling] = 0.0
        step = planar_velocity * dt
        self.planar += step
        height = np.multiply(vertical, dt, out=self._height_step)
        height += self.height
        rest = self._rest
        inside = np.abs(self.planar, out=step) <= PLATFORM_HALF_WIDTH
        inside = inside[:, 0] & inside[:, 1]
        lands = (vertical <= 0.0) & (height <= rest)
        lands &= height > self._rest_low
        lands &= inside
        landed = rolling & inside
        landed |= lands
        self.height = np.where(landed, rest, height)
        vertical[landed] = 0.0
        self.vertical_velocity = vertical
        self.planar_velocity = planar_velocity
        self.on_platform = landed

    def _roll_every_ball(self, rolled: np.ndarray) -> None:
        """The rest of :meth:`after_academy_step` when every ball rolls (the usual case once
        the balls have landed), given the rolled velocities: the general branch's values, bit
        for bit, with half the numpy calls. A rolling ball has no vertical velocity, so its
        height is ``height + 0.0``; it lands where it is inside the platform (a landing ball is
        inside too), so what stays on the platform is what is inside."""
        dt = self.fixed_delta_time
        planar_velocity = rolled.copy()
        self.planar += np.multiply(planar_velocity, dt, out=rolled)
        inside = np.abs(self.planar, out=rolled) <= PLATFORM_HALF_WIDTH
        inside = inside[:, 0] & inside[:, 1]
        self.height = np.where(inside, self._rest, self.height + 0.0)
        self.vertical_velocity = np.zeros_like(self.vertical_velocity)
        self.planar_velocity = planar_velocity
        self.on_platform = inside

    def render(
        self, areas: np.ndarray, camera: Camera = AGENT_CAMERA, material: Material | None = None
    ) -> np.ndarray:
        """Pictures of ``areas`` (one agent per area): ``(len(areas), H, W, 3)`` uint8 RGB.

        Each picture is taken by ``camera`` placed relative to its area's platform centre; the
        platform is tilted as the agent tilted it and the ball is drawn where it is (also while
        it falls or after it left the platform).
        """
        areas = np.asarray(areas, dtype=np.intp)
        centres = np.empty((areas.size, 3))
        centres[:, 0] = self.planar[areas, 0]
        centres[:, 1] = self.height[areas]
        centres[:, 2] = self.planar[areas, 1]
        return render_box_and_sphere(
            camera,
            rotation_zx(self.tilt[areas, 0], self.tilt[areas, 1]),
            (PLATFORM_HALF_WIDTH, PLATFORM_HALF_THICKNESS, PLATFORM_HALF_WIDTH),
            centres,
            0.5 * self.scale[areas],
            material,
        )

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """The area through :data:`VIEW_CAMERA` (:meth:`render`) at ``size``, on grey."""
        camera = Camera(
            position=VIEW_CAMERA.position,
            pitch_degrees=VIEW_CAMERA.pitch_degrees,
            fov_degrees=VIEW_CAMERA.fov_degrees,
            width=size[0],
            height=size[1],
        )
        return self.render(np.array([area]), camera, _VIEW)[0]

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """A PD controller: tilt so the ball accelerates back towards the centre."""
        return self._pd_actions(observations[0], slots.size)

    @staticmethod
    def _pd_actions(obs: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The PD controller on rows laid out as 3DBall's observation (rotation, position,
        velocity)."""
        tilt_z = np.degrees(2.0 * np.arcsin(np.clip(obs[:, 0], -1.0, 1.0)))
        tilt_x = np.degrees(2.0 * np.arcsin(np.clip(obs[:, 1], -1.0, 1.0)))
        target_z = 4.0 * obs[:, 2] + 6.0 * obs[:, 5]
        target_x = -(4.0 * obs[:, 4] + 6.0 * obs[:, 7])
        actions = np.stack(
            [(target_z - tilt_z) / DEGREES_PER_ACTION, (target_x - tilt_x) / DEGREES_PER_ACTION],
            axis=1,
        )
        return np.clip(actions, -1.0, 1.0).astype(np.float32), np.zeros((count, 0), np.int32)
