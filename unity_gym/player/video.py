"""Videos of play (``--record-video PATH``): one training area, drawn every few Academy steps.

:class:`VideoRecorder` asks the scene for a picture of one area (:meth:`Scene.picture
<unity_gym.player.scenes.base.Scene.picture>`) after every ``every``-th Academy step, adds a
caption strip (scene, step, episode; the episode reward so far of each behavior's agents in the
area and, in brackets, the reward of their last finished episode), and writes the frames when the
recording ends:

* ``.gif``: with Pillow (a dependency). Each frame gets its own 256-colour palette; Pillow's
  writer merges a frame identical to the one before into it (one longer frame), so a still
  scene makes fewer frames than were drawn, with the same total duration.
* ``.mp4``: H.264 through the ffmpeg that the ``video`` extra brings
  (``pip install 'unity-gym[video]'``, the ``imageio-ffmpeg`` package); frames are streamed to
  the encoder as they are drawn. Odd sizes are padded to even ones (H.264's 4:2:0 needs them).

The recording ends after ``steps`` Academy steps, after ``episodes`` episodes of the area
(an episode of an area ends at a step in which one of its agents begins a new one, so a
multi-agent area's episodes count once), or after :data:`MAX_FRAMES` frames, whichever comes
first; then the player quits. The file is written beside its target and renamed into place, so
a failed run leaves no file. Nothing is drawn when no video is recorded.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from unity_gym.temp_files import create_temp_beside

from .errors import PlayerError
from .render import font

if TYPE_CHECKING:
    from PIL import Image

    from .academy import Academy
    from .scenes.base import Scene

__all__ = [
    "DEFAULT_STEPS",
    "INSTALL_MP4",
    "MAX_FRAMES",
    "VIDEO_SUFFIXES",
    "VideoRecorder",
    "VideoSettings",
    "VideoSummary",
    "parse_size",
]

logger = logging.getLogger("unity_gym.player")

VIDEO_SUFFIXES = (".gif", ".mp4")
#: The pip command that installs the MP4 encoder.
INSTALL_MP4 = "pip install 'unity-gym[video]'"
#: Academy steps recorded when neither ``steps`` nor ``episodes`` is given.
DEFAULT_STEPS = 600
#: The most frames one video holds (about 50 MB of GIF frames in memory at 320 x 240).
MAX_FRAMES = 3000
_CAPTION_ROWS = 30
_CAPTION_BACKGROUND = (24, 24, 28)
_CAPTION_TEXT = (225, 225, 225)


def parse_size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` (e.g. ``320x240``) as ``(width, height)``.

    Raises:
        PlayerError: if ``text`` is not two positive integers joined by ``x``.
    """
    parts = text.lower().split("x")
    try:
        width, height = (int(part) for part in parts)
    except ValueError:
        raise PlayerError(f"--video-size {text!r}: expected WIDTHxHEIGHT, e.g. 320x240") from None
    if width <= 0 or height <= 0:
        raise PlayerError(f"--video-size {text!r}: width and height must be positive")
    return width, height


@dataclass(frozen=True)
class VideoSettings:
    """What ``--record-video`` records.

    Args:
        path: the ``.gif`` or ``.mp4`` file to write.
        steps: Academy steps to record (0: :data:`DEFAULT_STEPS` unless ``episodes`` is given).
        episodes: episodes of the area to record (0: no limit).
        fps: frames per second of the video.
        every: Academy steps between two frames (0: the scene's ``frame_steps``).
        area: the training area drawn.
        size: ``(width, height)`` of the scene's picture (None: the scene's ``draw_size``); the
            caption adds 30 rows below it.
        caption: add the caption strip.
    """

    path: Path
    steps: int = 0
    episodes: int = 0
    fps: float = 25.0
    every: int = 0
    area: int = 0
    size: tuple[int, int] | None = None
    caption: bool = True

    def check(self) -> None:
        """Check what can be checked before the scene runs.

        Raises:
            PlayerError: on another suffix than ``.gif``/``.mp4``, a folder that does not exist,
                a negative count, a frame rate out of 1..100, or ``.mp4`` without its encoder.
        """
        suffix = self.path.suffix.lower()
        if suffix not in VIDEO_SUFFIXES:
            raise PlayerError(
                f"--record-video {str(self.path)!r}: name a .gif or .mp4 file "
                f"(e.g. {self.path.with_suffix('.gif').name})"
            )
        if self.path.is_dir():
            raise PlayerError(f"--record-video {str(self.path)!r} is a folder; name a file")
        if not self.path.parent.is_dir():
            raise PlayerError(
                f"--record-video {str(self.path)!r}: folder {str(self.path.parent)!r} does not "
                "exist; create it first"
            )
        for name, value in (
            ("--video-steps", self.steps),
            ("--video-episodes", self.episodes),
            ("--video-every", self.every),
            ("--video-area", self.area),
        ):
            if value < 0:
                raise PlayerError(f"{name} must be at least 0, got {value}")
        if not 1.0 <= self.fps <= 100.0:
            raise PlayerError(f"--video-fps must be between 1 and 100, got {self.fps:g}")
        if suffix == ".mp4":
            _ffmpeg()

    @property
    def step_limit(self) -> int:
        """Academy steps to record (0: no limit but the episodes and :data:`MAX_FRAMES`)."""
        if self.steps:
            return self.steps
        return 0 if self.episodes else DEFAULT_STEPS


