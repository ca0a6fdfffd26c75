"""What the scenes whose bodies are jointed rigid bodies simulated by MuJoCo (``Worm``,
``Crawler``, ``Walker``) share.

:class:`ArticulatedScene`, their base class: one MuJoCo model holding every area's body, the
parts' states, each area's orientation cube and target, the physics step, the view from above.
The helpers it and the scenes use: loading MuJoCo (with the message that names the extra to
install), the model's frame (settings, floor and walls), where each area's body lives in the model
(:class:`Rig`) and putting it back to its starting pose, the bodies' poses and velocities, which
parts touch the floor, Unity's ``Random.insideUnitSphere``, the orientation cube's turn and space
(a turn about y only), the speed-match reward and quaternion arithmetic in Unity's (x, y, z, w)
order.

Not a scene module: it registers nothing. MuJoCo is given Unity's numbers (y up) as they are, so
the simulated world is the mirror image of Unity's; every quaternion and vector here keeps Unity's
numeric conventions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..academy import AgentBatch, SceneContext
from ..errors import PlayerError
from ..render import FLOOR, GREEN, ORANGE, WALL, Canvas
from .base import MaxStepOption, Scene

__all__ = [
    "TARGET_HALF",
    "TARGET_SPAWN_RADIUS",
    "ArticulatedScene",
    "BodyStates",
    "Rig",
    "angle_degrees",
    "body_states",
    "conjugate",
    "find_rig",
    "floor_contacts",
    "from_to",
    "into_cube",
    "load_mujoco",
    "multiply",
    "point_in_unit_sphere",
    "reset_poses",
    "rotate",
    "scene_mjcf",
    "speed_match",
    "yaw_forward",
    "yaw_quaternion",
    "yaw_towards",
]

#: ``DynamicTarget.prefab``: a 1 x 1 x 1 cube (half size) moved within ``spawnRadius`` 40 of its
#: start.
TARGET_HALF = 0.5
TARGET_SPAWN_RADIUS = 40.0


def load_mujoco(scene: str) -> Any:
    """The ``mujoco`` module.

    Args:
        scene: the scene's name, for the message.

    Raises:
        PlayerError: if MuJoCo is not installed (the message names the scene and the extra to
            install).
    """
    try:
        import mujoco
    except ImportError as exc:
        raise PlayerError(
            f"scene {scene} simulates its physics with MuJoCo, which is not installed: "
            'pip install "unity-gym[mujoco]"'
        ) from exc
    return mujoco


def scene_mjcf(
    model: str,
    area_count: int,
    *,
    spacing: float,
    half: float,
    wall_height: float,
    timestep: float,
    gravity: float,
    integrator: str,
    friction: float,
    bodies: str,
    actuators: str,
) -> str:
    """The MJCF model ``model`` of ``area_count`` areas ``spacing`` apart along x: angles in
    radians, the time step, gravity (down -y) and integrator given, every geom's sliding
    friction ``friction``; a shared floor (a plane with normal +y, geom ``floor``), each area's
    four walls (``a{area}wall{e,w,n,s}``, 1 thick and ``wall_height`` high, around a ``2 half``
    square), then ``bodies`` (MJCF of the world's bodies) and ``actuators``."""
    walls = []
    for area in range(area_count):
        x = area * spacing
        for name, (cx, cz, hx, hz) in {
            "e": (half, 0.0, 0.5, half),
            "w": (-half, 0.0, 0.5, half),
            "n": (0.0, half, half, 0.5),
            "s": (0.0, -half, half, 0.5),
        }.items():
            walls.append(
                f'<geom name="a{area}wall{name}" type="box" '
                f'pos="{x + cx} {0.5 * wall_height} {cz}" '
                f'size="{hx} {0.5 * wall_height} {hz}"/>'
            )
    floor = (
        f'<geom name="floor" type="plane" size="0 0 1" quat="{np.sqrt(0.5)} {-np.sqrt(0.5)} 0 0"/>'
    )
    return (
        f'<mujoco model="{model}">'
        '<compiler angle="radian"/>'
        f'<option timestep="{timestep}" gravity="0 {-gravity} 0" integrator="{integrator}"/>'
        f'<default><geom friction="{friction} 0.005 0.0001"/></default>'
        f"<worldbody>{floor}{''.join(walls)}{bodies}</worldbody>"
        f"<actuator>{actuators}</actuator>"
        "</mujoco>"
    )


@dataclass(frozen=True)
class Rig:
    """Where each area's body lives in a MuJoCo model built by the naming rules of
    :func:`find_rig` (arrays indexed by area first)."""

    #: Body ids of the parts, (areas, parts).
    bodies: np.ndarray
    #: Geom ids of the parts' colliders, (areas, parts).
    part_geoms: np.ndarray
    #: Geom id of the floor.
    floor: int
    #: ``qpos`` and ``qvel`` addresses of each area's root free joint, (areas,).
    qpos_root: np.ndarray
    qvel_root: np.ndarray
    #: ``qpos`` and ``qvel`` addresses of each area's hinges, (areas, hinges).
    qpos_hinges: np.ndarray
    qvel_hinges: np.ndarray
    #: Geom id -> (area, part) for the ground check; (-1, -1) for geoms that are no part.
    geom_part: np.ndarray


def find_rig(
    mujoco: Any, model: Any, parts: Sequence[Sequence[str]], hinges: Sequence[Sequence[str]]
) -> Rig:
    """The :class:`Rig` of ``model``.

    Args:
        mujoco: the ``mujoco`` module.
        model: the ``MjModel``: a plane geom ``floor``, and per area ``a`` a free joint
            ``a{a}root`` at the root of its body.
        parts: per area, the names of its parts: each names a body and that body's collider geom.
        hinges: per area, the names of its hinge joints, in the order the scene uses.
    """
    body = mujoco.mjtObj.mjOBJ_BODY
    geom = mujoco.mjtObj.mjOBJ_GEOM
    joint = mujoco.mjtObj.mjOBJ_JOINT

    def ids(kind: Any, names: Sequence[Sequence[str]]) -> np.ndarray:
        return np.array([[mujoco.mj_name2id(model, kind, name) for name in row] for row in names])

    roots = ids(joint, [[f"a{a}root" for a in range(len(parts))]])[0]
    hinge_ids = ids(joint, hinges)
    part_geoms = ids(geom, parts)
    geom_part = np.full((model.ngeom, 2), -1, dtype=np.int64)
    for area, row in enumerate(part_geoms.tolist()):
        for part, geom_id in enumerate(row):
            geom_part[geom_id] = (area, part)
    return Rig(
        bodies=ids(body, parts),
        part_geoms=part_geoms,
        floor=mujoco.mj_name2id(model, geom, "floor"),
        qpos_root=model.jnt_qposadr[roots],
        qvel_root=model.jnt_dofadr[roots],
        qpos_hinges=model.jnt_qposadr[hinge_ids],
        qvel_hinges=model.jnt_dofadr[hinge_ids],
        geom_part=geom_part,
    )


def reset_poses(
    data: Any, rig: Rig, areas: np.ndarray, start: np.ndarray, yaws: np.ndarray
) -> None:
    """Put the bodies of ``areas`` back to their starting pose: the root at ``start[area]``
    (world) turned by ``yaws`` (radians, about y, one per area in ``areas``), every hinge at 0 and
    every velocity 0 (``qpos``/``qvel`` only: refresh the states after)."""
    qpos = data.qpos
    qvel = data.qvel
    for area, turn in zip(areas.tolist(), yaws.tolist(), strict=True):
        root = rig.qpos_root[area]
        qpos[root : root + 3] = start[area]
        qpos[root + 3 : root + 7] = [np.cos(turn / 2.0), 0.0, np.sin(turn / 2.0), 0.0]
        qpos[rig.qpos_hinges[area]] = 0.0
        dof = rig.qvel_root[area]
        qvel[dof : dof + 6] = 0.0
        qvel[rig.qvel_hinges[area]] = 0.0


class BodyStates:
    """Poses and velocities of chosen bodies (arrays shaped like the body ids, then 3 or 4)."""

    __slots__ = ("angular_velocity", "position", "rotation", "velocity")

    def __init__(
        self,
        position: np.ndarray,
        rotation: np.ndarray,
        velocity: np.ndarray,
        angular_velocity: np.ndarray,
    ) -> None:
        #: Centres of the bodies' frames (world).
        self.position = position
        #: Rotations (x, y, z, w).
        self.rotation = rotation
        #: Velocities of the frames' origins (world).
        self.velocity = velocity
        #: Angular velocities (world).
        self.angular_velocity = angular_velocity


def body_states(mujoco: Any, model: Any, data: Any, bodies: np.ndarray) -> BodyStates:
    """Positions, rotations and velocities of ``bodies`` (ids, any shape) from ``qpos``/``qvel``
    (runs MuJoCo's kinematics and velocity stages first)."""
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    mujoco.mj_comVel(model, data)
    position = data.xpos[bodies].copy()
    wxyz = data.xquat[bodies]
    rotation = np.concatenate([wxyz[..., 1:], wxyz[..., :1]], axis=-1)
    cvel = data.cvel[bodies]
    centre = data.subtree_com[model.body_rootid[bodies]]
    angular = cvel[..., :3].copy()
    velocity = cvel[..., 3:] + np.cross(cvel[..., :3], position - centre)
    return BodyStates(position, rotation, velocity, angular)


def floor_contacts(data: Any, rig: Rig, touching: np.ndarray) -> None:
    """Mark in ``touching`` (areas x parts, cleared first) the parts that touch ``rig``'s floor in
    the contacts of the last physics step (a geom counts as the part ``rig.geom_part`` maps it
    to)."""
    touching[:] = False
    count = data.ncon
    if count == 0:
        return
    pairs = data.contact.geom[:count]
    for first, second in ((0, 1), (1, 0)):
        on_floor = pairs[:, first] == rig.floor
        found = rig.geom_part[pairs[on_floor, second]]
        found = found[found[:, 0] >= 0]
        touching[found[:, 0], found[:, 1]] = True


def point_in_unit_sphere(rng: np.random.Generator) -> np.ndarray:
    """Unity's ``Random.insideUnitSphere``: a uniform point of the unit ball (rejection)."""
    while True:
        point = rng.uniform(-1.0, 1.0, 3)
        if float(point @ point) <= 1.0:
            return point


def yaw_towards(target: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """``OrientationCubeController.UpdateOrientation``'s turn: the yaw (radians, about y) of
    ``LookRotation`` from ``origin`` (k, 3) towards ``target`` (k, 3) with the height dropped;
    0 where they coincide."""
    direction = target - origin
    flat = np.hypot(direction[:, 0], direction[:, 2]) > 0.0
    return np.where(flat, np.arctan2(direction[:, 0], direction[:, 2]), 0.0)


def yaw_forward(yaw: np.ndarray) -> np.ndarray:
    """The forward directions (k, 3) of the cubes turned by ``yaw`` (k,) about y."""
    return np.stack([np.sin(yaw), np.zeros_like(yaw), np.cos(yaw)], axis=1)


def speed_match(velocity: np.ndarray, speed: float | np.ndarray, forward: np.ndarray) -> np.ndarray:
    """``GetMatchingVelocityReward``: ``(1 - (min(|goal - velocity|, speed) / speed)^2)^2`` with
    the goal ``speed`` (a number, or one per row) along ``forward`` (k, 3); ``velocity`` (k, 3).
    1 at the goal, 0 at ``speed`` or more from it."""
    speed = np.asarray(speed, dtype=np.float64)
    miss = np.linalg.norm(velocity - speed[..., None] * forward, axis=1)
    return np.asarray((1.0 - (np.minimum(miss, speed) / speed) ** 2) ** 2)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Vectors ``v`` ``(..., 3)`` turned by quaternions ``q`` ``(..., 4)`` (x, y, z, w)."""
    u = q[..., :3]
    w = q[..., 3:4]
    t = 2.0 * np.cross(u, v)
    return np.asarray(v + w * t + np.cross(u, t))


def multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Quaternion products ``a * b`` (x, y, z, w)."""
    ax, ay, az, aw = np.moveaxis(a, -1, 0)
    bx, by, bz, bw = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def conjugate(q: np.ndarray) -> np.ndarray:
    """The inverse rotations of unit quaternions ``q`` (x, y, z, w)."""
    return np.concatenate([-q[..., :3], q[..., 3:]], axis=-1)


def yaw_quaternion(yaw: np.ndarray) -> np.ndarray:
    """Unity's ``Quaternion.Euler(0, yaw, 0)`` for yaws in radians, (x, y, z, w)."""
    zero = np.zeros_like(yaw)
    return np.stack([zero, np.sin(yaw / 2.0), zero, np.cos(yaw / 2.0)], axis=-1)


def angle_degrees(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Unity's ``Quaternion.Angle``: the angle in degrees between rotations ``a`` and ``b``."""
    dot = np.minimum(np.abs(np.einsum("...i,...i->...", a, b)), 1.0)
    return np.where(dot > 1.0 - 1e-6, 0.0, np.degrees(2.0 * np.arccos(dot)))


def from_to(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Unity's ``Quaternion.FromToRotation`` for unit vectors ``(k, 3)``: the shortest turn."""
    cross = np.cross(a, b)
    w = 1.0 + np.einsum("ij,ij->i", a, b)
    opposite = w < 1e-6
    if opposite.any():  # half a turn about any axis at right angles to a: take y (or x)
        other = np.where(np.abs(a[:, 1:2]) < 0.9, [[0.0, 1.0, 0.0]], [[1.0, 0.0, 0.0]])
        axis = np.cross(a, other)
        axis /= np.linalg.norm(axis, axis=1, keepdims=True)
        cross = np.where(opposite[:, None], axis, cross)
        w = np.where(opposite, 0.0, w)
    q = np.concatenate([cross, w[:, None]], axis=1)
    return np.asarray(q / np.linalg.norm(q, axis=1, keepdims=True))


def into_cube(yaw: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``InverseTransformDirection`` of the cube turned by ``yaw`` (k,) about y, for ``v``
    ``(k, ..., 3)``."""
    shape = (-1,) + (1,) * (v.ndim - 2)
    c = np.cos(yaw).reshape(shape)
    s = np.sin(yaw).reshape(shape)
    x, y, z = v[..., 0], v[..., 1], v[..., 2]
    return np.stack([x * c - z * s, y, x * s + z * c], axis=-1)


class ArticulatedScene(MaxStepOption, Scene):
    """What the MuJoCo scenes share: one model holding every area's body (areas
    :attr:`area_spacing` apart along x), where each body lives in it (:attr:`rig`), the parts'
    states, each area's orientation cube and target.

    Subclasses set the class attributes below, give :meth:`model_xml` and :meth:`rig_names`, and
    call this ``setup`` first in theirs, then :meth:`_refresh` once their own state is set.
    """

    #: Distance between neighbouring areas along x.
    area_spacing: ClassVar[float]
    #: Height of the root part's start above its area's origin.
    start_height: ClassVar[float]
    #: The part the orientation cube moves onto.
    cube_part: ClassVar[int] = 0
    #: MuJoCo steps per Academy step.
    physics_substeps: ClassVar[int]
    #: Half the side of an area's square floor (its walls stand there).
    arena_half: ClassVar[float]

    def model_xml(self, area_count: int) -> str:
        """The MJCF model of ``area_count`` areas (naming rules: :func:`find_rig`)."""
        raise NotImplementedError

    def rig_names(self, area: int) -> tuple[list[str], list[str]]:
        """The names of area ``area``'s parts and hinges (see :func:`find_rig`)."""
        raise NotImplementedError

    def setup(self, context: SceneContext) -> None:
        """Build the MuJoCo model of every area and the state every such scene has.

        Raises:
            PlayerError: if MuJoCo is not installed.
        """
        super().setup(context)
        mujoco = load_mujoco(self.name)
        self._mj = mujoco
        n = context.area_count
        self.model = mujoco.MjModel.from_xml_string(self.model_xml(n))
        self.data = mujoco.MjData(self.model)
        names = [self.rig_names(area) for area in range(n)]
        #: Where each area's body lives in the model.
        self.rig = find_rig(mujoco, self.model, [p for p, _ in names], [h for _, h in names])
        self.origin = np.zeros((n, 3))
        self.origin[:, 0] = np.arange(n) * self.area_spacing
        #: Target centre per area (world), the orientation cube's position and yaw (radians).
        self.target = np.zeros((n, 3))
        self.cube_position = self.origin + np.array([0.0, self.start_height, 0.0])
        self.cube_yaw = np.zeros(n)
        #: Which parts touch the floor (areas, parts), after the last physics step.
        self.touching = np.zeros(self.rig.bodies.shape, dtype=bool)
        #: Times a target was reached since start-up.
        self.targets_reached = 0

    def initialize_agents(self, batch: AgentBatch, slots: np.ndarray) -> None:
        """``Initialize``: the target moves at once."""
        for area in slots.tolist():
            self._move_target(int(area))

    def _move_target(self, area: int) -> None:
        """``MoveTargetToRandomPosition``: start + insideUnitSphere * 40, resting on the floor."""
        point = point_in_unit_sphere(self.ctx.rng)
        self.target[area] = self.origin[area] + [
            TARGET_SPAWN_RADIUS * point[0],
            TARGET_HALF,
            TARGET_SPAWN_RADIUS * point[2],
        ]

    def _refresh(self) -> None:
        """Positions, rotations (x, y, z, w) and velocities of every part (areas, parts, 3 or 4)
        from ``qpos``/``qvel``."""
        states = body_states(self._mj, self.model, self.data, self.rig.bodies)
        self.position = states.position
        self.rotation = states.rotation
        self.velocity = states.velocity
        self.angular_velocity = states.angular_velocity

    def _update_cubes(self, areas: np.ndarray | slice) -> None:
        """``UpdateOrientation``: the cube turns towards the target (from where it was), then
        moves onto :attr:`cube_part`."""
        self.cube_yaw[areas] = yaw_towards(self.target[areas], self.cube_position[areas])
        self.cube_position[areas] = self.position[areas, self.cube_part]

    def _step_physics(self) -> None:
        """:attr:`physics_substeps` MuJoCo steps, then the parts' states and floor contacts."""
        step = self._mj.mj_step
        for _ in range(self.physics_substeps):
            step(self.model, self.data)
        self._refresh()
        floor_contacts(self.data, self.rig, self.touching)

    def _reset_poses(self, slots: np.ndarray, yaws: np.ndarray) -> None:
        """:func:`reset_poses` of ``slots``' areas at their start, turned by ``yaws``."""
        start = self.origin + np.array([0.0, self.start_height, 0.0])
        reset_poses(self.data, self.rig, slots, start, yaws)

    def _turn_to_target(self, slots: np.ndarray) -> np.ndarray:
        """The turn about y (radians, in [-pi, pi)) from the forward (local z) of
        :attr:`cube_part` to the direction of the target, for ``slots``' areas."""
        forward = rotate(self.rotation[slots, self.cube_part], np.array([0.0, 0.0, 1.0]))
        to_target = self.target[slots] - self.position[slots, self.cube_part]
        error = np.arctan2(to_target[:, 0], to_target[:, 2]) - np.arctan2(
            forward[:, 0], forward[:, 2]
        )
        return np.asarray((error + np.pi) % (2.0 * np.pi) - np.pi)

    def _view_from_above(self, area: int, size: tuple[int, int]) -> Canvas:
        """A ``size`` picture of area ``area`` seen from above, 8 each way around
        :attr:`cube_part`: the floor and walls, the target (orange) and the cube's direction to it
        (green); the scene draws its body on top."""
        centre = self.position[area, self.cube_part]
        x0, z0 = float(centre[0]), float(centre[2])
        view = 8.0
        canvas = Canvas(*size, (x0 - view, z0 - view, x0 + view, z0 + view))
        origin = self.origin[area]
        half = self.arena_half
        canvas.rectangle((origin[0], origin[2]), (half, half), FLOOR, outline=WALL)
        target = self.target[area]
        canvas.rectangle((target[0], target[2]), (TARGET_HALF, TARGET_HALF), ORANGE)
        yaw = float(self.cube_yaw[area])
        reach = min(float(np.hypot(target[0] - x0, target[2] - z0)), view)
        canvas.segments(
            [x0, z0, x0 + reach * np.sin(yaw), z0 + reach * np.cos(yaw)], GREEN, width=1
        )
        return canvas
