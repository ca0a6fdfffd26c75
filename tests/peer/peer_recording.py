"""Record what a ``UnityEnvironment`` implementation sees during a scripted run, as ``.npz``.

This module runs under two interpreters: the reference peer's (official ``mlagents_envs``
1.1.0) and ours. It depends on the standard library and numpy only; the implementation under
test is passed in as an :class:`Api`. Both sides read the same pre-generated action table, so
two recordings are equal exactly when both implementations decode the same game identically.

Recording layout (``np.savez``, no pickled objects; load with ``allow_pickle=False``):

* ``<behavior>/spec``: the behavior spec as JSON text (observation names, shapes, dimension
  properties, observation types; continuous size and discrete branches);
* ``<behavior>/<decision|terminal>/count``: rows per recorded step (step 0 = after reset);
* ``<behavior>/decision/<field>``: rows of every step concatenated for ``agent_id``, ``reward``,
  ``group_id``, ``group_reward``, ``obs_<i>`` and ``mask_<branch>``
  (``<behavior>/decision/mask_present`` says per step whether a mask list was given);
* ``<behavior>/terminal/<field>``: the same for ``agent_id``, ``reward``, ``interrupted``,
  ``group_id``, ``group_reward`` and ``obs_<i>``;
* an observation of more than :data:`DIGEST_ABOVE` values per agent (camera pictures) is stored
  as ``obs_<i>/digest`` instead: per row a 16-byte BLAKE2b digest of its dtype, shape and bytes
  (exact: any changed bit changes it), with ``obs_<i>/shape`` (the row's shape), ``obs_<i>/sum``
  (float64, to say by how much two rows differ) and ``obs_<i>/non_finite`` (NaN and infinite
  values). Writing, reloading and comparing Visual3DBall's 200 steps of 4 stacked pictures in
  full (270 MB a side) took a third of the differential test's time;
* ``stats/step``, ``stats/key``, ``stats/value``, ``stats/method``: every statistic read back
  from the stats channel after each step.

``group_id`` is stored as int64 values: the official class returns a list, ours an array.
"""

from __future__ import annotations

import hashlib
import json
import socket
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DIGEST_ABOVE", "Api", "choose_discrete", "record_run", "save_arrays"]

#: Observations with more values than this per agent are recorded as per-row digests.
DIGEST_ABOVE = 4096


@dataclass(frozen=True)
class Api:
    """The classes of one implementation (official ``mlagents_envs`` or ``unity_gym``)."""

    UnityEnvironment: Any
    ActionTuple: Any
    EngineConfigurationChannel: Any
    EnvironmentParametersChannel: Any
    StatsSideChannel: Any


def choose_discrete(
    uniforms: np.ndarray, masks: Sequence[np.ndarray] | None, branches: Sequence[int]
) -> np.ndarray:
    """Map pre-drawn uniforms in ``[0, 1)`` to discrete actions that respect the masks.

    Args:
        uniforms: ``(n, len(branches))`` numbers drawn up front.
        masks: one ``(n, size)`` bool array per branch (True = forbidden), or None.
        branches: the branch sizes.

    Returns:
        ``(n, len(branches))`` int32: for each agent and branch, the allowed action at position
        ``floor(u * allowed)`` (action 0 if a branch forbids everything).
    """
    n = uniforms.shape[0]
    actions = np.zeros((n, len(branches)), dtype=np.int32)
    for b, size in enumerate(branches):
        forbidden = masks[b] if masks is not None else np.zeros((n, size), dtype=bool)
        for row in range(n):
            allowed = np.flatnonzero(~np.asarray(forbidden[row], dtype=bool))
            if len(allowed):
                actions[row, b] = allowed[int(uniforms[row, b] * len(allowed))]
    return actions


