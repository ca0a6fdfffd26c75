"""Walker: a humanoid ragdoll walks towards a target (ML-Agents' ``Walker`` scene), on MuJoCo.

Facts followed (ML-Agents' ``WalkerAgent.cs``, ``JointDriveController.cs``, ``GroundContact.cs``,
``OrientationCubeController.cs``, ``TargetController.cs``, the prefabs ``WalkerRagdollBase.prefab``,
``WalkerRagdollDySingleSpeedVariant.prefab``, ``PlatformWalkerDynamicSingleSpeed.prefab`` and
``DynamicTarget.prefab``; the stock scene and ``config/ppo/Walker.yaml`` train this dynamic-target,
single-speed variant): behavior ``Walker?team=0``, 10 areas with one agent each, one vector sensor
``VectorSensor_size243`` (243,), 39 continuous actions, a DecisionRequester of period 5 *without*
actions between decisions, MaxStep 5000 (scene option ``max_step``), Unity's fixed timestep
0.01333 s.

Body (``WalkerRagdollBase.prefab``, Unity's coordinates: y up, z forward; all rotations identity
in the starting T-pose; the hips 3 above the floor): 16 body parts, in ``bodyPartsList`` order
hips, chest, spine, head, thighL, shinL, footL, thighR, shinR, footR, armL, forearmL, handL,
armR, forearmR, handR (see :data:`PARTS` for parents, positions, colliders and masses; the
agent's ``SetTorsoMass`` sets hips, chest and spine to 8 each, environment parameters
``hip_mass``, ``chest_mass`` and ``spine_mass``, read at each episode begin). Every part but the
hips and the hands hangs on its parent by a ConfigurableJoint with one, two or three free angles
(:data:`JOINTS`: anchor, primary and secondary axes, angular limits); the hands are fixed to the
forearms.

Actions (``WalkerAgent.OnActionReceived`` through ``JointDriveController``): 26 joint targets,
chest (x, y, z), spine (x, y, z), thighL (x, y), thighR (x, y), shinL (x), shinR (x), footR
(x, y, z), footL (x, y, z), armL (x, y), armR (x, y), forearmL (x), forearmR (x), head (x, y),
each ``a`` mapped to ``lerp(low, high, (a + 1) / 2)`` of that angle's limits; then 13 joint
strengths (chest, spine, head, thighL, shinL, footL, thighR, shinR, footR, armL, forearmL, armR,
forearmR): the slerp drive gets spring 40000, damper 5000 and a maximum force
``(a + 1) / 2 * 20000``. Before a joint's first action its drive is the prefab's (spring 10000,
damper 100, maximum force 25000, target 0).

Observations (``CollectObservations``, in this order, 243 floats), in the space of the
*orientation cube* (on the hips, turned about y towards the target; updated every FixedUpdate
and at episode begin): the distance between the goal velocity (the cube's forward x 10) and the
average velocity of the 16 parts, that average velocity and the goal velocity in the cube's
space, ``FromToRotation(hips.forward, cube forward)`` and ``FromToRotation(head.forward, cube
forward)`` (x, y, z, w), the target's position in the cube's space; then per body part (16 x 10,
and 13 x 5 for the parts other than the hips and the hands): ground contact (1/0), velocity,
angular velocity and position relative to the hips in the cube's space, then the local rotation
(relative to the parent transform; x, y, z, w) and the joint's current strength / 20000 (0 until
its first action).

Rewards (``FixedUpdate``, every Academy step): the product of the speed match
``(1 - (min(|v_avg - 10 f|, 10) / 10)^2)^2`` (``f`` the cube's forward) and the look-at reward
``(dot(f, head.forward) + 1) / 2``. A body part touching the target gives +1
(``TouchedTarget``, wired to the target's collision event in the single-speed variant) and moves
the target. A part with ``agentDoneOnGroundContact`` (every part but the shins and the feet: 12
parts, ``GroundContact.cs``) touching the ground *sets* the reward to -1 (replacing what the
agent earned since its last decision) and ends the episode.

Episodes: the body is put back to its starting pose with zero velocities and turned about the
hips to a random yaw in [0, 360); the episode ends as above, and is interrupted at MaxStep. The
target (``DynamicTarget.prefab``: a 1 x 1 x 1 cube, ``spawnRadius`` 40, ``respawnIfTouched``)
starts 2 in front of the walker's start, is moved to ``start + insideUnitSphere * 40`` (height
kept) at once and whenever a body part touches it; it is not moved at episode begin. The area is
a 100 x 100 floor with walls at +-50.

Physics: MuJoCo (optional extra ``unity-gym[mujoco]``), one model holding every area's walker
(areas 200 apart), stepped together: :data:`PHYSICS_SUBSTEPS` steps of ``0.01333 /``
:data:`PHYSICS_SUBSTEPS` s per Academy step with the ``implicit`` integrator, friction 0.6 (Unity's
default material); each joint is a chain of hinges (y, then x, then z, as ``Quaternion.Euler``) at
the joint's anchor, each with a position servo (``kp`` = spring, torque clamped to the drive's
maximum force) and a joint damping of ``damper x maximum force / 20000`` (prefab drive: 100), which
together stand in for PhysX's slerp drive. MuJoCo's numbers are Unity's numbers (y up; the
simulated world is the mirror image of Unity's, see ``worm.py``).

Simplified or estimated: the joint drives are per-hinge servos rather than a slerp drive on the
combined rotation, and their damping is the joint's, scaled by the strength, rather than part of
the force-limited drive (a damper of 5000 inside a saturating servo is unstable at any usable
MuJoCo time step, while joint damping is integrated implicitly); each hinge turns about the joint's
axis *negated* (so that the prefab's limits bend the knees and elbows the human way: Unity's
angular x of a ConfigurableJoint turns the other way round from the axis), which is the player's
reading, not checked against PhysX; gravity is Unity's default 9.81 (the scene's settings object
was not read); the hips start 3 above the floor as in the prefab (the floor's top taken at 0), so
the walker drops about 0.5 at each episode begin; the target is a fixed cube resting on the floor
that the walker does not collide with (Unity's is a 1 kg rigid body that a random torque tumbles
every 10 s) and a touch is a body part's collider reaching the cube; the velocities are those of
the parts' frame origins (Unity's ``rb.velocity`` is the centre of mass's: the same but for the
feet, whose box is 0.06 off centre); the ground check counts contacts with the floor only, and
parts that reach the ground in the same step end the episode once (in Unity each one's
``OnCollisionEnter`` would set -1 and end an episode, the later ones the freshly begun one);
rigid-body drag (0.05), ``maxAngularVelocity`` (50) and PhysX's solver settings are not reproduced;
the orientation cube's scale is taken as 1; the direction indicator is not simulated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..render import BLUE, FLOOR, GREEN, ORANGE, WALL, Canvas, Colour
from ..specs import ActionSpec, BehaviorSpec, DecisionSettings, SensorSpec
from .articulated import (
    TARGET_HALF,
    TARGET_SPAWN_RADIUS,
    ArticulatedScene,
    conjugate,
    from_to,
    into_cube,
    multiply,
    point_in_unit_sphere,
    rotate,
    scene_mjcf,
    speed_match,
    yaw_forward,
)
from .base import MaxStepOption
from .registry import register_scene

__all__ = [
    "ACTION_SIZE",
    "FIXED_DELTA_TIME",
    "GRAVITY",
    "JOINTS",
    "JOINT_DAMPEN",
    "MAX_JOINT_FORCE",
    "MAX_JOINT_SPRING",
    "MAX_WALKING_SPEED",
    "OBSERVATION_SIZE",
    "PARTS",
    "START_HEIGHT",
    "STRENGTH_ORDER",
    "TARGET_ORDER",
    "Joint",
    "Part",
    "WalkerScene",
    "walker_model_xml",
]

MAX_STEP = 5000
FIXED_DELTA_TIME = 0.01333
#: Unity's default gravity (the Walker scene's settings object was not read).
GRAVITY = 9.81
PHYSICS_SUBSTEPS = 3
INTEGRATOR = "implicit"
MAX_WALKING_SPEED = 10.0
OBSERVATION_SIZE = 243
ACTION_SIZE = 39
#: The hips above the floor (``WalkerRagdollDySingleSpeedVariant`` at y 3 in the platform).
START_HEIGHT = 3.0
#: ``JointDriveController`` of the ragdoll: spring, damper and maximum force of the drives.
MAX_JOINT_SPRING = 40000.0
JOINT_DAMPEN = 5000.0
MAX_JOINT_FORCE = 20000.0
#: The prefab's slerp drive before the first action.
PREFAB_SPRING = 10000.0
PREFAB_DAMPER = 100.0
PREFAB_FORCE = 25000.0
#: ``SetTorsoMass``'s default for the hips, the chest and the spine.
TORSO_MASS = 8.0
FRICTION = 0.6
#: Where the target starts, relative to the walker's start (the variant's ``DynamicTarget``).
TARGET_START = (0.0, 2.0)
ARENA_HALF = 50.0
WALL_HEIGHT = 8.0
AREA_SPACING = 200.0
#: Beyond this distance (xz) between the hips and the target no part can touch it.
TOUCH_REACH = 5.0


class Part(NamedTuple):
    """A body part of ``WalkerRagdollBase.prefab``."""

    name: str
    #: Index of the parent part (its transform's parent), -1 for the hips.
    parent: int
    #: Position in the parent's frame (all parts start unturned).
    position: tuple[float, float, float]
    #: ``capsule`` (``size`` = radius, height; along ``axis``), ``sphere`` (radius) or ``box``
    #: (full sizes; centred at ``centre``).
    shape: str
    size: tuple[float, ...]
    axis: int
    mass: float
    #: ``GroundContact.agentDoneOnGroundContact`` (and ``penalizeGroundContact``, -1).
    done_on_ground: bool
    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)


class Joint(NamedTuple):
    """A part's ConfigurableJoint: anchor (in the part's frame), primary and secondary axes,
    angular x limits (low, high) and the y and z limits (0: locked)."""

    part: int
    anchor: tuple[float, float, float]
    primary: tuple[float, float, float]
    secondary: tuple[float, float, float]
    x_limits: tuple[float, float]
    y_limit: float
    z_limit: float

    @property
    def axes(self) -> str:
        """The free angles, among ``xyz``."""
        return "x" + ("y" if self.y_limit else "") + ("z" if self.z_limit else "")


HIPS, CHEST, SPINE, HEAD = 0, 1, 2, 3
THIGH_L, SHIN_L, FOOT_L, THIGH_R, SHIN_R, FOOT_R = 4, 5, 6, 7, 8, 9
ARM_L, FOREARM_L, HAND_L, ARM_R, FOREARM_R, HAND_R = 10, 11, 12, 13, 14, 15

#: The 16 parts in ``bodyPartsList`` order (the observations' order).
PARTS: tuple[Part, ...] = (
    Part("hips", -1, (0.0, 0.0, 0.0), "capsule", (0.28, 1.3), 0, TORSO_MASS, True),
    Part("chest", SPINE, (0.0, 0.805, 0.0), "capsule", (0.4, 1.4), 0, TORSO_MASS, True),
    Part("spine", HIPS, (0.0, 0.683, 0.0), "capsule", (0.25, 1.0), 0, TORSO_MASS, True),
    Part("head", CHEST, (0.0, 1.362, 0.0), "sphere", (0.65073156,), 0, 6.0, True),
    Part("thighL", HIPS, (-0.4, -0.8, 0.0), "capsule", (0.25, 0.9), 1, 14.0, True),
    Part("shinL", THIGH_L, (0.0, -1.0, 0.0), "capsule", (0.2, 1.0), 1, 7.0, False),
    Part("footL", SHIN_L, (0.0, -0.6, 0.1), "box", (0.35, 0.1362114, 0.55), 0, 5.0, False,
         (0.0, 0.0, -0.06)),
    Part("thighR", HIPS, (0.4, -0.8, 0.0), "capsule", (0.25, 0.9), 1, 14.0, True),
    Part("shinR", THIGH_R, (0.0, -1.0, 0.0), "capsule", (0.2, 1.0), 1, 7.0, False),
    Part("footR", SHIN_R, (0.0, -0.6, 0.1), "box", (0.35, 0.1362114, 0.55), 0, 5.0, False,
         (0.0, 0.0, -0.06)),
    Part("armL", CHEST, (-1.25, 0.0, 0.0), "capsule", (0.25, 1.0), 0, 4.0, True),
    Part("forearmL", ARM_L, (-1.0, 0.0, 0.0), "capsule", (0.25, 1.0), 0, 3.0, True),
    Part("handL", FOREARM_L, (-0.7, 0.0, 0.0), "sphere", (0.25,), 0, 2.0, True),
    Part("armR", CHEST, (1.25, 0.0, 0.0), "capsule", (0.25, 1.0), 0, 4.0, True),
    Part("forearmR", ARM_R, (1.0, 0.0, 0.0), "capsule", (0.25, 1.0), 0, 3.0, True),
    Part("handR", FOREARM_R, (0.7, 0.0, 0.0), "sphere", (0.25,), 0, 2.0, True),
)  # fmt: skip
PART_COUNT = len(PARTS)

#: The driven joints in the order of the strength actions (``SetJointStrength`` calls).
JOINTS: tuple[Joint, ...] = (
    Joint(CHEST, (0.0, -0.5, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (-20.0, 20.0), 20.0, 15.0),
    Joint(SPINE, (0.0, -0.3, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (-20.0, 20.0), 20.0, 15.0),
    Joint(HEAD, (0.0, -0.85, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (-30.0, 10.0), 20.0, 0.0),
    Joint(THIGH_L, (0.0, 0.5, 0.0), (-1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (-90.0, 60.0), 40.0, 0.0),
    Joint(SHIN_L, (0.0, 0.5, 0.0), (-1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (0.0, 120.0), 0.0, 0.0),
    Joint(FOOT_L, (0.0, 0.0, -0.1), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (-20.0, 20.0), 20.0, 20.0),
    Joint(THIGH_R, (0.0, 0.5, 0.0), (-1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (-90.0, 60.0), 40.0, 0.0),
    Joint(SHIN_R, (0.0, 0.5, 0.0), (-1.0, 0.0, 0.0), (0.0, 0.0, -1.0), (0.0, 120.0), 0.0, 0.0),
    Joint(FOOT_R, (0.0, 0.0, -0.1), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (-20.0, 20.0), 20.0, 20.0),
    Joint(ARM_L, (0.55, 0.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, 1.0), (-60.0, 120.0), 100.0, 0.0),
    Joint(FOREARM_L, (0.5, 0.0, 0.0), (0.0, -1.0, 0.0), (0.0, 0.0, 1.0), (0.0, 160.0), 0.0, 0.0),
    Joint(ARM_R, (-0.55, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (-60.0, 120.0), 100.0, 0.0),
    Joint(FOREARM_R, (-0.5, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.0, 160.0), 0.0, 0.0),
)  # fmt: skip
#: Parts in the order of the strength actions (actions 26-38).
STRENGTH_ORDER = tuple(joint.part for joint in JOINTS)
#: Parts in the order of the target actions (actions 0-25; each takes its joint's free angles).
TARGET_ORDER = (CHEST, SPINE, THIGH_L, THIGH_R, SHIN_L, SHIN_R, FOOT_R, FOOT_L, ARM_L, ARM_R,
                FOREARM_L, FOREARM_R, HEAD)  # fmt: skip
_JOINT_OF_PART = {joint.part: index for index, joint in enumerate(JOINTS)}
#: Per hinge (in target-action order): (joint index, angle index 0/1/2 for x/y/z).
HINGES: tuple[tuple[int, int], ...] = tuple(
    (_JOINT_OF_PART[part], "xyz".index(axis))
    for part in TARGET_ORDER
    for axis in JOINTS[_JOINT_OF_PART[part]].axes
)
HINGE_COUNT = len(HINGES)
#: Per hinge: the angle limits in radians (the actions' lerp ends).
HINGE_LOW = np.radians(
    [JOINTS[j].x_limits[0] if a == 0 else -(JOINTS[j].y_limit, JOINTS[j].z_limit)[a - 1]
     for j, a in HINGES]
)  # fmt: skip
HINGE_HIGH = np.radians(
    [JOINTS[j].x_limits[1] if a == 0 else (JOINTS[j].y_limit, JOINTS[j].z_limit)[a - 1]
     for j, a in HINGES]
)  # fmt: skip
#: Per hinge: which strength action (joint) sets its maximum force.
HINGE_JOINT = np.array([j for j, _ in HINGES])
#: Parts that observe their local rotation and strength (all but the hips and the hands).
ROTATION_PARTS = tuple(p for p in range(PART_COUNT) if p not in (HIPS, HAND_L, HAND_R))
DONE_PARTS = np.array([part.done_on_ground for part in PARTS])
_PARENTS = np.array([max(part.parent, 0) for part in PARTS])
_COLOURS: dict[str, Colour] = {
    "torso": BLUE,
    "left": (0.35, 0.55, 0.9),
    "right": (0.55, 0.4, 0.85),
    "head": (0.95, 0.95, 1.0),
}
_DIRECTION: Colour = GREEN


def _fmt(values: Sequence[float] | np.ndarray) -> str:
    return " ".join(f"{v:.9g}" for v in values)


def _geom_xml(name: str, part: Part) -> str:
    """MJCF of a part's collider."""
    if part.shape == "sphere":
        return f'<geom name="{name}" type="sphere" size="{part.size[0]}" mass="{part.mass}"/>'
    if part.shape == "box":
        halves = [0.5 * s for s in part.size]
        return (
            f'<geom name="{name}" type="box" size="{_fmt(halves)}" pos="{_fmt(part.centre)}" '
            f'mass="{part.mass}"/>'
        )
    radius, height = part.size
    half = 0.5 * height - radius
    ends = [0.0] * 6
    ends[part.axis], ends[3 + part.axis] = -half, half
    return (
        f'<geom name="{name}" type="capsule" size="{radius}" fromto="{_fmt(ends)}" '
        f'mass="{part.mass}"/>'
    )


