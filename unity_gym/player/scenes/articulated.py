"""Shared helpers of the scenes whose jointed bodies MuJoCo simulates (``Worm``, ``Crawler``).

One home for what those scenes compute alike: loading MuJoCo (with the message that names the
extra to install), quaternion arithmetic in Unity's (x, y, z, w) order, the orientation cube's
space (a turn about y only), the body states MuJoCo leaves in ``MjData``, which body parts touch
the floor, the area walls and Unity's ``Random.insideUnitSphere``.

MuJoCo is given Unity's numbers (y up) as they are, so the simulated world is the mirror image of
Unity's; every quaternion and vector here keeps Unity's numeric conventions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PlayerError

__all__ = [
    "BodyStates",
    "angle_degrees",
    "arena_walls_xml",
    "conjugate",
    "floor_touches",
    "from_to",
    "into_cube",
    "load_mujoco",
    "multiply",
    "point_in_unit_sphere",
    "rotate",
    "yaw_quaternion",
]


def load_mujoco(scene: str = "this scene") -> Any:
    """The ``mujoco`` module.

    Args:
        scene: the scene's name, for the message.

    Raises:
        PlayerError: if MuJoCo is not installed (the message names the extra to install).
    """
    try:
        import mujoco
    except ImportError as exc:
        raise PlayerError(
            f"scene {scene} simulates its physics with MuJoCo, which is not installed: "
            'pip install "unity-gym[mujoco]"'
        ) from exc
    return mujoco


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
    """The inverse turns of unit quaternions ``q`` (x, y, z, w)."""
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


def point_in_unit_sphere(rng: np.random.Generator) -> np.ndarray:
    """Unity's ``Random.insideUnitSphere``: a uniform point of the unit ball (by rejection)."""
    while True:
        point = rng.uniform(-1.0, 1.0, 3)
        if float(point @ point) <= 1.0:
            return point


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


class BodyStates:
    """Positions, rotations (x, y, z, w) and velocities of chosen MuJoCo bodies.

    Args:
        mujoco: the ``mujoco`` module.
        model: the ``MjModel``.
        data: its ``MjData``.
        bodies: body ids, any shape ``S``; the arrays below have shape ``S + (3,)`` or
            ``S + (4,)``.
    """

    def __init__(self, mujoco: Any, model: Any, data: Any, bodies: np.ndarray) -> None:
        self._mj = mujoco
        self._model = model
        self._data = data
        self._bodies = bodies
        self._roots = model.body_rootid[bodies]
        self.refresh()

    def refresh(self) -> None:
        """Recompute the states from ``qpos`` and ``qvel`` (kinematics and com velocities)."""
        mujoco = self._mj
        model, data = self._model, self._data
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_comVel(model, data)
        bodies = self._bodies
        #: World positions of the bodies' frames.
        self.position = data.xpos[bodies].copy()
        wxyz = data.xquat[bodies]
        #: World rotations, (x, y, z, w).
        self.rotation = np.concatenate([wxyz[..., 1:], wxyz[..., :1]], axis=-1)
        cvel = data.cvel[bodies]
        centre = data.subtree_com[self._roots]
        #: World angular velocities.
        self.angular_velocity = cvel[..., :3].copy()
        #: World linear velocities of the bodies' frame origins.
        self.velocity = cvel[..., 3:] + np.cross(cvel[..., :3], self.position - centre)


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
