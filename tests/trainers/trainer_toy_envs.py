"""Small deterministic Gymnasium environments that exercise the trainers' edge cases.

Importing this module registers them (ids below), so ``--gym-id trainer_toy_envs:<id>`` works.

* ``MaskedCorridor-v0``: Discrete(4) actions with ``info["action_mask"]``; choosing a masked
  action raises, so a trainer that ignores masks crashes the run.
* ``PixelsAndVector-v0``: ``Dict`` observation with a uint8 HWC image and a vector; MultiDiscrete
  actions (two branches).
* ``HybridTarget-v0``: ``Dict`` hybrid action space (``continuous`` Box + ``discrete``
  MultiDiscrete), float CHW image observation.
* ``Countdown-v0``: episodes of exactly ``length`` steps (default 3) with reward = step index;
  terminates (or truncates with ``truncate=True``); used to check autoreset bookkeeping.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces


class MaskedCorridor(gymnasium.Env[Any, Any]):
    """Walk right along a corridor; at each position only some actions are allowed."""

    def __init__(self, length: int = 6) -> None:
        self.length = length
        self.observation_space = spaces.Box(0.0, 1.0, (length,), np.float32)
        self.action_space = spaces.Discrete(4)
        self.position = 0
        self.steps = 0

    def _mask(self) -> np.ndarray:
        mask = np.ones(4, dtype=bool)
        mask[(self.position + 1) % 4] = False  # a different action is forbidden at each cell
        mask[(self.position + 2) % 4] = False
        return mask

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.length, dtype=np.float32)
        obs[self.position] = 1.0
        return obs

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.position = 0
        self.steps = 0
        return self._obs(), {"action_mask": self._mask()}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._mask()[int(action)]:
            raise RuntimeError(f"masked action {action} chosen at position {self.position}")
        self.steps += 1
        reward = -0.01
        if int(action) == self.position % 4:
            self.position += 1
            reward = 0.1
        terminated = self.position >= self.length - 1
        truncated = self.steps >= 30 and not terminated
        return self._obs(), reward, terminated, truncated, {"action_mask": self._mask()}


class PixelsAndVector(gymnasium.Env[Any, Any]):
    """Reward for matching a two-branch action to the brightest image quadrant and the vector."""

    def __init__(self, side: int = 40) -> None:
        self.side = side
        self.observation_space = spaces.Dict(
            {
                "camera": spaces.Box(0, 255, (side, side, 3), np.uint8),
                "goal": spaces.Box(-1.0, 1.0, (2,), np.float32),
            }
        )
        self.action_space = spaces.MultiDiscrete([2, 3])
        self.steps = 0
        self.target = (0, 0)

    def _obs(self) -> dict[str, np.ndarray]:
        image = np.zeros((self.side, self.side, 3), dtype=np.uint8)
        half = self.side // 2
        image[:half, self.target[0] * half : (self.target[0] + 1) * half] = 255
        goal = np.array([self.target[1] - 1.0, 0.5], dtype=np.float32)
        return {"camera": image, "goal": goal}

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self.steps = 0
        self.target = (int(self.np_random.integers(2)), int(self.np_random.integers(3)))
        return self._obs(), {}

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        self.steps += 1
        hit = int(action[0]) == self.target[0] and int(action[1]) == self.target[1]
        self.target = (int(self.np_random.integers(2)), int(self.np_random.integers(3)))
        return self._obs(), 1.0 if hit else 0.0, False, self.steps >= 20, {}


class HybridTarget(gymnasium.Env[Any, Any]):
    """Hybrid actions: a continuous push toward 0 plus a discrete choice."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(0.0, 1.0, (1, 24, 24), np.float32)
        self.action_space = spaces.Dict(
            {
                "continuous": spaces.Box(-1.0, 1.0, (2,), np.float32),
                "discrete": spaces.MultiDiscrete([3]),
            }
        )
        self.steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.steps = 0
        return np.full((1, 24, 24), 0.5, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        continuous = np.asarray(action["continuous"], dtype=np.float32)
        discrete = np.asarray(action["discrete"])
        assert continuous.shape == (2,) and discrete.shape == (1,)
        self.steps += 1
        reward = float(-np.abs(continuous).sum() + (discrete[0] == 2))
        obs = np.full((1, 24, 24), self.steps / 10.0, dtype=np.float32)
        return np.clip(obs, 0.0, 1.0), reward, False, self.steps >= 10, {}


class Countdown(gymnasium.Env[Any, Any]):
    """Episodes of exactly ``length`` steps; observation = reward = step index."""

    def __init__(self, length: int = 3, truncate: bool = False) -> None:
        self.length = length
        self.truncate = truncate
        self.observation_space = spaces.Box(0.0, 100.0, (1,), np.float32)
        self.action_space = spaces.Discrete(2)
        self.t = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.t += 1
        end = self.t >= self.length
        obs = np.array([float(self.t)], dtype=np.float32)
        return obs, float(self.t), end and not self.truncate, end and self.truncate, {}


for _env_id, _entry in (
    ("MaskedCorridor-v0", MaskedCorridor),
    ("PixelsAndVector-v0", PixelsAndVector),
    ("HybridTarget-v0", HybridTarget),
    ("Countdown-v0", Countdown),
):
    if _env_id not in gymnasium.registry:
        gymnasium.register(_env_id, entry_point=f"{__name__}:{_entry.__name__}")