def _hinges_xml(area: int, index: int) -> str:
    """MJCF of part ``index``'s hinges (about the joint's axes negated; see the module notes), y
    nearest the parent, then x, then z: the order of Unity's ``Quaternion.Euler(x, y, z)``, the
    drive's target, which turns about z, then x, then y."""
    joint = JOINTS[_JOINT_OF_PART[index]]
    primary = np.array(joint.primary)
    secondary = np.array(joint.secondary)
    axes = {"x": -primary, "y": -secondary, "z": -np.cross(primary, secondary)}
    limits = {
        "x": joint.x_limits,
        "y": (-joint.y_limit, joint.y_limit),
        "z": (-joint.z_limit, joint.z_limit),
    }
    return "".join(
        f'<joint name="a{area}{PARTS[index].name}{axis}" type="hinge" pos="{_fmt(joint.anchor)}" '
        f'axis="{_fmt(axes[axis])}" range="{_fmt(np.radians(limits[axis]))}" '
        f'damping="{PREFAB_DAMPER}"/>'
        for axis in "yxz"
        if axis in joint.axes
    )


def _part_xml(area: int, index: int) -> str:
    """MJCF of part ``index`` of area ``area``'s walker and the parts below it."""
    part = PARTS[index]
    name = f"a{area}{part.name}"
    if index == HIPS:
        pos = (area * AREA_SPACING, START_HEIGHT, 0.0)
        head = f'<freejoint name="a{area}root"/>'
    else:
        pos = part.position
        head = _hinges_xml(area, index) if index in _JOINT_OF_PART else ""
    children = "".join(_part_xml(area, child) for child, p in enumerate(PARTS) if p.parent == index)
    return f'<body name="{name}" pos="{_fmt(pos)}">{head}{_geom_xml(name, part)}{children}</body>'


