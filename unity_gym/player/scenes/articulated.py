"""Shared helpers of the scenes whose bodies are jointed rigid bodies simulated by MuJoCo
(``Worm``, ``Crawler``, ``Walker``): loading MuJoCo, the arena (floor and walls) of every area,
reading the bodies' poses and velocities, the floor contacts, the orientation cube's turn and
Unity's quaternion arithmetic.

Not a scene: it registers nothing. Quaternions are Unity's (x, y, z, w); MuJoCo's numbers are
Unity's numbers (y up, see ``worm.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PlayerError

__all__ = [
    "BodyStates",
    "angle_degrees",
    "arena_walls_xml",
    "arena_xml",
    "body_states",
    "conjugate",
    "floor_contacts",
    "floor_touches",
    "from_to",
    "into_cube",
    "load_mujoco",
    "multiply",
    "point_in_unit_sphere",
    "rotate",
    "yaw_quaternion",
    "yaw_towards",
]


def load_mujoco(scene: str) -> Any:
    """The ``mujoco`` module, for the scene called ``scene``.

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


def arena_xml(area_count: int, spacing: float, half: float, wall_height: float) -> str:
    """MJCF of the shared floor (a plane with normal +y, geom ``floor``) and each area's four
    walls (``a{area}wall{e,w,n,s}``, 1 thick, around a ``2 half`` square), areas ``spacing``
    apart along x."""
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
    return floor + "".join(walls)


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


def floor_contacts(data: Any, floor: int, geom_part: np.ndarray, touching: np.ndarray) -> None:
    """Mark in ``touching`` (areas x parts, cleared first) the parts that touch the floor in the
    last physics step's contacts; ``geom_part`` maps geom ids to (area, part), -1 for others."""
    touching[:] = False
    count = data.ncon
    if count == 0:
        return
    pairs = data.contact.geom[:count]
    for first, second in ((0, 1), (1, 0)):
        on_floor = pairs[:, first] == floor
        found = geom_part[pairs[on_floor, second]]
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


def arena_walls_xml(
    area_count: int, spacing: float, half: float, height: float, bottom: float = 0.0
) -> str:
    """MJCF boxes of the four walls of every area (areas ``spacing`` apart along x): walls half
    a unit thick at ``+-half`` from the area's centre, from ``bottom`` to ``bottom + height``."""
    walls = []
    centre_y = bottom + 0.5 * height
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
                f'pos="{x + cx} {centre_y} {cz}" '
                f'size="{hx} {0.5 * height} {hz}"/>'
            )
    return "".join(walls)


def floor_touches(data: Any, floor: int, geom_part: np.ndarray, touching: np.ndarray) -> None:
    """Mark in ``touching`` (areas, parts) the parts that touch the floor geom ``floor`` in the
    contacts of the last physics step; ``geom_part`` maps a geom id to ``(area, part)`` (-1 for
    geoms that are no part)."""
    touching[:] = False
    count = data.ncon
    if count == 0:
        return
    pairs = data.contact.geom[:count]
    for first, second in ((0, 1), (1, 0)):
        on_floor = pairs[:, first] == floor
        found = geom_part[pairs[on_floor, second]]
        found = found[found[:, 0] >= 0]
        touching[found[:, 0], found[:, 1]] = True
