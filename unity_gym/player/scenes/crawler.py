"""Crawler: a four-legged body crawls towards a target (ML-Agents' ``Crawler`` scene), on MuJoCo.

Facts followed (ML-Agents' ``CrawlerAgent.cs``, ``JointDriveController.cs``, ``GroundContact.cs``,
``OrientationCubeController.cs``, ``TargetController.cs``, the Extensions package's
``RigidBodySensorComponent``/``PhysicsBodySensor``/``RigidBodyPoseExtractor``, the prefabs
``Crawler.prefab``, ``Targets/DynamicTarget.prefab`` and ``DynamicPlatform.prefab``, and the scene
``Crawler.unity``, the dynamic-target crawler that release 21's ``config/ppo/Crawler.yaml``
trains): behavior ``Crawler?team=0``, 10 areas with one agent each (the scene's
``TrainingAreaReplicator``), 20 continuous actions, a DecisionRequester of period 5 *without*
actions between decisions, MaxStep 5000 (scene option ``max_step``), Unity's fixed timestep
0.01333 s and gravity 9.81 x 1.5 (the scene's settings object). Two sensors, in wire order:
``PhysicsBodySensor:Body`` (126,) and ``VectorSensor_size32`` (32,).

Body (``Crawler.prefab``, Unity's coordinates: y up, z forward; the body's centre 1.65 above the
floor): the body is a sphere of radius 0.5 weighing 20. Four upper legs (capsules of radius 0.15
and height 0.95 along their local y, 2 each) lie flat at (+-0.636, -0.15, +-0.636) from the
body's centre, pointing outwards along the diagonals (leg 0 back right, 1 back left, 2 front left,
3 front right); each hangs on the body by a ConfigurableJoint at its inner end with two free
angles, about its x (-60..0 degrees) and about its -z (-20..20). Each lower leg (capsule of
radius 0.15 and height 1.5, 1 each) continues its upper leg (centre 1.08 further out) and hangs on
it by a joint 0.33 out from the upper leg's centre, free about x in 0..150 degrees. Every part is
tagged ``agent``; the body and the upper legs carry a ``GroundContact`` that ends the episode.

Actions (``OnActionReceived`` through ``JointDriveController``): actions 0-7 are the (x, y)
targets of upper legs 0-3, actions 8-11 the x targets of lower legs 0-3, each ``a`` mapped to
``lerp(low, high, (a + 1) / 2)`` of the joint's limits; actions 12-15 are the strengths of upper
legs 0-3 and 16-19 those of lower legs 0-3: the slerp drive gets spring 40000, damper 5000 and a
maximum force ``(a + 1) / 2 * 20000``. Before a joint's first action its drive is the prefab's
(spring 0, damper 0: none).

``VectorSensor_size32`` (``CollectObservations``, in this order), in the space of the
*orientation cube* (on the body, turned about y only towards the target; updated every
FixedUpdate and at episode begin): the distance between the goal velocity ``S f`` (``S`` the
episode's target walking speed, ``f`` the cube's forward) and the average velocity of the nine
parts, that average velocity, the goal velocity (0, 0, S), the rotation from the body's forward
to the cube's forward (x, y, z, w), the target's position, the body's height above the floor / 10
(a downward ray of length 10; 1 when nothing is hit); then per part (body, then upper and lower
leg 0, 1, 2, 3) ground contact (1/0) and, for the legs, the joint's current strength / 20000 (0
until its first action).

``PhysicsBodySensor:Body`` (the prefab's ``RigidBodySensorComponent``: root the body, virtual
root the orientation cube, whose pose is left out; model-space translations and rotations,
local-space rotations and model-space linear velocities): for the nine parts in hierarchy order
(body, upper leg 0, lower leg 0, upper leg 1, ...) their position and rotation in the cube's space
(3 + 4 each, 63), then their velocities in the cube's space (27), then their rotations relative to
their parent (the cube for the body, the body for an upper leg, the upper leg for a lower leg;
36).

Rewards (``FixedUpdate``, every Academy step): the speed match
``(1 - (min(|v - S f|, S) / S)^2)^2`` (``v`` the average velocity of the nine parts) times the
look-at reward ``(f . body forward + 1) / 2``. When the body or an upper leg touches the floor,
the reward since the last decision is *set* to -1 and the episode ends (``GroundContact``).
Touching the target gives no reward (``TouchedTarget`` is never wired: the target is spawned at
run time and its prefab's collision events are empty); it only moves the target.

Episodes: the parts are put back to their starting pose with zero velocities, the crawler turned
to a random yaw in [0, 360), and the target walking speed ``S`` drawn from [0.1, 15); the episode
ends as above and is interrupted at MaxStep. The target (``DynamicTarget.prefab``: a 1 x 1 x 1
cube, ``spawnRadius`` 40, ``respawnIfTouched``) is spawned once per agent at the crawler's start
and moved to ``start + insideUnitSphere * 40`` (height kept) at once and whenever a part touches
it; it is not moved at episode begin. The area is a 100 x 100 floor with walls at +-50.

Physics: MuJoCo (optional extra ``unity-gym[mujoco]``) as in ``Worm`` (see
:mod:`unity_gym.player.scenes.articulated`): one model holding every area's crawler (areas 110
apart, the replicator's spacing), :data:`PHYSICS_SUBSTEPS` steps of ``0.01333 /``
:data:`PHYSICS_SUBSTEPS` s per Academy step with MuJoCo's ``Euler`` integrator (which integrates
joint damping implicitly), friction 0.6, each joint as hinges (the upper legs' swing about -z,
then the bend about x) whose position servo (``kp`` = spring, torque clamped to the drive's
maximum force) and damping (damper x the strength's share of 20000) stand in for PhysX's slerp
drive. MuJoCo's numbers are Unity's numbers (y up).

Simplified or estimated: the joint drives are per-hinge servos rather than a slerp drive on the
combined rotation, and their damper is the hinge's own damping scaled by the strength (PhysX clamps
the spring's and the damper's torque together at the maximum force; a clamped servo with its own
damper blows up in MuJoCo at these stiffnesses); the sign of the bend is the player's choice, such
that an upper leg's range (-60..0) lifts it and a lower leg's range (0..150) bends it down (a
spider's stance; not checked against PhysX); ``OnEpisodeBegin`` turns only the body in Unity (PhysX
then pulls the legs after it) while here the whole crawler turns about the body's centre; the eyes,
mouth and band (no rigid bodies) are left out; the target is a fixed cube resting on the floor that
the crawler does not collide with (Unity's is a 5 kg rigid body), and a part touches it when one of
five points along its axis (the body: its centre) is within the part's radius of the cube; the
ground check counts contacts with the floor only; the downward ray ignores the crawler's own parts;
drag 0.05, ``maxAngularVelocity`` 30 and PhysX's solver iterations are not modelled (under random
actions the drives, up to 20000 N m on a 27 kg crawler, swing parts at tens of m/s and can throw a
crawler several metres up); the orientation cube's scale is taken as 1. Not at hand, so estimated:
release 21's own ``CrawlerAgent.cs`` (the stored copies are older; the observations, actions and
rewards follow the OrientationCube-era code and its close copies, and ``Crawler.prefab`` of
ml-agents commit 23e48a1, whose vector size 32, 20 actions, MaxStep 5000 and drive settings agree),
in particular that ``OnEpisodeBegin`` draws the target walking speed every episode (the prefab
serializes 15); release 21's platform prefab (the replicator's): the crawler's height above the
floor (1.65) and the walls (4 high) are taken from the earlier ``DynamicPlatform.prefab`` (the
crawler 2 above a 1 thick floor). ML-Agents' docs give 172 observations, which is 32 plus the
physics sensor with the virtual root's pose; the pose extractor leaves the root out by default,
hence 126 here.
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
    "ACTUATOR_COUNT",
    "FIXED_DELTA_TIME",
    "GRAVITY",
    "JOINT_DAMPEN",
    "LOWER_X_LIMITS",
    "MAX_JOINT_FORCE",
    "MAX_JOINT_SPRING",
    "MAX_WALKING_SPEED",
    "PART_COUNT",
    "START_HEIGHT",
    "UPPER_X_LIMITS",
    "UPPER_Y_LIMIT",
    "CrawlerScene",
    "crawler_model_xml",
]

MAX_STEP = 5000
FIXED_DELTA_TIME = 0.01333
#: Unity's 9.81 times the scene's ``gravityMultiplier`` 1.5.
GRAVITY = 9.81 * 1.5
PHYSICS_SUBSTEPS = 3
INTEGRATOR = "Euler"
#: ``m_maxWalkingSpeed``; the target walking speed is drawn from [MIN, MAX) every episode.
MAX_WALKING_SPEED = 15.0
MIN_WALKING_SPEED = 0.1
LEG_COUNT = 4
#: Body, then upper and lower leg 0, 1, 2, 3 (``bodyPartsList`` and the hierarchy's order).
PART_COUNT = 1 + 2 * LEG_COUNT
#: Parts whose ``GroundContact`` ends the episode: the body and the upper legs.
FATAL_PARTS = (0, 1, 3, 5, 7)
#: The body's centre above the floor.
START_HEIGHT = 1.65
BODY_RADIUS = 0.5
BODY_MASS = 20.0
#: Upper legs' centres relative to the body's centre and their rotations (x, y, z, w).
UPPER_OFFSETS = np.array([[0.6363961, -0.15, -0.6363963],
                          [-0.6363963, -0.15, -0.6363961],
                          [-0.6363961, -0.15, 0.6363963],
                          [0.6363963, -0.15, 0.6363961]])  # fmt: skip
UPPER_ROTATIONS = np.array([[-0.6532815, -0.27059802, -0.27059802, 0.6532815],
                            [-0.6532815, 0.2705981, 0.2705981, 0.6532815],
                            [-0.27059802, 0.6532815, 0.6532815, 0.27059802],
                            [-0.2705981, -0.6532815, -0.6532815, 0.2705981]])  # fmt: skip
LEG_RADIUS = 0.15
UPPER_HEIGHT = 0.95
UPPER_MASS = 2.0
#: The upper leg's joint, on its axis (its local y), from its centre.
UPPER_ANCHOR = -0.5
#: The lower leg's centre along the upper leg's axis, and its joint from its own centre.
LOWER_OFFSET = 1.08
LOWER_HEIGHT = 1.5
LOWER_MASS = 1.0
LOWER_ANCHOR = -0.75
UPPER_X_LIMITS = (-60.0, 0.0)
UPPER_Y_LIMIT = 20.0
UPPER_Y_LIMITS = (-UPPER_Y_LIMIT, UPPER_Y_LIMIT)
LOWER_X_LIMITS = (0.0, 150.0)
MAX_JOINT_SPRING = 40000.0
JOINT_DAMPEN = 5000.0
MAX_JOINT_FORCE = 20000.0
UNLIMITED_FORCE = 1.0e12
#: Per area: upper legs' (x, y) hinges for legs 0-3, then the lower legs' x hinges (the order of
#: actions 0-11).
ACTUATOR_COUNT = 12
FRICTION = 0.6
ARENA_HALF = 50.0
WALL_HEIGHT = 4.0
AREA_SPACING = 110.0
RAY_LENGTH = 10.0
#: Points along each leg's axis (fractions of the half length) tested against the target.
_TOUCH_POINTS = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
_BODY_COLOUR: Colour = BLUE
_UPPER_COLOUR: Colour = (0.35, 0.55, 0.9)
_LOWER_COLOUR: Colour = (0.5, 0.45, 0.8)


def _leg_xml(area: int, leg: int) -> str:
    """MJCF of upper leg ``leg`` of area ``area``'s crawler and its lower leg."""
    x, y, z, w = UPPER_ROTATIONS[leg]
    ox, oy, oz = UPPER_OFFSETS[leg]
    up_half = 0.5 * UPPER_HEIGHT - LEG_RADIUS
    low_half = 0.5 * LOWER_HEIGHT - LEG_RADIUS
    low_x = np.radians(UPPER_X_LIMITS)
    swing = np.radians(UPPER_Y_LIMIT)
    bend = np.radians(LOWER_X_LIMITS)
    name = f"a{area}l{leg}"
    lower = (
        f'<body name="a{area}f{leg}" pos="0 {LOWER_OFFSET} 0">'
        f'<joint name="{name}fx" type="hinge" pos="0 {LOWER_ANCHOR} 0" axis="-1 0 0" '
        f'range="{bend[0]} {bend[1]}"/>'
        f'<geom name="a{area}f{leg}" type="capsule" size="{LEG_RADIUS}" '
        f'fromto="0 {-low_half} 0 0 {low_half} 0" mass="{LOWER_MASS}"/>'
        "</body>"
    )
    return (
        f'<body name="{name}" pos="{ox} {oy} {oz}" quat="{w} {x} {y} {z}">'
        f'<joint name="{name}y" type="hinge" pos="0 {UPPER_ANCHOR} 0" axis="0 0 -1" '
        f'range="{-swing} {swing}"/>'
        f'<joint name="{name}x" type="hinge" pos="0 {UPPER_ANCHOR} 0" axis="-1 0 0" '
        f'range="{low_x[0]} {low_x[1]}"/>'
        f'<geom name="{name}" type="capsule" size="{LEG_RADIUS}" '
        f'fromto="0 {-up_half} 0 0 {up_half} 0" mass="{UPPER_MASS}"/>'
        f"{lower}</body>"
    )


