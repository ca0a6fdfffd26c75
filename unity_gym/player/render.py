"""A small software renderer (numpy only): ray-cast pictures of boxes and spheres.

It stands in for Unity's cameras where a scene needs pixels: the camera observations of
``Visual3DBall`` and a picture of a scene for people (``Ball3DScene.render``). What it draws:

* one **oriented box** per picture (e.g. a tilting platform) and one **sphere** (e.g. a ball),
  both in the camera's world frame (Unity's: x right, y up, z forward, left-handed);
* a **pinhole camera** (:class:`Camera`): position, pitch (degrees down about x, as a Unity
  camera's ``localEulerAngles.x``), vertical field of view and a width x height resolution;
* flat **Lambert shading** from one directional light plus an ambient term, over a solid
  background colour (Unity's *Solid Color* clear flag). No shadows, textures or anti-aliasing;
  each pixel is one ray through its centre, so a picture is a pure function of the scene state.

Pictures are ``uint8`` arrays shaped ``(N, H, W, 3)`` (RGB, row 0 at the top), computed for
``N`` pictures at once. :func:`to_chw_floats` turns them into the ``(N, 3, H, W)`` floats in
[0, 1] that a camera sensor reports (pixel / 255, so PNG compression is lossless), and
:func:`save_png` writes one picture to a file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

__all__ = [
    "Camera",
    "Material",
    "render_box_and_sphere",
    "rotation_zx",
    "save_png",
    "to_chw_floats",
]

_LIGHT = np.array([-0.3, 0.9, -0.35])
_LIGHT /= np.linalg.norm(_LIGHT)
_AMBIENT = 0.35


@dataclass(frozen=True)
class Camera:
    """A pinhole camera looking along +z, pitched down by ``pitch_degrees``.

    Attributes:
        position: camera position (x, y, z) in the world frame.
        pitch_degrees: rotation about x; positive looks down (Unity's convention).
        fov_degrees: vertical field of view (Unity's ``field of view``).
        width: picture width in pixels.
        height: picture height in pixels.
    """

    position: tuple[float, float, float]
    pitch_degrees: float
    fov_degrees: float
    width: int
    height: int

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"camera resolution {self.width}x{self.height} must be positive")
        if not 0.0 < self.fov_degrees < 180.0:
            raise ValueError(f"camera field of view {self.fov_degrees} must be in (0, 180)")

    def ray_directions(self) -> np.ndarray:
        """Unit world-frame directions of the rays through the pixel centres, ``(H, W, 3)``."""
        half = np.tan(np.radians(self.fov_degrees) / 2.0)
        aspect = self.width / self.height
        xs = ((np.arange(self.width) + 0.5) / self.width * 2.0 - 1.0) * half * aspect
        ys = (1.0 - (np.arange(self.height) + 0.5) / self.height * 2.0) * half
        pitch = np.radians(self.pitch_degrees)
        forward = np.array([0.0, -np.sin(pitch), np.cos(pitch)])
        up = np.array([0.0, np.cos(pitch), np.sin(pitch)])
        right = np.array([1.0, 0.0, 0.0])
        dirs = forward + xs[None, :, None] * right + ys[:, None, None] * up
        return dirs / np.linalg.norm(dirs, axis=-1, keepdims=True)


@dataclass(frozen=True)
class Material:
    """Colours (RGB in [0, 1]) of what :func:`render_box_and_sphere` draws."""

    box: tuple[float, float, float] = (0.25, 0.45, 0.85)
    sphere: tuple[float, float, float] = (0.95, 0.95, 0.95)
    background: tuple[float, float, float] = (0.0, 0.0, 0.0)


def rotation_zx(about_z_degrees: np.ndarray, about_x_degrees: np.ndarray) -> np.ndarray:
    """Rotation matrices ``(N, 3, 3)``: about x, then about z (each positive angle in Unity's
    left-handed sense: +z tilts down about x, +x tilts up about z)."""
    a = np.radians(np.asarray(about_z_degrees, dtype=np.float64))
    b = np.radians(np.asarray(about_x_degrees, dtype=np.float64))
    n = a.size
    rz = np.zeros((n, 3, 3))
    rz[:, 0, 0] = rz[:, 1, 1] = np.cos(a)
    rz[:, 0, 1] = -np.sin(a)
    rz[:, 1, 0] = np.sin(a)
    rz[:, 2, 2] = 1.0
    rx = np.zeros((n, 3, 3))
    rx[:, 0, 0] = 1.0
    rx[:, 1, 1] = rx[:, 2, 2] = np.cos(b)
    rx[:, 1, 2] = -np.sin(b)
    rx[:, 2, 1] = np.sin(b)
    return np.asarray(rz @ rx)


def render_box_and_sphere(
    camera: Camera,
    box_rotations: np.ndarray,
    box_half_extents: tuple[float, float, float],
    sphere_centres: np.ndarray,
    sphere_radii: np.ndarray,
    material: Material | None = None,
) -> np.ndarray:
    """Ray-cast ``N`` pictures, each of one box centred at the origin and one sphere.

    Args:
        camera: the camera (shared by all pictures).
        box_rotations: ``(N, 3, 3)`` box orientations (local to world).
        box_half_extents: the box's half sizes along its local x, y, z.
        sphere_centres: ``(N, 3)`` world positions of the spheres.
        sphere_radii: ``(N,)`` sphere radii.
        material: colours (default :class:`Material`).

    Returns:
        ``(N, H, W, 3)`` uint8 RGB pictures, row 0 at the top.
    """
    material = material or Material()
    rotations = np.asarray(box_rotations, dtype=np.float64)
    centres = np.asarray(sphere_centres, dtype=np.float64)
    radii = np.asarray(sphere_radii, dtype=np.float64)
    n = rotations.shape[0]
    dirs = _rays(camera)  # (P, 3)
    origin = np.asarray(camera.position, dtype=np.float64)

    # Sphere: |o + t d - c|^2 = r^2 with |d| = 1; arrays are laid out (N, P).
    oc = origin[None, :] - centres  # (N, 3)
    b = oc @ dirs.T  # (N, P)
    c = np.einsum("ij,ij->i", oc, oc) - radii**2
    disc = b * b - c[:, None]
    t_sphere = -b - np.sqrt(np.maximum(disc, 0.0))
    t_sphere[(disc < 0.0) | (t_sphere <= 0.0)] = np.inf

    # Box: slab test in the box's frame (R^T maps world to local), one axis at a time.
    local_origin = np.einsum("nji,j->ni", rotations, origin)  # (N, 3)
    local_light = np.einsum("nji,j->ni", rotations, _LIGHT)  # (N, 3)
    t_near = np.full(b.shape, -np.inf)
    t_far = np.full(b.shape, np.inf)
    box_light = np.zeros(b.shape)
    for axis, half in enumerate(box_half_extents):
        along = rotations[:, :, axis] @ dirs.T  # (N, P): ray directions along the box axis
        along[np.abs(along) < 1e-12] = 1e-12
        inverse = 1.0 / along
        start = local_origin[:, axis : axis + 1]
        t1 = (-half - start) * inverse
        t2 = (half - start) * inverse
        near = np.minimum(t1, t2)
        entering = near > t_near
        t_near = np.where(entering, near, t_near)
        # The face entered through faces against the ray: its outward normal is -sign(along).
        facing = -np.sign(along) * local_light[:, axis : axis + 1]
        box_light = np.where(entering, facing, box_light)
        np.minimum(t_far, np.maximum(t1, t2), out=t_far)
    t_box = np.where((t_near <= t_far) & (t_near > 0.0), t_near, np.inf)

    sphere_first = t_sphere < t_box
    t_hit = np.minimum(t_sphere, t_box)
    hit_point = origin + np.where(np.isfinite(t_hit), t_hit, 0.0)[..., None] * dirs[None]
    sphere_light = ((hit_point - centres[:, None, :]) @ _LIGHT) / radii[:, None]
    lambert = np.clip(np.where(sphere_first, sphere_light, box_light), 0.0, 1.0)
    shade = _AMBIENT + (1.0 - _AMBIENT) * lambert
    colour = (
        np.where(sphere_first[..., None], np.array(material.sphere), np.array(material.box))
        * shade[..., None]
    )
    colour = np.where(np.isfinite(t_hit)[..., None], colour, np.array(material.background))
    pixels = np.clip(np.rint(colour * 255.0), 0, 255).astype(np.uint8)  # (N, P, 3)
    return pixels.reshape(n, camera.height, camera.width, 3)


@functools.lru_cache(maxsize=8)
def _rays(camera: Camera) -> np.ndarray:
    rays = camera.ray_directions().reshape(-1, 3)
    rays.flags.writeable = False
    return rays


def to_chw_floats(pictures: np.ndarray) -> np.ndarray:
    """``(N, H, W, 3)`` uint8 pictures as ``(N, 3, H, W)`` float32 in [0, 1] (pixel / 255)."""
    return np.ascontiguousarray(pictures.transpose(0, 3, 1, 2), dtype=np.float32) / np.float32(
        255.0
    )


def save_png(path: str | Path, picture: np.ndarray) -> Path:
    """Write one ``(H, W, 3)`` uint8 picture as a PNG file; returns the path.

    Raises:
        ValueError: if ``picture`` is not an ``(H, W, 3)`` uint8 array.
    """
    if picture.ndim != 3 or picture.shape[2] != 3 or picture.dtype != np.uint8:
        raise ValueError(
            f"save_png expects one (H, W, 3) uint8 picture, got {picture.dtype}{picture.shape}"
        )
    target = Path(path)
    Image.fromarray(np.ascontiguousarray(picture), "RGB").save(target, format="PNG")
    return target
