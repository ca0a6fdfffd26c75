"""A small software renderer (numpy only): ray-cast pictures of boxes and spheres.

It stands in for Unity's cameras where a scene needs pixels: the camera observations of
``Visual3DBall`` and pictures of the scenes for people (:meth:`Scene.draw
<unity_gym.player.scenes.base.Scene.draw>`, the frames of ``--record-video``). The ray caster draws:

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

For flat pictures (a top-down or side view of a 2-D scene) :class:`Canvas` maps a rectangle of
the world onto the pixels (the same scale on both axes, +y up) and fills rectangles (turned or
not), discs, polygons, segments, agents (a disc with a nose towards its heading) and text, with
Pillow; :func:`fit_picture` scales a picture (e.g. a camera observation) into a frame.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from PIL import ImageFont

# Pillow is imported where a picture is made, not with this module: every scene imports it, and
# a game whose agents have no camera, run without a video, never draws (importing Pillow was
# about 6% of a 3DBall game's start-up CPU).

__all__ = [
    "BACKGROUND",
    "BLUE",
    "FLOOR",
    "GOLD",
    "GREEN",
    "GREY",
    "ORANGE",
    "PURPLE",
    "RED",
    "WALL",
    "WHITE",
    "Camera",
    "Canvas",
    "Colour",
    "Material",
    "fit_picture",
    "font",
    "mix",
    "render_box_and_sphere",
    "rotation_zx",
    "save_png",
    "to_chw_floats",
]

#: An RGB colour, each component in [0, 1] (as :class:`Material`'s).
Colour = tuple[float, float, float]

#: Colours the scenes' pictures share (``Scene.draw``).
BACKGROUND: Colour = (0.12, 0.12, 0.14)
FLOOR: Colour = (0.27, 0.29, 0.31)
WALL: Colour = (0.75, 0.76, 0.78)
BLUE: Colour = (0.24, 0.63, 1.0)
PURPLE: Colour = (0.72, 0.4, 0.95)
RED: Colour = (0.93, 0.36, 0.29)
GREEN: Colour = (0.4, 0.85, 0.45)
ORANGE: Colour = (1.0, 0.62, 0.2)
GOLD: Colour = (1.0, 0.84, 0.2)
GREY: Colour = (0.55, 0.55, 0.58)
WHITE: Colour = (1.0, 1.0, 1.0)

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
    from PIL import Image

    target = Path(path)
    Image.fromarray(np.ascontiguousarray(picture), "RGB").save(target, format="PNG")
    return target


# ---- flat pictures ---------------------------------------------------------------------------


def mix(first: Colour, second: Colour, share: float) -> Colour:
    """``first`` moved towards ``second`` by ``share`` (0: ``first``, 1: ``second``)."""
    t = min(max(float(share), 0.0), 1.0)
    red, green, blue = (a + (b - a) * t for a, b in zip(first, second, strict=True))
    return red, green, blue


def _rgb(colour: Colour) -> tuple[int, int, int]:
    """``colour`` as 0..255 integers."""
    red, green, blue = (round(255.0 * min(max(float(c), 0.0), 1.0)) for c in colour)
    return red, green, blue


@functools.lru_cache(maxsize=16)
def font(size: int = 12) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's built-in font at ``size`` pixels (its bitmap font where FreeType is missing)."""
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except (ImportError, OSError, TypeError):  # Pillow built without FreeType
        return ImageFont.load_default()


