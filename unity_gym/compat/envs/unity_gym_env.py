"""``mlagents_envs.envs.unity_gym_env``: the official single-agent Gym wrapper of a ``BaseEnv``.

:class:`UnityToGymWrapper` follows ML-Agents 1.1.0's ``UnityToGymWrapper`` (the official module
``mlagents_envs/envs/unity_gym_env.py`` and ``docs/Python-Gym-API.md``):

* It wraps an open ``BaseEnv`` (e.g. ``mlagents_envs.environment.UnityEnvironment``) with exactly
  one behavior and at most one agent; otherwise :class:`UnityGymException`. If the environment
  reports no behavior yet, it is stepped once; then it is reset once to count the agents.
* The old Gym API: ``reset()`` returns the observation; ``step(action)`` returns
  ``(observation, reward, done, info)`` with ``info == {"step": <DecisionSteps or
  TerminalSteps>}`` (the batch that produced the result, ``TerminalSteps`` when ``done``).
  Stepping again after ``done`` raises :class:`UnityGymException` until ``reset()``, which resets
  the whole Unity environment.
* Observations: camera observations (3-D shapes) are ``Box(0, 1, float32)``, or
  ``Box(0, 255, uint8)`` with ``uint8_visual=True`` (values scaled by 255); all vector
  observations are concatenated into one ``Box(-inf, inf, float32)``. Without
  ``allow_multiple_obs`` the observation is the first camera image, or the vector if there is
  no camera; with it, a list (space ``Tuple``): every camera image, then the vector.
* Actions: one discrete branch is ``Discrete(n)``, several are ``MultiDiscrete`` or, with
  ``flatten_branched=True``, one ``Discrete`` over every combination (:class:`ActionFlattener`);
  continuous actions are ``Box(-1, 1, float32)``; hybrid actions are refused.
  ``action_space_seed`` seeds the action space.
* ``render()`` returns the latest first camera image (None without camera), ``seed()`` only logs
  a warning (the game cannot be reseeded), ``metadata == {"render.modes": ["rgb_array"]}``,
  ``reward_range == (-inf, inf)``, ``spec`` is None, ``close()`` closes the wrapped env.

Differences from the official wrapper, all deliberate:

* Spaces are Gymnasium's (``gymnasium.spaces``), since the ``gym`` package is unmaintained and
  not installed with today's libraries; :class:`UnityGymException` derives from
  ``gymnasium.error.Error`` (officially ``gym.error.Error``).
* The reward is a Python ``float`` (officially a NumPy scalar of the batch's dtype).
* The wrapper is not a ``gymnasium.Env``: its ``reset``/``step`` keep the official return shapes,
  which are not Gymnasium's. For Gymnasium code and for Stable-Baselines3 2.x (which accepts
  only ``gymnasium.Env`` objects, or old ``gym`` ones through ``shimmy``) call
  :meth:`UnityToGymWrapper.as_gymnasium`: ``PPO("MlpPolicy",
  UnityToGymWrapper(unity_env).as_gymnasium())``. That one call is the documented route,
  rather than making the wrapper itself pass SB3's ``isinstance(env, gymnasium.Env)`` check:
  SB3 would then call ``reset``/``step`` with Gymnasium's contract and fail on the official
  shapes. The view's ``reset(seed=..., options=...)`` returns ``(observation, info)`` and its
  ``step`` returns ``(observation, reward, terminated, truncated, info)``, where ``truncated`` is
  the final ``TerminalSteps.interrupted`` flag (the agent's max step was reached) and
  ``terminated`` any other episode end.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from typing import Any

import gymnasium
import numpy as np
from gymnasium import error, spaces

from unity_gym.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps, TerminalSteps

__all__ = ["ActionFlattener", "GymStepResult", "UnityGymException", "UnityToGymWrapper"]

logger = logging.getLogger(__name__)

GymStepResult = tuple[Any, float, bool, dict[str, Any]]
"""What :meth:`UnityToGymWrapper.step` returns: ``(observation, reward, done, info)``."""


class UnityGymException(error.Error):
    """An environment or a call that the Gym wrapper cannot serve (the message says which)."""


class UnityToGymWrapper:
    """One agent of a Unity environment behind the official (old) Gym API (module docs).

    Args:
        unity_env: the open environment to wrap; the wrapper closes it in :meth:`close`.
        uint8_visual: return camera observations as uint8 in ``[0, 255]`` instead of float32 in
            ``[0, 1]``.
        flatten_branched: turn several discrete branches into one ``Discrete`` action.
        allow_multiple_obs: return every observation as a list (cameras first, then the vector)
            instead of only the first camera image or the vector.
        action_space_seed: when not None, the seed of the action space.

    Raises:
        UnityGymException: if the environment has not exactly one behavior, more than one agent,
            no observation, or both discrete and continuous actions.
    """

    spec = None
    """Like an unregistered ``gym.Env``: no registry spec."""

    def __init__(
        self,
        unity_env: BaseEnv,
        uint8_visual: bool = False,
        flatten_branched: bool = False,
        allow_multiple_obs: bool = False,
        action_space_seed: int | None = None,
    ) -> None:
        self._env = unity_env
        if not self._env.behavior_specs:
            self._env.step()
        self.visual_obs: np.ndarray | None = None
        self._previous_decision_step: DecisionSteps | None = None
        self._flattener: ActionFlattener | None = None
        self.game_over = False
        """True once ``step`` returned ``done`` (the official Atari-style flag)."""
        self._allow_multiple_obs = allow_multiple_obs

        if len(self._env.behavior_specs) != 1:
            raise UnityGymException(
                "There can only be one behavior in a UnityEnvironment if it is wrapped in a gym; "
                f"this one has {sorted(self._env.behavior_specs)}. Use the PettingZoo wrappers "
                "(mlagents_envs.envs.unity_parallel_env) for several behaviors."
            )
        self.name: str = next(iter(self._env.behavior_specs.keys()))
        self.group_spec: BehaviorSpec = self._env.behavior_specs[self.name]
        n_visual = self._get_n_vis_obs()
        if n_visual == 0 and self._get_vec_obs_size() == 0:
            raise UnityGymException("There are no observations provided by the environment.")
        if n_visual == 0 and uint8_visual:
            logger.warning(
                "uint8_visual was set to true, but visual observations are not in use. "
                "This setting will not have any effect."
            )
        self.uint8_visual = uint8_visual
        if n_visual + self._get_vec_obs_size() >= 2 and not allow_multiple_obs:
            logger.warning(
                "The environment contains multiple observations. Pass allow_multiple_obs=True "
                "to receive them all; only the first visual observation (or the vector "
                "observation if there is no visual one) is returned."
            )

        self._env.reset()
        decision_steps, _ = self._env.get_steps(self.name)
        self._check_agents(len(decision_steps))
        self._previous_decision_step = decision_steps

        action_spec = self.group_spec.action_spec
        self._action_space: gymnasium.Space[Any]
        if action_spec.is_discrete():
            self.action_size = action_spec.discrete_size
            branches = action_spec.discrete_branches
            if action_spec.discrete_size == 1:
                self._action_space = spaces.Discrete(branches[0])
            elif flatten_branched:
                self._flattener = ActionFlattener(branches)
                self._action_space = self._flattener.action_space
            else:
                self._action_space = spaces.MultiDiscrete(list(branches))
        elif action_spec.is_continuous():
            if flatten_branched:
                logger.warning(
                    "The environment has a non-discrete action space. It will not be flattened."
                )
            self.action_size = action_spec.continuous_size
            high = np.ones(action_spec.continuous_size, dtype=np.float32)
            self._action_space = spaces.Box(-high, high, dtype=np.float32)
        else:
            raise UnityGymException(
                "The gym wrapper does not provide explicit support for both discrete and "
                f"continuous actions (behavior {self.name!r}: {action_spec})."
            )
        if action_space_seed is not None:
            self._action_space.seed(action_space_seed)

        list_spaces: list[gymnasium.Space[Any]] = []
        for shape in self._get_vis_obs_shape():
            if uint8_visual:
                list_spaces.append(spaces.Box(0, 255, dtype=np.uint8, shape=shape))
            else:
                list_spaces.append(spaces.Box(0, 1, dtype=np.float32, shape=shape))
        if self._get_vec_obs_size() > 0:
            list_spaces.append(
                spaces.Box(-np.inf, np.inf, shape=(self._get_vec_obs_size(),), dtype=np.float32)
            )
        self._observation_space: gymnasium.Space[Any] = (
            spaces.Tuple(list_spaces) if allow_multiple_obs else list_spaces[0]
        )

    # -- the official API ------------------------------------------------------------------

    def reset(self) -> Any:
        """Reset the whole Unity environment and return the agent's first observation.

        Raises:
            UnityGymException: if more than one agent requests a decision.
        """
        return self._reset_result()[0]

    def step(self, action: Any) -> GymStepResult:
        """Act for the agent, step the environment once and report the result.

        Args:
            action: an element of :attr:`action_space` (a flattened index with
                ``flatten_branched``).

        Returns:
            ``(observation, reward, done, info)``; ``info["step"]`` is the ``DecisionSteps`` or,
            when ``done``, the ``TerminalSteps`` that produced it.

        Raises:
            UnityGymException: if the previous step returned ``done`` and ``reset()`` was not
                called since, or if more than one agent reports.
        """
        if self.game_over:
            raise UnityGymException(
                "You are calling 'step()' even though this environment has already returned "
                "done = True. You must always call 'reset()' once you receive 'done = True'."
            )
        if self._flattener is not None:
            action = self._flattener.lookup_action(action)
        values = np.asarray(action).reshape((1, self.action_size))
        if self.group_spec.action_spec.is_continuous():
            action_tuple = ActionTuple(continuous=values)
        else:
            action_tuple = ActionTuple(discrete=values)
        self._env.set_actions(self.name, action_tuple)
        self._env.step()
        decision_steps, terminal_steps = self._env.get_steps(self.name)
        self._check_agents(max(len(decision_steps), len(terminal_steps)))
        if len(terminal_steps) != 0:
            self.game_over = True
            return self._single_step(terminal_steps)
        return self._single_step(decision_steps)

    def render(self, mode: str = "rgb_array") -> np.ndarray | None:
        """The latest first camera observation (None without camera); draws no new frame."""
        return self.visual_obs

    def close(self) -> None:
        """Close the wrapped environment."""
        self._env.close()

    def seed(self, seed: Any = None) -> None:
        """Not supported (as officially): logs a warning; the game takes its seed at launch."""
        logger.warning("Could not seed environment %s", self.name)

    @property
    def metadata(self) -> dict[str, Any]:
        """``{"render.modes": ["rgb_array"]}``."""
        return {"render.modes": ["rgb_array"]}

    @property
    def reward_range(self) -> tuple[float, float]:
        """``(-inf, inf)``."""
        return -float("inf"), float("inf")

    @property
    def action_space(self) -> gymnasium.Space[Any]:
        """The agent's action space (module docs)."""
        return self._action_space

    @property
    def observation_space(self) -> gymnasium.Space[Any]:
        """The agent's observation space (module docs)."""
        return self._observation_space

    @property
    def unwrapped(self) -> UnityToGymWrapper:
        """This wrapper (as ``gym.Env.unwrapped``)."""
        return self

    def __enter__(self) -> UnityToGymWrapper:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- unity_gym's addition --------------------------------------------------------------

    def as_gymnasium(self) -> gymnasium.Env[Any, Any]:
        """A ``gymnasium.Env`` view of this wrapper, for Gymnasium code and SB3 2.x (module docs).

        The view shares this wrapper (and its Unity environment): its ``reset(seed=None,
        options=None)`` returns ``(observation, {"step": DecisionSteps})`` (a seed reseeds the
        action space, not the game), its ``step`` returns ``(observation, reward, terminated,
        truncated, info)``, and ``close()`` closes the environment.
        """
        return _GymnasiumView(self)

    # -- helpers ---------------------------------------------------------------------------

    def _reset_result(self) -> GymStepResult:
        self._env.reset()
        decision_steps, _ = self._env.get_steps(self.name)
        self._check_agents(len(decision_steps))
        self.game_over = False
        return self._single_step(decision_steps)

    def _single_step(self, info: DecisionSteps | TerminalSteps) -> GymStepResult:
        observation: Any
        if self._allow_multiple_obs:
            observation = [self._preprocess_single(obs[0]) for obs in self._get_vis_obs_list(info)]
            if self._get_vec_obs_size() >= 1:
                observation.append(self._get_vector_obs(info)[0, :])
        elif self._get_n_vis_obs() >= 1:
            observation = self._preprocess_single(self._get_vis_obs_list(info)[0][0])
        else:
            observation = self._get_vector_obs(info)[0, :]
        if self._get_n_vis_obs() >= 1:
            self.visual_obs = self._preprocess_single(self._get_vis_obs_list(info)[0][0])
        done = isinstance(info, TerminalSteps)
        return observation, float(info.reward[0]), done, {"step": info}

    def _preprocess_single(self, single_visual_obs: np.ndarray) -> np.ndarray:
        if self.uint8_visual:
            return (255.0 * single_visual_obs).astype(np.uint8)
        return single_visual_obs

    def _get_n_vis_obs(self) -> int:
        return len(self._get_vis_obs_shape())

    def _get_vis_obs_shape(self) -> list[tuple[int, ...]]:
        return [
            tuple(spec.shape) for spec in self.group_spec.observation_specs if len(spec.shape) == 3
        ]

    @staticmethod
    def _get_vis_obs_list(step_result: DecisionSteps | TerminalSteps) -> list[np.ndarray]:
        return [obs for obs in step_result.obs if len(obs.shape) == 4]

    @staticmethod
    def _get_vector_obs(step_result: DecisionSteps | TerminalSteps) -> np.ndarray:
        vectors = [obs for obs in step_result.obs if len(obs.shape) == 2]
        return np.concatenate(vectors, axis=1)

    def _get_vec_obs_size(self) -> int:
        return sum(
            spec.shape[0] for spec in self.group_spec.observation_specs if len(spec.shape) == 1
        )

    @staticmethod
    def _check_agents(n_agents: int) -> None:
        if n_agents > 1:
            raise UnityGymException(
                f"There can only be one Agent in the environment but {n_agents} were detected. "
                "Configure the scene with a single agent, or use the PettingZoo wrappers."
            )