def walker_model_xml(area_count: int) -> str:
    """The MJCF model of ``area_count`` areas: the floor, each area's walls, walker and target
    (a cube that collides with nothing), a position servo per hinge in target-action order."""
    timestep = FIXED_DELTA_TIME / PHYSICS_SUBSTEPS
    walkers = "".join(_part_xml(area, HIPS) for area in range(area_count))
    targets = "".join(
        f'<geom name="a{area}target" type="box" size="{TARGET_HALF} {TARGET_HALF} {TARGET_HALF}" '
        f'pos="{area * AREA_SPACING} {TARGET_HALF} 0" contype="0" conaffinity="0"/>'
        for area in range(area_count)
    )
    actuators = "".join(
        f'<position name="a{area}{PARTS[JOINTS[j].part].name}{"xyz"[a]}" '
        f'joint="a{area}{PARTS[JOINTS[j].part].name}{"xyz"[a]}" '
        f'kp="{PREFAB_SPRING}" forcelimited="true" '
        f'forcerange="{-PREFAB_FORCE} {PREFAB_FORCE}"/>'
        for area in range(area_count)
        for j, a in HINGES
    )
    return scene_mjcf(
        "walker",
        area_count,
        spacing=AREA_SPACING,
        half=ARENA_HALF,
        wall_height=WALL_HEIGHT,
        timestep=timestep,
        gravity=GRAVITY,
        integrator=INTEGRATOR,
        friction=FRICTION,
        bodies=f"{targets}{walkers}",
        actuators=actuators,
    )