def _actuator_joints(area: int) -> list[str]:
    """The hinge of each of area ``area``'s actuators, in the order of actions 0-11."""
    upper = [f"a{area}l{leg}{axis}" for leg in range(LEG_COUNT) for axis in ("x", "y")]
    return upper + [f"a{area}l{leg}fx" for leg in range(LEG_COUNT)]


def crawler_model_xml(area_count: int) -> str:
    """The MJCF model of ``area_count`` areas: a shared floor (normal +y), each area's four walls
    and crawler (areas :data:`AREA_SPACING` apart along x), a position servo per hinge (without
    drive until the first action)."""
    timestep = FIXED_DELTA_TIME / PHYSICS_SUBSTEPS
    crawlers = "".join(
        f'<body name="a{area}body" pos="{area * AREA_SPACING} {START_HEIGHT} 0">'
        f'<freejoint name="a{area}root"/>'
        f'<geom name="a{area}body" type="sphere" size="{BODY_RADIUS}" mass="{BODY_MASS}"/>'
        + "".join(_leg_xml(area, leg) for leg in range(LEG_COUNT))
        + "</body>"
        for area in range(area_count)
    )
    actuators = "".join(
        f'<position name="{joint}" joint="{joint}" kp="0" kv="0" forcelimited="true" '
        f'forcerange="{-UNLIMITED_FORCE} {UNLIMITED_FORCE}"/>'
        for area in range(area_count)
        for joint in _actuator_joints(area)
    )
    return scene_mjcf(
        "crawler",
        area_count,
        spacing=AREA_SPACING,
        half=ARENA_HALF,
        wall_height=WALL_HEIGHT,
        timestep=timestep,
        gravity=GRAVITY,
        integrator=INTEGRATOR,
        friction=FRICTION,
        bodies=crawlers,
        actuators=actuators,
    )


