"""VisualFoodCollector: the FoodCollector game seen through each agent's own camera (ML-Agents'
``VisualFoodCollector`` scene), drawn by a small software ray caster.

The game (arena, food, moves, laser, rewards, episodes, ``agent_scale`` and ``laser_length``,
option ``max_step``, heuristic) is :class:`~.foodcollector.FoodCollectorGame`'s. ML-Agents facts of
this version (``FoodCollectorAgent.cs`` with ``useVectorFrozenFlag``, the agent camera of the
FoodCollector prefabs, the real recording ``testhybridvis.demo`` of this scene):

* Behavior ``VisualFoodCollector?team=0``; two sensors (wire order): ``CameraSensor``
  ``(3, 84, 84)`` RGB, PNG, and ``VectorSensor_size1`` ``(1,)``, 1 while the agent is frozen;
  hybrid actions 3 + (2,), decision period 5 with actions between, max step 5000.
* The camera (``AgentCamera``): 0.15 ahead of the agent's centre, level, vertical field of view
  60 degrees, near plane 0.3, solid background colour (0.467, 0.565, 0.608) (the recording's
  sky is exactly that colour).
* What it sees: the dark floor, the grey outer walls, green food and red bad food spheres
  (radius 0.75, resting on the floor) and the other agents as boxes whose colour is their look
  (:data:`~.foodcollector.LOOK_NORMAL` and the others: satiated agents show the food's green,
  poisoned ones the bad food's red, frozen ones the walls' grey), Lambert-shaded by one light.
  The colours of the floor, walls, food and bad food are those of the recording's pictures.

Estimated: 4 areas of 5 agents (the scene's areas ``VisualFoodCollectorArea`` to ``(3)``; how many
agents each keeps active is not in the sources read); the camera's height, 1.75 above the floor
(:data:`CAMERA_RISE` above the agent's centre, scaled with the agent): the prefab read puts the
camera at the centre's height, but the recording shows the centres of food spheres 0.75 high
well below the horizon, about 1 unit below the camera; the walls' height (3: their top and
foot seen at 1.1 and 1.4 degrees from the horizon); the agents' blue and the light's direction.
Not drawn: the agents' eyes, mouths and headbands, the laser beam, the floor's grid lines,
shadows, food falling after a respawn.

Heuristic: FoodCollector's (privileged: it reads the scene's state, not the pixels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..academy import AgentBatch
from ..render import to_chw_floats
from ..specs import BehaviorSpec, Compression, SensorSpec
from .foodcollector import (
    AGENT_HALF,
    AGENTS_PER_AREA,
    FOOD_RADIUS,
    LOOK_FROZEN,
    LOOK_NORMAL,
    LOOK_POISONED,
    LOOK_SATIATED,
    WALL_HALF,
    WALL_THICKNESS,
    FoodCollectorGame,
)
from .registry import register_scene

__all__ = ["CAMERA_SIZE", "VisualFoodCollectorScene", "camera_rays", "pixel_tangents"]

CAMERA_SIZE = 84
FIELD_OF_VIEW = 60.0
CAMERA_AHEAD = 0.15
#: The camera above the agent's centre (estimated from the recording, see the module notes).
CAMERA_RISE = 1.25
NEAR_PLANE = 0.3
WALL_HEIGHT = 3.0
SKY = np.array([0.46666667, 0.5647059, 0.60784316])
FLOOR = np.array([0.19, 0.19, 0.19])
WALL = np.array([0.36, 0.36, 0.36])
FOOD = np.array([0.42, 0.77, 0.44])
BAD_FOOD = np.array([0.55, 0.165, 0.11])
AGENT_BLUE = np.array([0.15, 0.35, 0.8])
#: Colours of the looks, indexed by ``LOOK_*``.
LOOKS = np.stack([AGENT_BLUE, BAD_FOOD, FOOD, WALL])
_LIGHT = np.array([-0.35, 0.4, 0.85])  # (ground x, ground y, up)
_LIGHT = _LIGHT / np.linalg.norm(_LIGHT)
_AMBIENT = 0.6
_UP = np.array([0.0, 0.0, 1.0])
_ZERO = np.zeros(3)
assert (LOOK_NORMAL, LOOK_POISONED, LOOK_SATIATED, LOOK_FROZEN) == (0, 1, 2, 3)


def pixel_tangents(size: int = CAMERA_SIZE) -> np.ndarray:
    """The tangent of each pixel column's angle from the view's centre, left to right (and,
    negated, of each row's, top to bottom), ``(size,)``."""
    half = np.tan(np.radians(FIELD_OF_VIEW) / 2.0)
    return ((np.arange(size) + 0.5) / size * 2.0 - 1.0) * half


def camera_rays(size: int = CAMERA_SIZE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel directions of a level camera in its own frame, ``(size * size,)`` each: how far
    right, up and ahead (row 0 at the top, column 0 on the left), unit length: the directions
    (tangent, -row tangent, 1) of :func:`pixel_tangents`, normalized."""
    steps = pixel_tangents(size)
    across, up = np.meshgrid(steps, -steps)
    ahead = np.ones_like(across)
    norm = np.sqrt(across**2 + up**2 + ahead**2)
    return (across / norm).ravel(), (up / norm).ravel(), (ahead / norm).ravel()


_TANGENTS = pixel_tangents()


def _tangent_range(side: float, ahead: float) -> tuple[float, float] | None:
    """The tangents ``side / ahead`` of the rays, in one plane through the camera, that pass a
    food sphere whose centre lies ``side`` and ``ahead`` of it in that plane (None: behind).
    A ray that meets the sphere meets its shadow on the plane, a disc of the same radius."""
    reach = FOOD_RADIUS * 1.001 + 1e-9  # a margin for rounding
    distance = math.hypot(side, ahead)
    if distance <= reach:
        return -math.inf, math.inf
    centre = math.atan2(side, ahead)
    spread = math.asin(reach / distance)
    low, high = centre - spread, centre + spread
    if low >= math.pi / 2 or high <= -math.pi / 2:
        return None
    return (
        math.tan(low) if low > -math.pi / 2 else -math.inf,
        math.tan(high) if high < math.pi / 2 else math.inf,
    )


def _index_range(low: float, high: float) -> slice:
    """Columns (or rows) whose tangent lies in ``[low, high]``, widened by one on each side."""
    start = int(np.searchsorted(_TANGENTS, low)) - 1
    stop = int(np.searchsorted(_TANGENTS, high, side="right")) + 1
    return slice(max(start, 0), min(stop, CAMERA_SIZE))


def _outlined_pixels(relative: np.ndarray, forward: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Flat indices of the pixels whose rays may meet a food sphere, given each sphere's
    camera-minus-centre ``relative`` ``(m, 3)`` and the camera's ground ``forward`` and
    ``right``: a superset of the pixels that show food (each sphere's bounding rectangle on the
    picture, from its shadows on the camera's horizontal and vertical planes)."""
    mask = np.zeros((CAMERA_SIZE, CAMERA_SIZE), dtype=bool)
    sides = (-(relative[:, :2] @ right)).tolist()
    aheads = (-(relative[:, :2] @ forward)).tolist()
    rises = (-relative[:, 2]).tolist()
    for side, rise, ahead in zip(sides, rises, aheads, strict=True):
        across = _tangent_range(side, ahead)
        upward = _tangent_range(rise, ahead) if across is not None else None
        if across is None or upward is None:
            continue
        # Rows run top to bottom: row i looks up by minus the tangent of column i.
        mask[_index_range(-upward[1], -upward[0]), _index_range(*across)] = True
    return np.flatnonzero(mask)


@register_scene
class VisualFoodCollectorScene(FoodCollectorGame):
    """Collect food seen through the agent's camera (84 x 84 RGB) plus a frozen flag."""

    name = "VisualFoodCollector"
    summary = (
        "FoodCollector seen by each agent's camera (84x84 RGB PNG + frozen flag, 4 x 5 agents)"
    )
    default_area_count = 4
    behavior_name = "VisualFoodCollector"

    def behaviors(self) -> Sequence[BehaviorSpec]:
        """``VisualFoodCollector?team=0``: camera (3, 84, 84) PNG and vector (1,); continuous 3 +
        discrete (2), period 5, max step 5000 (option ``max_step``)."""
        camera = SensorSpec("CameraSensor", (3, CAMERA_SIZE, CAMERA_SIZE), Compression.PNG)
        return [self._behavior((camera, SensorSpec("VectorSensor_size1", (1,))))]

    def collect_observations(self, batch: AgentBatch, slots: np.ndarray) -> Sequence[np.ndarray]:
        """Each agent's picture ``(3, 84, 84)`` in [0, 1] and its frozen flag."""
        areas, agents = np.divmod(slots, AGENTS_PER_AREA)
        frozen = self.frozen[areas, agents].astype(np.float32)[:, None]
        return [to_chw_floats(self.render(slots)), frozen]

    def render(self, slots: np.ndarray) -> np.ndarray:
        """The camera pictures of agents ``slots``, ``(k, 84, 84, 3)`` uint8 RGB."""
        across, up, ahead = camera_rays()
        pictures = np.empty((slots.size, CAMERA_SIZE * CAMERA_SIZE, 3), dtype=np.uint8)
        for row, slot in enumerate(slots.tolist()):
            area, me = divmod(int(slot), AGENTS_PER_AREA)
            pictures[row] = self._picture(area, me, across, up, ahead)
        return pictures.reshape(slots.size, CAMERA_SIZE, CAMERA_SIZE, 3)

    def _picture(
        self, area: int, me: int, across: np.ndarray, up: np.ndarray, ahead: np.ndarray
    ) -> np.ndarray:
        """One agent's picture, ``(pixels, 3)`` uint8."""
        heading = self.heading[area, me]
        forward = np.array([np.cos(heading), np.sin(heading)])
        right = np.array([forward[1], -forward[0]])
        scale = self.scale[area, me]
        eye = self.position[area, me] + forward * CAMERA_AHEAD * scale
        height = (AGENT_HALF + CAMERA_RISE) * scale  # the camera above the floor
        # Ray directions in the world: ground (x, y) and up.
        ground = ahead[:, None] * forward[None, :] + across[:, None] * right[None, :]
        pixels = ground.shape[0]
        depth = np.full(pixels, np.inf)
        colour = np.broadcast_to(SKY, (pixels, 3)).copy()
        normal = np.zeros((pixels, 3))
        # Floor: up = 0 under the camera.
        floor_t = np.where(up < 0.0, -height / np.minimum(up, -1e-12), np.inf)
        self._keep(depth, colour, normal, floor_t, FLOOR, _UP)
        # Walls: the inner faces at +-WALL_HALF, from the floor to WALL_HEIGHT.
        for axis in (0, 1):
            d = ground[:, axis]
            face = np.where(d >= 0.0, WALL_HALF, -WALL_HALF)
            t = (face - eye[axis]) / np.where(np.abs(d) < 1e-12, 1e-12, d)
            other = eye[1 - axis] + t * ground[:, 1 - axis]
            rise = height + t * up
            valid = (t > 0) & (np.abs(other) <= WALL_HALF + WALL_THICKNESS)
            valid &= (rise >= 0.0) & (rise <= WALL_HEIGHT)
            nearer = self._keep(depth, colour, normal, np.where(valid, t, np.inf), WALL, _ZERO)
            normal[nearer, axis] = -np.sign(d[nearer])
        # Food: spheres resting on the floor; those outside the view are skipped.
        view = self._in_view(self.food[area], eye, forward, right, FOOD_RADIUS)
        if view.any():
            spheres = (self.food[area][view], self.is_bad[view])
            self._spheres(spheres, eye, height, (forward, right), ground, up, depth, colour, normal)
        # The other agents: boxes turned with their headings, as tall as they are wide.
        reach = AGENT_HALF * np.sqrt(2.0) * self.scale[area]
        seen = self._in_view(self.position[area], eye, forward, right, reach)
        for other in np.flatnonzero(seen).tolist():
            if other != me:
                self._agent_box(area, other, eye, height, ground, up, depth, colour, normal)
        lambert = np.clip(normal @ _LIGHT, 0.0, 1.0)
        lit = np.isfinite(depth) & normal.any(axis=1)  # finite normals: any is abs-sum > 0
        shade = np.where(lit, _AMBIENT + (1.0 - _AMBIENT) * lambert, 1.0)
        return np.clip(np.rint(colour * shade[:, None] * 255.0), 0, 255).astype(np.uint8)

    @staticmethod
    def _in_view(
        centres: np.ndarray,
        eye: np.ndarray,
        forward: np.ndarray,
        right: np.ndarray,
        radius: float | np.ndarray,
    ) -> np.ndarray:
        """Which things (ground ``centres`` ``(m, 2)``, bounding ``radius``) may show in the
        picture: not behind the camera and within the horizontal field of view."""
        offset = centres - eye[None, :]
        along = offset @ forward
        side = np.abs(offset @ right)
        slope = np.tan(np.radians(FIELD_OF_VIEW) / 2.0)
        margin = np.asarray(radius) * np.sqrt(1.0 + slope**2)
        return (along > -np.asarray(radius)) & (side <= along * slope + margin)

    def _spheres(
        self,
        spheres: tuple[np.ndarray, np.ndarray],
        eye: np.ndarray,
        height: float,
        frame: tuple[np.ndarray, np.ndarray],
        ground: np.ndarray,
        up: np.ndarray,
        depth: np.ndarray,
        colour: np.ndarray,
        normal: np.ndarray,
    ) -> None:
        """Draw food spheres (``spheres``: ground centres ``(m, 2)``, which are bad ``(m,)``)
        into the buffers (in place); ``frame`` is the camera's forward and right on the ground."""
        food, bad_food = spheres
        relative = np.concatenate(
            [eye[None, :] - food, np.full((food.shape[0], 1), height - FOOD_RADIUS)], axis=1
        )  # (m, 3): camera minus centre
        rays = np.concatenate([ground, up[:, None]], axis=1)  # (pixels, 3)
        b = rays @ relative.T  # (pixels, m)
        c = np.einsum("mc,mc->m", relative, relative) - FOOD_RADIUS**2
        # Only the pixels inside some sphere's outline (with a margin) can show food: the others'
        # distances are all infinite and change nothing, so the rest is computed on those (the
        # same arithmetic per pixel).
        rows = _outlined_pixels(relative, *frame)
        if rows.size == 0:
            return
        b = b[rows]
        disc = b * b - c[None, :]
        t = -b - np.sqrt(np.maximum(disc, 0.0))
        t = np.where((disc >= 0.0) & (t > 0.0) & (c[None, :] > 0.0), t, np.inf)
        nearest = np.argmin(t, axis=1)
        sphere_t = t[np.arange(rows.size), nearest]
        hit_point = rays[rows] * np.where(np.isfinite(sphere_t), sphere_t, 0.0)[:, None]
        sphere_normal = (hit_point + relative[nearest]) / FOOD_RADIUS
        sphere_colour = np.where(bad_food[nearest][:, None], BAD_FOOD, FOOD)
        self._keep_rows(depth, colour, normal, rows, sphere_t, sphere_colour, sphere_normal)

    def _agent_box(
        self,
        area: int,
        other: int,
        eye: np.ndarray,
        height: float,
        ground: np.ndarray,
        up: np.ndarray,
        depth: np.ndarray,
        colour: np.ndarray,
        normal: np.ndarray,
    ) -> None:
        """Draw agent ``other``'s box into the buffers (in place).

        The slab test runs only on the pixels whose ray passes within the box's bounding sphere
        (with a margin): no other ray can meet the box, and each pixel's arithmetic is the same
        as over the whole picture.
        """
        heading = self.heading[area, other]
        axes = np.array([[np.cos(heading), np.sin(heading)], [np.sin(heading), -np.cos(heading)]])
        half = AGENT_HALF * self.scale[area, other]
        start = eye - self.position[area, other]
        across_box = ground @ axes[0]
        along_box = ground @ axes[1]
        # The camera relative to the box's centre (half above the floor); rays are unit length.
        centre = np.array([start[0], start[1], height - half])
        along_ray = ground @ centre[:2] + up * centre[2]
        reach = half * np.sqrt(3.0) + 0.01
        rows = np.flatnonzero(centre @ centre - along_ray * along_ray <= reach * reach)
        if rows.size == 0:
            return
        t_near = np.full(rows.size, -np.inf)
        t_far = np.full(rows.size, np.inf)
        face = np.zeros((rows.size, 3))
        slabs = [
            (axes[0] @ start, across_box[rows], half, np.array([*axes[0], 0.0])),
            (axes[1] @ start, along_box[rows], half, np.array([*axes[1], 0.0])),
            (height - half, up[rows], half, _UP),  # the box spans 0 to 2 half
        ]
        for origin, direction, extent, axis in slabs:
            safe = np.where(np.abs(direction) < 1e-12, 1e-12, direction)
            t1 = (-extent - origin) / safe
            t2 = (extent - origin) / safe
            near = np.minimum(t1, t2)
            entering = near > t_near
            t_near = np.where(entering, near, t_near)
            face = np.where(entering[:, None], -np.sign(safe)[:, None] * axis[None, :], face)
            t_far = np.minimum(t_far, np.maximum(t1, t2))
        t = np.where((t_near <= t_far) & (t_near > 0.0), t_near, np.inf)
        look = np.broadcast_to(LOOKS[self.look[area, other]], face.shape)
        self._keep_rows(depth, colour, normal, rows, t, look, face)

    @staticmethod
    def _keep(
        depth: np.ndarray,
        colour: np.ndarray,
        normal: np.ndarray,
        t: np.ndarray,
        new_colour: np.ndarray,
        new_normal: np.ndarray,
    ) -> np.ndarray:
        """Where ``t`` is nearer than ``depth`` (and beyond the near plane), take the new hit:
        one ``new_colour`` and ``new_normal`` (shape ``(3,)``) for every pixel. Returns where."""
        nearer = (t < depth) & (t >= NEAR_PLANE)
        depth[nearer] = t[nearer]
        colour[nearer] = new_colour
        normal[nearer] = new_normal
        return nearer

    @staticmethod
    def _keep_rows(
        depth: np.ndarray,
        colour: np.ndarray,
        normal: np.ndarray,
        rows: np.ndarray,
        t: np.ndarray,
        new_colour: np.ndarray,
        new_normal: np.ndarray,
    ) -> None:
        """:meth:`_keep` for pixels ``rows`` only, with a hit per row: ``t`` ``(len(rows),)``,
        ``new_colour`` and ``new_normal`` ``(len(rows), 3)``."""
        nearer = (t < depth[rows]) & (t >= NEAR_PLANE)
        kept = rows[nearer]
        depth[kept] = t[nearer]
        colour[kept] = new_colour[nearer]
        normal[kept] = new_normal[nearer]
