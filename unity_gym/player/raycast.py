"""Ray perception in a 2-D plane, vectorized over observers (Unity's ``RayPerceptionSensor``).

A :class:`RayPerceptionSpec` describes one sensor the way the Unity component does: rays per
direction, the largest angle, the ray length, the number of detectable tags and an optional cast
radius (a sphere cast instead of a thin ray). :class:`RayTargets` collects what the rays can hit
(segments, circles and axis-aligned boxes, each with a tag index), and :meth:`RayTargets.cast`
returns the nearest hit of every ray of every observer as :class:`RayHits`.

Observations use Unity's layout (``RayPerceptionOutput.ToFloatArray``): per ray, ``num_tags + 2``
values: a one-hot of the tag that was hit (all zero if nothing or an untagged object was hit),
then ``1`` if the ray hit nothing (else ``0``), then the hit distance as a fraction of the ray
length (``1`` without a hit). Rays are ordered as Unity orders them: straight ahead first, then
alternately one step clockwise ("right") and one step counter-clockwise ("left"), moving
outwards.

Coordinates are ``(x, y)`` in a right-handed plane with angles measured counter-clockwise; a
heading ``h`` looks along ``(cos h, sin h)``. As in Unity, an object that already contains the
ray's origin (or overlaps the cast sphere at the start) is not detected by that ray.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RayHits", "RayPerceptionSpec", "RayTargets", "ray_angle_offsets"]

_NO_HIT = np.inf


def ray_angle_offsets(rays_per_direction: int, max_ray_degrees: float) -> np.ndarray:
    """Ray angles in radians relative to the sensor's forward direction, in Unity order.

    ``0`` first, then ``-d, +d, -2d, +2d, ...`` with ``d = max_ray_degrees / rays_per_direction``
    (negative = clockwise). With no rays per direction there is only the forward ray.

    Raises:
        ValueError: on a negative ray count or a non-positive angle with side rays.
    """
    if rays_per_direction < 0:
        raise ValueError(f"rays_per_direction must be >= 0, got {rays_per_direction}")
    if rays_per_direction == 0:
        return np.zeros(1)
    if max_ray_degrees <= 0:
        raise ValueError(f"max_ray_degrees must be > 0, got {max_ray_degrees}")
    step = np.radians(max_ray_degrees) / rays_per_direction
    outward = step * np.arange(1, rays_per_direction + 1)
    offsets = np.zeros(2 * rays_per_direction + 1)
    offsets[1::2] = -outward
    offsets[2::2] = outward
    return offsets


@dataclass(frozen=True)
class RayPerceptionSpec:
    """The geometry of one ray sensor.

    Args:
        rays_per_direction: rays on each side of the forward ray (``2 k + 1`` rays in all).
        max_ray_degrees: angle of the outermost rays from the forward direction.
        ray_length: how far rays reach; hit distances are fractions of it.
        num_tags: number of detectable tags (the one-hot width per ray).
        cast_radius: radius of the cast sphere (0 = thin rays).
        heading_offset_degrees: rotation of the sensor relative to the observer's heading
            (e.g. 180 for a sensor looking backwards).

    Raises:
        ValueError: on a non-positive ray length, a negative radius or tag count.
    """

    rays_per_direction: int
    max_ray_degrees: float
    ray_length: float
    num_tags: int
    cast_radius: float = 0.0
    heading_offset_degrees: float = 0.0

    def __post_init__(self) -> None:
        if self.ray_length <= 0:
            raise ValueError(f"ray_length must be > 0, got {self.ray_length}")
        if self.cast_radius < 0 or self.num_tags < 0:
            raise ValueError("cast_radius and num_tags must be >= 0")
        ray_angle_offsets(self.rays_per_direction, self.max_ray_degrees)

    @property
    def ray_count(self) -> int:
        """Number of rays."""
        return 2 * self.rays_per_direction + 1

    @property
    def observation_size(self) -> int:
        """Length of one observation: ``ray_count * (num_tags + 2)``."""
        return self.ray_count * (self.num_tags + 2)

    def directions(self, headings: np.ndarray) -> np.ndarray:
        """Unit ray directions ``(n, ray_count, 2)`` for observers with ``headings`` (radians)."""
        offsets = ray_angle_offsets(self.rays_per_direction, self.max_ray_degrees)
        angles = (
            np.asarray(headings, dtype=np.float64)[:, None]
            + np.radians(self.heading_offset_degrees)
            + offsets[None, :]
        )
        return np.stack([np.cos(angles), np.sin(angles)], axis=-1)

    def perceive(
        self, targets: RayTargets, origins: np.ndarray, headings: np.ndarray
    ) -> np.ndarray:
        """The sensor's observations ``(n, observation_size)`` (float32) for ``n`` observers."""
        hits = targets.cast(origins, self.directions(headings), self.ray_length, self.cast_radius)
        return hits.encode(self.num_tags)