class Canvas:
    """A flat picture of the world rectangle ``bounds``, fitted and centred into the pixels.

    World coordinates keep their proportions (one scale for x and y) and +y points up the picture,
    so a scene's plane (x right, Unity's z up) is seen from above, and a side view (x right, height
    up) from the side. Drawing outside the picture is clipped. Angles are radians counter-clockwise
    from +x. Sizes given in world units are drawn at least ``min_pixels`` wide where a method has
    that argument, so that small things stay visible in a large world.

    Args:
        width: picture width in pixels.
        height: picture height in pixels.
        bounds: ``(x_min, y_min, x_max, y_max)`` of the world shown.
        background: colour of the picture before anything is drawn.
        margin: pixels left free at each side.

    Raises:
        ValueError: on a non-positive picture size or an empty world rectangle.
    """

    def __init__(
        self,
        width: int,
        height: int,
        bounds: tuple[float, float, float, float],
        background: Colour = BACKGROUND,
        margin: int = 4,
    ) -> None:
        x_min, y_min, x_max, y_max = (float(b) for b in bounds)
        if width <= 0 or height <= 0:
            raise ValueError(f"picture size {width}x{height} must be positive")
        if not (x_max > x_min and y_max > y_min):
            raise ValueError(f"world bounds {bounds} are empty")
        self.width = int(width)
        self.height = int(height)
        room_x = max(self.width - 2 * margin, 1)
        room_y = max(self.height - 2 * margin, 1)
        #: Pixels per world unit.
        self.scale = min(room_x / (x_max - x_min), room_y / (y_max - y_min))
        self._centre_world = np.array([(x_min + x_max) / 2.0, (y_min + y_max) / 2.0])
        self._centre_pixels = np.array([self.width / 2.0, self.height / 2.0])
        from PIL import Image, ImageDraw

        self._image = Image.new("RGB", (self.width, self.height), _rgb(background))
        self._draw = ImageDraw.Draw(self._image)

    def to_pixels(self, points: ArrayLike) -> np.ndarray:
        """World points ``(..., 2)`` as pixel coordinates ``(..., 2)`` (column, row)."""
        offset = (np.asarray(points, dtype=np.float64) - self._centre_world) * self.scale
        offset[..., 1] *= -1.0
        return np.asarray(offset + self._centre_pixels)

    def pixels(self, length: float) -> float:
        """A world length in pixels."""
        return float(length) * self.scale

    def polygon(
        self, points: ArrayLike, fill: Colour | None, *, outline: Colour | None = None
    ) -> None:
        """Fill the polygon of world ``points`` ``(k, 2)`` (``fill`` None: outline only)."""
        corners = [(float(x), float(y)) for x, y in self.to_pixels(points)]
        self._draw.polygon(
            corners,
            fill=None if fill is None else _rgb(fill),
            outline=None if outline is None else _rgb(outline),
        )

    def rectangle(
        self,
        centre: ArrayLike,
        half_extents: ArrayLike,
        fill: Colour | None,
        *,
        angle: float = 0.0,
        outline: Colour | None = None,
        min_pixels: float = 1.0,
    ) -> None:
        """A rectangle of half sizes ``half_extents`` (x, y) around ``centre``, turned by
        ``angle``; each side at least ``min_pixels`` long."""
        least = 0.5 * min_pixels / self.scale
        half = np.maximum(np.asarray(half_extents, dtype=np.float64), least)
        local = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]]) * half
        cos, sin = np.cos(angle), np.sin(angle)
        turned = local @ np.array([[cos, sin], [-sin, cos]])
        self.polygon(turned + np.asarray(centre, dtype=np.float64), fill, outline=outline)

    def circle(
        self,
        centre: ArrayLike,
        radius: float,
        fill: Colour | None,
        *,
        outline: Colour | None = None,
        min_pixels: float = 2.0,
    ) -> None:
        """A disc of world ``radius`` around ``centre``, at least ``min_pixels`` in diameter."""
        column, row = self.to_pixels(centre)
        r = max(self.pixels(radius), 0.5 * min_pixels)
        self._draw.ellipse(
            (column - r, row - r, column + r, row + r),
            fill=None if fill is None else _rgb(fill),
            outline=None if outline is None else _rgb(outline),
        )

    def segments(self, rows: ArrayLike, colour: Colour, *, width: float = 2.0) -> None:
        """Line segments ``[x0, y0, x1, y1]`` (one per row), ``width`` pixels wide."""
        ends = self.to_pixels(np.asarray(rows, dtype=np.float64).reshape(-1, 2, 2))
        for (x0, y0), (x1, y1) in ends:
            self._draw.line(
                (float(x0), float(y0), float(x1), float(y1)),
                fill=_rgb(colour),
                width=max(1, round(width)),
            )

    def agent(
        self,
        centre: ArrayLike,
        radius: float,
        heading: float,
        fill: Colour,
        *,
        nose: Colour = (1.0, 1.0, 1.0),
        min_pixels: float = 7.0,
    ) -> None:
        """An agent: a disc with a line from its centre towards ``heading``."""
        self.circle(centre, radius, fill, min_pixels=min_pixels)
        reach = max(radius, 0.5 * min_pixels / self.scale)
        tip = np.asarray(centre, dtype=np.float64) + reach * np.array(
            [np.cos(heading), np.sin(heading)]
        )
        width = max(1.0, 0.25 * max(self.pixels(radius), 0.5 * min_pixels))
        self.segments(
            np.concatenate([np.asarray(centre, dtype=np.float64), tip]), nose, width=width
        )

    def text(
        self,
        position: ArrayLike,
        text: str,
        colour: Colour = (1.0, 1.0, 1.0),
        *,
        size: int = 12,
    ) -> None:
        """``text`` centred on the world ``position``."""
        column, row = self.to_pixels(position)
        self._draw.text(
            (float(column), float(row)), text, fill=_rgb(colour), font=font(size), anchor="mm"
        )

    def picture(self) -> np.ndarray:
        """The picture so far: ``(H, W, 3)`` uint8 RGB, row 0 at the top (a copy)."""
        return np.array(self._image, dtype=np.uint8)


def fit_picture(
    picture: np.ndarray, width: int, height: int, background: Colour = (0.0, 0.0, 0.0)
) -> np.ndarray:
    """``picture`` ``(h, w, 3)`` uint8 scaled (nearest pixel, proportions kept) and centred into
    a ``(height, width, 3)`` picture filled with ``background``.

    Raises:
        ValueError: if ``picture`` is not an ``(h, w, 3)`` uint8 array.
    """
    if picture.ndim != 3 or picture.shape[2] != 3 or picture.dtype != np.uint8:
        raise ValueError(f"expected an (h, w, 3) uint8 picture, got {picture.dtype}{picture.shape}")
    rows, columns = picture.shape[:2]
    scale = min(width / columns, height / rows)
    size = (max(1, int(columns * scale)), max(1, int(rows * scale)))
    from PIL import Image

    scaled = Image.fromarray(np.ascontiguousarray(picture), "RGB").resize(
        size, Image.Resampling.NEAREST
    )
    frame = Image.new("RGB", (width, height), _rgb(background))
    frame.paste(scaled, ((width - size[0]) // 2, (height - size[1]) // 2))
    return np.array(frame, dtype=np.uint8)