def _spec_json(spec: Any) -> str:
    observations = [
        {
            "name": o.name,
            "shape": [int(d) for d in o.shape],
            "dimension_property": [int(p) for p in o.dimension_property],
            "observation_type": int(o.observation_type.value),
        }
        for o in spec.observation_specs
    ]
    action = {
        "continuous_size": int(spec.action_spec.continuous_size),
        "discrete_branches": [int(b) for b in spec.action_spec.discrete_branches],
    }
    return json.dumps({"observations": observations, "action": action}, sort_keys=True)


class _Recording:
    """Per-key lists of arrays, concatenated when saved."""

    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = defaultdict(list)
        self.specs: dict[str, str] = {}

    def add(self, key: str, value: Any, dtype: Any = None) -> None:
        self.parts[key].append(np.asarray(value, dtype=dtype))

    def add_observation(self, key: str, value: Any) -> None:
        """Rows of one observation: in full, or as digests when a row is large."""
        rows = np.asarray(value)
        if int(np.prod(rows.shape[1:])) <= DIGEST_ABOVE:
            self.add(key, rows)
            return
        header = f"{rows.dtype.str}{rows.shape[1:]}".encode()
        digests = [hashlib.blake2b(header + row.tobytes(), digest_size=16).digest() for row in rows]
        self.add(f"{key}/digest", np.frombuffer(b"".join(digests), np.uint8).reshape(-1, 16))
        self.add(f"{key}/shape", np.tile(np.asarray(rows.shape[1:], np.int64), (len(rows), 1)))
        flat = rows.reshape(len(rows), int(np.prod(rows.shape[1:])))
        self.add(f"{key}/sum", flat.sum(axis=1, dtype=np.float64))
        self.add(f"{key}/non_finite", (~np.isfinite(flat)).sum(axis=1), np.int64)

    def add_steps(self, env: Any, name: str) -> None:
        decision, terminal = env.get_steps(name)
        self.specs[name] = _spec_json(env.behavior_specs[name])
        d, t = f"{name}/decision", f"{name}/terminal"
        self.add(f"{d}/count", [len(decision)], np.int64)
        self.add(f"{d}/agent_id", decision.agent_id)
        self.add(f"{d}/reward", decision.reward)
        self.add(f"{d}/group_id", [int(g) for g in decision.group_id], np.int64)
        self.add(f"{d}/group_reward", decision.group_reward)
        for i, obs in enumerate(decision.obs):
            self.add_observation(f"{d}/obs_{i}", obs)
        masks = decision.action_mask
        self.add(f"{d}/mask_present", [masks is not None], bool)
        for b, mask in enumerate(masks or []):
            self.add(f"{d}/mask_{b}", mask)
        self.add(f"{t}/count", [len(terminal)], np.int64)
        self.add(f"{t}/agent_id", terminal.agent_id)
        self.add(f"{t}/reward", terminal.reward)
        self.add(f"{t}/interrupted", terminal.interrupted)
        self.add(f"{t}/group_id", [int(g) for g in terminal.group_id], np.int64)
        self.add(f"{t}/group_reward", terminal.group_reward)
        for i, obs in enumerate(terminal.obs):
            self.add_observation(f"{t}/obs_{i}", obs)

    def add_stats(self, step: int, stats: Mapping[str, Sequence[tuple[float, Any]]]) -> None:
        for key in sorted(stats):
            for value, method in stats[key]:
                self.add("stats/step", [step], np.int64)
                self.add("stats/key", [key], str)
                self.add("stats/value", [value], np.float64)
                self.add("stats/method", [int(method.value)], np.int64)

    def save(self, path: Path) -> None:
        arrays = {key: np.concatenate(parts) for key, parts in self.parts.items()}
        for name, spec in self.specs.items():
            arrays[f"{name}/spec"] = np.asarray(spec)
        save_arrays(path, arrays)