@dataclass(frozen=True)
class RayHits:
    """Nearest hit of every ray.

    Attributes:
        fraction: ``(n, rays)`` hit distance over the ray length, 1 where nothing was hit.
        tag: ``(n, rays)`` tag index of the object hit, -1 for no hit or an untagged object.
        hit: ``(n, rays)`` whether the ray hit anything.
    """

    fraction: np.ndarray
    tag: np.ndarray
    hit: np.ndarray

    def encode(self, num_tags: int) -> np.ndarray:
        """Unity's per-ray layout (one-hot tag, no-hit flag, fraction), flattened per observer."""
        n, rays = self.fraction.shape
        out = np.zeros((n, rays, num_tags + 2), dtype=np.float32)
        tagged = self.hit & (self.tag >= 0) & (self.tag < num_tags)
        rows, columns = np.nonzero(tagged)
        out[rows, columns, self.tag[rows, columns]] = 1.0
        out[:, :, num_tags] = ~self.hit
        out[:, :, num_tags + 1] = self.fraction
        return out.reshape(n, rays * (num_tags + 2))


def _tags(tags: int | np.ndarray, n: int, k: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(tags, dtype=np.int64), (n, k))


class RayTargets:
    """What the rays of ``n`` observers can hit, in the observers' common coordinates.

    Each ``add_*`` method takes arrays either shared by all observers (no leading observer axis)
    or given per observer (leading axis ``n``), plus tags (an int, one per object, or ``(n, k)``
    when the same object means different things to different observers).

    Args:
        observers: number of observers ``n``.
    """

    def __init__(self, observers: int) -> None:
        self.observers = observers
        self._segments: list[tuple[np.ndarray, np.ndarray]] = []
        self._circles: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]] = []
        self._boxes: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]] = []

    def _per_observer(self, values: np.ndarray, width: int) -> np.ndarray:
        array = np.asarray(values, dtype=np.float64)
        if array.ndim == 2:
            array = array[None]
        return np.broadcast_to(array, (self.observers, array.shape[1], width))

    def add_segments(self, segments: np.ndarray, tags: int | np.ndarray) -> None:
        """Line segments ``(k, 4)`` or ``(n, k, 4)`` as ``[x0, y0, x1, y1]`` (e.g. walls)."""
        points = self._per_observer(segments, 4)
        self._segments.append((points, _tags(tags, self.observers, points.shape[1])))

    def add_circles(
        self,
        centers: np.ndarray,
        radii: float | np.ndarray,
        tags: int | np.ndarray,
        active: np.ndarray | None = None,
    ) -> None:
        """Circles with ``centers`` ``(k, 2)`` or ``(n, k, 2)``; ``active`` ``(n, k)`` hides some
        (e.g. the observer itself)."""
        points = self._per_observer(centers, 2)
        k = points.shape[1]
        radius = np.broadcast_to(np.asarray(radii, dtype=np.float64), (self.observers, k))
        self._circles.append((points, radius, _tags(tags, self.observers, k), active))

    def add_boxes(
        self,
        centers: np.ndarray,
        half_extents: np.ndarray,
        tags: int | np.ndarray,
        active: np.ndarray | None = None,
    ) -> None:
        """Axis-aligned boxes: ``centers`` and ``half_extents`` ``(k, 2)`` or ``(n, k, 2)``."""
        points = self._per_observer(centers, 2)
        k = points.shape[1]
        extents = self._per_observer(half_extents, 2)
        if extents.shape[1] != k:
            extents = np.broadcast_to(extents, (self.observers, k, 2))
        self._boxes.append((points, extents, _tags(tags, self.observers, k), active))

    def cast(
        self,
        origins: np.ndarray,
        directions: np.ndarray,
        max_distance: float,
        cast_radius: float = 0.0,
    ) -> RayHits:
        """Nearest hit along each ray.

        Args:
            origins: ``(n, 2)`` ray origins (one per observer).
            directions: ``(n, rays, 2)`` unit directions.
            max_distance: ray length.
            cast_radius: sphere-cast radius (objects are inflated by it).
        """
        n, rays = directions.shape[:2]
        origin = np.asarray(origins, dtype=np.float64)[:, None, None, :]
        direction = directions[:, :, None, :]
        candidates: list[tuple[np.ndarray, np.ndarray]] = []
        for points, tags in self._segments:
            candidates.append((_segment_distances(origin, direction, points, cast_radius), tags))
        for centers, radius, tags, active in self._circles:
            distances = _circle_distances(origin, direction, centers, radius + cast_radius)
            candidates.append((_mask_inactive(distances, active), tags))
        for centers, extents, tags, active in self._boxes:
            distances = _box_distances(origin, direction, centers, extents + cast_radius)
            candidates.append((_mask_inactive(distances, active), tags))
        # One nearest object over every kind at once: the first of equal distances wins, the
        # object added first, as when each kind is searched in turn and only a strictly nearer
        # one replaces the best. (No distance is NaN: every test above is false for NaN.)
        candidates = [c for c in candidates if c[0].shape[2]]
        if not candidates:
            best = np.full((n, rays), _NO_HIT)
            best_tag = np.full((n, rays), -1, dtype=np.int64)
        else:
            if len(candidates) == 1:
                distances, tags = candidates[0]
            else:
                distances = np.concatenate([d for d, _ in candidates], axis=2)
                tags = np.concatenate([t for _, t in candidates], axis=1)
            nearest = np.argmin(distances, axis=2)
            observer = np.arange(n)[:, None]
            # The first nearest entry itself, not min(): of 0.0 and -0.0 it keeps the first.
            best = distances[observer, np.arange(rays), nearest]
            best_tag = tags[observer, nearest]
        hit = best <= max_distance
        fraction = np.where(hit, best / max_distance, 1.0)
        return RayHits(fraction=fraction, tag=np.where(hit, best_tag, -1), hit=hit)