@dataclass(frozen=True)
class VideoSummary:
    """A written video."""

    path: Path
    frames: int
    seconds: float
    steps: int
    episodes: int


def _ffmpeg() -> Any:
    """The ``imageio_ffmpeg`` module, with a working ffmpeg.

    Raises:
        PlayerError: if it is not installed (the message says how to install it).
    """
    try:
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as exc:
        raise PlayerError(
            f"writing .mp4 needs the ffmpeg encoder of imageio-ffmpeg ({exc}): {INSTALL_MP4}; "
            "or record a .gif, which needs nothing more"
        ) from None
    return imageio_ffmpeg


class VideoRecorder:
    """Draws one area of a running Academy's scene into a video.

    Args:
        settings: what to record (:meth:`VideoSettings.check` is called).
        scene: the scene, already set up by ``academy``.
        academy: the Academy stepping it.

    Raises:
        PlayerError: on settings :meth:`VideoSettings.check` refuses, an area the scene does not
            have, or a file that cannot be created.
    """

    def __init__(self, settings: VideoSettings, scene: Scene, academy: Academy) -> None:
        settings.check()
        if settings.area >= academy.area_count:
            raise PlayerError(
                f"--video-area {settings.area}: scene {scene.name} has areas 0 to "
                f"{academy.area_count - 1} here"
            )
        self.settings = settings
        self.path = settings.path
        self._scene = scene
        self._academy = academy
        self._every = settings.every or max(1, scene.frame_steps)
        self._size = settings.size or scene.draw_size
        self._members = [
            (batch, np.arange(settings.area * count, (settings.area + 1) * count))
            for batch in academy.batches
            if (count := batch.spec.agents_per_area) > 0
        ]
        self.frames = 0
        self.steps = 0
        self.episodes = 0
        self._begun = -1
        try:
            handle, temp = create_temp_beside(self.path, ".partial" + self.path.suffix.lower())
        except OSError as exc:
            raise PlayerError(
                f"cannot write the video into {self.path.parent}: {exc.strerror or exc}; choose "
                "a writable folder for --record-video"
            ) from None
        self._temp = Path(temp)
        self._writer: _Writer
        if self.path.suffix.lower() == ".mp4":
            os.close(handle)
            self._writer = _Mp4Writer(self._temp, settings.fps)
        else:
            self._writer = _GifWriter(os.fdopen(handle, "wb"), settings.fps)

    @property
    def complete(self) -> bool:
        """The steps, episodes or frames to record are recorded."""
        limit = self.settings.step_limit
        return (
            (limit > 0 and self.steps >= limit)
            or (self.settings.episodes > 0 and self.episodes >= self.settings.episodes)
            or self.frames >= MAX_FRAMES
        )

    def capture(self) -> bool:
        """Note one Academy step just taken; draw a frame when one is due.

        Returns:
            True once the recording is complete.
        """
        self.steps += 1
        begun = sum(int(batch.episodes_begun[slots].sum()) for batch, slots in self._members)
        if self._begun >= 0 and begun > self._begun:
            self.episodes += 1
        self._begun = begun
        ended = self.complete
        if self.steps % self._every == 0 or ended:
            picture = self._scene.picture(self.settings.area, self._size)
            if self.settings.caption:
                picture = self._captioned(picture)
            self._writer.add(picture)
            self.frames += 1
        return ended or self.complete

    def finish(self) -> VideoSummary:
        """Write the file and move it into place.

        Raises:
            PlayerError: if no frame was drawn or the file cannot be written.
        """
        if self.frames == 0:
            self.discard()
            raise PlayerError(f"no frame was drawn; {self.path} not written")
        try:
            self._writer.close()
            os.replace(self._temp, self.path)
        except (OSError, RuntimeError) as exc:
            self.discard()
            raise PlayerError(f"cannot write the video {self.path}: {exc}") from None
        return VideoSummary(
            self.path, self.frames, self.frames / self.settings.fps, self.steps, self.episodes
        )

    def discard(self) -> None:
        """Drop the recording (idempotent)."""
        self._writer.abort()
        self._temp.unlink(missing_ok=True)

    def _captioned(self, picture: np.ndarray) -> np.ndarray:
        from PIL import Image, ImageDraw

        width = picture.shape[1]
        strip = Image.new("RGB", (width, _CAPTION_ROWS), _CAPTION_BACKGROUND)
        draw = ImageDraw.Draw(strip)
        draw.fontmode = "1"  # two-colour text: GIFs stay small
        small = font(11)
        draw.text(
            (4, 2),
            f"{self._scene.name} | step {self._academy.total_step_count} | "
            f"episode {self.episodes + 1} | reward (last)",
            fill=_CAPTION_TEXT,
            font=small,
        )
        parts = []
        for batch, slots in self._members:
            label = batch.spec.name if len(self._members) == 1 else _short(batch.name)
            now = float(batch.cumulative_rewards[slots].sum())
            last = float(batch.last_episode_rewards[slots].sum())
            parts.append(f"{label} {now:+.2f} ({last:+.2f})")
        draw.text((4, 15), " | ".join(parts), fill=_CAPTION_TEXT, font=small)
        return np.concatenate([picture, np.asarray(strip, dtype=np.uint8)], axis=0)


