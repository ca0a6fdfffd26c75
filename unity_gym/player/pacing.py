"""Optional real-time pacing of Academy steps from the engine settings (``--realtime``).

By default the player runs as fast as possible. In real-time mode it waits between steps the way
a Unity player's clock would make it: game time advances ``time_scale`` times faster than wall
time, or by ``time_scale / capture_frame_rate`` per frame when a capture frame rate is set (then
only ``target_frame_rate`` limits the speed).
"""

from __future__ import annotations

import time

from .side_channels import EngineSettings

__all__ = ["Pacer", "wall_seconds_per_step"]

#: Falling further behind than this resets the schedule instead of running to catch up.
MAX_LAG_SECONDS = 0.25


def wall_seconds_per_step(settings: EngineSettings, fixed_delta_time: float) -> float:
    """Wall-clock seconds one Academy step (one FixedUpdate) should take; 0 = unthrottled."""
    if settings.capture_frame_rate > 0:
        if settings.target_frame_rate <= 0:
            return 0.0
        game_seconds_per_frame = settings.time_scale / settings.capture_frame_rate
        steps_per_frame = game_seconds_per_frame / fixed_delta_time
        return (1.0 / settings.target_frame_rate) / steps_per_frame
    return fixed_delta_time / max(settings.time_scale, 1e-9)


class Pacer:
    """Sleeps so that consecutive :meth:`wait` calls are one step's wall time apart.

    Args:
        settings: engine settings (read at every call, so side-channel changes apply at once).
        fixed_delta_time: the scene's fixed timestep.
    """

    def __init__(self, settings: EngineSettings, fixed_delta_time: float) -> None:
        self._settings = settings
        self._dt = fixed_delta_time
        self._next = time.perf_counter()

    def wait(self) -> None:
        """Block until the next step is due."""
        interval = wall_seconds_per_step(self._settings, self._dt)
        now = time.perf_counter()
        if interval <= 0.0:
            self._next = now
            return
        self._next += interval
        if self._next > now:
            time.sleep(self._next - now)
        elif now - self._next > MAX_LAG_SECONDS:
            self._next = now