def _mask_inactive(distances: np.ndarray, active: np.ndarray | None) -> np.ndarray:
    if active is None:
        return distances
    return np.where(np.asarray(active, dtype=bool)[:, None, :], distances, _NO_HIT)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _segment_distances(
    origin: np.ndarray, direction: np.ndarray, points: np.ndarray, cast_radius: float
) -> np.ndarray:
    start = points[:, None, :, 0:2]
    edge = points[:, None, :, 2:4] - start
    denominator = _cross(direction, edge)
    offset = start - origin
    with np.errstate(divide="ignore", invalid="ignore"):
        t = _cross(offset, edge) / denominator
        u = _cross(offset, direction) / denominator
    valid = (np.abs(denominator) > 1e-12) & (t >= 0.0) & (u >= 0.0) & (u <= 1.0)
    if cast_radius > 0:
        # The sphere touches the line earlier, by the radius over the cosine to the normal.
        length = np.sqrt(np.maximum(np.einsum("...i,...i->...", edge, edge), 1e-24))
        cosine = np.abs(denominator) / length
        with np.errstate(divide="ignore"):
            t = t - cast_radius / np.maximum(cosine, 1e-6)
        valid &= t >= 0.0
    return np.where(valid, t, _NO_HIT)


def _circle_distances(
    origin: np.ndarray, direction: np.ndarray, centers: np.ndarray, radius: np.ndarray
) -> np.ndarray:
    relative = origin - centers[:, None, :, :]
    b = np.einsum("...i,...i->...", relative, direction)
    c = np.einsum("...i,...i->...", relative, relative) - radius[:, None, :] ** 2
    discriminant = b * b - c
    with np.errstate(invalid="ignore"):
        t = -b - np.sqrt(discriminant)
    valid = (c > 0.0) & (discriminant >= 0.0) & (t >= 0.0)
    return np.where(valid, t, _NO_HIT)


def _box_distances(
    origin: np.ndarray, direction: np.ndarray, centers: np.ndarray, extents: np.ndarray
) -> np.ndarray:
    low = centers[:, None] - extents[:, None] - origin
    high = centers[:, None] + extents[:, None] - origin
    safe = np.where(np.abs(direction) < 1e-12, 1e-12, direction)
    t1 = low / safe
    t2 = high / safe
    near = np.minimum(t1, t2).max(axis=-1)
    far = np.maximum(t1, t2).min(axis=-1)
    valid = (near >= 0.0) & (far >= near)
    return np.where(valid, near, _NO_HIT)