def _short(behavior: str) -> str:
    """``Tennis?team=1`` as ``Tennis/1``."""
    name, _, team = behavior.partition("?team=")
    return f"{name}/{team}" if team else name


class _Writer:
    def add(self, picture: np.ndarray) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError


class _GifWriter(_Writer):
    """Frames kept as palette images until :meth:`close` writes them all."""

    def __init__(self, file: IO[bytes], fps: float) -> None:
        self._file: IO[bytes] | None = file
        self._duration = max(10, round(1000.0 / fps / 10.0) * 10)  # GIF counts 1/100 s
        self._frames: list[Image.Image] = []

    def add(self, picture: np.ndarray) -> None:
        from PIL import Image

        image = Image.fromarray(np.ascontiguousarray(picture), "RGB")
        self._frames.append(
            image.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
        )

    def close(self) -> None:
        if self._file is None:
            return
        first, *rest = self._frames
        first.save(
            self._file,
            format="GIF",
            save_all=True,
            append_images=rest,
            duration=self._duration,
            loop=0,
            optimize=False,
        )
        self._file.close()
        self._file = None
        self._frames = []

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._frames = []


class _Mp4Writer(_Writer):
    """Frames streamed to ffmpeg (started with the first frame, whose size fixes the video's)."""

    def __init__(self, path: Path, fps: float) -> None:
        self._path = path
        self._fps = fps
        self._encoder: Generator[Any, Any, Any] | None = None
        self._shape: tuple[int, int] | None = None

    def add(self, picture: np.ndarray) -> None:
        height, width = picture.shape[:2]
        even = (height + height % 2, width + width % 2)
        if self._encoder is None:
            generator = _ffmpeg().write_frames(
                str(self._path),
                (even[1], even[0]),
                fps=self._fps,
                codec="libx264",
                quality=7,
                macro_block_size=1,
                ffmpeg_log_level="error",
                output_params=["-f", "mp4"],
            )
            generator.send(None)
            self._encoder, self._shape = generator, even
        frame = np.zeros((*even, 3), dtype=np.uint8)
        frame[:height, :width] = picture
        self._encoder.send(np.ascontiguousarray(frame).tobytes())

    def close(self) -> None:
        if self._encoder is not None:
            self._encoder.close()
            self._encoder = None

    def abort(self) -> None:
        self.close()
