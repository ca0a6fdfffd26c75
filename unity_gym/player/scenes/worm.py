"""Worm: a four-segment worm crawls towards a target (ML-Agents' ``Worm`` scene), on MuJoCo.

Facts followed (ML-Agents' ``WormAgent.cs``, ``JointDriveController.cs``,
``OrientationCubeController.cs``, ``TargetController.cs``, the prefabs ``Worm.prefab``,
``PlatformWormDynamicTarget.prefab``, ``DynamicTargetPlatform.prefab``, ``DynamicTarget.prefab``
and the scene ``Worm.unity``): behavior ``Worm?team=0``, 10 areas with one agent each, one vector
sensor ``VectorSensor_size64`` (64,), 9 continuous actions, a DecisionRequester of period 5
*without* actions between decisions, MaxStep 5000 (scene option ``max_step``), Unity's fixed
timestep 0.01333 s and gravity 9.81 x 1.5 (the scene's settings object).

Body (``Worm.prefab``, Unity's coordinates: y up, z forward; the root 1.65 above the floor):
segment 0 (the head) is a capsule of radius 0.37 and height 2 along z; segments 1, 2 and 3 are
capsules of radius 0.33, 0.28, 0.26 and height 1.5, 1.48, 1.46 along their local y, which is
turned 90 degrees about x so that they lie behind the head (centres 1.3163, 2.441, 3.557 behind
it); every segment weighs 10. Segments 0, 1 and 2 carry a ConfigurableJoint to the next one with
two free angles (about x, the pitch, in -60..60 degrees and about the joint's y, the yaw, in
-60..60; z locked), anchored where the two capsules meet. The head's ``mouth`` (tag ``agent``) is
a sphere of radius 0.31 at the head's front.

Actions (``WormAgent.OnActionReceived`` through ``JointDriveController``): actions 0-5 are the
(pitch, yaw) targets of the joints of segments 0, 1, 2, each ``a`` mapped to ``60 a`` degrees
(``lerp(low, high, (a + 1) / 2)``); actions 6-8 are the joints' strengths: the slerp drive gets
spring 3000, damper 30 and a maximum force ``(a + 1) / 2 * 10000``. Before a joint's first action
its drive is the prefab's (spring 1, damper 1, no force limit).

Observations (``CollectObservations``, in this order, 64 floats), in the space of the
*orientation cube*, which sits on the head and is turned (about y only) towards the target
(``OrientationCubeController``; updated every FixedUpdate and at episode begin): the head's
height above the floor / 10 (a downward ray of length 10; 1 when nothing is hit), the goal
velocity (0, 0, 10), the angle between the cube's and the head's rotations / 180, the rotation
from the head's forward to the cube's forward (x, y, z, w), the target's position in the cube's
space; then per segment 0-3: ground contact (1/0), velocity and angular velocity in the cube's
space, and for segments 1-3 the position relative to the head in the cube's space and the
segment's rotation relative to its parent transform (the previous segment; x, y, z, w), and for
segments 0-2 (those with a joint) the joint's current strength / 10000 (0 until its first
action).

Rewards (``FixedUpdate``, every Academy step): the product of the speed match
``(1 - (min(|v_head - 10 f|, 10) / 10)^2)^2`` (``f`` the cube's forward) and the look-at reward
``1 - angle / 180`` when the angle between the cube's and the head's rotations is below 30
degrees, else 0. Touching the target gives no reward (``TouchedTarget`` is never wired: the target
is spawned at run time and its prefab's collision events are empty); it only moves the target.

Episodes: the body is put back to its starting pose with zero velocities and the head turned
to a random yaw in [0, 360); the episode ends (``EndEpisode``) if the head is 2 below its start
height, and is interrupted at MaxStep. The target (``DynamicTarget.prefab``: a 1 x 1 x 1 cube,
``spawnRadius`` 40, ``respawnIfTouched``) is spawned once per agent at the worm's start and moved
to ``start + insideUnitSphere * 40`` (height kept) at once and whenever the mouth touches it; it
is not moved at episode begin. The area is a 100 x 100 floor with walls at +-50.

Physics: MuJoCo (optional extra ``unity-gym[mujoco]``), one model holding every area's worm
(areas 200 apart), stepped together: :data:`PHYSICS_SUBSTEPS` (3) steps of ``0.01333 / 3`` s
per Academy step with the ``implicit`` integrator (``implicitfast`` and the semi-implicit Euler
blow up under the stiff drives), friction 0.6 (Unity's default material),
each joint as two hinges (pitch then yaw) whose position servo (``kp`` = spring, ``kv`` =
damper, torque clamped to the drive's maximum force) stands in for PhysX's slerp drive. MuJoCo's
numbers are Unity's numbers (y up): the simulated world is the mirror image of Unity's, which
leaves the dynamics and every observed number as Unity computes them.

Simplified or estimated: the joint drives are per-hinge PD servos rather than a slerp drive on
the combined rotation, and the sign of the joint targets is the player's (the observations and
actions are consistent with each other, not checked against PhysX); ``OnEpisodeBegin`` turns only
the head in Unity (PhysX then pulls the body after it) while here the whole worm turns about the
head; the eyes (two 1 kg spheres on springs) and the mouth's 1 kg are left out (the mouth is a
massless collision sphere); the target is a fixed cube resting on the floor that the worm does
not collide with (Unity's is a 1 kg rigid body that a random torque tumbles every 10 s); the
ground check counts contacts with the floor only; the downward ray ignores the worm's own
segments; ``maxAngularVelocity`` 30 is not enforced; the orientation cube's scale is taken as 1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..render import BLUE, Colour
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .articulated import (
    TARGET_HALF,
    ArticulatedScene,
    angle_degrees,
    conjugate,
    from_to,
    into_cube,
    multiply,
    rotate,
    scene_mjcf,
    speed_match,
    yaw_forward,
    yaw_quaternion,
)
from .base import MaxStepOption
from .registry import register_scene

__all__ = [
    "ANCHORS",
    "FIXED_DELTA_TIME",
    "GRAVITY",
    "JOINT_LIMIT_DEGREES",
    "MAX_JOINT_FORCE",
    "MAX_WALKING_SPEED",
    "SEGMENT_COUNT",
    "START_HEIGHT",
    "WormScene",
    "worm_model_xml",
]

MAX_STEP = 5000
FIXED_DELTA_TIME = 0.01333
#: Unity's 9.81 times the scene's ``gravityMultiplier`` 1.5.
GRAVITY = 9.81 * 1.5
PHYSICS_SUBSTEPS = 3
INTEGRATOR = "implicit"
MAX_WALKING_SPEED = 10.0
SEGMENT_COUNT = 4
JOINT_COUNT = 3
#: The worm's root above the floor (``Worm.prefab`` in ``PlatformWormDynamicTarget.prefab``).
START_HEIGHT = 1.65
#: Segment centres (x, y, z) relative to the root, behind one another along -z.
SEGMENT_OFFSETS = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, -1.3163], [0.0, 0.0, -2.441],
                            [0.0, 0.0, -3.557]])  # fmt: skip
SEGMENT_RADII = (0.37, 0.33, 0.28, 0.26)
SEGMENT_HEIGHTS = (2.0, 1.5, 1.48, 1.46)
SEGMENT_MASS = 10.0
#: Where segment ``s + 1`` (s = 0, 1, 2) hangs on segment ``s``: the joint's anchor in segment
#: ``s + 1``'s frame (its local y points forward, towards the head).
ANCHORS = (0.5163, 0.5747, 0.566)
JOINT_LIMIT_DEGREES = 60.0
MAX_JOINT_SPRING = 3000.0
JOINT_DAMPEN = 30.0
MAX_JOINT_FORCE = 10000.0
#: The prefab's slerp drive before the first action: spring 1, damper 1, no force limit.
PREFAB_SPRING = 1.0
PREFAB_DAMPER = 1.0
UNLIMITED_FORCE = 1.0e12
FRICTION = 0.6
MOUTH_CENTRE = np.array([-0.02, -0.034, 0.986])
MOUTH_RADIUS = 0.31
ARENA_HALF = 50.0
WALL_HEIGHT = 8.0
AREA_SPACING = 200.0
RAY_LENGTH = 10.0
FELL_DEPTH = 2.0
FACING_LIMIT_DEGREES = 30.0
_SEGMENT_COLOURS: tuple[Colour, ...] = (
    BLUE,
    (0.35, 0.55, 0.9),
    (0.45, 0.5, 0.85),
    (0.5, 0.45, 0.8),
)


def _segment_body(index: int, area: int) -> str:
    """MJCF of segment ``index`` (and the ones behind it) of area ``area``'s worm."""
    radius = SEGMENT_RADII[index]
    half = 0.5 * SEGMENT_HEIGHTS[index] - radius
    name = f"a{area}s{index}"
    if index == 0:
        geom = (
            f'<geom name="{name}" type="capsule" size="{radius}" fromto="0 0 {-half} 0 0 {half}" '
            f'mass="{SEGMENT_MASS}"/>'
            f'<geom name="a{area}mouth" type="sphere" size="{MOUTH_RADIUS}" '
            f'pos="{MOUTH_CENTRE[0]} {MOUTH_CENTRE[1]} {MOUTH_CENTRE[2]}" density="0"/>'
        )
        head = f'<freejoint name="a{area}root"/>'
    else:
        geom = (
            f'<geom name="{name}" type="capsule" size="{radius}" fromto="0 {-half} 0 0 {half} 0" '
            f'mass="{SEGMENT_MASS}"/>'
        )
        anchor = ANCHORS[index - 1]
        limit = np.radians(JOINT_LIMIT_DEGREES)
        head = "".join(
            f'<joint name="a{area}j{index - 1}{axis_name}" type="hinge" pos="0 {anchor} 0" '
            f'axis="{axis}" range="{-limit} {limit}"/>'
            for axis_name, axis in (("pitch", "1 0 0"), ("yaw", "0 0 -1"))
        )
    inner = _segment_body(index + 1, area) if index + 1 < SEGMENT_COUNT else ""
    if index == 0:
        pos = f"{area * AREA_SPACING} {START_HEIGHT} 0"
        quat = "1 0 0 0"
    else:
        # Segment 1 sits 1.3163 behind the head, turned 90 degrees about x; the others follow
        # their parent unturned, along the parent's -y.
        if index == 1:
            pos = f"0 0 {SEGMENT_OFFSETS[1, 2]}"
            quat = f"{np.sqrt(0.5)} {np.sqrt(0.5)} 0 0"
        else:
            step = SEGMENT_OFFSETS[index, 2] - SEGMENT_OFFSETS[index - 1, 2]
            pos = f"0 {step} 0"
            quat = "1 0 0 0"
    return f'<body name="{name}" pos="{pos}" quat="{quat}">{head}{geom}{inner}</body>'


