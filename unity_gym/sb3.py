"""Stable-Baselines3 ``VecEnv`` over every agent of every game process.

``UnityVecEnv(scene="3DBall", num_envs=48)`` runs 4 games of 12 agents and presents their agents
as 48 SB3 environments, so ``PPO("MlpPolicy", UnityVecEnv(...))`` learns from all of them. It is a
thin adapter around :class:`unity_gym.vector.UnityVectorEnv` in same-step autoreset mode, which is
SB3's convention: when an agent's episode ends, ``step_wait`` returns ``done=True``, the first
observation of its next episode, ``info["terminal_observation"]`` (the final observation) and
``info["TimeLimit.truncated"]`` (the episode was cut short: Unity's ``interrupted``, or a game
restart after a crash).

An agent that leaves its game mid-episode (DungeonEscape's sacrificed agent) ends with
``done=True`` and leaves its slot *vacant* until a new agent takes it: meanwhile the slot's
``info["vacant"]`` is True, its reward 0, its observation the removed agent's final one, and its
actions are ignored (see :mod:`unity_gym.vector.autoreset`). SB3 has no notion of absent
agents, so it learns from those steps as zero-reward steps; scenes that remove agents are better
trained with ``unity-train`` (MA-POCA), which skips them.

SB3's per-environment calls address *agent slots*: each slot is an :class:`AgentSlot` object, on
which ``get_attr``/``set_attr``/``env_method`` operate. ``seed(s)`` makes the next ``reset``
relaunch game ``i`` with seed ``s + i`` (all slots of a game share its seed). Wrap the env in
``stable_baselines3.common.vec_env.VecMonitor`` to get episode statistics in SB3's logs.

Requires ``stable-baselines3`` (the ``unity-gym[sb3]`` extra).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import (
    VecEnv,
    VecEnvIndices,
    VecEnvObs,
    VecEnvStepReturn,
)

from unity_gym.spaces import check_sb3_action_space
from unity_gym.vector import UnityVectorEnv

__all__ = ["AgentSlot", "UnityVecEnv"]

_RESERVED_INFO_KEYS = frozenset({"final_obs", "final_info"})


class AgentSlot:
    """What SB3 sees as one sub-environment: one agent slot of the vector env.

    Attributes:
        env_id: the slot index.
        process_index: the game process holding the slot's agent.
        behavior_name: the behavior of the slot's agent.
        observation_space: the slot's observation space.
        action_space: the slot's action space.
        render_mode: always None (slots have no renderer).
    """

    def __init__(self, env_id: int, venv: UnityVectorEnv) -> None:
        self.env_id = env_id
        self.process_index = env_id // venv.agents_per_process
        self.behavior_name = venv.behavior_name
        self.observation_space = venv.single_observation_space
        self.action_space = venv.single_action_space
        self.render_mode: str | None = None

    def get_wrapper_attr(self, name: str) -> Any:
        """The attribute ``name`` (slots have no wrappers; mirrors ``gymnasium.Env``)."""
        return getattr(self, name)

    def __repr__(self) -> str:
        return f"AgentSlot(env_id={self.env_id}, process_index={self.process_index})"


class UnityVecEnv(VecEnv):
    """SB3 ``VecEnv`` whose environments are every agent of every game (module docs).

    Args:
        venv: an existing :class:`~unity_gym.vector.UnityVectorEnv` in same-step autoreset mode;
            when None, one is created from ``kwargs``.
        **kwargs: arguments of :class:`~unity_gym.vector.UnityVectorEnv` (``num_envs``,
            ``num_processes``, ``backend``, game keywords...); ``autoreset_mode`` is same-step.

    Raises:
        ValueError: if ``venv`` uses next-step autoreset, or both ``venv`` and ``kwargs`` are
            given.
        TypeError: if SB3 has no policy for the action space (hybrid actions).
    """

    def __init__(self, venv: UnityVectorEnv | None = None, **kwargs: Any) -> None:
        if venv is None:
            mode = AutoresetMode(kwargs.pop("autoreset_mode", AutoresetMode.SAME_STEP))
            if mode is not AutoresetMode.SAME_STEP:
                raise ValueError(
                    "UnityVecEnv follows SB3's convention, same-step autoreset; drop "
                    f"autoreset_mode={mode.value!r}."
                )
            venv = UnityVectorEnv(autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
        elif kwargs:
            raise ValueError(
                f"Pass either an existing UnityVectorEnv or its arguments, not both (got "
                f"{sorted(kwargs)})."
            )
        elif venv.autoreset_mode is not AutoresetMode.SAME_STEP:
            raise ValueError(
                "UnityVecEnv needs a UnityVectorEnv created with "
                "autoreset_mode=AutoresetMode.SAME_STEP (SB3's convention)."
            )
        try:
            check_sb3_action_space(venv.single_action_space)
        except TypeError:
            venv.close()
            raise
        self.venv = venv
        self.slots = [AgentSlot(i, venv) for i in range(venv.num_envs)]
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._waiting = False

    # -- VecEnv contract ------------------------------------------------------------------------

    def reset(self) -> VecEnvObs:
        """Reset every game; returns the first observations (infos in ``reset_infos``).

        A seed set by :meth:`seed` relaunches the games with it.

        Raises:
            ValueError: if reset options were set (the games take none).
        """
        if any(self._options):
            raise ValueError(f"UnityVecEnv takes no reset options, got {self._options}.")
        seed = self._seeds[0]
        observations, infos = self.venv.reset(seed=seed)
        self.reset_infos = self._info_list(infos)
        self._reset_seeds()
        self._reset_options()
        self._waiting = False
        return observations

    def step_async(self, actions: np.ndarray) -> None:
        """Send one action per slot."""
        self.venv.step_async(actions)
        self._waiting = True

    def step_wait(self) -> VecEnvStepReturn:
        """Observations, float32 rewards, dones and one info dict per slot."""
        observations, rewards, terminated, truncated, infos = self.venv.step_wait()
        self._waiting = False
        dones = terminated | truncated
        info_list = self._info_list(infos)
        final_obs = infos.get("final_obs")
        for index in np.flatnonzero(dones).tolist():
            entry = info_list[index]
            if final_obs is not None and final_obs[index] is not None:
                entry["terminal_observation"] = final_obs[index]
            entry["TimeLimit.truncated"] = bool(truncated[index] and not terminated[index])
        return observations, rewards.astype(np.float32), dones, info_list

    def close(self) -> None:
        """Close every game."""
        self.venv.close()

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Use ``seed`` (random if None) at the next reset: game ``i`` gets ``seed + i``.

        Returns:
            The seed of each slot (the seed of its game).
        """
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        self._seeds = [seed] + [None] * (self.num_envs - 1)
        return [seed + slot.process_index for slot in self.slots]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attribute ``attr_name`` of the selected :class:`AgentSlot` objects."""
        return [getattr(self.slots[i], attr_name) for i in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set attribute ``attr_name`` on the selected :class:`AgentSlot` objects."""
        for i in self._get_indices(indices):
            setattr(self.slots[i], attr_name, value)

    def env_method(
        self,
        method_name: str,
        *method_args: Any,
        indices: VecEnvIndices = None,
        **method_kwargs: Any,
    ) -> list[Any]:
        """Call method ``method_name`` of the selected :class:`AgentSlot` objects."""
        return [
            getattr(self.slots[i], method_name)(*method_args, **method_kwargs)
            for i in self._get_indices(indices)
        ]

    def env_is_wrapped(
        self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None
    ) -> list[bool]:
        """Always False: slots are not Gymnasium envs and carry no wrappers."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """No images: slots have no renderer."""
        return [None for _ in range(self.num_envs)]

    # -- helpers ----------------------------------------------------------------------------

    def _info_list(self, infos: dict[str, Any]) -> list[dict[str, Any]]:
        """Gymnasium's batched infos as one dict per slot (only entries whose mask is set)."""
        per_slot: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for key, values in infos.items():
            if key.startswith("_") or key in _RESERVED_INFO_KEYS:
                continue
            mask = infos.get(f"_{key}")
            selected: Iterable[int] = (
                range(self.num_envs) if mask is None else np.flatnonzero(mask).tolist()
            )
            for index in selected:
                value = values[index]
                per_slot[index][key] = value.item() if isinstance(value, np.generic) else value
        return per_slot