_FORWARD = np.array([0.0, 0.0, 1.0])


@register_scene
class WalkerScene(ArticulatedScene):
    """Walk towards a target with a 16-part humanoid ragdoll (MuJoCo physics); one agent per
    area."""

    name = "Walker"
    summary = "a humanoid walks to a target (MuJoCo; continuous 39, obs 243, 10 agents)"
    default_area_count = 10
    fixed_delta_time = FIXED_DELTA_TIME
    option_specs = (MaxStepOption.option(MAX_STEP),)

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``Walker?team=0``: obs (243,), continuous 39, period 5 without actions between
        decisions, max step 5000 (option ``max_step``)."""
        return [
            BehaviorSpec(
                name="Walker",
                sensors=(SensorSpec(f"VectorSensor_size{OBSERVATION_SIZE}", (OBSERVATION_SIZE,)),),
                action_spec=ActionSpec(continuous_size=ACTION_SIZE),
                decision=DecisionSettings(period=5, take_actions_between_decisions=False),
                max_step=self.max_step,
            )
        ]

    # ---- set-up ------------------------------------------------------------------------------

    area_spacing = AREA_SPACING
    physics_substeps = PHYSICS_SUBSTEPS
    start_height = START_HEIGHT
    cube_part = HIPS

    def model_xml(self, area_count: int) -> str:
        """:func:`walker_model_xml`."""
        return walker_model_xml(area_count)

    def rig_names(self, area: int) -> tuple[list[str], list[str]]:
        """The parts in :data:`PARTS` order; the hinges in target-action order."""
        parts = [f"a{area}{part.name}" for part in PARTS]
        return parts, [f"a{area}{PARTS[JOINTS[j].part].name}{'xyz'[i]}" for j, i in HINGES]

    def setup(self, context: SceneContext) -> None:
        """Build the MuJoCo model of every area and the per-area state.

        Raises:
            PlayerError: if MuJoCo is not installed.
        """
        super().setup(context)
        n = context.area_count
        model = self.model
        geom = self._mj.mjtObj.mjOBJ_GEOM
        self._target_geoms = np.array(
            [self._mj.mj_name2id(model, geom, f"a{a}target") for a in range(n)]
        )
        #: Each part's mass and inertia as built (the torso's are rescaled per episode).
        self._base_mass = model.body_mass.copy()
        self._base_inertia = model.body_inertia.copy()
        #: Where each area's target starts (and is spawned around).
        start = np.array([TARGET_START[0], TARGET_HALF, TARGET_START[1]])
        self.target_start = self.origin + start
        self.target = self.target_start.copy()
        #: Joint strengths (Unity's ``currentStrength``, strength-action order).
        self.strength = np.zeros((n, len(JOINTS)))
        #: Ground contacts that ended an episode since start-up.
        self.falls = 0
        self._refresh()

    def _move_target(self, area: int) -> None:
        """``MoveTargetToRandomPosition``: start + insideUnitSphere * 40, resting on the floor."""
        point = point_in_unit_sphere(self.ctx.rng)
        self.place_target(
            area, self.target_start[area] + TARGET_SPAWN_RADIUS * point * [1.0, 0.0, 1.0]
        )

    def place_target(self, area: int, centre: np.ndarray) -> None:
        """Put area ``area``'s target cube at ``centre`` (world)."""
        self.target[area] = centre
        self.model.geom_pos[self._target_geoms[area]] = centre

    # ---- episode -----------------------------------------------------------------------------

    def on_episode_begin(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """The starting pose, zero velocities, the body turned to a random yaw about the hips,
        the torso's masses from the environment parameters."""
        k = slots.size
        self._reset_poses(slots, np.radians(self.ctx.rng.uniform(0.0, 360.0, k)))
        params = self.ctx.parameters
        for part, key in ((CHEST, "chest_mass"), (SPINE, "spine_mass"), (HIPS, "hip_mass")):
            mass = np.maximum(params.read_many(key, TORSO_MASS, k), 1e-3)
            bodies = self.rig.bodies[slots, part]
            scale = mass / self._base_mass[bodies]
            self.model.body_mass[bodies] = mass
            self.model.body_inertia[bodies] = self._base_inertia[bodies] * scale[:, None]
        self._refresh()
        self.touching[slots] = False
        self._update_cubes(slots)

    # ---- observations ------------------------------------------------------------------------

    def _average_velocity(self, areas: np.ndarray | slice) -> np.ndarray:
        """``GetAvgVelocity``: the mean velocity of the 16 parts."""
        return np.asarray(self.velocity[areas].mean(axis=1))

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """The 243 floats of ``CollectObservations`` (see the module documentation)."""
        k = slots.size
        yaw = self.cube_yaw[slots]
        cube_forward = yaw_forward(yaw)
        goal = MAX_WALKING_SPEED * cube_forward
        average = self._average_velocity(slots)
        position = self.position[slots]
        rotation = self.rotation[slots]
        obs = np.empty((k, OBSERVATION_SIZE), dtype=np.float32)
        obs[:, 0] = np.linalg.norm(goal - average, axis=1)
        obs[:, 1:4] = into_cube(yaw, average)
        obs[:, 4:7] = [0.0, 0.0, MAX_WALKING_SPEED]
        obs[:, 7:11] = from_to(rotate(rotation[:, HIPS], _FORWARD), cube_forward)
        obs[:, 11:15] = from_to(rotate(rotation[:, HEAD], _FORWARD), cube_forward)
        obs[:, 15:18] = into_cube(yaw, self.target[slots] - self.cube_position[slots])
        velocity = into_cube(yaw, self.velocity[slots])
        angular = into_cube(yaw, self.angular_velocity[slots])
        relative = into_cube(yaw, position - position[:, HIPS : HIPS + 1])
        local = multiply(conjugate(rotation[:, _PARENTS]), rotation)
        strength = self.strength[slots] / MAX_JOINT_FORCE
        touching = self.touching[slots]
        column = 18
        for part in range(PART_COUNT):
            obs[:, column] = touching[:, part]
            obs[:, column + 1 : column + 4] = velocity[:, part]
            obs[:, column + 4 : column + 7] = angular[:, part]
            obs[:, column + 7 : column + 10] = relative[:, part]
            column += 10
            if part in ROTATION_PARTS:
                obs[:, column : column + 4] = local[:, part]
                obs[:, column + 4] = strength[:, _JOINT_OF_PART[part]]
                column += 5
        return [obs]

    # ---- actions and physics -----------------------------------------------------------------

    def on_action_received(
        self,
        batch: AgentBatch,
        slots: np.ndarray,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> None:
        """Joint targets (actions 0-25) and strengths (26-38) of every hinge's servo."""
        actions = np.clip(continuous[:, :ACTION_SIZE].astype(np.float64), -1.0, 1.0)
        targets = HINGE_LOW + (HINGE_HIGH - HINGE_LOW) * (actions[:, :HINGE_COUNT] + 1.0) * 0.5
        strength = (actions[:, HINGE_COUNT:] + 1.0) * 0.5 * MAX_JOINT_FORCE
        self.strength[slots] = strength
        model = self.model
        rows = (HINGE_COUNT * slots[:, None] + np.arange(HINGE_COUNT)).ravel()
        limits = strength[:, HINGE_JOINT].ravel()
        self.data.ctrl[rows] = targets.ravel()
        model.actuator_gainprm[rows, 0] = MAX_JOINT_SPRING
        model.actuator_biasprm[rows, 1] = -MAX_JOINT_SPRING
        dofs = self.rig.qvel_hinges[slots].ravel()
        model.dof_damping[dofs] = JOINT_DAMPEN / MAX_JOINT_FORCE * limits
        model.actuator_forcerange[rows, 0] = -limits
        model.actuator_forcerange[rows, 1] = limits

    def after_academy_step(self) -> None:
        """``FixedUpdate`` (cube update and reward), then the physics step, the ground contacts,
        the target touches and the falls."""
        every = slice(None)
        self._update_cubes(every)
        yaw = self.cube_yaw
        cube_forward = yaw_forward(yaw)
        matching = speed_match(self._average_velocity(every), MAX_WALKING_SPEED, cube_forward)
        head_forward = rotate(self.rotation[:, HEAD], _FORWARD)
        look = (np.einsum("ij,ij->i", cube_forward, head_forward) + 1.0) * 0.5
        batch = self.ctx.batch("Walker")
        batch.add_reward(np.arange(yaw.size), matching * look)
        self._step_physics()
        self._touch_targets(batch)
        fell = np.flatnonzero((self.touching & DONE_PARTS).any(axis=1))
        if fell.size:
            self.falls += int(fell.size)
            batch.set_reward(fell, -1.0)
            batch.end_episode(fell)

    def _touch_targets(self, batch: AgentBatch) -> None:
        """+1 and a new place for the targets that a body part touches (``TouchedTarget``,
        ``respawnIfTouched``)."""
        gap = self.target[:, [0, 2]] - self.position[:, HIPS][:, [0, 2]]
        near = np.flatnonzero(np.einsum("ij,ij->i", gap, gap) <= TOUCH_REACH**2)
        if not near.size:
            return
        distance = self._mj.mj_geomDistance
        for area in near.tolist():
            cube = int(self._target_geoms[area])
            if any(
                distance(self.model, self.data, cube, int(g), 0.01, None) <= 0.0
                for g in self.rig.part_geoms[area]
            ):
                self.targets_reached += 1
                batch.add_reward(np.array([area]), 1.0)
                self._move_target(int(area))

    # ---- heuristic ---------------------------------------------------------------------------

    def heuristic(
        self, batch: AgentBatch, slots: np.ndarray, observations: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Stand: every joint's target at its rest angle (0), the arms lowered, full strength."""
        k = slots.size
        targets = np.broadcast_to(STAND_TARGETS, (k, HINGE_COUNT))
        actions = np.concatenate([targets, np.ones((k, len(JOINTS)))], axis=1)
        return actions.astype(np.float32), np.zeros((k, 0), np.int32)

    # ---- pictures ----------------------------------------------------------------------------

    def draw(self, area: int, size: tuple[int, int]) -> np.ndarray:
        """From the side, across the way to the target: the floor, the target (orange, drawn at
        the edge when farther), the cube's forward (green) and the body parts in profile (the
        farther side first, the head lightest)."""
        hips = self.position[area, HIPS]
        yaw = float(self.cube_yaw[area])
        forward = np.array([np.sin(yaw), 0.0, np.cos(yaw)])
        across = np.array([np.cos(yaw), 0.0, -np.sin(yaw)])
        ahead = float(hips @ forward)
        view = 4.5
        canvas = Canvas(*size, (ahead - view, -0.5, ahead + view, 2.0 * view - 0.5))

        def side(points: np.ndarray) -> np.ndarray:
            return np.stack([points @ forward, points[..., 1]], axis=-1)

        canvas.rectangle((ahead, -0.25), (view + 1.0, 0.25), FLOOR, outline=WALL)
        reach = float((self.target[area] - hips) @ forward)
        target = ahead + min(reach, view - TARGET_HALF)
        canvas.rectangle((target, TARGET_HALF), (TARGET_HALF, TARGET_HALF), ORANGE)
        canvas.segments([ahead, 0.05, ahead + 1.5, 0.05], _DIRECTION, width=2)
        depth = self.position[area] @ across
        for part in np.argsort(-depth).tolist():
            spec = PARTS[part]
            centre = self.position[area, part]
            colour = _COLOURS[
                "head" if part == HEAD else "left" if spec.name.endswith("L")
                else "right" if spec.name.endswith("R") else "torso"
            ]  # fmt: skip
            if spec.shape == "sphere":
                canvas.circle(side(centre), spec.size[0], colour)
                continue
            if spec.shape == "box":
                axis, half, radius = 2, 0.5 * spec.size[2], 0.5 * spec.size[1]
                centre = centre + rotate(self.rotation[area, part], np.array(spec.centre))
            else:
                radius = spec.size[0]
                axis, half = spec.axis, 0.5 * spec.size[1] - radius
            direction = rotate(self.rotation[area, part], np.eye(3)[axis])
            ends = side(np.stack([centre - half * direction, centre + half * direction]))
            canvas.segments(ends.ravel(), colour, width=canvas.pixels(2.0 * radius))
            for end in ends:
                canvas.circle(end, radius, colour)
        return canvas.picture()


def _rest_actions() -> np.ndarray:
    """The target actions that hold every hinge at angle 0, with the shoulders lowered."""
    actions = (0.0 - HINGE_LOW) / (HINGE_HIGH - HINGE_LOW) * 2.0 - 1.0
    return np.asarray(actions)


#: The heuristic's standing pose (target actions).
STAND_TARGETS = _rest_actions()