@register_scene
class CrawlerScene(ArticulatedScene):
    """Crawl towards a target on four jointed legs (MuJoCo physics); one agent per area."""

    name = "Crawler"
    summary = "a 4-legged crawler walks to a target (MuJoCo; continuous 20, obs 126+32, 10 agents)"
    default_area_count = 10
    fixed_delta_time = FIXED_DELTA_TIME
    option_specs = (MaxStepOption.option(MAX_STEP),)

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Crawler?team=0``: obs ``PhysicsBodySensor:Body`` (126,) and ``VectorSensor_size32``
        (32,), continuous 20, period 5 without actions between decisions, max step 5000 (option
        ``max_step``)."""
        return [
            BehaviorSpec(
                name="Crawler",
                sensors=(
                    SensorSpec("VectorSensor_size32", (32,)),
                    SensorSpec("PhysicsBodySensor:Body", (126,)),
                ),
                action_spec=ActionSpec(continuous_size=20),
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
        """:func:`crawler_model_xml`."""
        return crawler_model_xml(area_count)

    def rig_names(self, area: int) -> tuple[list[str], list[str]]:
        """The body, then each leg's upper and lower part; the hinges in action order."""
        parts = ["body", *(f"{kind}{leg}" for leg in range(LEG_COUNT) for kind in ("l", "f"))]
        return [f"a{area}{part}" for part in parts], _actuator_joints(area)

    def setup(self, context: SceneContext) -> None:
        """Build the MuJoCo model of every area and the per-area state.

        Raises:
            PlayerError: if MuJoCo is not installed.
        """
        super().setup(context)
        n = context.area_count
        #: The episode's target walking speed per area.
        self.walking_speed = np.full(n, MAX_WALKING_SPEED)
        #: Joint strengths (Unity's ``currentStrength``) of the legs, in part order (parts 1-8).
        self.strength = np.zeros((n, PART_COUNT - 1))
        #: Episodes ended by a ground contact since start-up.
        self.falls = 0
        self._refresh()
        #: Half lengths and radii of the parts (the body: a point of radius 0.5).
        self._half = np.array([0.0] + [0.5 * UPPER_HEIGHT - LEG_RADIUS,
                                       0.5 * LOWER_HEIGHT - LEG_RADIUS] * LEG_COUNT)  # fmt: skip
        self._radius = np.array([BODY_RADIUS] + [LEG_RADIUS] * (PART_COUNT - 1))

    # ---- episode -----------------------------------------------------------------------------

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """The starting pose, zero velocities, the crawler turned to a random yaw about its body,
        the cube updated and a new target walking speed."""
        rng = self.ctx.rng
        self._reset_poses(slots, np.radians(rng.uniform(0.0, 360.0, slots.size)))
        self._refresh()
        self.touching[slots] = False
        self._update_cubes(slots)
        self.walking_speed[slots] = rng.uniform(MIN_WALKING_SPEED, MAX_WALKING_SPEED, slots.size)

    # ---- observations ------------------------------------------------------------------------

    def _average_velocity(self, areas: np.ndarray | slice) -> np.ndarray:
        """``GetAvgVelocity``: the mean of the nine parts' velocities (k, 3)."""
        return np.asarray(self.velocity[areas].mean(axis=1))

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """``VectorSensor_size32`` and ``PhysicsBodySensor:Body`` (see the module documentation)."""
        k = slots.size
        yaw = self.cube_yaw[slots]
        speed = self.walking_speed[slots]
        position = self.position[slots]
        rotation = self.rotation[slots]
        body = position[:, 0]
        cube_forward = yaw_forward(yaw)
        goal = speed[:, None] * cube_forward
        average = self._average_velocity(slots)
        vector = np.empty((k, 32), dtype=np.float32)
        vector[:, 0] = np.linalg.norm(goal - average, axis=1)
        vector[:, 1:4] = into_cube(yaw, average)
        vector[:, 4] = 0.0
        vector[:, 5] = 0.0
        vector[:, 6] = speed
        forward = rotate(rotation[:, 0], np.array([0.0, 0.0, 1.0]))
        vector[:, 7:11] = from_to(forward, cube_forward)
        cube = self.cube_position[slots]
        vector[:, 11:14] = into_cube(yaw, self.target[slots] - cube)
        height = body[:, 1] - self.origin[slots, 1]
        vector[:, 14] = np.where((height >= 0.0) & (height <= RAY_LENGTH), height / RAY_LENGTH, 1.0)
        vector[:, 15] = self.touching[slots, 0]
        vector[:, 16:32:2] = self.touching[slots, 1:]
        vector[:, 17:32:2] = self.strength[slots] / MAX_JOINT_FORCE
        # PhysicsBodySensor: model space = the cube's space (translations from the cube).
        inverse = conjugate(yaw_quaternion(yaw))[:, None, :]
        model_rotation = multiply(np.broadcast_to(inverse, rotation.shape), rotation)
        parents = np.empty_like(rotation)
        parents[:, 0] = yaw_quaternion(yaw)
        parents[:, 1::2] = rotation[:, :1]
        parents[:, 2::2] = rotation[:, 1::2]
        local_rotation = multiply(conjugate(parents), rotation)
        physics = np.empty((k, 126), dtype=np.float32)
        poses = physics[:, :63].reshape(k, PART_COUNT, 7)
        poses[:, :, :3] = into_cube(yaw, position - cube[:, None, :])
        poses[:, :, 3:] = model_rotation
        physics[:, 63:90] = into_cube(yaw, self.velocity[slots]).reshape(k, 27)
        physics[:, 90:] = local_rotation.reshape(k, 36)
        return [vector, physics]

    # ---- actions and physics -----------------------------------------------------------------

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Joint targets (actions 0-11) and strengths (12-19) through the joint drives."""
        actions = np.clip(continuous[:, :20].astype(np.float64), -1.0, 1.0)
        fraction = (actions + 1.0) * 0.5
        targets = np.empty((slots.size, ACTUATOR_COUNT))
        targets[:, 0:8:2] = np.interp(fraction[:, 0:8:2], [0.0, 1.0], UPPER_X_LIMITS)
        targets[:, 1:8:2] = np.interp(
            fraction[:, 1:8:2], [0.0, 1.0], (-UPPER_Y_LIMIT, UPPER_Y_LIMIT)
        )
        targets[:, 8:12] = np.interp(fraction[:, 8:12], [0.0, 1.0], LOWER_X_LIMITS)
        strength = fraction[:, 12:20] * MAX_JOINT_FORCE  # upper legs 0-3, lower legs 0-3
        self.strength[slots, 0::2] = strength[:, :4]
        self.strength[slots, 1::2] = strength[:, 4:]
        # Twelve actuators per area, all acting areas' rows at once.
        rows = (ACTUATOR_COUNT * slots[:, None] + np.arange(ACTUATOR_COUNT)).ravel()
        limits = np.concatenate([np.repeat(strength[:, :4], 2, axis=1), strength[:, 4:]], axis=1)
        model = self.model
        self.data.ctrl[rows] = np.radians(targets).ravel()
        model.actuator_gainprm[rows, 0] = MAX_JOINT_SPRING
        model.actuator_biasprm[rows, 1] = -MAX_JOINT_SPRING
        model.actuator_forcerange[rows, 0] = -limits.ravel()
        model.actuator_forcerange[rows, 1] = limits.ravel()
        # The damper as the hinges' own damping (integrated implicitly), scaled by the strength.
        model.dof_damping[self.rig.qvel_hinges[slots].ravel()] = (
            JOINT_DAMPEN * limits.ravel() / MAX_JOINT_FORCE
        )

    def after_academy_step(self) -> None:
        """``FixedUpdate`` (cube update and reward), then the physics step, the ground contacts
        (ending the episodes of fallen crawlers) and the target touches."""
        every = slice(None)
        self._update_cubes(every)
        yaw = self.cube_yaw
        speed = self.walking_speed
        forward = yaw_forward(yaw)
        matching = speed_match(self._average_velocity(every), speed, forward)
        body_forward = rotate(self.rotation[:, 0], np.array([0.0, 0.0, 1.0]))
        look_at = (np.einsum("ij,ij->i", forward, body_forward) + 1.0) * 0.5
        batch = self.ctx.batch("Crawler")
        batch.add_reward(np.arange(yaw.size), matching * look_at)
        self._step_physics()
        fell = np.flatnonzero(self.touching[:, FATAL_PARTS].any(axis=1))
        if fell.size:
            self.falls += int(fell.size)
            batch.set_reward(fell, -1.0)
            batch.end_episode(fell)
        self._touch_targets()

    def _touch_targets(self) -> None:
        """Move the targets that a part touches (``respawnIfTouched``)."""
        axes = rotate(self.rotation, np.array([0.0, 1.0, 0.0]))  # (n, 9, 3)
        reach = self._half[:, None] * _TOUCH_POINTS  # (9, 5)
        points = self.position[:, :, None, :] + axes[:, :, None, :] * reach[None, :, :, None]
        offset = points - self.target[:, None, None, :]
        outside = np.maximum(np.abs(offset) - TARGET_HALF, 0.0)
        inside = np.einsum("ijkl,ijkl->ijk", outside, outside) <= self._radius[None, :, None] ** 2
        for area in np.flatnonzero(inside.any(axis=(1, 2))).tolist():
            self.targets_reached += 1
            self._move_target(int(area))

    # ---- heuristic ---------------------------------------------------------------------------

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """A trot at full strength: the diagonal pairs of legs (0 and 2, 1 and 3) take turns to
        swing forward lifted and push back on the floor, the strides of one side shortened to
        turn the body towards the target."""
        k = slots.size
        time = batch.step_count[slots] * self.fixed_delta_time
        phase = 2.0 * np.pi * GAIT_FREQUENCY * time
        error = self._turn_to_target(slots)
        steer = np.clip(error / np.radians(STEER_FULL_DEGREES), -1.0, 1.0) * STEER_SIGN
        actions = np.zeros((k, 20), dtype=np.float32)
        for leg in range(LEG_COUNT):
            leg_phase = phase + np.pi * (leg % 2)
            side = 1.0 if leg in (0, 3) else -1.0  # right legs (0, 3), left legs (1, 2)
            stride = np.clip(GAIT_STRIDE * (1.0 + side * steer), 0.0, 1.0)
            actions[:, 2 * leg] = GAIT_THIGH - GAIT_LIFT * np.maximum(np.cos(leg_phase), 0.0)
            actions[:, 2 * leg + 1] = _FORWARD_SWING[leg] * stride * np.sin(leg_phase)
            actions[:, 8 + leg] = GAIT_KNEE
        actions[:, 12:20] = 1.0
        return actions, np.zeros((k, 0), np.int32)

    # ---- pictures ----------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """From above, around the crawler: the floor and walls, the target (orange), the cube's
        direction to it (green), the legs (lower legs darker) and the body."""
        canvas = self._view_from_above(area, size)
        width = canvas.pixels(2.0 * LEG_RADIUS)
        for part in range(1, PART_COUNT):
            centre = self.position[area, part]
            axis = rotate(self.rotation[area, part], np.array([0.0, 1.0, 0.0]))
            half = self._half[part]
            ends = np.concatenate([(centre - half * axis)[[0, 2]], (centre + half * axis)[[0, 2]]])
            colour = _UPPER_COLOUR if part % 2 else _LOWER_COLOUR
            canvas.segments(ends, colour, width=width)
            for end in (ends[:2], ends[2:]):
                canvas.circle(end, LEG_RADIUS, colour)
        body = self.position[area, 0]
        canvas.circle(body[[0, 2]], BODY_RADIUS, _BODY_COLOUR)
        nose = body + rotate(self.rotation[area, 0], np.array([0.0, 0.0, BODY_RADIUS]))
        canvas.circle(nose[[0, 2]], 0.12, (1.0, 1.0, 1.0))
        return canvas.picture()


#: The heuristic's gait: strides per second, the thigh's and knee's actions at rest, how far a
#: lifted thigh rises, the stride's share of the swing range, the sign of each leg's swing that
#: moves its foot forward, and the heading error (degrees) that shortens one side's strides fully.
GAIT_FREQUENCY = 1.5
GAIT_THIGH = 0.0
GAIT_KNEE = 0.0
GAIT_LIFT = 0.5
GAIT_STRIDE = 1.0
_FORWARD_SWING = (1.0, -1.0, -1.0, 1.0)
STEER_FULL_DEGREES = 45.0
STEER_SIGN = -1.0