class _GymnasiumView(gymnasium.Env[Any, Any]):
    """``gymnasium.Env`` over a :class:`UnityToGymWrapper` (see ``as_gymnasium``)."""

    metadata = {"render_modes": ["rgb_array"]}  # noqa: RUF012 (gymnasium's class attribute)

    def __init__(self, wrapper: UnityToGymWrapper) -> None:
        self.gym_wrapper = wrapper
        """The wrapper this view drives."""
        self.observation_space = wrapper.observation_space
        self.action_space = wrapper.action_space
        self.render_mode = "rgb_array" if wrapper._get_n_vis_obs() else None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset the Unity environment: ``(observation, {"step": DecisionSteps})``."""
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        observation, _, _, info = self.gym_wrapper._reset_result()
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step the wrapper; ``truncated`` is the final step's ``interrupted`` flag."""
        observation, reward, done, info = self.gym_wrapper.step(action)
        truncated = bool(done and info["step"].interrupted[0])
        return observation, reward, done and not truncated, truncated, info

    def render(self) -> np.ndarray | None:
        """The latest first camera observation (None without camera)."""
        return self.gym_wrapper.render()

    def close(self) -> None:
        """Close the wrapped Unity environment."""
        self.gym_wrapper.close()


class ActionFlattener:
    """Maps one ``Discrete`` action onto every combination of several discrete branches.

    Args:
        branched_action_space: the size of each branch, e.g. ``[2, 3, 3]``.

    Attributes:
        action_lookup: flat index -> list of branch values, in ``itertools.product`` order
            (the last branch varies fastest).
        action_space: ``Discrete`` over all combinations.
    """

    def __init__(self, branched_action_space: Sequence[int]) -> None:
        self._action_shape = branched_action_space
        self.action_lookup = self._create_lookup(self._action_shape)
        self.action_space = spaces.Discrete(len(self.action_lookup))

    @classmethod
    def _create_lookup(cls, branched_action_space: Sequence[int]) -> dict[int, list[int]]:
        combinations = itertools.product(*(range(size) for size in branched_action_space))
        return {index: list(values) for index, values in enumerate(combinations)}

    def lookup_action(self, action: Any) -> list[int]:
        """The branch values of flat action ``action`` (an int or a NumPy integer scalar)."""
        return self.action_lookup[int(action)]