def worm_model_xml(area_count: int) -> str:
    """The MJCF model of ``area_count`` areas: a shared floor (normal +y), each area's four walls
    and worm (areas :data:`AREA_SPACING` apart along x), a position servo per hinge."""
    timestep = FIXED_DELTA_TIME / PHYSICS_SUBSTEPS
    worms = "".join(_segment_body(0, area) for area in range(area_count))
    actuators = "".join(
        f'<position name="a{area}j{joint}{axis}" joint="a{area}j{joint}{axis}" '
        f'kp="{PREFAB_SPRING}" kv="{PREFAB_DAMPER}" forcelimited="true" '
        f'forcerange="{-UNLIMITED_FORCE} {UNLIMITED_FORCE}"/>'
        for area in range(area_count)
        for joint in range(JOINT_COUNT)
        for axis in ("pitch", "yaw")
    )
    return scene_mjcf(
        "worm",
        area_count,
        spacing=AREA_SPACING,
        half=ARENA_HALF,
        wall_height=WALL_HEIGHT,
        timestep=timestep,
        gravity=GRAVITY,
        integrator=INTEGRATOR,
        friction=FRICTION,
        bodies=worms,
        actuators=actuators,
    )


@register_scene
class WormScene(ArticulatedScene):
    """Crawl towards a target with a four-segment worm (MuJoCo physics); one agent per area."""

    name = "Worm"
    summary = "a 4-segment worm crawls to a target (MuJoCo; continuous 9, obs 64, 10 agents)"
    default_area_count = 10
    fixed_delta_time = FIXED_DELTA_TIME
    option_specs = (MaxStepOption.option(MAX_STEP),)

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Worm?team=0``: obs (64,), continuous 9, period 5 without actions between
        decisions, max step 5000 (option ``max_step``)."""
        return [
            BehaviorSpec(
                name="Worm",
                sensors=(SensorSpec("VectorSensor_size64", (64,)),),
                action_spec=ActionSpec(continuous_size=9),
                decision=DecisionSettings(period=5, take_actions_between_decisions=False),
                max_step=self.max_step,
            )
        ]

    # ---- set-up ------------------------------------------------------------------------------

    area_spacing = AREA_SPACING
    arena_half = ARENA_HALF
    physics_substeps = PHYSICS_SUBSTEPS
    start_height = START_HEIGHT

    def model_xml(self, area_count: int) -> str:
        """:func:`worm_model_xml`."""
        return worm_model_xml(area_count)

    def rig_names(self, area: int) -> tuple[list[str], list[str]]:
        """The segments (head first) and the pitch and yaw hinge of each joint."""
        segments = [f"a{area}s{s}" for s in range(SEGMENT_COUNT)]
        hinges = [f"a{area}j{j}{axis}" for j in range(JOINT_COUNT) for axis in ("pitch", "yaw")]
        return segments, hinges

    def setup(self, context: SceneContext) -> None:
        """Build the MuJoCo model of every area and the per-area state.

        Raises:
            PlayerError: if MuJoCo is not installed.
        """
        super().setup(context)
        geom = self._mj.mjtObj.mjOBJ_GEOM
        for a in range(context.area_count):  # the mouth counts as the head in the ground check
            self.rig.geom_part[self._mj.mj_name2id(self.model, geom, f"a{a}mouth")] = (a, 0)
        #: Joint strengths (Unity's ``currentStrength``) and the drive each joint has.
        self.strength = np.zeros((context.area_count, JOINT_COUNT))
        self._refresh()

    # ---- episode -----------------------------------------------------------------------------

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """The starting pose, zero velocities, the worm turned to a random yaw about its head."""
        self._reset_poses(slots, np.radians(self.ctx.rng.uniform(0.0, 360.0, slots.size)))
        self._refresh()
        self.touching[slots] = False
        self._update_cubes(slots)

    # ---- observations ------------------------------------------------------------------------

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """The 64 floats of ``CollectObservations`` (see the module documentation)."""
        k = slots.size
        yaw = self.cube_yaw[slots]
        cube_rotation = yaw_quaternion(yaw)
        position = self.position[slots]
        rotation = self.rotation[slots]
        head = position[:, 0]
        obs = np.empty((k, 64), dtype=np.float32)
        height = head[:, 1] - self.origin[slots, 1]
        obs[:, 0] = np.where((height >= 0.0) & (height <= RAY_LENGTH), height / RAY_LENGTH, 1.0)
        obs[:, 1:4] = [0.0, 0.0, MAX_WALKING_SPEED]
        obs[:, 4] = angle_degrees(cube_rotation, rotation[:, 0]) / 180.0
        forward = rotate(rotation[:, 0], np.array([0.0, 0.0, 1.0]))
        cube_forward = yaw_forward(yaw)
        obs[:, 5:9] = from_to(forward, cube_forward)
        obs[:, 9:12] = into_cube(yaw, self.target[slots] - self.cube_position[slots])
        velocity = into_cube(yaw, self.velocity[slots])
        angular = into_cube(yaw, self.angular_velocity[slots])
        relative = into_cube(yaw, position - head[:, None, :])
        local = multiply(conjugate(rotation[:, :-1]), rotation[:, 1:])
        strength = self.strength[slots] / MAX_JOINT_FORCE
        touching = self.touching[slots]
        column = 12
        for segment in range(SEGMENT_COUNT):
            obs[:, column] = touching[:, segment]
            obs[:, column + 1 : column + 4] = velocity[:, segment]
            obs[:, column + 4 : column + 7] = angular[:, segment]
            column += 7
            if segment > 0:
                obs[:, column : column + 3] = relative[:, segment]
                obs[:, column + 3 : column + 7] = local[:, segment - 1]
                column += 7
            if segment < JOINT_COUNT:
                obs[:, column] = strength[:, segment]
                column += 1
        return [obs]

    # ---- actions and physics -----------------------------------------------------------------

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Joint targets (actions 0-5) and strengths (6-8); end the episode of a fallen worm."""
        actions = np.clip(continuous[:, :9].astype(np.float64), -1.0, 1.0)
        targets = np.radians(JOINT_LIMIT_DEGREES) * actions[:, :6]
        strength = (actions[:, 6:9] + 1.0) * 0.5 * MAX_JOINT_FORCE
        self.strength[slots] = strength
        model = self.model
        # Six actuators per area (pitch and yaw of 3 joints), all areas' rows at once.
        rows = (6 * slots[:, None] + np.arange(6)).ravel()
        limits = np.repeat(strength, 2, axis=1).ravel()
        self.data.ctrl[rows] = targets.ravel()
        model.actuator_gainprm[rows, 0] = MAX_JOINT_SPRING
        model.actuator_biasprm[rows, 1] = -MAX_JOINT_SPRING
        model.actuator_biasprm[rows, 2] = -JOINT_DAMPEN
        model.actuator_forcerange[rows, 0] = -limits
        model.actuator_forcerange[rows, 1] = limits
        fell = self.position[slots, 0, 1] < self.origin[slots, 1] + START_HEIGHT - FELL_DEPTH
        if fell.any():
            batch.end_episode(slots[fell])

    def after_academy_step(self) -> None:
        """``FixedUpdate`` (cube update and reward), then the physics step, the ground contacts
        and the target touches."""
        every = slice(None)
        self._update_cubes(every)
        yaw = self.cube_yaw
        matching = speed_match(self.velocity[:, 0], MAX_WALKING_SPEED, yaw_forward(yaw))
        angle = angle_degrees(yaw_quaternion(yaw), self.rotation[:, 0])
        facing = np.where(angle < FACING_LIMIT_DEGREES, 1.0 - angle / 180.0, 0.0)
        self.ctx.batch("Worm").add_reward(np.arange(yaw.size), matching * facing)
        self._step_physics()
        self._touch_targets()

    def _touch_targets(self) -> None:
        """Move the targets that a mouth touches (``respawnIfTouched``)."""
        mouth = self.position[:, 0] + rotate(self.rotation[:, 0], MOUTH_CENTRE)
        offset = mouth - self.target
        outside = np.maximum(np.abs(offset) - TARGET_HALF, 0.0)
        touched = np.einsum("ij,ij->i", outside, outside) <= MOUTH_RADIUS**2
        for area in np.flatnonzero(touched).tolist():
            self.targets_reached += 1
            self._move_target(int(area))

    # ---- heuristic ---------------------------------------------------------------------------

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """A crawling gait: a wave of pitch travelling from head to tail at full strength, with
        the yaw bent to turn the head towards the target."""
        k = slots.size
        time = batch.step_count[slots] * self.fixed_delta_time
        phase = 2.0 * np.pi * GAIT_FREQUENCY * time
        actions = np.zeros((k, 9), dtype=np.float32)
        error = self._turn_to_target(slots)
        steer = np.clip(error / np.radians(45.0), -1.0, 1.0) * STEER_SIGN
        for joint in range(JOINT_COUNT):
            actions[:, 2 * joint] = GAIT_AMPLITUDES[joint] * np.sin(phase - joint * GAIT_LAG)
            actions[:, 2 * joint + 1] = steer * STEER_SHARES[joint]
        actions[:, 6:9] = 1.0
        return actions, np.zeros((k, 0), np.int32)

    # ---- pictures ----------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """From above, around the worm: the floor and walls, the target (orange), the cube's
        direction to it (green) and the four segments (the head brightest)."""
        canvas = self._view_from_above(area, size)
        axes = (np.array([0.0, 0.0, 1.0]), *([np.array([0.0, 1.0, 0.0])] * 3))
        for segment in reversed(range(SEGMENT_COUNT)):
            centre = self.position[area, segment]
            axis = rotate(self.rotation[area, segment], axes[segment])
            half = 0.5 * SEGMENT_HEIGHTS[segment] - SEGMENT_RADII[segment]
            ends = np.concatenate([(centre - half * axis)[[0, 2]], (centre + half * axis)[[0, 2]]])
            width = canvas.pixels(2.0 * SEGMENT_RADII[segment])
            canvas.segments(ends, _SEGMENT_COLOURS[segment], width=width)
            for end in (ends[:2], ends[2:]):
                canvas.circle(end, SEGMENT_RADII[segment], _SEGMENT_COLOURS[segment])
        mouth = self.position[area, 0] + rotate(self.rotation[area, 0], MOUTH_CENTRE)
        canvas.circle(mouth[[0, 2]], 0.12, (1.0, 1.0, 1.0))
        return canvas.picture()


#: The heuristic's gait: waves per second, pitch amplitude per joint (the head's joint kept
#: straight), the phase lag between joints, and how much each joint's yaw steers.
GAIT_FREQUENCY = 1.5
GAIT_AMPLITUDES = (0.0, 1.0, 1.0)
GAIT_LAG = np.pi / 4.0
STEER_SHARES = (0.0, 1.0, 1.0)
STEER_SIGN = 1.0