def save_arrays(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to an ``.npz`` file under their names (no pickled objects)."""
    # numpy's stub types **kwds as if a key could be the ``allow_pickle`` flag.
    np.savez(path, **arrays)  # type: ignore[arg-type]


def _actions(api: Api, spec: Any, decision: Any, table: Any, name: str, step: int) -> Any:
    n = len(decision)
    continuous = table[f"{name}/continuous"]
    if n > continuous.shape[1]:
        raise ValueError(
            f"{n} agents of {name!r} decide at step {step} but the action table has "
            f"{continuous.shape[1]} rows; size it from the scene's agent count"
        )
    branches = [int(b) for b in spec.action_spec.discrete_branches]
    discrete = choose_discrete(table[f"{name}/discrete"][step, :n], decision.action_mask, branches)
    return api.ActionTuple(
        continuous=np.array(continuous[step, :n], dtype=np.float32),
        discrete=discrete if branches else None,
    )


def record_run(api: Api, plan: Mapping[str, Any]) -> dict[str, int]:
    """Launch the game, play ``plan["steps"]`` steps with the table's actions, save the recording.

    Args:
        api: the implementation to drive.
        plan: ``file_name``, ``port``, ``seed``, ``additional_args``, ``log_folder``,
            ``timeout_wait``, ``steps``, ``time_scale``, ``float_parameters`` (``[key, value]``
            sent before reset), ``sampler_parameters`` (``[key, min, max, seed]`` uniform samplers
            sent before reset), ``late_float_parameters`` (sent before step ``steps // 2``),
            ``action_table`` (``.npz`` with ``<behavior>/continuous`` and
            ``<behavior>/discrete``, shaped ``(steps, rows, size)``) and ``output`` (``.npz``).

    Returns:
        ``{"returncode": exit code of the game, "steps": steps played, "pid": the game's process
        id}``.
    """
    engine = api.EngineConfigurationChannel()
    parameters = api.EnvironmentParametersChannel()
    stats = api.StatsSideChannel()
    port = plan["port"]
    for attempt in range(5):
        try:
            env = api.UnityEnvironment(
                file_name=plan["file_name"],
                worker_id=0,
                base_port=port,
                seed=plan["seed"],
                no_graphics=True,
                timeout_wait=plan["timeout_wait"],
                additional_args=list(plan["additional_args"]),
                side_channels=[engine, parameters, stats],
                log_folder=plan["log_folder"],
            )
            break
        except Exception as error:
            # The port was free when it was chosen; another program may have taken it since.
            # Both implementations bind before they launch anything: try a new free port.
            if type(error).__name__ != "UnityWorkerInUseException" or attempt == 4:
                raise
            port = _free_port()
    process = env._process  # both implementations keep the launched player here
    recording = _Recording()
    try:
        with np.load(plan["action_table"], allow_pickle=False) as table:
            engine.set_configuration_parameters(time_scale=plan["time_scale"])
            for key, value in plan["float_parameters"]:
                parameters.set_float_parameter(key, value)
            for key, low, high, seed in plan["sampler_parameters"]:
                parameters.set_uniform_sampler_parameters(key, low, high, seed)
            env.reset()
            for name in sorted(env.behavior_specs):
                recording.add_steps(env, name)
            recording.add_stats(0, stats.get_and_reset_stats())
            for step in range(plan["steps"]):
                if step == plan["steps"] // 2:
                    for key, value in plan["late_float_parameters"]:
                        parameters.set_float_parameter(key, value)
                for name in sorted(env.behavior_specs):
                    decision, _ = env.get_steps(name)
                    if len(decision):
                        spec = env.behavior_specs[name]
                        env.set_actions(name, _actions(api, spec, decision, table, name, step))
                env.step()
                for name in sorted(env.behavior_specs):
                    recording.add_steps(env, name)
                recording.add_stats(step + 1, stats.get_and_reset_stats())
    finally:
        env.close()
    returncode = process.wait(timeout=30) if process is not None else -1
    recording.save(Path(plan["output"]))
    pid = process.pid if process is not None else -1
    return {"returncode": int(returncode), "steps": int(plan["steps"]), "pid": int(pid)}


def _free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (this module also runs in the peer's venv, so it
    cannot import the repository's helper)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
